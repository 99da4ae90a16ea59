"""procgen suite: the missing-library message, and the two-attempt adapter against a fake of procgen's gym3 env.

Real procgen (numpy<2, gym 0.26) cannot be installed next to the jax suites; ``procgen_real/`` tests it in
its own environment and skips here.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from amago_core.config.presets import preset_for_env
from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.procgen.specs import ALL_PROCGEN_GAMES, EASY_GAMES, MEMORY_GAMES
from amago_envs.suites.procgen.two_attempt import BOX_SIZE, TwoAttemptProcgen, procgen_mode

HAS_PROCGEN = importlib.util.find_spec("procgen") is not None


class FakeProcgenGym3:
    """procgen's ``ProcgenGym3Env(num=1, ...)`` surface: ``observe() -> (reward, {"rgb": frames}, first)``.

    Every attempt lasts ``length`` actions and pays ``10`` on its last one; then, like procgen with
    ``num_levels=1``, the same level restarts and the next ``observe`` shows its first frame with
    ``first=True``. Frames are filled with ``level % 200 + 1`` so tests can tell levels apart.
    """

    def __init__(self, game: str, level: int, distribution_mode: str, length: int = 3):
        self.game, self.level, self.distribution_mode, self.length = game, level, distribution_mode, length
        self.t = 0
        self.reward = 0.0
        self.first = True
        self.closed = False

    def observe(self) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
        frame = np.full((1, 64, 64, 3), self.level % 200 + 1, dtype=np.uint8)
        return np.array([self.reward], np.float32), {"rgb": frame}, np.array([self.first])

    def act(self, action: np.ndarray) -> None:
        assert action.shape == (1,)
        self.t += 1
        done = self.t == self.length
        self.reward = 10.0 if done else 0.0
        self.first = done
        if done:
            self.t = 0

    def close(self) -> None:
        self.closed = True


def make_fake(made: list[FakeProcgenGym3]):
    def make(game: str, level: int, mode: str) -> FakeProcgenGym3:
        made.append(FakeProcgenGym3(game, level, mode))
        return made[-1]

    return make


def test_two_attempts_then_the_episode_ends_with_the_retry_box_in_between() -> None:
    made: list[FakeProcgenGym3] = []
    env = TwoAttemptProcgen(["coinrun"], (5, 9), make_game=make_fake(made), reward_scales={"coinrun": 100.0})
    frame, _ = env.reset(seed=0)
    assert frame.shape == (64, 64, 3)
    assert (frame[:BOX_SIZE, :BOX_SIZE] != 0).all()
    assert 5 <= made[-1].level <= 9
    results = [env.step(1) for _ in range(6)]
    rewards = [r[1] for r in results]
    terminated = [r[2] for r in results]
    assert rewards == [0.0, 0.0, 1000.0, 0.0, 0.0, 1000.0]  # scaled x100
    assert terminated == [False] * 5 + [True]
    for frame, *_ in results[2:]:  # from the first frame of attempt 2 on
        assert (frame[:BOX_SIZE, :BOX_SIZE] == 0).all()
        assert (frame[BOX_SIZE:, BOX_SIZE:] != 0).all()
    assert len(made) == 1  # both attempts on one level


def test_each_reset_draws_a_game_and_level_and_names_the_env_after_the_game() -> None:
    made: list[FakeProcgenGym3] = []
    env = AMAGOEnv(
        TwoAttemptProcgen(list(MEMORY_GAMES), (0, 10_000), "memory-hard", make_game=make_fake(made))
    )
    names = set()
    for seed in range(12):
        env.reset(seed=seed)
        names.add(env.env_name)
        assert made[-1].game == env.env_name
        assert made[-1].distribution_mode == "memory"
        if len(made) > 1:
            assert made[-2].closed
    assert len(names) > 2
    assert len({m.level for m in made}) > 2
    assert env.action_dim == 15


def test_horizon_truncates_and_memory_hard_falls_back_to_hard() -> None:
    env = TwoAttemptProcgen(["coinrun"], (0, 0), horizon=2, make_game=make_fake([]))
    env.reset(seed=0)
    assert env.step(0)[3] is False
    _, _, terminated, truncated, _ = env.step(0)
    assert (terminated, truncated) == (False, True)
    assert procgen_mode("memory-hard", "coinrun") == "hard"
    assert procgen_mode("memory-hard", "maze") == "memory"
    assert procgen_mode("easy", "maze") == "easy"


def test_suite_splits_levels_and_picks_task_games() -> None:
    from amago_envs.suites.procgen.specs import ProcgenConfig
    from amago_envs.suites.procgen.suite import ProcgenSuite

    suite = ProcgenSuite(ProcgenConfig(task="easy-rescaled", train_seeds=50))
    train, test = suite.make_gym_env("train"), suite.make_gym_env("test")
    assert train.games == EASY_GAMES
    assert train.level_range == (0, 50)
    assert test.level_range == (51, 10_000_000)
    assert train.reward_scales == {"coinrun": 100.0, "climber": 0.1}
    assert train.horizon == 2000
    memory = ProcgenSuite(ProcgenConfig(task="memory-hard")).make_gym_env()
    assert memory.games == ALL_PROCGEN_GAMES  # AMAGO's example 09: every game, memory mode where it has one
    assert memory.horizon == 5000
    assert memory.reward_scales == {}
    with pytest.raises(ValueError, match="unknown procgen game"):
        ProcgenConfig(games=["coinrunn"])


def test_procgen_is_listed_as_missing_with_the_extra(assert_listed_missing) -> None:
    if HAS_PROCGEN:
        pytest.skip("procgen is installed here")
    assert_listed_missing(
        "procgen", 'pip install "amago-envs[procgen]"', build="procgen", match="amago-envs\\[procgen\\]"
    )


def test_presets_follow_example_09() -> None:
    easy, memory = preset_for_env("procgen-easy"), preset_for_env("procgen-memory-hard")
    assert easy["run"]["max_seq_len"] == 256
    assert easy["replay"]["traj_save_len"] == 4 * 256
    assert easy["schedule"]["val_timesteps_per_epoch"] == 5 * 2000 + 1
    assert memory["schedule"]["val_timesteps_per_epoch"] == 5 * 5000 + 1
    assert easy["tstep_encoder"]["kind"] == "cnn"


def test_spec_and_adapter_modules_import_no_procgen(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.procgen.specs", ("torch", "gymnasium", "procgen", "gym"))
    assert_imports_clean("amago_envs.suites.procgen.suite", ("procgen", "gym", "gym3"))
