"""Hindsight instruction relabeling for MazeRunner (AMAGO's ``HindsightInstructionReplay``, example 13).

A stored MazeRunner episode (``relabel_info=True`` observations: ``obs``, ``achieved`` (1, 2) and ``goals``
(k, 2)) is rewritten so that cells the agent happened to reach become goals it was asked to reach: a few
timesteps are picked, their ``achieved`` cells are merged in time order with the real goals the agent did
complete, and the uncompleted real goals follow. MazeRunner's reward rule is then replayed on the new goal
sequence, so rewards, the reward column of ``rl2s``, the ``goals`` observations and the episode's end all
match what the env would have produced had it asked for those goals. ``achieved`` is dropped afterwards unless
asked to stay (it repeats the cell ``obs`` already holds; AMAGO's encoder reads only ``obs`` and ``goals``).

Use it through the disk buffer, whose files must hold whole episodes (``traj_save_len > time_limit``): from a
config, ``replay.relabeler = "hindsight"`` (the spec is ``amago_envs.suites.relabel_specs.HINDSIGHT``); in
Python::

    DiskTrajDataset(..., relabeler=MazeRunnerHindsightRelabeler(num_goals=3, strategy="some"))
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from amago_core.config.component import ComponentConfig
from amago_core.data.dataset import Relabeler, worker_seed_key
from amago_core.data.trajectory import FrozenTraj
from amago_envs.suites.relabel_specs import HindsightConfig
from amago_envs.suites.specs import MazeRunnerConfig

DONE_GOAL = -1  # MazeRunner's value for reached goals and padding (amago_envs.suites.mazerunner.DONE_GOAL)

Strategy = Literal["all", "some", "none"]
STRATEGIES: tuple[str, ...] = ("all", "some", "none")


class MazeRunnerHindsightRelabeler(Relabeler):
    """Relabels whole MazeRunner episodes with goals taken from the cells the agent reached.

    Args:
        num_goals: goals per episode of the env (``k``, the ``goals`` key's rows), checked against each file.
            None: read from each file's ``goals`` key.
        strategy: how many alternative goals to add when the agent completed ``n`` of ``k``: ``"all"`` adds
            ``k - n`` (every relabeled episode succeeds), ``"some"`` a uniform count in ``[0, k - n]``,
            ``"none"`` none (only ``achieved`` is dropped, if asked).
        seed: seed of the relabeling randomness (None: fresh entropy). Each dataloader worker derives a stream
            of its own from it, so workers never make the same choices.
        drop_achieved: remove the ``achieved`` key from relabeled episodes (keep it for timestep encoders that
            read every observation key).
    """

    def __init__(
        self,
        num_goals: int | None = None,
        strategy: Strategy = "some",
        seed: int | None = None,
        drop_achieved: bool = True,
    ) -> None:
        if num_goals is not None and num_goals < 1:
            msg = f"num_goals must be >= 1 (the env's goals per episode); got {num_goals}."
            raise ValueError(msg)
        if strategy not in STRATEGIES:
            msg = f"strategy must be one of {STRATEGIES}; got {strategy!r}."
            raise ValueError(msg)
        self.num_goals = num_goals
        self.strategy = strategy
        self.seed = seed
        self.drop_achieved = drop_achieved
        self._rng: np.random.Generator | None = None
        self._rng_key: tuple[int, int | None] | None = None

    @property
    def rng(self) -> np.random.Generator:
        """The generator relabeling draws from: the dataset's, which a dataset sets before every call, or else
        this process's (and dataloader worker's) own, derived from :attr:`seed`.

        A dataloader worker is a copy of the dataset and its relabeler made by fork or pickle: a generator made
        before the copy would make the same choices in every worker, so each worker (noticed by its process id
        and worker seed) makes its own.
        """
        key = worker_seed_key()
        if self._rng is None or key != self._rng_key:
            worker_seed = key[1] if key[1] is not None else 0
            entropy = None if self.seed is None else [self.seed, worker_seed]
            self._rng = np.random.default_rng(np.random.SeedSequence(entropy))
            self._rng_key = key
        return self._rng

    @rng.setter
    def rng(self, generator: np.random.Generator | None) -> None:
        # None goes back to the seed's own stream (made on the next draw).
        self._rng, self._rng_key = generator, (worker_seed_key() if generator is not None else None)

    def relabel(self, traj: FrozenTraj) -> FrozenTraj:
        """Returns ``traj`` with relabeled goals and rewards, possibly shortened (``achieved`` dropped if asked).

        Raises:
            KeyError: the trajectory lacks the ``achieved`` or ``goals`` observation key (an env built without
                ``relabel_info``).
            ValueError: the ``goals`` key does not have ``num_goals`` rows (of two coordinates), or the file is not
                a whole episode.
        """
        missing = [k for k in ("achieved", "goals") if k not in traj.obs]
        if missing:
            msg = (
                f"MazeRunner relabeling needs observation keys 'achieved' and 'goals'; missing {missing}. "
                "Collect with the mazerunner suite's relabel_info=True."
            )
            raise KeyError(msg)
        goals_obs = traj.obs["goals"]
        k = self.num_goals or (goals_obs.shape[1] if goals_obs.ndim == 3 else 0)
        if goals_obs.shape[1:] != (k, 2) or k < 1:
            msg = (
                f"'goals' observations have shape {goals_obs.shape[1:]}; expected ({self.num_goals or 'k'}, 2): "
                "collect with the mazerunner suite (its num_goals goal cells)."
            )
            raise ValueError(msg)
        if int(traj.time_idxs[0, 0]) != 0:
            msg = (
                f"MazeRunner relabeling needs whole episodes, got a file starting at step {int(traj.time_idxs[0, 0])}; "
                "set replay.traj_save_len above the env's time_limit and replay.stagger_traj_file_lengths=false "
                "(--smoke and short step budgets cut files short: lower env.time_limit instead)."
            )
            raise ValueError(msg)
        achieved = (traj.obs.pop("achieved") if self.drop_achieved else traj.obs["achieved"]).reshape(-1, 2)
        if self.strategy == "none":
            return traj
        real_goals = [tuple(g) for g in goals_obs[0] if (g != DONE_GOAL).all()]
        # Transition t leads to observation t + 1: a reward there means a real goal was reached at t + 1.
        reward_steps = [int(t) + 1 for t in np.flatnonzero(traj.rews[:, 0] > 0)]
        n_done = len(reward_steps)
        n_new = k - n_done if self.strategy == "all" else int(self.rng.integers(0, k - n_done + 1))
        candidates = np.setdiff1d(np.arange(1, len(achieved)), reward_steps)
        n_new = min(n_new, len(candidates))
        if n_new == 0:
            return traj
        new_steps = self.rng.choice(candidates, size=n_new, replace=False)
        hit_steps = sorted([*reward_steps, *(int(t) for t in new_steps)])
        # Completed goals (real and alternative) in the order they were reached, then the real goals still open.
        sequence = [tuple(achieved[t]) for t in hit_steps] + real_goals[n_done:]
        return _replay(traj, achieved, sequence[:k], k)


def _replay(traj: FrozenTraj, achieved: np.ndarray, sequence: list[tuple[int, ...]], k: int) -> FrozenTraj:
    """Rewrites ``traj`` (in place) as MazeRunner would have played it with goal ``sequence``."""
    n_obs = len(achieved)
    offset = k - len(sequence)  # MazeRunner pads short sequences at the front
    goal_rows = np.full((k, 2), DONE_GOAL, dtype=traj.obs["goals"].dtype)
    goal_rows[offset:] = np.asarray(sequence, dtype=goal_rows.dtype)
    goals = np.empty((n_obs, k, 2), dtype=goal_rows.dtype)
    rews = np.zeros_like(traj.rews)
    active = 0
    end = n_obs  # observations kept
    goals[0] = goal_rows
    for t in range(n_obs - 1):
        if active < len(sequence) and tuple(achieved[t + 1]) == sequence[active]:
            rews[t, 0] = 1.0
            goal_rows[offset + active] = DONE_GOAL
            active += 1
        goals[t + 1] = goal_rows
        if active == len(sequence):
            end = t + 2
            break
    traj.obs["goals"] = goals
    traj.rews = rews
    traj.rl2s[1:, 0] = rews[:, 0]
    if end < n_obs:
        # Every goal done before the stored episode ended: MazeRunner would have terminated here.
        traj.dones[end - 2, 0] = True
        traj.obs = {key: value[:end] for key, value in traj.obs.items()}
        traj.rl2s = traj.rl2s[:end]
        traj.time_idxs = traj.time_idxs[:end]
        traj.rews = traj.rews[: end - 1]
        traj.dones = traj.dones[: end - 1]
        traj.actions = traj.actions[: end - 1]
    return traj


def build_hindsight_relabeler(
    config: HindsightConfig, *, seed: int | None = None, env: ComponentConfig | None = None
) -> MazeRunnerHindsightRelabeler:
    """The ``hindsight`` relabeler of a run (``replay.relabeler = "hindsight"``).

    Args:
        config: the relabeler's options.
        seed: the run's relabeling seed for this process (None: fresh entropy).
        env: the run's env suite config; None when the envs come from Python makers (the goal count is then
            read from the data).

    Raises:
        ValueError: the run's env is not MazeRunner, or MazeRunner without its dict observations.
    """
    num_goals = None
    if env is not None:
        if not isinstance(env, MazeRunnerConfig):
            msg = (
                f"the hindsight relabeler rewrites MazeRunner episodes, but the env is {env.kind!r}; use "
                "--env mazerunner, or unset replay.relabeler."
            )
            raise ValueError(msg)
        if not env.relabel_info:
            msg = (
                "the hindsight relabeler needs MazeRunner's dict observations (achieved, goals); set "
                "env.relabel_info=true."
            )
            raise ValueError(msg)
        num_goals = env.num_goals
    return MazeRunnerHindsightRelabeler(
        num_goals, config.strategy, seed=seed, drop_achieved=config.drop_achieved
    )
