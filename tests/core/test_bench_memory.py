"""`amago bench memory`: a real bench of two memories on two T-Mazes, its resume, a failing memory, bad input, a
planted link and the dry run."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app

pytest.importorskip("rliable.library")  # the dev group installs it (amago-studies[compare])

runner = CliRunner()
TASKS = ["tmaze-passive", "tmaze-active"]
# Runs of a few seconds each: a 3-step corridor, 2 actors, small timestep encoders and batches, no plots.
TINY = [
    *("-o", "env.corridor_length=3", "-o", "rollout.parallel_actors=2", "-o", "logging.plot=false"),
    *("-o", "tstep_encoder.d_hidden=16", "-o", "tstep_encoder.d_output=16", "-o", "optim.batch_size=4"),
    *("--steps", "200", "--reps", "200", "--floor-episodes", "40"),
]
# One layer of each memory: a field both gru and ff have (-o items go to every memory).
BENCH = [
    "--memories",
    "gru,ff",
    "--tasks",
    ",".join(TASKS),
    "--seeds",
    "2",
    *TINY,
    "-o",
    "traj_encoder.n_layers=1",
]
BEST = ["--best", "tmaze-passive=1", "--best", "tmaze-active=1"]  # T-Maze's goal reward


def bench(out: Path, *args: str):
    return runner.invoke(app, ["bench", "memory", str(out), *args])


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and link under ``folder`` (links not followed): size and modification time."""
    found = {}
    for path in sorted(folder.rglob("*")):
        stat = path.lstat()
        found[str(path.relative_to(folder))] = (stat.st_size, stat.st_mtime_ns)
    return found


@pytest.fixture(scope="module")
def finished_bench(tmp_path_factory) -> tuple[Path, object]:
    """A bench of gru and ff on both T-Mazes, 2 seeds each (8 runs of 200 env steps, about a minute)."""
    out = tmp_path_factory.mktemp("bench") / "out"
    return out, bench(out, *BENCH, *BEST)


@pytest.mark.slow
def test_a_bench_trains_every_run_and_reports_one_table(finished_bench):
    out, result = finished_bench
    assert result.exit_code == 0, result.output
    table = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| memory | tmaze-passive | tmaze-active | IQM [95 % CI] | P(> gru)")
    assert [row.split(" | ")[0] for row in table[1:3]] == ["| gru", "| ff"]
    assert "baseline" in table[1]
    assert table[1].endswith("| 4/4 |")
    assert table[2].endswith("| 4/4 |")
    assert (out / "bench.md").read_text().startswith("# Memory bench: gru, ff on tmaze-passive, tmaze-active")
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    results = json.loads((out / "bench.json").read_text())["results"]
    runs = {(r["task"], r["memory"], r["seed"]): r for r in results["runs"]}
    assert set(runs) == {(t, m, s) for t in TASKS for m in ("gru", "ff") for s in (0, 1)}
    for run in runs.values():
        assert run["exit_code"] == 0
        assert run["missing"] is None
        assert isinstance(run["score"], float)
        assert run["peak_rss_bytes"] > 50 * 2**20
        assert run["updates_per_second"] > 0
        assert run["policy_steps_per_second"] > 0
        floor = results["tasks"][run["task"]]["floor"]["mean_return"]
        assert run["normalised"] == pytest.approx((run["score"] - floor) / (1.0 - floor))
    for memory in ("gru", "ff"):
        iqm = results["memories"][memory]["aggregates"]["IQM"]
        assert iqm["low"] <= iqm["estimate"] <= iqm["high"]
        assert results["memories"][memory]["rows"] == 2
    better = results["memories"]["ff"]["probability_of_improvement"]
    assert 0 <= better["low"] <= better["probability"] <= better["high"] <= 1
    assert results["memories"]["gru"]["probability_of_improvement"] is None  # the baseline
    floors = json.loads((out / "floors.json").read_text())
    assert len(floors) == 2  # one per task, cached for the next report
    group = json.loads((out / "tmaze-active" / "ff" / "seeds.json").read_text())
    assert group["exit_codes"] == {"0": 0, "1": 0}  # a seed group `amago run --resume` and compare read


@pytest.mark.slow
def test_the_same_command_retrains_nothing_and_other_settings_are_refused(finished_bench):
    out, first = finished_bench
    assert first.exit_code == 0, first.output
    metrics = {path: path.stat().st_mtime_ns for path in out.rglob("metrics.jsonl")}
    assert len(metrics) == 8

    again = bench(out, *BENCH, *BEST, "--baseline", "ff")  # a report option may change
    assert again.exit_code == 0, again.output
    assert "0 run(s) to start, 0 to resume, 8 finished already" in again.stderr
    assert {path: path.stat().st_mtime_ns for path in out.rglob("metrics.jsonl")} == metrics
    assert "| P(> ff) [95 % CI] |" in again.stdout

    before = snapshot(out)
    other = bench(out, *BENCH, "--steps", "300")  # the last --steps counts
    assert other.exit_code == 2
    assert other.stderr.count("\n") == 1, other.stderr
    assert "is a bench of --steps 200, not --steps 300" in other.stderr
    assert snapshot(out) == before


def test_report_only_trains_nothing_and_lists_what_has_not_finished(finished_bench, tmp_path):
    """Between the sessions of a long bench: a run not finished yet is listed as missing, nothing trains, and the
    record keeps its settings and training sessions; a folder with no bench is one line and stays absent."""
    import shutil

    from amago_studies.seeds import SeedGroup

    out = tmp_path / "copy"
    shutil.copytree(finished_bench[0], out, symlinks=True)
    group = SeedGroup(out / "tmaze-active" / "ff")
    record = group.read_record()
    del record["exit_codes"]["1"]  # as if the bench was stopped before ff's seed 1 on tmaze-active finished
    group.write_record(record)
    metrics = {path: path.stat().st_mtime_ns for path in out.rglob("metrics.jsonl")}
    sessions = json.loads((out / "bench.json").read_text())["sessions"]

    found = bench(out, *BENCH, *BEST, "--report-only")
    assert found.exit_code == 1, found.output  # a run is missing
    assert "1 run(s) have no score" in found.stderr
    assert "the same command without --report-only trains them" in found.stderr
    assert "- ff on tmaze-active seed 1: not run yet" in (out / "bench.md").read_text()
    assert "run(s) to start" not in found.stderr
    assert {path: path.stat().st_mtime_ns for path in out.rglob("metrics.jsonl")} == metrics
    assert json.loads((out / "bench.json").read_text())["sessions"] == sessions
    assert "| gru |" in (out / "bench.md").read_text()

    new = tmp_path / "new"
    refused = bench(new, *BENCH, "--report-only")
    assert refused.exit_code != 0
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "holds no bench to report on: start it without --report-only" in refused.stderr
    assert not new.exists()


@pytest.mark.slow
def test_a_bench_grows_by_a_memory_training_only_its_runs(finished_bench, tmp_path):
    """The command with one more memory trains that memory's runs alone and reports every row; the runs already
    finished are not touched, and the grown folder then refuses the old, smaller command in one line."""
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(finished_bench[0], out, symlinks=True)  # finished runs are read, never started, from here
    metrics = {path: path.stat().st_mtime_ns for path in out.rglob("metrics.jsonl")}
    grown = [arg if arg != "gru,ff" else "gru,ff,ff@again" for arg in BENCH]

    result = bench(out, *grown, *BEST)
    assert result.exit_code == 0, result.output
    assert "4 run(s) to start, 0 to resume, 8 finished already" in result.stderr
    assert {path: path.stat().st_mtime_ns for path in metrics} == metrics
    assert len(list((out / "tmaze-active" / "ff@again").rglob("metrics.jsonl"))) == 2
    rows = [line.split(" | ")[0] for line in result.stdout.splitlines() if line.startswith("| ")][1:4]
    assert rows == ["| gru", "| ff", "| ff@again"]
    assert json.loads((out / "bench.json").read_text())["settings"]["memories"] == ["gru", "ff", "ff@again"]

    before = snapshot(out)
    smaller = bench(out, *BENCH, *BEST)
    assert smaller.exit_code == 2
    assert smaller.stderr.count("\n") == 1, smaller.stderr
    assert "is a bench of --memories gru,ff,ff@again, not --memories gru,ff" in smaller.stderr
    assert "more memories or tasks may be added" in smaller.stderr
    assert snapshot(out) == before


def test_what_a_bench_may_gain_and_what_it_must_keep():
    """More memories or tasks grow a bench; fewer, other seeds, or another option for a memory it has do not. A
    new memory's --memory-option is its own."""
    from amago_studies.bench_memory_cmd import _settings

    started = _settings("gru,ff", "tmaze-passive", "2", "200", [], [], ["gru:d_hidden=24"]).record()

    def differs(
        memories: str, tasks: str = "tmaze-passive", seeds: str = "2", options: tuple = ()
    ) -> str | None:
        return _settings(memories, tasks, seeds, "200", [], [], ["gru:d_hidden=24", *options]).difference(
            started
        )

    assert differs("gru,ff") is None
    assert differs("ff,gru,transformer", "tmaze-passive,tmaze-active") is None
    assert differs("gru,ff,ff@wide", options=("ff@wide:d_hidden=64",)) is None
    assert differs("gru") == "--memories gru,ff, not --memories gru"
    assert differs("gru,ff", "tmaze-active") == "--tasks tmaze-passive, not --tasks tmaze-active"
    assert differs("gru,ff", seeds="3") == "--seeds 0,1, not --seeds 0,1,2"
    assert differs("gru,ff", options=("gru:d_hidden=32",)) == (
        "--memory-option gru:traj_encoder.d_hidden=24, not "
        "--memory-option gru:traj_encoder.d_hidden=24 --memory-option gru:traj_encoder.d_hidden=32"
    )
    assert differs("gru,ff", options=("ff:optim.learning_rate=0.01",)).startswith("--memory-option gru:")


EXPLODES = '''
from typing import Literal
from amago_core.config import ComponentConfig
from amago_core.plugins import ComponentSpec

class ExplodesConfig(ComponentConfig):
    kind: Literal["explodes"] = "explodes"
    """Registered name."""

SPEC = ComponentSpec(name="explodes", group="amago.traj_encoders", summary="raises at build",
                     config=ExplodesConfig, factory="explodes_pkg.encoder:Encoder")
'''


@pytest.mark.slow
def test_a_failing_memory_is_one_line_and_the_others_finish(fake_distribution, tmp_path):
    fake_distribution(
        "amago-plugin-explodes",
        entry_points={"amago.traj_encoders": {"explodes": "explodes_pkg.specs:SPEC"}},
        modules={
            "explodes_pkg/__init__.py": "",
            "explodes_pkg/specs.py": EXPLODES,
            "explodes_pkg/encoder.py": (
                "class Encoder:\n"
                "    def __init__(self, config, **context):\n"
                "        raise ValueError('this encoder needs a GPU with 80 GB')\n"
            ),
        },
    )
    out = tmp_path / "out"
    result = bench(out, "--memories", "explodes,gru", "--tasks", "tmaze-passive", "--seeds", "1", *TINY)
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if "explodes on" in line]
    assert len(lines) == 1, result.stderr
    log = out / "tmaze-passive" / "explodes" / "logs" / "seed_0.log"
    assert lines[0].startswith("amago: bench: explodes on tmaze-passive seed 0 failed (exit 1): ")
    assert "this encoder needs a GPU with 80 GB" in lines[0]
    assert lines[0].endswith(f"; its log: {log}")
    assert "gru on tmaze-passive seed 0 finished" in result.stderr
    report = (out / "bench.md").read_text()
    assert "## Missing" in report
    assert "- explodes on tmaze-passive seed 0: failed (exit 1)" in report
    assert "| gru | 1 " in report
    assert report.count("| 1/1 |") == 1
    assert "| 0/1 |" in report


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["--memories", "gru,nope", "--tasks", "tmaze-passive"],
            "unknown trajectory encoder 'nope'. Installed: ",
        ),
        (["--memories", "gru", "--tasks", "tmaze-nope"], "env suite 'tmaze' has no task 'nope'"),
        (
            ["--memories", "gru,ff", "--tasks", "tmaze-passive", "--baseline", "ffm"],
            "--baseline ffm is not one of",
        ),
        (["--memories", "gru", "--tasks", "tmaze-passive", "--seeds", "0"], "--seeds 0: the count must be 1"),
        (
            ["--memories", "gru,ff", "--tasks", "tmaze-passive", "--memory-option", "ffm:d_hidden=8"],
            "--memory-option ffm:d_hidden=8: 'ffm' is not one of --memories (gru, ff)",
        ),
        (
            ["--memories", "gru", "--tasks", "tmaze-passive", "--memory-option", "d_hidden=8"],
            "--memory-option 'd_hidden=8': write MEMORY:KEY=VALUE",
        ),
        (
            ["--memories", "gru,rnn", "--tasks", "tmaze-passive"],
            "--memories lists 'gru' and 'rnn', one memory (rnn): list it once, or give each its own label",
        ),
        (["--memories", "gru,gru@a/b", "--tasks", "tmaze-passive"], "--memories: 'gru@a/b' has a bad label"),
        (
            [
                "--memories",
                "gru,gru@wide",
                "--tasks",
                "tmaze-passive",
                "--memory-option",
                "gru@narrow:d_hidden=8",
            ],
            "--memory-option gru@narrow:d_hidden=8: 'gru@narrow' is not one of --memories (gru, gru@wide)",
        ),
    ],
)
def test_bad_input_is_one_line_and_creates_nothing(tmp_path, args, words):
    result = bench(tmp_path / "out", *args, "--steps", "200")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert words in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("planted", ["tmaze-passive", "tmaze-passive/gru/seed_0", "tmaze-passive/gru/logs"])
def test_a_planted_link_in_the_bench_folder_is_refused(tmp_path, planted):
    out, outside = tmp_path / "out", tmp_path / "outside"
    (outside / "theirs").mkdir(parents=True)
    (outside / "theirs" / "notes.txt").write_text("theirs\n")
    args = ["--memories", "gru", "--tasks", "tmaze-passive", "--seeds", "1", *TINY]
    settings = {"memories": ["gru"], "tasks": ["tmaze-passive"], "seeds": [0], "steps": 200, "configs": []}
    settings["overrides"] = [item for flag, item in itertools.pairwise(TINY) if flag == "-o"]
    out.mkdir()
    record = {"kind": "amago bench memory", "format": 1, "settings": settings, "runs": {}}
    (out / "bench.json").write_text(json.dumps(record))
    link = out / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside / "theirs")
    before, mine = snapshot(outside), snapshot(out)

    result = bench(out, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"{link} is a symlink (to {outside / 'theirs'})" in result.stderr
    assert snapshot(outside) == before
    assert snapshot(out) == mine


def test_dry_run_prints_the_plan_and_creates_nothing(tmp_path):
    out = tmp_path / "out"
    result = bench(out, *BENCH, "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        f"amago bench memory (dry run): 2 memories x 2 tasks x 2 seeds = 8 runs of 200 env steps into {out}: "
        "8 to start, 0 to resume, 0 finished, 0 cannot start; 1 at a time"
    )
    children = [line for line in lines if line.startswith("  seed ")]
    assert len(children) == 8
    group = out / "tmaze-active" / "ff"
    assert any(
        f"-c {group / 'seeds.config.json'} --name seed_1 -o run.ckpt_base_dir={group} --seed 1" in line
        for line in children
    )
    assert not os.path.lexists(out)


RETURN = "val/Average Total Return (Across All Env Names)"
FPS = "val/Env FPS (per_process)"


def write_seed(group: Path, seed: int, returns: list[float]) -> None:
    """A finished seed whose first val return comes before its first update (a sweep's score leaves it out)."""
    run = group / f"seed_{seed}"
    run.mkdir(parents=True)
    lines = []
    for epoch, value in enumerate(returns):
        counters = {"Epoch": epoch, "gradient_steps": 10 * epoch, "total_frames": 20 * (epoch + 1)}
        lines.append({**counters, "wall_time_seconds": 2.0 * (epoch + 1), RETURN: value, FPS: 100.0})
    (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_scores_normalise_per_task_and_a_task_nobody_beats_is_left_out(tmp_path):
    from amago_studies.bench_memory import Group, Settings
    from amago_studies.bench_memory_report import markdown, results
    from amago_studies.seeds import SeedGroup

    out = tmp_path / "out"
    settings = Settings(memories=("a", "b"), tasks=("t1", "t2"), seeds=(0, 1), steps=100)
    finals = {
        ("t1", "a"): [2.0, 4.0],
        ("t1", "b"): [1.0, 3.0],
        ("t2", "a"): [1.0, 2.0],
        ("t2", "b"): [0.0, 9.9],
    }
    groups = []
    for (task, memory), scores in finals.items():
        group = Group(task, memory, SeedGroup(out / task / memory))
        codes = {"0": 0, "1": 1 if (task, memory) == ("t2", "b") else 0}  # b's seed 1 failed on t2
        group.seeds.root.mkdir(parents=True)
        group.seeds.write_record({"seeds": [0, 1], "command": [], "parallel": 1, "exit_codes": codes})
        for seed, score in enumerate(scores):
            write_seed(group.seeds.root, seed, [99.0, score, score, score])  # the untrained 99 is left out
        groups.append(group)
    floors = {"t1": {"mean_return": 1.0, "episodes": 10}, "t2": {"mean_return": 5.0, "episodes": 10}}
    found = results(
        settings, groups, {"runs": {}}, floors, baseline="a", best={}, last=3, reps=100, seed=0, machine={}
    )
    assert found["tasks_in_statistics"] == ["t1"]  # on t2 the best finished run (2.0) is below the floor
    assert "no run beat the random floor (best 2, floor 5)" in found["tasks"]["t2"]["note"]
    normalised = {(r["task"], r["memory"], r["seed"]): r["normalised"] for r in found["runs"]}
    assert normalised["t1", "a", 1] == pytest.approx(1.0)  # best = the best score of the bench
    assert normalised["t1", "b", 0] == pytest.approx(0.0)  # at the floor
    assert normalised["t1", "a", 0] == pytest.approx(1 / 3)
    assert found["missing"] == [
        f"b on t2 seed 1: failed (exit 1); its log: {out / 't2' / 'b' / 'logs' / 'seed_1.log'}"
    ]
    rows = found["memories"]
    assert rows["a"]["rows"] == 2
    assert rows["b"]["rows"] == 2  # t2 is not in the statistics, so b's failed seed there costs no row
    assert rows["a"]["updates_per_second"] == pytest.approx(30 / 8)
    assert rows["b"]["probability_of_improvement"]["probability"] == pytest.approx(0.25)
    assert rows["a"]["probability_of_improvement"] is None
    text = markdown(found, settings)
    assert "| a | 0.667 ± 0.47 | 1.5 ± 0.71 (raw) | " in text
    assert "- t2: left out of the normalised statistics: no run beat the random floor" in text


@pytest.mark.parametrize("code", [130, 143])
def test_a_run_stopped_by_a_signal_is_reported_as_stopped_not_failed(tmp_path, code):
    """`amago run` exits 128 + the signal after saving a checkpoint; the bench resumes such a run, so the report
    must not send the user to its log as if it had crashed."""
    from amago_studies.bench_memory import Group, Settings
    from amago_studies.bench_memory_report import results
    from amago_studies.seeds import SeedGroup

    settings = Settings(memories=("a",), tasks=("t1",), seeds=(0, 1), steps=100)
    group = Group("t1", "a", SeedGroup(tmp_path / "t1" / "a"))
    group.seeds.root.mkdir(parents=True)
    group.seeds.write_record(
        {"seeds": [0, 1], "command": [], "parallel": 1, "exit_codes": {"0": 0, "1": code}}
    )
    write_seed(group.seeds.root, 0, [0.0, 2.0, 2.0, 2.0])
    found = results(
        settings,
        [group],
        {"runs": {}},
        {"t1": {"mean_return": 0.0, "episodes": 10}},
        baseline="a",
        best={},
        last=3,
        reps=10,
        seed=0,
        machine={},
    )
    assert found["missing"] == [
        f"a on t1 seed 1: stopped (exit {code}); the same command resumes it from its last checkpoint"
    ]


def test_a_suite_declared_best_normalises_unless_best_is_given(tmp_path):
    """``best`` is ``--best``, else the env suite's ``best_known_return()``, else the bench's best score; the
    header and the raw table say which each task used."""
    from amago_studies.bench_memory import Group, Settings
    from amago_studies.bench_memory_report import markdown, results
    from amago_studies.seeds import SeedGroup

    out = tmp_path / "out"
    settings = Settings(memories=("a",), tasks=("t1", "t2", "t3", "t4"), seeds=(0,), steps=100)
    groups = []
    for task in settings.tasks:
        group = Group(task, "a", SeedGroup(out / task / "a"), best_known=None if task == "t3" else 4.0)
        groups.append(group)
        if task == "t4":  # not run yet: a known best alone does not put it in the statistics
            continue
        group.seeds.root.mkdir(parents=True)
        group.seeds.write_record({"seeds": [0], "command": [], "parallel": 1, "exit_codes": {"0": 0}})
        write_seed(group.seeds.root, 0, [99.0, 2.0, 2.0, 2.0])

    def report(floor: float) -> dict:
        floors = {task: {"mean_return": floor, "episodes": 10} for task in settings.tasks}
        options = {"baseline": "a", "best": {"t2": 8.0}, "last": 3, "reps": 100, "seed": 0, "machine": {}}
        return results(settings, groups, {"runs": {}}, floors, **options)

    found = report(0.0)
    normalised = {r["task"]: r["normalised"] for r in found["runs"] if r["task"] != "t4"}
    assert normalised == pytest.approx({"t1": 0.5, "t2": 0.25, "t3": 1.0})  # suite 4, --best 8, bench's own 2
    assert [found["tasks"][t]["best_source"] for t in settings.tasks] == ["suite", "given", "bench", "suite"]
    assert found["tasks_in_statistics"] == ["t1", "t2", "t3"]
    assert found["memories"]["a"]["rows"] == 1
    text = markdown(found, settings)
    assert (
        "best = --best for t2; the env suite's best known return for t1, t4; best in this bench for t3"
        in text
    )
    assert "- t4: left out of the normalised statistics: no run of it has a score" in text
    assert "no run beat the random floor" not in text

    found = report(3.0)  # every score (2) is below the floor
    assert found["tasks_in_statistics"] == ["t1", "t2"]  # a known best still normalises them (t3 has none)
    text = markdown(found, settings)
    assert "- t1: no run beat the random floor (best score 2, floor 3)" in text
    assert "- t3: left out of the normalised statistics: no run beat the random floor" in text


def test_popgym_declares_its_reward_bound_and_the_default_is_unknown():
    from amago_envs.suites.popgym.specs import POPGymConfig
    from amago_envs.suites.specs import TMazeConfig

    assert TMazeConfig().best_known_return() is None  # the base's default: a suite that declares nothing
    assert {POPGymConfig(task=t).best_known_return() for t in ("repeat-first-easy", "minesweeper-easy")} == {
        1.0
    }


def test_a_memory_option_reaches_that_memory_s_runs_only_and_is_part_of_the_bench(tmp_path):
    """``--memory-option gru:d_hidden=24`` sizes the GRU alone (``-o`` items go to every memory), is recorded,
    named in the report, and a resume must give it again; a bench from before the option resumes without it."""
    from amago_studies.bench_memory import plan_groups
    from amago_studies.bench_memory_cmd import _settings
    from amago_studies.bench_memory_report import _options_lines

    options = ["rnn:d_hidden=24", "gru:optim.learning_rate=0.002"]  # an alias names the memory too
    settings = _settings("gru,ff", "tmaze-passive", "1", "200", [], ["optim.learning_rate=0.003"], options)
    assert settings.memory_options == (
        ("gru", "traj_encoder.d_hidden=24"),
        ("gru", "optim.learning_rate=0.002"),
    )
    configs = {group.memory: group.config for group in plan_groups(tmp_path / "out", settings)}
    assert configs["gru"]["traj_encoder"]["d_hidden"] == 24
    assert configs["gru"]["optim"]["learning_rate"] == 0.002  # after the -o item: the memory's own wins
    assert configs["ff"]["optim"]["learning_rate"] == 0.003
    assert "d_hidden" not in configs["ff"]["traj_encoder"]  # ff has no such option: it never saw the item

    record = settings.record()
    assert record["memory_options"] == ["gru:traj_encoder.d_hidden=24", "gru:optim.learning_rate=0.002"]
    assert settings.difference(record) is None
    plain = _settings("gru,ff", "tmaze-passive", "1", "200", [], ["optim.learning_rate=0.003"], [])
    assert settings.difference(plain.record()).startswith("no --memory-option, not --memory-option gru:")
    older = {key: value for key, value in plain.record().items() if key != "memory_options"}
    assert plain.difference(older) is None
    assert _options_lines(settings) == [
        "",
        "Every memory's runs: -o optim.learning_rate=0.003.",
        "gru's runs also: -o traj_encoder.d_hidden=24 -o optim.learning_rate=0.002.",
    ]


def test_one_memory_at_two_sizes_is_two_labelled_rows(tmp_path):
    """``gru@small,gru@wide`` trains the GRU twice, each label with its own options and folder; an alias names
    the same labelled entry, and the baseline may be a label."""
    from amago_studies.bench_memory import plan_groups
    from amago_studies.bench_memory_cmd import _checked_report_options, _settings

    options = ["gru@small:d_hidden=16", "RNN@Wide:d_hidden=48"]
    settings = _settings("gru@small,gru@wide", "tmaze-passive", "1", "200", [], [], options)
    assert settings.memories == ("gru@small", "gru@wide")
    assert settings.memory_options == (
        ("gru@small", "traj_encoder.d_hidden=16"),
        ("gru@wide", "traj_encoder.d_hidden=48"),
    )
    groups = {group.memory: group for group in plan_groups(tmp_path / "out", settings)}
    assert groups["gru@small"].config["traj_encoder"]["kind"] == "rnn"
    assert groups["gru@small"].config["traj_encoder"]["d_hidden"] == 16
    assert groups["gru@wide"].config["traj_encoder"]["d_hidden"] == 48
    assert groups["gru@wide"].seeds.root == tmp_path / "out" / "tmaze-passive" / "gru@wide"
    chosen = _checked_report_options(settings, "gru@wide", [], 3, 200, 10, 1)
    assert chosen["baseline"] == "gru@wide"
