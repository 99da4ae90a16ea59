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
from amago_studies.compare import ATTEMPT_KEY, compare, group_curve

rly = pytest.importorskip("rliable.library")  # the dev group installs it (amago-studies[compare])
rly_metrics = pytest.importorskip("rliable.metrics")

runner = CliRunner()
METRIC = "val/Average Total Return (Across All Env Names)"
REPS = 200
SEED = 3


def write_run(
    folder: Path,
    finals: dict[str, float],
    *,
    epochs: int = 4,
    test: float | None = None,
    seconds_per_epoch: float | None = None,
    attempts: dict[str, list[float]] | None = None,
) -> None:
    """A run whose per-env val returns climb linearly to ``finals`` (one env name per key) over ``epochs``.

    ``seconds_per_epoch`` adds the training wall time to each record; ``attempts`` (env name -> final success
    per attempt) adds Meta-Frozen-Lake's ``Episode <k> Success`` val metrics, climbing to those values.
    """
    folder.mkdir(parents=True)
    lines = []
    for epoch in range(epochs):
        fraction = (epoch + 1) / epochs
        per_env = {name: final * fraction for name, final in finals.items()}
        axes = {"Epoch": epoch, "total_frames": 100 * (epoch + 1), "gradient_steps": 10 * (epoch + 1)}
        if seconds_per_epoch is not None:
            axes["wall_time_seconds"] = seconds_per_epoch * (epoch + 1)
        lines.append({"step": epoch, **axes, "train/Loss": 1.0 / (epoch + 1)})
        record = {"step": epoch, **axes, METRIC: float(np.mean(list(per_env.values())))}
        record.update({f"val/Average Total Return in {name}": v for name, v in per_env.items()})
        for name, successes in (attempts or {}).items():
            record.update(
                {f"val/Average Episode {k} Success in {name}": s * fraction for k, s in enumerate(successes)}
            )
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
    assert "## Env: EnvX" in (tmp_path / "out" / "compare.md").read_text()


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
        "amago: error: amago compare needs rliable: pip install 'amago-studies[compare]'"
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


def expected_poi(x: list[float], y: list[float]) -> tuple[float, float, float]:
    """rliable's probability of improvement of x over y and its interval, computed on their own."""
    np.random.seed(SEED)
    points, intervals = rly.get_interval_estimates(
        {"p": (np.array(x)[:, None], np.array(y)[:, None])}, rly_metrics.probability_of_improvement, reps=REPS
    )
    low, high = np.ravel(intervals["p"])
    return float(points["p"]), float(low), float(high)


def test_probability_of_improvement_has_rliable_intervals(tmp_path: Path) -> None:
    a, b, low = [1.0, 2.0, 4.0], [3.0, 5.0, 9.0], [-3.0, -2.0, -1.0]
    for name, finals in (("a", a), ("b", b), ("low", low)):
        write_group(tmp_path / name, finals)
    out = tmp_path / "out"
    result = invoke(*(str(tmp_path / g) for g in ("a", "b", "low")), "--out", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text())
    pairs = {(p["x"], p["y"]): p for p in data["probability_of_improvement"]}
    assert len(pairs) == 6
    estimate, lo, hi = expected_poi(a, b)  # a is listed first: its pairs are bootstrapped as (a, b)
    assert pairs["a", "b"]["probability"] == pytest.approx(estimate)
    assert (pairs["a", "b"]["low"], pairs["a", "b"]["high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert lo <= estimate <= hi
    assert hi - lo > 0.1  # overlapping groups of 3 seeds: a wide interval
    # The reverse pair: rliable's own estimate, and one minus the interval above (the same resamples).
    assert pairs["b", "a"]["probability"] == pytest.approx(expected_poi(b, a)[0])
    assert pairs["b", "a"]["probability"] == pytest.approx(1 - estimate)
    assert (pairs["b", "a"]["low"], pairs["b", "a"]["high"]) == (pytest.approx(1 - hi), pytest.approx(1 - lo))
    # Every seed of `a` beats every seed of `low`: certain, in every resample too.
    assert (pairs["a", "low"]["probability"], pairs["a", "low"]["low"], pairs["a", "low"]["high"]) == (
        1,
        1,
        1,
    )
    assert (pairs["low", "a"]["probability"], pairs["low", "a"]["low"], pairs["low", "a"]["high"]) == (
        0,
        0,
        0,
    )
    # b over a by hand: of the 9 pairs, b wins 3>1, 3>2, 5>1, 5>2, 5>4, 9>all three = 8.
    assert pairs["b", "a"]["probability"] == pytest.approx(8 / 9)
    assert "| a | low | 1 [1, 1] |" in (out / "compare.md").read_text()


def test_envs_as_tasks_table_is_rliable_on_the_seeds_by_envs_matrix(tmp_path: Path) -> None:
    finals = {"m1": [(2.0, 10.0), (4.0, 12.0), (3.0, 20.0)], "m2": [(1.0, 30.0), (5.0, 31.0), (6.0, 40.0)]}
    for name, seeds in finals.items():
        for seed, (x, y) in enumerate(seeds):
            write_run(tmp_path / name / f"seed_{seed}", {"EnvX": x, "EnvY": y})
    out = tmp_path / "out"
    result = invoke(str(tmp_path / "m1"), str(tmp_path / "m2"), "--out", str(out), "--target", "15")
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text())
    assert data["envs"] == ["EnvX", "EnvY"]
    assert {"table", "envs_as_tasks", "per_env", "per_attempt"} <= set(data["tables"])
    table = data["envs_as_tasks"]["m1"]
    # By hand on the 3 x 2 matrix [[2, 10], [4, 12], [3, 20]]: the IQM keeps the middle half of the 6 scores
    # (3, 4, 10, 12), the median is that of the per-env means (3 and 14), the gap averages min(15 - s, 15 - 15).
    assert table["IQM"]["estimate"] == pytest.approx((3 + 4 + 10 + 12) / 4)
    assert table["Mean"]["estimate"] == pytest.approx(51 / 6)
    assert table["Median"]["estimate"] == pytest.approx((3 + 14) / 2)
    assert table["Optimality gap"]["estimate"] == pytest.approx((13 + 11 + 12 + 5 + 3 + 0) / 6)
    for label, seeds in finals.items():
        matrix = np.array(seeds)
        for name, func in {
            "IQM": rly_metrics.aggregate_iqm,
            "Mean": rly_metrics.aggregate_mean,
            "Median": rly_metrics.aggregate_median,
        }.items():
            np.random.seed(SEED)
            points, intervals = rly.get_interval_estimates(
                {"g": matrix}, lambda m, func=func: np.array([func(m)]), reps=REPS
            )
            row = data["envs_as_tasks"][label][name]
            assert (row["estimate"], row["low"], row["high"]) == (
                pytest.approx(points["g"][0]),
                pytest.approx(intervals["g"][0][0]),
                pytest.approx(intervals["g"][1][0]),
            )
    # Not the main table: that one scores each seed by its average over envs.
    assert data["table"]["m1"]["Mean"]["estimate"] == pytest.approx(np.mean([6.0, 8.0, 11.5]))
    text = (out / "compare.md").read_text()
    assert "## Envs as tasks (2 env names)" in text
    assert text.index("## Envs as tasks") < text.index("## Env: EnvX")


def test_minutes_axis_reads_the_wall_time_and_says_which_runs_lack_it(tmp_path: Path) -> None:
    write_run(tmp_path / "timed" / "seed_0", {"CartPole": 4.0}, seconds_per_epoch=60.0)
    write_run(tmp_path / "timed" / "seed_1", {"CartPole": 8.0}, seconds_per_epoch=90.0)
    write_run(tmp_path / "timed" / "seed_2", {"CartPole": 6.0})  # logged before the wall-time field
    lines: list[str] = []
    result = compare([tmp_path / "timed"], x="minutes", reps=REPS, seed=SEED, warn=lines.append)
    xs, mean, _, _ = result.curves["timed"]
    assert (xs[0], xs[-1]) == (pytest.approx(1.5), pytest.approx(4.0))  # minutes both timed seeds cover
    assert mean[-1] == pytest.approx((4.0 + 8.0 * 4.0 / 6.0) / 2)  # seed 1 is 4 of its 6 minutes in
    assert len(lines) == 1
    assert "seed_2" in lines[0]
    assert "wall_time_seconds" in lines[0]
    assert "--x steps" in lines[0]
    assert result.scores["timed"] == [4.0, 8.0, 6.0]  # left out of the curve only, not the table

    write_run(tmp_path / "old" / "seed_0", {"CartPole": 1.0})
    cli = invoke(str(tmp_path / "old"), "--x", "minutes", "--out", str(tmp_path / "out"))
    assert cli.exit_code == 0, cli.output
    warnings = cli.stderr.strip().splitlines()
    assert len(warnings) == 1
    assert warnings[0].startswith("amago: warning: ")
    assert "Traceback" not in cli.output
    assert (tmp_path / "out" / "compare.png").is_file()


def test_per_attempt_means_and_bands_for_meta_rl_runs(tmp_path: Path) -> None:
    lake = "Meta-Frozen-Lake"
    write_run(tmp_path / "rnn" / "seed_0", {lake: 1.0}, attempts={lake: [0.2, 0.5, 0.8]})
    write_run(tmp_path / "rnn" / "seed_1", {lake: 1.0}, attempts={lake: [0.4, 0.7, 1.0]})
    write_run(tmp_path / "ff" / "seed_0", {lake: 1.0}, attempts={lake: [0.3, 0.3, 0.3]})
    write_run(tmp_path / "ff" / "seed_1", {lake: 1.0}, attempts={lake: [0.3, 0.3, 0.3]})
    out = tmp_path / "out"
    result = invoke(str(tmp_path / "rnn"), str(tmp_path / "ff"), "--out", str(out), "--last", "2")
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text())
    assert data["per_attempt"]["section"] == "val"
    series = data["per_attempt"]["series"]
    assert list(series) == ["Episode k Success"]
    rnn, ff = series["Episode k Success"]["rnn"], series["Episode k Success"]["ff"]
    assert rnn["attempts"] == [0, 1, 2]
    assert rnn["seeds"] == 2
    # --last 2: each seed's mean of its last two evaluations, 3/4 and 4/4 of its final success.
    want = np.mean([[0.2, 0.5, 0.8], [0.4, 0.7, 1.0]], axis=0) * (3 / 4 + 1) / 2
    assert rnn["mean"] == pytest.approx(want.tolist())
    seeds = np.array([[0.2, 0.5, 0.8], [0.4, 0.7, 1.0]]) * (3 / 4 + 1) / 2
    assert all(lo <= m <= hi for lo, m, hi in zip(rnn["low"], rnn["mean"], rnn["high"], strict=True))
    assert rnn["low"] == pytest.approx(seeds.min(axis=0).tolist())  # two seeds: some resamples take one twice
    assert rnn["high"] == pytest.approx(seeds.max(axis=0).tolist())
    assert ff["low"] == ff["high"] == pytest.approx([0.3 * 7 / 8] * 3)  # identical seeds: no spread
    assert (out / "compare_attempts.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(out / "compare_attempts.png") in result.stdout
    text = (out / "compare.md").read_text()
    assert "## Per attempt: Episode k Success" in text
    assert "| rnn | 2 | " in text

    # Without per-attempt metrics: no section, and no picture left from an earlier comparison in that folder.
    write_group(tmp_path / "plain", [1.0, 2.0])
    again = invoke(str(tmp_path / "plain"), "--out", str(out), "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["per_attempt"]["series"] == {}
    assert not (out / "compare_attempts.png").exists()


def test_per_attempt_values_average_over_env_names(tmp_path: Path) -> None:
    attempts = {"LakeA": [0.0, 1.0], "LakeB": [0.5, 0.5]}
    write_run(tmp_path / "g" / "seed_0", {"LakeA": 1.0, "LakeB": 2.0}, attempts=attempts)
    result = compare([tmp_path / "g"], reps=REPS, seed=SEED)
    row = result.attempts["Episode k Success"]["g"]
    assert row["attempts"] == [0, 1]
    assert row["mean"] == pytest.approx([0.25, 0.75])


def test_the_attempt_metrics_meta_frozen_lake_logs_are_the_ones_compare_reads() -> None:
    from amago_core.experiment.metrics import policy_metrics
    from amago_core.rollout.sequence import log_metrics_from_info
    from amago_envs.suites.frozen_lake import MetaFrozenLake

    env = MetaFrozenLake(size=3, k_episodes=3)
    env.reset(seed=0)
    logged: dict[str, list[float]] = {}
    terminated = False
    while not terminated:
        _, _, terminated, _, info = env.step(int(env.np_random.integers(5)))
        for key, values in log_metrics_from_info(info).items():
            logged.setdefault(key, []).extend(values)
    metrics = policy_metrics({"return_history": {"lake": [1.0]}, "metric_history": {"lake": logged}})
    parsed = [ATTEMPT_KEY.match(f"val/{key}") for key in metrics]
    assert sorted(int(m["index"]) for m in parsed if m) == [0, 1, 2]
    assert {(m["unit"], m["quantity"], m["env"]) for m in parsed if m} == {("Episode", "Success", "lake")}


def test_a_sweep_folder_is_one_line_not_a_group_of_seeds(tmp_path: Path) -> None:
    write_group(tmp_path / "a", [1.0, 2.0])
    for number, final in enumerate([1.0, 3.0]):  # two configurations, not two seeds of one
        write_run(tmp_path / "sweep" / f"trial_{number}", {"CartPole": final})
    (tmp_path / "sweep" / "sweep.json").write_text('{"study": "sweep"}')
    result = invoke(str(tmp_path / "a"), str(tmp_path / "sweep"), "--out", str(tmp_path / "out"), "--json")
    assert result.exit_code == 0, result.output
    (line,) = result.stderr.strip().splitlines()
    assert "a sweep folder, left out" in line
    assert f"amago sweep show {tmp_path / 'sweep'}" in line
    assert set(json.loads(result.stdout)["table"]) == {"a"}
    # Its trials are run folders like any other.
    result = invoke(
        *(str(tmp_path / "sweep" / f"trial_{n}") for n in (0, 1)), "--out", str(tmp_path / "o2"), "--json"
    )
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)["table"]) == {"trial_0", "trial_1"}


def test_compare_says_which_tasks_each_group_was_evaluated_on(tmp_path: Path) -> None:
    from amago_core.config.task_split import TaskSet, TaskSplits, task_split_record

    pool = TaskSet("lake seeds 0..199 (the training pool)", kind="seeds", first=0, count=200)
    held_out = TaskSet("lake seeds 200.. (held out)", kind="seeds", first=200, held_out=True)
    splits = TaskSplits("frozen_lake", {"train": pool, "val": pool, "test": held_out}, unseen=held_out)
    write_group(tmp_path / "pooled", [1.0, 2.0])
    for seed in (0, 1):
        record = task_split_record(splits, "MetaFrozenLake")
        (tmp_path / "pooled" / f"seed_{seed}" / "task_split.json").write_text(json.dumps(record))
    write_group(tmp_path / "old", [1.0, 2.0])  # runs from before the record
    result = invoke(str(tmp_path / "pooled"), str(tmp_path / "old"), "--out", str(tmp_path / "out"), "--json")
    assert result.exit_code == 0, result.output
    groups = {group["label"]: group for group in json.loads(result.stdout)["groups"]}
    assert groups["pooled"]["tasks"] == {
        "val": "lake seeds 0..199 (the training pool), tasks training draws too"
    }
    assert groups["old"]["tasks"]["val"].startswith("not recorded")
    text = (tmp_path / "out" / "compare.md").read_text()
    assert "- pooled: `val/` on lake seeds 0..199 (the training pool), tasks training draws too" in text


@pytest.mark.parametrize("reps", ["100000000", "100001", "5"])
def test_reps_are_bounded_in_one_line(tmp_path: Path, reps: str) -> None:
    (tmp_path / "a" / "seed_0").mkdir(parents=True)  # checked before any folder is read or any resample drawn
    result = runner.invoke(
        app, ["compare", str(tmp_path / "a"), "--out", str(tmp_path / "out"), "--reps", reps]
    )
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"amago: error: --reps {reps}: bootstrap replications must be 100 to 100,000")
    assert not (tmp_path / "out").exists()


def test_the_help_names_the_bounds_the_command_enforces() -> None:
    from amago_studies import compare as computation
    from amago_studies import compare_cmd

    bounds = ("DEFAULT_REPS", "REPS_MIN", "REPS_MAX", "DEFAULT_METRIC")
    assert [getattr(compare_cmd, name) for name in bounds] == [getattr(computation, name) for name in bounds]


def test_a_group_with_no_usable_seed_is_named(tmp_path: Path) -> None:
    write_group(tmp_path / "a", [1.0, 2.0])
    write_group(tmp_path / "b", [1.0, 2.0])
    for seed in (0, 1):  # b's seeds log no val metric at all (a run that crashed before its first evaluation)
        (tmp_path / "b" / f"seed_{seed}" / "metrics.jsonl").write_text('{"step": 0, "train/Loss": 1.0}\n')
    result = invoke(str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "o2"), "--json")
    assert result.exit_code == 0, result.output
    assert f"amago: warning: {tmp_path / 'b'}: no seed has {METRIC!r} values, 'b' left out" in result.stderr
    assert set(json.loads(result.stdout)["table"]) == {"a"}

    for seed, score in enumerate([7.0, 9.0]):  # c: a test score per seed; d: none, its table row would vanish
        write_run(tmp_path / "c" / f"seed_{seed}", {"CartPole": 1.0}, test=score)
    write_group(tmp_path / "d", [1.0, 2.0])
    result = invoke(
        str(tmp_path / "c"), str(tmp_path / "d"), "--final", "test", "--out", str(tmp_path / "o3"), "--json"
    )
    assert result.exit_code == 0, result.output
    test_key = "test/" + METRIC.removeprefix("val/")
    named = f"amago: warning: {tmp_path / 'd'}: no seed has a final {test_key!r}, 'd' left out of the tables"
    assert named in result.stderr
    assert set(json.loads(result.stdout)["table"]) == {"c"}


def test_outputs_go_next_to_the_compared_folders_not_the_shell_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_group(tmp_path / "runs" / "a", [1.0, 2.0])
    write_group(tmp_path / "runs" / "b", [2.0, 3.0])
    shell = tmp_path / "shell"
    shell.mkdir()
    monkeypatch.chdir(shell)
    result = invoke(str(tmp_path / "runs" / "a"), str(tmp_path / "runs" / "b"))
    assert result.exit_code == 0, result.output
    assert list(shell.iterdir()) == []
    written = tmp_path / "runs" / "compare"
    assert {path.name for path in written.iterdir()} == {"compare.png", "compare.md", "compare.json"}
    assert f"{written / 'compare.png'}\n" in result.stdout
    # Seeds compared one by one: compare/ lands in their group, and is no seed when the group is compared.
    seeds = [str(tmp_path / "runs" / "a" / f"seed_{seed}") for seed in (0, 1)]
    assert invoke(*seeds, "--label", "s0", "--label", "s1").exit_code == 0
    assert (tmp_path / "runs" / "a" / "compare" / "compare.json").is_file()
    result = invoke(str(tmp_path / "runs" / "a"), "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert len(json.loads(result.stdout)["groups"][0]["runs"]) == 2


def test_outputs_are_never_written_through_a_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_group(tmp_path / "runs" / "a", [1.0, 2.0])
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "compare.png").write_bytes(b"their figure")
    (tmp_path / "runs" / "compare").symlink_to(theirs)  # a linked compare/ where amago writes by default
    monkeypatch.chdir(tmp_path / "runs")
    result = invoke(str(tmp_path / "runs" / "a"))
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert f"{tmp_path / 'runs' / 'compare'} is a symlink" in line
    assert {path.name: path.read_bytes() for path in theirs.iterdir()} == {"compare.png": b"their figure"}
    # A folder named with --out may itself be a link; a file in it may not: nothing is written there.
    out = tmp_path / "out"
    out.mkdir()
    (out / "compare.png").symlink_to(theirs / "compare.png")
    result = invoke(str(tmp_path / "runs" / "a"), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "compare.png is a symlink" in result.stderr
    assert sorted(path.name for path in out.iterdir()) == ["compare.png"]
    assert (theirs / "compare.png").read_bytes() == b"their figure"
