"""Everything stays inside the run folder: a plain run name, and no write or delete through a planted symlink.

Written as an attacker would: a real tiny run's folder gets symlinks to someone else's files (a file, a folder of
``.npz`` files, a folder of checkpoints); `amago plot` and `amago run --resume` must leave those files
byte-identical and say so in one line.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import TINY, amago, snapshot, tiny_run

from amago_core.config.experiment import RunSection
from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.io import UnsafePathError, atomic_write_text, inside

BAD_NAMES = ["../../escape", "..", ".", "/tmp/amago-absolute-name", "a\nb", "x" * 300, "-flag", "a/b", ""]


def _one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("amago: error:")]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.parametrize("name", BAD_NAMES, ids=lambda n: repr(n)[:20])
def test_a_run_name_that_is_a_path_is_one_line_and_writes_nothing(tmp_path, name):
    base = tmp_path / "base" / "runs"
    base.mkdir(parents=True)
    config = tmp_path / "job.json"
    config.write_text(json.dumps({**TINY, "run": {**TINY["run"], "ckpt_base_dir": str(base)}}))
    before = snapshot(tmp_path)
    result = amago("run", "-c", str(config), "--name", name, "--quiet")
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.output)
    assert "run.name" in line
    assert "plain folder name" in line
    assert snapshot(tmp_path) == before  # nothing created, inside or outside the base folder
    assert not Path("/tmp/amago-absolute-name").exists()


def test_default_run_names_follow_the_rule():
    from amago_core.config.resolve import resolve_config
    from amago_core.experiment.naming import default_run_name

    for flags in ({}, {"env": "tmaze-passive"}, {"env": "popgym-RepeatPreviousEasy"}):
        try:
            config = resolve_config(flags=flags)
        except Exception:  # an env suite not installed here
            continue
        RunSection(name=default_run_name(config))


def test_inside_refuses_links_and_escapes_but_allows_a_linked_root(tmp_path):
    real = tmp_path / "real"
    (real / "plots").mkdir(parents=True)
    linked_root = tmp_path / "root-link"
    linked_root.symlink_to(real, target_is_directory=True)
    assert inside(
        linked_root, linked_root / "plots" / "a.png"
    )  # the user's own link to the run folder is fine
    (real / "ckpts").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="is a symlink"):
        inside(real, real / "ckpts" / "x")
    with pytest.raises(UnsafePathError, match="outside"):
        inside(real, real / ".." / "x")
    target = tmp_path / "victim.txt"
    target.write_text("mine")
    (real / "metrics.jsonl").symlink_to(target)
    with pytest.raises(UnsafePathError, match="is a symlink"):
        atomic_write_text(real / "metrics.jsonl", "overwritten", root=real)
    assert target.read_text() == "mine"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """One real tiny run (with plots), copied by each test that plants something in it."""
    return tiny_run(tmp_path_factory.mktemp("source"), "victim", "-o", "logging.plot=true")


def _copy(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / "runs" / run.name
    shutil.copytree(run, target, symlinks=True)
    return target


def _someone_elses_folder(tmp_path: Path) -> Path:
    foreign = tmp_path / "someone-else"
    foreign.mkdir()
    (foreign / "mydata.npz").write_bytes(b"PK\x03\x04 precious")
    np.savez(foreign / "TMaze-Passive-H3_00000001_1000000000.0.npz", obs=np.zeros(3))
    (foreign / "notes.txt").write_text("not yours")
    return foreign


def test_plot_never_writes_through_a_symlinked_figure(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    victim = tmp_path / "victim.png"
    victim.write_bytes(b"my holiday photo")
    (run / "plots" / "returns.png").unlink()
    (run / "plots" / "returns.png").symlink_to(victim)
    result = amago("plot", str(run))
    assert result.exit_code != 0
    line = _one_error_line(result.output)
    assert "returns.png is a symlink" in line
    assert victim.read_bytes() == b"my holiday photo"


def test_plot_never_writes_into_a_symlinked_plots_folder(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    foreign = _someone_elses_folder(tmp_path)
    before = snapshot(foreign)
    shutil.rmtree(run / "plots")
    (run / "plots").symlink_to(foreign, target_is_directory=True)
    result = amago("plot", str(run))
    assert result.exit_code != 0
    assert "plots is a symlink" in _one_error_line(result.output)
    assert snapshot(foreign) == before


@pytest.mark.parametrize(
    "planted",
    ["ckpts/training_states", "ckpts/policy_weights", "ckpts/latest", "buffer/fifo", "plots"],
)
def test_resume_never_writes_or_deletes_through_a_symlinked_folder(finished_run, tmp_path, planted):
    run = _copy(finished_run, tmp_path)
    foreign = _someone_elses_folder(tmp_path)
    # The foreign folder holds what amago would find there (a state, weights), so that listing it counts.
    shutil.copytree(run / planted, foreign, dirs_exist_ok=True)
    before = snapshot(foreign)
    shutil.rmtree(run / planted)
    (run / planted).symlink_to(foreign, target_is_directory=True)
    result = amago("run", "--resume", str(run), "--quiet")
    assert result.exit_code != 0, result.output
    line = _one_error_line(result.output)
    assert f"{planted.rsplit('/', 1)[-1]} is a symlink" in line, line
    assert snapshot(foreign) == before


def test_resume_never_appends_to_a_symlinked_metrics_file(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    victim = tmp_path / "victim.jsonl"
    victim.write_text("someone's log\n")
    (run / "metrics.jsonl").unlink()
    (run / "metrics.jsonl").symlink_to(victim)
    result = amago("run", "--resume", str(run), "--quiet")
    assert result.exit_code != 0, result.output
    assert "metrics.jsonl is a symlink" in _one_error_line(result.output)
    assert victim.read_text() == "someone's log\n"


def _buffer(root: Path, **kwargs) -> DiskTrajDataset:
    return DiskTrajDataset(dset_root=root, dset_name="run", dset_max_size=1, **kwargs)


def test_fifo_eviction_never_deletes_through_a_symlinked_folder(tmp_path):
    foreign = _someone_elses_folder(tmp_path)
    before = snapshot(foreign)
    fifo = tmp_path / "runs" / "run" / "buffer" / "fifo"
    fifo.parent.mkdir(parents=True)
    fifo.symlink_to(foreign, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="fifo is a symlink"):
        _buffer(tmp_path / "runs")
    # Planted after the buffer was built: eviction checks again before it deletes.
    fifo.unlink()
    dataset = _buffer(tmp_path / "runs")
    dataset.configure(items_per_epoch=1, max_seq_len=4, padded_sampling="none", has_edit_rights=True)
    shutil.rmtree(fifo)
    fifo.symlink_to(foreign, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="fifo is a symlink"):
        dataset.on_end_of_collection()
    assert snapshot(foreign) == before


def test_the_quarantine_never_moves_files_into_a_symlinked_folder(tmp_path):
    foreign = _someone_elses_folder(tmp_path)
    before = snapshot(foreign)
    quarantine = tmp_path / "runs" / "run" / "buffer" / "quarantine"
    quarantine.parent.mkdir(parents=True)
    quarantine.symlink_to(foreign, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="quarantine is a symlink"):
        _buffer(tmp_path / "runs")
    assert snapshot(foreign) == before


@pytest.mark.parametrize("name", ["../escape", "..", "a/b", ""])
def test_a_buffer_name_that_is_a_path_is_refused(tmp_path, name):
    with pytest.raises(ValueError, match="dset_name must be a plain folder name"):
        DiskTrajDataset(dset_root=tmp_path / "runs", dset_name=name, dset_max_size=1)
    assert not any(tmp_path.iterdir())
