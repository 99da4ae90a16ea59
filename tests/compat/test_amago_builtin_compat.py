"""AMAGO's env classes, exploration wrappers and gin-value classes take AMAGO's arguments and behave as AMAGO's.

What AMAGO's example scripts construct by hand (``TMazeAltPassive(corridor_length=H, penalty=-1/H)``,
``POPGymAMAGO("popgym-...-v0")``, a ``TMazeExploration(EpsilonGreedy)`` overriding ``current_eps``...) resolves to
amago's suites and wrappers under AMAGO's constructors (:mod:`amago.from_amago.envs`,
:mod:`amago.from_amago.exploration`).
"""

from __future__ import annotations

import importlib.util
import pickle

import numpy as np
import pytest

import amago
from amago._compat import NoCounterpartError
from amago.envs import AMAGOEnv
from amago.envs.exploration import BilevelEpsilonGreedy, EpsilonGreedy
from amago.from_amago import bindings
from amago.from_amago.exploration import ScriptExploration
from amago_envs.exploration import wrappers


class CorridorExploration(EpsilonGreedy):
    """AMAGO example 04's pattern: a fixed low epsilon in the middle of each episode."""

    def __init__(self, env, horizon: int = 10, eps_start: float = 1.0, eps_end: float = 0.01):
        self.horizon = horizon
        super().__init__(env, eps_start=eps_start, eps_end=eps_end, steps_anneal=100, randomize_eps=False)

    def current_eps(self, local_step):
        current = super().current_eps(local_step)
        if local_step > 0 and local_step < self.horizon - 3:  # AMAGO's scripts compare one env's step
            current[:] = 0.5 / self.horizon
        return current


def _tmaze_env(batched: int = 1) -> AMAGOEnv:
    """One T-Maze, or ``batched`` rows stepped as one env (as amago's sync pool steps its actors)."""
    from amago.envs.builtin.tmaze import TMazeAltPassive

    if batched == 1:
        return AMAGOEnv(TMazeAltPassive(corridor_length=10), env_name="tmaze")
    import gymnasium

    vector = gymnasium.vector.SyncVectorEnv(
        [lambda: TMazeAltPassive(corridor_length=10)] * batched,
        autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP,
    )
    return AMAGOEnv(vector, env_name="tmaze", batched_envs=batched)


def test_amagos_egreedy_takes_amagos_arguments_and_is_amagos_schedule():
    wrapper = EpsilonGreedy(_tmaze_env(), eps_start=0.8, eps_end=0.2, steps_anneal=10, randomize_eps=False)
    assert isinstance(wrapper, wrappers.EpsilonGreedy)
    assert wrapper.current_eps(np.array([0])) == pytest.approx([0.8])
    wrapper.global_step = 5
    assert wrapper.current_eps(np.array([3])) == pytest.approx([0.5])  # no decay within an episode
    wrapper.global_step = 50
    assert wrapper.epsilon(np.array([3])) == pytest.approx([0.2])
    assert wrapper.global_multiplier.shape == (1,)


def test_amagos_bilevel_decays_within_the_rollout_and_needs_a_horizon():
    wrapper = BilevelEpsilonGreedy(_tmaze_env(), rollout_horizon=10, randomize_eps=False)
    assert wrapper.current_eps(np.array([0])) == pytest.approx([1.0])
    assert wrapper.current_eps(np.array([5])) == pytest.approx([0.9])  # halfway from 1.0 to 0.8
    with pytest.raises(TypeError, match="rollout_horizon"):
        BilevelEpsilonGreedy(_tmaze_env())


@pytest.mark.parametrize("rows", [1, 2])
def test_a_subclass_current_eps_decides_the_noise_for_every_row(rows):
    wrapper = CorridorExploration(_tmaze_env(rows), horizon=10)
    assert wrapper.epsilon(np.zeros(rows, dtype=np.int64)) == pytest.approx([1.0] * rows)
    in_corridor = wrapper.epsilon(np.full(rows, 4))
    assert in_corridor == pytest.approx([0.05] * rows)
    if rows == 2:  # each row is asked with its own step, as AMAGO's one-env wrappers were
        assert wrapper.epsilon(np.array([0, 4])) == pytest.approx([1.0, 0.05])
    wrapper.reset()
    wrapper.step(np.zeros(rows, dtype=np.int64) if rows > 1 else 0)
    assert wrapper.global_step == 1


def test_an_experiment_picks_amagos_classes_by_name_and_builds_a_subclass_as_amago_did():
    bindings.clear_bindings()
    assert amago.Experiment(
        env="tmaze-passive", exploration_wrapper_type=EpsilonGreedy
    ).components.exploration.name == ("egreedy")
    assert (
        amago.Experiment(
            env="tmaze-passive", exploration_wrapper_type=BilevelEpsilonGreedy
        ).components.exploration.name
        == "bilevel"
    )
    experiment = amago.Experiment(env="tmaze-passive", exploration_wrapper_type=CorridorExploration)
    built = experiment.components.exploration.build(env=_tmaze_env(), seed=3)
    assert type(built) is CorridorExploration
    assert built.horizon == 10
    record = experiment.components.exploration.record()
    assert record["class"].endswith(":CorridorExploration")


def test_a_script_exploration_travels_to_workers_by_name():
    maker = ScriptExploration(CorridorExploration)
    copied = pickle.loads(pickle.dumps(maker))
    assert copied.cls is CorridorExploration


def test_tmaze_classes_take_amagos_arguments():
    from amago.envs.builtin.tmaze import TMazeAltActive, TMazeAltPassive

    passive = TMazeAltPassive(corridor_length=5, penalty=-0.2)
    active = TMazeAltActive(corridor_length=5, goal_reward=2.0)
    assert (passive.episode_length, active.episode_length) == (6, 8)
    assert (passive.penalty, active.goal_reward, active.active) == (-0.2, 2.0, True)
    with pytest.raises(ValueError, match="distract_reward"):
        TMazeAltPassive(distract_reward=1.0)
    with pytest.raises(NoCounterpartError):
        from amago.envs.builtin.tmaze import TMazeAlt  # noqa: F401


def test_mazerunner_amago_env_is_amagos():
    from amago.envs.builtin.mazerunner import MazeRunnerAMAGOEnv, MazeRunnerGymEnv

    env = MazeRunnerAMAGOEnv(maze_dim=7, num_goals=2, time_limit=20, randomized_action_space=False)
    assert env.env_name == "MazeRunner-7x7-k2"
    timestep, _ = env.reset()
    assert set(timestep.obs) == {"obs", "achieved", "goals"}
    assert timestep.obs["goals"].shape[-2:] == (2, 2)
    gym_env = MazeRunnerGymEnv(maze_dim=7, min_num_goals=1, max_num_goals=3, time_limit=10)
    assert gym_env.num_goals == 3


@pytest.mark.skipif(importlib.util.find_spec("popgym") is None, reason="needs popgym")
def test_popgym_classes_take_amagos_env_ids():
    from amago.envs.builtin.popgym_envs import MultiDomainPOPGymAMAGO, POPGymAMAGO

    env = POPGymAMAGO("popgym-RepeatPreviousEasy-v0", truncated_is_done=True)
    assert env.env_name == "popgym-RepeatPreviousEasy-v0"
    timestep, _ = env.reset()
    assert timestep.obs["observation"].shape[-1] == env.observation_space["observation"].shape[0]
    with pytest.raises(ValueError, match="no popgym env id"):
        POPGymAMAGO("RepeatPreviousEasy")
    multi = MultiDomainPOPGymAMAGO()
    multi.reset()
    assert multi.env_name.startswith("MultiDomainPOPGym-")
    assert multi.env_name != "MultiDomainPOPGym-"


@pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="needs mujoco")
def test_half_cheetah_takes_amagos_arguments_and_override():
    from amago.envs.builtin.half_cheetah_v4_vel import HalfCheetahV4_MetaVelocity

    class Fixed(HalfCheetahV4_MetaVelocity):
        def sample_target_velocity(self) -> float:
            return 2.5

    one = Fixed(velocity_reward_weight=1.0, ctrl_cost_weight=0.0)
    two = Fixed(velocity_reward_weight=2.0, ctrl_cost_weight=0.0)
    one.reset(seed=0)
    two.reset(seed=0)
    assert one.target_velocity == 2.5
    action = np.zeros(6, dtype=np.float32)
    assert two.step(action)[1] == pytest.approx(2 * one.step(action)[1])
    with pytest.raises(TypeError, match="no counterpart"):
        HalfCheetahV4_MetaVelocity(frame_skip=2)


def test_amagos_configurables_given_as_values_become_amago_options():
    from amago import cli_utils
    from amago.nets.actor_critic import ResidualActor
    from amago.nets.policy_dists import Beta
    from amago.nets.transformer import FlashAttention

    bindings.clear_bindings()
    try:
        cli_utils.use_config(
            {
                "amago.nets.traj_encoders.TformerTrajEncoder.attention_type": FlashAttention,
                "amago.agent.Agent.actor_type": ResidualActor,
                "amago.nets.actor_critic.ResidualActor.continuous_dist_type": Beta,
            },
            finalize=False,
        )
        settings = bindings.pending_settings()
    finally:
        bindings.clear_bindings()
    assert settings["traj_encoder.attention"] == "flash"
    assert settings["agent.actor.type"] == "residual"
    assert settings["agent.continuous_dist.type"] == "beta"
    with pytest.raises(NoCounterpartError, match=r"traj_encoder\.attention=flash"):
        FlashAttention()
