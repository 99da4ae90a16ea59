"""`amago sweep --storage postgresql://...`: two workers share one study on a real PostgreSQL server.

The test starts its own server (Debian's ``postgresql`` package; ``.ci/run`` installs it) on loopback, in a
temporary folder, and stops it at the end. Without PostgreSQL installed the test is skipped, unless
``AMAGO_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")
pytest.importorskip("psycopg")

from tests.core.test_sweep import METRIC, TINY  # noqa: E402

pytestmark = pytest.mark.slow


def _server_binaries() -> Path | None:
    """The folder of ``initdb``/``pg_ctl`` (Debian keeps them under /usr/lib/postgresql/<version>/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL server on loopback with an empty database; its URL."""
    binaries = _server_binaries()
    if binaries is None:
        if os.environ.get("AMAGO_REQUIRE_POSTGRES") == "1":
            pytest.fail(
                "AMAGO_REQUIRE_POSTGRES=1 but no PostgreSQL server is installed: apt-get install postgresql"
            )
        pytest.skip("no PostgreSQL server installed (apt-get install postgresql)")
    # PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user the package made.
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    home = Path(tempfile.mkdtemp(prefix="amago-pg-", dir="/tmp"))
    if as_user:
        shutil.chown(home, user="postgres", group="postgres")
    data, port = home / "data", _free_port()

    def run(*command: str) -> None:
        subprocess.run([*as_user, *command], check=True, capture_output=True, timeout=120)

    run(str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "amago", "--no-sync")
    options = f"-h 127.0.0.1 -p {port} -k {home} -c fsync=off"
    run(
        str(binaries / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        options,
        "-l",
        str(home / "server.log"),
        "-w",
        "start",
    )
    try:
        run(str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "amago", "sweeps")
        yield f"postgresql://amago@127.0.0.1:{port}/sweeps"
    finally:
        subprocess.run(
            [*as_user, str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(home, ignore_errors=True)


def test_two_workers_share_one_study_on_postgresql(tmp_path, postgres_url):
    space = tmp_path / "space.toml"
    space.write_text(
        textwrap.dedent(
            """
            startup_trials = 2
            [space]
            "optim.learning_rate" = {log_uniform = [1e-4, 1e-3]}
            """
        )
    )
    command = [sys.executable, "-m", "amago_core.cli.app", "sweep"]
    first = subprocess.Popen(
        [
            *command,
            "--space",
            str(space),
            "-o",
            f"run.ckpt_base_dir={tmp_path}",
            "--name",
            "pg",
            *TINY,
            "--trials",
            "4",
            "--storage",
            postgres_url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    folder = tmp_path / "pg"
    deadline = time.monotonic() + 120
    while not (folder / "sweep.json").is_file() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    # A second worker joins the same study (on another machine this is a copy of the folder).
    second = subprocess.Popen(
        [*command, "--resume", str(folder), "--storage", postgres_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, second_err = second.communicate(timeout=600)
    _, first_err = first.communicate(timeout=600)
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second_err
    record = json.loads((folder / "sweep.json").read_text())
    assert record["external_storage"] is True
    assert "127.0.0.1" in record["storage"]

    study = optuna.load_study(
        study_name="pg", storage=postgres_url.replace("postgresql://", "postgresql+psycopg://")
    )
    trials = study.get_trials()
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    # Two workers that ask at the same moment may start one trial more than the count, never fewer.
    assert 4 <= len(complete) == len(trials) <= 5
    # Both workers ran trials of the one study (each trial records the driver that ran it).
    assert {t.user_attrs["worker"]["pid"] for t in complete} == {first.pid, second.pid}
    for trial in complete:
        run_dir = Path(trial.user_attrs["run_dir"])
        assert run_dir.parent == folder
        metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        assert any(METRIC in record for record in metrics)
    # The study's numbers are what `amago sweep show` prints, given the URL again; without it, one line.
    shown = subprocess.run(
        [*command, "show", str(folder), "--json", "--no-plots", "--storage", postgres_url],
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["trials"] == {"complete": len(trials)}
    refused = subprocess.run([*command, "show", str(folder)], capture_output=True, text=True)
    assert refused.returncode == 2
    assert "pass --storage URL" in refused.stderr
    assert "postgresql://amago@127.0.0.1" in refused.stderr


def test_an_unreachable_server_is_one_line(tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('[space]\n"optim.learning_rate" = [1e-4, 3e-4]\n')
    url = f"postgresql://amago@127.0.0.1:{_free_port()}/none"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "amago_core.cli.app",
            "sweep",
            "--space",
            str(space),
            "--storage",
            url,
            "-o",
            f"run.ckpt_base_dir={tmp_path}",
            "--name",
            "x",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "cannot open the sweep storage postgresql+psycopg://amago@127.0.0.1" in done.stderr
    assert not (tmp_path / "x").exists()
