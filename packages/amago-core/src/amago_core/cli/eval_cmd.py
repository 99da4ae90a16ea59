"""`amago eval` and `amago plot`: use a finished (or running) run folder. torch is imported only inside command bodies."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from amago_core.cli.errors import debugging, one_line_errors
from amago_core.cli.output import fail, print_json
from amago_core.cli.run_cmd import cli_flags, experiment_or_fail, fail_on_config_error

RunDir = Annotated[Path, typer.Argument(help="A run folder: {ckpt_base_dir}/{run_name}.")]


def eval_command(
    run_dir: RunDir,
    env: Annotated[str | None, typer.Option("--env", help="Evaluate on another env id.")] = None,
    episodes: Annotated[int | None, typer.Option("--episodes", help="Stop after this many episodes.")] = None,
    timesteps: Annotated[
        int | None, typer.Option("--timesteps", help="Steps per env (default: the run's val setting).")
    ] = None,
    epoch: Annotated[
        int | None, typer.Option("--epoch", help="Weights of this epoch (default: latest).")
    ] = None,
    debug: Annotated[
        bool, typer.Option("--debug", help="Full tracebacks instead of one-line errors.")
    ] = False,
) -> None:
    """Evaluate a run's policy (latest weights unless --epoch) and print the metrics as JSON."""
    from pydantic import ValidationError

    from amago_core.config.sources import ConfigSourceError, load_config
    from amago_core.plugins.errors import PluginError

    resolved_file = run_dir / "config.resolved.json"
    if not resolved_file.is_file():
        fail(f"{run_dir} has no config.resolved.json; pass a run folder ({{ckpt_base_dir}}/{{run_name}})")
    flags = cli_flags(
        env=env, run={"name": run_dir.name, "ckpt_base_dir": str(run_dir.parent)}, logging={"verbose": False}
    )
    try:
        config = load_config([resolved_file], flags=flags).resolved()
    except (ConfigSourceError, ValidationError, PluginError) as exc:
        fail_on_config_error(exc)
    debug = debugging(debug)
    experiment = experiment_or_fail(config, debug, evaluation_only=True)
    with one_line_errors(debug):
        experiment.start()
        try:
            weights = (
                experiment.paths.policy_at(epoch) if epoch is not None else experiment.paths.latest_policy
            )
            if not weights.is_file():
                fail(f"no policy weights at {weights}; train first, or pick an --epoch with a checkpoint")
            experiment.load_checkpoint_from_path(weights, is_accelerate_state=False)
            steps = timesteps or config.schedule.val_timesteps_per_epoch
            metrics = experiment.evaluate_test(experiment.make_test_env, steps, episodes=episodes)
        finally:
            experiment.close()
    print_json(metrics)


def plot_command(
    run_dir: RunDir,
    debug: Annotated[
        bool, typer.Option("--debug", help="Full tracebacks instead of one-line errors.")
    ] = False,
) -> None:
    """Draw learning curves (PNG) from the run's metrics.jsonl into RUN_DIR/plots."""
    from amago_core.experiment.plot import plot_run

    with one_line_errors(debugging(debug), usage=True):
        written = plot_run(run_dir)
    if not written:
        fail(f"{run_dir}/metrics.jsonl has no curves to draw yet (no val/ or train/ records)")
    for path in written:
        sys.stdout.write(f"{path}\n")
