"""Speed of amago-nets' trajectory encoders on one CPU thread (or the current CUDA device with --device cuda).

For each encoder at d_model 128 and 3 layers:
- training: forward + backward of a (24, 256) batch, ms per batch;
- rollout: one step of 16 envs whose episodes are at different lengths (context 250), ms per step;
and for the Transformer, the step cost with rows at mixed lengths vs every row at the longest length vs
every row at the mean length (``--length-envs`` / ``--length-context`` to try other sizes).

Run: ``.venv/bin/python bench/nets.py`` (``--reps`` to trade time for stability).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from amago_nets import specs

D_MODEL, LAYERS = 128, 3
TRAIN_BATCH, TRAIN_LEN = 24, 256
ROLLOUT_ENVS, ROLLOUT_CONTEXT = 16, 250

ENCODERS = {
    "identity": (specs.IDENTITY_TRAJ, {}),
    "ff": (specs.FF_TRAJ, {"d_model": D_MODEL, "n_layers": LAYERS}),
    "rnn": (specs.RNN_TRAJ, {"d_hidden": D_MODEL, "d_output": D_MODEL, "n_layers": LAYERS}),
    "transformer": (
        specs.TRANSFORMER_TRAJ,
        {"d_model": D_MODEL, "n_heads": 8, "d_ff": 4 * D_MODEL, "n_layers": LAYERS},
    ),
    "mamba (parallel scan)": (specs.MAMBA_TRAJ, {"d_model": D_MODEL, "n_layers": LAYERS, "scan": "parallel"}),
    "mamba (parallel, chunk 32)": (
        specs.MAMBA_TRAJ,
        {"d_model": D_MODEL, "n_layers": LAYERS, "scan": "parallel", "chunk_size": 32},
    ),
    "mamba (sequential scan)": (
        specs.MAMBA_TRAJ,
        {"d_model": D_MODEL, "n_layers": LAYERS, "scan": "sequential"},
    ),
}


def timed_ms(fn: Callable[[], object], reps: int, device: str) -> float:
    """Median time of ``fn`` in ms, after one warm-up call.

    On CPU this is the calling thread's CPU time (torch runs on that one thread), so other processes taking
    turns on the cores do not count; on CUDA it is wall time around synchronizations.
    """
    clock = time.thread_time if device == "cpu" else time.perf_counter
    fn()
    samples = []
    for _ in range(reps):
        if device == "cuda":
            torch.cuda.synchronize()
        start = clock()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        samples.append((clock() - start) * 1e3)
    return statistics.median(samples)


def train_ms(spec, config: dict, reps: int, device: str) -> float:
    encoder = spec.build(config, tstep_dim=D_MODEL, max_seq_len=TRAIN_LEN).to(device).train()
    seq = torch.randn(TRAIN_BATCH, TRAIN_LEN, D_MODEL, device=device, requires_grad=True)
    times = torch.arange(TRAIN_LEN, device=device).expand(TRAIN_BATCH, -1)

    def step() -> None:
        out, _ = encoder(seq, times, None)
        out.square().mean().backward()

    return timed_ms(step, reps, device)


def stepped_rollout(encoder, lengths: np.ndarray, device: str) -> tuple[torch.Tensor, torch.Tensor, object]:
    """Input, time indices and rollout state of ``len(lengths)`` envs, each row stepped to its own length."""
    n_envs = len(lengths)
    hidden = encoder.init_hidden_state(n_envs, device)
    warmup = int(lengths.max())
    x = torch.randn(n_envs, 1, D_MODEL, device=device)
    time_idxs = np.zeros(n_envs, dtype=np.int64)
    with torch.no_grad():
        # Row i starts its episode at step warmup - lengths[i], so the rows end up at different lengths.
        for step in range(warmup):
            dones = (warmup - step) == lengths
            hidden = encoder.reset_hidden_state(hidden, dones)
            time_idxs[dones] = 0
            _, hidden = encoder(x, torch.as_tensor(time_idxs, device=device)[:, None], hidden)
            time_idxs += 1
    return x, torch.as_tensor(time_idxs, device=device)[:, None], hidden


def rollout_ms(spec, config: dict, lengths: np.ndarray, steps: int, device: str) -> float:
    """ms per step of ``len(lengths)`` envs, each row first stepped to its own episode length."""
    encoder = spec.build(config, tstep_dim=D_MODEL, max_seq_len=ROLLOUT_CONTEXT).to(device).eval()
    x, step_times, hidden = stepped_rollout(encoder, lengths, device)

    def one_step() -> None:
        # The returned state is dropped, so every timed call steps from the same row lengths.
        encoder(x, step_times, hidden)

    with torch.no_grad():
        return timed_ms(one_step, steps, device)


def length_cases_ms(
    spec, config: dict, n_envs: int, context: int, steps: int, rounds: int, device: str
) -> dict[str, float]:
    """Median ms per rollout step with rows at mixed lengths, all at the longest, and all at the mean.

    The cases are timed in turns, ``steps`` steps at a time, so that load from other processes hits them
    alike (a case timed alone could land in a quiet or a busy stretch).
    """
    encoder = spec.build(config, tstep_dim=D_MODEL, max_seq_len=context).to(device).eval()
    mixed = np.linspace(1, context, n_envs).round().astype(np.int64)
    cases = {
        f"mixed lengths 1..{context}": mixed,
        f"all rows at {context} (longest)": np.full(n_envs, context),
        f"all rows at {round(mixed.mean())} (mean)": np.full(n_envs, round(mixed.mean())),
    }
    states = {label: stepped_rollout(encoder, lengths, device) for label, lengths in cases.items()}
    samples: dict[str, list[float]] = {label: [] for label in cases}
    with torch.no_grad():
        for _ in range(rounds):
            for label, (x, step_times, hidden) in states.items():
                samples[label].append(
                    timed_ms(lambda x=x, t=step_times, h=hidden: encoder(x, t, h), steps, device)
                )
    return {label: statistics.median(times) for label, times in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="timed training batches per encoder")
    parser.add_argument("--steps", type=int, default=50, help="timed rollout steps per encoder")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=9, help="turns of the transformer's length cases")
    parser.add_argument("--length-envs", type=int, default=ROLLOUT_ENVS, help="envs in the length cases")
    parser.add_argument(
        "--length-context", type=int, default=ROLLOUT_CONTEXT, help="context of the length cases"
    )
    parser.add_argument(
        "--lengths-only", action="store_true", help="only the transformer's length cases, not every encoder"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mixed = np.linspace(1, ROLLOUT_CONTEXT, ROLLOUT_ENVS).round().astype(np.int64)
    print(f"torch {torch.__version__}, device {args.device}, threads {torch.get_num_threads()}")
    print(
        f"d_model {D_MODEL}, {LAYERS} layers; train batch {TRAIN_BATCH}x{TRAIN_LEN}; rollout {ROLLOUT_ENVS} envs, "
        f"context {ROLLOUT_CONTEXT}, row lengths {mixed.min()}..{mixed.max()}"
    )
    if not args.lengths_only:
        print(f"{'encoder':<26}{'train fwd+bwd ms':>18}{'rollout step ms':>18}")
        for name, (spec, config) in ENCODERS.items():
            train = train_ms(spec, config, args.reps, args.device)
            step = rollout_ms(spec, config, mixed, args.steps, args.device)
            print(f"{name:<26}{train:>18.1f}{step:>18.3f}")
    spec, config = ENCODERS["transformer"]
    print(
        f"transformer rollout step, {args.length_envs} envs, context {args.length_context} "
        f"(median of {args.rounds} rounds of {args.steps} steps), ms:"
    )
    cases = length_cases_ms(
        spec, config, args.length_envs, args.length_context, args.steps, args.rounds, args.device
    )
    for label, ms in cases.items():
        print(f"  {label:<34}{ms:>8.2f}")
    mixed_ms, longest_ms = list(cases.values())[:2]
    print(f"  {'ratio mixed / longest':<34}{mixed_ms / longest_ms:>8.2f}")


if __name__ == "__main__":
    main()
