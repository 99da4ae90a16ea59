"""``amago.Experiment``: amago-core's ``Experiment`` with AMAGO's flat keyword arguments, attribute names and aliases.

``amago.Experiment(run_name=..., learning_rate=3e-4, traj_encoder_type="mamba", make_train_env=...)`` maps AMAGO's
flat keywords onto the config tree through one table (:mod:`amago.from_amago.flat`), so it and ``amago run -o
optim.learning_rate=3e-4`` run the same experiment. The flat names also read as attributes
(``experiment.batch_size``), AMAGO's aliases of the parts (``DEVICE``, ``optimizer``, ``train_envs``,
``hidden_state``...) and checkpoint methods (``load_checkpoint``, ``resume_latest``...) are here, and settings change
through :meth:`Experiment.apply_settings`. amago-core's ``Experiment`` takes a plan or a config, and refuses a flat
keyword in one line that names this class.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amago.from_amago.bindings import amago_class_for, has_pending_bindings, null_paths, pending_tree
from amago.from_amago.flat import (
    SLOT_NAMES,
    flat_config,
    flat_names,
    flat_to_tree,
    flat_value,
    is_python_component,
    take_component_classes,
    with_settings,
)
from amago.from_amago.gin.mapping import lookup
from amago_core.config.components import SLOT_GROUPS
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.resolve import RunPlan, plan_run
from amago_core.config.sources import deep_merge
from amago_core.data.dataset import RLDataset
from amago_core.experiment import experiment as core
from amago_core.experiment.checkpoints import Progress, TrainingState
from amago_core.experiment.counters import read_only
from amago_core.experiment.pools import EnvMakers, RolePool
from amago_core.experiment.run_checkpoints import NoUsableCheckpointError, RunCheckpoints
from amago_core.experiment.run_inputs import registries_of
from amago_core.experiment.safe_state import DamagedStateError
from amago_core.plugins.in_process import InProcessSpec
from amago_core.plugins.registry import Registries

if TYPE_CHECKING:
    import torch


class Experiment(core.Experiment):
    """AMAGO's ``Experiment``: build, train, and evaluate an agent from AMAGO's flat keyword arguments.

    Give the settings as AMAGO's flat keywords (``Experiment(run_name=..., max_seq_len=..., learning_rate=3e-4,
    traj_encoder_type="mamba", make_train_env=...)``), as a plan or validated ``config``, or both (keywords win).
    Every setting, its default and its meaning live in ``ExperimentConfig``; the keyword names map onto it through
    one table (:mod:`amago.from_amago.flat`). Read settings through ``experiment.config`` (AMAGO's flat attribute
    names, ``experiment.batch_size``, still read at run time); change them through :meth:`apply_settings` before
    :meth:`start`, never by assignment (``experiment.epochs = 5`` is refused). Component slots
    (``tstep_encoder_type``, ``traj_encoder_type``, ``agent_type``, ``exploration_wrapper_type``) also take
    classes, as in AMAGO. Everything else is amago-core's ``Experiment`` (:meth:`start`, :meth:`learn`, the override
    points).

    Args:
        config: a plan (``plan_run``), a validated config or its mapping; None: planned from the keywords like the
            CLI does (suite preset under them, ``AMAGO_*`` variables).
        dataset: where training sequences come from. None: a disk buffer at ``{dset_root}/{dset_name}``.
        make_train_env: returns an ``AMAGOEnv``, or a list with one maker per actor. None: the ``env`` suite's.
        make_val_env: like ``make_train_env``, for evaluation (never saved). None: ``make_train_env``.
        make_test_env: for the final test (held-out tasks where the suite has them). None: ``make_val_env``.
        registries: where components are looked up (default: the plan's, else the installed plugins).
        evaluation_only: build only what evaluating a trained policy needs.
        allow_traj_pickles: let the default buffer read ``.traj`` files (pickles; see amago-core's ``Experiment``).
        **settings: AMAGO's ``Experiment`` parameters and the config fields by name.
    """

    def __init__(
        self,
        config: RunPlan | ExperimentConfig | Mapping[str, Any] | None = None,
        *,
        dataset: RLDataset | None = None,
        make_train_env: EnvMakers | None = None,
        make_val_env: EnvMakers | None = None,
        make_test_env: EnvMakers | None = None,
        registries: Registries | None = None,
        evaluation_only: bool = False,
        allow_traj_pickles: bool | None = None,
        **settings: Any,
    ) -> None:
        found = registries_of(config, registries)
        name_partials(settings)
        adapt_explorations(settings)
        name_registered_classes(settings, found)
        classes = take_component_classes(settings)
        super().__init__(
            _with_pending_bindings(config, settings, classes, found),
            dataset=dataset,
            make_train_env=make_train_env,
            make_val_env=make_val_env,
            make_test_env=make_test_env,
            registries=found,
            evaluation_only=evaluation_only,
            allow_traj_pickles=allow_traj_pickles,
            classes=classes,
        )
        if dataset is not None:
            from amago.from_amago.data import remember_experiment

            remember_experiment(dataset, self)

    def start(self, resume: bool = False) -> None:
        """Builds everything (see amago-core's ``Experiment.start``); an experiment made by
        ``cli_utils.create_experiment_from_cli`` with AMAGO's ``--ckpt`` opens its existing run folder, as AMAGO's
        scripts did before ``load_checkpoint(ckpt)`` (a fresh start is otherwise refused in a folder holding a run:
        ``start(resume=True)`` opens it)."""
        super().start(resume=resume or bool(self.__dict__.get("reopen_run", False)))

    # ---- AMAGO's flat settings -----------------------------------------------------------------------------
    if not TYPE_CHECKING:  # to a type checker a misspelt attribute is an error, not Any

        def __getattr__(self, name: str) -> Any:
            # Called only for names that are not instance attributes: AMAGO's flat settings, read from the config.
            config = self.__dict__.get("config")
            if config is None or name not in flat_names():
                msg = f"{type(self).__name__!r} object has no attribute {name!r}"
                raise AttributeError(msg)
            slot = SLOT_NAMES.get(name)
            if slot is not None and slot in self.__dict__.get("classes", {}):
                return self.classes[slot]
            return flat_value(config, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if "config" in self.__dict__ and name in flat_names():
            # A setting written as an attribute used to re-validate the whole config and rebuild every
            # component on each write, and a misspelt one silently made a new attribute: settings are given once.
            msg = (
                f"experiment.{name} = ... does not change a setting; pass {name}=... to Experiment(...), or call "
                f"experiment.apply_settings({name}=...) before start()"
            )
            raise AttributeError(msg)
        object.__setattr__(self, name, value)

    def apply_settings(self, **settings: Any) -> None:
        """Changes settings by their flat names, validated like the constructor's (before :meth:`start` to
        affect what it builds; ``epochs`` and the schedule also take effect in a running loop)."""
        classes = dict(self.classes)
        adapt_explorations(settings)
        name_registered_classes(settings, self.registries)
        for key in [k for k in settings if k in SLOT_NAMES]:
            if is_python_component(settings[key]):
                classes[SLOT_NAMES[key]] = settings.pop(key)
            else:
                classes.pop(SLOT_NAMES[key], None)
        self.use_config(with_settings(self.config, settings, registries=self.registries), classes)

    # ---- AMAGO's names for what the parts hold -------------------------------------------------------------
    @property
    def DEVICE(self) -> torch.device:
        """The device this process runs on."""
        return _started(self.accelerator, "the accelerator, envs and model are built there").device

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The optimiser (``init_optimizer``'s, as accelerate prepared it)."""
        return _started(self.learner, "the agent is built there").optimizer

    @property
    def lr_schedule(self) -> torch.optim.lr_scheduler.LRScheduler:
        """The learning-rate warmup schedule."""
        return _started(self.learner, "the agent is built there").lr_schedule

    train_envs: RolePool | None = read_only(
        "env_runner", "train_envs", "This process's train pool, if it collects."
    )
    hidden_state: Any = read_only("env_runner", "hidden_state", "The policy's memory in the train pool.")

    @property
    def frames_by_env_name(self) -> dict[str, int]:
        """Env steps so far, by env name."""
        return self.counters.frames_by_env_name

    @property
    def training_wall_seconds(self) -> float:
        """Seconds :meth:`learn` has run over the whole run, resumes included (the records' wall time)."""
        return self.counters.training_wall_seconds

    @property
    def wall_seconds(self) -> float | None:
        """Seconds the last :meth:`learn` took (None before it ran)."""
        return self.counters.wall_seconds

    @property
    def learn_start_counts(self) -> tuple[int, int]:
        """``(total_frames, grad_update_counter)`` when the last :meth:`learn` began."""
        return self.counters.learn_start_counts

    @property
    def best_val(self) -> tuple[float, int] | None:
        """The best val average return of this session and its epoch (None before any validation)."""
        return self.reports.best_val

    def x_axis_metrics(self) -> dict[str, Any]:
        """The x-axes attached to every record (frames, epoch, gradient steps, training wall time)."""
        return self.reports.x_axes()

    # ---- AMAGO's checkpoint methods (amago-core's part: ``experiment.checkpoints``) ---------------------------
    def progress(self) -> Progress:
        """How far the run got (what a training state records besides the model and optimiser)."""
        return self._saved().progress()

    def restore_progress(self, progress: Progress, *, next_epoch: bool = False) -> None:
        """Sets the counters and the training clock from a recorded ``progress`` (``experiment.counters``)."""
        self.counters.restore(progress, next_epoch=next_epoch)

    def load_checkpoint(self, epoch: int, resume_training_state: bool = True) -> None:
        """Loads the checkpoint of ``epoch``: the whole training state, or only the policy weights."""
        if resume_training_state:
            self.load_checkpoint_from_path(self._saved().state_of_epoch(epoch), is_accelerate_state=True)
        else:
            self.load_checkpoint_from_path(self.paths.policy_at(epoch), is_accelerate_state=False)
            self.counters.at_epoch(epoch)

    def load_checkpoint_from_path(self, path: str | Path, is_accelerate_state: bool = True) -> None:
        """Loads a training-state folder (``is_accelerate_state``) or a policy weights file.

        Raises:
            FileNotFoundError: nothing at ``path``.
            RefusedStateError: a folder of pickle files (never loaded), or a newer layout.
            DamagedStateError: a file of the state is cut short or unreadable.
        """
        self._saved().load_path(path, whole_state=is_accelerate_state)

    def load_training_state(self, state: TrainingState) -> None:
        """Loads a read training state: the model, optimiser, schedule, random streams and counters."""
        self._saved().apply(state)

    def resume_latest(self) -> int | None:
        """Loads the newest complete checkpoint and continues after its epoch; returns that epoch (or None).

        A damaged or refused newer checkpoint is skipped with one line. Metrics logged after the loaded epoch
        (work that is now redone) move out of ``metrics.jsonl``, so curves never run backwards. Call it after
        :meth:`start`; ``start(resume=True)`` does the same and also continues the exploration schedule.
        """
        state = self._saved().newest_usable()
        if state is None:
            return None
        try:
            self.load_training_state(state)
        except DamagedStateError as exc:
            raise NoUsableCheckpointError(str(exc)) from exc
        if self.logger is not None:
            self.logger.rollback(after_epoch=state.progress.epoch)
        self.counters.at_epoch(state.progress.epoch + 1)
        return state.progress.epoch

    def delete_buffer_from_disk(self) -> None:
        """Deletes the replay buffer's FIFO files (main process)."""
        accelerator = _started(self.accelerator, "the accelerator, envs and model are built there")
        if accelerator.is_main_process:
            if self.dataset is None:
                msg = "no dataset: call start() before learn()"
                raise RuntimeError(msg)
            self.dataset.delete()

    def _saved(self) -> RunCheckpoints:
        return _started(self.checkpoints, "checkpoints need the accelerator")


def adapt_explorations(settings: dict[str, Any]) -> None:
    """AMAGO's exploration classes given for ``exploration_wrapper_type`` (``amago.envs.exploration``): the two
    classes become their registered names, a script's subclass a builder that calls it as AMAGO did."""
    if "exploration_wrapper_type" in settings:
        from amago.from_amago.exploration import exploration_for_experiment

        settings["exploration_wrapper_type"] = exploration_for_experiment(
            settings["exploration_wrapper_type"]
        )


def name_partials(settings: dict[str, Any]) -> None:
    """A component slot given ``functools.partial(TheClass, ...)`` (AMAGO's example 10 passes its encoder so) is
    recorded by the class's ``module:Class``, which the partial itself lacks."""
    for key in SLOT_NAMES:
        value = settings.get(key)
        if isinstance(value, functools.partial) and inspect.isclass(value.func):
            for attribute in ("__module__", "__qualname__"):
                if attribute not in vars(value):
                    setattr(value, attribute, getattr(value.func, attribute))


def name_registered_classes(settings: dict[str, Any], found: Registries) -> None:
    """Replaces, in ``settings``, a class given for a component slot by its registered name when the class *is*
    that component: an installed component's own class (``TformerTrajEncoder`` is ``transformer``), or amago's class
    of one of AMAGO's configurables whose component is built by a function (``EpsilonGreedy`` is ``egreedy``).

    By name, the component takes the options of the config (``use_config`` bindings, ``-o``, a table); a class
    would be built with its defaults. Subclasses and the script's own classes stay classes.
    """
    for key, slot in SLOT_NAMES.items():
        value = settings.get(key)
        if slot not in SLOT_GROUPS or not inspect.isclass(value):
            continue
        group = SLOT_GROUPS[slot]
        spec = found[group].spec_for_class(value)
        exact = f"{value.__module__}:{value.__qualname__}"
        if spec is not None and not isinstance(spec, InProcessSpec) and spec.factory == exact:
            settings[key] = spec.name
            continue
        configurable = lookup(value.__qualname__)
        own = value.__module__.partition(".")[0] in _AMAGO_PACKAGES
        if own and configurable is not None and len(configurable.picks) == 1:
            (pick, kind), *_ = configurable.picks
            if pick == f"{slot}.kind" and amago_class_for(slot, kind) is configurable:
                settings[key] = kind


_AMAGO_PACKAGES = frozenset({"amago_core", "amago_nets", "amago_agents", "amago_envs"})
"""amago's packages whose classes may stand for one of AMAGO's configurables."""


def _chosen_kind(value: Any, found: Registries, slot: str) -> str | None:
    """The registered name a slot's keyword (or config entry) picks: a name, a table's or config's kind, or the
    installed component a subclass derives from; None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        kind = value.get("kind")
        return kind if isinstance(kind, str) else None
    kind = getattr(value, "kind", None)
    if isinstance(kind, str):
        return kind
    if inspect.isclass(value):
        spec = found[SLOT_GROUPS[slot]].spec_for_class(value)
        return None if spec is None else spec.name
    return None


def _with_pending_bindings(
    config: RunPlan | ExperimentConfig | Mapping[str, Any] | None,
    settings: dict[str, Any],
    classes: Mapping[str, Any],
    found: Registries,
) -> RunPlan | ExperimentConfig | Mapping[str, Any]:
    """What core's ``Experiment`` is given: :func:`flat_config` of ``config`` and the flat ``settings``, with the
    pending ``use_config`` bindings (:mod:`amago.from_amago.bindings`) between the two (keywords win).

    The slots the keywords (or the config) pick decide which AMAGO class's bindings apply.
    """
    if not has_pending_bindings():
        return flat_config(config, settings, found)
    plain = config.config if isinstance(config, RunPlan) else config
    base = (
        None
        if plain is None
        else (plain if isinstance(plain, ExperimentConfig) else ExperimentConfig.validate_with(plain, found))
    )
    kinds: dict[str, str | None] = {}
    for keyword, slot in SLOT_NAMES.items():
        if slot not in SLOT_GROUPS:
            continue  # the env is no class AMAGO's bindings pick
        given = classes.get(slot, settings.get(keyword))
        if given is None and base is not None:
            given = getattr(base, slot, None)
        kinds[slot] = None if given is None else _chosen_kind(given, found, slot)
    pending = pending_tree(kinds, found)
    flags = deep_merge(pending, flat_to_tree(settings))
    if base is not None:
        merged = deep_merge(base.model_dump(mode="json", exclude_unset=False), flags)
        return ExperimentConfig.validate_with(merged, found)
    # A flag of None is "not given", but a binding of None sets None: those go in as overrides, which only
    # pending values that no keyword replaced (and whose slot kept its kind) still are.
    nulls = [f"{'.'.join(path)}=null" for path in null_paths(pending) if _at(flags, path) == (True, None)]
    return plan_run(flags=flags, overrides=nulls, registries=found)


def _at(tree: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    """``(True, value)`` at ``path`` in ``tree``, or ``(False, None)`` when nothing is there."""
    node: Any = tree
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _started(part: Any, why: str) -> Any:
    if part is None:
        msg = f"call Experiment.start() first: {why}"
        raise RuntimeError(msg)
    return part


__all__ = ["Experiment"]
