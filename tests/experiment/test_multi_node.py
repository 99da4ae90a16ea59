"""Two machines simulated on this one: two `accelerate launch` launchers (machine ranks 0 and 1) on the loopback
address, one process each, gloo. One run across them trains one model, logs and checkpoints once, and resumes;
a run folder the machines do not share, or settings they disagree on, fail at start in one line instead of
training on part of the data or hanging."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from amago_core.experiment.safe_state import load_state
from amago_core.experiment.shared_run import RunDisagreementError, check_shared_folders, differing_settings

ACCELERATE = str(Path(sys.executable).parent / "accelerate")
LEARNER = str(Path(__file__).with_name("multi_node_learner.py"))
AMAGO_MODULE = ["-m", "amago_core.cli.app"]
VAL_KEY = "val/Average Total Return (Across All Env Names)"
NOT_SHARED = "the run folder must be on a filesystem every machine shares"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _two_machines(
    tmp_path: Path,
    command: list[str],
    *,
    per_rank: tuple[list[str], list[str]] = ([], []),
    cwds: tuple[Path, Path] | None = None,
) -> list[tuple[int, str, str]]:
    """Runs ``command`` under two launchers, machine ranks 0 and 1; ``(returncode, stdout, stderr)`` of each."""
    port = _free_port()
    launches = []
    for rank in (0, 1):
        out, err = tmp_path / f"launch{port}-{rank}.out", tmp_path / f"launch{port}-{rank}.err"
        with out.open("w") as stdout, err.open("w") as stderr:
            proc = subprocess.Popen(
                [
                    ACCELERATE,
                    "launch",
                    "--multi_gpu",  # the multi-process launcher; without CUDA amago runs it as MULTI_CPU (gloo)
                    "--num_processes",
                    "2",  # in all, over both machines
                    "--num_machines",
                    "2",
                    "--machine_rank",
                    str(rank),
                    "--main_process_ip",
                    "127.0.0.1",
                    "--main_process_port",
                    str(port),
                    "--mixed_precision",
                    "no",
                    "--dynamo_backend",
                    "no",
                    *command,
                    *per_rank[rank],
                ],
                stdout=stdout,
                stderr=stderr,
                text=True,
                env=_env(),
                cwd=cwds[rank] if cwds else tmp_path,
            )
        launches.append((proc, out, err))
    results = []
    try:
        for proc, out, err in launches:
            proc.wait(timeout=240)
            results.append((proc.returncode, out.read_text(), err.read_text()))
    except subprocess.TimeoutExpired:
        # A rank that died in C++ leaves the other waiting on a collective: show what each printed (a rare abort,
        # "terminate called without an active exception", NOTES) instead of the bare timeout.
        for proc, _, _ in launches:
            proc.kill()
        tails = [
            f"machine {rank} (exit {proc.wait()}):\n{err.read_text()[-3000:]}"
            for rank, (proc, _, err) in enumerate(launches)
        ]
        pytest.fail("a launcher ran past 240 s:\n" + "\n".join(tails))
    finally:
        for proc, _, _ in launches:
            if proc.poll() is None:
                proc.kill()
    return results


def _write_job(tmp_path: Path, job: dict) -> Path:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _assert_ok(results: list[tuple[int, str, str]]) -> None:
    for rank, (code, out, err) in enumerate(results):
        assert code == 0, f"machine {rank} exited {code}:\n{out[-2000:]}\n{err[-3000:]}"


@pytest.mark.slow
def test_two_machines_train_one_model_log_once_and_resume(tiny_job, tmp_path):
    job = _write_job(tmp_path, tiny_job)  # 3 epochs of 4 updates, val and a checkpoint every epoch
    run_dir = tmp_path / "runs" / "tiny"

    # A script that trains the job on both machines, then reports each process's parameters.
    learned_dir = tmp_path / "learned"
    _assert_ok(_two_machines(tmp_path, [LEARNER, str(job), str(learned_dir), "3"]))
    learned = [np.load(learned_dir / f"process_{rank}.npz") for rank in (0, 1)]
    assert set(learned[0].files) == set(learned[1].files)
    for name in learned[0].files:  # DDP: the same model on both machines after every update
        np.testing.assert_array_equal(learned[0][name], learned[1][name], err_msg=name)
    assert int(learned[0]["__updates__"]) == 3 * 4
    val = [r["Epoch"] for r in _records(run_dir) if VAL_KEY in r]
    assert val == [0, 1, 2]  # one record per evaluation, averaged over the machines, not one per process
    assert sorted(p.name for p in (run_dir / "ckpts" / "policy_weights").iterdir()) == [
        f"policy_epoch_{e}.safetensors" for e in range(3)
    ]
    # The newest keep_states = 2 training states stay.
    assert sorted(p.name for p in (run_dir / "ckpts" / "training_states").iterdir()) == [
        "tiny_epoch_1",
        "tiny_epoch_2",
    ]
    state = run_dir / "ckpts" / "latest" / "state_epoch_2"
    assert json.loads((state / "progress.json").read_text())["num_processes"] == 2
    streams = [load_state(state, f"rng_{rank}") for rank in (0, 1)]  # each machine's random streams
    # Each process samples its own windows from the shared buffer (seeded alike, both drew the same batches).
    assert streams[0]["dataset"] != streams[1]["dataset"]
    assert not list(run_dir.rglob(".amago-shared-check-*"))  # the start-up check leaves nothing behind

    # `amago run --resume` on both machines continues the run. Machine 1 mounts the shared folder elsewhere.
    mount = tmp_path / "mount"
    mount.symlink_to(tmp_path, target_is_directory=True)
    resumed = _two_machines(
        tmp_path,
        [*AMAGO_MODULE, "run", "-o", "schedule.epochs=5", "--resume"],
        per_rank=([str(run_dir)], [str(mount / "runs" / "tiny")]),
    )
    _assert_ok(resumed)
    assert "resuming after epoch 2" in resumed[0][2]
    assert '"run_dir"' in resumed[0][1]  # the main process reports, the other does not
    assert '"run_dir"' not in resumed[1][1]
    summary = json.loads(resumed[0][1][resumed[0][1].index("{") :])
    assert summary["total_frames"] == 2 * 5 * 8 * 4  # processes x epochs x steps x actors
    assert summary["gradient_steps"] == 5 * 4
    val = [r["Epoch"] for r in _records(run_dir) if VAL_KEY in r]
    assert val == [0, 1, 2, 3, 4]  # the epochs continue; nothing is logged twice
    assert len(list((run_dir / "ckpts" / "policy_weights").iterdir())) == 5

    # The same run, resumed as one process on one machine, continues with one line about what changes.
    single = subprocess.run(
        [
            sys.executable,
            *AMAGO_MODULE,
            "run",
            "--resume",
            str(run_dir),
            "-o",
            "schedule.epochs=6",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=240,
        check=False,
    )
    assert single.returncode == 0, single.stderr[-2000:]
    assert "resuming after epoch 4" in single.stderr
    warnings = [line for line in single.stderr.splitlines() if "was saved by 2 process(es)" in line]
    assert len(warnings) == 1
    assert "this run has 1" in warnings[0]
    assert [r["Epoch"] for r in _records(run_dir) if VAL_KEY in r] == [0, 1, 2, 3, 4, 5]


@pytest.mark.slow
def test_a_run_folder_the_machines_do_not_share_fails_at_start(tiny_job, tmp_path):
    # A relative run folder and a different working folder per machine: each machine writes to its own disk,
    # as with a local path on two real nodes.
    tiny_job["run"]["ckpt_base_dir"] = "runs"
    job = _write_job(tmp_path, tiny_job)
    nodes = [tmp_path / "node0", tmp_path / "node1"]
    for node in nodes:
        node.mkdir()
    results = _two_machines(tmp_path, [*AMAGO_MODULE, "run", "-c", str(job)], cwds=nodes)
    for code, _, err in results:
        assert code == 1
        lines = [line for line in err.splitlines() if line.startswith("amago: error:")]
        assert len(lines) == 1, err[-2000:]
        assert NOT_SHARED in lines[0]
        assert f"writes to {nodes[1] / 'runs' / 'tiny'}" in lines[0]
        assert f"does not see in {nodes[0] / 'runs' / 'tiny'}" in lines[0]
    for node in nodes:  # nothing was trained, and no run folder is left behind
        assert not (node / "runs" / "tiny").exists()


@pytest.mark.slow
def test_machines_started_with_different_settings_fail_at_start(tiny_job, tmp_path):
    job = _write_job(tmp_path, tiny_job)
    results = _two_machines(
        tmp_path,
        [*AMAGO_MODULE, "run", "-c", str(job)],
        # The run name is the main process's (a default name holds the time each machine started), so the name
        # does not count as a difference; the number of epochs does.
        per_rank=([], ["-o", "schedule.epochs=4", "--name", "named-on-machine-1"]),
    )
    for code, _, err in results:  # both stop (neither waits for the other at a barrier)
        assert code == 1
        assert "process 1 resolved different settings from the main process (schedule.epochs):" in err, err[
            -2000:
        ]
    assert not list((tmp_path / "runs").rglob("ckpts"))


def test_differing_settings_names_nested_keys():
    main = {"run": {"name": "a", "seed": 1}, "schedule": {"epochs": 3}, "env": None}
    other = {"run": {"name": "a", "seed": 2}, "schedule": {"epochs": 4}, "env": {"id": "x"}}
    assert differing_settings(main, other) == ["env", "run.seed", "schedule.epochs"]
    assert differing_settings(main, main) == []


def test_a_run_folder_that_cannot_be_written_is_named(tmp_path):
    one_process = SimpleNamespace(is_main_process=True, process_index=0, num_processes=1)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(RunDisagreementError, match=r"process 0 \(host .*\) cannot write to .*a-file/runs"):
        check_shared_folders(one_process, [blocker / "runs" / "tiny"])
    check_shared_folders(one_process, [tmp_path / "runs" / "tiny"])  # a writable folder passes...
    assert list((tmp_path / "runs" / "tiny").iterdir()) == []  # ...and keeps no token
