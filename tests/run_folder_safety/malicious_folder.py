"""Builds a malicious run folder from a real tiny run, as a colleague's shared folder could arrive.

Import it from a test of this folder (``--import-mode=importlib`` puts no test folder on ``sys.path``)::

    sys.path.insert(0, str(Path(__file__).parent))
    from malicious_folder import build_malicious_run_folder, tiny_run

:func:`tiny_run` trains the embedded T-Maze job at tiny sizes (one torch thread, seconds) through ``amago run``;
:func:`plant` turns a finished run folder into a trap: its ``config.resolved.json`` asks for ``.traj`` pickles,
points the buffer and ``ckpt_base_dir`` at a folder of someone else's files, names a Ray cluster and a wandb
account to send metrics to, and its buffer holds ``.traj`` files whose unpickling creates a marker file.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from amago_core.cli.app import app

RAY_ADDRESS = "10.255.255.1:6379"
"""The cluster the planted config names (an unroutable address: nothing answers there)."""

TINY: dict[str, Any] = {
    # The embedded main job (no env named: T-Maze), at sizes that train in seconds on one thread.
    "env": {"corridor_length": 3},
    "tstep_encoder": {"n_layers": 1, "d_hidden": 32, "d_output": 32},
    "traj_encoder": {"d_model": 32, "n_heads": 2, "d_ff": 64, "n_layers": 1},
    "exploration": {"kind": "egreedy", "steps_anneal": 100},
    "run": {"max_seq_len": 4, "seed": 3, "torch_threads": 1},
    "replay": {"traj_save_len": 4},
    "rollout": {"parallel_actors": 4},
    "schedule": {
        "epochs": 2,
        "train_timesteps_per_epoch": 8,
        "train_batches_per_epoch": 4,
        "val_interval": 1,
        "val_timesteps_per_epoch": 8,
        "ckpt_interval": 1,
    },
    # The precision pinned: a test of what a resume refuses names the recorded value, whatever `auto` would be.
    "optim": {"batch_size": 8, "lr_warmup_steps": 10, "mixed_precision": "no"},
    "logging": {"verbose": False, "plot": False},
}

runner = CliRunner()


def amago(*args: str) -> Any:
    """``amago ARGS`` in this process; the result has ``exit_code``, ``stdout`` and ``stderr``."""
    return runner.invoke(app, list(args))


class Bomb:
    """Unpickling it creates ``marker`` (what a planted pickle could do instead: anything)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self) -> Any:
        return (Path.touch, (self.marker,))


def tiny_run(tmp_path: Path, name: str = "victim", *extra: str) -> Path:
    """Trains the tiny job as ``{tmp_path}/runs/{name}`` (``extra``: more ``amago run`` arguments); returns the
    run folder."""
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps({**TINY, "run": {**TINY["run"], "ckpt_base_dir": str(tmp_path / "runs")}}))
    result = amago("run", "-c", str(config), "--name", name, "--quiet", *extra)
    assert result.exit_code == 0, result.output
    return tmp_path / "runs" / name


@dataclass
class MaliciousFolder:
    """A planted run folder and what a test checks around it."""

    run_dir: Path
    marker: Path
    """Created by any planted pickle that is unpickled."""
    foreign: Path
    """Someone else's folder the planted config points the buffer and ``ckpt_base_dir`` at."""
    planted_trajs: list[Path]

    def foreign_snapshot(self) -> dict[str, str]:
        return snapshot(self.foreign)

    def run_snapshot(self) -> dict[str, str]:
        return snapshot(self.run_dir)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (symlinks as their target) -> a digest of its bytes."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            found[key] = f"-> {path.readlink()}"
        elif path.is_file():
            found[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[key] = "dir"
    return found


def plant(run_dir: Path, tmp_path: Path) -> MaliciousFolder:
    """Turns the finished run folder ``run_dir`` into a trap (see the module docstring)."""
    marker = tmp_path / "PWNED"
    foreign = tmp_path / "someone-elses"
    fifo = foreign / "shared" / "buffer" / "fifo"
    fifo.mkdir(parents=True)
    np.savez(fifo / "mydata.npz", weights=np.arange(10))  # a user's file, not a trajectory
    record_file = run_dir / "config.resolved.json"
    record = json.loads(record_file.read_text())
    record["replay"].update(save_trajs_as="traj", dset_root=str(foreign), dset_name="shared", dset_max_size=1)
    record["run"]["ckpt_base_dir"] = str(foreign)
    record["ray"]["address"] = RAY_ADDRESS
    record["logging"].update(log_to_wandb=True, wandb_project="their-project", wandb_entity="them")
    record_file.write_text(json.dumps(record, indent=2))
    planted = []
    for where, stem in (
        ("fifo", "TMazePassiveH3_deadbeef_1.0"),
        ("protected", "TMazePassiveH3_cafebabe_2.0"),
    ):
        path = run_dir / "buffer" / where / f"{stem}.traj"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(Bomb(marker)))
        planted.append(path)
    return MaliciousFolder(run_dir, marker, foreign, planted)


def build_malicious_run_folder(tmp_path: Path, source: Path | None = None) -> MaliciousFolder:
    """A malicious run folder at ``{tmp_path}/runs/victim``: a copy of the finished run ``source`` (faster), or
    a fresh :func:`tiny_run`, with :func:`plant`'s traps."""
    if source is None:
        run_dir = tiny_run(tmp_path)
    else:
        run_dir = tmp_path / "runs" / "victim"
        shutil.copytree(source, run_dir, symlinks=True)
    return plant(run_dir, tmp_path)
