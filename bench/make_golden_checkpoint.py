"""Makes the golden amago checkpoints that ``tests/compat/test_golden_checkpoints.py`` loads on every CI run.

Run once, with one torch thread, by hand (the tests never regenerate them: they are what a later amago must
still load and act on exactly as this one did):

    OMP_NUM_THREADS=1 .venv/bin/python bench/make_golden_checkpoint.py [--out DIR]

For each trajectory encoder (ff, GRU, Transformer) it trains a tiny agent (d 8) on T-Maze (passive, corridor 3)
for two epochs of a few updates, then keeps of the run folder what loading reads: ``config.resolved.json``,
``spaces.json``, ``task_split.json``, ``ckpts/latest/policy.safetensors`` (what ``load_policy`` and ``amago eval``
load) and the epoch-1 training state (what ``amago run --resume`` continues from). With the saved policy, loaded
back through ``load_policy``, it plays three T-Mazes whose episodes restart at staggered steps and records, per
step, what the policy was given (observation, reward, which envs restarted) and what the agent computed from it
(its inputs: observation, rl2 vector, time index; the argmax action, the actor's probabilities per gamma and the
PopArt-denormalised critic values of those probabilities) in ``recorded.npz``. Steps whose two likeliest actions
lie closer than :data:`MIN_MARGIN` are refused, so that the recorded argmax is no coin flip on another CPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "compat" / "fixtures" / "amago_golden"
sys.path.insert(0, str(ROOT))  # the tests' replay: what is recorded here is what the golden test recomputes

from tests.compat.recorded_replay import replay  # noqa: E402

TRAJ_ENCODERS: dict[str, dict[str, Any]] = {
    "ff": {"kind": "ff", "d_model": 8, "n_layers": 1},
    "rnn": {"kind": "rnn", "d_hidden": 8, "d_output": 8, "n_layers": 1},
    "transformer": {"kind": "transformer", "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1},
}
N_ENVS = 3
STEPS = 24
RESTARTS = ((5, 13), (3, 10, 17), (7,))
"""Steps at which each env's episode is cut short and restarts (besides the ends T-Maze itself gives)."""
MIN_MARGIN = 1e-4
"""Least gap between the likeliest and the second likeliest action's probability at a recorded step (100 times
the values' tolerance in the tests; float32 sums differ between CPUs by far less)."""
SEED = 11


def job(encoder: str, base: Path) -> dict[str, Any]:
    """Two epochs of T-Maze with networks small enough to commit (every width 8, two critics, one extra gamma)."""
    return {
        "env": {"id": "tmaze-passive", "corridor_length": 3},
        "tstep_encoder": {
            "kind": "ff",
            "n_layers": 1,
            "d_hidden": 8,
            "d_output": 8,
            "normalize_inputs": False,
        },
        "traj_encoder": TRAJ_ENCODERS[encoder],
        "agent": {
            "kind": "agent",
            "reward_multiplier": 100.0,
            "num_critics": 2,
            "num_critics_td": 2,
            "multigammas": [0.9],
            "actor": {"n_layers": 1, "d_hidden": 8},
            "critic": {"n_layers": 1, "d_hidden": 8},
        },
        "run": {
            "max_seq_len": 4,
            "seed": 3,
            "ckpt_base_dir": str(base),
            "name": encoder,
            "torch_threads": 1,
            "compile": "off",
        },
        "replay": {"traj_save_len": 4},
        "rollout": {"parallel_actors": 4},
        "exploration": {"kind": "egreedy", "eps_start": 1.0, "eps_end": 0.1, "steps_anneal": 40},
        "schedule": {
            "epochs": 2,
            "train_timesteps_per_epoch": 20,
            "train_batches_per_epoch": 50,
            "val_interval": None,
            "ckpt_interval": 1,
            "keep_states": 1,
        },
        "optim": {"batch_size": 8, "learning_rate": 3e-3, "lr_warmup_steps": 1, "mixed_precision": "no"},
        "logging": {"verbose": False, "plot": False},
    }


def train(encoder: str, base: Path) -> Path:
    from amago_core.experiment import Experiment

    experiment = Experiment(job(encoder, base))
    experiment.start()
    try:
        experiment.learn()
    finally:
        experiment.close()
    return base / encoder


def trim(run_dir: Path, out: Path) -> None:
    """Copies what loading reads: the records, the latest weights and the newest kept training state."""
    shutil.rmtree(out, ignore_errors=True)
    (out / "ckpts" / "latest").mkdir(parents=True)
    for name in ("config.resolved.json", "spaces.json", "task_split.json"):
        shutil.copy2(run_dir / name, out / name)
    shutil.copy2(run_dir / "ckpts" / "latest" / "policy.safetensors", out / "ckpts" / "latest")
    states = sorted((run_dir / "ckpts" / "training_states").iterdir())
    shutil.copytree(states[-1], out / "ckpts" / "training_states" / states[-1].name)


class Spy:
    """The agent, keeping the inputs of every ``get_actions`` (what ``StatefulPolicy`` built from the env)."""

    def __init__(self, agent: Any) -> None:
        self.agent, self.inputs = agent, []

    def get_actions(self, obs: Any, rl2: Any, time: Any, memory: Any, **kwargs: Any) -> Any:
        self.inputs.append((obs["observation"][:, 0].clone(), rl2[:, 0].clone(), time[:, 0].clone()))
        return self.agent.get_actions(obs, rl2, time, memory, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.agent, name)


def record(run_dir: Path) -> dict[str, np.ndarray]:
    """Plays the loaded policy on ``N_ENVS`` T-Mazes with staggered restarts; returns what it saw and did."""
    from amago_core.plugins.registry import registries
    from amago_tools.policy import load_policy

    policy = load_policy(run_dir)
    spy = Spy(policy.agent)
    policy.agent = spy  # type: ignore[assignment]
    config = json.loads((run_dir / "config.resolved.json").read_text())
    suite = registries().env_suites.build(config["env"])
    envs = [suite.make_env("test").env for _ in range(N_ENVS)]
    policy.reset(N_ENVS)
    obs = np.stack([env.reset(seed=SEED + i)[0] for i, env in enumerate(envs)])
    reward, done = np.zeros(N_ENVS, np.float32), np.zeros(N_ENVS, bool)
    seen: dict[str, list[np.ndarray]] = {"env_obs": [], "env_reward": [], "env_done": [], "env_action": []}
    for step in range(STEPS):
        action = np.asarray(policy.act(obs, reward, done))
        for key, value in (
            ("env_obs", obs),
            ("env_reward", reward),
            ("env_done", done),
            ("env_action", action),
        ):
            seen[key].append(np.array(value))
        rows = [env.step(int(a)) for env, a in zip(envs, action, strict=True)]
        reward = np.array([row[1] for row in rows], np.float32)
        done = np.array(
            [row[2] or row[3] or step + 1 in RESTARTS[i] for i, row in enumerate(rows)], dtype=bool
        )
        obs = np.stack(
            [env.reset()[0] if d else row[0] for env, row, d in zip(envs, rows, done, strict=True)]
        )
    figures = {key: np.stack(value) for key, value in seen.items()}
    figures["obs"] = np.stack([i[0].numpy() for i in spy.inputs])
    figures["rl2"] = np.stack([i[1].numpy() for i in spy.inputs])
    figures["time"] = np.stack([i[2].numpy() for i in spy.inputs])
    figures["reset"] = figures["env_done"].copy()
    outputs = replay(spy.agent, figures)
    if not np.array_equal(outputs["action"], figures["env_action"]):
        raise SystemExit(f"{run_dir}: replaying the recorded inputs gives other actions than the loop took")
    top2 = np.sort(outputs["probs"][:, :, -1], axis=-1)[..., -2:]
    if (margin := float((top2[..., 1] - top2[..., 0]).min())) < MIN_MARGIN:
        raise SystemExit(f"{run_dir}: two actions lie {margin:.2g} apart at some step; pick another SEED")
    return {**figures, **outputs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--encoders", nargs="+", default=list(TRAJ_ENCODERS), choices=list(TRAJ_ENCODERS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        for encoder in args.encoders:
            out = args.out / encoder
            trim(train(encoder, Path(tmp)), out)
            figures = record(out)
            np.savez_compressed(out / "recorded.npz", **figures)
            size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
            print(f"{encoder}: {size / 1024:.0f} KiB in {out}")


if __name__ == "__main__":
    main()
