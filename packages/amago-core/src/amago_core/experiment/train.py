"""``train(plan)``: the one way a run starts and ends.

Build the experiment from the plan, start (or resume) it, learn, run the final test, close, then let the plugins
make their outputs from the finished run folder (hook ``amago_after_run``). ``amago run`` calls it, and so does any
script that wants what ``amago run`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.resolve import RunPlan
from amago_core.experiment.experiment import Experiment
from amago_core.experiment.naming import env_id_of
from amago_core.experiment.progress import final_numbers
from amago_core.experiment.signals import TIME_LIMIT


@dataclass
class RunResult:
    """What one training run left.

    Attributes:
        experiment: the experiment after it closed: its folder (``paths``), counters and ``stopped_by``.
        final_test: the final test's metrics (None: the run stopped early, evaluates nothing, or has no test envs).
        outputs: the files the plugins made from the finished run (main process only), in plugin order.
    """

    experiment: Experiment
    final_test: dict[str, float] | None
    outputs: list[Path]

    def summary(self) -> dict[str, Any]:
        """The run's summary as ``amago run`` prints it: folder, env, schedule, counters, final test, outputs
        (under ``plots``), wall time and rates, best val return, the weights to load; and what stopped it early."""
        experiment = self.experiment
        env = experiment.config.env
        summary = {
            "run_dir": str(experiment.paths.root),
            "env": env_id_of(env) if isinstance(env, EnvSuiteConfig) else env,
            "epochs": experiment.config.schedule.epochs,
            "total_frames": experiment.total_frames,
            "gradient_steps": experiment.grad_update_counter,
            "final_test": self.final_test,
            "plots": [str(path) for path in self.outputs],
            **final_numbers(experiment),  # wall time, env steps/s, updates/s, best val return, checkpoint
        }
        if experiment.stopped_by is not None:
            summary["stopped_by"] = experiment.stopped_by
            summary["epochs_done"] = experiment.epoch
        return summary


def runs_final_test(experiment: Experiment) -> bool:
    """Whether a run ends with a ``test/`` pass: it finished (or reached its time limit), it evaluates (here, or
    on its Ray actors with ``ray.evaluate``) and it has test envs."""
    finished = experiment.stopped_by in (None, TIME_LIMIT)  # a time limit is how a budget ends
    collector = experiment.collector
    evaluates = experiment.val_envs is not None or (collector is not None and collector.evaluates)
    return bool(finished and evaluates and experiment.make_test_env)


def standard_final_test(experiment: Experiment) -> dict[str, float] | None:
    """``amago run``'s final test: the test envs for one validation's worth of steps, when
    :func:`runs_final_test` says the run has one."""
    make_env = experiment.make_test_env
    if make_env is None or not runs_final_test(experiment):
        return None
    return experiment.evaluate_test(make_env, experiment.config.schedule.val_timesteps_per_epoch)


def train(
    run: RunPlan | Experiment,
    *,
    resume: bool = False,
    final_test: Callable[[Experiment], dict[str, float] | None] = standard_final_test,
    on_start: Callable[[Experiment], None] | None = None,
    **build: Any,
) -> RunResult:
    """Trains a run from start (or its newest checkpoint) to its final test, and returns what it left.

    Args:
        run: the plan (:func:`~amago_core.config.resolve.plan_run`), or an ``Experiment`` already built from one
            (a caller that reports errors with the experiment at hand builds it first).
        resume: continue from the run folder's newest checkpoint.
        final_test: what to evaluate after learning (default: :func:`standard_final_test`).
        on_start: called once the experiment started (resumed or fresh), before it learns.
        **build: keyword arguments of ``Experiment`` when ``run`` is a plan (env makers, ``dataset``,
            ``allow_traj_pickles``...).

    Returns:
        The experiment, the final test's metrics and the plugins' outputs (``RunResult.summary()`` is what
        ``amago run`` prints).
    """
    experiment = run if isinstance(run, Experiment) else Experiment(run, **build)
    final = None
    try:
        experiment.start(resume=resume)
        if on_start is not None:
            on_start(experiment)
        experiment.learn()
        final = final_test(experiment)
    finally:
        experiment.close()
    main = experiment.accelerator is None or experiment.accelerator.is_main_process
    return RunResult(experiment, final, _after_run(experiment) if main else [])


def _after_run(experiment: Experiment) -> list[Path]:
    """What the plugins made from the finished run (hook ``amago_after_run``), in the order they were installed."""
    from amago_core.hooks.manager import hook_manager

    answers = hook_manager().hook.amago_after_run(
        run_dir=experiment.paths.root, config=experiment.config.model_dump(mode="json")
    )
    return [Path(path) for answer in reversed(answers) for path in answer or ()]
