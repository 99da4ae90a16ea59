"""Example 07: Meta-World k-shot meta-RL (ML1 / ML10 / ML45), with the hyperparameters of AMAGO's example 07.

Each meta-episode is ``--k`` trials of 500 steps on one task; the agent adapts across trials. Training and
validation use the benchmark's train tasks; the final evaluation uses its test tasks (held-out environments
for ML10/ML45, held-out goals for ML1). Needs ``pip install "amago-envs[metaworld]"``.

    python examples/07_metaworld.py --benchmark ml45 --traj-encoder mamba --run-name ml45
    python examples/07_metaworld.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_TRANSFORMER, add_common_flags, launch

from amago_core.config.sources import deep_merge

SMOKE = deep_merge(TINY_TRANSFORMER, {"env": {"max_episode_steps": 4}, "run": {"max_seq_len": 8}})


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on the test tasks, prints and returns the test metrics (success per trial and task)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark", default="ml1-reach-v3", help="ml1-<env>, ml10, ml45, mt10, mt50, ...")
    parser.add_argument("--k", type=int, default=3, help="trials per meta-episode")
    parser.add_argument("--max-seq-len", type=int, default=256)
    parser.add_argument(
        "--hide-rl2s", action="store_true", help="hide previous action and reward from the policy"
    )
    add_common_flags(
        parser, epochs=1000, run_name="metaworld", smoke_help="a tiny job in a temp folder (under a minute)"
    )
    args = parser.parse_args(argv)
    env_id = f"metaworld-{args.benchmark}"
    k = 2 if args.smoke else args.k
    trial = 4 if args.smoke else 500
    rollout = trial * k
    job: dict[str, Any] = {
        "env": {"id": env_id, "k_episodes": k},
        "tstep_encoder": {"kind": "ff", "hide_rl2s": args.hide_rl2s},
        "exploration": {"kind": "bilevel", "rollout_horizon": rollout},
        "run": {"max_seq_len": args.max_seq_len},
        "replay": {"traj_save_len": min(rollout + 1, 4 * args.max_seq_len)},
        "schedule": {"val_timesteps_per_epoch": 15 * rollout + 1},
    }
    if args.smoke:
        job["replay"]["traj_save_len"] = rollout + 1
        job["schedule"].update(train_timesteps_per_epoch=rollout + 1, val_timesteps_per_epoch=rollout + 1)
    # The test split: Meta-World's held-out tasks (amago run's final evaluation uses them too).
    return launch(job, args, smoke_job=SMOKE, eval_timesteps=20 * rollout + 1, name="07")


if __name__ == "__main__":
    main()
