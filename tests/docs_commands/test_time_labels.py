"""A command in the README or the docs that trains for long says how long, next to it.

A new user pastes a line and waits: the docs' "five-minute tour" once was 12 M env steps (its own ETA read 13 h).
Every ``amago run`` line of every page is resolved as ``amago run ... --dry-run`` would resolve it, and its
:func:`~amago_tools.sizing.estimate.floor_seconds` (every update and env step at a fast CPU's speed: a lower
bound) is computed; a line whose floor is above :data:`LONG_FLOOR_SECONDS` must carry its estimate in its
comment (``~3 h``, ``~40 min``). ``--seeds N`` multiplies the floor by the seeds run one after another.

Not checked here: ``--dry-run`` and ``--smoke`` lines (seconds), ``--budget`` lines (the budget is the label),
``--resume`` and placeholder lines (no config to resolve), and lines naming a component the page scaffolds with
``amago plugin new`` (it exists only once the plugin is installed).
"""

from __future__ import annotations

import json
import math
import os
import re

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.config.experiment import ExperimentConfig
from amago_tools.sizing.estimate import floor_seconds
from tests.docs_commands.test_pasted_commands import LINES, PLACEHOLDER, ShellLine

LONG_FLOOR_SECONDS = 120.0
"""A floor above this is more than 10 minutes on a 2-core CPU: the main job's floor is ~25 s, and it runs ~3 min
there (the floor assumes 20 ms per update and 1 ms per env step; a 2-core laptop is 5-8 times slower)."""
TIME_LABEL = re.compile(r"~\s?\d[\d.,]*\s?(s|sec|min|minutes|h|hours?|days?)\b")
"""An estimate as the docs write one: ``~2 min``, ``~3 h``, ``~1.5 hours``."""
SKIPPED_FLAGS = ("--dry-run", "--smoke", "--budget", "--resume", "-c", "--help")


def _scaffolded(lines: list[ShellLine]) -> set[str]:
    """The components the page's ``amago plugin new GROUP NAME`` lines create (not installed here)."""
    return {
        line.words[4]
        for line in lines
        if line.words[:3] == ("amago", "plugin", "new") and len(line.words) > 4
    }


def _run_lines() -> list[ShellLine]:
    found = []
    for lines in LINES.values():
        scaffolded = _scaffolded(lines)
        for line in lines:
            words = line.words[2:] if line.words[:2] == ("uv", "run") else line.words
            if words[:2] != ("amago", "run") or PLACEHOLDER.search(line.command) or scaffolded & set(words):
                continue
            if not any(flag in words for flag in SKIPPED_FLAGS):
                found.append(line)
    return found


RUN_LINES = _run_lines()


def _seeds(argv: list[str]) -> int:
    """How many seeds' runs the line's ``--seeds`` runs one after another (``--parallel`` at a time)."""
    if "--seeds" not in argv:
        return 1
    text = argv[argv.index("--seeds") + 1]
    count = int(text) if "," not in text else len(text.split(","))
    parallel = int(argv[argv.index("--parallel") + 1]) if "--parallel" in argv else 1
    return math.ceil(count / parallel)


def test_the_pages_have_run_lines_to_check():
    assert len(RUN_LINES) >= 10, [line.where for line in RUN_LINES]


@pytest.mark.parametrize("line", RUN_LINES, ids=[line.where for line in RUN_LINES])
def test_a_long_run_line_says_how_long_it_takes(line, monkeypatch, tmp_path, fresh_registries):
    argv = list(line.words[line.words.index("run") :])
    if "ray.address=auto" in argv:
        pytest.importorskip("ray", reason="the line needs the ray extra")
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("AMAGO_")]:
        monkeypatch.delenv(name)
    result = CliRunner().invoke(app, [*argv, "--dry-run"])
    assert result.exit_code == 0, f"{line.where}: `{line.text} --dry-run`:\n{result.output}"
    printed = json.loads(result.stdout[result.stdout.index("{") :])
    config = ExperimentConfig.model_validate(printed.get("config", printed))
    floor = floor_seconds(config) * _seeds(argv)
    if floor > LONG_FLOOR_SECONDS:
        assert TIME_LABEL.search(line.text), (
            f"{line.where}: `{line.text}` trains at least {floor / 60:.0f} min even on a fast CPU (hours on a "
            "laptop): say how long next to it (e.g. `# ... (~3 h on a 2-core CPU)`), or size it (--steps, --budget)"
        )
