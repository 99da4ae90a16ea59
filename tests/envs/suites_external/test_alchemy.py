"""alchemy suite: the missing-library message, and the dm_env -> gymnasium adapter against a fake dm_env env."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.config.presets import preset_for_env
from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.alchemy.specs import ALCHEMY_INSTALL_HINT

dm_env = pytest.importorskip("dm_env", reason="the adapter tests build their fake from dm_env's own types")
from dm_env import specs  # noqa: E402

from amago_envs.suites.alchemy.dm_env_adapter import DmEnvToGymnasium, spec_to_space  # noqa: E402

HAS_ALCHEMY = importlib.util.find_spec("dm_alchemy") is not None


class FakeTrialEnv(dm_env.Environment):
    """A dm_env env shaped like symbolic Alchemy: a dict obs with one vector, discrete actions, fixed length.

    The observation is ``[seed % 7, step]``; reward is ``action`` on every step but the first (None, as in
    dm_env); the episode lasts ``length`` steps and ends with discount 0 (or 1 when ``time_limit``).
    """

    def __init__(self, seed: int, length: int = 3, time_limit: bool = False):
        self.seed = seed
        self.length = length
        self.time_limit = time_limit
        self.closed = False
        self.t = 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {"symbolic_obs": np.array([self.seed % 7, self.t], dtype=np.float32)}

    def reset(self) -> dm_env.TimeStep:
        self.t = 0
        return dm_env.restart(self._obs())

    def step(self, action: int) -> dm_env.TimeStep:
        self.t += 1
        if self.t < self.length:
            return dm_env.transition(float(action), self._obs())
        if self.time_limit:
            return dm_env.truncation(float(action), self._obs())
        return dm_env.termination(float(action), self._obs())

    def observation_spec(self) -> dict[str, specs.Array]:
        return {"symbolic_obs": specs.Array((2,), np.float32, name="symbolic_obs")}

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(5, name="action")

    def close(self) -> None:
        self.closed = True


def test_alchemy_is_listed_as_missing_with_the_git_install_command(assert_listed_missing) -> None:
    if HAS_ALCHEMY:
        pytest.skip("dm_alchemy is installed here")
    assert ALCHEMY_INSTALL_HINT == "pip install git+https://github.com/deepmind/dm_alchemy"
    assert_listed_missing("alchemy", ALCHEMY_INSTALL_HINT, build="alchemy", match="dm_alchemy")


def test_amago_run_fails_with_one_line_when_dm_alchemy_is_missing(tmp_path) -> None:
    if HAS_ALCHEMY:
        pytest.skip("dm_alchemy is installed here")
    result = CliRunner().invoke(
        app, ["run", "--env", "alchemy", "--quiet", "-o", f"run.ckpt_base_dir={tmp_path}"]
    )
    assert result.exit_code != 0
    assert ALCHEMY_INSTALL_HINT in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert "Traceback" not in result.output


def test_adapter_spaces_follow_the_dm_env_specs() -> None:
    env = DmEnvToGymnasium(lambda seed: FakeTrialEnv(seed), env_name="Fake")
    assert env.observation_space.shape == (2,)  # the single dict entry is unwrapped
    assert env.action_space.n == 5
    bounded = spec_to_space(specs.BoundedArray((3,), np.int32, minimum=0, maximum=4))
    assert bounded.low.tolist() == [0, 0, 0]
    assert bounded.high.tolist() == [4, 4, 4]
    both = spec_to_space({"a": specs.Array((1,), np.float32), "b": specs.DiscreteArray(3)})
    assert set(both.spaces) == {"a", "b"}
    with pytest.raises(TypeError, match="cannot convert"):
        spec_to_space([specs.Array((1,), np.float32)])


def test_every_reset_builds_a_new_seeded_env_and_closes_the_old_one() -> None:
    made: list[FakeTrialEnv] = []

    def make(seed: int) -> FakeTrialEnv:
        made.append(FakeTrialEnv(seed))
        return made[-1]

    env = DmEnvToGymnasium(make, env_name="Fake")
    assert made[0].closed  # the probe used for the spaces
    env.reset(seed=1)
    first_seed = made[-1].seed
    env.reset()
    assert made[-2].closed
    assert made[-1].seed != first_seed
    again = DmEnvToGymnasium(make, env_name="Fake")
    again.reset(seed=1)
    assert made[-1].seed == first_seed  # reproducible from the gymnasium seed


def test_rewards_and_episode_ends_are_translated() -> None:
    env = DmEnvToGymnasium(lambda seed: FakeTrialEnv(seed, length=3), env_name="Fake")
    obs, _ = env.reset(seed=0)
    assert obs[1] == 0
    results = [env.step(a) for a in (1, 2, 4)]
    assert [r[1] for r in results] == [1.0, 2.0, 4.0]
    assert [r[2] for r in results] == [False, False, True]
    assert [r[3] for r in results] == [False, False, False]
    limited = DmEnvToGymnasium(lambda seed: FakeTrialEnv(seed, length=1, time_limit=True), env_name="Fake")
    limited.reset(seed=0)
    _, _, terminated, truncated, _ = limited.step(0)
    assert (terminated, truncated) == (False, True)


def test_the_adapter_fits_the_amagoenv_contract() -> None:
    env = AMAGOEnv(DmEnvToGymnasium(lambda seed: FakeTrialEnv(seed), env_name="Fake"), env_name="Fake")
    timestep, _ = env.reset(seed=3)
    assert timestep.obs["observation"].shape == (1, 2)
    timestep, reward, *_ = env.step(np.array([3]))
    assert reward.tolist() == [3.0]
    assert timestep.prev_action.tolist() == [[0, 0, 0, 1, 0]]


def test_preset_follows_example_06() -> None:
    preset = preset_for_env("alchemy")
    assert preset["exploration"] == {"kind": "bilevel", "rollout_horizon": 200, "steps_anneal": 2_500_000}
    assert preset["run"]["max_seq_len"] == preset["replay"]["traj_save_len"] == 201


def test_spec_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.alchemy.specs", ("torch", "gymnasium", "dm_env", "dm_alchemy"))
