"""Train collection on Ray actors against the in-process sync pool: env steps/s, and what each shipment costs.

The embedded T-Maze job (default model: Transformer 3x128), ``--envs`` envs per actor. "sync pool" is a normal
run's ``collect_new_training_data`` (``ray.actors=0``) with ``--envs`` envs; each Ray row is the same call with
``ray.actors=N`` (a local Ray cluster started for the bench, ``ray.cpus_per_actor`` small enough to place all
actors), every actor stepping its own ``--envs`` envs. The env steps/s of a row are all frames collected over
the wall time of the collect calls, which for Ray includes the weight broadcast, the round trip, shipping the
finished files and writing them into the buffer. One warm-up epoch per row is not timed.

Costs printed under the table, to predict a larger cluster:
- per snippet (one finished trajectory file): its bytes, and the learner's time to check and write it;
- per weight broadcast: the safetensors bytes, the learner's time to serialise and ``ray.put`` them, and an
  actor's time to fetch and load them (each actor does this once per broadcast, in parallel);
- the fixed cost of one collect round with no env step (``timesteps=0``): Ray's call overhead per round.

Usage: uv run python bench/ray_collect.py [--envs 8] [--timesteps 110] [--epochs 5] [--actors 1 2 4]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from amago.default_job import DEFAULT_JOB
from amago_core.config.sources import load_config
from amago_core.experiment import Experiment


def job(folder: Path, name: str, envs: int, actors: int, timesteps: int) -> dict[str, Any]:
    config = json.loads(json.dumps(DEFAULT_JOB))
    config["run"].update(ckpt_base_dir=str(folder), name=name)
    config["rollout"]["parallel_actors"] = envs
    config["schedule"].update(val_interval=None, ckpt_interval=None, train_timesteps_per_epoch=timesteps)
    config["logging"] = {"verbose": False, "plot": False}
    cpus = os.cpu_count() or 1
    config["ray"] = {"actors": actors, "cpus_per_actor": min(1.0, cpus / max(actors, 1))}
    return config


def measure(folder: Path, envs: int, actors: int, epochs: int, timesteps: int) -> dict[str, Any]:
    config = job(folder, f"a{actors}", envs, actors, timesteps)
    experiment = Experiment(load_config(base=config, environ={}))
    experiment.start()
    try:
        experiment.collect_new_training_data()  # warm-up: first broadcast, first policy steps
        frames_before, seconds = experiment.total_frames, 0.0
        for epoch in range(1, epochs + 1):
            experiment.counters.at_epoch(epoch)
            start = time.perf_counter()
            experiment.collect_new_training_data()
            seconds += time.perf_counter() - start
        row: dict[str, Any] = {"steps_per_s": (experiment.total_frames - frames_before) / seconds}
        collector = experiment.collector
        if collector is not None:
            stats = collector.stats
            row["snippet_bytes"] = stats.snippet_bytes / max(stats.snippets, 1)
            row["snippet_write_ms"] = 1e3 * stats.snippet_write_s / max(stats.snippets, 1)
            row["broadcast_bytes"] = stats.broadcast_bytes / max(stats.broadcasts, 1)
            row["broadcast_ms"] = 1e3 * stats.broadcast_s / max(stats.broadcasts, 1)
            row["actor_load_ms"] = 1e3 * stats.actor_weight_load_s / max(stats.actor_weight_loads, 1)
            rounds = []
            for _ in range(5):
                start = time.perf_counter()
                collector.collect(epochs + 1, 0)
                rounds.append(time.perf_counter() - start)
            row["empty_round_ms"] = 1e3 * sorted(rounds)[len(rounds) // 2]
        return row
    finally:
        if experiment.collector is not None:
            experiment.collector.close()
        experiment.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--envs", type=int, default=8, help="envs of the sync pool and of each Ray actor")
    parser.add_argument("--epochs", type=int, default=5, help="timed collect calls per row")
    parser.add_argument("--timesteps", type=int, default=110, help="steps per env per epoch (10 episodes)")
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        rows["sync pool (in process)"] = measure(Path(tmp), args.envs, 0, args.epochs, args.timesteps)
        for actors in args.actors:
            rows[f"{actors} Ray actor(s)"] = measure(
                Path(tmp), args.envs, actors, args.epochs, args.timesteps
            )
    print(
        f"T-Maze H=10, {args.envs} envs per pool, {args.timesteps} steps per env per epoch, {args.epochs} timed "
        f"epochs (a weight broadcast each), {os.cpu_count()} cores"
    )
    print(f"{'collection':<26}{'env steps/s':>12}{'envs':>6}")
    for label, row in rows.items():
        n = 1 if label.startswith("sync") else int(label.split()[0])
        print(f"{label:<26}{row['steps_per_s']:>12.0f}{n * args.envs:>6}")
    for label, row in rows.items():
        if "snippet_bytes" not in row:
            continue
        print(
            f"{label}: snippet {row['snippet_bytes'] / 1e3:.1f} kB, written in {row['snippet_write_ms']:.2f} ms; "
            f"broadcast {row['broadcast_bytes'] / 1e6:.2f} MB, {row['broadcast_ms']:.1f} ms to serialise + put, "
            f"{row['actor_load_ms']:.1f} ms per actor to fetch + load; empty collect round {row['empty_round_ms']:.1f} ms"
        )


if __name__ == "__main__":
    main()
