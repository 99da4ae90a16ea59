"""A run folder's contents are data, never instructions: no code, no paths and no cluster taken from it.

Attacked as a shared folder would be (see ``malicious_folder``): its config asks for ``.traj`` pickles, points
the buffer and the run folder at someone else's files and names a Ray cluster; its buffer holds ``.traj`` files
whose unpickling creates a marker file. ``--resume`` and ``-c runs/x/config.resolved.json`` must create no
marker, write or delete nothing in the foreign folder, join no cluster, and say so in one line each.
"""

from __future__ import annotations

import json
import pickle
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import (
    RAY_ADDRESS,
    Bomb,
    amago,
    build_malicious_run_folder,
)

from amago_core.data.disk_buffer import CorruptTrajFileWarning, PickledTrajFileWarning
from amago_core.data.files import TrajFileError, load_traj, save_traj
from amago_core.data.timestep import Timestep
from amago_core.data.trajectory import Trajectory


@pytest.fixture
def trap(finished_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative runs/ of a reproduced run lands here, not in the checkout
    return build_malicious_run_folder(tmp_path, source=finished_run)


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("amago: note: ignored")]


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("amago: error:")]


def test_resume_takes_no_pickle_choice_from_the_folder_and_changes_nothing(trap):
    before_run, before_foreign = trap.run_snapshot(), trap.foreign_snapshot()
    result = amago("run", "--resume", str(trap.run_dir), "-o", "schedule.epochs=3", "--quiet")
    assert result.exit_code == 2, result.output
    (error,) = _errors(result.stderr)
    assert "--allow-traj-pickles" in error
    assert "replay.save_trajs_as=npz" in error
    assert len(_notes(result.stderr)) == 1
    assert not trap.marker.exists()
    assert trap.run_snapshot() == before_run  # refused before anything was written
    assert trap.foreign_snapshot() == before_foreign


def test_resume_writes_only_inside_the_run_and_joins_no_cluster(trap):
    before_foreign = trap.foreign_snapshot()
    args = ["run", "--resume", str(trap.run_dir), "-o", "replay.save_trajs_as=npz", "-o", "schedule.epochs=3"]
    shown = amago(*args, "--dry-run")
    assert shown.exit_code == 0, shown.output
    config = json.loads(shown.stdout)
    assert config["ray"]["address"] is None
    assert config["replay"]["dset_root"] is None
    assert config["replay"]["dset_name"] is None
    assert config["logging"]["log_to_wandb"] is False  # metrics go nowhere the folder chose
    assert config["logging"]["wandb_entity"] is None

    with pytest.warns(PickledTrajFileWarning, match=r"2 \.traj file\(s\) .* were left unread"):
        result = amago(*args, "--quiet")
    assert result.exit_code == 0, result.output
    (note,) = _notes(result.stderr)
    for setting in ("replay.dset_root", "replay.dset_name", "ray.address", "logging.log_to_wandb"):
        assert setting in note
    assert RAY_ADDRESS in note
    assert "resuming after epoch 1" in result.stderr
    assert not trap.marker.exists()
    assert trap.foreign_snapshot() == before_foreign  # mydata.npz kept, nothing written there
    # The protected one is left unread (FIFO eviction, in the run's own buffer, may drop the other).
    assert trap.planted_trajs[1].is_file()
    record = json.loads((trap.run_dir / "config.resolved.json").read_text())
    assert record["ray"]["address"] is None
    assert record["replay"]["dset_root"] is None  # what is recorded is what ran


def test_a_user_who_passes_a_folder_setting_again_gets_it(trap, tmp_path):
    mine = tmp_path / "my-buffers"
    shown = amago(
        "run", "--resume", str(trap.run_dir), "-o", f"replay.dset_root={mine}", "-o", "ray.address=auto",
        "--dry-run",
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    config = json.loads(shown.stdout)
    assert (config["replay"]["dset_root"], config["ray"]["address"]) == (str(mine), "auto")
    (note,) = _notes(shown.stderr)
    assert "replay.dset_name" in note
    assert "dset_root" not in note
    assert "ray.address" not in note


@pytest.mark.slow
@pytest.mark.parametrize("renamed", [False, True])
def test_reproducing_a_run_from_its_record_takes_no_paths_or_cluster(trap, tmp_path, renamed):
    record = trap.run_dir / "config.resolved.json"
    if renamed:  # found by its provenance, whatever the file is called
        record = Path(shutil.copy(record, tmp_path / "shared-config.json"))
    before_run, before_foreign = trap.run_snapshot(), trap.foreign_snapshot()

    refused = amago("run", "-c", str(record), "--quiet")
    assert refused.exit_code == 2
    (error,) = _errors(refused.stderr)
    assert "--allow-traj-pickles" in error

    result = amago("run", "-c", str(record), "-o", "replay.save_trajs_as=npz")  # not quiet: the summary
    assert result.exit_code == 0, result.output
    (note,) = _notes(result.stderr)
    for setting in ("run.ckpt_base_dir", "run.name", "replay.dset_root", "replay.dset_name", "ray.address"):
        assert setting in note
    summary = json.loads(result.stdout)
    new_run = Path(summary["run_dir"])
    assert new_run.resolve().parent == (tmp_path / "runs").resolve()  # the default place, a fresh name
    assert new_run.name != "victim"
    assert (new_run / "buffer" / "fifo").is_dir()
    assert not trap.marker.exists()
    assert trap.foreign_snapshot() == before_foreign
    assert trap.run_snapshot() == before_run  # the shared folder is only read


def test_with_the_flag_a_planted_traj_is_refused_and_honest_ones_load(trap):
    for path in trap.run_dir.glob("buffer/*/*.npz"):
        path.unlink()  # the buffer: the planted pickles and what the resumed run writes as .traj itself
    before_foreign = trap.foreign_snapshot()
    with pytest.warns(CorruptTrajFileWarning) as caught:
        result = amago(
            "run", "--resume", str(trap.run_dir), "--allow-traj-pickles", "-o", "replay.dset_max_size=1000",
            "-o", "schedule.epochs=4",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not trap.marker.exists()
    refusals = [str(w.message) for w in caught if issubclass(w.category, CorruptTrajFileWarning)]
    assert refusals
    for line in refusals:
        assert "\n" not in line
        assert "refused global pathlib.Path.touch" in line
    quarantined = {p.name for p in trap.run_dir.glob("buffer/quarantine/*")}
    assert quarantined <= {p.name for p in trap.planted_trajs}
    honest = list(trap.run_dir.glob("buffer/fifo/*.traj"))
    assert len(honest) > 1  # the run's own files, read back through the restricted unpickler
    for path in honest:
        load_traj(path, allow_pickle=True)
    summary = json.loads(result.stdout)
    assert summary["gradient_steps"] > 8  # trained past the 2 saved epochs of 4 updates
    assert trap.foreign_snapshot() == before_foreign


def test_the_restricted_unpickler_admits_amago_trajectories_only(tmp_path):
    marker = tmp_path / "PWNED"
    rng = np.random.default_rng(0)
    steps = [
        Timestep(
            obs={
                "image": rng.integers(0, 255, (1, 3, 4, 4), dtype=np.uint8),
                "state": rng.normal(size=(1, 5)).astype(np.float32),
                "mask": np.array([[True, False]]),
                "count": np.array([[t]], dtype=np.int64),
            },
            prev_action=rng.uniform(-1, 1, (1, 2)).astype(np.float32),
            reward=np.array([t * 0.5], dtype=np.float32),
            time_idx=np.array([t], dtype=np.int64),
            terminal=np.array([t == 3]),
        )
        for t in range(4)
    ]
    honest = save_traj(Trajectory(steps), tmp_path, "honest_00000000_1.0", "traj")
    loaded = load_traj(honest, allow_pickle=True)
    np.testing.assert_array_equal(loaded.obs["image"], Trajectory(steps).freeze().obs["image"])

    planted = tmp_path / "planted_00000000_2.0.traj"
    planted.write_bytes(pickle.dumps({"format": "amago-traj-v1", "timesteps": [Bomb(marker)]}))
    with pytest.raises(TrajFileError, match=r"refused global pathlib\.Path\.touch") as refused:
        load_traj(planted, allow_pickle=True)
    assert "\n" not in str(refused.value)
    with pytest.raises(TrajFileError, match="--allow-traj-pickles"):
        load_traj(planted)  # not asked for: not even opened
    assert not marker.exists()


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".toml"])
def test_a_deeply_nested_config_file_is_one_line(tmp_path, suffix):
    deep = "[" * 100_000 + "]" * 100_000
    text = {".json": deep, ".yaml": deep, ".toml": f"x = {deep}"}[suffix]
    config = tmp_path / f"deep{suffix}"
    config.write_text(text)
    result = amago("run", "-c", str(config), "--dry-run")
    assert result.exit_code == 2
    (error,) = result.stderr.splitlines()
    assert str(config) in error
    assert "nests" in error

    shallow_enough_to_parse = tmp_path / f"nested{suffix}"
    nested = "[" * 200 + "]" * 200
    shallow_enough_to_parse.write_text(
        {".json": f'{{"run": {nested}}}', ".yaml": f"run: {nested}"}.get(suffix, f"run = {nested}")
    )
    result = amago("run", "-c", str(shallow_enough_to_parse), "--dry-run")
    assert result.exit_code == 2
    (error,) = result.stderr.splitlines()
    assert "more than 64 levels deep" in error


def test_a_deeply_nested_override_is_one_line():
    result = amago("run", "-o", "run.name=" + "[" * 100_000 + "]" * 100_000, "--dry-run")
    assert result.exit_code == 2
    (error,) = result.stderr.splitlines()
    assert "nests" in error
    assert error.startswith("amago: error: override")
