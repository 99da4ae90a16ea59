"""The README's and the docs' shell lines work when pasted, in order, into a shell where nothing is activated.

`uv run` puts amago into ``.venv/`` but not on PATH, so a bare ``amago ...`` line works only after the page has
activated that environment (``source .venv/bin/activate``) or when it is written ``uv run amago ...``. The README
activates right after its set-up; ``docs/index.md`` activates in its first block and states the convention for
every page under ``docs/``, which the tutorial pages rely on. Beyond that check of every line:

- the cheap lines of the README and ``docs/index.md`` (``list``, ``show``, ``plugins``, ``--version``,
  ``config``, ``run ... --dry-run``) run in a ``bash`` whose PATH lacks the environment, after the page's own
  activation line: the way a new user pastes them;
- every other ``amago`` line of those pages is checked to be well formed without running it: a ``run`` line
  resolves with ``--dry-run`` appended, any other names a real command and only options it has.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_tools.sizing.budget import parse_duration

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
INDEX = REPO / "docs" / "index.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]
ACTIVATE = "source .venv/bin/activate"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
SHELL = ("bash", "sh", "shell", "console")
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PLACEHOLDER = re.compile(r"<[\w-]+>")
CHEAP = ("amago list", "amago show", "amago plugins", "amago --version", "amago config show")


@dataclass(frozen=True)
class ShellLine:
    """One logical line of a fenced shell block.

    Attributes:
        page: the Markdown file.
        line: its line number there.
        text: the line (``\\`` continuations joined), comment and leading ``VAR=value`` assignments included.
        words: the command's words, without the comment and the assignments.
        block: the text of the whole block the line is in.
    """

    page: Path
    line: int
    text: str
    words: tuple[str, ...]
    block: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def command(self) -> str:
        return " ".join(self.words)


def _shell_lines(page: Path) -> list[ShellLine]:
    source = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(source):
        if match.group(1).lower() not in SHELL:
            continue
        first = source.count("\n", 0, match.start(2)) + 1
        pending, start = "", first
        for number, raw in enumerate(match.group(2).splitlines(), start=first):
            if not pending:
                start = number
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            text, pending = pending + raw, ""
            try:
                words = shlex.split(text, comments=True)
            except ValueError:
                words = text.split()
            while words and ENV_ASSIGNMENT.match(words[0]):
                words.pop(0)
            if words:
                found.append(ShellLine(page, start, text.strip(), tuple(words), match.group(2)))
    return found


LINES = {page: _shell_lines(page) for page in PAGES}


def _is_bare_amago(line: ShellLine) -> bool:
    return line.words[0] == "amago"


def _is_activation(line: ShellLine) -> bool:
    return line.command == ACTIVATE


# ---- every line: amago is on PATH where it is typed ---------------------------------------------------------


@pytest.mark.parametrize("page", [README, INDEX], ids=lambda p: p.name)
def test_a_page_activates_the_environment_before_its_first_bare_amago_line(page):
    lines = LINES[page]
    bare = [i for i, line in enumerate(lines) if _is_bare_amago(line)]
    activations = [i for i, line in enumerate(lines) if _is_activation(line)]
    assert bare, f"{page.name} shows no amago command"
    assert activations, f"{page.name} never runs `{ACTIVATE}`"
    assert activations[0] < bare[0], (
        f"{lines[bare[0]].where}: `{lines[bare[0]].text}` runs before any `{ACTIVATE}` on the page; "
        "activate first, or write it `uv run amago ...`"
    )


def test_the_docs_index_states_the_convention_the_other_pages_rely_on():
    text = " ".join(INDEX.read_text(encoding="utf-8").split())
    assert "The commands in these pages are written for a shell where amago's environment is active" in text
    assert "`uv run amago ...`" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shell_line_can_be_pasted(page):
    for line in LINES[page]:
        # A bare `pip` in a uv-made venv is another Python's pip, which cannot find amago-core.
        assert line.words[0] != "pip" or line.words[1:2] != ("install",) or "-e" not in line.words, (
            f"{line.where}: `{line.text}`: a bare pip is not the environment's own; write `python -m pip` "
            "or `uv pip` / `uv add`"
        )
        if line.words[0] == "uv" and line.words[1:3] == ("run", "amago"):
            continue
        if _is_bare_amago(line):
            # `[GROUP]` / `[--json]` are globs to the shell and unknown arguments to amago.
            bracketed = [w for w in line.words if re.fullmatch(r"\[[A-Z-]+\]|\[--[\w-]+\]", w)]
            assert not bracketed, f"{line.where}: `{line.text}` has the placeholders {bracketed}"


# ---- the cheap lines, in a fresh shell ----------------------------------------------------------------------


def _is_cheap(line: ShellLine) -> bool:
    command = line.command
    if (
        PLACEHOLDER.search(command) or "-c" in line.words
    ):  # no run folder or config file in the scratch folder
        return False
    return command.startswith(CHEAP) or (command.startswith("amago run") and "--dry-run" in line.words)


def _fresh_shell_env() -> dict[str, str]:
    """This process's environment as a new terminal has it: no venv on PATH, no AMAGO_* settings."""
    env_bin = str(Path(sys.prefix) / "bin")
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != Path(env_bin)]
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV" and not k.startswith("AMAGO_")}
    env |= {"PATH": os.pathsep.join(path), "OMP_NUM_THREADS": "1", "PYTHONPATH": ""}
    return env


@pytest.mark.slow
@pytest.mark.parametrize("page", [README, INDEX], ids=lambda p: p.name)
def test_the_cheap_lines_run_pasted_into_a_shell_with_nothing_activated(page, tmp_path):
    activate = Path(sys.prefix) / "bin" / "activate"
    if sys.prefix == sys.base_prefix or not activate.is_file():
        pytest.skip("the tests do not run in a venv, so there is no activate script to paste")
    env = _fresh_shell_env()
    if shutil.which("amago", path=env["PATH"]) is None:
        not_found = subprocess.run(
            ["bash", "-c", "amago --version"], env=env, capture_output=True, cwd=tmp_path
        )
        assert not_found.returncode == 127, "amago ran with the environment off PATH"
    script = ["set -e"]
    cheap = 0
    for line in LINES[page]:
        if _is_activation(line):
            # The page means the clone's .venv; the shell runs in a scratch folder, so the path is made absolute.
            script.append(f"source {shlex.quote(str(activate))}")
        elif _is_bare_amago(line) and _is_cheap(line):
            script.append(f"echo {shlex.quote('+ ' + line.where + ': ' + line.text)}")
            script.append(line.text)
            cheap += 1
    assert cheap >= 3, f"{page.name}: only {cheap} cheap lines found"
    result = subprocess.run(
        ["bash", "-c", "\n".join(script)], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert result.returncode == 0, (
        f"{page.name}: a pasted line failed (the last `+` line):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    assert result.stdout.count("\n+ ") + result.stdout.startswith("+ ") == cheap


# ---- the expensive lines: well formed, not run --------------------------------------------------------------


def _plugin_lines(lines: list[ShellLine]) -> set[ShellLine]:
    """Lines of a block that scaffolds a plugin: they use a component that exists only once it is installed."""
    return {line for line in lines if "amago plugin new" in line.block}


def _known_options(argv: list[str]) -> tuple[Any, set[str]]:
    """The command ``argv`` names and every option it takes (typer ships its own click: duck-typed here)."""
    command: Any = typer.main.get_command(app)
    words = list(argv)
    while hasattr(command, "commands") and words and not words[0].startswith("-"):
        sub = command.commands.get(words[0])
        assert sub is not None, f"`amago {shlex.join(argv)}`: no command {words[0]!r}"
        command, words = sub, words[1:]
    options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    return command, options | {"--help"}


def _expensive(page: Path) -> list[ShellLine]:
    lines = LINES[page]
    plugin = _plugin_lines(lines)
    return [line for line in lines if _is_bare_amago(line) and not _is_cheap(line) and line not in plugin]


EXPENSIVE = [line for page in (README, INDEX) for line in _expensive(page)]


@pytest.mark.parametrize("line", EXPENSIVE, ids=[line.where for line in EXPENSIVE])
def test_the_expensive_lines_are_well_formed(line, monkeypatch, tmp_path, fresh_registries):
    argv = list(line.words[1:])
    command, options = _known_options(argv)
    unknown = [w.partition("=")[0] for w in argv if w.startswith("-") and w.partition("=")[0] not in options]
    assert not unknown, f"{line.where}: `{line.text}`: {command.name} has no option {unknown}"
    if argv[0] != "run" or PLACEHOLDER.search(line.command) or "-c" in argv:
        return
    if "ray.address=auto" in argv:
        pytest.importorskip("ray", reason="the line needs the ray extra")
    if "--budget" in argv:
        # --budget calibrates on this machine even with --dry-run (minutes for a big preset): its value is parsed
        # here, and the rest of the line resolved without it.
        at = argv.index("--budget")
        assert parse_duration(argv[at + 1]) > 0
        del argv[at : at + 2]
    # The same line with --dry-run resolves the whole config (env preset, components, overrides, sizing).
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("AMAGO_")]:
        monkeypatch.delenv(name)
    result = CliRunner().invoke(app, [*argv, "--dry-run"])
    assert result.exit_code == 0, (
        f"{line.where}: `{line.text} --dry-run` exited {result.exit_code}:\n{result.output}"
    )
