"""The gate's two checks beyond symlinks: no append through a hard link, and a group's members are its own folders.

A hard link is a second name for one file: appending to ``run/metrics.jsonl`` that is also ``outside/notes.txt``
changes the outside file, so it is refused in one line. A seed's or a trial's folder of a group must be a real
folder of that group: a symlink (pointing at someone else's run) or a file in its place is refused.
"""

from __future__ import annotations

import os

import pytest

from amago_core.io import UnsafePathError, member_folder, open_append_inside


def test_append_to_a_hard_linked_file_is_refused_and_changes_nothing(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("theirs\n")
    run = tmp_path / "run"
    run.mkdir()
    os.link(outside, run / "metrics.jsonl")
    with pytest.raises(UnsafePathError, match=r"metrics\.jsonl is hard-linked \(2 names .*\) and retry$"):
        open_append_inside(run, run / "metrics.jsonl")
    assert outside.read_text() == "theirs\n"


def test_append_to_a_plain_file_goes_on(tmp_path):
    with open_append_inside(tmp_path, tmp_path / "metrics.jsonl") as file:
        file.write("{}\n")
    with open_append_inside(tmp_path, tmp_path / "metrics.jsonl") as file:
        file.write("{}\n")
    assert (tmp_path / "metrics.jsonl").read_text() == "{}\n{}\n"


def test_a_member_must_be_a_real_folder_of_the_group(tmp_path):
    group, elsewhere = tmp_path / "group", tmp_path / "elsewhere"
    group.mkdir()
    elsewhere.mkdir()
    assert member_folder(group, "seed_1") == group / "seed_1"  # not there yet: the caller makes it
    (group / "seed_2").mkdir()
    assert member_folder(group, "seed_2") == group / "seed_2"
    (group / "seed_3").symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match="seed_3 is a symlink"):
        member_folder(group, "seed_3")
    (group / "seed_4").write_text("")
    with pytest.raises(
        UnsafePathError, match="seed_4 is a file where the group's member folder seed_4 belongs"
    ):
        member_folder(group, "seed_4")
    with pytest.raises(UnsafePathError, match="lies outside"):
        member_folder(group, "../elsewhere")
