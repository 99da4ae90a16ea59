"""AMAGO v3.3.0's FLOPs on the side-by-side throughput configuration, counted in AMAGO's own venv.

Run only by ``bench/vs_amago.py``, with the AMAGO reference venv's interpreter::

    TORCH_COMPILE_DISABLE=1 .venv-amago-ref/bin/python bench/flops_amago_ref.py --encoder ff --out X.json

It builds the experiment exactly as ``../shared/baselines/amago-3.3.0/amago_bench.py throughput`` does (its own
``make_experiment``, imported by path, with that program's default arguments), then, as ``bench/throughput.py``
does on amago's side (``bench/flops.py``):

- counts AMAGO's ``get_actions`` over the first of ``--collect-calls`` ``collect_new_training_data()`` calls
  (250 steps of 16 actors) and divides by its env steps: FLOPs per policy step; the other calls fill the buffer
  as the timed run's do, so the sampled batches are alike;
- counts ``train_step`` on ``--batches`` batches from AMAGO's train loader: FLOPs per update, their mean (a batch
  is as long as its longest sampled window, so the count varies with the data);
- measures the fp32 (and bf16 where supported) matmul peak with AMAGO's torch, one thread.

Writes one JSON object. It measures AMAGO; nothing of the project imports it, and it copies no AMAGO code.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

# Before torch is imported: AMAGO's torch.compile decorators crash on CPU.
os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/flops.py, a sibling script module
import flops

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT.parent / "shared" / "baselines" / "amago-3.3.0"


def amago_bench_module(baseline: Path):
    """The baseline's measuring program as a module (its ``make_experiment`` builds the measured config)."""
    spec = importlib.util.spec_from_file_location("amago_bench", baseline / "amago_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_args(encoder: str) -> argparse.Namespace:
    """``amago_bench.py throughput --encoder ENCODER``'s arguments at that program's defaults."""
    return argparse.Namespace(
        task="frozenlake",
        encoder=encoder,
        memory_size=128,
        layers=3,
        parallel_actors=16,
        dloader_workers=0,
        batch_size=24,
        timesteps_per_epoch=250,
        batches_per_epoch=10,
        epochs=100_000,
        val_interval=1,
        val_timesteps=None,
        steps_anneal=None,
        lake_size=5,
        k_episodes=10,
    )


def count(encoder: str, baseline: Path, collect_calls: int, batches: int) -> dict:
    """FLOPs per policy step and per update of AMAGO on the throughput configuration, and the matmul peak."""
    import amago

    bench = amago_bench_module(baseline)
    args = bench_args(encoder)
    root = tempfile.mkdtemp(prefix="amago_flops_")
    try:
        experiment, *_ = bench.make_experiment(args, amago.Experiment, f"flops_{encoder}", root)
        experiment.start()
        with flops.counting_method(experiment.policy, "get_actions") as acting:
            experiment.collect_new_training_data()
        for _ in range(collect_calls - 1):
            experiment.collect_new_training_data()
        experiment.dataset.on_end_of_collection(experiment=experiment)
        experiment.init_dloaders()
        experiment.policy_aclr.train()
        loader = iter(experiment.train_dloader)
        counts, lengths = [], []
        for _ in range(batches):
            batch = next(loader)
            update_flops, _ = flops.count_flops(experiment.train_step, batch, log_step=False)
            counts.append(update_flops)
            lengths.append(int(batch.rl2s.shape[1]))
        env_steps = args.timesteps_per_epoch * args.parallel_actors
        return {
            "side": "AMAGO",
            "encoder": encoder,
            "policy_step_flops": acting.flops / env_steps,
            "policy_calls_counted": acting.calls,
            "update_flops": sum(counts) / len(counts),
            "update_flops_counted": counts,
            "update_flops_batch_len": lengths,
            "peak_gflops": flops.peaks("cpu"),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    """Counts one encoder's FLOPs and writes the JSON to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--encoder", choices=["ff", "rnn", "transformer"], default="transformer")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--collect-calls", type=int, default=3, help="as the timed run's --collect_epochs")
    parser.add_argument("--batches", type=int, default=4, help="batches whose update FLOPs are counted")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    result = count(args.encoder, args.baseline, args.collect_calls, args.batches)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
