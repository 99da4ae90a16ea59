"""Resuming a run so that a failure changes nothing: the saved state is loaded and checked against the model
before anything in the run folder is written, and the config's optimiser settings apply over the saved ones."""

from __future__ import annotations

import json
from typing import Any, Protocol, cast

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.resume import describe_changes, refused_changes
from amago_core.config.sources import PROVENANCE_KEY
from amago_core.experiment.checkpoints import TrainingState
from amago_core.experiment.counters import RunCounters
from amago_core.experiment.learner import Learner
from amago_core.experiment.logger import RunLogger
from amago_core.experiment.run_checkpoints import NoUsableCheckpointError, RunCheckpoints
from amago_core.experiment.run_dir import RunPaths
from amago_core.experiment.safe_state import DamagedStateError


class Resumable(Protocol):
    """What resuming reads of an experiment and the parts it goes through (``Experiment`` has it; typed here so
    that this module sits below it)."""

    config: ExperimentConfig
    paths: RunPaths
    counters: RunCounters
    checkpoints: RunCheckpoints | None
    learner: Learner | None

    @property
    def logger(self) -> RunLogger | None: ...


class ResumeMismatchError(ValueError):
    """The saved training state does not fit the model this config builds; the message names the settings that
    differ from the run's record and says that the run folder was left as it was."""


def load_resumed_state(experiment: Resumable, state: TrainingState) -> None:
    """Loads ``state`` into the built model, optimiser, schedule and random streams; writes nothing.

    The state brings the weights, the optimiser's moments and step counts and the schedule's step; the
    optimiser's settings (learning rate, weight decay, ...) and the schedule's base rates stay those of this
    config, so a learning rate changed on resume applies.

    Raises:
        NoUsableCheckpointError: a file of the state turned out damaged while loading.
        ResumeMismatchError: the state was saved by another architecture (names the differing settings).
    """
    fresh = _optimiser_settings(experiment)
    try:
        _started(experiment.checkpoints).apply(state)
    except DamagedStateError as exc:
        raise NoUsableCheckpointError(str(exc)) from exc
    except (RuntimeError, ValueError, KeyError) as exc:
        raise ResumeMismatchError(_mismatch_line(experiment, exc)) from exc
    _restore_optimiser_settings(experiment, fresh)


def finish_resume(experiment: Resumable, state: TrainingState) -> None:
    """After the logger exists: continues its record count, takes back the records of the epochs that are
    redone, and moves to the epoch after the state's."""
    if experiment.logger is not None:
        experiment.logger.step = state.progress.logger_step
        experiment.logger.rollback(after_epoch=state.progress.epoch)
    experiment.counters.restore(state.progress, next_epoch=True)


def _started(part: Any) -> Any:
    if part is None:
        msg = "call Experiment.start() first: resuming loads into the built model"
        raise RuntimeError(msg)
    return part


def _learner(experiment: Resumable) -> Learner:
    return cast(Learner, _started(experiment.learner))


def _scheduler(experiment: Resumable) -> Any:
    schedule = _learner(experiment).lr_schedule
    return getattr(schedule, "scheduler", schedule)  # accelerate's wrapper


def _optimiser_settings(experiment: Resumable) -> tuple[list[dict[str, Any]], list[float] | None]:
    """Each parameter group's settings (all but its parameters and current rate) and the schedule's base rates,
    as built from this config."""
    groups = [
        {k: v for k, v in group.items() if k not in ("params", "lr")}
        for group in _learner(experiment).optimizer.param_groups
    ]
    base_lrs = getattr(_scheduler(experiment), "base_lrs", None)
    return groups, list(base_lrs) if base_lrs is not None else None


def _restore_optimiser_settings(
    experiment: Resumable, fresh: tuple[list[dict[str, Any]], list[float] | None]
) -> None:
    groups, base_lrs = fresh
    scheduler, param_groups = _scheduler(experiment), _learner(experiment).optimizer.param_groups
    for group, settings in zip(param_groups, groups, strict=True):
        group.update(settings)
    if base_lrs is None:
        return
    scheduler.base_lrs = base_lrs
    lambdas = getattr(scheduler, "lr_lambdas", None)
    if lambdas is not None:  # LambdaLR: the rate at the restored step, from this config's base and warmup
        for group, base, factor in zip(param_groups, base_lrs, lambdas, strict=True):
            group["lr"] = base * factor(scheduler.last_epoch)
        scheduler._last_lr = [group["lr"] for group in param_groups]


def _mismatch_line(experiment: Resumable, exc: BaseException) -> str:
    root = experiment.paths.root
    changes = []
    try:
        saved = json.loads(experiment.paths.config.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        saved = None
    if isinstance(saved, dict):
        saved.pop(PROVENANCE_KEY, None)
        changes = refused_changes(saved, experiment.config.model_dump(mode="json"))
    if changes:
        what = f"it was trained with other settings ({describe_changes(changes)})"
    else:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        what = f"its saved state does not fit this model ({first})"
    return (
        f"cannot resume {root}: {what}; the run folder is untouched. Resume it with the settings it was saved "
        "with, or start a new run to change them."
    )
