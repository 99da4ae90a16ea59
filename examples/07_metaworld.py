"""Example 07: Meta-World k-shot meta-RL (ML1 / ML10 / ML45), with the hyperparameters of AMAGO's example 07.

Each meta-episode is ``--k`` trials of 500 steps on one task; the agent adapts across trials. Training and
validation use the benchmark's train tasks; the final evaluation uses its test tasks (held-out environments
for ML10/ML45, held-out goals for ML1). Needs ``pip install "amago-envs[metaworld]"``.

    python examples/07_metaworld.py --benchmark ml45 --traj-encoder mamba --run-name ml45
    python examples/07_metaworld.py --smoke
"""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
from typing import Any

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.presets import preset_for_env
from amago_core.config.sources import deep_merge
from amago_core.experiment.builder import build_experiment
from amago_core.plugins.registry import registries

SMOKE: dict[str, Any] = {
    "env": {"max_episode_steps": 4},
    "traj_encoder": {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1},
    "tstep_encoder": {"kind": "ff", "d_hidden": 16, "d_output": 16},
    "run": {"max_seq_len": 8},
    "rollout": {"parallel_actors": 2},
    "schedule": {"epochs": 1, "train_batches_per_epoch": 2, "val_interval": 1},
    "optim": {"batch_size": 2},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on the test tasks, prints and returns the test metrics (success per trial and task)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark", default="ml1-reach-v3", help="ml1-<env>, ml10, ml45, mt10, mt50, ...")
    parser.add_argument("--k", type=int, default=3, help="trials per meta-episode")
    parser.add_argument("--max-seq-len", type=int, default=256)
    parser.add_argument(
        "--hide-rl2s", action="store_true", help="hide previous action and reward from the policy"
    )
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--run-name", default="metaworld")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (under a minute)")
    args = parser.parse_args(argv)
    env_id = f"metaworld-{args.benchmark}"
    k = 2 if args.smoke else args.k
    trial = 4 if args.smoke else 500
    rollout = trial * k
    job: dict[str, Any] = {
        "env": {"id": env_id, "k_episodes": k},
        "tstep_encoder": {"kind": "ff", "hide_rl2s": args.hide_rl2s},
        "traj_encoder": {"kind": args.traj_encoder},
        "exploration": {"kind": "bilevel", "rollout_horizon": rollout},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": args.max_seq_len},
        "replay": {"traj_save_len": min(rollout + 1, 4 * args.max_seq_len)},
        "schedule": {"epochs": args.epochs, "val_timesteps_per_epoch": 15 * rollout + 1},
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.smoke:
        job = deep_merge(job, SMOKE)
        job["run"]["ckpt_base_dir"] = tempfile.mkdtemp(prefix="amago-07-")
        job["replay"]["traj_save_len"] = rollout + 1
        job["schedule"].update(train_timesteps_per_epoch=rollout + 1, val_timesteps_per_epoch=rollout + 1)
    config = ExperimentConfig.model_validate(deep_merge(preset_for_env(env_id) or {}, job))
    suite = registries().env_suites.build(config.env)
    experiment = build_experiment(config)
    experiment.start()
    try:
        experiment.learn()
        # The test split: Meta-World's held-out tasks (amago run's own final evaluation uses the val envs).
        metrics = experiment.evaluate_test(functools.partial(suite.make_env, "test"), 20 * rollout + 1)
    finally:
        experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
