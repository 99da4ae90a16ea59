"""amago's side of the side-by-side throughput measurement (``bench/vs_amago.py`` runs both sides).

The configuration is the one ``../shared/baselines/amago-3.3.0/amago_bench.py throughput`` measures AMAGO on:
Meta-Frozen-Lake 5x5, k=10, 16 ``sync`` actors (``--actors``), ``max_seq_len = traj_save_len = 250``, timestep encoder ff
1x128 -> 64, trajectory encoder 3 layers x 128 (transformer: 8 heads, d_ff 512, plain-PyTorch attention),
``agent`` with tau 0.004, epsilon-greedy 1.0 -> 0.05, batches of 24, one torch thread.

- collection: wall time of ``collect_new_training_data()`` with 250 steps per actor (4,000 env steps), called
  ``--collect-calls`` times; the first call is warm-up, the median of the rest is reported;
- training: ``train_step`` on batches from the train loader, ``--warmup`` untimed then ``--updates`` timed
  (loading + compute, as AMAGO's figure);
- the policy's ceiling: env steps/s of the policy alone (one cached step for all rows, no envs), which
  collection can at best reach;
- start-up: building the experiment and ``start()``; imports are timed by ``vs_amago.py`` from outside;
- utilisation (after the timed parts, so the counter's overhead is in no rate): the FLOPs of one policy step
  (``get_actions`` counted with ``FlopCounterMode`` over one more collection call, divided by its env steps: the
  mean over real rollouts, resets and growing caches included) and of one ``train_step`` (forward, backward,
  optimiser), the fp32 (and bf16 where the CPU has it) matmul peak measured now on the same core, and the
  GFLOP/s and MFU the rates above reach (``bench/flops.py``).

Prints one JSON object (``--out`` also writes it) and, on stderr, the utilisation table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/flops.py, a sibling script module
import flops

ROLLOUT = 250  # the lake's 25-step attempts x k = 10
TRAJ = {
    "ff": {"kind": "ff", "d_model": 128, "n_layers": 3},
    "rnn": {"kind": "rnn", "d_hidden": 128, "d_output": 128, "n_layers": 3},
    "transformer": {"kind": "transformer", "d_model": 128, "n_heads": 8, "d_ff": 512, "n_layers": 3},
    "mamba": {"kind": "mamba", "d_model": 128, "n_layers": 3},  # amago only (vs_amago.py measures the others)
}


def job(encoder: str, folder: str, precision: str, actors: int = 16) -> dict[str, Any]:
    """The measured configuration as an amago config tree (``actors`` parallel envs)."""
    return {
        "env": {"id": "frozen-lake", "size": 5, "k_episodes": 10},
        "tstep_encoder": {
            "kind": "ff",
            "n_layers": 1,
            "d_hidden": 128,
            "d_output": 64,
            "normalize_inputs": False,
        },
        "traj_encoder": TRAJ[encoder],
        "agent": {"kind": "agent", "tau": 0.004},
        "exploration": {"kind": "egreedy", "eps_start": 1.0, "eps_end": 0.05, "steps_anneal": 1_000_000},
        "run": {
            "name": f"tp-{encoder}",
            "ckpt_base_dir": folder,
            "max_seq_len": ROLLOUT,
            "seed": 0,
            "torch_threads": 1,
        },
        "replay": {"traj_save_len": ROLLOUT, "dset_max_size": 12_500},
        "rollout": {"parallel_actors": actors, "env_mode": "sync"},
        "optim": {"batch_size": 24, "mixed_precision": precision},
        "schedule": {
            "epochs": 1,
            "train_timesteps_per_epoch": ROLLOUT,
            "train_batches_per_epoch": 1_000,
            "val_interval": None,
            "ckpt_interval": None,
            "rolling_state": False,
        },
        "logging": {"verbose": False, "plot": False},
    }


def sync(device: Any) -> None:
    """Waits for queued CUDA work, so a timer measures the work rather than its launch."""
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def policy_ceiling(experiment: Any, actors: int, steps: int = 200) -> float:
    """Env steps/s the policy alone allows: one cached step for all ``actors`` rows, no envs (collection's
    ceiling)."""
    import torch

    from amago_core.experiment.acting import policy_input

    policy, device = experiment.policy, experiment.DEVICE
    policy.eval()
    timestep = experiment.train_envs.reset()
    hidden = policy.init_hidden_state(actors, device)
    with torch.no_grad():
        obs, rl2, time_idx = policy_input(timestep, device)
        for _ in range(5):
            policy.get_actions(obs, rl2, time_idx, hidden)
        start = time.perf_counter()
        for _ in range(steps):
            actions, hidden = policy.get_actions(obs, rl2, time_idx, hidden)
        actions.cpu()  # the envs need them on the host (a no-op on a CPU; waits for the GPU)
        elapsed = time.perf_counter() - start
    return actors * steps / elapsed


def count_flops(experiment: Any, loader: Any, batches: int, actors: int) -> dict[str, Any]:
    """FLOPs of one policy step (mean over one counted collection call) and of one ``train_step``.

    A batch is as long as its longest sampled window, so an update's FLOPs vary with the data: the update
    figure is the mean over ``batches`` counted batches, drawn from the same loader as the timed ones.
    """
    with flops.counting_method(experiment.policy, "get_actions") as acting:
        experiment.collect_new_training_data()
    counts, lengths = [], []
    for _ in range(batches):
        item = next(loader)
        batch = item if not isinstance(item, list) else item[0][0]
        update_flops, _ = flops.count_flops(experiment.train_step, batch, log_step=False)
        counts.append(update_flops)
        lengths.append(int(batch.rl2s.shape[1]))
    return {
        "policy_step_flops": acting.flops / (ROLLOUT * actors),
        "policy_calls_counted": acting.calls,
        "update_flops": statistics.mean(counts),
        "update_flops_counted": counts,
        "update_flops_batch_len": lengths,
    }


def utilisation_table(result: dict[str, Any]) -> str:
    """Rows: the work, its FLOPs, the rate measured above, and the GFLOP/s and MFU that rate reaches."""
    peak = result["peak_gflops"]
    # A bf16 run's matmuls run in bf16: its MFU is against the bf16 peak where one was measured.
    label = "bf16" if result["precision"] == "bf16" and peak["bf16"] else "fp32"
    step, update = result["policy_step_flops"], result["update_flops"]
    rows = [
        flops.peak_line(peak),
        f"{'work':28s} {'FLOPs':>12s} {'rate':>18s} {f'GFLOP/s ({label} MFU)':>24s}",
        f"{'collection (per env step)':28s} {flops.gflop(step):>12s} "
        f"{result['collect_steps_per_s']:>10.0f} steps/s "
        f"{flops.mfu_cells(step, 1 / result['collect_steps_per_s'], peak[label]):>24s}",
        f"{'policy only (per env step)':28s} {flops.gflop(step):>12s} "
        f"{result['policy_ceiling_steps_per_s']:>10.0f} steps/s "
        f"{flops.mfu_cells(step, 1 / result['policy_ceiling_steps_per_s'], peak[label]):>24s}",
        f"{'update (compute, mean)':28s} {flops.gflop(update):>12s} "
        f"{1 / result['mean_update_s']:>10.2f} upd/s   "
        f"{flops.mfu_cells(update, result['mean_update_s'], peak[label]):>24s}",
        f"batch length: {statistics.mean(result['update_flops_batch_len']):.0f} steps in the counted batches, "
        f"{result['timed_batch_len_mean']:.0f} in the timed ones (an update's FLOPs grow with it)",
    ]
    return "\n".join(rows)


def measure(
    encoder: str,
    collect_calls: int,
    warmup: int,
    updates: int,
    precision: str,
    flop_batches: int = 4,
    actors: int = 16,
) -> dict[str, Any]:
    from amago import Experiment
    from amago_core.config.sources import load_config

    load_start = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="amago-tp-") as folder:
        t0 = time.perf_counter()
        experiment = Experiment(load_config(base=job(encoder, folder, precision, actors), environ={}))
        experiment.start()
        startup = time.perf_counter() - t0
        try:
            calls = []
            for _ in range(collect_calls):
                t = time.perf_counter()
                experiment.collect_new_training_data()
                calls.append(time.perf_counter() - t)
            ceiling = policy_ceiling(experiment, actors)
            experiment.dataset.on_end_of_collection()
            loader = iter(experiment.init_dloaders())
            experiment.policy_aclr.train()
            load_s, step_s, lengths = [], [], []
            for _ in range(warmup + updates):
                t = time.perf_counter()
                item = next(loader)
                batch = item if not isinstance(item, list) else item[0][0]
                t1 = time.perf_counter()
                experiment.train_step(batch, log_step=False)
                sync(experiment.DEVICE)
                load_s.append(t1 - t)
                step_s.append(time.perf_counter() - t1)
                lengths.append(int(batch.rl2s.shape[1]))
            counted = count_flops(experiment, loader, flop_batches, actors)
            peak = flops.peaks(experiment.DEVICE)
        finally:
            experiment.close()
    steps_per_call = ROLLOUT * actors
    steady = calls[1:] or calls
    measured = sum(load_s[warmup:]) + sum(step_s[warmup:])
    return {
        "side": "amago",
        "encoder": encoder,
        "actors": actors,
        "precision": precision,
        "loadavg_at_start": load_start,
        "startup_s": startup,
        "collect_steps_per_s": steps_per_call / statistics.median(steady),
        "collect_call_s": calls,
        "policy_ceiling_steps_per_s": ceiling,
        "updates_per_s": updates / measured,
        "median_update_s": statistics.median(step_s[warmup:]),
        "mean_update_s": statistics.mean(step_s[warmup:]),
        "timed_batch_len_mean": statistics.mean(lengths[warmup:]),
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        **counted,
        "peak_gflops": peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--encoder", choices=sorted(TRAJ), default="transformer")
    parser.add_argument("--collect-calls", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument("--precision", choices=["no", "bf16"], default="no")
    parser.add_argument("--flop-batches", type=int, default=4, help="batches whose update FLOPs are counted")
    parser.add_argument("--actors", type=int, default=16, help="parallel envs stepped by one policy call")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = measure(
        args.encoder,
        args.collect_calls,
        args.warmup,
        args.updates,
        args.precision,
        args.flop_batches,
        args.actors,
    )
    text = json.dumps(result, indent=2)
    print(utilisation_table(result), file=sys.stderr)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
