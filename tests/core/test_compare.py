"""`amago compare`: rliable's numbers, the files written and the one-line errors, on synthetic metrics.jsonl."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.experiment.compare import group_curve

rly = pytest.importorskip("rliable.library")  # the dev group installs it (amago-core[compare])
rly_metrics = pytest.importorskip("rliable.metrics")

runner = CliRunner()
METRIC = "val/Average Total Return (Across All Env Names)"
REPS = 200
SEED = 3


def write_run(folder: Path, finals: dict[str, float], *, epochs: int = 4, test: float | None = None) -> None:
    """A run whose per-env val returns climb linearly to ``finals`` (one env name per key) over ``epochs``."""
    folder.mkdir(parents=True)
    lines = []
    for epoch in range(epochs):
        fraction = (epoch + 1) / epochs
        per_env = {name: final * fraction for name, final in finals.items()}
        axes = {"Epoch": epoch, "total_frames": 100 * (epoch + 1), "gradient_steps": 10 * (epoch + 1)}
        lines.append({"step": epoch, **axes, "train/Loss": 1.0 / (epoch + 1)})
        record = {"step": epoch, **axes, METRIC: float(np.mean(list(per_env.values())))}
        record.update({f"val/Average Total Return in {name}": v for name, v in per_env.items()})
        lines.append(record)
    if test is not None:
        lines.append(
            {"step": epochs, "Epoch": epochs, "test/Average Total Return (Across All Env Names)": test}
        )
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def write_group(folder: Path, finals: list[float], env: str = "CartPole") -> None:
    for seed, final in enumerate(finals):
        write_run(folder / f"seed_{seed}", {env: final})


def expected(scores: list[float], target: float | None = None) -> dict[str, tuple[float, float, float]]:
    """rliable's own estimate and interval for each aggregate, each computed on its own."""
    funcs = {
        "IQM": rly_metrics.aggregate_iqm,
        "Mean": rly_metrics.aggregate_mean,
        "Median": rly_metrics.aggregate_median,
    }
    if target is not None:
        funcs["Optimality gap"] = lambda s: rly_metrics.aggregate_optimality_gap(s, target)
    out = {}
    for name, func in funcs.items():
        matrix = np.array(scores, dtype=float)[:, None]
        np.random.seed(
            SEED
        )  # rliable 1.2 resamples with numpy's global generator, whatever random_state says
        points, intervals = rly.get_interval_estimates(
            {"g": matrix}, lambda m, func=func: np.array([func(m)]), reps=REPS
        )
        out[name] = (float(points["g"][0]), float(intervals["g"][0][0]), float(intervals["g"][1][0]))
    return out


def invoke(*args: str):
    return runner.invoke(app, ["compare", *args, "--reps", str(REPS), "--seed", str(SEED)])


def assert_row(row: dict, want: dict[str, tuple[float, float, float]]) -> None:
    assert set(row) == set(want)
    for name, (estimate, low, high) in want.items():
        assert row[name]["estimate"] == pytest.approx(estimate)
        assert row[name]["low"] == pytest.approx(low)
        assert row[name]["high"] == pytest.approx(high)


def test_table_equals_rliable_and_files_are_written(tmp_path: Path) -> None:
    a, b = [1.0, 2.0, 4.0], [3.0, 5.0, 9.0]
    write_group(tmp_path / "algo_a", a)
    write_group(tmp_path / "algo_b", b)
    out = tmp_path / "out"
    result = invoke(
        str(tmp_path / "algo_a"), str(tmp_path / "algo_b"), "--target", "6", "--out", str(out), "--json"
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)  # floats rounded to 6 significant digits, as every --json
    data = json.loads((out / "compare.json").read_text())  # exact
    assert printed["table"]["algo_b"]["IQM"]["estimate"] == pytest.approx(
        data["table"]["algo_b"]["IQM"]["estimate"], rel=1e-5
    )
    assert data["score_key"] == METRIC
    assert [g["scores"] for g in data["groups"]] == [a, b]
    assert_row(data["table"]["algo_a"], expected(a, 6.0))
    assert_row(data["table"]["algo_b"], expected(b, 6.0))
    pairs = {(p["x"], p["y"]): p["probability"] for p in data["probability_of_improvement"]}
    xa, xb = np.array(a)[:, None], np.array(b)[:, None]
    assert pairs["algo_b", "algo_a"] == pytest.approx(rly_metrics.probability_of_improvement(xb, xa))
    assert pairs["algo_a", "algo_b"] == pytest.approx(rly_metrics.probability_of_improvement(xa, xb))
    assert data["per_env"] == {}  # one env name: the main table says it all
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (out / "compare.md").read_text()
    assert "| algo_a |" in text
    assert "Probability of improvement" in text


def test_last_k_labels_and_no_target(tmp_path: Path) -> None:
    write_run(tmp_path / "one_run", {"CartPole": 4.0})  # a run folder: a group of one
    write_group(tmp_path / "grp", [8.0, 8.0])
    out = tmp_path / "out"
    result = invoke(
        str(tmp_path / "one_run"), str(tmp_path / "grp"), "--label", "A", "--label", "B", "--last", "2",
        "--x", "updates", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text())
    assert [g["label"] for g in data["groups"]] == ["A", "B"]
    assert data["groups"][0]["scores"] == [pytest.approx(3.5)]  # mean of the last 2 evaluations: 3 and 4
    assert "Optimality gap" not in data["table"]["A"]
    assert "| A |" in result.stdout
    assert str(out / "compare.png") in result.stdout


def test_auto_final_uses_test_values(tmp_path: Path) -> None:
    for seed, score in enumerate([7.0, 9.0]):
        write_run(tmp_path / "g" / f"seed_{seed}", {"CartPole": 1.0}, test=score)
    result = invoke(str(tmp_path / "g"), "--out", str(tmp_path / "out"), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["score_key"] == "test/Average Total Return (Across All Env Names)"
    assert data["groups"][0]["scores"] == [7.0, 9.0]
    val = json.loads(
        invoke(str(tmp_path / "g"), "--out", str(tmp_path / "o2"), "--final", "val", "--json").stdout
    )
    assert val["groups"][0]["scores"] == [1.0, 1.0]


def test_multi_task_tables_per_env(tmp_path: Path) -> None:
    finals = {"m1": [(2.0, 10.0), (4.0, 12.0), (3.0, 20.0)], "m2": [(1.0, 30.0), (5.0, 31.0), (6.0, 40.0)]}
    for name, seeds in finals.items():
        for seed, (x, y) in enumerate(seeds):
            write_run(tmp_path / name / f"seed_{seed}", {"EnvX": x, "EnvY": y})
    result = invoke(str(tmp_path / "m1"), str(tmp_path / "m2"), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert set(data["per_env"]) == {"EnvX", "EnvY"}
    assert_row(data["per_env"]["EnvY"]["m2"], expected([30.0, 31.0, 40.0]))
    assert_row(data["per_env"]["EnvX"]["m1"], expected([2.0, 4.0, 3.0]))
    assert "## EnvX" in (tmp_path / "out" / "compare.md").read_text()


def test_invalid_groups_and_seeds_are_one_line_each(tmp_path: Path) -> None:
    write_group(tmp_path / "a", [1.0, 2.0, 3.0])
    (tmp_path / "a" / "seed_9").mkdir()  # a seed that crashed before logging
    write_group(tmp_path / "b", [2.0, 3.0, 4.0])
    write_run(tmp_path / "multi" / "seed_0", {"EnvX": 1.0, "EnvY": 2.0})  # another env suite
    result = invoke(
        *(str(tmp_path / g) for g in ("a", "b", "multi")), "--out", str(tmp_path / "out"), "--json"
    )
    assert result.exit_code == 0, result.output
    warnings = result.stderr.strip().splitlines()
    assert len(warnings) == 2, warnings
    assert all(line.startswith("amago: warning: ") for line in warnings)
    assert "seed_9: no metrics.jsonl" in warnings[0]
    assert "other envs" in warnings[1]
    data = json.loads(result.stdout)
    assert set(data["table"]) == {"a", "b"}
    assert len(data["skipped"]) == 2


def test_nothing_valid_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty" / "seed_0").mkdir(parents=True)
    result = invoke(str(tmp_path / "empty"), str(tmp_path / "missing"), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("amago: error:")]
    assert len(errors) == 1
    assert "nothing to compare" in errors[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_missing_rliable_names_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_group(tmp_path / "a", [1.0])
    for name in ("rliable", "rliable.library", "rliable.metrics"):
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    result = invoke(str(tmp_path / "a"), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "amago: error: amago compare needs rliable: pip install 'amago-core[compare]'"
    )


def test_seed_curves_share_the_x_range_every_seed_covers() -> None:
    short = (np.array([0.0, 10.0]), np.array([0.0, 10.0]))
    long = (np.array([0.0, 20.0]), np.array([0.0, 40.0]))
    xs, mean, low, high = group_curve([short, long])
    assert xs[0] == 0.0
    assert xs[-1] == 10.0  # not extended past the short seed's last evaluation
    assert mean[-1] == pytest.approx((10.0 + 20.0) / 2)
    assert low[-1] >= 10.0 - 1e-9
    assert high[-1] <= 20.0 + 1e-9


def test_compare_imports_no_torch(tmp_path: Path) -> None:
    write_group(tmp_path / "a", [1.0, 2.0])
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from amago_core.cli.app import app\n"
        f"args = ['compare', {str(tmp_path / 'a')!r}, '--out', {str(tmp_path / 'out')!r}, '--reps', '100']\n"
        "result = CliRunner().invoke(app, args)\n"
        "assert result.exit_code == 0, result.output\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_a_folder_of_seeds_made_by_amago_run_seeds_reads_only_its_seed_folders(tmp_path: Path) -> None:
    group = tmp_path / "lr3e-4"
    write_group(group, [1.0, 2.0])  # seed_0/, seed_1/
    (group / "logs").mkdir()  # what --seeds keeps beside the seeds
    (group / "seeds.json").write_text("{}")
    result = invoke(str(group), "--out", str(tmp_path / "out"), "--json")
    assert result.exit_code == 0, result.output
    assert "logs" not in result.stderr
