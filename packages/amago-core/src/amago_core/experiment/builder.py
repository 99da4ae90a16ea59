"""Builds an :class:`Experiment` from an :class:`ExperimentConfig`: the one path shared by config files and the CLI."""

from __future__ import annotations

import functools
import re
import time
from pathlib import Path
from typing import Any

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.experiment import ExperimentConfig
from amago_core.experiment.experiment import Experiment
from amago_core.plugins.registry import registries

NEVER = 10**9
"""An epoch no run reaches: 'never' for the schedule switches of collect-only / learn-only processes."""


class NoEnvError(ValueError):
    """The config names no env."""


def env_id_of(config: EnvSuiteConfig) -> str:
    """The env id a suite config stands for (``tmaze-passive``)."""
    prefix = config.kind.replace("_", "-")
    return f"{prefix}-{config.task}" if config.task else prefix


def default_run_name(config: ExperimentConfig) -> str:
    """``{env id}-{traj encoder}-{YYYYmmdd-HHMMSS}``."""
    env = config.component("env")
    traj = config.component("traj_encoder")
    env_part = env_id_of(env) if env is not None else "noenv"
    # Env ids may carry a path-like task (`gym-dm_control/cartpole-swingup-v0`); a run name is one folder.
    env_part = re.sub(r"[^A-Za-z0-9._-]+", "-", env_part)
    return f"{env_part}-{traj.kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def _make_env(suite: Any, split: str) -> Any:
    # A module-level function over a picklable suite object, so `async` pools can ship it to workers.
    return suite.make_env(split)


def mode_overrides(mode: str) -> dict[str, Any]:
    """Experiment settings of a collect-only or learn-only process (AMAGO's async mode, reference §2.8)."""
    if mode == "learn":
        return {
            "parallel_actors": 1,  # the learner only needs one env to read the spaces from
            "start_collecting_at_epoch": NEVER,
            "train_timesteps_per_epoch": 0,
            "val_timesteps_per_epoch": 0,
            "always_save_latest": True,
            "always_load_latest": False,
            "wait_for_data": True,
        }
    if mode == "collect":
        return {
            "start_collecting_at_epoch": 0,
            "start_learning_at_epoch": NEVER,
            "train_batches_per_epoch": 0,
            "ckpt_interval": None,
            "always_save_latest": False,
            "always_load_latest": True,
            "has_dset_edit_rights": False,
            "record_config": False,  # the learner owns config.resolved.json
        }
    return {}


def build_experiment(config: ExperimentConfig, **overrides: Any) -> Experiment:
    """Makes the Experiment a config describes (env suite, encoders, agent, buffer, schedule...).

    Args:
        config: a validated config; its default component names are resolved here.
        **overrides: Experiment fields to set directly (tests, scripts).

    Raises:
        NoEnvError: the config names no env.
        amago_core.plugins.PluginError: a component is not installed or is broken.
    """
    config = config.resolved()
    env_config = config.env
    if env_config is None:
        msg = "no env chosen: pass --env ID (see `amago list envs`) or set `env` in the config file"
        raise NoEnvError(msg)
    suite = registries().env_suites.build(env_config)
    run_name = config.run.name or default_run_name(config)
    config = config.model_copy(update={"run": config.run.model_copy(update={"name": run_name})})
    sched, optim, replay, rollout, logging = (
        config.schedule,
        config.optim,
        config.replay,
        config.rollout,
        config.logging,
    )
    fields: dict[str, Any] = {
        "run_name": run_name,
        "ckpt_base_dir": config.run.ckpt_base_dir,
        "max_seq_len": config.run.max_seq_len,
        "tstep_encoder_type": config.tstep_encoder,
        "traj_encoder_type": config.traj_encoder,
        "agent_type": config.agent,
        "exploration_wrapper_type": config.exploration,
        "make_train_env": functools.partial(_make_env, suite, "train"),
        "make_val_env": functools.partial(_make_env, suite, "val"),
        "make_test_env": functools.partial(_make_env, suite, "test"),
        "val_timesteps_per_epoch": sched.val_timesteps_per_epoch,
        "parallel_actors": rollout.parallel_actors,
        "env_mode": rollout.env_mode,
        "async_env_mp_context": rollout.async_env_mp_context,
        "sample_actions": rollout.sample_actions_val,
        "sample_actions_train": rollout.sample_actions_train,
        "force_reset_train_envs_every": rollout.force_reset_train_envs_every,
        "log_to_wandb": logging.log_to_wandb,
        "wandb_project": logging.wandb_project,
        "wandb_entity": logging.wandb_entity,
        "wandb_group_name": logging.wandb_group_name,
        "verbose": logging.verbose,
        "log_interval": logging.log_interval,
        "traj_save_len": replay.traj_save_len,
        "has_dset_edit_rights": replay.has_dset_edit_rights,
        "stagger_traj_file_lengths": replay.stagger_traj_file_lengths,
        "save_trajs_as": replay.save_trajs_as,
        "padded_sampling": replay.padded_sampling,
        "dloader_workers": config.distributed.dloader_workers,
        "epochs": sched.epochs,
        "start_learning_at_epoch": sched.start_learning_at_epoch,
        "start_collecting_at_epoch": sched.start_collecting_at_epoch,
        "train_timesteps_per_epoch": sched.train_timesteps_per_epoch,
        "train_batches_per_epoch": sched.train_batches_per_epoch,
        "val_interval": sched.val_interval,
        "ckpt_interval": sched.ckpt_interval,
        "always_save_latest": sched.always_save_latest,
        "always_load_latest": sched.always_load_latest,
        "batch_size": optim.batch_size,
        "batches_per_update": optim.batches_per_update,
        "length_group_batches": optim.length_group_batches,
        "learning_rate": optim.learning_rate,
        "lr_warmup_steps": optim.lr_warmup_steps,
        "grad_clip": optim.grad_clip,
        "l2_coeff": optim.l2_coeff,
        "mixed_precision": optim.mixed_precision,
        "seed": config.run.seed,
        "torch_threads": config.run.torch_threads,
        "dset_root": replay.dset_root if replay.dset_root is not None else config.run.ckpt_base_dir,
        "dset_name": replay.dset_name or run_name,
        "dset_max_size": replay.dset_max_size,
        "dset_min_size": replay.dset_min_size,
        "resolved_config": config.model_dump(mode="json"),
    }
    mode = mode_overrides(config.run.mode)
    if config.rollout.env_mode == "already_vectorized":
        mode.pop("parallel_actors", None)  # a batched env's size is fixed by the env itself
    fields.update(mode)
    fields.update(overrides)
    return Experiment(**fields)


def build_evaluation_experiment(config: ExperimentConfig, **overrides: Any) -> Experiment:
    """The Experiment of a trained run, set up only to evaluate: no train envs, no epochs, config file untouched.

    Args:
        config: the run's config (its ``config.resolved.json``, with ``run.name``/``ckpt_base_dir`` pointing at it).
        **overrides: further Experiment fields (``sample_actions``, ...).
    """
    evaluation_only = {
        "make_train_env": None,
        "start_collecting_at_epoch": 0,
        "epochs": 0,
        "record_config": False,
        "val_interval": 1,
    }
    return build_experiment(config, **{**evaluation_only, **overrides})


def resolved_config_path(run_dir: str | Path) -> Path:
    """The resolved config file of a run folder."""
    return Path(run_dir) / "config.resolved.json"
