"""The gin mapping's data model: what one AMAGO configurable and each of its parameters became in amago.

:class:`GinConfigurable` and :class:`GinBinding` are the records of the tables (:mod:`.table_nets`,
:mod:`.table_agents`), :data:`CONVERSIONS` the value changes a row may name, and :func:`make_configurable` with
:func:`setting`, :func:`choice`, :func:`by_run`, :func:`no_counterpart` and :func:`same_names` what the tables are
written with. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

AMAGO_VERSION = "3.3.0"
"""The AMAGO release whose gin configurables the mapping holds."""

Kind = Literal["setting", "choice", "run", "none"]
"""What a gin parameter became in amago:

- ``setting``: a config key takes the binding's value (converted where the note says);
- ``choice``: the value is a ``@reference`` to another configurable, and picking it is setting that configurable's
  picks (``Agent.fbc_filter_func = @exp_filter`` is ``agent.fbc_filter.type = "exp"``);
- ``run``: set by the run, not a setting: AMAGO passes the value when it builds the object (an observation space,
  a layer width, another setting), so a gin binding of it never took effect;
- ``none``: no counterpart; the note says why and what to do instead.
"""


@dataclass(frozen=True)
class GinBinding:
    """One parameter of one AMAGO gin configurable, and its amago counterpart.

    Attributes:
        configurable: the configurable's name as gin files write it (``TformerTrajEncoder``).
        parameter: the parameter's name.
        key: the amago config key a binding sets (``traj_encoder.n_layers``): for a ``choice``, the key its
            picks set; None for ``run`` and ``none``.
        kind: see :data:`Kind`.
        note: what a reader needs besides the key (for ``run`` and ``none``: what sets it, or why there is none).
        convert: the name of the value conversion in :data:`CONVERSIONS`, when AMAGO's value means something else
            in amago (``FlashAttention.window_size = (12, 0)`` is ``window_size = 13``).
        fixed: for ``none``: ``(value,)`` when amago always does what this value does in AMAGO (its default), so
            a binding of that value needs nothing (a run's ``config.txt`` lists every default); else empty.
        choices: for ``choice``: the names of the configurables AMAGO lets it reference.
        unregistered: for ``choice``: ``(dotted path, value of key)`` for each class of AMAGO the parameter takes
            that AMAGO left out of gin (``amago.nets.cnn.DrQCNN``): a file references it once its script registers
            it (``gin.external_configurable``), and the reference sets ``key`` to the value.
    """

    configurable: str
    parameter: str
    key: str | None
    kind: Kind
    note: str = ""
    convert: str | None = None
    fixed: tuple[Any, ...] = ()
    choices: tuple[str, ...] = ()
    unregistered: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class GinConfigurable:
    """An AMAGO gin configurable: where its options live in amago, and its parameters.

    Attributes:
        name: the class or function name (``TformerTrajEncoder``).
        module: its AMAGO module (``amago.nets.traj_encoders``).
        picks: the ``(key, value)`` settings that make amago use the same thing, outermost first
            (``(("traj_encoder.kind", "transformer"),)``); empty when it is always used, or is no component.
        summary: one sentence: what it is, and its amago counterpart.
        parameters: one :class:`GinBinding` per parameter, in AMAGO's order. A binding of its options picks
            it when the file picks nothing for that slot.
        base: the configurable it subclasses (``TMazeExploration``: ``EpsilonGreedy``), or None. gin applies a
            binding of the base's parameter to the subclass only when the subclass leaves that argument to the
            base; one the subclass passes itself has no effect on it.
        inherits: the base's parameters the subclass leaves to the base (does not pass to its ``__init__``), so
            a binding of the base's parameter configures the subclass too.
        example: for a class of one of AMAGO's example scripts (not of its package), the script
            (``examples/04_tmaze.py``); empty for AMAGO's own.
    """

    name: str
    module: str
    picks: tuple[tuple[str, Any], ...]
    summary: str
    parameters: tuple[GinBinding, ...]
    base: str | None = None
    inherits: tuple[str, ...] = ()
    example: str = ""

    @property
    def path(self) -> str:
        """The dotted path gin registers it under (``amago.nets.traj_encoders.TformerTrajEncoder``)."""
        return f"{self.module}.{self.name}"

    def parameter(self, name: str) -> GinBinding | None:
        """The row of parameter ``name``, or None."""
        return next((row for row in self.parameters if row.parameter == name), None)


@dataclass(frozen=True)
class PickKey:
    """A config key that picks between AMAGO classes (``traj_encoder.attention``).

    Attributes:
        amago_default: the value AMAGO's own default class stands for (``"flash"``), or None when AMAGO's scripts
            picked the class in Python (the components, the env, the optimiser).
        chooser: the AMAGO binding that picks it, for messages (None: only Python code picks it).
    """

    amago_default: Any
    chooser: str | None


@dataclass(frozen=True)
class Registration:
    """One of AMAGO's shortcut-name registries (``register_traj_encoder``) and its amago counterpart.

    Attributes:
        path: AMAGO's dotted path of the function.
        counterpart: what does the same in amago.
    """

    path: str
    counterpart: str


@dataclass(frozen=True)
class Conversion:
    """A change of a gin value into amago's meaning of the same setting.

    Attributes:
        describe: one sentence for the docs, e.g. "AMAGO's `None` is `"none"`".
        apply: the conversion; raises ``ValueError`` with a one-line reason for a value it cannot convert.
    """

    describe: str
    apply: Callable[[Any], Any]


# --------------------------------------------------------------------------------------------------------------
# Value conversions
# --------------------------------------------------------------------------------------------------------------


def _norm_name(value: Any) -> Any:
    # AMAGO's Normalization treats None as no normalisation; amago spells that "none".
    return "none" if value is None else value


def _flash_window(value: Any) -> Any:
    # flash_attn's (left, right) lets a query see `left` steps before it; amago's window counts the query too.
    # The right half does not matter: AMAGO's Transformer is always causal.
    if not (isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        msg = f"expected flash_attn's (left, right) pair of ints, got {value!r}"
        raise ValueError(msg)
    left = value[0]
    return None if left < 0 else left + 1


def _window_plus_one(value: Any) -> Any:
    # AMAGO's flex masks keep keys with 0 <= query - key <= window_size: the query and window_size steps before.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        msg = f"expected a window size (an int >= 0), got {value!r}"
        raise ValueError(msg)
    return value + 1


def _zero_is_none(value: Any) -> Any:
    # AMAGO turns clipping off with 0; amago with None.
    return None if value in (None, 0) else value


def _whole_number(value: Any) -> Any:
    # AMAGO's traj_save_len defaults to the float 1e10; amago's setting is an int.
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


CONVERSIONS: dict[str, Conversion] = {
    "norm": Conversion('AMAGO\'s `None` is `"none"`.', _norm_name),
    "flash_window": Conversion(
        "flash_attn's `(left, right)` becomes `left + 1` (the step itself and `left` before it); `(-1, -1)` "
        "becomes `None` (the whole context).",
        _flash_window,
    ),
    "window_plus_one": Conversion(
        "AMAGO's window counts the steps before the query, amago's counts the query too: `w` becomes `w + 1`.",
        _window_plus_one,
    ),
    "zero_is_none": Conversion("AMAGO's `0` (no clipping) is `None`.", _zero_is_none),
    "whole_number": Conversion("A whole float such as AMAGO's `1e10` becomes an int.", _whole_number),
}
"""Value conversions :attr:`GinBinding.convert` names."""


# --------------------------------------------------------------------------------------------------------------
# What the tables are written with
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """A parameter row before it knows its configurable (see :func:`make_configurable`)."""

    parameter: str
    key: str | None
    kind: Kind
    note: str = ""
    convert: str | None = None
    fixed: tuple[Any, ...] = ()
    choices: tuple[str, ...] = ()
    unregistered: tuple[tuple[str, Any], ...] = ()


_TOP_LEVEL = frozenset(
    {
        "run",
        "env",
        "tstep_encoder",
        "traj_encoder",
        "agent",
        "exploration",
        "rollout",
        "replay",
        "optim",
        "schedule",
    }
    | {"logging", "distributed", "ray"}
)
"""The first part of every amago config key (sections and component slots): a key starting otherwise is relative
to its configurable's prefix."""


def setting(parameter: str, key: str | None = None, *, note: str = "", convert: str | None = None) -> Row:
    """A ``setting``: ``key`` None is ``<prefix>.<parameter>``; a key not starting with a section or slot name is
    relative to the prefix (``critic.d_hidden`` under ``agent``)."""
    return Row(parameter, key, "setting", note, convert)


def choice(
    parameter: str,
    key: str,
    choices: str,
    *,
    note: str = "",
    unregistered: tuple[tuple[str, Any], ...] = (),
) -> Row:
    """A ``choice`` of one of ``choices`` (names separated by spaces), whose picks set ``key`` (resolved against
    the prefix like :func:`setting`); ``unregistered``: see :attr:`GinBinding.unregistered`."""
    return Row(parameter, key, "choice", note, choices=tuple(choices.split()), unregistered=unregistered)


def by_run(parameter: str, note: str) -> Row:
    """Set by the run, not a setting; ``note`` says what passes it."""
    return Row(parameter, None, "run", note)


def no_counterpart(parameter: str, note: str, *fixed: Any) -> Row:
    """No counterpart; ``note`` says why; ``fixed``: the one value amago always behaves as (AMAGO's default)."""
    return Row(parameter, None, "none", note, fixed=fixed)


def make_configurable(
    name: str,
    module: str,
    prefix: str,
    summary: str,
    rows: Iterable[Row],
    *,
    picks: tuple[tuple[str, Any], ...] = (),
    base: str | None = None,
    inherits: tuple[str, ...] = (),
    example: str = "",
) -> GinConfigurable:
    """One configurable of the tables, its rows' keys made whole.

    Args:
        name: the class or function name (``TformerTrajEncoder``).
        module: its AMAGO module (``amago.nets.traj_encoders``).
        prefix: the section or slot its relative keys are under (``traj_encoder``, ``agent.fbc_filter``).
        summary: see :attr:`GinConfigurable.summary`.
        rows: one per parameter, in AMAGO's order.
        picks: see :attr:`GinConfigurable.picks`.
        base: see :attr:`GinConfigurable.base`.
        inherits: see :attr:`GinConfigurable.inherits`.
        example: see :attr:`GinConfigurable.example`.
    """

    def full_key(row: Row) -> str | None:
        if row.kind in ("run", "none"):
            return None
        key = row.key or row.parameter
        return key if key.split(".")[0] in _TOP_LEVEL else f"{prefix}.{key}"

    parameters = tuple(
        GinBinding(
            name,
            row.parameter,
            full_key(row),
            row.kind,
            row.note,
            row.convert,
            row.fixed,
            row.choices,
            row.unregistered,
        )
        for row in rows
    )
    return GinConfigurable(name, module, picks, summary, parameters, base, inherits, example)


def same_names(parameters: str) -> list[Row]:
    """Settings whose amago field has AMAGO's name (``parameters``: the names, separated by spaces)."""
    return [setting(parameter) for parameter in parameters.split()]


OBS_SPACE = by_run("obs_space", "the env's observation space, passed by the agent.")
"""The ``obs_space`` parameter of the timestep encoders and agents."""
RL2_SPACE = by_run(
    "rl2_space", "the space of the previous action and reward (made by `AMAGOEnv`), passed by the agent."
)
"""The ``rl2_space`` parameter of the timestep encoders and agents."""
