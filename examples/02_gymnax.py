"""Example 02: a gymnax (jax) environment as one already-vectorised batch, with AMAGO's example-02 settings.

The whole batch of ``--parallel-actors`` rows is one jit-compiled jax program; amago steps it with
``env_mode = "already_vectorized"``. jax runs on its own backend: the CPU here, the GPU torch uses when
``jax[cuda]`` is installed (XLA's memory preallocation is turned off so the two can share it).

    python examples/02_gymnax.py --env MemoryChain-bsuite --run-name memchain
    python examples/02_gymnax.py --smoke
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from typing import Any

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.presets import preset_for_env
from amago_core.config.sources import deep_merge
from amago_core.experiment.builder import build_experiment
from amago_core.plugins.errors import PluginError

MISSING_EXIT_CODE = 2
"""Exit status when the gymnax extra is not installed (the message says how to install it)."""

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
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=500)
    parser.add_argument("--run-name", default="gymnax")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    actors = 2 if args.smoke else args.parallel_actors
    seq_len = 8 if args.smoke else args.max_seq_len
    eval_steps = 8 if args.smoke else args.eval_timesteps
    env_id = f"gymnax-{args.env}"
    job: dict[str, Any] = {
        "env": {"id": env_id, "num_envs": actors},
        "rollout": {"env_mode": "already_vectorized", "parallel_actors": actors},
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": seq_len},
        "replay": {"traj_save_len": 20 * seq_len},
        "schedule": {"epochs": args.epochs, "val_timesteps_per_epoch": eval_steps},
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.smoke:
        job = deep_merge(job, SMOKE)
        job["run"]["ckpt_base_dir"] = tempfile.mkdtemp(prefix="amago-02-")
    try:
        config = ExperimentConfig.model_validate(deep_merge(preset_for_env(env_id) or {}, job))
        experiment = build_experiment(config)
    except PluginError as exc:
        print(f"02_gymnax: {exc}", file=sys.stderr)
        raise SystemExit(MISSING_EXIT_CODE) from None
    experiment.start()
    try:
        experiment.learn()
        metrics = experiment.evaluate_test(experiment.make_val_env, eval_steps)
    finally:
        experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
