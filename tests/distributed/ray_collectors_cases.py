"""Train collection on Ray actors, on a real two-node Ray cluster on the loopback address.

``ray.cluster_utils.Cluster`` starts a head node and a second node as separate raylet processes on this machine:
the actors are placed on both, and trajectories reach the learner through Ray only (each actor writes into a
temp folder of its own). The runs are the embedded T-Maze job at tiny sizes.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from amago import Experiment
from amago_core.config.sources import load_config
from amago_core.data.files import is_traj_file, load_traj
from amago_core.experiment.metrics import AVERAGE_RETURN_KEY
from tests.experiment.conftest import learnable_tmaze_job, stop_when_solved

# As amago's collector does (before Ray is first imported): workers run this interpreter, not `uv run` in a copy
# of the checkout (which syncs a fresh venv per worker start: minutes under load).
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install amago-ray)")
cluster_utils = pytest.importorskip("ray.cluster_utils")

ACTORS = 4


LOOPBACK = "127.0.0.1"
LOOPBACK_SITE = """
try:
    import ray._private.services as services
except ImportError:
    pass
else:
    services.get_node_ip_address = lambda *args, **kwargs: "127.0.0.1"
"""
"""Makes a child process's Ray dial the loopback cluster (see ``two_node_cluster``)."""


@pytest.fixture(scope="module")
def two_node_cluster():
    """A Ray head (2 CPUs) and a second Ray node (2 CPUs) on 127.0.0.1; yields the head's address.

    Test servers listen on loopback only. Ray dials a cluster through the machine's own address, so while the
    cluster is up, Ray's address lookup answers the loopback address in this process (a child process that joins
    it gets :data:`LOOPBACK_SITE`).
    """
    import ray._private.services as services

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_NODE_IP_ADDRESS", LOOPBACK)
        patch.setattr(services, "get_node_ip_address", lambda *args, **kwargs: LOOPBACK)
        node = {"num_cpus": 2, "node_ip_address": LOOPBACK}
        cluster = cluster_utils.Cluster(
            initialize_head=True, head_node_args={**node, "include_dashboard": False}
        )
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        try:
            yield cluster.address
        finally:
            if ray.is_initialized():
                ray.shutdown()
            cluster.shutdown()


def tmaze_job(tmp_path: Path, address: str, corridor: int, name: str) -> dict[str, Any]:
    """The embedded T-Maze job at tiny sizes, collected by 4 Ray actors of 2 envs (1 CPU each: both nodes)."""
    job = learnable_tmaze_job(tmp_path, corridor, name, steps_anneal=100)
    job["ray"] = {"actors": ACTORS, "envs_per_actor": 2, "address": address, "cpus_per_actor": 1.0}
    return job


@pytest.mark.slow
def test_four_actors_on_two_nodes_learn_the_tmaze(tmp_path, two_node_cluster):
    experiment = Experiment(load_config(base=tmaze_job(tmp_path, two_node_cluster, 1, "learn"), environ={}))
    experiment.start()
    collector = experiment.collector
    assert collector is not None
    assert experiment.train_envs is None
    history = stop_when_solved(experiment)
    try:
        nodes = {info.node_id for info in collector.actor_infos()}
        experiment.learn()
        stats = collector.stats
    finally:
        collector.close()
        experiment.close()
    assert len(nodes) == 2  # the actors run on the head and on the second node
    assert history[0] < 0.999 <= history[-1], (
        f"not solved in {experiment.epoch} epochs: val returns {history}"
    )
    assert sorted(stats.frames_by_actor) == list(range(ACTORS))
    # Every actor stepped its 2 envs 6 times in every epoch, and the loop counted all of it.
    assert all(frames == experiment.epoch * 2 * 6 for frames in stats.frames_by_actor.values())
    assert experiment.total_frames == sum(stats.frames_by_actor.values())
    assert stats.snippets == len(experiment.dataset.all_files)
    assert stats.rejected_files == stats.repeated_names == stats.failures == 0


def _kill_actor_and_stop_once_it_is_back(experiment: Any, actor: int, killed: dict[str, Any]) -> None:
    """Waits for epoch 2's collection to be under way, SIGKILLs one actor's process, then lets the run go on
    until the restarted actor has shipped files (a restart takes seconds to minutes, by the machine's load) and
    asks the run to stop."""
    collector = experiment.collector
    pid = collector.actor_infos()[actor].pid
    while experiment.epoch < 2:
        time.sleep(0.01)
    time.sleep(0.3)  # epoch 2 evaluates first (~0.1 s), then the actors collect (~1 s each)
    os.kill(pid, signal.SIGKILL)
    killed["pid"] = pid
    deadline = time.monotonic() + RESTART_TIMEOUT_S
    while time.monotonic() < deadline:
        if collector.stats.pids_by_actor.get(actor, set()) - {pid}:
            killed["back_at_epoch"] = experiment.epoch
            break
        time.sleep(0.1)
    experiment.request_stop()


RESTART_TIMEOUT_S = 300
"""How long the test waits for Ray to bring a killed actor back (it took 15 s at load 5 on 2 cores)."""


@pytest.mark.slow
def test_a_killed_actor_is_restarted_and_no_file_is_written_twice_or_half(tmp_path, two_node_cluster):
    corridor = 20
    job = tmaze_job(tmp_path, two_node_cluster, corridor, "kill")
    job["replay"]["traj_save_len"] = 10**10  # whole episodes: their content tells them apart
    # Random actions: two 21-step episodes of the run are the same by chance with odds of about 4**-21.
    job["exploration"].update(eps_start=1.0, eps_end=1.0)
    job["schedule"].update(
        epochs=10_000,  # until the killer thread sees the restarted actor ship files and stops the run
        train_timesteps_per_epoch=105,
        train_batches_per_epoch=2,
        val_interval=None,
    )
    experiment = Experiment(load_config(base=job, environ={}))
    experiment.start()
    collector = experiment.collector
    killed: dict[str, Any] = {}
    killer = threading.Thread(
        target=_kill_actor_and_stop_once_it_is_back, args=(experiment, 1, killed), daemon=True
    )
    killer.start()
    try:
        experiment.learn()
        killer.join(timeout=10)
        after = collector.actor_infos()
        stats = collector.stats
    finally:
        collector.close()
        experiment.close()
    assert "back_at_epoch" in killed, f"the killed actor did not ship files within {RESTART_TIMEOUT_S} s"
    assert experiment.epoch >= killed["back_at_epoch"] >= 2  # the run went on through the restart
    assert stats.failures >= 1  # the learner saw the death (a lost call) and carried on
    assert after[1].pid != killed["pid"]
    assert after[1].reconstructed
    assert killed["pid"] in stats.pids_by_actor[1]
    assert after[1].pid in stats.pids_by_actor[1]
    assert sorted(stats.frames_by_actor) == list(range(ACTORS))
    files = [p for p in experiment.dataset.buffer_dir.rglob("*") if p.is_file()]
    assert files
    assert all(is_traj_file(p) for p in files)
    assert len(files) == stats.snippets
    assert stats.repeated_names == stats.rejected_files == 0
    contents = set()
    for path in files:
        traj = load_traj(path)  # complete: every file loads
        assert len(traj) == corridor + 1  # a whole episode: no half-collected one was shipped
        contents.add(hashlib.sha256(path.read_bytes()).hexdigest())
    assert len(contents) == len(files)  # no trajectory arrived twice under another name


def test_write_files_rejects_damaged_and_misnamed_files_and_never_overwrites(tmp_path):
    from amago_ray.collector import ShippedFile, digest, write_files

    good = b"payload"
    files = [
        ShippedFile("env_0001_1.0.npz", good, digest(good)),
        ShippedFile("env_0002_1.0.npz", good, digest(b"other bytes")),  # damaged on the way
        ShippedFile("../env_0003_1.0.npz", good, digest(good)),  # escapes the buffer
        ShippedFile("notes.txt", good, digest(good)),  # no trajectory file
        ShippedFile("env_0001_1.0.npz", b"again", digest(b"again")),  # a name that already arrived
    ]
    outcome = write_files(files, tmp_path)
    assert outcome.written == 1
    assert outcome.written_bytes == len(good)
    assert outcome.repeated == 1
    assert outcome.rejected == ["env_0002_1.0.npz", "../env_0003_1.0.npz", "notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["env_0001_1.0.npz"]
    assert (tmp_path / "env_0001_1.0.npz").read_bytes() == good


@pytest.mark.slow
def test_a_default_run_never_imports_ray(tmp_path):
    code = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).parents[1] / "experiment")!r})
from conftest import TINY_JOB
from amago_core.config.sources import load_config
from amago_core.experiment import Experiment
job = json.loads(json.dumps(TINY_JOB))
job["run"].update(ckpt_base_dir={str(tmp_path)!r}, name="no-ray")
job["schedule"].update(epochs=1, ckpt_interval=None)
job["logging"] = {{"verbose": False, "plot": False}}
experiment = Experiment(load_config(base=job, environ={{}}))
experiment.start()
experiment.learn()
experiment.close()
print(experiment.total_frames, sorted(m for m in sys.modules if m == "ray" or m.startswith("ray.")))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "32 []"


def test_doctor_says_when_the_ray_extra_is_missing(monkeypatch):
    from amago_core.cli.doctor import DoctorReport
    from amago_ray import doctor_hooks as doctor  # the doctor's Ray line comes from amago-ray's hook

    real_find_spec = doctor.importlib.util.find_spec
    monkeypatch.setattr(
        doctor.importlib.util, "find_spec", lambda name: None if name == "ray" else real_find_spec(name)
    )
    report = DoctorReport()
    doctor.check_ray(report)
    assert report.notes == ["ray: not installed (needed for ray.actors > 0: pip install amago-ray)"]


@pytest.mark.slow
def test_doctor_reaches_the_cluster_named_by_ray_address(monkeypatch, tmp_path, two_node_cluster):
    from amago_core.cli.doctor import DoctorReport
    from amago_ray import doctor_hooks as doctor  # the doctor's Ray line comes from amago-ray's hook

    monkeypatch.setenv("RAY_ADDRESS", two_node_cluster)
    (tmp_path / "sitecustomize.py").write_text(LOOPBACK_SITE)  # the doctor joins from a child process
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    )
    report = DoctorReport()
    doctor.check_ray(report)
    assert not report.warnings
    assert report.notes[-1].endswith(f"cluster at {two_node_cluster!r} reachable: 2 node(s), 4 CPUs")


@pytest.mark.slow
def test_validation_runs_on_the_actors_when_asked(tmp_path, two_node_cluster):
    job = tmaze_job(tmp_path, two_node_cluster, 1, "remote-val")
    job["ray"].update(actors=2, evaluate=True)
    job["schedule"].update(epochs=2, val_interval=1, train_batches_per_epoch=2)
    experiment = Experiment(load_config(base=job, environ={}))
    experiment.start()
    try:
        assert experiment.val_envs is None  # the learner builds no val envs: the actors hold them
        experiment.learn()
    finally:
        experiment.close()
    records = [
        json.loads(line) for line in (tmp_path / "remote-val" / "metrics.jsonl").read_text().splitlines()
    ]
    val = [r for r in records if f"val/{AVERAGE_RETURN_KEY}" in r]
    assert [r["Epoch"] for r in val] == [0, 1]  # one averaged record per evaluation
    # 2 actors x 2 val envs x 4 steps of 2-step episodes: every actor finished episodes of its own.
    assert all(r["val/Episodes"] >= 2 for r in val)
