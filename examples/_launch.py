"""The flow every example shares: preset + job -> config -> build -> train -> final test -> print the metrics.

The examples import it as ``from _launch import ...``: ``python examples/NN_name.py`` puts the examples folder
first on ``sys.path``. A script adds its own flags, then ``add_common_flags`` (encoder, epochs, run name and
folder, ``--smoke``); it writes only the settings that follow from its own flags and its ``SMOKE`` overrides
(often ``TINY_RNN`` or ``TINY_TRANSFORMER``, or built on them); ``launch`` does the rest the same way for all.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from typing import Any, NoReturn

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.resolve import plan_run
from amago_core.config.sources import deep_merge
from amago_core.experiment import Experiment
from amago_core.experiment.train import train

MISSING_EXIT_CODE = 2
"""Exit status when a library (or a data file) the suite needs is missing; the stderr line says what to do."""

SMOKE_HELP = "a tiny job in a temp folder (seconds)"

TINY_RNN: dict[str, Any] = {
    "traj_encoder": {"kind": "rnn", "d_hidden": 16, "d_output": 16, "n_layers": 1},
    "tstep_encoder": {"kind": "ff", "d_hidden": 16, "d_output": 16},
    "rollout": {"parallel_actors": 2},
    "schedule": {
        "epochs": 1,
        "train_timesteps_per_epoch": 16,
        "train_batches_per_epoch": 2,
        "val_interval": None,
        "val_timesteps_per_epoch": 16,
    },
    "optim": {"batch_size": 2},
}
"""``--smoke`` of the single-env gymnasium suites: one epoch of 16 steps on 2 actors, 16-wide RNN, no validation."""

TINY_TRANSFORMER: dict[str, Any] = {
    "traj_encoder": {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1},
    "tstep_encoder": {"kind": "ff", "d_hidden": 16, "d_output": 16},
    "rollout": {"parallel_actors": 2},
    "schedule": {"epochs": 1, "train_batches_per_epoch": 2, "val_interval": 1},
    "optim": {"batch_size": 2},
}
"""``--smoke`` of the meta-RL examples: a one-layer 16-wide transformer on 2 actors for one validated epoch
(the script's job keeps its own rollout lengths)."""


def add_common_flags(
    parser: argparse.ArgumentParser,
    *,
    epochs: int,
    run_name: str,
    traj_encoder_help: str | None = None,
    smoke_help: str = SMOKE_HELP,
) -> None:
    """Adds the flags every example has: ``--traj-encoder --epochs --run-name --ckpt-base-dir --smoke``.

    ``launch`` turns them into settings (``common_settings``); ``epochs`` and ``run_name`` are the defaults.
    Scripts default to fewer epochs than AMAGO's 1,000 (100-700, sized so that a run ends within a day on one
    machine); ``--epochs 1000`` gives AMAGO's.
    """
    parser.add_argument("--traj-encoder", default="transformer", help=traj_encoder_help)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--run-name", default=run_name)
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help=smoke_help)


def common_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings of ``add_common_flags``'s flags (logging is quiet and unplotted under ``--smoke``)."""
    return {
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir},
        "schedule": {"epochs": args.epochs},
        "logging": {"verbose": not args.smoke, "plot": False},
    }


def _missing(name: str, exc: BaseException) -> NoReturn:
    print(f"{name}: {' '.join(str(exc).split())}", file=sys.stderr)
    raise SystemExit(MISSING_EXIT_CODE) from None


def launch(
    job: dict[str, Any],
    args: argparse.Namespace,
    *,
    smoke_job: dict[str, Any],
    eval_timesteps: int | Callable[[ExperimentConfig], int],
    eval_split: str = "test",
    name: str = "example",
    missing: tuple[type[BaseException], ...] = (),
    before_build: Callable[[ExperimentConfig], dict[str, Any] | None] | None = None,
) -> dict[str, float]:
    """Trains the job with the suite's preset under it, evaluates it, prints and returns the test metrics.

    Args:
        job: the example's own settings (a config mapping), merged over ``common_settings(args)``; both win
            over the preset of the job's env (``job["env"]["id"]``).
        args: the parsed flags, ``add_common_flags``'s among them. With ``args.smoke``, ``smoke_job`` is merged
            over the job and the run goes into a temporary folder, removed on return.
        smoke_job: the tiny-job overrides of ``--smoke``.
        eval_timesteps: timesteps of the final evaluation, or a function of the validated config giving them.
        eval_split: ``"test"`` evaluates on the suite's test envs (held-out tasks where the suite has them;
            ``experiment.make_test_env``, falling back to ``make_val_env``); ``"val"`` on its validation envs.
        name: the script's name: the temp-folder prefix and the prefix of the missing-library message.
        missing: errors that mean something is not installed (or not on disk), raised while the config is
            validated, built or started: they end the script with one line on stderr (whitespace folded)
            and exit status ``MISSING_EXIT_CODE`` instead of a traceback.
        before_build: called with the final config (the smoke run folder in place) before the build; it may
            prepare the run folder (example 14 converts its dataset there) and may return extra keyword
            arguments for ``Experiment`` (example 13 passes its relabeling dataset).

    Returns:
        The final evaluation's metrics, as ``Experiment.evaluate_test`` returns them (also printed as JSON).
    """
    job = deep_merge(common_settings(args), job)
    with tempfile.TemporaryDirectory(prefix=f"amago-{name}-") as scratch:
        if args.smoke:
            job = deep_merge(job, smoke_job)
            job["run"]["ckpt_base_dir"] = scratch
        try:
            # One resolver for everything that starts a run: the job as the flags of `amago run` would be (the
            # env suite's preset under it, its episode followed, the AMAGO_* environment included).
            plan = plan_run(flags=job)
            extra = before_build(plan.config) if before_build else None
            experiment = Experiment(plan, **(extra or {}))
        except missing as exc:
            _missing(name, exc)

        def evaluate(trained: Experiment) -> dict[str, float]:
            if eval_split == "test":
                make_env = trained.make_test_env or trained.make_val_env
            else:
                make_env = trained.make_val_env
            steps = eval_timesteps(plan.config) if callable(eval_timesteps) else eval_timesteps
            return trained.evaluate_test(make_env, steps)

        try:
            # The same start-learn-test-close as `amago run` (amago_core.experiment.train.train).
            metrics = train(experiment, final_test=evaluate).final_test or {}
        except missing as exc:  # a library an env needs when it starts is reported like one needed to build
            _missing(name, exc)
    print(json.dumps(metrics, indent=2))
    return metrics
