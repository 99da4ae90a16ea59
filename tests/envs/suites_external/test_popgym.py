"""The ``popgym`` suite: every task builds and steps, AMAGO's wrappers, MultiDomainPOPGym, the CLI, hygiene."""

from __future__ import annotations

import numpy as np
import pytest

from amago_core.plugins.errors import MissingRequirementError
from amago_envs.suites.popgym.specs import MULTIDOMAIN_TASKS, POPGYM, POPGYM_CLASSES, POPGYM_TASKS


def test_tasks_cover_every_popgym_class() -> None:
    import popgym.envs

    classes = {cls.__name__ for cls in popgym.envs.ALL}
    listed = set(POPGYM_CLASSES.values())
    if not popgym.envs.has_mazelib():
        listed = {name for name in listed if not name.startswith("Labyrinth")}
    assert listed == classes
    assert len(POPGYM_TASKS) == 3 * 16 + 1
    assert len(MULTIDOMAIN_TASKS) == 27
    assert set(MULTIDOMAIN_TASKS) <= set(POPGYM_CLASSES)


@pytest.mark.parametrize(
    "task",
    [
        "repeat-previous-easy",
        "count-recall-medium",
        "battleship-easy",
        "concentration-easy",
        "position-only-pendulum-easy",
    ],
)
def test_task_obs_is_flat_float_with_timer(task: str, build) -> None:
    env = build(f"popgym-{task}").make_env("train")
    assert env.env_name == f"popgym-{task}"
    timestep, _ = env.reset(seed=0)
    obs = timestep.obs["observation"]
    assert obs.dtype == np.float32
    assert obs.ndim == 2
    assert obs[0, -1] == 0.0  # the timer starts at 0
    action = np.zeros((1,), dtype=np.int64) if env.is_discrete else np.zeros((1, 1), dtype=np.float32)
    timestep, *_ = env.step(action)
    assert timestep.obs["observation"][0, -1] == pytest.approx(1 / 1000)


def test_repeat_previous_one_hot_and_rl2_through_a_sequence_env(build, play) -> None:
    env = build("popgym-repeat-previous-easy").make_env("train")
    timestep, _ = env.reset(seed=0)
    cards = timestep.obs["observation"][0, :-1]
    assert set(np.unique(cards)) <= {0.0, 1.0}
    assert cards.sum() >= 1.0  # one-hot blocks
    timestep, seq = play(env, 60)
    # rl2 = [previous reward, previous action one-hot]
    assert timestep.rl2().shape == (1, 1 + env.action_space.n)
    assert seq.return_history["popgym-repeat-previous-easy"], "an episode of 52 steps should have ended"


def test_truncated_is_done_terminates_on_the_time_limit(build) -> None:
    for truncated_is_done in (True, False):
        env = build("popgym-multiarmed-bandit-easy", truncated_is_done=truncated_is_done).make_gym_env()
        env.reset(seed=0)
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, _ = env.step(0)
        assert truncated
        assert terminated is truncated_is_done


def test_multidomain_names_envs_per_task_and_hides_warmup_rewards(build) -> None:
    env = build("popgym-multidomain").make_env("train")
    names = set()
    for seed in range(8):
        env.reset(seed=seed)
        names.add(env.env_name)
    assert len(names) > 1
    assert all(name.removeprefix("popgym-multidomain-") in MULTIDOMAIN_TASKS for name in names)
    gym_env = build("popgym-multidomain", warmup_episodes=1).make_gym_env()
    obs, _ = gym_env.reset(seed=3)
    assert obs.shape == gym_env.observation_space.shape
    rewards, episodes, done = [], [], False
    while not done:
        obs, reward, done, _, _ = gym_env.step(gym_env.action_space.n - 1)  # often invalid: replaced
        rewards.append(reward)
        episodes.append(obs[-3])
    warmup = [r for r, e in zip(rewards, episodes, strict=True) if e == 0.0]
    assert all(r == 0.0 for r in warmup)
    assert episodes[-1] == 1.0  # the env ends with the scored episode


def test_cli_runs_one_tiny_epoch_with_the_preset(tmp_path, dry_run, run_tiny, tiny_gru) -> None:
    config = dry_run("popgym-multidomain")
    assert config["agent"]["reward_multiplier"] == 200.0
    assert config["run"]["max_seq_len"] == 2000
    assert config["traj_encoder"]["pos_emb"] == "learnable"
    assert len(config["agent"]["multigammas"]) == 18
    multitask = dry_run("popgym-multidomain", "--agent", "multitask")["agent"]
    assert (multitask["reward_multiplier"], multitask["output_bins"], len(multitask["multigammas"])) == (
        200.0,
        64,
        18,
    )
    summary = run_tiny("popgym-repeat-previous-easy", *tiny_gru())
    assert summary["total_frames"] == 16
    (metrics_file,) = tmp_path.glob("*/metrics.jsonl")
    assert "total_frames-popgym-repeat-previous-easy" in metrics_file.read_text()


def test_specs_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.popgym.specs", ("torch", "gymnasium", "popgym"))


def test_missing_popgym_reports_the_install_hint(assert_missing_extra) -> None:
    assert_missing_extra(POPGYM, "popgym", "popgym", build={"kind": "popgym"})


def test_labyrinth_without_mazelib_names_the_package(monkeypatch, build) -> None:
    import popgym.envs

    monkeypatch.delattr(popgym.envs, "LabyrinthEscapeEasy", raising=False)
    with pytest.raises(MissingRequirementError, match="pip install mazelib"):
        build("popgym-labyrinth-escape-easy").make_env()


def test_unknown_task_suggests_a_close_one(build) -> None:
    with pytest.raises(ValueError, match="repeat-previous-easy"):
        build("popgym-repeat-previos-easy")


@pytest.mark.parametrize(
    "task",
    [task for task in POPGYM_CLASSES if not task.startswith("labyrinth")],
)
def test_episode_steps_bound_every_played_episode(task: str, build) -> None:
    """The bound sizing uses (read from popgym's classes) is never exceeded, and is tight for fixed-length games."""
    from amago_envs.suites.popgym.specs import POPGymConfig

    bound = POPGymConfig(task=task).episode_steps()
    assert bound is not None
    env = build(f"popgym-{task}").make_gym_env()
    env.action_space.seed(0)
    longest = 0
    for seed in range(3):
        env.reset(seed=seed)
        steps, done = 0, False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            done = terminated or truncated
            assert steps <= bound, f"{task}: episode longer than episode_steps() = {bound}"
        longest = max(longest, steps)
    if task.rsplit("-", 1)[0] in FIXED_LENGTH_GAMES:  # the others can end early (a pole falls, a mine)
        assert longest >= bound - 2, f"{task}: episodes of {longest} steps, below the bound {bound}"


FIXED_LENGTH_GAMES = ("repeat-previous", "repeat-first", "autoencode", "count-recall", "higher-lower")
"""Card games whose every episode plays the whole deck: the bound must be tight for them."""


def test_short_steps_runs_validate_on_whole_episodes_not_the_2000_step_horizon(dry_run) -> None:
    """A 14k-step run validates several times on a few episodes, not once on 2,000 steps per actor."""
    config = dry_run("popgym-repeat-previous-easy", "--steps", "14k")
    schedule = config["schedule"]
    assert 52 <= schedule["val_timesteps_per_epoch"] < 2000
    assert schedule["val_interval"] < schedule["epochs"]
