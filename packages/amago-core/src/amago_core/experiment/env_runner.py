"""``EnvRunner``: this process's env pools and the policy's memory in them; it collects and evaluates.

The runner steps envs and returns what happened (frames, returns, metrics); the experiment counts, logs and
decides when. It is handed ``Experiment.interact``, so a subclass's rollout loop is what it runs. A remote
collector (``ray.actors > 0``) collects instead of a local train pool; the Ray actors use the runner's public
:meth:`pool` and :meth:`evaluate` on their side.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelerate import Accelerator

from amago_core.config.components import RunComponents
from amago_core.config.experiment import ExperimentConfig
from amago_core.experiment.collectors import Collector
from amago_core.experiment.metrics import finished_episodes, policy_metrics, train_return_metrics
from amago_core.experiment.pools import EnvMakers, MakersWrapper, Role, RolePool, build_pool, makers_per_actor
from amago_core.experiment.processes import average_over_processes, gather

Interact = Callable[..., tuple[Any, Any, dict[str, Any]]]
"""The rollout loop the runner is handed: ``Experiment.interact``'s signature, returning ``(hidden_state,
last_timestep, stats)``."""


@dataclass
class Collected:
    """What one epoch of collection in this process added.

    Attributes:
        frames_by_env_name: env steps taken, by env name.
        return_history: returns of the train episodes that finished, by env name (empty for a remote
            collector, whose workers log their own).
    """

    frames_by_env_name: dict[str, int] = field(default_factory=dict)
    return_history: dict[str, list[float]] = field(default_factory=dict)


class EnvRunner:
    """Builds this process's train and val pools and runs the policy in them.

    Args:
        config: the run's config.
        components: the run's resolved components (the exploration wrapper of train pools).
        accelerator: this process's accelerator (its index seeds the pools).
        interact: the rollout loop (``Experiment.interact``, an override point).
    """

    def __init__(
        self,
        config: ExperimentConfig,
        components: RunComponents,
        accelerator: Accelerator,
        interact: Interact,
    ) -> None:
        self.config = config
        self.components = components
        self.accelerator = accelerator
        self.interact = interact
        self.train_envs: RolePool | None = None
        self.val_envs: RolePool | None = None
        self.collector: Collector | None = None
        """Does train collection instead of ``train_envs`` when the config asks for remote actors (``ray``)."""
        self.hidden_state: Any = None
        """The policy's memory in the train pool: rollouts continue mid-episode from one epoch to the next."""
        self.train_timestep: Any = None
        """The train pool's last timestep: the policy's next input."""

    def actor_makers(self, make_env: EnvMakers, role: Role) -> list[Callable[[], Any]]:
        """One env maker per actor of this process (one for an already-vectorised env)."""
        rollout = self.config.rollout
        n_makers = 1 if rollout.env_mode == "already_vectorized" else rollout.parallel_actors
        return makers_per_actor(make_env, n_makers, f"make_{role}_env")

    def pool(
        self, make_env: EnvMakers, role: Role, save_dir: Path | None = None, start_frames: int = 0
    ) -> RolePool:
        """A pool of this process's actors for ``role``; train pools get the exploration wrapper.

        Args:
            make_env: one env maker (repeated per actor) or one per actor.
            role: ``train``, ``val`` or ``test`` (seeds and task splits differ).
            save_dir: where finished trajectories are written (train pools of a collecting run).
            start_frames: env steps the whole run took before (a resumed run's exploration schedule continues).
        """
        return build_pool(
            self.config,
            self.actor_makers(make_env, role),
            role=role,
            process=self.accelerator.process_index,
            save_dir=save_dir,
            exploration=self._exploration_builder(start_frames) if role == "train" else None,
        )

    def _exploration_builder(self, start_frames: int) -> Callable[..., Any] | None:
        resolved = self.components.exploration
        if resolved is None:
            return None
        wanted = getattr(type(resolved.config), "inferred_context", ()) if resolved.config is not None else ()
        actors = self.accelerator.num_processes * self.config.rollout.parallel_actors
        context = {
            "rollout_horizon": self.config.schedule.train_timesteps_per_epoch,
            # Steps each actor took before this process started (non-zero when resuming): schedules continue.
            "start_step": start_frames // max(actors, 1),
        }
        return functools.partial(resolved.build, **{k: v for k, v in context.items() if k in wanted})

    def open_train_pool(self, make_env: EnvMakers, save_dir: Path | None, start_frames: int) -> None:
        """Builds the train pool and resets it (the first timestep the policy sees)."""
        self.train_envs = self.pool(make_env, "train", save_dir, start_frames)
        self.train_timestep = self.train_envs.reset()
        self.hidden_state = None

    def open_val_pool(self, make_env: EnvMakers) -> None:
        """Builds the val pool (fresh episodes and memory on every evaluation)."""
        self.val_envs = self.pool(make_env, "val")

    def open_pools(
        self,
        make_train_env: EnvMakers | None,
        make_val_env: EnvMakers | None,
        *,
        remote: Callable[[], Collector | None] | None,
        evaluates: bool,
        save_dir: Path | None,
        start_frames: int,
    ) -> None:
        """Builds what this process steps: the remote collector (``remote()``, None in the default run) or else
        the train pool (``remote`` None: this process does not collect), and the val pool when ``evaluates`` and
        no remote collector evaluates instead."""
        if remote is not None and make_train_env is not None:
            self.collector = remote()
            if self.collector is None:
                self.open_train_pool(make_train_env, save_dir, start_frames=start_frames)
        evaluates = evaluates and not (self.collector is not None and self.collector.evaluates)
        if evaluates and make_val_env is not None:
            self.open_val_pool(make_val_env)

    def collect(self, epoch: int, timesteps: int, policy: Any) -> Collected | None:
        """One epoch of train collection: ``timesteps`` steps of every train env (or the remote collector's).

        Returns:
            What was collected, or None when this process has no train envs.
        """
        if self.collector is not None:
            self.collector.sync_weights(policy, epoch)
            remote = self.collector.collect(epoch, timesteps)
            return Collected(frames_by_env_name=dict(remote.frames_by_env_name))
        if self.train_envs is None:
            return None
        every = self.config.rollout.force_reset_train_envs_every
        if every and epoch > 0 and epoch % every == 0:
            self.train_timestep = self.train_envs.reset()
            self.hidden_state = None
        self.hidden_state, self.train_timestep, stats = self.interact(
            self.train_envs,
            timesteps,
            hidden_state=self.hidden_state,
            sample=self.config.rollout.sample_actions_train,
            timestep=self.train_timestep,
            desc=f"collect (epoch {epoch})",
        )
        self.train_envs.save_finished_trajs()
        return Collected(dict(stats["new_frames_by_env_name"]), dict(stats.get("return_history", {})))

    def collect_gathered(
        self, epoch: int, timesteps: int, policy: Any
    ) -> tuple[list[dict[str, int]], dict[str, float]] | None:
        """:meth:`collect` in every process, gathered in one collective call: the new frames by env name (one dict
        per process; the remote collector's alone) and the returns of the train episodes that finished, as
        metrics. None when this process has no train envs."""
        collected = self.collect(epoch, timesteps, policy)
        if collected is None:
            return None
        if self.collector is not None:  # one process drives the remote workers: nothing to gather
            return [collected.frames_by_env_name], {}
        parts = gather(self.accelerator, (collected.frames_by_env_name, collected.return_history))
        return [frames for frames, _ in parts], train_return_metrics([returns for _, returns in parts])

    def validate(self, timesteps: int, policy: Any, epoch: int) -> dict[str, float] | None:
        """Validation metrics averaged over the processes: the remote collector's workers when they hold the val
        envs, else this process's val pool (fresh episodes and memory); None without either (or when every
        remote worker failed)."""
        if self.collector is not None and self.collector.evaluates:
            self.collector.sync_weights(policy, epoch)
            return self.collector.evaluate(timesteps)
        if self.val_envs is None:
            return None
        return average_over_processes(self.accelerator, self.evaluate(self.val_envs, timesteps))

    def evaluate(
        self, envs: Any, timesteps: int, episodes: int | None = None, desc: str = "evaluate"
    ) -> dict[str, float]:
        """This process's metrics of one evaluation in ``envs`` (AMAGO's names), with its env steps per second
        and the number of episodes that finished."""
        start = time.perf_counter()
        _, _, stats = self.interact(
            envs, timesteps, sample=self.config.rollout.sample_actions_val, episodes=episodes, desc=desc
        )
        return _with_rates(policy_metrics(stats), stats, start)

    def test(
        self,
        make_test_env: EnvMakers,
        timesteps: int,
        *,
        render: bool = False,
        save_trajs_to: Path | None = None,
        episodes: int | None = None,
        wrap_makers: MakersWrapper | None = None,
    ) -> dict[str, float]:
        """One evaluation on a fresh test pool (closed afterwards); this process's metrics.

        Args:
            make_test_env: one env maker (repeated per actor) or one per actor.
            timesteps: steps per env (fewer when ``episodes`` finish first).
            render: call the pool's ``render()`` after every step.
            save_trajs_to: write the finished trajectories to this folder.
            episodes: stop once this many episodes finished.
            wrap_makers: changes this process's env makers (one per actor) before the pool is built.
        """
        if wrap_makers is not None:
            make_test_env = wrap_makers(self.actor_makers(make_test_env, "test"))
        envs = self.pool(make_test_env, "test", save_trajs_to)
        try:
            start = time.perf_counter()
            _, _, stats = self.interact(
                envs,
                timesteps,
                render=render,
                save_on_done=save_trajs_to is not None,
                episodes=episodes,
                sample=self.config.rollout.sample_actions_val,
                desc="test",
            )
            if save_trajs_to is not None:
                envs.save_finished_trajs()
            return _with_rates(policy_metrics(stats), stats, start)
        finally:
            envs.close()

    def describe(self, obs_space: Any, action_space: Any) -> str:
        """One line for the run's summary: the actors (or Ray workers), the spaces and the exploration."""
        rollout = self.config.rollout
        exploration = self.components.exploration.name if self.components.exploration is not None else None
        actors = f"{rollout.parallel_actors} {rollout.env_mode} actors"
        if self.collector is not None:
            envs = self.config.envs_per_ray_actor
            actors = f"{self.config.ray.actors} Ray actors x {envs} {rollout.env_mode} envs"
        return f"{actors}; obs {obs_space}; actions {action_space}; exploration {exploration}"

    def close(self) -> None:
        """Closes the pools and the remote collector (its workers stop)."""
        for envs in (self.train_envs, self.val_envs):
            if envs is not None:
                envs.close()
        if self.collector is not None:
            self.collector.close()
            self.collector = None


def _with_rates(metrics: dict[str, float], stats: dict[str, Any], start: float) -> dict[str, float]:
    metrics["Env FPS (per_process)"] = sum(stats["new_frames_by_env_name"].values()) / max(
        time.perf_counter() - start, 1e-9
    )
    metrics["Episodes"] = float(finished_episodes(stats))
    return metrics
