"""Hindsight instruction relabeling of MazeRunner episodes: hand-checked rewrites, and consistency with the env."""

from __future__ import annotations

import numpy as np
import pytest

from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.data.files import save_traj, traj_file_stem
from amago_core.data.trajectory import FrozenTraj, Trajectory
from amago_envs.suites.mazerunner_relabel import MazeRunnerHindsightRelabeler

# A 5-transition episode: the agent walks (5,3) -> (4,3) -> (3,3) -> (3,4) -> (3,5) -> (2,5). Its goals were
# (3,3) then (1,1): it reached the first on transition 1 and ran out of time.
PATH = [(5, 3), (4, 3), (3, 3), (3, 4), (3, 5), (2, 5)]
N = -1  # a reached goal / padding


def episode(goal_rows: list[list[tuple[int, int]]]) -> FrozenTraj:
    """The walk above with the given ``goals`` observation per timestep (rewards where a goal was reached)."""
    steps = len(PATH) - 1
    rews = np.zeros((steps, 1), dtype=np.float32)
    rews[1] = 1.0
    actions = np.eye(5, dtype=np.float32)[[1, 1, 2, 2, 1]]
    rl2s = np.zeros((steps + 1, 6), dtype=np.float32)
    rl2s[1:, 0] = rews[:, 0]
    rl2s[1:, 1:] = actions
    dones = np.zeros((steps, 1), dtype=bool)
    dones[-1] = True  # MazeRunner terminates at its time limit
    return FrozenTraj(
        obs={
            "obs": np.arange(steps + 1, dtype=np.float32).reshape(-1, 1).repeat(7, axis=1),
            "achieved": np.array(PATH, dtype=np.int32).reshape(-1, 1, 2),
            "goals": np.array(goal_rows, dtype=np.int32),
        },
        rl2s=rl2s,
        time_idxs=np.arange(steps + 1, dtype=np.int64).reshape(-1, 1),
        rews=rews,
        dones=dones,
        actions=actions,
    )


def two_goal_episode() -> FrozenTraj:
    before, after = [(3, 3), (1, 1)], [(N, N), (1, 1)]
    return episode([before, before, after, after, after, after])


class PickedSteps:
    """Stands in for the relabeler's generator: picks the given timesteps and the given count."""

    def __init__(self, steps: list[int], count: int | None = None) -> None:
        self.steps, self.count = steps, count

    def choice(self, candidates, size, replace):
        assert not replace
        assert set(self.steps) <= set(candidates.tolist())
        assert size == len(self.steps)
        return np.array(self.steps)

    def integers(self, low, high):
        assert self.count is not None
        assert low <= self.count < high
        return self.count


def relabel(traj: FrozenTraj, num_goals: int, strategy: str, steps: list[int], count: int | None = None):
    relabeler = MazeRunnerHindsightRelabeler(num_goals=num_goals, strategy=strategy)
    relabeler.rng = PickedSteps(steps, count)
    return relabeler(traj)


def test_all_adds_a_reached_cell_after_the_real_goal_and_ends_there() -> None:
    out = relabel(two_goal_episode(), 2, "all", [4])  # (3,5), reached at timestep 4
    assert "achieved" not in out.obs
    assert out.rews[:, 0].tolist() == [0, 1, 0, 1]  # truncated: every goal done on transition 3
    assert out.dones[:, 0].tolist() == [False, False, False, True]
    assert out.rl2s[:, 0].tolist() == [0, 0, 1, 0, 1]
    seq = [(3, 3), (3, 5)]
    done1 = [(N, N), (3, 5)]
    assert out.obs["goals"].tolist() == [
        [list(g) for g in rows] for rows in [seq, seq, done1, done1, [(N, N), (N, N)]]
    ]
    assert len(out.obs["obs"]) == len(out.time_idxs) == 5
    assert len(out.actions) == 4
    out.check()


def test_all_puts_an_earlier_cell_first() -> None:
    out = relabel(two_goal_episode(), 2, "all", [1])  # (4,3) at timestep 1, before the real goal
    assert out.rews[:, 0].tolist() == [1, 1]
    assert out.dones[:, 0].tolist() == [False, True]
    assert out.obs["goals"][0].tolist() == [[4, 3], [3, 3]]
    assert out.obs["goals"][1].tolist() == [[N, N], [3, 3]]
    out.check()


def test_some_keeps_open_real_goals_after_the_relabeled_ones_with_front_padding() -> None:
    # Three goal slots, one real goal (3,3) (front-padded), reached on transition 1; one hindsight goal added.
    before, after = [(N, N), (N, N), (3, 3)], [(N, N), (N, N), (N, N)]
    traj = episode([before, before, after, after, after, after])
    out = relabel(traj, 3, "some", [4], count=1)
    assert out.obs["goals"][0].tolist() == [[N, N], [3, 3], [3, 5]]
    assert out.obs["goals"][2].tolist() == [[N, N], [N, N], [3, 5]]
    assert out.rews[:, 0].tolist() == [0, 1, 0, 1]
    assert out.dones[-1, 0]


def test_open_real_goal_stays_and_no_early_end() -> None:
    # Three slots: real goals (3,3), (1,1); the hindsight goal (2,5) at the last timestep; (1,1) never reached.
    before, after = [(N, N), (3, 3), (1, 1)], [(N, N), (N, N), (1, 1)]
    out = relabel(episode([before, before, after, after, after, after]), 3, "some", [5], count=1)
    assert out.obs["goals"][0].tolist() == [[3, 3], [2, 5], [1, 1]]
    assert out.obs["goals"][-1].tolist() == [[N, N], [N, N], [1, 1]]
    assert out.rews[:, 0].tolist() == [0, 1, 0, 0, 1]
    assert out.dones[:, 0].tolist() == [False, False, False, False, True]  # the time limit, as stored
    assert len(out.actions) == 5


@pytest.mark.parametrize(("strategy", "count"), [("none", None), ("some", 0)])
def test_without_new_goals_only_achieved_is_dropped(strategy: str, count: int | None) -> None:
    original = two_goal_episode()
    out = relabel(two_goal_episode(), 2, strategy, [], count)
    assert "achieved" not in out.obs
    np.testing.assert_array_equal(out.obs["goals"], original.obs["goals"])
    np.testing.assert_array_equal(out.rews, original.rews)
    np.testing.assert_array_equal(out.dones, original.dones)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="strategy"):
        MazeRunnerHindsightRelabeler(3, "most")
    traj = two_goal_episode()
    del traj.obs["achieved"]
    with pytest.raises(KeyError, match="relabel_info=True"):
        MazeRunnerHindsightRelabeler(2)(traj)
    snippet = two_goal_episode()
    snippet.time_idxs += 7
    with pytest.raises(ValueError, match="whole episodes"):
        MazeRunnerHindsightRelabeler(2)(snippet)
    with pytest.raises(ValueError, match=r"expected \(3, 2\)"):
        MazeRunnerHindsightRelabeler(3)(two_goal_episode())


def collect_episodes(n: int, seed: int = 0) -> list[FrozenTraj]:
    """Random-action MazeRunner episodes, stored the way the experiment stores them."""
    from amago_core.plugins.registry import registries

    env = (
        registries()
        .env_suites.build({"kind": "mazerunner", "maze_dim": 7, "time_limit": 40})
        .make_env("train")
    )
    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(n):
        timestep, _ = env.reset(seed=seed + i)
        traj = Trajectory([timestep])
        done = False
        while not done:
            timestep, _, terminated, truncated, _ = env.step(rng.integers(5, size=(1,)))
            traj.add_timestep(timestep)
            done = bool(terminated[0] or truncated[0])
        episodes.append(traj.freeze())
    return episodes


def replays_like_the_env(traj: FrozenTraj, achieved: np.ndarray) -> None:
    """Rewards fall exactly where the agent stands on the first open goal of the previous observation."""
    for t in range(len(traj)):
        open_goals = [g for g in traj.obs["goals"][t].tolist() if g != [N, N]]
        hit = bool(open_goals) and achieved[t + 1].tolist() == open_goals[0]
        assert traj.rews[t, 0] == float(hit)
        assert traj.rl2s[t + 1, 0] == traj.rews[t, 0]
    finished = not any(g != [N, N] for g in traj.obs["goals"][-1].tolist())
    assert traj.dones[-1, 0] or not finished


def test_relabeled_env_episodes_follow_the_reward_rule_and_all_succeed() -> None:
    relabeler = MazeRunnerHindsightRelabeler(num_goals=3, strategy="all", seed=0)
    for traj in collect_episodes(6):
        achieved = traj.obs["achieved"].reshape(-1, 2).copy()
        out = relabeler(traj)
        replays_like_the_env(out, achieved)
        assert out.rews.sum() == 3  # "all": every relabeled episode completes its three goals
        assert out.dones[-1, 0]


def test_disk_buffer_serves_relabeled_windows(tmp_path) -> None:
    dataset = DiskTrajDataset(
        tmp_path, "maze", dset_max_size=10, relabeler=MazeRunnerHindsightRelabeler(3, "all", seed=1), seed=0
    )
    for traj in collect_episodes(3, seed=5):
        save_traj(traj, dataset.fifo_dir, traj_file_stem("MazeRunner-7x7-k3"))
    dataset.refresh()
    dataset.configure(items_per_epoch=4, max_seq_len=8)
    whole = dataset.sample_random_trajectory()  # the relabeler sees (and rewrites) the whole file
    assert set(whole.obs) == {"obs", "goals"}
    assert whole.rews.sum() == 3
    assert whole.dones[-1, 0]
    window = dataset[0]
    assert set(window.obs) == {"obs", "goals"}
    assert len(window.rews) <= 8
