"""Acting in envs: this process's env pools, the rollout loop as an override point, collection and evaluation."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from tqdm.auto import tqdm

from amago_core.experiment.acting import run_policy
from amago_core.experiment.agent_api import RolloutPolicy
from amago_core.experiment.checkpointing import CheckpointingMixin
from amago_core.experiment.collectors import Collector
from amago_core.experiment.metrics import (
    AVERAGE_RETURN_KEY,
    finished_episodes,
    policy_metrics,
    train_return_metrics,
)
from amago_core.experiment.pools import EnvMakers, Role, RolePool, build_pool, makers_per_actor
from amago_core.experiment.processes import average_over_processes, gather
from amago_core.experiment.video import VideoRequest, record_first_env


class InteractionMixin(CheckpointingMixin):
    """Pools, ``interact``, collection and evaluation methods of ``Experiment``."""

    collector: Collector | None = None
    """Does train collection instead of ``train_envs`` when the config asks for remote actors (``ray``)."""

    def _exploration_builder(self) -> Callable[..., Any] | None:
        resolved = self.components.exploration
        if resolved is None:
            return None
        wanted = getattr(type(resolved.config), "inferred_context", ()) if resolved.config is not None else ()
        rollout = self.config.rollout
        actors = self._accelerator.num_processes * rollout.parallel_actors
        context = {
            "rollout_horizon": self.config.schedule.train_timesteps_per_epoch,
            # Steps each actor took before this process started (non-zero when resuming): schedules continue.
            "start_step": self.total_frames // max(actors, 1),
        }
        return functools.partial(resolved.build, **{k: v for k, v in context.items() if k in wanted})

    def _actor_makers(self, make_env: EnvMakers, role: Role) -> list[Callable[[], Any]]:
        rollout = self.config.rollout
        n_makers = 1 if rollout.env_mode == "already_vectorized" else rollout.parallel_actors
        return makers_per_actor(make_env, n_makers, f"make_{role}_env")

    def _pool(self, make_env: EnvMakers, role: Role, save_dir: Path | None = None) -> RolePool:
        return build_pool(
            self.config,
            self._actor_makers(make_env, role),
            role=role,
            process=self._accelerator.process_index,
            save_dir=save_dir,
            exploration=self._exploration_builder() if role == "train" else None,
        )

    # ---- pools --------------------------------------------------------------------------------------------
    def interact(
        self,
        envs: Any,
        timesteps: int,
        hidden_state: Any = None,
        render: bool = False,
        save_on_done: bool = False,
        episodes: int | None = None,
        sample: bool = True,
        timestep: Any = None,
        desc: str = "interact",
    ) -> tuple[Any, Any, dict[str, Any]]:
        """Runs the policy in ``envs`` for ``timesteps`` steps (or until ``episodes`` episodes finish).

        Returns:
            ``(hidden_state, last_timestep, stats)``: the memory and policy input to continue from, and the
            pool's return/metric histories for this interaction.
        """
        rollout = run_policy(
            cast(RolloutPolicy, self.policy),
            envs,
            timesteps,
            device=self.DEVICE,
            caster=self.caster,
            hidden_state=hidden_state,
            timestep=timestep,
            sample=sample,
            episodes=episodes,
            save_on_done=save_on_done,
            render=render,
            progress=self._bars_here,
            desc=desc,
            should_stop=self._stop_now,
        )
        return rollout.hidden_state, rollout.timestep, rollout.stats

    def collect_new_training_data(self) -> None:
        """Steps the train envs ``train_timesteps_per_epoch`` times; finished trajectories go to the buffer.

        The train envs and the policy's memory persist across epochs (rollouts continue mid-episode). With a
        ``collector`` (remote actors), it collects instead and the trajectories arrive as finished files.
        """
        if self.collector is not None:
            self.collector.sync_weights(self.policy, self.epoch)
            collected = self.collector.collect(self.epoch, self.config.schedule.train_timesteps_per_epoch)
            self._count_frames([collected.frames_by_env_name])
            return
        if self.train_envs is None:
            return
        every = self.config.rollout.force_reset_train_envs_every
        if every and self.epoch > 0 and self.epoch % every == 0:
            self._train_timestep = self.train_envs.reset()
            self.hidden_state = None
        self.hidden_state, self._train_timestep, stats = self.interact(
            self.train_envs,
            self.config.schedule.train_timesteps_per_epoch,
            hidden_state=self.hidden_state,
            sample=self.config.rollout.sample_actions_train,
            timestep=self._train_timestep,
            desc=f"collect (epoch {self.epoch})",
        )
        self.train_envs.save_finished_trajs()
        # One collective call for both: every process's new frames and its finished episodes' returns.
        parts = gather(self._accelerator, (stats["new_frames_by_env_name"], stats.get("return_history", {})))
        self._count_frames([frames for frames, _ in parts])
        self._log_train_returns([returns for _, returns in parts])

    def _log_train_returns(self, histories: list[dict[str, list[float]]]) -> None:
        """Logs the returns of the train episodes that finished this epoch (``train/episodic_return``)."""
        metrics = train_return_metrics(histories)
        if metrics:
            self.log(metrics, "train")
            self._epoch_metrics.update({f"train/{k}": v for k, v in metrics.items()})

    def _count_frames(self, parts: list[dict[str, int]]) -> None:
        """Adds env steps by env name (one dict per process) to ``total_frames`` and ``frames_by_env_name``."""
        for by_name in parts:
            self.total_frames += sum(by_name.values())
            for name, count in by_name.items():
                self.frames_by_env_name[name] = self.frames_by_env_name.get(name, 0) + count

    # ---- evaluation ----------------------------------------------------------------------------------------
    def _evaluate(
        self, envs: Any, timesteps: int, episodes: int | None = None, desc: str = "evaluate"
    ) -> dict[str, float]:
        """This process's metrics of one evaluation (AMAGO's names), with its env steps per second."""
        start = time.perf_counter()
        _, _, stats = self.interact(
            envs, timesteps, sample=self.config.rollout.sample_actions_val, episodes=episodes, desc=desc
        )
        metrics = policy_metrics(stats)
        metrics["Env FPS (per_process)"] = sum(stats["new_frames_by_env_name"].values()) / max(
            time.perf_counter() - start, 1e-9
        )
        metrics["Episodes"] = float(finished_episodes(stats))
        return metrics

    def _on_evaluation(self, split: str, metrics: dict[str, float]) -> None:
        from amago_core.hooks.manager import hook_manager

        self.log(metrics, split)
        self._epoch_metrics.update({f"{split}/{k}": v for k, v in metrics.items()})
        value = metrics.get(AVERAGE_RETURN_KEY)
        if split == "val" and value is not None and (self.best_val is None or value > self.best_val[0]):
            self.best_val = (float(value), self.epoch)
        hook_manager().hook.amago_on_evaluation(experiment=self, split=split, metrics=metrics)

    def evaluate_val(self) -> dict[str, float] | None:
        """Evaluates the policy on the val envs (fresh episodes and memory); logs under ``val/``."""
        timesteps = self.config.schedule.val_timesteps_per_epoch
        if self.collector is not None and self.collector.evaluates:
            self.collector.sync_weights(self.policy, self.epoch)
            remote = self.collector.evaluate(timesteps)  # the collector's workers hold the val envs
            if remote is None:
                return None
            metrics = remote
        elif self.val_envs is None:
            return None
        else:
            metrics = average_over_processes(self._accelerator, self._evaluate(self.val_envs, timesteps))
        self._on_evaluation("val", metrics)
        # Inside learn() the epoch's table shows it; a direct call says it in one line.
        if self._verbose_here and self._progress is None and AVERAGE_RETURN_KEY in metrics:
            tqdm.write(
                f"epoch {self.epoch}: val {AVERAGE_RETURN_KEY} = {metrics[AVERAGE_RETURN_KEY]:.3f}",
                file=sys.stderr,
            )
        return metrics

    def evaluate_test(
        self,
        make_test_env: EnvMakers,
        timesteps: int,
        render: bool = False,
        save_trajs_to: str | Path | None = None,
        episodes: int | None = None,
        video: VideoRequest | None = None,
    ) -> dict[str, float]:
        """One-off evaluation on new envs; logs under ``test/`` and returns this process's metrics.

        Args:
            make_test_env: one env maker (repeated per actor) or one per actor.
            timesteps: steps per env (fewer when ``episodes`` finish first).
            render: call the pool's ``render()`` after every step, for pools that have one (AMAGO's on-screen
                rendering); to record files, pass ``video``.
            save_trajs_to: write the finished trajectories to this folder.
            episodes: stop once this many episodes finished.
            video: record the first episodes of test env 0 (main process only) as files (``video.written()``
                lists them afterwards), also logged as ``test/videos`` to backends that take videos (wandb).
        """
        if not self._accelerator.is_main_process:
            video = None  # one process records
        if video is not None:
            video.clear()
            make_test_env = record_first_env(self._actor_makers(make_test_env, "test"), video)
        envs = self._pool(make_test_env, "test", Path(save_trajs_to) if save_trajs_to else None)
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
            metrics = policy_metrics(stats)
            metrics["Env FPS (per_process)"] = sum(stats["new_frames_by_env_name"].values()) / max(
                time.perf_counter() - start, 1e-9
            )
            metrics["Episodes"] = float(finished_episodes(stats))
        finally:
            envs.close()
        self._on_evaluation("test", average_over_processes(self._accelerator, metrics))
        if video is not None and self.logger is not None and (written := video.written()):
            self.logger.log_videos(written, "test", self.x_axis_metrics())
        return metrics
