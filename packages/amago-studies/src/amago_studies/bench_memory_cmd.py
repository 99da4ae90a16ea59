"""`amago bench memory`: memories over a task set, N seeds each at one env-step budget, on one table.

The driver lives in :mod:`amago_studies.bench_memory`, the report in :mod:`amago_studies.bench_memory_report`;
both load when the command runs. torch is never imported here (nor there: each run is a child process).
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from amago_core.cli.errors import DebugFlag, debugging, one_line_errors
from amago_core.cli.output import fail
from amago_core.cli.run_cmd import ConfigFiles, Overrides

if TYPE_CHECKING:
    from amago_studies.bench_memory import Group, Settings

app = typer.Typer(
    name="bench",
    help="Benchmarks made of many amago runs: `amago bench memory` compares memories on a set of tasks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DEFAULT_REPS = 2_000
"""As ``amago_studies.compare.DEFAULT_REPS`` (repeated: that module imports numpy)."""
DEFAULT_LAST = 3
"""Val evaluations a run's score averages, as a sweep's default ``last``."""
LABEL_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
"""A memory's label (``gru@wide``): it names a folder of the bench."""
DEFAULT_FLOOR_EPISODES = 100
FLOOR_EPISODES_MAX = 100_000


@app.command("memory")
def memory_command(
    out: Annotated[
        Path,
        typer.Argument(
            metavar="OUT",
            help="The bench folder: a new or empty one, or one this command made (the same command resumes it).",
        ),
    ],
    memories: Annotated[
        str,
        typer.Option(
            "--memories",
            help="Trajectory encoders, comma-separated (gru,transformer,ffm; see `amago list traj-encoders`); "
            "NAME@LABEL lists one encoder again under its own label (gru@small,gru@wide), for --memory-option.",
        ),
    ],
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks",
            help="Env ids, comma-separated (popgym-repeat-previous-easy,popgym-autoencode-easy; see `amago list "
            "envs`). -o items apply to every task, so env.* items suit tasks of one suite.",
        ),
    ],
    steps: Annotated[
        str,
        typer.Option(
            "--steps", help="Train env steps of every run (all actors), e.g. 100k: each is sized to them."
        ),
    ],
    seeds: Annotated[
        str, typer.Option("--seeds", help="Seeds per pair: a count (3: seeds 0..2) or a list (1,4,9).")
    ] = "3",
    config: ConfigFiles = None,
    override: Overrides = None,
    memory_option: Annotated[
        list[str] | None,
        typer.Option(
            "--memory-option",
            help="MEMORY:KEY=VALUE: an option of one memory's runs only, e.g. gru:d_hidden=128 (a KEY without a "
            "section is the memory's own, traj_encoder.KEY) or gru:optim.learning_rate=3e-4; repeatable, after the -o items.",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="The memory the others' probability of improvement is against (default: the first).",
        ),
    ] = None,
    parallel: Annotated[int, typer.Option("--parallel", help="Runs at a time (one torch thread each).")] = 1,
    best: Annotated[
        list[str] | None,
        typer.Option(
            "--best",
            help="TASK=RETURN: the task's best known return, what normalises it to 1 (default: the best return "
            "its env suite declares, e.g. 1 for POPGym, else the best score any run of the bench reached); repeatable.",
        ),
    ] = None,
    last: Annotated[
        int,
        typer.Option(
            "--last", help="Val evaluations a run's score averages (its last ones after its first update)."
        ),
    ] = DEFAULT_LAST,
    reps: Annotated[
        int, typer.Option("--reps", help="Bootstrap replications of the intervals, 100 to 100,000.")
    ] = DEFAULT_REPS,
    floor_episodes: Annotated[
        int,
        typer.Option("--floor-episodes", help="Episodes of the random policy that measure a task's floor."),
    ] = DEFAULT_FLOOR_EPISODES,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the plan (groups, child commands, runs) and create nothing."),
    ] = False,
    report_only: Annotated[
        bool,
        typer.Option(
            "--report-only",
            help="Train nothing: write the report from the runs that have finished (a bench that spans several "
            "sessions, read between them; the runs not finished are listed as missing).",
        ),
    ] = False,
    debug: DebugFlag = False,
) -> None:
    """Train memories (trajectory encoders) on a set of tasks, N seeds each at one env-step budget, and compare them on one table.

    Each (task, memory) pair is a seed group OUT/TASK/MEMORY/seed_K as `amago run --seeds` makes it: its config is resolved and sized once (`--env TASK --traj-encoder MEMORY --steps STEPS` over the -c files and -o items), and each seed is a child `amago run`, --parallel at a time; a run that fails is one line and the others go on. The same command again resumes: finished runs are kept, stopped ones continue from their checkpoint, failed ones are tried again; more memories or tasks grow the bench (only the new pairs train), while a folder started with memories or tasks left out here, or other seeds, --steps, -c, -o or --memory-option for a memory it has, is refused in one line. The report (OUT/bench.md, also printed; OUT/bench.png; the results in OUT/bench.json) has one row per memory: its normalised score per task, (score - floor) / (best - floor), with floor a random policy's mean return measured here (OUT/floors.json) and best the --best value, else the best return the task's env suite declares, else the best score of the bench; rliable's IQM across tasks and seeds and the probability of improvement over --baseline, each with its 95 % stratified-bootstrap interval; updates/s, env steps/s, policy steps/s and peak RSS. No file is written through a symlink. Exit 1 when a run failed or is missing (the report names it). Needs rliable: pip install 'amago-studies\\[compare]'.
    """
    from amago_studies import bench_memory as bench

    with one_line_errors(debugging(debug), usage=True):
        settings = _settings(memories, tasks, seeds, steps, config or [], override or [], memory_option or [])
        chosen = _checked_report_options(settings, baseline, best or [], last, reps, floor_episodes, parallel)
        record = bench.check_out(out, settings)
        groups = bench.plan_groups(out, settings)
        if all(group.problem is not None for group in groups):
            fail(f"{groups[0].label} cannot start: {groups[0].problem}")
        # A planted link is one line before anything is written (and before a dry run reads the folder).
        bench.check_members(out, groups, settings.seeds)
        if dry_run:
            _print_plan(out, settings, groups, parallel)
            return
    text: list[str] = []

    def warn(line: str) -> None:
        sys.stderr.write(f"amago: warning: bench: {' '.join(line.split())}\n")

    def report(record: dict[str, Any]) -> None:
        from amago_studies.bench_memory_report import floors, machine, results, write_report

        found = floors(out, groups, floor_episodes, warn)
        options = {"machine": machine(), "seed": 0, "last": last, "reps": reps, **chosen}
        record["results"] = results(settings, groups, record, found, **options)
        text.append(write_report(out, record["results"], settings))

    with one_line_errors(debugging(debug)):
        session = bench.run_bench(
            out,
            settings,
            groups,
            record,
            parallel=parallel,
            command=["amago", *sys.argv[1:]],
            report=report,
            train=not report_only,
        )
    if session.interrupted:
        fail(f"stopped; the same command resumes the bench in {out}", code=130)
    sys.stdout.write(
        "".join(text) + f"\n{out / 'bench.md'}\n{out / 'bench.png'}\n{out / bench.BENCH_RECORD}\n"
    )
    missing = session.record.get("results", {}).get("missing", [])
    if missing:
        sys.stderr.write(
            f"amago: bench: {len(missing)} run(s) have no score (listed in {out / 'bench.md'}); the same command "
            f"{'without --report-only trains them' if report_only else 'tries the failed ones again'}\n"
        )
        raise typer.Exit(1)


def _settings(
    memories: str,
    tasks: str,
    seeds: str,
    steps: str,
    configs: list[Path],
    overrides: list[str],
    memory_options: list[str],
) -> Settings:
    """The settings that decide the runs, each checked (one line on a bad one, before anything is created)."""
    from amago_studies.bench_memory import Settings
    from amago_studies.seeds import parse_seeds
    from amago_tools.sizing.run_options import parse_steps

    by_key = _checked_memories(_split_list(memories, "--memories"))
    names = list(by_key.values())
    env_ids = _checked_tasks(_split_list(tasks, "--tasks"))
    seed_list = parse_seeds(seeds)
    return Settings(
        memories=tuple(names),
        tasks=tuple(env_ids),
        seeds=tuple(seed_list),
        steps=parse_steps(steps),
        configs=tuple(Path(path).absolute() for path in configs),
        digests=tuple(_file_digest(path) for path in configs),
        overrides=tuple(overrides),
        memory_options=tuple(_checked_memory_option(item, by_key) for item in memory_options),
    )


def _checked_memory_option(item: str, memories: Mapping[tuple[str, str], str]) -> tuple[str, str]:
    """``MEMORY:KEY=VALUE`` as (the memory as --memories lists it, ``section.key=value``); a KEY without a section
    is the memory's own option (``traj_encoder.KEY``). MEMORY names one entry of --memories, label included
    (``gru@wide:d_hidden=512``); ``memories`` maps each entry's :func:`_memory_key` to it.

    Raises:
        BenchError: no ``MEMORY:``, no ``KEY=``, or a memory not in --memories.
    """
    from amago_studies.bench_memory import BenchError

    name, colon, setting = item.partition(":")
    key, equals, _ = setting.partition("=")
    if not colon or not equals or not name.strip() or not key.strip():
        raise BenchError(f"--memory-option {item!r}: write MEMORY:KEY=VALUE, e.g. gru:d_hidden=128")
    try:
        memory = memories.get(_memory_key(name.strip(), "--memory-option"))
    except BenchError:
        memory = None
    if memory is None:
        raise BenchError(
            f"--memory-option {item}: {name.strip()!r} is not one of --memories ({', '.join(memories.values())}); "
            "name one"
        )
    return memory, setting.strip() if "." in key else f"traj_encoder.{setting.strip()}"


def _checked_report_options(
    settings: Settings,
    baseline: str | None,
    best: list[str],
    last: int,
    reps: int,
    floor_episodes: int,
    parallel: int,
) -> dict[str, Any]:
    """``baseline`` and ``best`` as the report takes them, once every report option is checked (one line each)."""
    from amago_core.optional import require
    from amago_core.plugins.registry import normalize_name
    from amago_studies import STUDIES
    from amago_studies.compare import check_reps
    from amago_tools.plotting import PLOT_EXTRA_OF, PLOTTING

    require("rliable.library", "compare", "amago bench memory", STUDIES)  # before any run: said at once
    require("matplotlib", "plot", PLOTTING, PLOT_EXTRA_OF)

    chosen = normalize_name(baseline) if baseline is not None else settings.memories[0]
    if chosen not in settings.memories:
        fail(
            f"--baseline {baseline} is not one of --memories ({', '.join(settings.memories)}): name one of them"
        )
    given: dict[str, float] = {}
    for item in best:
        task, sep, text = item.rpartition("=")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not sep or task not in settings.tasks or not math.isfinite(value):
            fail(f"--best {item}: write TASK=RETURN with TASK one of --tasks ({', '.join(settings.tasks)})")
        given[task] = value
    for flag, value, low, high in (
        ("--last", last, 1, 1000),
        ("--parallel", parallel, 1, 256),
        ("--floor-episodes", floor_episodes, 1, FLOOR_EPISODES_MAX),
    ):
        if not low <= value <= high:
            fail(f"{flag} {value}: give a whole number from {low:,} to {high:,}")
    check_reps(reps)
    return {"baseline": chosen, "best": given}


def _print_plan(out: Path, settings: Settings, groups: list[Group], parallel: int) -> None:
    """``--dry-run``: every group with its sized schedule and every child command, as they would run now."""
    from amago_studies.bench_memory import children, recorded_codes

    codes = {g.label: recorded_codes(g.seeds, settings.seeds) for g in groups if g.problem is None}
    todo = children(groups, settings.seeds, codes)
    planned = len(settings.seeds) * len(groups)
    resumed = sum(child.resume for child in todo)
    cannot = len(settings.seeds) * sum(group.problem is not None for group in groups)
    lines = [
        f"amago bench memory (dry run): {len(settings.memories)} memories x {len(settings.tasks)} tasks x "
        f"{len(settings.seeds)} seeds = {planned} runs of {settings.steps:,} env steps into {out}: "
        f"{len(todo) - resumed} to start, {resumed} to resume, {planned - len(todo) - cannot} finished, "
        f"{cannot} cannot start; {parallel} at a time",
    ]
    for group in groups:
        if group.problem is not None:
            lines.append(f"{group.task} / {group.memory}: cannot start: {group.problem}")
            continue
        lines.append(f"{group.task} / {group.memory} ({group.seeds.root}): {group.schedule}")
        lines += [
            f"  seed {child.seed} ({'resume' if child.resume else 'start'}): {shlex.join(child.command)}"
            for child in todo
            if child.group is group
        ]
    sys.stdout.write("\n".join(lines) + "\n")


def _split_list(text: str, flag: str) -> list[str]:
    """The items of a comma-separated option, each once, in order.

    Raises:
        BenchError: an empty item, or an item given twice.
    """
    from amago_studies.bench_memory import BenchError

    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise BenchError(f"{flag} {text!r} has an empty item: list names separated by commas (gru,ffm)")
    if len(set(items)) != len(items):
        raise BenchError(f"{flag} {text}: an item is listed twice; list each once")
    return items


def _checked_memories(names: Sequence[str]) -> dict[tuple[str, str], str]:
    """The memories as folder names (``amago.traj_encoders`` names, normalised: ``linear-attention`` ->
    ``linear_attention``; ``NAME@LABEL`` keeps its label) by their :func:`_memory_key`, in order, each checked to
    be registered and installed.

    Raises:
        BenchError: an unknown name (the line lists the registered ones), a missing requirement, a bad label, or
            two names of one memory under one label (``gru`` and ``rnn``).
    """
    from amago_core.plugins.registry import normalize_name
    from amago_studies.bench_memory import BenchError

    seen: dict[tuple[str, str], str] = {}
    for name in names:
        key = _memory_key(name, "--memories")
        if key in seen:
            raise BenchError(
                f"--memories lists {seen[key]!r} and {name!r}, one memory ({key[0]}): list it once, or give each "
                "its own label (gru@small,gru@wide)"
            )
        seen[key] = name
    return {key: normalize_name(name) for key, name in seen.items()}


def _memory_key(name: str, flag: str) -> tuple[str, str]:
    """``NAME[@LABEL]`` as (the registered trajectory encoder, the label or ""): two entries of one key are one
    memory.

    Raises:
        BenchError: an unknown or uninstalled encoder, or a label outside ``A-Za-z0-9._-``.
    """
    from amago_core.plugins import registries
    from amago_core.plugins.errors import PluginError
    from amago_core.plugins.registry import normalize_name
    from amago_studies.bench_memory import BenchError

    kind, at, label = name.partition("@")
    if at and not LABEL_PATTERN.fullmatch(label):
        raise BenchError(
            f"{flag}: {name!r} has a bad label: write NAME@LABEL with a label of letters, digits, '.', '_' or '-' "
            "(gru@wide)"
        )
    try:
        canonical = registries().traj_encoders.check_buildable(kind.strip()).name
    except PluginError as exc:
        raise BenchError(f"{flag}: {exc}") from None
    return canonical, normalize_name(label)


def _checked_tasks(tasks: Sequence[str]) -> list[str]:
    """The tasks, each checked to be an env id of an installed env suite (suite and task).

    Raises:
        BenchError: an unknown env id (with its suite's hint), a suite whose library is missing, or two tasks that
            would share a folder.
    """
    from pydantic import ValidationError

    from amago_core.config.errors import describe_validation_error
    from amago_core.plugins import registries
    from amago_core.plugins.errors import PluginError
    from amago_studies.bench_memory import BenchError, task_folder

    suites = registries().env_suites
    folders: dict[str, str] = {}
    for task in tasks:
        try:
            suite, name = registries().resolve_env_id(task)
            suites.check_buildable(suite)
            suites.make_config({"kind": suite, "task": name})
        except ValidationError as exc:
            raise BenchError(f"--tasks {task}: {'; '.join(describe_validation_error(exc))}") from None
        except PluginError as exc:
            raise BenchError(f"--tasks: {exc}") from None
        folder = task_folder(task)
        if folder in folders:
            raise BenchError(
                f"--tasks {folders[folder]} and {task} would share the folder {folder}: list one"
            )
        folders[folder] = task
    return list(tasks)


def _file_digest(path: Path) -> str:
    """The sha256 of a ``-c`` file (what the record keeps: a file edited between two commands is a change).

    Raises:
        BenchError: the file cannot be read.
    """
    from amago_studies.bench_memory import BenchError

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise BenchError(
            f"-c {path} cannot be read ({exc.strerror or exc}): pass a config file that exists"
        ) from None
