"""A full disk or a read-only folder stops a run with one line and leaves what `--resume` needs intact."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors import SafetensorError
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.cli.errors import WRITE_FAILED
from amago_core.config.sources import load_config
from amago_core.data import files as traj_files
from amago_core.data.files import is_traj_file, load_traj
from amago_core.data.writer import TrajectoryWriteError
from amago_core.experiment import Experiment, checkpoints
from amago_core.experiment.run_dir import RunFolderWriteError, RunPaths, find_write_failure
from amago_core.hooks.jsonl_logger import JsonlLogBackend

runner = CliRunner()
ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _job(tiny_job: dict[str, Any], **schedule: Any) -> dict[str, Any]:
    tiny_job["schedule"] = {**tiny_job["schedule"], **schedule}
    tiny_job["logging"] = {**tiny_job["logging"], "plot": False}
    return tiny_job


def _experiment(job: dict[str, Any], *, resume: bool = False):
    experiment = Experiment(load_config(base=job, environ={}))
    experiment.start(resume=resume)
    return experiment


def _learn_until_it_fails(job: dict[str, Any]) -> tuple[RunFolderWriteError, RunPaths]:
    experiment = _experiment(job)
    try:
        with pytest.raises(RunFolderWriteError) as caught:
            experiment.learn()
    finally:
        experiment.close()
    return caught.value, experiment.paths


def _fail_state_writes_of(monkeypatch: pytest.MonkeyPatch, folder_part: str) -> None:
    """The training-state writer fills part of a file, then finds the disk full, for states under ``folder_part``."""
    original = checkpoints.save_state

    def filling_the_disk(obj: Any, folder: Path, name: str) -> None:
        if folder_part in str(folder):
            (Path(folder) / f"{name}.json").write_text('{"cut sh')
            raise ENOSPC
        original(obj, folder, name)

    monkeypatch.setattr(checkpoints, "save_state", filling_the_disk)


def _assert_resumes_after(job: dict[str, Any], epoch: int, epochs: int) -> None:
    resumed = _experiment(_job(job, epochs=epochs), resume=True)
    try:
        assert resumed.epoch == epoch + 1
        resumed.learn()
        assert resumed.epoch == epochs
    finally:
        resumed.close()


@pytest.mark.slow
def test_a_full_disk_while_saving_a_state_keeps_the_previous_one_and_resume_continues(tiny_job, monkeypatch):
    job = _job(tiny_job, epochs=4, ckpt_interval=1, keep_states=1)
    _fail_state_writes_of(monkeypatch, "tiny_epoch_2")
    failure, paths = _learn_until_it_fails(job)
    message = str(failure)
    assert "\n" not in message
    assert message.startswith(f"no space left on device writing {paths.training_state(2)}: free space")
    assert "the run folder uses" in message
    assert "ckpts" in message
    assert "buffer" in message
    assert f"rerun with `amago run --resume {paths.root}`, which continues from epoch 1" in message
    assert isinstance(failure, OSError)
    assert failure.errno == errno.ENOSPC
    # keep_states=1: epoch 1's state is kept because the new one never completed, and nothing half-written
    # is left where a resume looks (or taking space).
    assert [p.name for p in paths.training_states.iterdir()] == ["tiny_epoch_1"]
    assert not list(paths.ckpts.rglob(".*"))
    assert paths.saved_epochs() == [1]
    monkeypatch.undo()
    _assert_resumes_after(job, epoch=1, epochs=4)


def test_safetensors_own_disk_full_error_is_a_write_failure_too(tiny_job, monkeypatch):
    # safetensors reports a full disk as SafetensorError("... (os error 28)"), not as an OSError.
    original = checkpoints.save_model

    def full(model: Any, filename: str, *args: Any, **kwargs: Any) -> None:
        if "policy_epoch_1" in filename:
            Path(filename).write_bytes(b"\x00" * 64)
            raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
        original(model, filename, *args, **kwargs)

    monkeypatch.setattr(checkpoints, "save_model", full)
    job = _job(tiny_job, epochs=3, ckpt_interval=1)
    failure, paths = _learn_until_it_fails(job)
    assert str(failure).startswith(f"no space left on device writing {paths.policy_at(1)}:")
    assert not paths.policy_at(1).exists()
    assert not list(paths.policy_weights.glob(".*"))  # the cut temp file is gone
    assert paths.policy_at(0).is_file()
    # An epoch's weights are written before its training state, so no state of epoch 1 exists without them:
    # the newest complete checkpoint is epoch 0's, and the resume continues after it.
    assert paths.saved_epochs() == [0]
    monkeypatch.undo()
    _assert_resumes_after(job, epoch=0, epochs=3)


def test_a_full_disk_while_writing_a_trajectory_leaves_only_complete_files_in_the_buffer(
    tiny_job, monkeypatch
):
    original, calls = np.savez, {"n": 0}

    def filling_the_disk(file: Any, *args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] > 10:  # epoch 0 writes about 8 files: fail in epoch 1, after its first files
            file.write(b"PK\x03\x04 half a zip")
            raise ENOSPC
        original(file, *args, **kwargs)

    monkeypatch.setattr(traj_files.np, "savez", filling_the_disk)
    job = _job(tiny_job, epochs=3)
    failure, paths = _learn_until_it_fails(job)
    fifo = paths.root / "buffer" / "fifo"
    message = str(failure)
    assert message.startswith(f"no space left on device writing {fifo}/TMaze-Passive-H3_")
    assert ".npz: free space on that disk" in message
    assert "continues from epoch 0" in message
    written = list(fifo.iterdir())
    assert len(written) == 10
    assert all(is_traj_file(path) for path in written)  # no temp file
    for path in written:
        load_traj(path)  # every file in the buffer is complete
    monkeypatch.undo()
    _assert_resumes_after(job, epoch=0, epochs=3)


def test_a_failed_flush_keeps_the_unwritten_trajectories_queued(tmp_path, monkeypatch):
    from amago_core.data.writer import TrajectoryWriter

    writer = TrajectoryWriter(1, tmp_path)
    original, calls = np.savez, {"n": 0}

    def second_fails(file: Any, *args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise ENOSPC
        original(file, *args, **kwargs)

    monkeypatch.setattr(traj_files.np, "savez", second_fails)
    from amago_core.data.timestep import Timestep

    def timestep(t: int) -> Timestep:
        return Timestep(
            obs={"observation": np.zeros((1, 2), np.float32)},
            prev_action=np.zeros((1, 2), np.float32),
            reward=np.zeros(1, np.float32),
            time_idx=np.full(1, t),
            terminal=np.zeros(1, bool),
        )

    for _ in range(3):
        writer.start(0, timestep(0))
        writer.add(0, timestep(1), done=True, env_name="env")
    with pytest.raises(TrajectoryWriteError) as caught:
        writer.flush()
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename.startswith(str(tmp_path / "env_"))
    assert writer.num_finished == 2  # the failed one and the one after it
    assert len(writer.flush()) == 2  # written once the disk has room, with no duplicate of the first
    assert len(list(tmp_path.iterdir())) == 3


def test_the_cli_exits_with_one_line_and_resume_continues(tiny_job, tmp_path, monkeypatch):
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(_job(tiny_job, epochs=3, ckpt_interval=1)))
    _fail_state_writes_of(monkeypatch, "state_epoch_1")  # the rolling state after epoch 1
    result = runner.invoke(app, ["run", "-c", str(job_file), "--quiet"])
    assert result.exit_code == WRITE_FAILED, result.output
    assert result.stderr.count("\n") == 1
    root = tmp_path / "runs" / "tiny"
    line = result.stderr
    assert line.startswith(
        f"amago: error: no space left on device writing {root}/ckpts/latest/state_epoch_1: "
    )
    assert f"`amago run --resume {root}`, which continues from epoch 1" in line  # the kept state of epoch 1
    assert "Traceback" not in result.output
    monkeypatch.undo()
    resumed = runner.invoke(app, ["run", "--resume", str(root), "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert "resuming after epoch 1" in resumed.stderr
    assert RunPaths(tmp_path / "runs", "tiny").saved_epochs()[-1] == 2


def test_a_read_only_file_system_under_the_metrics_file_is_named(tiny_job, monkeypatch):
    original, calls = JsonlLogBackend.log, {"n": 0}

    def read_only(self: JsonlLogBackend, metrics: dict[str, Any], *, step: int) -> None:
        calls["n"] += 1
        if calls["n"] > 6:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        original(self, metrics, step=step)

    monkeypatch.setattr(JsonlLogBackend, "log", read_only)
    failure, paths = _learn_until_it_fails(_job(tiny_job, epochs=3))
    assert str(failure).startswith(
        f"read-only file system writing into {paths.root}: make that disk writable"
    )
    assert failure.errno == errno.EROFS


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders"
)
def test_a_read_only_buffer_folder_is_named_with_what_to_change(tiny_job):
    job = _job(tiny_job, epochs=2)
    experiment = _experiment(job)
    fifo = experiment.paths.root / "buffer" / "fifo"
    fifo.chmod(0o555)
    try:
        with pytest.raises(RunFolderWriteError) as caught:
            experiment.learn()
    finally:
        experiment.close()
        fifo.chmod(0o755)
    assert str(caught.value).startswith(f"permission denied writing {fifo}/")
    assert f"make {fifo} writable for this user" in str(caught.value)
    _assert_resumes_after(job, epoch=-1, epochs=2)  # no checkpoint yet: it starts over


def test_other_errors_are_not_taken_for_a_failed_write():
    assert find_write_failure(FileNotFoundError(errno.ENOENT, "gone", "/x")) is None  # a read
    assert find_write_failure(BrokenPipeError(errno.EPIPE, "worker went away")) is None
    wrapped = RuntimeError("env worker 2 raised")
    wrapped.__cause__ = TrajectoryWriteError(errno.EACCES, "Permission denied", "/b/fifo/x.npz")
    found = find_write_failure(wrapped)  # an async env worker's failed write comes back wrapped
    assert found is not None
    assert found[1] == Path("/b/fifo/x.npz")
