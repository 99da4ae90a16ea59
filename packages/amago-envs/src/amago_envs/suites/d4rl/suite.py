"""``D4RLSuite``: the ``d4rl`` env suite (a minari dataset's environment, for evaluation and fine-tuning)."""

from __future__ import annotations

from typing import Any

from amago_envs.suites.d4rl.datasets import dataset_env_name, load_local_dataset
from amago_envs.suites.d4rl.env import NormalizedReturnLogger
from amago_envs.suites.d4rl.specs import D4RLConfig
from amago_envs.suites.suite import BuiltinSuite


class D4RLSuite(BuiltinSuite):
    """The ``d4rl`` env suite (env id ``d4rl``; the dataset is ``env.dataset``).

    Every split makes the dataset's environment; the training data comes from the run's protected buffer (see
    :mod:`amago_envs.suites.d4rl.convert`).

    Raises:
        ValueError: no dataset is configured (on first use).
    """

    config_type = D4RLConfig
    config: D4RLConfig

    @property
    def dataset_id(self) -> str:
        """The configured minari dataset id.

        Raises:
            ValueError: none is configured.
        """
        if not self.config.dataset:
            msg = "the d4rl suite needs a minari dataset id: pass -o env.dataset=DATASET_ID (see `minari list local`)."
            raise ValueError(msg)
        return self.config.dataset

    @property
    def env_name(self) -> str:
        """The dataset id with ``/`` and ``_`` written as ``-`` (the converter names files the same way)."""
        return dataset_env_name(self.dataset_id)

    def make_gym_env(self) -> Any:
        """The dataset's environment, logging the normalized return when the dataset has reference scores."""
        import gymnasium

        dataset = load_local_dataset(self.dataset_id)
        env = dataset.recover_environment(eval_env=self.config.eval_env)
        if self.config.max_episode_steps is not None:
            env = gymnasium.wrappers.TimeLimit(env.unwrapped, max_episode_steps=self.config.max_episode_steps)
        # minari keeps reference scores (when the dataset has them) in its metadata, like D4RL's.
        metadata = dataset.storage.metadata
        ref_min, ref_max = metadata.get("ref_min_score"), metadata.get("ref_max_score")
        if ref_min is not None and ref_max is not None and ref_min != ref_max:
            env = NormalizedReturnLogger(env, ref_min, ref_max)
        return env
