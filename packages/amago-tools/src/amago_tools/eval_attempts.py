"""``amago eval --attempts K --context L``: in-context adaptation measured attempt by attempt.

A meta-RL suite plays trials of several attempts at one hidden task; a policy that adapts in context does better in
later attempts. ``--attempts K`` evaluates trials of ``K`` attempts (more than trained probes adaptation past the
training horizon); ``--context L`` evaluates with a memory of ``L`` steps (``run.max_seq_len``, the Transformer's
KV cache), shorter than a trial, so the cache rolls over. Each test env records the per-attempt metrics of every
trial it finishes; the report gives each attempt's mean with a 95 % interval over trials, ``attempts.json`` and
``attempts.png`` in the run folder, and a one-line verdict: does an attempt after the last trained one fall below
it ("collapse"), by how much, or does it keep rising.

A suite takes ``--attempts`` by declaring two class attributes on its config (amago-envs' meta-RL suites do):
``attempt_options`` (the options set to ``K``) and ``attempt_metrics`` (name -> info key, ``{i}`` the 0-based
attempt, ``{n}`` the 1-based one). Import-cheap like every hook module: typer and the standard library; numpy and
matplotlib load when an evaluation reports.
"""

from __future__ import annotations

import functools
import json
import math
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from amago_core.cli.output import fail
from amago_core.hooks.specs import EvalRequest, RunOption

STATE_ENCODERS = ("rnn", "gru", "mamba")
"""Trajectory encoders whose memory is a state carried through the whole trial: ``run.max_seq_len`` only sizes
their training windows, so ``--context`` would change nothing."""
MEMORYLESS_ENCODERS = ("ff", "identity")
"""Trajectory encoders that see one step at a time."""
Z_95 = 1.959963984540054
"""The normal quantile of a two-sided 95 % interval."""
T_95 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
)
"""Student-t quantiles of a two-sided 95 % interval for 1..15 degrees of freedom (more: a Cornish-Fisher
expansion, within 0.001); written out because scipy is no dependency."""


@dataclass
class AttemptsPlan:
    """What ``--attempts`` / ``--context`` evaluate, worked out from the run's record before it is loaded.

    Attributes:
        suite: the evaluated env suite's name.
        attempts: attempts per evaluated trial.
        trained_attempts: attempts per training trial (None: the trained suite declares none).
        context: the memory evaluated with (``run.max_seq_len``).
        trained_context: the memory trained with.
        metrics: name -> per-attempt info key template (empty: the suite logs none; no table then).
        records: the folder the test envs write their finished trials to (one JSON line per trial).
    """

    suite: str
    attempts: int | None
    trained_attempts: int | None
    context: int
    trained_context: int
    metrics: dict[str, str]
    records: Path | None = None
    overrides: list[str] = field(default_factory=list)


_PLANS: dict[Path, AttemptsPlan] = {}
"""The plan of the evaluation running for a run folder, from ``amago_eval_begin`` to ``amago_eval_end``."""


def eval_options() -> list[RunOption]:
    """``--attempts`` and ``--context``."""
    return [
        RunOption(
            "attempts",
            Annotated[
                int | None,
                typer.Option(
                    "--attempts",
                    min=1,
                    help="Evaluate trials of this many attempts (suites with multi-attempt trials) and report "
                    "success or return by attempt, with a verdict on attempts past the trained ones.",
                ),
            ],
            None,
        ),
        RunOption(
            "context",
            Annotated[
                int | None,
                typer.Option(
                    "--context",
                    min=1,
                    help="Evaluate with a memory of this many steps (run.max_seq_len: the Transformer's KV "
                    "cache), e.g. shorter than a trial so that the cache rolls over.",
                ),
            ],
            None,
        ),
    ]


def plan_overrides(request: EvalRequest) -> list[str] | None:
    """``amago_eval_begin``: checks ``--attempts`` / ``--context`` against the run (one line when they cannot
    apply) and returns the ``-o`` items they stand for; None without them."""
    attempts, context = request.options.get("attempts"), request.options.get("context")
    _PLANS.pop(request.run_dir, None)
    if attempts is None and context is None:
        return None
    loaded = _configs(request)
    if loaded is None:
        return None  # `amago eval` loads the record next and reports what is wrong with it
    trained, evaluated = loaded
    plan = AttemptsPlan(
        suite=_suite_name(evaluated.env),
        attempts=None,
        trained_attempts=_attempts_of(trained.env, "train"),
        context=context or trained.run.max_seq_len,
        trained_context=trained.run.max_seq_len,
        metrics=dict(type(evaluated.env).attempt_metrics),
    )
    if context is not None:
        plan.overrides += _context_overrides(trained, evaluated, context)
    options = tuple(type(evaluated.env).attempt_options)
    if attempts is not None:
        if not options:
            fail(
                f"--attempts does not apply to {plan.suite}: its config declares no attempts per trial; suites "
                f"that take it: {', '.join(_suites_with_attempts()) or '(none installed)'}"
            )
        given = [
            item
            for item in request.options.get("override") or []
            for o in options
            if item.startswith(f"env.{o}=")
        ]
        if given:
            fail(f"--attempts {attempts} and -o {given[0]} both set the attempts per trial; pass one of them")
        plan.overrides += [f"env.{option}={attempts}" for option in options]
    if options:
        split = "train" if request.options.get("tasks") == "train" else "test"
        plan.attempts = int(attempts or _attempts_of(evaluated.env, split) or 1)
        plan.overrides += _horizon_overrides(evaluated, options, plan.attempts)
    _PLANS[request.run_dir] = plan
    return plan.overrides


def recording_makers(
    request: EvalRequest,
) -> Callable[[list[Callable[[], Any]]], Sequence[Callable[[], Any]]] | None:
    """``amago_eval_test_makers``: the test makers with every env recording its finished trials' per-attempt
    metrics (a fresh temporary folder); None when nothing is reported by attempt."""
    plan = _PLANS.get(request.run_dir)
    if plan is None or not plan.metrics:
        return None
    plan.records = Path(tempfile.mkdtemp(prefix="amago-attempts-"))
    pattern = "|".join(_key_pattern(template) for template in plan.metrics.values())
    folder = plan.records

    def wrap(makers: list[Callable[[], Any]]) -> list[Callable[[], Any]]:
        # Partials of module functions: async pools pickle the makers into their workers.
        return [
            functools.partial(_recording_env, make, folder / f"env_{i}.jsonl", pattern)
            for i, make in enumerate(makers)
        ]

    return wrap


def attempts_report(request: EvalRequest) -> Mapping[str, Any] | None:
    """``amago_eval_end``: the per-attempt table (``attempts`` in the printed JSON), ``attempts.json`` and
    ``attempts.png`` in the run folder (``attempts-{tasks}`` for other tasks than test, ``-context{L}`` for
    another memory than trained), and the verdict in one line on stderr."""
    plan = _PLANS.pop(request.run_dir, None)
    if plan is None or plan.records is None:
        return None
    try:
        trials = _read_trials(plan.records)
    finally:
        shutil.rmtree(plan.records, ignore_errors=True)
    report = build_report(plan, trials)
    stem = "attempts" if request.section == "test" else f"attempts-{request.section.removeprefix('test-')}"
    if plan.context != plan.trained_context:
        # A researcher compares contexts on the same run: each one keeps its own files.
        stem += f"-context{plan.context}"
    report["files"] = [str(path) for path in _write_files(request.run_dir, stem, report)]
    sys.stderr.write(f"amago: attempts: {report['verdict']}\n")
    return {"attempts": report}


def build_report(plan: AttemptsPlan, trials: list[dict[str, float]]) -> dict[str, Any]:
    """The table by attempt of every metric the suite logs, with the verdict on the first one (success when the
    suite logs it, else return)."""
    attempts = plan.attempts or 0
    by_metric = {name: _by_attempt(trials, template, attempts) for name, template in plan.metrics.items()}
    name = next(iter(plan.metrics))
    rows = [_row(a, values) for a, values in enumerate(by_metric[name], start=1)]
    return {
        "suite": plan.suite,
        "metric": name,
        "attempts": attempts,
        "trained_attempts": plan.trained_attempts,
        "context": plan.context,
        "trained_context": plan.trained_context,
        "trials": len(trials),
        "rows": rows,
        "other_metrics": {
            m: [_row(a, v) for a, v in enumerate(cols, start=1)] for m, cols in by_metric.items() if m != name
        },
        "verdict": verdict(name, by_metric[name], plan.trained_attempts, len(trials)),
    }


def verdict(metric: str, columns: list[list[float | None]], trained: int | None, trials: int) -> str:
    """One line: does an attempt after the last trained one fall below it (collapse, by how much), or rise.

    Args:
        metric: the metric's name (``success``, ``return``).
        columns: per attempt (1-based order), the value of each trial (None: that trial did not log it).
        trained: attempts per training trial (None: unknown).
        trials: trials evaluated.
    """
    if not trials:
        return "no trial finished within the evaluation, so there is nothing to report by attempt; raise --timesteps"
    if trained is None:
        return (
            f"{metric} by attempt over {trials} trials; the run's trained attempts are unknown, so no verdict"
        )
    if len(columns) <= trained:
        return (
            f"all {len(columns)} attempts are within the {trained} trained, so nothing is past the training "
            f"horizon; pass --attempts above {trained}"
        )
    base = columns[trained - 1]
    later = {a: _paired(base, columns[a - 1]) for a in range(trained + 1, len(columns) + 1)}
    means = {a: _mean(_present(columns[a - 1])) for a in range(trained, len(columns) + 1)}
    at_trained = f"the last trained attempt, {trained} ({_fmt(means[trained])} {metric})"
    worst = min(later, key=lambda a: (later[a][0], a))
    gain, low, high = later[worst]
    if gain < 0:
        noise = "" if high < 0 else ", within noise"
        return (
            f"collapse: attempt {worst} scores {_fmt(means[worst])} {metric}, {_fmt(-gain)} below {at_trained}"
            f"{_spread('the drop', -high, -low, trials)}{noise}"
        )
    last = len(columns)
    gain, low, high = later[last]
    best = max(means, key=lambda a: (means[a], -a))  # the first attempt that reaches the top
    if gain > 0 and means[last] >= means[best]:
        shape = "rising to the end"
    elif means[best] == means[trained]:
        shape = "flat"
    else:
        shape = f"best at attempt {best} ({_fmt(means[best])}), not rising to the end"
    return (
        f"no collapse: no attempt after {at_trained} falls below it; attempt {last} scores {_fmt(means[last])} "
        f"{metric}, {_signed(gain)}{_spread('the change', low, high, trials)}; {shape}"
    )


def interval(values: Sequence[float]) -> tuple[float, float] | None:
    """A 95 % interval of the mean of ``values``: Wilson's score interval when every value is 0 or 1 (successes:
    honest at 0 %, 100 % and few trials), else Student's t; None for fewer than two values (t) or none."""
    n = len(values)
    if n == 0:
        return None
    mean = sum(values) / n
    if all(v in (0.0, 1.0) for v in values):
        z2 = Z_95 * Z_95
        centre = (mean + z2 / (2 * n)) / (1 + z2 / n)
        half = Z_95 * math.sqrt(mean * (1 - mean) / n + z2 / (4 * n * n)) / (1 + z2 / n)
        # At 0 % or 100 % the bound is exactly the rate (the formula leaves rounding noise there).
        return (0.0 if mean == 0 else centre - half), (1.0 if mean == 1 else centre + half)
    if n < 2:
        return None
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
    return mean - t_95(n - 1) * spread, mean + t_95(n - 1) * spread


def t_95(df: int) -> float:
    """Student-t quantile of a two-sided 95 % interval with ``df`` degrees of freedom."""
    if df <= len(T_95):
        return T_95[df - 1]
    z = Z_95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def _configs(request: EvalRequest) -> tuple[Any, Any] | None:
    """The run's config as trained (its record) and as this evaluation loads it (``--env``, ``-o``)."""
    from pydantic import ValidationError

    from amago_core.cli.run_cmd import cli_flags
    from amago_core.config.sources import ConfigSourceError, load_config
    from amago_core.plugins.errors import PluginError

    record = request.run_dir / "config.resolved.json"
    flags = cli_flags(env=request.options.get("env"))
    try:
        trained = load_config([record]).resolved()
        evaluated = load_config([record], flags=flags, overrides=list(request.options.get("override") or []))
        return trained, evaluated.resolved()
    except (ConfigSourceError, ValidationError, PluginError):
        return None


def _suite_name(env: Any) -> str:
    return str(getattr(env, "kind", type(env).__name__)).replace("_", "-")


def _attempts_of(env: Any, split: str) -> int | None:
    """Attempts per trial of ``split`` (a suite with ``attempts(split)``, else its first attempt option)."""
    options = type(env).attempt_options
    if not options:
        return None
    by_split = getattr(env, "attempts", None)
    return int(by_split(split)) if callable(by_split) else int(getattr(env, options[0]))


def _suites_with_attempts() -> list[str]:
    """The installed env suites that take ``--attempts`` (their spec modules are torch-free)."""
    from amago_core.plugins.component_config import EnvSuiteConfig
    from amago_core.plugins.errors import PluginError
    from amago_core.plugins.registry import registries

    suites = registries().env_suites
    names = set()
    for name in suites.names():
        try:
            spec = suites.spec(name)
        except PluginError:
            continue  # a broken plugin is `amago doctor`'s to report
        if issubclass(spec.config, EnvSuiteConfig) and spec.config.attempt_options:
            names.add(spec.name.replace("_", "-"))
    return sorted(names)


def _context_overrides(trained: Any, evaluated: Any, context: int) -> list[str]:
    """``-o`` items for ``--context`` (one line when the run's trajectory encoder has no such memory)."""
    encoder, trained_context = trained.traj_encoder, trained.run.max_seq_len
    kind = str(getattr(encoder, "kind", ""))
    if kind in STATE_ENCODERS:
        fail(
            f"--context sets a Transformer's memory window; the run's {kind} encoder carries its state through "
            "the whole trial (run.max_seq_len only sized its training windows): drop --context"
        )
    if kind in MEMORYLESS_ENCODERS:
        fail(
            f"--context sets the policy's memory; the run's {kind} trajectory encoder has none: drop --context"
        )
    window = getattr(encoder, "window_size", None)
    if window is not None:
        fail(
            f"--context sets run.max_seq_len, but the run's {kind} remembers traj_encoder.window_size={window} "
            "steps whatever it is: drop --context"
        )
    if context > trained_context and getattr(encoder, "pos_emb", None) == "learnable":
        fail(
            f"--context {context} is above the {trained_context} steps the run was trained with, and its "
            f"learnable positions never saw steps further apart than that attend to each other; pass --context "
            f"{trained_context} or less (or train with traj_encoder.pos_emb=rope or fixed)"
        )
    overrides = [f"run.max_seq_len={context}"]
    if context > evaluated.replay.traj_save_len:
        overrides.append(
            f"replay.traj_save_len={context}"
        )  # files hold whole windows; an evaluation writes none
    return overrides


def _horizon_overrides(evaluated: Any, options: tuple[str, ...], attempts: int) -> list[str]:
    """The val horizon raised to one whole trial of ``attempts`` when it is shorter (``--episodes N`` then
    plays N whole trials: ``amago eval`` runs that horizon once per round of episodes)."""
    env = evaluated.env
    trial = type(env).model_validate({**env.model_dump(), **dict.fromkeys(options, attempts)}).episode_steps()
    # One more step than the trial: the step after the last one is where a pool sees the trial end.
    if trial is None or trial + 1 <= evaluated.schedule.val_timesteps_per_epoch:
        return []
    return [f"schedule.val_timesteps_per_epoch={trial + 1}"]


def _key_pattern(template: str) -> str:
    """A regex of a per-attempt info key (the attempt number captured)."""
    return re.escape(template).replace(re.escape("{i}"), r"\d+").replace(re.escape("{n}"), r"\d+")


def _recording_env(make_env: Callable[[], Any], path: Path, pattern: str) -> Any:
    from amago_core.rollout.env import AMAGOEnv

    env = make_env()
    if isinstance(env, AMAGOEnv):
        env.env = cast(Any, TrialRecorder(env.env, path, pattern, batched=env.batched_envs > 1))
    return env


class TrialRecorder:
    """A gymnasium env (duck-typed: this module imports no gymnasium) that appends the per-attempt metrics of each
    finished trial to ``path`` as one JSON line; a trial cut off by the end of the evaluation is not written.

    Args:
        env: the env inside an ``AMAGOEnv``.
        path: the JSON-lines file of this env.
        pattern: a regex of the per-attempt info keys (``AMAGO_LOG_METRIC`` prefix removed).
        batched: the env steps several rows (an already-vectorised suite logs whole trials at their end, with
            gymnasium's ``_key`` masks).
    """

    def __init__(self, env: Any, path: Path, pattern: str, *, batched: bool = False) -> None:
        self.env, self.path, self.batched = env, path, batched
        self.keys = re.compile(pattern)
        self.pending: dict[str, float] = {}

    def __getattr__(self, name: str) -> Any:
        env = self.__dict__.get("env")  # absent while a copy is built: no recursion through this method
        if env is None:
            raise AttributeError(name)
        return getattr(env, name)

    def reset(self, **kwargs: Any) -> tuple[Any, Any]:
        self.pending = {}
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, Any]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        found = self._found(info)
        if self.batched:
            # Rows that ended this step, in the order of the mask: the n-th value of every key is the n-th trial.
            count = min((len(values) for values in found.values()), default=0)
            self._write([{key: values[i] for key, values in found.items()} for i in range(count)])
        else:
            # Single envs may log an attempt as it ends (Meta-Frozen-Lake): gather until the trial is over.
            self.pending.update({key: values[-1] for key, values in found.items()})
            if terminated or truncated:
                self._write([self.pending] if self.pending else [])
                self.pending = {}
        return obs, reward, terminated, truncated, info

    def _found(self, info: Any) -> dict[str, list[float]]:
        from amago_core.rollout.sequence import log_metrics_from_info

        if not isinstance(info, dict) or not info:
            return {}
        return {k: v for k, v in log_metrics_from_info(info).items() if self.keys.fullmatch(k)}

    def _write(self, trials: list[dict[str, float]]) -> None:
        if trials:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.writelines(json.dumps(trial) + "\n" for trial in trials)


def _read_trials(folder: Path) -> list[dict[str, float]]:
    trials = []
    for path in sorted(folder.glob("env_*.jsonl")):
        trials += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return trials


def _by_attempt(trials: list[dict[str, float]], template: str, attempts: int) -> list[list[float | None]]:
    """Per attempt (1-based order, at least ``attempts`` of them), each trial's value (None: not logged)."""
    base = 0 if "{i}" in template else 1
    prefix, _, suffix = template.replace("{n}", "{i}").partition("{i}")
    numbers = re.compile(re.escape(prefix) + r"(\d+)" + re.escape(suffix))
    logged = [int(m.group(1)) - base + 1 for t in trials for k in t if (m := numbers.fullmatch(k))]
    count = max([attempts, *logged])
    return [[t.get(f"{prefix}{a - 1 + base}{suffix}") for t in trials] for a in range(1, count + 1)]


def _present(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _row(attempt: int, values: Sequence[float | None]) -> dict[str, Any]:
    present = _present(values)
    bounds = interval(present)
    return {
        "attempt": attempt,
        "trials": len(present),
        "mean": _mean(present) if present else None,
        "low": bounds[0] if bounds else None,
        "high": bounds[1] if bounds else None,
    }


def _paired(base: Sequence[float | None], other: Sequence[float | None]) -> tuple[float, float, float]:
    """Mean of ``other - base`` over the trials that logged both, with a 95 % t interval (trial by trial, so the
    tasks' spread cancels out)."""
    diffs = [o - b for b, o in zip(base, other, strict=True) if b is not None and o is not None]
    mean = _mean(diffs)
    if len(diffs) < 2:
        return mean, math.nan, math.nan
    spread = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) / len(diffs))
    return mean, mean - t_95(len(diffs) - 1) * spread, mean + t_95(len(diffs) - 1) * spread


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def _signed(value: float) -> str:
    return f"{value:+.3g}"


def _spread(what: str, low: float, high: float, trials: int) -> str:
    """``; 95 % interval of {what} LOW to HIGH over N trials`` (N alone when one trial gives no interval)."""
    if math.isnan(low):
        return f" over {trials} trial(s), too few for an interval"
    return f"; 95 % interval of {what} {_signed(low)} to {_signed(high)} over {trials} trials"


def _write_files(run_dir: Path, stem: str, report: dict[str, Any]) -> list[Path]:
    """``{stem}.json`` and ``{stem}.png`` in the run folder (through the path gate); the PNG only with matplotlib
    (one line otherwise)."""
    from amago_core.io import atomic_write, atomic_write_json
    from amago_core.optional import MissingOptionalDependencyError, require

    written = [run_dir / f"{stem}.json"]
    atomic_write_json(written[0], {k: v for k, v in report.items() if k != "files"}, root=run_dir)
    try:
        matplotlib = require("matplotlib", "plot", "drawing amago eval --attempts", "amago-tools")
    except MissingOptionalDependencyError as exc:
        sys.stderr.write(f"amago: warning: {exc}; {written[0].name} has the numbers\n")
        return written
    matplotlib.use("Agg")
    figure = _figure(report)
    written.append(run_dir / f"{stem}.png")
    atomic_write(written[1], lambda tmp: figure.savefig(tmp, dpi=110, format="png"), root=run_dir)
    import matplotlib.pyplot as plt

    plt.close(figure)
    return written


def _figure(report: dict[str, Any]) -> Any:
    """Mean by attempt with its 95 % interval, a line after the last trained attempt."""
    import matplotlib.pyplot as plt

    rows = [r for r in report["rows"] if r["mean"] is not None]
    figure, ax = plt.subplots(figsize=(6.5, 4))
    xs = [r["attempt"] for r in rows]
    ax.plot(xs, [r["mean"] for r in rows], marker="o")
    with_bounds = [r for r in rows if r["low"] is not None]
    ax.fill_between(
        [r["attempt"] for r in with_bounds],
        [r["low"] for r in with_bounds],
        [r["high"] for r in with_bounds],
        alpha=0.25,
        label="95 % interval",
    )
    if report["trained_attempts"]:
        ax.axvline(report["trained_attempts"] + 0.5, color="grey", linestyle="--", label="trained attempts")
    ax.set_xticks(xs)
    ax.set_xlabel("attempt")
    ax.set_ylabel(f"mean {report['metric']}")
    ax.set_title(
        f"{report['suite']}: {report['trials']} trials, context {report['context']} "
        f"(trained {report['trained_context']})"
    )
    ax.legend(loc="best")
    figure.tight_layout()
    return figure
