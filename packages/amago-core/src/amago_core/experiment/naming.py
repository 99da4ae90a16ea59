"""Names a run gets when its config gives none."""

from __future__ import annotations

import re
import time

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.experiment import ExperimentConfig


def env_id_of(config: EnvSuiteConfig) -> str:
    """The env id a suite config stands for (``tmaze-passive``)."""
    prefix = config.kind.replace("_", "-")
    return f"{prefix}-{config.task}" if config.task else prefix


def default_run_name(config: ExperimentConfig) -> str:
    """``{env id}-{traj encoder}-{YYYYmmdd-HHMMSS}`` (``run`` in place of the env id for Python env makers)."""
    env = config.env
    traj = config.traj_encoder
    env_part = env_id_of(env) if isinstance(env, EnvSuiteConfig) else "run"
    # Env ids may carry a path-like task (`gym-dm_control/cartpole-swingup-v0`); a run name is one folder.
    # It must also pass run.name's rule: start with a letter or digit, at most 128 characters in all.
    env_part = re.sub(r"[^A-Za-z0-9._-]+", "-", env_part).lstrip("._-")[:64] or "run"
    kind = re.sub(r"[^A-Za-z0-9._-]+", "-", traj.kind if not isinstance(traj, str) else traj)[:40]
    return f"{env_part}-{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
