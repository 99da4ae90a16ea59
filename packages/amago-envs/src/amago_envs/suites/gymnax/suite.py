"""``GymnaxSuite``: builds the batched gymnax env of one task wrapped in ``AMAGOEnv(batched_envs=N)``."""

from __future__ import annotations

from typing import Any

from amago_core.rollout.env import AMAGOEnv
from amago_core.suggest import did_you_mean
from amago_envs.suites.gymnax.specs import GYMNAX_DEFAULT_TASK, GymnaxConfig
from amago_envs.suites.suite import BuiltinSuite, check_split


class GymnaxSuite(BuiltinSuite):
    """The ``gymnax`` env suite: ``gymnax-<gymnax env name>``, one jax batch per environment instance."""

    config_type = GymnaxConfig
    config: GymnaxConfig

    @property
    def default_task(self) -> str:
        """MemoryChain-bsuite: the memory task AMAGO's gymnax example reports on."""
        return GYMNAX_DEFAULT_TASK

    @property
    def env_name(self) -> str:
        """``gymnax-<task>`` (gymnax names have no ``/`` or ``_``)."""
        return f"gymnax-{self.task}"

    def make_gym_env(self) -> Any:
        """The batched gymnax env (numpy in and out), before the AMAGOEnv wrap.

        Raises:
            ValueError: ``env_params`` names a field the task's ``EnvParams`` does not have.
        """
        import gymnax

        from amago_envs.suites.gymnax.vector_env import GymnaxVectorEnv

        try:
            _, params = gymnax.make(self.task)
        except OSError as exc:  # MNISTBandit fetches MNIST when it is built
            msg = f"gymnax task {self.task!r} downloads data when it is built and that failed ({exc}); use another task."
            raise RuntimeError(msg) from exc
        unknown = sorted(set(self.config.env_params) - set(type(params).__dataclass_fields__))
        if unknown:
            fields = sorted(type(params).__dataclass_fields__)
            msg = (
                f"gymnax task {self.task!r} has no env param(s) {unknown}.{did_you_mean(unknown[0], fields)} "
                f"Its params: {', '.join(fields)}."
            )
            raise ValueError(msg)
        params = params.replace(**self.config.env_params)
        return GymnaxVectorEnv(
            self.required_task, params, self.config.num_envs, seed=self.config.seed, env_name=self.env_name
        )

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """The batch wrapped in ``AMAGOEnv(batched_envs=num_envs)`` (gymnax has no data splits).

        Raises:
            ValueError: ``split`` is not one of train, val, test.
        """
        check_split(split)
        return AMAGOEnv(self.make_gym_env(), env_name=self.env_name, batched_envs=self.config.num_envs)
