"""amago's side of the side-by-side throughput measurement (``bench/vs_amago.py`` runs both sides).

The configuration is the one ``../shared/baselines/amago-3.3.0/amago_bench.py throughput`` measures AMAGO on:
Meta-Frozen-Lake 5x5, k=10, 16 ``sync`` actors (``--actors``), ``max_seq_len = traj_save_len = 250``, timestep encoder ff
1x128 -> 64, trajectory encoder 3 layers x 128 (transformer: 8 heads, d_ff 512, plain-PyTorch attention),
``agent`` with tau 0.004, epsilon-greedy 1.0 -> 0.05, batches of 24, one torch thread.

``--encoder`` takes any registered trajectory encoder, as ``bench/update.py --encoders`` does: ``ff``, ``rnn``
(``gru``), ``transformer`` and ``mamba`` at the sizes above, any other name (amago-memories' ``ffm``, ``lru``,
``mingru``, ``mlstm``, ``linear_attention``, ``gtrxl``, a third party's) at its config's defaults, and
``--traj-option [ENCODER:]KEY=VALUE`` on top. One encoder at one ``--actors`` count is measured in this process and
printed as one JSON object (what ``vs_amago.py`` reads). Several (``--encoder a b``, ``--actors 16 64``, or
``--memories``: the README speed table's set) are measured one fresh process each, so no row's peak RSS or torch
state carries into the next, and printed as a JSON list of those objects with a summary table on stderr. The
README's table of the memories at 16 and 64 actors::

    OMP_NUM_THREADS=1 .venv/bin/python bench/throughput.py --memories --actors 16 64 \\
        --traj-option n_layers=3 --out bench/out/throughput_memories.json

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
  GFLOP/s and MFU the rates above reach (``bench/flops.py``). FLOPs are matmul-class ops: a scan's element-wise
  work is not counted, complex matmuls are counted at their real FLOPs, and a row whose counts saw complex
  element-wise work says so (``*_flops_note``; the share it left out in ``*_flops_audit``).

Prints one JSON object (``--out`` also writes it) and, on stderr, the utilisation table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# bench/flops.py and bench/update.py, sibling script modules
sys.path.insert(0, str(Path(__file__).resolve().parent))
import flops

# The encoders' sizes (TRAJ: mamba is amago only, vs_amago.py measures the others) and how names and options are
# read are bench/update.py's, so both scripts measure the same encoder for the same words.
from update import (
    MEMORIES,
    TRAJ,
    UsageError,
    add_encoder_arguments,
    resolved_config,
    traj_configs,
    usage_failure,
)

ROLLOUT = 250  # the lake's 25-step attempts x k = 10


def job(
    encoder: str, folder: str, precision: str, actors: int = 16, traj: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The measured configuration as an amago config tree (``actors`` parallel envs).

    Args:
        encoder: the trajectory encoder's name (the run's name; its :data:`TRAJ` table when ``traj`` is None).
        folder: where the run folder goes.
        precision: ``optim.mixed_precision``.
        actors: parallel envs.
        traj: the trajectory-encoder table (``update.traj_configs``); None: ``TRAJ[encoder]``.
    """
    return {
        "env": {"id": "frozen-lake", "size": 5, "k_episodes": 10},
        "tstep_encoder": {
            "kind": "ff",
            "n_layers": 1,
            "d_hidden": 128,
            "d_output": 64,
            "normalize_inputs": False,
        },
        "traj_encoder": TRAJ[encoder] if traj is None else traj,
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
    figure is the mean over ``batches`` counted batches, drawn from the same loader as the timed ones. Each
    count is audited for complex-valued work (``flops.auditing_complex``): ``*_flops_audit`` and a sentence in
    ``*_flops_note`` where there was some (None where not).
    """
    with (
        flops.auditing_complex() as acting_audit,
        flops.counting_method(experiment.policy, "get_actions") as acting,
    ):
        experiment.collect_new_training_data()
    counts, lengths = [], []
    with flops.auditing_complex() as update_audit:
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
        "policy_flops_audit": acting_audit.to_json(),
        "policy_flops_note": acting_audit.note(acting.flops),
        "update_flops_audit": update_audit.to_json(),
        "update_flops_note": update_audit.note(sum(counts)),
    }


def utilisation_table(result: dict[str, Any]) -> str:
    """Rows: the work, its FLOPs, the rate measured above, and the GFLOP/s and MFU that rate reaches."""
    peak = result["peak_gflops"]
    label = mfu_label(result)
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
    for what in ("policy", "update"):
        if result.get(f"{what}_flops_note"):
            rows.append(f"{what} FLOPs: {result[f'{what}_flops_note']}")
    return "\n".join(rows)


def mfu_label(result: dict[str, Any]) -> str:
    """The peak a row's MFU is against: a bf16 run's matmuls run in bf16, so the bf16 peak where measured."""
    return "bf16" if result["precision"] == "bf16" and result["peak_gflops"]["bf16"] else "fp32"


def utilisation(result: dict[str, Any]) -> dict[str, Any]:
    """The GFLOP/s and MFU of the update and of collection, as fields of the row (the table's cells)."""
    peak = result["peak_gflops"][mfu_label(result)]
    update_rate, update_mfu = flops.mfu(result["update_flops"], result["mean_update_s"], peak)
    collect_rate, collect_mfu = flops.mfu(
        result["policy_step_flops"], 1 / result["collect_steps_per_s"], peak
    )
    return {
        "mfu_peak": mfu_label(result),
        "update_gflops_per_s": update_rate,
        "update_mfu": update_mfu,
        "collect_gflops_per_s": collect_rate,
        "collect_mfu": collect_mfu,
    }


def measure(
    encoder: str,
    collect_calls: int,
    warmup: int,
    updates: int,
    precision: str,
    flop_batches: int = 4,
    actors: int = 16,
    traj: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One row: ``encoder`` (its table ``traj``; None: :data:`TRAJ`'s) at ``actors`` parallel envs, in this process.

    Returns:
        The row's JSON object (the module docstring says what is measured).
    """
    from amago import Experiment
    from amago_core.config.sources import load_config

    load_start = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="amago-tp-") as folder:
        t0 = time.perf_counter()
        experiment = Experiment(load_config(base=job(encoder, folder, precision, actors, traj), environ={}))
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
    table = TRAJ[encoder] if traj is None else traj
    result = {
        "side": "amago",
        "encoder": encoder,
        "traj_encoder": resolved_config(table),
        "traj_table": table,
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
        "collect_calls": collect_calls,
        "warmup": warmup,
        "updates": updates,
    }
    return {**result, **utilisation(result)}


def measure_fresh(
    encoder: str, actors: int, table: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    """One row measured by this script in a fresh interpreter (its own peak RSS; no torch state of other rows).

    The child prints its utilisation table to this process's stderr as it goes; a failed row is kept as
    ``{"encoder", "actors", "error"}`` so that the other rows of a long table still come back.
    """
    with tempfile.TemporaryDirectory(prefix="amago-tp-row-") as folder:
        out = Path(folder) / "row.json"
        cmd = [
            sys.executable, __file__, "--encoder", encoder, "--actors", str(actors),
            "--collect-calls", str(args.collect_calls), "--warmup", str(args.warmup), "--updates", str(args.updates),
            "--precision", args.precision, "--flop-batches", str(args.flop_batches),
            "--traj-table", json.dumps(table), "--out", str(out),
        ]  # fmt: skip
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
        if done.returncode != 0 or not out.exists():
            return {
                "encoder": encoder,
                "actors": actors,
                "error": f"the row's process exited {done.returncode}",
            }
        return json.loads(out.read_text())


def summary_table(rows: list[dict[str, Any]]) -> str:
    """One line per row: the README speed table's figures (MFU against each row's precision's peak)."""
    lines = [
        f"{'traj encoder':<18}{'actors':>7}{'updates/s':>11}{'collect steps/s':>17}{'peak RSS GiB':>14}"
        f"{'FLOPs/update':>14}{'update GFLOP/s (MFU)':>24}{'FLOPs/step':>14}{'collect GFLOP/s (MFU)':>25}"
    ]
    notes = []
    for row in rows:
        if "error" in row:
            lines.append(f"{row['encoder']:<18}{row['actors']:>7}  {row['error']}")
            continue
        peak = row["peak_gflops"][row["mfu_peak"]]
        lines.append(
            f"{row['encoder']:<18}{row['actors']:>7}{row['updates_per_s']:>11.3g}{row['collect_steps_per_s']:>17,.0f}"
            f"{row['peak_rss_gib']:>14.2f}{flops.gflop(row['update_flops']):>14}"
            f"{flops.mfu_cells(row['update_flops'], row['mean_update_s'], peak):>24}"
            f"{flops.gflop(row['policy_step_flops']):>14}"
            f"{flops.mfu_cells(row['policy_step_flops'], 1 / row['collect_steps_per_s'], peak):>25}"
        )
        for what in ("policy", "update"):
            if row.get(f"{what}_flops_note"):
                notes.append(
                    f"{row['encoder']} at {row['actors']} actors, {what} FLOPs: {row[f'{what}_flops_note']}"
                )
    return "\n".join(
        [
            *lines,
            *notes,
            "FLOPs are matmul-class ops only (element-wise work, a scan's included, is not counted); updates/s "
            "includes batch loading, the GFLOP/s the update's compute alone",
        ]
    )


def main() -> None:
    """Measures the rows asked for: in this process for one, one fresh process each for several."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_encoder_arguments(parser, "--encoder", ["transformer"])
    parser.add_argument("--collect-calls", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument("--precision", choices=["no", "bf16"], default="no")
    parser.add_argument("--flop-batches", type=int, default=4, help="batches whose update FLOPs are counted")
    parser.add_argument(
        "--actors",
        type=int,
        nargs="+",
        default=[16],
        help="parallel envs stepped by one policy call; several: one row (and process) per count",
    )
    parser.add_argument("--out", type=Path, help="also write the JSON (one row: an object; several: a list)")
    # A row's process (measure_fresh): its encoder's table, validated by the parent.
    parser.add_argument("--traj-table", help=argparse.SUPPRESS)
    args = parser.parse_args()
    encoders = MEMORIES if args.memories else args.encoder
    if args.traj_table:
        tables = {name: json.loads(args.traj_table) for name in encoders}
    else:
        try:
            tables = traj_configs(encoders, args.traj_option)
        except UsageError as exc:
            usage_failure(parser, exc)
    pairs = [(encoder, actors) for encoder in encoders for actors in args.actors]
    if len(pairs) == 1:
        ((encoder, actors),) = pairs
        result = measure(
            encoder,
            args.collect_calls,
            args.warmup,
            args.updates,
            args.precision,
            args.flop_batches,
            actors,
            tables[encoder],
        )
        print(utilisation_table(result), file=sys.stderr)
        text = json.dumps(result, indent=2)
        if args.out:
            args.out.write_text(text + "\n")
        print(text)
        return
    rows = []
    for encoder, actors in pairs:
        print(
            f"== {encoder} at {actors} actors (load average {os.getloadavg()[0]:.2f})",
            file=sys.stderr,
            flush=True,
        )
        rows.append(measure_fresh(encoder, actors, tables[encoder], args))
        if args.out:  # after every row, so a long table interrupted keeps what it measured
            args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(summary_table(rows), file=sys.stderr)
    print(json.dumps(rows, indent=2))
    if any("error" in row for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
