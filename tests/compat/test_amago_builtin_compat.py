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
from amago.envs.exploration import BilevelEpsilonGreedy, EpsilonGreedy, ExplorationWrapper
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


def _needs(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the suite needs the module {module!r}, which is not installed")


def test_gymnax_compatibility_takes_amagos_arguments_and_steps_a_batch():
    _needs("gymnax")
    import gymnax

    from amago.envs.builtin.gymnax_envs import GymnaxCompatability, GymnaxCompatibility

    assert GymnaxCompatability is GymnaxCompatibility  # the tutorial's spelling
    env, params = gymnax.make("MemoryChain-bsuite")
    vec_env = GymnaxCompatibility(env, num_envs=3, params=params)  # AMAGO's example 02 and tutorial call
    assert vec_env.observation_space == vec_env.single_observation_space  # unbatched spaces, as AMAGO's
    amago_env = AMAGOEnv(env=vec_env, env_name="gymnax_MemoryChain-bsuite", batched_envs=3)
    timestep, _ = amago_env.reset()
    assert isinstance(timestep.obs["observation"], np.ndarray)
    assert timestep.obs["observation"].shape[0] == 3
    _, reward, terminated, truncated, _ = amago_env.step(np.zeros(3, dtype=np.int64))
    assert reward.shape == terminated.shape == truncated.shape == (3,)
    with pytest.raises(ValueError, match=r"gymnax\.make"):
        GymnaxCompatibility(object(), num_envs=2)


def test_metaworld_takes_amagos_arguments_and_names_the_task():
    _needs("metaworld")
    from amago.envs.builtin.metaworld_ml import Metaworld

    env = Metaworld("reach-v2", "train", 1)  # AMAGO's ML1 name (v2) runs the installed Meta-World's v3 task
    timestep, _ = env.reset()
    assert env.env_name == "reach-v3"
    assert timestep.obs["observation"].shape[-1] == 40  # Meta-World's 39 + the soft-reset flag
    action = np.zeros((1, 4), dtype=np.float32)
    for _ in range(499):
        assert not env.step(action)[2].any()
    _, _, terminated, _, info = env.step(action)  # one trial of 500 steps: the meta-episode ends
    assert terminated.all()
    assert any(key.endswith("Total Successes") for key in info)
    assert Metaworld("reach-v2", "test", k_shots=2).env.k_episodes == 2  # examples 07/11 pass k_shots
    with pytest.raises(TypeError, match="k_episodes"):
        Metaworld("reach-v2", "train")


def test_atari_classes_take_amagos_arguments():
    _needs("ale_py", "cv2")
    from amago.envs.builtin.ale_retro import ALE, AtariAMAGOWrapper, AtariGame

    # AMAGO example 08's call
    game = AtariGame(
        game="Pong",
        action_space="discrete",
        terminal_on_life_loss=False,
        version="v5",
        frame_skip=5,
        grayscale=False,
        sticky_action_prob=0.25,
        clip_rewards=False,
    )
    env = AtariAMAGOWrapper(game)
    timestep, _ = env.reset()
    assert env.env_name == "Pong"
    assert timestep.obs["observation"].shape == (1, 3, 84, 84)  # colour, channels first
    assert env.action_space.n == 18
    assert env.step(np.array([1]))[1].shape == (1,)
    buttons = AtariGame("Pong", action_space="multibinary", grayscale=True, channels_last=True)
    assert buttons.observation_space.shape == (84, 84, 1)
    assert buttons.action_space.n == 5
    multi = AtariAMAGOWrapper(ALE(["Pong", "Breakout"]))
    multi.reset()
    assert multi.env_name in {"Pong", "Breakout"}
    with pytest.raises(ValueError, match="v5"):
        AtariGame("Pong", version="v4")
    with pytest.raises(TypeError, match="AtariGame or ALE"):
        AtariAMAGOWrapper(TMazeEnv())


def TMazeEnv():
    from amago.envs.builtin.tmaze import TMazeAltPassive

    return TMazeAltPassive(corridor_length=3)


def test_babyai_takes_amagos_task_names_and_seed_range():
    _needs("minigrid", "cv2")
    from amago.envs.builtin.babyai import ALL_BABYAI_TASKS, BANNED_BABYAI_TASKS, MultitaskMetaBabyAI

    assert "BabyAI-GoToLocal-v0" in ALL_BABYAI_TASKS
    assert not [t for t in ALL_BABYAI_TASKS if any(b in t for b in BANNED_BABYAI_TASKS)]
    # AMAGO example 10's call, with a one-seed range (both ends included, as AMAGO's random.randint)
    env = MultitaskMetaBabyAI(
        task_names=["BabyAI-GoToLocal-v0"], seed_range=(7, 7), k_episodes=2, observation_type="full-grid"
    )
    assert env.current_task == "GoToLocal-v0"  # what example 10 names its AMAGOEnv by
    first, _ = env.reset()
    again, _ = env.reset()
    assert first["image"].shape == (22, 22, 3)
    assert np.array_equal(first["image"], again["image"])  # the one layout seed
    assert first["mission"].shape == (9,)
    assert first["extra"].shape == (5,)
    with pytest.raises(ValueError, match="obs_kind"):
        MultitaskMetaBabyAI(["GoToLocal-v0"], observation_type="pixels")


def test_xland_takes_amagos_arguments_on_a_benchmark_file(tmp_path, monkeypatch):
    _needs("xminigrid")
    import bz2

    from xminigrid import benchmarks

    from amago.envs.builtin.xland_minigrid import XLandMinigridVectorizedGym
    from amago_envs.suites.xland.rulesets import BenchmarkUnavailableError, generate_rulesets

    monkeypatch.setattr(benchmarks, "DATA_PATH", str(tmp_path))
    with pytest.raises(BenchmarkUnavailableError, match="small-1m"):
        XLandMinigridVectorizedGym(parallel_envs=2, rooms=1, grid_size=9)
    pool = generate_rulesets(20, 1, 1, seed=0)  # a small stand-in for the downloaded small-1m file
    with bz2.open(tmp_path / benchmarks.NAME2HFFILENAME["small-1m"], "wb") as file:
        pickle.dump({"goals": pool.goals, "rules": pool.rules, "init_tiles": pool.init_tiles}, file)
    # AMAGO example 11's call (it passes k_shots, an older name of k_episodes)
    env = XLandMinigridVectorizedGym(
        parallel_envs=2,
        rooms=1,
        grid_size=9,
        k_shots=2,
        ruleset_benchmark="small-1m",
        train_test_split="test",
    )
    assert (env.k_episodes, env.parallel_envs, env.rooms, env.grid_size) == (2, 2, 1, 9)
    assert env.suggested_max_seq_len == (env.max_steps_per_episode + 1) * 2
    amago_env = AMAGOEnv(env, env_name="XLandMiniGrid-small-1m-R1-9x9", batched_envs=env.parallel_envs)
    timestep, _ = amago_env.reset()
    assert set(timestep.obs) == {"grid", "direction_done", "goal"}
    assert timestep.obs["grid"].shape[0] == 2
    assert amago_env.step(np.zeros(2, dtype=np.int64))[1].shape == (2,)


def test_symbolic_alchemy_without_dm_alchemy_names_the_install():
    if importlib.util.find_spec("dm_alchemy") is not None:
        from amago.envs.builtin.alchemy import SymbolicAlchemy

        env = AMAGOEnv(SymbolicAlchemy(), env_name="dm_symbolic_alchemy")
        env.reset()
        assert env.step(np.array([0]))[1].shape == (1,)
        return
    with pytest.raises(ImportError) as raised:
        from amago.envs.builtin.alchemy import SymbolicAlchemy
    message = str(raised.value)
    assert "pip install git+https://github.com/deepmind/dm_alchemy" in message
    assert "\n" not in message


class ZeroNoise(ExplorationWrapper):
    """AMAGO's extension point: a script's wrapper that decides the action itself."""

    def __init__(self, amago_env):
        super().__init__(amago_env)
        self.seen: list[tuple[tuple[int, ...], list[int]]] = []

    def add_exploration_noise(self, action, local_step):
        self.seen.append((action.shape, local_step.tolist()))
        return np.zeros_like(action)


class EveryOtherStepRandom(EpsilonGreedy):
    """A subclass of AMAGO's EpsilonGreedy overriding add_exploration_noise, calling AMAGO's noise."""

    def add_exploration_noise(self, action, local_step):
        if (local_step % 2 == 0).all():
            return action  # no noise on even steps
        return super().add_exploration_noise(action, local_step)


@pytest.mark.parametrize("rows", [1, 2])
def test_an_exploration_wrapper_subclass_decides_the_action(rows):
    wrapper = ZeroNoise(_tmaze_env(rows))
    wrapper.reset()
    action = np.full(rows, 3, dtype=np.int64) if rows > 1 else np.array([3])
    assert np.array_equal(wrapper.action(action), np.zeros_like(action))
    wrapper.step(action)
    assert wrapper.seen[0] == ((rows, 1), [0] * rows)  # AMAGO's (batched_envs, dim) and (batched_envs,)
    assert wrapper.seen[1][1] == [0] * rows
    assert wrapper.env.step_count.tolist() == [1] * rows
    noisy = EveryOtherStepRandom(_tmaze_env(rows), eps_start=1.0, eps_end=1.0, randomize_eps=False)
    noisy.reset()
    assert np.array_equal(noisy.add_noise(action), action)  # step 0: the override skipped the noise
    noisy.env.step_count[:] = 1
    draws = np.stack([noisy.add_noise(action) for _ in range(40)])
    assert (draws != 3).any()  # eps = 1 on odd steps: AMAGO's noise (random actions)


def test_an_experiment_builds_a_scripts_exploration_wrapper_and_by_its_registered_name(tmp_path):
    from amago import get_exploration_cls, register_exploration
    from amago_core.plugins import EXPLORATIONS, in_process

    experiment = amago.Experiment(env="tmaze-passive", exploration_wrapper_type=ZeroNoise)
    built = experiment.components.exploration.build(env=_tmaze_env(), seed=3)
    assert type(built) is ZeroNoise
    register_exploration("zero_noise_test")(ZeroNoise)
    try:
        assert get_exploration_cls("zero_noise_test") is ZeroNoise
        named = amago.Experiment(env="tmaze-passive", exploration_wrapper_type="zero_noise_test")
        assert type(named.components.exploration.build(env=_tmaze_env(), seed=1)) is ZeroNoise
    finally:
        in_process.remove(EXPLORATIONS, "zero_noise_test")


def test_a_base_egreedy_binding_reaches_a_scripts_subclass_through_gin():
    gin = pytest.importorskip("gin")
    from amago import cli_utils

    @gin.configurable
    class HalfNoise(EpsilonGreedy):  # passes eps_end itself; randomize_eps comes from gin
        def __init__(self, env, eps_start: float = 0.5):
            super().__init__(env, eps_start=eps_start, eps_end=0.1)

    bindings.clear_bindings()
    gin.clear_config()
    try:
        cli_utils.use_config(
            {
                "amago.envs.exploration.EpsilonGreedy.randomize_eps": False,
                "EpsilonGreedy.eps_end": 0.9,  # HalfNoise passes eps_end: gin ignores this, as in AMAGO
                "HalfNoise.eps_start": 0.25,
            },
            finalize=False,
        )
        built = HalfNoise(_tmaze_env())
        assert built.randomize_eps is False
        assert built.schedule.eps_end_end == 0.1
        assert built.current_eps(np.array([0])) == pytest.approx([0.25])
        maker = amago.Experiment(
            env="tmaze-passive", exploration_wrapper_type=HalfNoise
        ).components.exploration
        assert maker.build(env=_tmaze_env(), seed=0).randomize_eps is False  # the Experiment's build too
    finally:
        bindings.clear_bindings()
        gin.clear_config()
    assert HalfNoise(_tmaze_env()).randomize_eps is True  # AMAGO's default once the binding is gone


def test_amago_env_reads_unknown_attributes_from_the_env_as_amagos_wrapper_did():
    # Example 11 reads `make_train_env().suggested_max_seq_len`: AMAGO's AMAGOEnv (a gymnasium 0.29 wrapper)
    # forwarded attribute reads to the env; private names never go through.
    import pickle

    import gymnasium as gym

    from amago.envs import AMAGOEnv

    inner = gym.make("CartPole-v1")
    inner.suggested_max_seq_len = 17
    env = AMAGOEnv(inner, env_name="cartpole")
    assert env.suggested_max_seq_len == 17
    with pytest.raises(AttributeError, match="no attribute '_hidden'"):
        _ = env._hidden
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = env.no_such_thing
    assert pickle.loads(pickle.dumps(AMAGOEnv(gym.make("CartPole-v1"), env_name="c"))).env_name == "c"
