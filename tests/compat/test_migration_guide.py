"""The tables of docs/migration-from-amago.md say what the code does.

Every row of the ``Experiment`` keyword table names the config field that keyword really sets, and every
``amago run`` option given for a gin binding or an AMAGO example flag is accepted and lands where it says.
(The page's code blocks themselves run in tests/test_docs.py.)
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amago.from_amago.flat import path_of
from amago_core.cli.app import app

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "migration-from-amago.md"
CODE_SPAN = re.compile(r"`([^`]+)`")


def _section_rows(heading: str) -> list[list[str]]:
    """The table rows (cells, header and rule excluded) of the section under ``heading``."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    following = re.search(r"\n#{1,3} ", text[start + 1 :])
    section = text[start : start + 1 + following.start()] if following else text[start:]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


KEYWORD_ROWS = _section_rows("### `Experiment` keyword arguments")
GIN_ROWS = _section_rows("### gin bindings")
FLAG_ROWS = _section_rows("### `amago.cli_utils.add_common_cli` switches")


def _keyword_cases() -> list[tuple[str, str]]:
    cases = []
    for keyword_cell, key_cell in KEYWORD_ROWS:
        keyword = CODE_SPAN.findall(keyword_cell)[0]
        cases.append((keyword.removeprefix("DiskTrajDataset."), CODE_SPAN.findall(key_cell)[0]))
    return cases


FLAG_FIELDS = {
    "--agent": "agent.kind",
    "--traj-encoder": "traj_encoder.kind",
    "--tstep-encoder": "tstep_encoder.kind",
    "--exploration": "exploration.kind",
    "--name": "run.name",
    "--mode": "run.mode",
    "--seed": "run.seed",
}
"""``amago run`` flags a row may give, and the config field each sets."""


def _option_cases(rows: list[list[str]]) -> list[str]:
    """Every code span of a row's amago column made only of ``-o`` overrides and the flags above."""
    spans = [span for row in rows for span in CODE_SPAN.findall(row[1])]
    return [span for span in spans if span.split()[0] in ("-o", *FLAG_FIELDS)]


def test_the_tables_were_found():
    assert len(KEYWORD_ROWS) >= 40
    assert len(GIN_ROWS) >= 30
    assert len(FLAG_ROWS) >= 20


@pytest.mark.parametrize(("keyword", "documented"), _keyword_cases())
def test_experiment_keyword_sets_the_documented_field(keyword, documented):
    assert ".".join(path_of(keyword)) == documented


def _value(text: str) -> Any:
    """An ``-o`` value as the CLI reads it: JSON when it parses, else the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _field(config: dict[str, Any], dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        value = value[part]
    return value


@pytest.mark.parametrize("options", _option_cases(GIN_ROWS) + _option_cases(FLAG_ROWS))
def test_documented_options_set_what_they_say(options):
    argv = ["config", "show", "--env", "tmaze-passive", *shlex.split(options)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, f"`amago {shlex.join(argv)}`: {result.output}"
    config = json.loads(result.stdout)  # the JSON; stderr may add the run's estimate
    words = shlex.split(options)
    for flag, value in itertools.pairwise(words):
        if flag == "-o":
            key, _, raw = value.partition("=")
            assert _field(config, key) == _value(raw), f"{key} after `{options}`"
        elif flag in FLAG_FIELDS:
            assert _field(config, FLAG_FIELDS[flag]) == _value(value), f"{flag} {value}"
