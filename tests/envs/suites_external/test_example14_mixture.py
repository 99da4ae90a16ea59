"""Example 14 samples as AMAGO's once it collects online: converted episodes 0.8, online files 0.2 (ramped).

The example runs up to its build on the tiny dataset its ``--smoke`` makes; the dataset it hands the build is
checked here, then driven through epochs as the experiment drives it.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.data.files import traj_file_stem
from amago_core.data.mixture import MixtureOfDatasets

pytest.importorskip("minari")
# minari advises an eval env when the smoke dataset is written; the example does not need one.
pytestmark = pytest.mark.filterwarnings("ignore:`eval_env` is set to None:UserWarning")

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"
SMOKE_EPISODES = 4
"""Episodes in the dataset ``make_smoke_dataset`` writes (its default)."""


@pytest.fixture
def example(monkeypatch, tmp_path) -> ModuleType:
    """``examples/14_d4rl.py`` as a module, its temp folders (the minari root among them) under ``tmp_path``."""
    monkeypatch.syspath_prepend(str(EXAMPLES_DIR))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))  # restored after make_smoke_dataset moves it
    spec = importlib.util.spec_from_file_location("d4rl_example", EXAMPLES_DIR / "14_d4rl.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_arguments(monkeypatch, example: ModuleType, argv: list[str]) -> tuple[Any, dict[str, Any]]:
    """Runs the example up to ``Experiment``; returns the config and keyword arguments it got."""
    import _launch

    built: list[tuple[Any, dict[str, Any]]] = []

    def capture(plan, **kwargs):
        built.append((plan.config, kwargs))  # the examples build from the plan (train(plan), as `amago run`)
        raise SystemExit(0)

    monkeypatch.setattr(_launch, "Experiment", capture)
    with pytest.raises(SystemExit):
        example.main(argv)
    (arguments,) = built
    return arguments


def add_online_files(mixture: MixtureOfDatasets, like: Path, count: int) -> None:
    """Writes ``count`` trajectory files where the run's collectors write (copies of one converted episode)."""
    folder = mixture.save_new_trajs_to
    assert folder is not None
    for i in range(count):
        shutil.copy(like, folder / f"{traj_file_stem('pendulum', f'online{i}')}{like.suffix}")


def test_an_online_run_samples_amagos_mixture(monkeypatch, tmp_path, example):
    dataset_id = example.make_smoke_dataset()
    runs = tmp_path / "runs"
    argv = ["--dataset", dataset_id, "--online-after-epoch", "3", "--max-seq-len", "8"]
    config, kwargs = build_arguments(
        monkeypatch, example, [*argv, "--ckpt-base-dir", str(runs), "--run-name", "hc"]
    )
    assert config.schedule.start_collecting_at_epoch == 3
    assert config.replay.padded_sampling == "right"
    mixture = kwargs["dataset"]
    assert isinstance(mixture, MixtureOfDatasets)
    offline, online = mixture.datasets
    np.testing.assert_allclose(mixture.final_weights, [0.8, 0.2])
    assert mixture.smooth_sudden_starts == 50
    # The episodes sit in a folder of their own, inside the run's; the run's buffer holds only online files.
    assert offline.protected_dir == runs / "hc" / "offline" / "buffer" / "protected"
    assert len(offline.protected_files) == SMOKE_EPISODES
    assert isinstance(online, DiskTrajDataset)
    assert online.buffer_dir == runs / "hc" / "buffer"
    assert online.all_files == []
    assert (online.dset_min_size, online.dset_max_size) == (250, config.replay.dset_max_size)
    # New trajectories go to the online part only.
    assert offline.save_new_trajs_to is None
    assert mixture.save_new_trajs_to == online.fifo_dir

    mixture.seed_for_process(0)
    mixture.configure(8, config.run.max_seq_len, config.replay.padded_sampling)
    assert mixture.ready_for_training
    assert not online.ready_for_training
    np.testing.assert_allclose(mixture.initial_weights, [0.8, 0.0])  # the empty online part ramps from 0
    # Before any online file exists, every window comes from the episodes (20 steps: longer than a window).
    assert all(1 <= len(mixture[i].actions) <= config.run.max_seq_len == 8 for i in range(20))

    def epoch_end(new_files: int) -> dict[str, Any]:
        add_online_files(mixture, offline.protected_files[0], new_files)
        return mixture.on_end_of_collection()

    metrics = epoch_end(249)  # one short of the online minimum: the online files are not sampled yet
    assert metrics["hc Trajectory Files Saved in FIFO Replay Buffer"] == 249
    assert metrics["offline Trajectory Files Saved in FIFO Replay Buffer"] == 0
    assert metrics["offline Trajectory Files Saved in Protected Replay Buffer"] == SMOKE_EPISODES
    assert metrics["hc Current Sample Weight"] == 0.0
    ramp = [epoch_end(1 if epoch == 0 else 0)["hc Current Sample Weight"] for epoch in range(51)]
    np.testing.assert_allclose(ramp[:3], [0.2 / 50, 0.4 / 50, 0.6 / 50])
    np.testing.assert_allclose(ramp[49:], [0.2, 0.2])
    assert mixture.current_weights[0] == pytest.approx(0.8)
    assert len(offline.all_files) == SMOKE_EPISODES
    assert len(online.fifo_files) == 250


def test_the_parts_draw_from_the_mixtures_stream_of_the_runs_seed(monkeypatch, tmp_path, example):
    dataset_id = example.make_smoke_dataset()
    argv = ["--dataset", dataset_id, "--online-after-epoch", "0", "--ckpt-base-dir", str(tmp_path / "runs")]
    config, _ = build_arguments(monkeypatch, example, argv)
    seeded = config.model_copy(update={"run": config.run.model_copy(update={"seed": 3})})
    mixture = example.offline_online_mixture(seeded)
    assert mixture.seed == 3
    # One generator (the one the training state saves) for the choice of part and each part's sampling.
    assert all(part.rng is mixture.rng for part in mixture.datasets)
    assert example.offline_online_mixture(config).seed is None


def test_smoke_scales_the_online_minimum_down(monkeypatch, example):
    config, kwargs = build_arguments(monkeypatch, example, ["--smoke"])
    assert config.schedule.start_collecting_at_epoch == 1
    _, online = kwargs["dataset"].datasets
    # One collecting epoch of 2 actors gives 2 episodes: the online part is trained on in the smoke run.
    assert online.dset_min_size == 2 <= config.rollout.parallel_actors
    assert kwargs["dataset"].smooth_sudden_starts == 1


def test_an_offline_run_trains_on_its_own_protected_buffer(monkeypatch, tmp_path, example):
    dataset_id = example.make_smoke_dataset()
    runs = tmp_path / "runs"
    config, kwargs = build_arguments(
        monkeypatch, example, ["--dataset", dataset_id, "--ckpt-base-dir", str(runs), "--run-name", "hc"]
    )
    assert kwargs == {}  # the default buffer of the run: its protected files are the episodes
    assert config.schedule.start_collecting_at_epoch > config.schedule.epochs
    assert len(list((runs / "hc" / "buffer" / "protected").iterdir())) == SMOKE_EPISODES
