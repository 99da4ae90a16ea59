"""xland suite: offline rulesets, k-episode rollouts in one jax batch, the benchmark message, a CLI epoch."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("xminigrid", reason='needs the xland extra: pip install "amago-envs[xland]"')


from amago_core.config.presets import preset_for_env
from amago_core.plugins.registry import registries
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX
from amago_envs.suites.xland.rulesets import BenchmarkUnavailableError, generate_rulesets

# The CLI test uses the same shapes, so it reuses the programs compiled here (an XLand compile takes seconds).
SMALL = {"num_envs": 2, "k_episodes": 2, "max_steps": 4, "num_rulesets": 40, "seed": 0}


def make(task: str = "local-trivial", **options):
    return registries().env_suites.build({"kind": "xland", "task": task, **{**SMALL, **options}})


def test_generated_chains_place_the_leaves_and_make_the_goal_object() -> None:
    rulesets = generate_rulesets(50, chain_depth=2, distractors=2, seed=1)
    assert rulesets.rules.shape == (50, 2, 7)
    assert rulesets.init_tiles.shape == (50, 5, 2)
    for goal, rules, placed in zip(rulesets.goals, rulesets.rules, rulesets.init_tiles, strict=True):
        placed_set = {tuple(t) for t in placed}
        assert len(placed_set) == 5  # distinct objects, no padding
        goal_object = tuple(goal[1:3])
        assert goal[0] in (1, 3)
        assert goal_object not in placed_set  # it must be made
        assert tuple(rules[0, 5:7]) == goal_object
        made_from = tuple(rules[0, 1:3])
        assert tuple(rules[1, 5:7]) == made_from  # the second rule makes the first rule's input
        assert {tuple(rules[0, 3:5]), tuple(rules[1, 1:3]), tuple(rules[1, 3:5])} <= placed_set
    again = generate_rulesets(50, chain_depth=2, distractors=2, seed=1)
    np.testing.assert_array_equal(again.rules, rulesets.rules)


def test_train_and_test_rulesets_do_not_overlap() -> None:
    suite = make("local-small")
    train, test = suite.rulesets("train"), suite.rulesets("test")
    assert len(train) == 32
    assert len(test) == 8
    train_rows = {r.tobytes() for r in np.concatenate([train.goals, train.init_tiles.reshape(32, -1)], 1)}
    test_rows = {r.tobytes() for r in np.concatenate([test.goals, test.init_tiles.reshape(8, -1)], 1)}
    assert not train_rows & test_rows


@pytest.mark.slow
def test_k_episode_rollouts_follow_the_amagoenv_contract() -> None:
    env = make("local-trivial", grid_size=9).make_env("train")
    assert env.env_name == "XLand-local-trivial-R1-9x9"
    assert env.batched_envs == 2
    assert set(env.observation_space.spaces) == {"grid", "direction_done", "goal"}
    assert env.observation_space["grid"].shape == (5, 5, 2)
    assert env.action_dim == 6
    timestep, _ = env.reset()
    assert timestep.obs["grid"].shape == (2, 5, 5, 2)
    assert (timestep.obs["direction_done"][:, 4] == 0).all()
    np.testing.assert_array_equal(timestep.obs["direction_done"][:, :4].sum(1), 1.0)
    rng = np.random.default_rng(0)
    rewards = np.zeros(2)
    episode_flags = 0
    finished = 0
    for _ in range(60):
        timestep, reward, terminated, truncated, info = env.step(rng.integers(0, 6, size=2))
        np.testing.assert_array_equal(terminated, truncated)
        rewards += reward
        episode_flags += int(timestep.obs["direction_done"][:, 4].sum())
        if terminated.any():
            finished += int(terminated.sum())
            returns = sum(info[f"{AMAGO_ENV_LOG_PREFIX} Ep {n} Return"] for n in (1, 2))
            np.testing.assert_allclose(returns[terminated], rewards[terminated], atol=1e-5)
            np.testing.assert_array_equal(info[f"_{AMAGO_ENV_LOG_PREFIX} Ep 1 Return"], terminated)
            assert (env.step_count[terminated] == 0).all()
            assert (
                timestep.obs["direction_done"][terminated, 4] == 0
            ).all()  # a new rollout, not a new episode
            rewards[terminated] = 0.0
    # Each rollout holds k=2 episodes of at most 4 steps, so in 60 steps every row finished at least 7.
    assert finished >= 2 * 7
    assert episode_flags >= finished  # one "new episode" flag inside every finished rollout


def test_missing_benchmark_fails_with_one_line_on_how_to_prefetch(tmp_path, monkeypatch) -> None:
    import xminigrid.benchmarks

    monkeypatch.setattr(xminigrid.benchmarks, "DATA_PATH", str(tmp_path))
    suite = make("small-1m")
    with pytest.raises(BenchmarkUnavailableError) as error:
        suite.make_env("train")
    message = str(error.value)
    assert "\n" not in message
    assert "xminigrid.load_benchmark('small-1m')" in message
    assert "xland-local-small" in message


def test_unknown_layout_names_the_registered_ones() -> None:
    with pytest.raises(ValueError, match="XLand-MiniGrid-R1-9x9"):
        make(grid_size=10).make_env()


def test_preset_is_already_vectorised_with_whole_rollouts_per_file() -> None:
    preset = preset_for_env("xland-local-small")
    assert preset["rollout"]["env_mode"] == "already_vectorized"
    assert preset["rollout"]["parallel_actors"] == preset["env"]["num_envs"]
    assert preset["replay"]["stagger_traj_file_lengths"] is False
    assert preset["replay"]["traj_save_len"] == 15 * 243 + 1


def test_spec_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.xland.specs", ("torch", "gymnasium", "jax", "xminigrid"))


def test_amago_run_one_tiny_epoch(tmp_path, run_tiny) -> None:
    overrides = [
        "env.num_envs=2",
        "env.k_episodes=2",
        "env.max_steps=4",
        "env.num_rulesets=40",
        "rollout.parallel_actors=2",
        "run.max_seq_len=9",
        "replay.traj_save_len=9",
        "tstep_encoder.cnn_channels=[8,8,8]",
        "tstep_encoder.d_output=16",
        "traj_encoder.kind=rnn",
        "schedule.epochs=1",
        "schedule.start_learning_at_epoch=0",
        "schedule.train_timesteps_per_epoch=9",
        "schedule.train_batches_per_epoch=2",
        "schedule.val_interval=1",
        "schedule.val_timesteps_per_epoch=9",
        "optim.batch_size=4",
        "logging.plot=false",
    ]
    run_tiny("xland-local-trivial", overrides=overrides, name="xl")
    files = list((tmp_path / "xl" / "buffer" / "fifo").glob("XLand-local-trivial-R1-9x9_*"))
    assert files
    records = [json.loads(line) for line in (tmp_path / "xl" / "metrics.jsonl").read_text().splitlines()]
    assert any(any("Ep 1 Return" in key for key in record) for record in records)
