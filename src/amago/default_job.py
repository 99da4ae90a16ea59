"""The embedded main job: what `amago run` trains when it is given no env.

A T-Maze with a 10-step corridor (passive, from the numpy suites): the goal side is shown only at the first
step, so the agent must remember it for 10 steps. A small Transformer solves it on a laptop CPU in minutes.
Settings follow AMAGO's T-Maze example (reward x100, gamma 0.9999, windows of one whole episode) scaled down
to a CPU budget. Every value can be overridden: `amago run -o schedule.epochs=80`.
"""

from __future__ import annotations

from typing import Any

from amago_core.hooks import hookimpl

CORRIDOR = 10
EPISODE = CORRIDOR + 1

DEFAULT_JOB: dict[str, Any] = {
    "env": {"id": "tmaze-passive", "corridor_length": CORRIDOR},
    "tstep_encoder": {
        "kind": "ff",
        "n_layers": 2,
        "d_hidden": 128,
        "d_output": 128,
        "normalize_inputs": False,
    },
    "traj_encoder": {"kind": "transformer", "d_model": 128, "n_heads": 8, "d_ff": 512, "n_layers": 3},
    "agent": {"kind": "agent", "reward_multiplier": 100.0, "gamma": 0.9999},
    # Noise at the start and near the junction, a quiet corridor in between (AMAGO's T-Maze exploration).
    "exploration": {"kind": "tmaze", "corridor_length": CORRIDOR},
    "run": {"max_seq_len": EPISODE, "seed": 1},
    "replay": {"traj_save_len": EPISODE},
    "rollout": {"parallel_actors": 12, "sample_actions_val": False},
    # One episode per actor and one update per 12 env steps each epoch (AMAGO's T-Maze ratio).
    "schedule": {
        "epochs": 100,
        "train_timesteps_per_epoch": EPISODE,
        "train_batches_per_epoch": EPISODE,
        "val_interval": 10,
        "val_timesteps_per_epoch": 2 * EPISODE,
        "ckpt_interval": 25,
    },
    "optim": {"lr_warmup_steps": 100},
    # 1,100 updates in all: the default interval (300) would leave training.png 4 points; one per epoch.
    "logging": {"log_interval": EPISODE},
}


@hookimpl
def amago_default_job() -> dict[str, Any]:
    """amago's embedded main job (see the module docstring)."""
    return DEFAULT_JOB
