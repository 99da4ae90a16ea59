"""Gradient updates per second of the default ``agent`` on the Meta-Frozen-Lake reference model (CPU or GPU).

One update = loss forward + backward + gradient clipping + AdamW step + target/copy sync, on a batch of 24
sequences of 250 steps (251 observations) with Box(4,) observations and Discrete(5) actions, for the
timestep encoder ``ff`` (1 layer, 128 hidden, 64 out) and each trajectory encoder asked for. The agent is the
default one: 4 critics, 7 gammas, PopArt, binary filter.

``--encoders`` takes any registered trajectory encoder (``amago list traj-encoders``: the built-ins, amago-memories'
``ffm``, ``lru``, ``mingru``, ``mlstm``, ``linear_attention``, ``gtrxl``, a third party's). ``ff``, ``rnn`` (alias
``gru``), ``transformer`` and ``mamba`` keep the sizes every earlier figure was measured at, 3 layers × 128
(:data:`TRAJ`); any other name runs at its config's defaults. ``--traj-option KEY=VALUE`` (repeatable) sets an
option of every encoder asked for, ``--traj-option ENCODER:KEY=VALUE`` of one, each validated by the encoder's
config (e.g. ``--traj-option n_layers=3`` puts every encoder at 3 layers). ``--memories`` asks for the README speed
table's set (:data:`MEMORIES`).

Beside updates/s it prints the FLOPs of one update and of one policy step (counted with ``FlopCounterMode``,
``bench/flops.py``; the policy step is the mean over a 250-step rollout of 16 rows with inputs made on the host
each step, so a Transformer's growing cache is in it), the GFLOP/s reached, the fp32 matmul peak measured on the same core in the same run, and the
fraction of it reached (MFU).

Each (encoder, precision) times its updates in a fresh interpreter, which also reports its peak RSS over imports,
building and the timed updates (``resource`` max RSS, before FLOP counting): the peak of one precision cannot hide
the other's. ``--precision no bf16`` measures both, alternating, and ``--repeats`` gives a spread (median
[min-max] of updates/s) on a shared machine. ``--batches 8`` cycles through 8 batches, so the count of real steps
(the shape of every per-step layer) changes between updates as in training: on a CPU, bf16 matmuls run in oneDNN,
which keeps what it builds for each new shape in two caches (``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` and ideep's
``LRU_CACHE_CAPACITY``, 1,024 entries each by default), ~30 MB more RSS per update at a new count of real steps
here: a training run's peak RSS shows it, a one-batch bench does not. A run bounds both caches for bf16 on a CPU
(``amago_core.experiment.hardware.ONEDNN_CACHE_LIMITS``), and each child here does the same.

Ratios against AMAGO count only when both sides run in one session on one machine: ``bench/vs_amago.py`` does
that. This script times amago's update alone (a quick check while working on the update's cost).

Run: ``.venv/bin/python bench/update.py`` (``--updates`` to trade time for stability, ``--encoders`` to pick,
``--threads 1 2`` for a table per CPU thread count, ``--precision no bf16 --repeats 3`` for fp32 against bf16
autocast; ``--device cuda --precision bf16`` on a GPU; the bf16 peak is measured where bf16 matmuls are native;
``--out rows.json`` also writes one JSON row per encoder, precision and thread count).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch
from gymnasium import spaces
from pydantic import ValidationError

from amago_core.config.sources import parse_value
from amago_core.data.batch import Batch
from amago_core.experiment.hardware import bound_onednn_caches
from amago_core.plugins import PluginError, registries
from amago_core.plugins.strict import describe_validation_error

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/flops.py, a sibling script module
import flops

BATCH, STEPS, ACTIONS = 24, 250, 5
ROWS = 16  # policy rows per acting step, as the side-by-side configuration's 16 actors
TSTEP = {"kind": "ff", "n_layers": 1, "d_hidden": 128, "d_output": 64}
TRAJ = {
    "ff": {"kind": "ff", "d_model": 128, "n_layers": 3},
    "rnn": {"kind": "rnn", "d_hidden": 128, "d_output": 128, "n_layers": 3},
    "transformer": {"kind": "transformer", "d_model": 128, "n_heads": 8, "d_ff": 512, "n_layers": 3},
    "mamba": {"kind": "mamba", "d_model": 128, "n_layers": 3},
}
DEFAULT_ENCODERS = ["ff", "rnn", "transformer"]  # mamba's pure-PyTorch scan is slow on a CPU: ask for it
NAME_WIDTH = 18  # the table's encoder column: linear_attention is 16 characters
MEMORIES = ["gru", "transformer", "ffm", "lru", "mingru", "mlstm", "linear_attention", "gtrxl"]
"""The README speed table's memories (``--memories``): the built-in GRU and Transformer, and amago-memories' six."""


class UsageError(Exception):
    """A name or option the user typed that cannot be measured; the message is one line."""


def parse_traj_options(items: list[str]) -> list[tuple[str | None, str, object]]:
    """``--traj-option`` values as ``(encoder or None, key, value)``; a value is JSON when it is JSON, else text.

    Args:
        items: ``KEY=VALUE`` (every encoder) or ``ENCODER:KEY=VALUE`` (that encoder only).

    Raises:
        UsageError: an item of another form.
    """
    parsed = []
    for item in items:
        target, sep, raw = item.partition("=")
        scope, colon, key = target.rpartition(":")
        if not sep or not key.strip() or (colon and not scope.strip()):
            msg = f"--traj-option {item!r} must look like KEY=VALUE or ENCODER:KEY=VALUE (e.g. d_model=128)"
            raise UsageError(msg)
        if key.strip() == "kind":  # the encoder's name chooses it
            msg = f"--traj-option {item!r}: name the encoder instead of setting kind"
            raise UsageError(msg)
        parsed.append((scope.strip() or None, key.strip(), parse_value(raw)))
    return parsed


def traj_configs(names: list[str], items: list[str]) -> dict[str, dict[str, object]]:
    """The trajectory-encoder table each name is measured with, validated by its encoder's config.

    A name :data:`TRAJ` pins (or an alias of one: ``gru`` is ``rnn``) starts from that table, so its figures stay
    comparable with the earlier ones; any other registered name starts from its config's defaults. The
    ``--traj-option`` items are set on top.

    Args:
        names: registered trajectory-encoder names, as typed.
        items: the ``--traj-option`` values (:func:`parse_traj_options`).

    Returns:
        ``{name: table}``, a table as a run config's ``traj_encoder`` (``kind`` and the options set).

    Raises:
        UsageError: an unknown name (the message lists the registered ones), an option scoped to an encoder not
            asked for, or an option the encoder's config rejects.
    """
    registry = registries().traj_encoders
    canonical = {}
    for name in names:
        try:
            canonical[name] = registry.resolve(name)
        except PluginError as exc:
            raise UsageError(str(exc)) from None
    options = []
    for scope, key, value in parse_traj_options(items):
        if scope is not None:
            # By canonical name, so that an option scoped to ``gru`` reaches ``rnn`` and the other way round.
            kind = registry.resolve(scope) if scope in registry else scope
            if kind not in canonical.values():
                wanted = ", ".join(names)
                msg = f"--traj-option {scope}:{key}=...: {scope!r} is not among the encoders measured ({wanted})"
                raise UsageError(msg)
            scope = kind
        options.append((scope, key, value))
    tables = {}
    for name, kind in canonical.items():
        table: dict[str, object] = dict(TRAJ.get(kind, {"kind": kind}))
        table.update({key: value for scope, key, value in options if scope in (None, kind)})
        try:
            registry.make_config(table)
        except ValidationError as exc:
            msg = "; ".join(describe_validation_error(exc, source=f"--traj-option for {name}"))
            if any(scope is None for scope, _, _ in options):
                msg += " (KEY=VALUE sets every encoder measured; ENCODER:KEY=VALUE one)"
            raise UsageError(msg) from None
        except (PluginError, ValueError) as exc:
            raise UsageError(f"{name}: {exc}") from None
        tables[name] = table
    return tables


def resolved_config(table: dict[str, object]) -> dict[str, object]:
    """Every option of the encoder ``table`` builds, defaults included (what a row records)."""
    return registries().traj_encoders.make_config(table).to_dict()


def random_batch(
    rng: np.random.Generator,
    device: torch.device | str,
    *,
    rows: int = BATCH,
    steps: int = STEPS,
    padded: bool = True,
) -> Batch:
    """A Meta-Frozen-Lake-shaped batch (Box(4,) observations, Discrete(5) actions) where some steps terminate;
    with ``padded`` a third of the rows end early (padding). ``bench/compile_speed.py`` takes it unpadded."""
    length = steps + 1
    if padded:
        lengths = np.where(rng.random(rows) < 1 / 3, rng.integers(20, length, rows), length)
        mask = np.arange(length)[None, :] < lengths[:, None]
    else:
        mask = np.ones((rows, length), bool)
    actions = np.eye(ACTIONS, dtype=np.float32)[rng.integers(0, ACTIONS, (rows, steps))]
    rews = rng.random((rows, steps, 1)).astype(np.float32)
    rl2s = np.concatenate(
        [np.zeros((rows, 1, 1 + ACTIONS), np.float32), np.concatenate([rews, actions], -1)], 1
    )
    batch = Batch(
        obs={"observation": rng.integers(0, 5, (rows, length, 4)).astype(np.float32)},
        rl2s=rl2s,
        time_idxs=np.broadcast_to(np.arange(length)[None, :, None], (rows, length, 1)).copy(),
        rews=rews,
        dones=rng.random((rows, steps, 1)) < 0.01,
        actions=actions,
        mask=mask,
    )
    return batch.to_torch(torch.device(device))


def build_agent(traj: str | dict[str, object], device: torch.device) -> torch.nn.Module:
    """The default ``agent`` on the Meta-Frozen-Lake shapes with trajectory encoder ``traj``, on ``device``.

    Args:
        traj: a :data:`TRAJ` name, or a trajectory-encoder table (:func:`traj_configs`).
        device: where the agent lives.
    """
    obs_space = spaces.Dict({"observation": spaces.Box(0, 4, (4,))})
    rl2_space = spaces.Box(-np.inf, np.inf, (1 + ACTIONS,))
    return (
        registries()
        .agents.build(
            "agent",
            obs_space=obs_space,
            rl2_space=rl2_space,
            action_space=spaces.Discrete(ACTIONS),
            max_seq_len=STEPS,
            tstep_encoder=registries().tstep_encoders.builder(TSTEP),
            traj_encoder=registries().traj_encoders.builder(TRAJ[traj] if isinstance(traj, str) else traj),
        )
        .to(device)
    )


def caster(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The forward's autocast under ``precision`` (parameters and the optimiser step stay fp32)."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def sync(device: torch.device) -> None:
    """Waits for queued CUDA work, so a timer measures the work rather than its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def measure_updates(
    traj: str | dict[str, object],
    updates: int,
    warmup: int,
    device: torch.device,
    precision: str,
    count_flops: bool = True,
    batches: int = 1,
) -> dict[str, float]:
    """Times ``updates`` full gradient updates after ``warmup`` untimed ones, then counts one update's FLOPs.

    The updates cycle through ``batches`` random batches (made beforehand): with more than one, the count of real
    steps changes from update to update as in training, and with it the shapes every per-step layer runs at.
    ``peak_rss`` is the process's peak RSS right after the timed updates (before the FLOP counter runs);
    ``flops_audit`` is the complex-valued work of the counted update (``bench/flops.py``'s ``ComplexAudit``)."""
    agent = build_agent(traj, device).train()
    params = list(agent.trainable_parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=1e-3)
    rng = np.random.default_rng(0)
    turns = itertools.cycle([random_batch(rng, device) for _ in range(batches)])

    def update() -> None:
        batch = next(turns)
        optimizer.zero_grad(set_to_none=True)
        with caster(device, precision):
            loss, _ = agent.loss(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        agent.soft_sync_targets()

    for _ in range(warmup):
        update()
    sync(device)
    start = time.perf_counter()
    for _ in range(updates):
        update()
    sync(device)
    elapsed = time.perf_counter() - start
    peak_rss = peak_rss_bytes()
    # Counted after timing: the counter's dispatch overhead must not enter the timed updates.
    update_flops, audit = None, None
    if count_flops:
        with flops.auditing_complex() as audit:
            update_flops = flops.count_flops(update)[0]
    return {
        "updates_per_s": updates / elapsed,
        "update_s": elapsed / updates,
        "update_flops": update_flops,
        "peak_rss": peak_rss,
        "flops_audit": audit.to_json() if audit else None,
    }


def measure_updates_fresh(
    traj: str | dict[str, object],
    updates: int,
    warmup: int,
    device: torch.device,
    precision: str,
    threads: int,
    count_flops: bool,
    batches: int = 1,
) -> dict[str, float]:
    """:func:`measure_updates` in a fresh interpreter (its own peak RSS; torch state of earlier runs left out)."""
    job = {
        "traj": traj,
        "updates": updates,
        "warmup": warmup,
        "batches": batches,
        "device": str(device),
        "precision": precision,
        "threads": threads,
        "count_flops": count_flops,
    }
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(job)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        kind = traj if isinstance(traj, str) else traj["kind"]
        msg = f"the update run for {kind} ({precision}) failed:\n{done.stderr[-4000:]}"
        raise RuntimeError(msg)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_child(job: dict) -> None:
    """The fresh interpreter's side of :func:`measure_updates_fresh`: prints the result as one JSON line."""
    torch.set_num_threads(job["threads"])
    torch.manual_seed(0)
    # The oneDNN cache limits a run sets for bf16 on a CPU (amago_core.experiment.hardware), set as a run sets them.
    bound_onednn_caches(torch.device(job["device"]).type, {job["precision"]})
    result = measure_updates(
        job["traj"],
        job["updates"],
        job["warmup"],
        torch.device(job["device"]),
        job["precision"],
        job["count_flops"],
        job["batches"],
    )
    print(json.dumps(result), flush=True)


def measure_acting(traj: str | dict[str, object], device: torch.device, precision: str) -> dict[str, object]:
    """One ``STEPS``-step rollout of ``ROWS`` rows through ``get_actions``: FLOPs and seconds per env step, and the
    complex-valued work of the counted rollout (``flops_audit``)."""
    agent = build_agent(traj, device).eval()
    rng = np.random.default_rng(1)

    def rollout() -> None:
        hidden = agent.init_hidden_state(ROWS, device)
        for t in range(STEPS):
            obs = {
                "observation": torch.from_numpy(rng.integers(0, 5, (ROWS, 1, 4)).astype(np.float32)).to(
                    device
                )
            }
            rl2 = torch.from_numpy(rng.random((ROWS, 1, 1 + ACTIONS)).astype(np.float32)).to(device)
            time_idx = torch.full((ROWS, 1, 1), t, dtype=torch.long, device=device)
            with caster(device, precision):
                actions, hidden = agent.get_actions(obs, rl2, time_idx, hidden)
            actions.cpu()  # the env needs the actions on the host: each step waits for them, as in collection

    with torch.no_grad():
        rollout()  # warm-up
        times = []
        for _ in range(3):
            sync(device)
            start = time.perf_counter()
            rollout()
            sync(device)
            times.append(time.perf_counter() - start)
        with flops.auditing_complex() as audit:
            step_flops, _ = flops.count_flops(rollout)
    env_steps = ROWS * STEPS
    return {
        "step_flops": step_flops / env_steps,
        "step_s": statistics.median(times) / env_steps,
        "flops_audit": audit.to_json(),
        "flops_note": audit.note(step_flops),
    }


def spread(values: list[float], fmt: str = ".2f") -> str:
    """``median [min-max]`` of repeated measurements (the median alone for one)."""
    median = statistics.median(values)
    if len(values) == 1:
        return format(median, fmt)
    return f"{median:{fmt}} [{min(values):{fmt}}-{max(values):{fmt}}]"


def add_encoder_arguments(parser: argparse.ArgumentParser, flag: str, default: list[str] | None) -> None:
    """The trajectory-encoder flags both ``bench/update.py`` and ``bench/throughput.py`` take.

    Args:
        parser: the script's parser.
        flag: the flag naming encoders (``--encoders`` here, ``--encoder`` in ``throughput.py``).
        default: the encoders measured when none is named.
    """
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        flag,
        nargs="+",
        default=default,
        metavar="NAME",
        help="registered trajectory encoders (`amago list traj-encoders`); built-ins at 3 layers x 128, others at "
        "their defaults",
    )
    which.add_argument(
        "--memories",
        action="store_true",
        help=f"the README speed table's set: {' '.join(MEMORIES)}",
    )
    parser.add_argument(
        "--traj-option",
        action="append",
        default=[],
        metavar="[ENCODER:]KEY=VALUE",
        help="an option of every encoder measured (or of ENCODER only), validated by its config; repeatable",
    )


def usage_failure(parser: argparse.ArgumentParser, exc: UsageError) -> NoReturn:
    """Exits 2 with the problem on one line (argparse's usage block would bury it)."""
    parser.exit(2, f"{parser.prog}: error: {exc}\n")


def main() -> None:
    """Prints updates/s, peak RSS, policy steps/s, their FLOPs, GFLOP/s and MFU per trajectory encoder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=5, help="timed updates per encoder")
    parser.add_argument("--warmup", type=int, default=2, help="untimed updates first")
    add_encoder_arguments(parser, "--encoders", DEFAULT_ENCODERS)
    parser.add_argument("--device", default="cpu", help="cpu (one thread) or cuda")
    parser.add_argument(
        "--precision",
        nargs="+",
        choices=["no", "bf16"],
        default=["no"],
        help="autocast of the forwards; several are measured alternately (e.g. no bf16)",
    )
    parser.add_argument(
        "--batches",
        type=int,
        default=1,
        help="distinct random batches the updates cycle through (more than 1: shapes change as in training)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="fresh-process update runs per encoder and precision (a spread)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1],
        help="CPU torch threads, one table each (e.g. 1 2); the matmul peak is measured at each count",
    )
    parser.add_argument("--out", type=Path, help="also write the rows as a JSON list")
    parser.add_argument(
        "--child", help=argparse.SUPPRESS
    )  # a fresh interpreter's job (measure_updates_fresh)
    args = parser.parse_args()
    if args.child:
        run_child(json.loads(args.child))
        return
    encoders = MEMORIES if args.memories else args.encoders
    try:
        tables = traj_configs(encoders, args.traj_option)
    except UsageError as exc:
        usage_failure(parser, exc)
    device = torch.device(args.device)
    rows: list[dict[str, object]] = []
    for threads in args.threads if device.type == "cpu" else [1]:
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        where = f"{threads} thread(s)" if device.type == "cpu" else torch.cuda.get_device_name(device)
        print(
            f"torch {torch.__version__}, {where}, precision {' / '.join(args.precision)}, "
            f"{args.repeats} fresh process(es) per row, {args.updates} timed updates over {args.batches} "
            f"batch(es), load average {os.getloadavg()[0]:.2f}"
        )
        peak = flops.peaks(device)
        print(flops.peak_line(peak))
        print(
            f"{'traj encoder':<{NAME_WIDTH}}{'prec':<6}{'updates/s':>20}{'peak RSS GiB':>14}{'FLOPs/update':>14}"
            f"{'update GFLOP/s (MFU)':>24}{'policy steps/s':>16}{'FLOPs/step':>14}{'acting GFLOP/s (MFU)':>24}"
        )
        for traj in encoders:
            table = tables[traj]
            runs: dict[str, list[dict[str, Any]]] = {precision: [] for precision in args.precision}
            for repeat in range(args.repeats):  # precisions alternate, so a change of load hits each alike
                for precision in args.precision:
                    runs[precision].append(
                        measure_updates_fresh(
                            table,
                            args.updates,
                            args.warmup,
                            device,
                            precision,
                            threads,
                            count_flops=repeat == 0,
                            batches=args.batches,
                        )
                    )
            for precision in args.precision:
                # MFU against the peak of the precision the matmuls run in (bf16 autocast: the bf16 peak if measured).
                reference = peak["bf16"] if precision == "bf16" and peak["bf16"] else peak["fp32"]
                ups = [run["updates_per_s"] for run in runs[precision]]
                update_flops = runs[precision][0]["update_flops"]
                update_audit = runs[precision][0]["flops_audit"]
                update_note = flops.ComplexAudit(**update_audit).note(update_flops) if update_audit else None
                act = measure_acting(table, device, precision)
                peak_rss = max(run["peak_rss"] for run in runs[precision])
                print(
                    f"{traj:<{NAME_WIDTH}}{precision:<6}{spread(ups):>20}"
                    f"{peak_rss / 2**30:>14.2f}{flops.gflop(update_flops):>14}"
                    f"{flops.mfu_cells(update_flops, 1 / statistics.median(ups), reference):>24}"
                    f"{1 / act['step_s']:>16.0f}{flops.gflop(act['step_flops']):>14}"
                    f"{flops.mfu_cells(act['step_flops'], act['step_s'], reference):>24}",
                    flush=True,
                )
                for what, note in (("update", update_note), ("policy step", act["flops_note"])):
                    if note:
                        print(f"{'':<{NAME_WIDTH}}{what} FLOPs: {note}", flush=True)
                update_rate, update_mfu = flops.mfu(update_flops, 1 / statistics.median(ups), reference)
                acting_rate, acting_mfu = flops.mfu(act["step_flops"], act["step_s"], reference)
                rows.append(
                    {
                        "encoder": traj,
                        "traj_encoder": resolved_config(table),
                        "traj_table": table,
                        "precision": precision,
                        "device": str(device),
                        "threads": threads,
                        "updates": args.updates,
                        "warmup": args.warmup,
                        "batches": args.batches,
                        "updates_per_s": statistics.median(ups),
                        "updates_per_s_runs": ups,
                        "peak_rss_gib": peak_rss / 2**30,
                        "update_flops": update_flops,
                        "update_gflops_per_s": update_rate,
                        "update_mfu": update_mfu,
                        "update_flops_audit": update_audit,
                        "update_flops_note": update_note,
                        "policy_rows": ROWS,
                        "policy_steps_per_s": 1 / act["step_s"],
                        "policy_step_flops": act["step_flops"],
                        "policy_gflops_per_s": acting_rate,
                        "policy_mfu": acting_mfu,
                        "policy_flops_audit": act["flops_audit"],
                        "policy_flops_note": act["flops_note"],
                        "peak_gflops": peak,
                    }
                )
            if len(args.precision) > 1:
                base, other = args.precision[0], args.precision[1]
                ratios = [
                    b["updates_per_s"] / a["updates_per_s"]
                    for a, b in zip(runs[base], runs[other], strict=True)
                ]
                extra = max(run["peak_rss"] for run in runs[other]) - max(
                    run["peak_rss"] for run in runs[base]
                )
                print(
                    f"{'':<{NAME_WIDTH}}{other} / {base}: updates/s x{spread(ratios)} (run by run), "
                    f"peak RSS {extra / 2**30:+.2f} GiB",
                    flush=True,
                )
        print(
            "FLOPs are matmul-class ops only (element-wise work, a scan's included, is not counted); MFU against "
            "the peak of each row's precision (bf16 rows: the bf16 peak where measured); "
            f"load average at the end {os.getloadavg()[0]:.2f}"
        )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
