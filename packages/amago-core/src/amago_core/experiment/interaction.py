"""Acting in envs, as ``Experiment`` methods: the rollout loop (an override point), collection and evaluation.

The pools and the policy's memory in them belong to the experiment's
:class:`~amago_core.experiment.env_runner.EnvRunner`; these methods are AMAGO's override points and what the
loop does with the runner's results (count frames, log returns and metrics, remember the best val return).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

from tqdm.auto import tqdm

from amago_core.experiment.acting import run_policy
from amago_core.experiment.agent_api import RolloutPolicy
from amago_core.experiment.checkpointing import CheckpointingMixin
from amago_core.experiment.collectors import Collector
from amago_core.experiment.env_runner import EnvRunner
from amago_core.experiment.metrics import AVERAGE_RETURN_KEY, train_return_metrics
from amago_core.experiment.pools import EnvMakers, RolePool
from amago_core.experiment.processes import average_over_processes, gather
from amago_core.experiment.video import VideoRequest


class InteractionMixin(CheckpointingMixin):
    """``interact``, collection and evaluation methods of ``Experiment``."""

    env_runner: EnvRunner | None = None
    """This process's env pools (built by ``start()``)."""

    # AMAGO's attribute names, read from the runner (None before start()).
    @property
    def train_envs(self) -> RolePool | None:
        """This process's train pool (None: not collecting here, or before ``start()``)."""
        return self.env_runner.train_envs if self.env_runner is not None else None

    @property
    def val_envs(self) -> RolePool | None:
        """This process's val pool (None: not evaluating here, or before ``start()``)."""
        return self.env_runner.val_envs if self.env_runner is not None else None

    @property
    def hidden_state(self) -> Any:
        """The policy's memory in the train pool."""
        return self.env_runner.hidden_state if self.env_runner is not None else None

    @property
    def collector(self) -> Collector | None:
        """The remote collector (``ray.actors > 0``) that collects instead of a train pool."""
        return self.env_runner.collector if self.env_runner is not None else None

    def _runner(self) -> EnvRunner:
        if self.env_runner is None:
            msg = "call Experiment.start() first: the env pools are built there"
            raise RuntimeError(msg)
        return self.env_runner

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
        runner = self._runner()
        collected = runner.collect(self.epoch, self.config.schedule.train_timesteps_per_epoch, self.policy)
        if collected is None:
            return
        if runner.collector is not None:  # one process drives the remote workers: nothing to gather
            self._count_frames([collected.frames_by_env_name])
            return
        # One collective call for both: every process's new frames and its finished episodes' returns.
        parts = gather(self._accelerator, (collected.frames_by_env_name, collected.return_history))
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
        runner = self._runner()
        if runner.collector is not None and runner.collector.evaluates:
            runner.collector.sync_weights(self.policy, self.epoch)
            remote = runner.collector.evaluate(timesteps)  # the collector's workers hold the val envs
            if remote is None:
                return None
            metrics = remote
        elif runner.val_envs is None:
            return None
        else:
            metrics = average_over_processes(self._accelerator, runner.evaluate(runner.val_envs, timesteps))
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
        metrics = self._runner().test(
            make_test_env,
            timesteps,
            render=render,
            save_trajs_to=Path(save_trajs_to) if save_trajs_to else None,
            episodes=episodes,
            video=video,
        )
        self._on_evaluation("test", average_over_processes(self._accelerator, metrics))
        if video is not None and self.logger is not None and (written := video.written()):
            self.logger.log_videos(written, "test", self.x_axis_metrics())
        return metrics
