"""AMAGO's component registries: ``register_traj_encoder``, ``get_agent_cls``, ``list_registered_explorations``...

AMAGO kept a name -> class dict per kind of component, filled by a decorator on each class. In amago the decorator
registers the class in the running process's registries, next to the installed plugins
(:meth:`amago_core.plugins.Registry.register_in_process`): the name then works wherever a registered name does in
this process (``Experiment(traj_encoder_type="my_gru")``, ``amago run -o traj_encoder=my_gru`` started from the
script, ``amago list``), and builds exactly like the class given for the slot. Several of AMAGO's modules
re-exported the same functions, so they are made here once. Importing this module imports no torch.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from amago_core.plugins import AGENTS, EXPLORATIONS, TRAJ_ENCODERS, TSTEP_ENCODERS, ComponentGroup, registries
from amago_core.plugins.in_process import InProcessSpec

PLUGIN_PAGE = "docs/tutorial/08-write-a-plugin.md"

T = TypeVar("T")

KEYWORDS = {
    TSTEP_ENCODERS: "tstep_encoder_type",
    TRAJ_ENCODERS: "traj_encoder_type",
    AGENTS: "agent_type",
    EXPLORATIONS: "exploration_wrapper_type",
}
"""The ``Experiment`` keyword of each group's slot (AMAGO's names)."""


def _register(group: ComponentGroup) -> Callable[[str], Callable[[T], T]]:
    kind = group.key

    def register(name: str) -> Callable[[T], T]:
        if not isinstance(name, str):  # `@register_x` without the name: the class arrived as the name
            msg = f'register_{kind} takes the name first: @register_{kind}("my_name"), not @register_{kind}.'
            raise TypeError(msg)

        def decorator(cls: T) -> T:
            registries()[group].register_in_process(name, _buildable(group, cls))
            return cls

        return decorator

    register.__name__ = register.__qualname__ = f"register_{kind}"
    register.__doc__ = f"""Decorator: registers a {group.label} class of this script under ``name``, as AMAGO did.

    The name then selects it in this process like an installed plugin's: ``Experiment({KEYWORDS[group]}=name)``,
    ``-o {kind}=name`` on an ``amago run`` started from here, ``amago list``. It is built exactly like the class
    given for the slot. A run records the class's ``module:Class``; resuming or evaluating it needs the module
    imported first. The same class registered twice is a no-op.

    Raises:
        DuplicateComponentError: an installed plugin, or another class of this process, has the name.
    """
    return register


_SCRIPT_EXPLORATIONS: dict[Any, Any] = {}
"""AMAGO-style exploration classes -> the one builder each is registered as."""


def _buildable(group: ComponentGroup, cls: Any) -> Any:
    """What is registered for ``cls``: itself, or for a subclass of AMAGO's ``ExplorationWrapper`` (built as
    ``cls(amago_env)``, its keywords from gin) the builder an ``Experiment`` given the class would use."""
    if group is not EXPLORATIONS or not inspect.isclass(cls):
        return cls
    from amago.from_amago.exploration import ExplorationWrapper, ScriptExploration

    if not issubclass(cls, ExplorationWrapper):
        return cls
    if cls not in _SCRIPT_EXPLORATIONS:
        _SCRIPT_EXPLORATIONS[cls] = ScriptExploration(cls)
    return _SCRIPT_EXPLORATIONS[cls]


def _get_cls(group: ComponentGroup) -> Callable[[str], Any]:
    kind = group.key

    def get_cls(name: str) -> Any:
        spec = registries()[group].spec(name)
        if isinstance(spec, InProcessSpec):
            if group is EXPLORATIONS:
                from amago.from_amago.exploration import ScriptExploration

                if isinstance(spec.target, ScriptExploration):
                    return spec.target.cls  # the script's class, registered as the builder that calls it
            return spec.target
        factory = spec.load_factory()
        if inspect.isclass(factory):
            return factory
        msg = (
            f"{group.label} {spec.name!r} is built by the function {spec.factory}, not a class; select it by "
            f"name: Experiment({KEYWORDS[group]}={spec.name!r}) or -o {kind}={spec.name}."
        )
        raise TypeError(msg)

    get_cls.__name__ = get_cls.__qualname__ = f"get_{kind}_cls"
    get_cls.__doc__ = f"""The class registered as ``name``: a class this process registered, or an installed
    plugin's class (its factory), which ``Experiment({KEYWORDS[group]}=...)`` accepts like the name.

    Raises:
        UnknownComponentError: (a KeyError, as in AMAGO) no such {group.label}, with did-you-mean.
        TypeError: the installed component is built by a function, not a class; select it by name.
    """
    return get_cls


def _list_registered(group: ComponentGroup) -> Callable[[], list[str]]:
    def list_registered() -> list[str]:
        return registries()[group].names()

    list_registered.__name__ = list_registered.__qualname__ = f"list_registered_{group.key}s"
    list_registered.__doc__ = f"""Every {group.label} name usable here: installed plugins (aliases included) and
    classes this process registered; imports nothing. `amago list {group.cli_name}` shows them with status."""
    return list_registered


register_tstep_encoder = _register(TSTEP_ENCODERS)
get_tstep_encoder_cls = _get_cls(TSTEP_ENCODERS)
list_registered_tstep_encoders = _list_registered(TSTEP_ENCODERS)

register_traj_encoder = _register(TRAJ_ENCODERS)
get_traj_encoder_cls = _get_cls(TRAJ_ENCODERS)
list_registered_traj_encoders = _list_registered(TRAJ_ENCODERS)

register_agent = _register(AGENTS)
get_agent_cls = _get_cls(AGENTS)
list_registered_agents = _list_registered(AGENTS)

register_exploration = _register(EXPLORATIONS)
get_exploration_cls = _get_cls(EXPLORATIONS)
list_registered_explorations = _list_registered(EXPLORATIONS)


def exports(*groups: ComponentGroup) -> dict[str, str]:
    """The shim targets of the three functions of each group: ``{"register_agent": "amago._registries:..."}``."""
    names = ("register_{}", "get_{}_cls", "list_registered_{}s")
    return {
        template.format(group.key): f"{__name__}:{template.format(group.key)}"
        for group in groups
        for template in names
    }


TSTEP_ENCODER_REGISTRY = exports(TSTEP_ENCODERS)
TRAJ_ENCODER_REGISTRY = exports(TRAJ_ENCODERS)
AGENT_REGISTRY = exports(AGENTS)
EXPLORATION_REGISTRY = exports(EXPLORATIONS)

EXPLORATION_CLASSES = {"ExplorationWrapper": "amago.from_amago.exploration:ExplorationWrapper"}
"""AMAGO's base class of explorations, exported next to the registry functions (a subclass overrides
``add_exploration_noise(action, local_step)``)."""
