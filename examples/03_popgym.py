"""Example 03: POPGym memory tasks (or AMAGO-2's multi-domain mix) with the settings of AMAGO's example 03.

The ``popgym`` suite's preset supplies what the AMAGO paper reused across every POPGym task: a 2000-step
context with learned positions, 18 discount factors, rewards x100 (x200 for ``--multidomain``), a slow target
network and near-greedy discrete policies.

    python examples/03_popgym.py --env autoencode-easy --run-name autoencode
    python examples/03_popgym.py --multidomain
    python examples/03_popgym.py --smoke

That recipe is sized for a GPU and millions of env steps. On a CPU, ``amago run --env popgym-autoencode-easy -c
examples/recipes/popgym-cpu.toml --steps 60000`` keeps the learning math and changes the memory width, the
update-to-data ratio and the exploration schedule (measured against the preset in the README).
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_RNN, add_common_flags, launch

SMOKE = TINY_RNN


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on fresh envs, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="autoencode-easy", help="POPGym task, e.g. repeat-previous-easy")
    parser.add_argument("--multidomain", action="store_true", help="AMAGO-2's 27-task MultiDomainPOPGym")
    parser.add_argument("--max-seq-len", type=int, default=2000)
    add_common_flags(parser, epochs=1000, run_name="03_popgym")
    args = parser.parse_args(argv)
    env_id = "popgym-multidomain" if args.multidomain else f"popgym-{args.env}"
    # Trajectory files, validation rollouts and learned positions all cover at least one 2000-step horizon.
    horizon = 16 if args.smoke else max(args.max_seq_len, 2000)
    seq_len = 8 if args.smoke else args.max_seq_len
    job: dict[str, Any] = {
        "env": {"id": env_id},
        "run": {"max_seq_len": seq_len},
        "replay": {"traj_save_len": horizon},
        "schedule": {"val_timesteps_per_epoch": horizon},
    }
    if args.traj_encoder == "transformer":
        job["traj_encoder"] = {"max_time_idx": horizon}
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=lambda config: 10 * config.schedule.val_timesteps_per_epoch,
        name="03_popgym",
    )


if __name__ == "__main__":
    main()
