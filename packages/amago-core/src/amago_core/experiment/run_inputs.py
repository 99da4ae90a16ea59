"""What an ``Experiment`` is given, made into one config and env makers, and checked before any folder exists.

``Experiment(...)`` takes a plan, a config, AMAGO's flat keywords or both, classes for component slots, and env
makers; these functions turn that into the validated config, the user's classes, and the train/val/test makers,
and refuse what cannot run with one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from amago_core.config.component import ComponentConfig
from amago_core.config.components import RunComponents, UserClass
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.flat import SLOT_NAMES, flat_to_tree, with_settings
from amago_core.config.resolve import RunPlan, resolve_config
from amago_core.experiment.naming import default_run_name
from amago_core.experiment.pools import EnvMakers, makers_per_actor, suite_makers
from amago_core.experiment.processes import ProcessRole
from amago_core.plugins.registry import Registries
from amago_core.plugins.registry import registries as installed_registries

Makers = tuple[EnvMakers | None, EnvMakers | None, EnvMakers | None]
"""The train, val and test env makers."""


def is_python_component(value: Any) -> bool:
    """A class or factory given for a component slot (as opposed to a name, a table or a config)."""
    return callable(value) and not isinstance(value, str | Mapping | ComponentConfig)


def take_component_classes(settings: dict[str, Any]) -> dict[str, UserClass]:
    """Removes the classes given for component slots (``traj_encoder_type=MyEncoder``) from ``settings``;
    returns them by slot (``traj_encoder``)."""
    return {
        SLOT_NAMES[key]: settings.pop(key)
        for key in list(settings)
        if key in SLOT_NAMES and is_python_component(settings[key])
    }


def registries_of(config: Any, given: Registries | None) -> Registries:
    """The registries a run validates and builds against: the given ones, else the plan's, else the installed
    plugins."""
    if given is not None:
        return given
    if isinstance(config, RunPlan) and config.registries is not None:
        return config.registries
    return installed_registries()


def built_as_planned(given: Any, settings: Mapping[str, Any], registries: Registries) -> TypeGuard[RunPlan]:
    """Whether ``Experiment(given, **settings)`` builds a plan as planned: no keywords over it, and the
    registries it was validated against."""
    return isinstance(given, RunPlan) and not settings and registries is registries_of(given, None)


def experiment_config(
    config: RunPlan | ExperimentConfig | Mapping[str, Any] | None,
    settings: Mapping[str, Any],
    registries: Registries,
) -> ExperimentConfig:
    """The validated config of ``Experiment(config, **settings)``: the flat keywords over ``config`` (or planned
    like the CLI plans a run when there is none), every name looked up in ``registries``, with a run name drawn
    when none is set; a plan :func:`built_as_planned` is used as it is (validated and resolved already)."""
    if built_as_planned(config, settings, registries):
        resolved = config.config
    elif config is None:
        resolved = resolve_config(flags=flat_to_tree(settings), registries=registries)
    else:
        plain = config.config if isinstance(config, RunPlan) else config
        base = (
            plain
            if isinstance(plain, ExperimentConfig)
            else ExperimentConfig.validate_with(plain, registries)
        )
        resolved = with_settings(base, settings, registries=registries).resolved(registries)
    if resolved.run.name is None:
        resolved = resolved.model_copy(
            update={"run": resolved.run.model_copy(update={"name": default_run_name(resolved)})}
        )
    return resolved


def run_components(
    given: Any,
    settings: Mapping[str, Any],
    classes: Mapping[str, UserClass],
    registries: Registries,
    config: ExperimentConfig,
) -> RunComponents:
    """The components of ``Experiment(given, **settings)``: the plan's own when it builds exactly that plan (no
    keywords, no Python classes, the plan's registries), so nothing is resolved twice; else ``config``'s,
    resolved here once."""
    if built_as_planned(given, settings, registries) and not classes:
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
        config: the run's config.
        makers: the train, val and test makers.
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
