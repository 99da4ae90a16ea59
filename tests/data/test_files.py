"""Trajectory files on disk: the mode they are written with."""

from __future__ import annotations

import os
import stat

from amago_core.data.files import atomic_write


def test_trajectory_files_get_the_mode_a_plain_open_gives(tmp_path):
    """Not mkstemp's 0600: a shared buffer is read by other users' processes (a collector, a colleague)."""
    old = os.umask(0o022)
    try:
        written = atomic_write(tmp_path / "a.npz", lambda f: f.write(b"x"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(written.stat().st_mode) == 0o644
