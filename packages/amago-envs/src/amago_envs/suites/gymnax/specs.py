"""Spec and config of the ``gymnax`` env suite (torch-, gymnasium- and jax-free: ``amago list envs`` loads it).

A task is a gymnax environment name (``gymnax-MemoryChain-bsuite``). The whole batch of ``num_envs`` rows is
one jit-compiled jax program, so the suite runs with ``rollout.env_mode = "already_vectorized"`` and
``rollout.parallel_actors == num_envs`` (the preset sets both; change them together).

jax runs on whatever device its installed backend picks. On this CPU-only machine that is the CPU; on a GPU
machine with ``jax[cuda]`` it is the same GPU torch trains on, so the suite's env module turns off XLA's
memory preallocation (``XLA_PYTHON_CLIENT_PREALLOCATE=false``) unless the user set it, leaving room for torch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task

GYMNAX_TASKS: tuple[str, ...] = (
    "CartPole-v1",
    "Pendulum-v1",
    "Acrobot-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
    "Asterix-MinAtar",
    "Breakout-MinAtar",
    "Freeway-MinAtar",
    "SpaceInvaders-MinAtar",
    "Catch-bsuite",
    "DeepSea-bsuite",
    "MemoryChain-bsuite",
    "UmbrellaChain-bsuite",
    "DiscountingChain-bsuite",
    "MNISTBandit-bsuite",
    "SimpleBandit-bsuite",
    "FourRooms-misc",
    "MetaMaze-misc",
    "PointRobot-misc",
    "BernoulliBandit-misc",
    "GaussianBandit-misc",
    "Reacher-misc",
    "Swimmer-misc",
    "Pong-misc",
)
"""gymnax's registered environments (gymnax 0.0.9), kept static so listing them needs no jax import."""

GYMNAX_DEFAULT_TASK = "MemoryChain-bsuite"
"""The bsuite memory task AMAGO's gymnax example reports on."""

GYMNAX_NUM_ENVS = 24
"""Default batch size; also the preset's ``rollout.parallel_actors`` (the two must match)."""

MAX_SEQ_LEN = 128
"""Example 02's ``--max_seq_len`` default."""


class GymnaxConfig(EnvSuiteConfig):
    """gymnax environments as one already-vectorised batch with same-step autoreset."""

    kind: Literal["gymnax"] = "gymnax"
    """Registered name of this env suite."""

    num_envs: int = Field(GYMNAX_NUM_ENVS, ge=1)
    """Rows stepped at once; must equal ``rollout.parallel_actors`` (already_vectorized mode)."""

    env_params: dict[str, float | int | bool] = Field(default_factory=dict)
    """Overrides of the gymnax ``EnvParams`` fields (``{"memory_length": 20}`` for MemoryChain)."""

    seed: int | None = None
    """Seed of the batch's jax key; None draws one per environment instance."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("gymnax", task, GYMNAX_TASKS)

    def smoke_options(self) -> dict[str, Any]:
        """``--smoke`` runs 2 actors, and an already-vectorised env has one row per actor: 2 rows."""
        return {"num_envs": 2}


GYMNAX = ComponentSpec(
    name="gymnax",
    group=ENV_SUITES_GROUP,
    summary="gymnax (jax) envs, one already-vectorised batch; bsuite memory tasks, MinAtar, classic control.",
    config=GymnaxConfig,
    factory="amago_envs.suites.gymnax.suite:GymnaxSuite",
    requires=("gymnax", "jax"),
    install_hint='pip install "amago-envs[gymnax]"',
    tasks=list(GYMNAX_TASKS),
    default_task=GYMNAX_DEFAULT_TASK,
    presets={
        # Example 02: already_vectorized with batched_envs = parallel_actors, traj_save_len = 20·max_seq_len,
        # grad_clip 2, l2 1e-4, compressed trajectory files; ff encoder sized for low-dim observations.
        "*": {
            "env": {"num_envs": GYMNAX_NUM_ENVS},
            "rollout": {"env_mode": "already_vectorized", "parallel_actors": GYMNAX_NUM_ENVS},
            "run": {"max_seq_len": MAX_SEQ_LEN},
            "replay": {"traj_save_len": 20 * MAX_SEQ_LEN, "save_trajs_as": "npz-compressed"},
            "optim": {"grad_clip": 2.0, "l2_coeff": 1e-4},
            "schedule": {"val_timesteps_per_epoch": 1000},
            "tstep_encoder": {"kind": "ff", "d_hidden": 128, "d_output": 96},
        },
    },
)
