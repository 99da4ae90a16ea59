"""``ale-multigame`` pins actors to games round-robin (AMAGO's example 08), so every game gets its share of data."""

from __future__ import annotations

import json
import pickle

import pytest

pytest.importorskip("ale_py", reason="the ale extra is not installed")

SMALL = {"resolution": (42, 42)}
"""Small frames: these tests look at which game each actor plays, not at the pixels."""


def games_played(env, episodes: int) -> set[str]:
    names = set()
    for seed in range(episodes):
        env.reset(seed=seed)
        names.add(env.env_name)
    return names


@pytest.mark.slow
def test_actor_i_plays_game_i_mod_n_in_every_episode(build) -> None:
    suite = build("ale-multigame", games=["Pong", "Breakout"], **SMALL)
    makers = suite.actor_makers("val", 4)
    pickle.loads(pickle.dumps(makers))  # the async pool ships them to its workers
    envs = [make() for make in makers]
    try:
        assert [games_played(env, 3) for env in envs] == [{"Pong"}, {"Breakout"}, {"Pong"}, {"Breakout"}]
    finally:
        for env in envs:
            env.close()


@pytest.mark.slow
def test_the_loop_pools_keep_each_row_on_its_game_across_resets(build) -> None:
    from amago_core.config.experiment import ExperimentConfig
    from amago_core.experiment.pools import build_pool, makers_per_actor, suite_makers

    suite = build("ale-multigame", games=["Pong", "Breakout"], **SMALL)
    config = ExperimentConfig.model_validate({"rollout": {"parallel_actors": 4}})
    makers = makers_per_actor(suite_makers(suite)["val"], 4, "make_val_env")
    pool = build_pool(config, makers, role="val", process=0)
    try:
        for seed in range(3):
            pool.reset(seed=seed)
            rows = [name for env in pool.pool.envs for name in env.env.env_names]
            assert rows == ["Pong", "Breakout", "Pong", "Breakout"], seed
    finally:
        pool.close()


def test_random_assignment_draws_a_game_per_episode(build) -> None:
    suite = build("ale-multigame", games=["Pong", "Breakout"], game_assignment="random", **SMALL)
    (env,) = (make() for make in suite.actor_makers("train", 3)[:1])
    try:
        assert games_played(env, 6) == {"Pong", "Breakout"}
    finally:
        env.close()


def test_counts_that_do_not_divide_fail_naming_both_and_the_nearest_valid_ones(build) -> None:
    with pytest.raises(ValueError, match=r"12 actors do not divide among 10 games; use 10 or 20 actors"):
        build("ale-multigame").actor_makers("train", 12)
    with pytest.raises(ValueError, match=r"3 actors do not divide among 4 games; use 4 actors"):
        build("ale-multigame", games=["Pong", "Breakout", "Boxing", "Qbert"]).actor_makers("train", 3)
    assert len(build("ale-multigame", game_assignment="random").actor_makers("train", 3)) == 3
    assert len(build("ale-Pong").actor_makers("train", 3)) == 3  # one game: nothing to pin
    with pytest.raises(ValueError, match="Use one of: train, val, test"):
        build("ale-multigame").actor_makers("trian", 10)


@pytest.mark.parametrize(("actors", "games", "near"), [(12, 10, [10, 20]), (2, 10, [10]), (7, 3, [6, 9])])
def test_actor_counts_near(actors: int, games: int, near: list[int]) -> None:
    from amago_envs.suites.ale.suite import actor_counts_near

    assert actor_counts_near(actors, games) == near


def test_the_preset_runs_one_actor_per_default_game(dry_run) -> None:
    config = dry_run("ale-multigame")
    assert config["rollout"]["parallel_actors"] == len(config["env"]["games"]) == 10
    assert config["env"]["game_assignment"] == "round_robin"
    assert dry_run("ale-Pong")["rollout"]["parallel_actors"] == 12  # the default: single games pin nothing


def test_a_run_collects_every_game_equally(tmp_path, run_tiny, tiny_gru) -> None:
    """2 actors, 2 games, 8 steps each: 8 frames per game (a random game per episode would not split evenly)."""
    overrides = ["env.resolution=[42,42]", 'env.games=["Pong","Breakout"]']
    summary = run_tiny("ale-multigame", *tiny_gru("img_features"), overrides=overrides)
    assert summary["total_frames"] == 16
    (metrics_file,) = tmp_path.glob("*/metrics.jsonl")
    records = [json.loads(line) for line in metrics_file.read_text().splitlines()]
    frames = {
        key: value for record in records for key, value in record.items() if key.startswith("total_frames-")
    }
    assert frames == {"total_frames-Pong": 8, "total_frames-Breakout": 8}


def test_the_cli_reports_a_count_that_does_not_divide_in_one_line(tmp_path, tiny_gru) -> None:
    from typer.testing import CliRunner

    from amago_core.cli.app import app

    args = ["run", "--env", "ale-multigame", *tiny_gru("img_features"), "-o", "rollout.parallel_actors=3"]
    args += ["-o", "env.resolution=[42,42]", "-o", f"run.ckpt_base_dir={tmp_path}", "--quiet"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output  # a config error, found before the run starts
    errors = [line for line in result.output.splitlines() if line.startswith("amago: error:")]
    assert len(errors) == 1, result.output
    assert "3 actors do not divide among 10 games; use 10 actors" in errors[0]
    assert not list(tmp_path.iterdir())  # no run folder was made
