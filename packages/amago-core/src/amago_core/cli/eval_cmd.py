"""`amago eval`: use a finished (or running) run folder. torch is imported only inside command bodies.

`amago eval` never needs wandb or an API key: when the run logged to wandb, its test metrics (and a plugin's files,
amago-tools' videos) are added to that wandb run if wandb is usable here, and otherwise stay in the run folder,
said in one line. Plugins add options (hook ``amago_eval_options``) and act on the evaluation through the eval
hooks (``amago_eval_begin``, ``amago_eval_test_makers``, ``amago_eval_end``).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import typer

from amago_core.cli.errors import DebugFlag, debugging, fail_on_config_error, one_line_errors
from amago_core.cli.output import fail, print_json
from amago_core.cli.run_cmd import cli_flags, experiment_or_fail, plugin_options, with_options
from amago_core.hooks.specs import EvalRequest, RunOption

RunDir = Annotated[Path, typer.Argument(help="A run folder: {ckpt_base_dir}/{run_name}.")]

EVAL_SETTINGS: tuple[str, ...] = (
    "env",
    "env.*",
    "rollout.*",
    "schedule.val_timesteps_per_epoch",
    "run.seed",
    "run.torch_threads",
    "run.compile",
)
"""What ``amago eval -o`` may set (``section.*``: any setting of the section): the envs evaluated on and how they
are stepped. Everything else is what the evaluated policy was trained with."""

EvalOverrides = Annotated[
    list[str] | None,
    typer.Option(
        "-o",
        "--override",
        help=f"section.field=value, as for `amago run`; repeatable. Only what an evaluation can change: "
        f"{', '.join(EVAL_SETTINGS)}.",
    ),
]


def eval_command(
    run_dir: RunDir,
    env: Annotated[str | None, typer.Option("--env", help="Evaluate on another env id.")] = None,
    episodes: Annotated[
        int | None,
        typer.Option(
            "--episodes",
            min=1,
            help="Evaluate exactly this many episodes (each test env plays its share of them).",
        ),
    ] = None,
    timesteps: Annotated[
        int | None,
        typer.Option(
            "--timesteps",
            help="Steps per env at most (default: the run's val setting, times the rounds --episodes needs).",
        ),
    ] = None,
    epoch: Annotated[
        int | None, typer.Option("--epoch", help="Weights of this epoch (default: latest).")
    ] = None,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks",
            help="Tasks to score on: test (the run's test split, the default), val or train (the run's own "
            "splits), or unseen (tasks held out of training, for suites that can tell).",
        ),
    ] = "test",
    override: EvalOverrides = None,
    debug: DebugFlag = False,
    **plugin_options: Any,
) -> None:
    """Evaluate a run's policy (latest weights unless --epoch) and print the metrics as JSON.

    The JSON's ``episodes_evaluated`` says how many episodes the metrics average over, and its ``tasks`` entry
    which tasks were used (``choice`` and the suite's description of them).
    """
    # Every option by name, taken first (only the parameters are local yet), for the plugins' eval hooks.
    options = {name: value for name, value in locals().items() if name != "plugin_options"}
    from pydantic import ValidationError

    from amago_core.config.sources import ConfigSourceError, load_config
    from amago_core.hooks.manager import hook_manager
    from amago_core.plugins.errors import PluginError

    resolved_file = run_dir / "config.resolved.json"
    if not resolved_file.is_file():
        if (run_dir / "ckpts" / "config.txt").is_file():
            fail(
                f"{run_dir} is an AMAGO run folder; convert it with `amago import-amago RUN_DIR OUT`, then eval OUT"
            )
        fail(f"{run_dir} has no config.resolved.json; pass a run folder ({{ckpt_base_dir}}/{{run_name}})")
    tasks = _tasks_or_fail(tasks)
    overrides = list(override or [])
    refuse_fixed_settings(overrides, EVAL_SETTINGS, "eval")
    # Only the run's own test split logs as `test/`; other tasks get their own section, so that
    # `amago compare` never takes a pass on training or held-out tasks for the run's test result.
    section = "test" if tasks == "test" else f"test-{tasks}"
    request = EvalRequest(options={**options, **plugin_options}, run_dir=run_dir, section=section)
    hooks = hook_manager().hook
    # A plugin's options may set what `-o` may not (amago-tools' --context: run.max_seq_len); it checked them.
    for extra in hooks.amago_eval_begin(request=request):
        overrides.extend(extra or ())
    record = _read_record(resolved_file)
    logging_section = record.get("logging")
    trained_with_wandb = isinstance(logging_section, dict) and bool(logging_section.get("log_to_wandb"))
    flags = cli_flags(
        env=env,
        run={"name": run_dir.name, "ckpt_base_dir": str(run_dir.parent)},
        # No new wandb run: the training's own run is resumed below when wandb is usable here.
        logging={"verbose": False, "log_to_wandb": False},
    )
    try:
        config = load_config([resolved_file], flags=flags, overrides=overrides).resolved()
    except (ConfigSourceError, ValidationError, PluginError) as exc:
        fail_on_config_error(exc)
    debug = debugging(debug)
    experiment = experiment_or_fail(config, debug, evaluation_only=True)
    make_env, used_tasks = _task_env_or_fail(experiment.make_test_env, tasks)
    added: dict[str, Any] = {}
    with one_line_errors(debug):
        experiment.start()
        try:
            weights = (
                experiment.paths.policy_at(epoch) if epoch is not None else experiment.paths.latest_policy
            )
            if not weights.is_file():
                fail(f"no policy weights at {weights}; train first, or pick an --epoch with a checkpoint")
            experiment.checkpoints.load_path(weights, whole_state=False)
            trained_epoch = _take_trained_progress(experiment, epoch)
            _add_eval_backends(experiment, run_dir, record, trained_with_wandb)
            steps = timesteps or _step_limit(config, episodes)
            request = replace(
                request,
                epoch=trained_epoch,
                log_files=lambda kind, paths: experiment.reports.files(kind, paths, section),
            )
            wrappers = list(reversed(hooks.amago_eval_test_makers(request=request)))  # in install order
            if episodes is not None:
                wrappers.append(functools.partial(_share_episodes, episodes))
            metrics: dict[str, Any] = experiment.evaluate_test(
                make_env,
                steps,
                episodes=episodes,
                wrap_test_makers=_chained(wrappers) if wrappers else None,
                section=section,
            )
            metrics["episodes_evaluated"] = _episodes_evaluated(metrics, episodes, steps)
            for entries in reversed(hooks.amago_eval_end(request=request, metrics=metrics)):
                added.update(entries)
        finally:
            experiment.close()
    metrics.update(added)
    metrics["tasks"] = used_tasks
    print_json(metrics)


def plugin_eval_options() -> list[RunOption]:
    """The options installed plugins add to `amago eval` (hook ``amago_eval_options``), in plugin order."""
    return plugin_options("amago_eval_options", eval_command, "eval")


def with_eval_options() -> Any:
    """``amago eval`` with the options installed plugins add, before ``--debug``."""
    return with_options(eval_command, eval_command, plugin_eval_options())


def refuse_fixed_settings(overrides: list[str], allowed: tuple[str, ...], command: str) -> None:
    """Exits 2 in one line when an ``-o`` item is malformed or sets what ``amago {command}`` cannot change: a
    setting outside ``allowed`` (dotted keys; ``section.*``: any setting of the section)."""
    from amago_core.config.resume import setting_matches
    from amago_core.config.sources import ConfigSourceError, parse_override

    for item in overrides:
        try:
            tree = parse_override(item)
        except ConfigSourceError as exc:
            fail(str(exc))
        for key in _dotted_keys(tree):
            if not setting_matches(key, allowed):
                fail(
                    f"-o {item}: `amago {command}` cannot change {key}, which the run's policy was trained with; "
                    f"its -o takes {', '.join(allowed)}"
                )


def _dotted_keys(tree: dict[str, Any]) -> list[str]:
    """``{"rollout": {"parallel_actors": 2}}`` -> ``["rollout.parallel_actors"]`` (walked without recursion)."""
    keys, stack = [], [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for key, value in node.items():
            if isinstance(value, dict) and value:
                stack.append((f"{prefix}{key}.", value))
            else:
                keys.append(f"{prefix}{key}")
    return keys


def _step_limit(config: Any, episodes: int | None) -> int:
    """Steps per env without ``--timesteps``: the run's val steps, once per round of episodes ``--episodes`` asks
    of each env (a run's val steps play one round or more)."""
    rounds = -(-episodes // config.rollout.parallel_actors) if episodes else 1
    return int(config.schedule.val_timesteps_per_epoch * rounds)


def _share_episodes(episodes: int, makers: list[Callable[[], Any]]) -> list[Callable[[], Any]]:
    """``makers`` with env ``i`` playing its share of ``episodes`` (the shares differ by at most one), so that
    exactly ``episodes`` finish even when several end in the same step."""
    count = len(makers)
    return [
        functools.partial(_env_with_quota, make, episodes // count + (i < episodes % count))
        for i, make in enumerate(makers)
    ]


def _env_with_quota(make_env: Callable[[], Any], quota: int) -> Any:
    from amago_core.rollout.env import AMAGOEnv

    env = make_env()
    # A vectorised env's rows end together: they are left as they are (the count then says so).
    if isinstance(env, AMAGOEnv) and env.batched_envs == 1:
        env.env = cast(Any, _EpisodeQuota(env.env, quota))  # duck-typed: the CLI does not import gymnasium
    return env


class _EpisodeQuota:
    """A gymnasium env that idles after ``quota`` episodes: each step returns its last reset's observation, reward
    0 and never ends, so no later episode is played or counted."""

    def __init__(self, env: Any, quota: int) -> None:
        self.env, self.left = env, quota
        self.idle: tuple[Any, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        env = self.__dict__.get("env")  # absent while a copy is built: no recursion through this method
        if env is None:
            raise AttributeError(name)
        return getattr(env, name)

    def reset(self, **kwargs: Any) -> tuple[Any, Any]:
        obs, info = self.env.reset(**kwargs)
        self.idle = None if self.left > 0 else (obs, info)
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, Any]:
        if self.idle is not None:
            return self.idle[0], 0.0, False, False, self.idle[1]
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.left -= int(bool(terminated or truncated))
        return obs, reward, terminated, truncated, info


def _episodes_evaluated(metrics: dict[str, Any], asked: int | None, steps: int) -> int:
    """How many episodes the metrics average over; one line on stderr when it is not the ``--episodes`` asked."""
    evaluated = int(metrics.get("Episodes", 0))
    if asked is not None and evaluated < asked:
        sys.stderr.write(
            f"amago: warning: evaluated {evaluated} of {asked} episodes: the {steps} steps per env ran out "
            "first; raise --timesteps\n"
        )
    elif asked is not None and evaluated > asked:
        sys.stderr.write(
            f"amago: note: evaluated {evaluated} episodes, not {asked}: the test envs are vectorised, and the "
            "episodes of their rows that end in the same step all count\n"
        )
    return evaluated


def _chained(wrappers: list[Any]) -> Any:
    """One maker wrapper applying ``wrappers`` in turn."""

    def chained(makers: list[Any]) -> list[Any]:
        for wrap in wrappers:
            makers = list(wrap(makers))
        return makers

    return chained


def _tasks_or_fail(tasks: str) -> str:
    from amago_core.config.task_split import TASK_CHOICES
    from amago_core.suggest import did_you_mean

    if tasks not in TASK_CHOICES:
        fail(f"--tasks {tasks!r} is not one of {', '.join(TASK_CHOICES)}.{did_you_mean(tasks, TASK_CHOICES)}")
    return tasks


def _task_env_or_fail(make_test_env: Any, tasks: str) -> tuple[Any, dict[str, Any]]:
    """The env maker of ``--tasks`` and the ``tasks`` entry of the output (the choice and what it draws).

    ``test`` keeps the run's own test maker (what ``amago eval`` always used); the others need the run's env
    suite, which the makers of a config-built run carry.
    """
    from dataclasses import replace

    from amago_core.config.task_split import UnseenEnvMaker, UnseenTasksError, suite_task_splits
    from amago_core.experiment.pools import SuiteEnvMaker

    if not isinstance(make_test_env, SuiteEnvMaker):
        if tasks != "test":
            fail(
                f"--tasks {tasks} needs the run's env suite, but its envs come from Python env makers; use --tasks test"
            )
        return make_test_env, {"choice": tasks, "suite": None, "description": "the run's own test env makers"}
    splits = suite_task_splits(make_test_env.suite)
    try:
        used = splits.tasks(tasks)
    except UnseenTasksError as exc:
        fail(str(exc))
    entry = {"choice": tasks, "suite": splits.suite, **used.to_json()}
    if tasks == "unseen":
        return UnseenEnvMaker(make_test_env.suite), entry
    if tasks == "test":
        return make_test_env, entry
    split: Literal["train", "val"] = "train" if tasks == "train" else "val"
    return replace(make_test_env, split=split), entry


def _read_record(resolved_file: Path) -> dict[str, Any]:
    """The run's record as written (read once: the training's wandb choice and the plugins' eval backends use
    it); {} when it cannot be read, which loading the config below reports."""
    try:
        record = json.loads(resolved_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return record if isinstance(record, dict) else {}


def _take_trained_progress(experiment: Any, epoch: int | None) -> int | None:
    """Gives the experiment the counters of the training state saved with the evaluated weights (their epoch,
    frames, gradient steps), so test records land at the right x-axes; returns that epoch (None: unknown)."""
    from amago_core.experiment.checkpoints import Progress, read_progress

    states = [(e, folder) for e, folder in experiment.paths.saved_states() if epoch is None or e == epoch]
    if not states:
        if epoch is not None:
            experiment.counters.restore(Progress(epoch=epoch))
        return epoch
    try:
        progress = Progress.from_json(read_progress(states[-1][1]))
    except (OSError, ValueError, KeyError, TypeError):
        return epoch  # a damaged state: the weights are still evaluated, at unknown x-axes
    experiment.counters.restore(progress)  # `amago compare --x minutes` places it by its wall time too
    return progress.epoch


def _add_eval_backends(
    experiment: Any, run_dir: Path, record: dict[str, Any], trained_with_wandb: bool
) -> None:
    """Adds the plugins' backends for this evaluation (hook ``amago_eval_log_backends``: the training's wandb run,
    resumed); a run trained with wandb and no plugin to resume it says so in one line."""
    from amago_core.experiment.logger import backends_of, wandb_backend_installed
    from amago_core.hooks.manager import hook_manager

    answers = hook_manager().hook.amago_eval_log_backends(
        run_dir=run_dir, config=record, metrics=experiment.paths.metrics
    )
    for backend in backends_of(reversed(answers)):  # pluggy answers last-installed first
        experiment.logger.attach(backend)
    if trained_with_wandb and not answers and not wandb_backend_installed():
        sys.stderr.write(
            "amago: warning: the run was trained with wandb, but amago-wandb is not installed (pip install "
            f"amago-wandb); test metrics written to {experiment.paths.metrics} only\n"
        )
