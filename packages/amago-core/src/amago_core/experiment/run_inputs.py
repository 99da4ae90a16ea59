"""What an ``Experiment`` is given (a plan, a config or its mapping, slot classes, env makers), made into the
validated config, its components and the train/val/test makers, and checked before any folder exists: what
cannot run is refused in one line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from amago_core.config.components import SLOT_GROUPS, RunComponents, UserClass
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.resolve import RunPlan
from amago_core.experiment.naming import default_run_name
from amago_core.experiment.pools import EnvMakers, makers_per_actor, suite_makers
from amago_core.experiment.processes import ProcessRole
from amago_core.plugins.registry import Registries
from amago_core.plugins.registry import registries as installed_registries
from amago_core.suggest import closest

Makers = tuple[EnvMakers | None, EnvMakers | None, EnvMakers | None]
"""The train, val and test env makers."""


@dataclass(frozen=True)
class RunInputs:
    """What ``Experiment(...)`` was given, validated and checked (:meth:`of`).

    Attributes:
        config: the validated config (a run name drawn when none is set).
        components: its component slots, resolved once.
        registries: where components are looked up, when validating the settings and when building.
        classes: the Python classes given for slots, by slot.
        given_makers: the train, val and test makers as given (None where another stands in).
        makers: the makers the run uses: the given ones (val defaults to train, test to val), or the ``env``
            setting's suite.
        allow_traj_pickles: whether the default buffer reads ``.traj`` files (pickles, through a restricted
            unpickler): this process's caller's choice (the CLI's ``--allow-traj-pickles``), never a config's.
    """

    config: ExperimentConfig
    components: RunComponents
    registries: Registries
    classes: Mapping[str, UserClass]
    given_makers: Makers
    makers: Makers
    allow_traj_pickles: bool

    @classmethod
    def of(
        cls,
        given: RunPlan | ExperimentConfig | Mapping[str, Any],
        classes: Mapping[str, UserClass],
        registries: Registries | None,
        makers: Makers,
        own_dataset: bool,
        evaluation_only: bool,
        allow_traj_pickles: bool | None,
    ) -> RunInputs:
        """Validates ``Experiment``'s arguments (the same names) and refuses, in one line, what cannot run
        (:func:`check_runnable`); ``own_dataset``: a dataset was given. ``allow_traj_pickles`` None: allowed
        when the config writes that format (``replay.save_trajs_as``)."""
        check_classes(classes)
        found = registries_of(given, registries)
        config = experiment_config(given, found)
        components = run_components(given, classes, found, config)
        used = env_makers(makers, config, found)
        allowed = (
            config.replay.save_trajs_as == "traj" if allow_traj_pickles is None else bool(allow_traj_pickles)
        )
        role = ProcessRole.of(config)
        check_runnable(
            config,
            used,
            collects=collects_this_run(config, role, evaluation_only),
            learns_from_default_buffer=not evaluation_only and role.learns and not own_dataset,
            allow_traj_pickles=allowed,
        )
        return cls(config, components, found, dict(classes), makers, used, allowed)


def unknown_keyword_line(names: list[str]) -> str:
    """The one line refusing keywords that are no parameter of ``Experiment`` (AMAGO's flat settings, say): where
    the setting goes in the config, and that ``amago.Experiment`` takes AMAGO's flat keywords."""
    name = names[0]
    paths = {
        f"{section}.{field}"
        for section, info in ExperimentConfig.model_fields.items()
        for field in getattr(info.annotation, "model_fields", {})
    } | set(ExperimentConfig.model_fields)
    by_last = {path.rsplit(".", 1)[-1]: path for path in sorted(paths)}
    match = closest(name, by_last)
    where = f" (the config key {by_last[match]})" if match is not None else ""
    return (
        f"Experiment() got the keyword {name!r}, which is no parameter of amago_core's Experiment: give settings in "
        f"its plan or config{where}, or use amago.Experiment (from amago import Experiment), which takes AMAGO's "
        "flat keywords."
    )


def check_classes(classes: Mapping[str, UserClass]) -> None:
    """Refuses a class given for a slot that does not exist (the slots are ``traj_encoder``, ``agent``...)."""
    for slot in classes:
        if slot not in SLOT_GROUPS:
            hint = closest(slot.removesuffix("_type").removesuffix("_wrapper"), SLOT_GROUPS)
            msg = f"classes={{{slot!r}: ...}} names no component slot; the slots are {', '.join(SLOT_GROUPS)}"
            raise ValueError(msg + (f" (did you mean {hint!r}?)" if hint else ""))


def registries_of(config: Any, given: Registries | None) -> Registries:
    """The registries a run validates and builds against: the given ones, else the plan's, else the installed
    plugins."""
    if given is not None:
        return given
    if isinstance(config, RunPlan) and config.registries is not None:
        return config.registries
    return installed_registries()


def built_as_planned(given: Any, registries: Registries) -> TypeGuard[RunPlan]:
    """Whether ``Experiment(given)`` builds a plan as planned: against the registries it was validated with."""
    return isinstance(given, RunPlan) and registries is registries_of(given, None)


def experiment_config(
    config: RunPlan | ExperimentConfig | Mapping[str, Any], registries: Registries
) -> ExperimentConfig:
    """The validated config of ``Experiment(config)``, every name looked up in ``registries``, with a run name
    drawn when none is set; a plan :func:`built_as_planned` is used as it is (validated and resolved already)."""
    if built_as_planned(config, registries):
        resolved = config.config
    else:
        plain = config.config if isinstance(config, RunPlan) else config
        base = (
            plain
            if isinstance(plain, ExperimentConfig)
            else ExperimentConfig.validate_with(plain, registries)
        )
        resolved = base.resolved(registries)
    if resolved.run.name is None:
        resolved = resolved.model_copy(
            update={"run": resolved.run.model_copy(update={"name": default_run_name(resolved)})}
        )
    return resolved


def run_components(
    given: Any, classes: Mapping[str, UserClass], registries: Registries, config: ExperimentConfig
) -> RunComponents:
    """The components of ``Experiment(given, classes=classes)``: the plan's own when it builds exactly that plan (no
    Python classes, the plan's registries), so nothing is resolved twice; else ``config``'s, resolved here once."""
    if built_as_planned(given, registries) and not classes:
        return given.components
    return RunComponents.resolve(config, registries, classes)


def env_makers(given: Makers, config: ExperimentConfig, registries: Registries) -> Makers:
    """The train, val and test makers: the given ones (val defaults to train, test to val), or the ``env``
    setting's suite when none is given."""
    train, val, test = given
    if train is None and val is None and test is None and config.env is not None:
        makers = suite_makers(registries.env_suites.build(config.env))
        return makers["train"], makers["val"], makers["test"]
    val = val if val is not None else train
    return train, val, test if test is not None else val


def collects_this_run(config: ExperimentConfig, role: ProcessRole, evaluation_only: bool) -> bool:
    """Whether this process ever steps train envs: its mode collects, collection starts within the run, and it
    is not an evaluation-only experiment."""
    sched = config.schedule
    return role.collects and sched.start_collecting_at_epoch < sched.epochs and not evaluation_only


def check_runnable(
    config: ExperimentConfig,
    makers: Makers,
    *,
    collects: bool,
    learns_from_default_buffer: bool,
    allow_traj_pickles: bool,
) -> None:
    """Refuses, with one line each, what cannot run: pickled buffers not allowed, no env to collect from or
    none at all, makers that do not split among the actors.

    Args:
        collects: whether this process steps train envs (:func:`collects_this_run`).
        learns_from_default_buffer: whether this process trains from the default disk buffer.
        allow_traj_pickles: whether this invocation lets the buffer read ``.traj`` pickles.

    Raises:
        ValueError: the line that says what to change.
    """
    train, val, _ = makers
    if learns_from_default_buffer and config.replay.save_trajs_as == "traj" and not allow_traj_pickles:
        msg = (
            "replay.save_trajs_as = 'traj' writes the buffer as pickles, which this run reads back only when "
            "you allow it: pass --allow-traj-pickles (Experiment(..., allow_traj_pickles=True)) if you trust "
            "the .traj files in its buffer, or set replay.save_trajs_as=npz."
        )
        raise ValueError(msg)
    if collects and train is None:
        msg = (
            "no env to collect from: pass make_train_env (or set env, an env id such as 'tmaze-passive'), or "
            "turn collection off (start_collecting_at_epoch >= epochs)."
        )
        raise ValueError(msg)
    if val is None and train is None:
        msg = "no env at all: pass make_train_env / make_val_env, or set env (an env id, see `amago list envs`)."
        raise ValueError(msg)
    _check_actor_counts(config, train, val)


def _check_actor_counts(config: ExperimentConfig, train: EnvMakers | None, val: EnvMakers | None) -> None:
    # Expanding the makers per actor only builds partials; done here so that a suite that cannot split its
    # envs among the actors (ale-multigame's games) or a maker list of the wrong length is a config error
    # before any run folder exists, not a failure in start().
    rollout, ray = config.rollout, config.ray
    if rollout.env_mode == "already_vectorized":
        return  # one maker builds every env of the pool
    train_actors = ray.actors * config.envs_per_ray_actor if ray.actors else rollout.parallel_actors
    for maker, n, what in (
        (train, train_actors, "make_train_env"),
        (val, rollout.parallel_actors, "make_val_env"),
    ):
        if maker is not None:
            makers_per_actor(maker, n, what)
