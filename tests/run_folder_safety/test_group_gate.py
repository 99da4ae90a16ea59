"""A seed group (``amago run --seeds``, ``--resume GROUP``) is held to the standard of a run folder.

Written as an attacker would: a group folder gets a ``seed_K`` that links to someone else's run (or is a file),
logs that link or are hard-linked to someone else's file, or a record whose seed is a path out of the group; a
second driver starts while one holds the group. Each is refused in one line before any seed starts, and no file
outside the group changes. ``amago compare`` writes next to the runs it compares, never through a link.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import amago, snapshot

from amago_studies.seeds import SeedGroup

HOLDER = """
import sys, time
from pathlib import Path
from amago_core.experiment.run_lock import acquire
lock = acquire(Path(sys.argv[1]), "seed group")
print("held", flush=True)
time.sleep(600)
"""


def _one_error_line(result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("amago: error: "), result.output
    return lines[0]


def _group(tmp_path: Path, seeds: list, exit_codes: dict | None = None) -> SeedGroup:
    """A seed group folder ``{tmp_path}/runs/grp`` holding only its record."""
    group = SeedGroup(tmp_path / "runs" / "grp")
    group.root.mkdir(parents=True)
    record = {"seeds": seeds, "command": [], "parallel": 1, "exit_codes": exit_codes or {}}
    group.record.write_text(json.dumps(record))
    return group


def _someone_elses_run(tmp_path: Path, finished_run: Path) -> Path:
    victim = tmp_path / "outside" / "victim"
    shutil.copytree(finished_run, victim, symlinks=True)
    return victim


def test_a_seed_folder_that_links_to_another_run_is_refused_and_that_run_is_untouched(tmp_path, finished_run):
    victim = _someone_elses_run(tmp_path, finished_run)
    group = _group(tmp_path, [0, 1])
    group.run_dir(0).symlink_to(victim)
    before, group_before = snapshot(victim), snapshot(group.root)
    result = amago("run", "--resume", str(group.root))
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert f"{group.run_dir(0)} is a symlink" in line
    assert snapshot(victim) == before
    assert snapshot(group.root) == group_before  # no seed started: no log, no seed_1, no summary


def test_a_seed_folder_that_is_a_file_is_one_line(tmp_path):
    group = _group(tmp_path, [0])
    group.run_dir(0).write_text("not a run")
    result = amago("run", "--resume", str(group.root))
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert "seed_0 is a file where the group's member folder seed_0 belongs" in line
    assert not group.log(0).exists()


def test_a_seed_in_the_record_that_is_a_path_never_decides_where_a_seed_writes(tmp_path, finished_run):
    victim = _someone_elses_run(tmp_path, finished_run)
    # seed_0/../../../outside/victim: the victim's run, reached through the group's own seed_0/.
    group = _group(tmp_path, [0, "0/../../../outside/victim"])
    group.run_dir(0).mkdir()
    (group.root / "seeds.summary.json").write_text(
        json.dumps({"seeds": [{"seed": 0, "run_dir": str(victim)}]})
    )
    before, outside_before = snapshot(victim), snapshot(tmp_path / "outside")
    result = amago("run", "--resume", str(group.root))
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert "every seed must be a whole number >= 0" in line
    assert snapshot(victim) == before
    assert snapshot(tmp_path / "outside") == outside_before  # no log appeared beside it either


def test_a_record_nested_too_deep_is_one_line(tmp_path):
    group = _group(tmp_path, [0])
    group.record.write_text("[" * 5000 + "]" * 5000)
    result = amago("run", "--resume", str(group.root))
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert "cannot be read as a seed group record (RecursionError)" in line


@pytest.mark.parametrize("attack", ["linked log", "hard-linked log", "linked logs folder"])
def test_seed_logs_are_never_written_through_a_link(tmp_path, attack):
    group = _group(tmp_path, [0])
    theirs = tmp_path / "outside" / "notes.txt"
    theirs.parent.mkdir()
    theirs.write_text("theirs\n")
    group.log(0).parent.mkdir()
    if attack == "linked log":
        group.log(0).symlink_to(theirs)
    elif attack == "hard-linked log":
        os.link(theirs, group.log(0))
    else:
        group.log(0).parent.rmdir()
        group.log(0).parent.symlink_to(theirs.parent)
    before = snapshot(tmp_path / "outside")
    result = amago("run", "--resume", str(group.root))
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert ("hard-linked" if attack == "hard-linked log" else "is a symlink") in line
    assert snapshot(tmp_path / "outside") == before
    assert not group.run_dir(0).exists()  # the seed never started


def _start_holder(root: Path) -> subprocess.Popen:
    """A real process holding the group's lock, as a driver running the group does."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_driver_of_a_group_is_refused_naming_the_holder(tmp_path):
    group = _group(tmp_path, [0], exit_codes={"0": 0})  # finished: a resume would only write the summary
    holder = _start_holder(group.root)
    try:
        resumed = amago("run", "--resume", str(group.root))
        started = amago(
            "run", "--seeds", "2", "--name", "grp", "-o", f"run.ckpt_base_dir={group.root.parent}"
        )
    finally:
        holder.kill()
        holder.wait()
    for result in (resumed, started):
        assert result.exit_code == 2, result.output
        line = _one_error_line(result)
        assert f"pid {holder.pid} on host {socket.gethostname()}, seed group" in line
    assert not group.summary.exists()
    assert sorted(path.name for path in group.root.iterdir()) == [".amago.lock", "seeds.json"]
