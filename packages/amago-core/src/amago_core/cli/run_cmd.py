"""`amago run`, `amago eval` and `amago plot`. torch is imported only inside the command bodies."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from amago_core.cli.config_cmd import ConfigFiles, Overrides
from amago_core.cli.output import fail, print_json

RunDir = Annotated[Path, typer.Argument(help="A run folder: {ckpt_base_dir}/{run_name}.")]


def _flags(**values: Any) -> dict[str, Any]:
    """CLI flags as a config dict (None: not given)."""
    return {key: value for key, value in values.items() if value is not None}


def _default_job() -> dict[str, Any] | None:
    from amago_core.hooks.manager import hook_manager

    return hook_manager().hook.amago_default_job()


def _load_run_config(
    files: list[Path] | None, overrides: list[str] | None, flags: dict[str, Any], resume: Path | None
):
    from amago_core.cli.config_cmd import load_or_fail
    from amago_core.config.sources import ConfigSourceError, merge_sources

    sources = list(files or [])
    if resume is not None:
        resolved = resume / "config.resolved.json"
        if not resolved.is_file():
            fail(f"cannot resume {resume}: it has no config.resolved.json (is it a run folder?)")
        sources.insert(0, resolved)
    # The base layer: the chosen suite's preset for its task, or the main job's settings when no source names
    # an env (a -c file of tweaks included).
    try:
        env_choice = merge_sources(files=sources, flags=flags, overrides=overrides or ()).get("env")
    except ConfigSourceError as exc:
        fail(str(exc))
    base = _default_job() if env_choice is None else _suite_preset(env_choice)
    return load_or_fail(sources, overrides, flags, base=base)


def _suite_preset(env_choice: Any) -> dict[str, Any] | None:
    """The preset an env suite declares for the chosen task (``spec.extra["presets"]``), if any."""
    from amago_core.config.presets import preset_for_env

    try:
        return preset_for_env(env_choice)
    except Exception:  # an unknown env is reported, with its did-you-mean, when the config is validated
        return None


def run_command(
    env: Annotated[
        str | None, typer.Option("--env", help="Env id, e.g. tmaze-passive (see `amago list envs`).")
    ] = None,
    tstep_encoder: Annotated[
        str | None, typer.Option("--tstep-encoder", help="Timestep encoder name.")
    ] = None,
    traj_encoder: Annotated[
        str | None, typer.Option("--traj-encoder", help="Trajectory encoder name.")
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Agent name.")] = None,
    exploration: Annotated[str | None, typer.Option("--exploration", help="Exploration name.")] = None,
    config: ConfigFiles = None,
    override: Overrides = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the resolved config and stop.")] = False,
    mode: Annotated[str | None, typer.Option("--mode", help="both | collect | learn.")] = None,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="A run folder to continue from its newest checkpoint.")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Random seed.")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Run name (default: env-encoder-time).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bars or summary.")] = False,
) -> None:
    """Train an agent: compose env, encoders, agent and exploration from the installed plugins.

    With no arguments it runs amago's embedded main job (a small memory task that trains on a CPU in minutes).
    """
    if mode is not None and mode not in ("both", "collect", "learn"):
        fail(f"--mode must be both, collect or learn (got {mode!r})")
    run_flags = _flags(mode=mode, seed=seed, name=name if resume is None else (name or resume.name))
    if resume is not None:
        run_flags["ckpt_base_dir"] = str(resume.parent)
    flags = _flags(
        env=env,
        tstep_encoder=tstep_encoder,
        traj_encoder=traj_encoder,
        agent=agent,
        exploration=exploration,
        run=run_flags or None,
        logging={"verbose": False} if quiet else None,
    )
    loaded = _load_run_config(config, override, flags, resume)
    from amago_core.plugins.errors import PluginError

    try:
        resolved = loaded.resolved()
    except PluginError as exc:
        fail(str(exc))
    if resolved.env is None:
        fail("no env chosen: pass --env ID (see `amago list envs`) or set `env` in a -c config file")
    if dry_run:
        print_json(resolved.model_dump(mode="json"))
        return
    _train(resolved, resume)


def _train(config: Any, resume: Path | None) -> None:
    from amago_core.experiment.builder import build_experiment, env_id_of
    from amago_core.experiment.plot import plot_run
    from amago_core.plugins.errors import PluginError

    try:
        experiment = build_experiment(config)
    except (PluginError, ValueError) as exc:
        fail(str(exc))
    experiment.start()
    try:
        if resume is not None:
            epoch = experiment.resume_latest()
            message = (
                f"resuming after epoch {epoch}" if epoch is not None else "no checkpoint yet: starting over"
            )
            sys.stderr.write(f"amago: {message} ({experiment.paths.root})\n")
        experiment.learn()
        final = None
        test_env = experiment.make_test_env or experiment.make_val_env
        if experiment.val_envs is not None and test_env is not None:
            final = experiment.evaluate_test(test_env, experiment.val_timesteps_per_epoch)
        is_main = experiment.accelerator.is_main_process
    finally:
        experiment.close()
    if not is_main:
        return
    written = plot_run(experiment.paths.root) if config.logging.plot else []
    summary = {
        "run_dir": str(experiment.paths.root),
        "env": env_id_of(config.env),
        "epochs": experiment.epochs,
        "total_frames": experiment.total_frames,
        "gradient_steps": experiment.grad_update_counter,
        "final_test": final,
        "plots": [str(p) for p in written],
    }
    print_json(summary)


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
) -> None:
    """Evaluate a run's policy (latest weights unless --epoch) and print the metrics as JSON."""
    from amago_core.cli.config_cmd import load_or_fail
    from amago_core.experiment.builder import build_evaluation_experiment
    from amago_core.plugins.errors import PluginError

    resolved_file = run_dir / "config.resolved.json"
    if not resolved_file.is_file():
        fail(f"{run_dir} has no config.resolved.json; pass a run folder ({{ckpt_base_dir}}/{{run_name}})")
    flags = _flags(
        env=env, run={"name": run_dir.name, "ckpt_base_dir": str(run_dir.parent)}, logging={"verbose": False}
    )
    config = load_or_fail([resolved_file], None, flags)
    try:
        experiment = build_evaluation_experiment(config)
    except (PluginError, ValueError) as exc:
        fail(str(exc))
    experiment.start()
    try:
        weights = experiment.paths.policy_at(epoch) if epoch is not None else experiment.paths.latest_policy
        if not weights.is_file():
            fail(f"no policy weights at {weights}; train first, or pick an --epoch with a checkpoint")
        experiment.load_checkpoint_from_path(weights, is_accelerate_state=False)
        steps = timesteps or experiment.val_timesteps_per_epoch
        test_env = experiment.make_test_env or experiment.make_val_env
        metrics = experiment.evaluate_test(test_env, steps, episodes=episodes)
    finally:
        experiment.close()
    print_json(metrics)


def plot_command(run_dir: RunDir) -> None:
    """Draw learning curves (PNG) from the run's metrics.jsonl into RUN_DIR/plots."""
    from amago_core.experiment.plot import plot_run

    try:
        written = plot_run(run_dir)
    except FileNotFoundError as exc:
        fail(str(exc))
    if not written:
        fail(f"{run_dir}/metrics.jsonl has no curves to draw yet (no val/ or train/ records)")
    for path in written:
        sys.stdout.write(f"{path}\n")
