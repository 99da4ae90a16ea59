"""The documentation's commands and code samples still work.

From every ``docs/**/*.md`` file:

- fenced ``toml`` / ``yaml`` / ``json`` blocks whose first line is ``# file: NAME`` are written to a scratch folder
  (the files the documented commands read);
- lines of fenced ``bash`` blocks that run ``amago list``, ``amago show``, ``amago config``, ``amago plugins``,
  ``amago plugin new`` (into the scratch folder), ``amago --version`` or ``amago run ... --dry-run`` are run through Typer's ``CliRunner`` in that folder and must exit 0
  (leading ``VAR=value`` assignments become the command's environment);
- fenced ``python`` blocks whose first line is ``# doctest: run`` are executed, in page order, in that folder.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app

DOCS = Path(__file__).resolve().parents[1] / "docs"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
TESTED_COMMANDS = (
    "amago list",
    "amago show",
    "amago config",
    "amago plugins",
    "amago plugin new",
    "amago --version",
)
FILE_MARKER = re.compile(r"^#\s*file:\s*(\S+)\s*$")
DOCTEST_MARKER = "# doctest: run"


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(DOCS)}:{self.line}"


def _blocks() -> list[Block]:
    blocks = []
    for page in sorted(DOCS.rglob("*.md")):
        source = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(source):
            line = source.count("\n", 0, match.start()) + 1
            blocks.append(Block(page, line, match.group(1).lower(), match.group(2)))
    return blocks


BLOCKS = _blocks()


def _logical_lines(text: str) -> list[str]:
    """Lines of a shell block with ``\\`` continuations joined."""
    lines, pending = [], ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        lines.append(pending + raw)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _split_command(line: str) -> tuple[dict[str, str], list[str]] | None:
    """``(environment, argv after "amago")`` for a tested command line, else None."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    env = {}
    while words and ENV_ASSIGNMENT.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    command = " ".join(words)
    if command.startswith(TESTED_COMMANDS) or (command.startswith("amago run") and "--dry-run" in words):
        return env, words[1:]
    return None


def _commands() -> list[tuple[str, dict[str, str], list[str]]]:
    found = []
    for block in BLOCKS:
        if block.lang not in ("bash", "sh", "shell", "console"):
            continue
        for offset, line in enumerate(_logical_lines(block.text), start=1):
            parsed = _split_command(line.strip())
            if parsed is not None:
                found.append((f"{block.where}+{offset}", *parsed))
    return found


COMMANDS = _commands()
DOCTESTS = [b for b in BLOCKS if b.lang == "python" and b.text.startswith(DOCTEST_MARKER)]


@pytest.fixture
def docs_dir(tmp_path, monkeypatch, fresh_registries):
    """A scratch folder holding every ``# file:`` block, as the working directory."""
    for block in BLOCKS:
        first, _, rest = block.text.partition("\n")
        marker = FILE_MARKER.match(first.strip())
        if marker and block.lang in ("toml", "yaml", "yml", "json"):
            (tmp_path / marker.group(1)).write_text(rest, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("AMAGO_")]:
        monkeypatch.delenv(name)
    return tmp_path


def test_the_docs_have_examples():
    assert len(COMMANDS) >= 20
    assert len(DOCTESTS) >= 5


@pytest.mark.slow
@pytest.mark.parametrize(("where", "env", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_documented_command_runs(where, env, argv, docs_dir, monkeypatch):
    from amago_core.hooks.manager import reset_hook_manager
    from amago_core.plugins.registry import reset_registries

    for key, value in env.items():  # plugin switches are read when the registries are scanned
        monkeypatch.setenv(key, value)
    reset_registries()
    reset_hook_manager()
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, (
        f"{where}: `amago {shlex.join(argv)}` exited {result.exit_code}:\n{result.output}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("block", DOCTESTS, ids=[b.where for b in DOCTESTS])
def test_documented_python_runs(block, docs_dir, monkeypatch):
    # Run the block as a real module file, so that pydantic, pickle and inspect find its classes and source.
    name = "amago_docs_" + re.sub(r"\W", "_", block.where)
    path = docs_dir / f"{name}.py"
    path.write_text(block.text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
