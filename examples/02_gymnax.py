"""Example 02: a gymnax (jax) environment as one already-vectorised batch, with AMAGO's example-02 settings.

The whole batch of ``--parallel-actors`` rows is one jit-compiled jax program; amago steps it with
``env_mode = "already_vectorized"``. jax runs on its own backend: the CPU here, the GPU torch uses when
``jax[cuda]`` is installed (XLA's memory preallocation is turned off so the two can share it).

    python examples/02_gymnax.py --env MemoryChain-bsuite --run-name memchain
    python examples/02_gymnax.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import add_common_flags, launch

from amago_core.plugins.errors import PluginError

SMOKE: dict[str, Any] = {
    "env": {"env_params": {"memory_length": 3}},
    "traj_encoder": {"kind": "rnn", "d_hidden": 16, "n_layers": 1, "d_output": 16},
    "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16},
    "schedule": {
        "epochs": 1,
        "train_timesteps_per_epoch": 8,
        "train_batches_per_epoch": 2,
        "val_interval": 1,
    },
    "optim": {"batch_size": 4},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on a fresh batch, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="MemoryChain-bsuite", help="gymnax environment name")
    parser.add_argument("--parallel-actors", type=int, default=24, help="rows in the jax batch")
    parser.add_argument("--max-seq-len", type=int, default=128)
    parser.add_argument("--eval-timesteps", type=int, default=1000)
    add_common_flags(parser, epochs=500, run_name="gymnax")
    args = parser.parse_args(argv)
    actors = 2 if args.smoke else args.parallel_actors
    seq_len = 8 if args.smoke else args.max_seq_len
    eval_steps = 8 if args.smoke else args.eval_timesteps
    env_id = f"gymnax-{args.env}"
    job: dict[str, Any] = {
        "env": {"id": env_id, "num_envs": actors},
        "rollout": {"env_mode": "already_vectorized", "parallel_actors": actors},
        "run": {"max_seq_len": seq_len},
        "replay": {"traj_save_len": 20 * seq_len},
        "schedule": {"val_timesteps_per_epoch": eval_steps},
    }
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=eval_steps,
        name="02_gymnax",
        missing=(PluginError,),
    )


if __name__ == "__main__":
    main()
