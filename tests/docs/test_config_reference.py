"""The configuration reference in the docs is generated from ExperimentConfig's field docstrings, and current.

`amago config reference` prints it; ``docs/tutorial/03-configuration.md`` holds a copy between two marker
comments. A field added or changed without regenerating that copy fails here, and so does a field without a
docstring (the reference would have nothing to say about it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.config.experiment import SLOT_KEYS, ExperimentConfig
from amago_core.config.strict import StrictModel
from amago_tools.config_reference import (
    BEGIN_MARKER,
    END_MARKER,
    UndocumentedFieldError,
    config_reference,
    generated_text,
    section_table,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tutorial" / "03-configuration.md"
REGENERATE = (
    f"run `amago config reference --update {PAGE.relative_to(PAGE.parents[2])}` from the repository root"
)
runner = CliRunner()

SECTIONS: dict[str, type[BaseModel]] = {
    name: field.annotation
    for name, field in ExperimentConfig.model_fields.items()
    if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
}


def _printed() -> str:
    result = runner.invoke(app, ["config", "reference"])
    assert result.exit_code == 0, result.output
    return result.stdout


def _section_text(reference: str, heading: str) -> str:
    """The text of one ``### heading`` up to the next heading of that level."""
    start = reference.index(f"### {heading}\n")
    end = reference.find("\n### ", start + 1)
    return reference[start : end if end >= 0 else len(reference)]


def test_the_page_holds_what_amago_config_reference_prints_now():
    page = PAGE.read_text(encoding="utf-8")
    assert page.count(BEGIN_MARKER) == 1, PAGE
    assert page.count(END_MARKER) == 1, PAGE
    assert generated_text(page) == _printed(), f"{PAGE.name}'s configuration reference is stale: {REGENERATE}"


def test_every_field_of_every_section_has_a_row_in_its_section():
    reference = config_reference()
    assert set(SECTIONS) == set(ExperimentConfig.model_fields) - set(SLOT_KEYS)
    for section, model in SECTIONS.items():
        text = _section_text(reference, f"`{section}`")
        for name in model.model_fields:
            assert f"\n| `{name}` | " in text, f"{section}.{name} is missing from the reference"
    components = _section_text(reference, "Components")
    for slot in SLOT_KEYS:
        assert f"\n| `{slot}` | `amago show " in components, slot


def test_every_field_has_a_docstring():
    for model in (ExperimentConfig, *SECTIONS.values()):
        for name, field in model.model_fields.items():
            assert (field.description or "").strip(), (
                f"{model.__name__}.{name} has no docstring; add one on the line below the field"
            )


def test_a_field_without_a_docstring_stops_the_reference():
    class Section(StrictModel):
        """A section with one undocumented field."""

        documented: int = 1
        """Has a docstring."""
        undocumented: int = 2

    with pytest.raises(UndocumentedFieldError, match=r"Section\.undocumented has no docstring"):
        section_table(Section)


def test_update_rewrites_only_the_generated_block(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"# Title\n\n{BEGIN_MARKER}\nstale\n{END_MARKER}\n\nAfter.\n", encoding="utf-8")
    result = runner.invoke(app, ["config", "reference", "--update", str(page)])
    assert result.exit_code == 0, result.output
    assert page.read_text(encoding="utf-8") == (
        f"# Title\n\n{BEGIN_MARKER}\n{config_reference()}{END_MARKER}\n\nAfter.\n"
    )
    again = runner.invoke(app, ["config", "reference", "--update", str(page)])
    assert again.exit_code == 0
    assert "up to date" in again.stderr


@pytest.mark.parametrize("link", ["symlink", "hard link"])
def test_update_never_writes_through_a_link(tmp_path, link):
    # The page given may be a link to a file elsewhere (someone else's notes): rewriting it would change that file.
    outside = tmp_path / "outside.md"
    outside.write_text(f"{BEGIN_MARKER}\nstale\n{END_MARKER}\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.symlink_to(outside) if link == "symlink" else page.hardlink_to(outside)
    result = runner.invoke(app, ["config", "reference", "--update", str(page)])
    assert result.exit_code == 2
    assert "is a link (symbolic or hard); pass the page itself" in result.stderr
    assert outside.read_text(encoding="utf-8") == f"{BEGIN_MARKER}\nstale\n{END_MARKER}\n"


def test_update_without_markers_says_where_to_put_them(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# No markers here\n", encoding="utf-8")
    result = runner.invoke(app, ["config", "reference", "--update", str(page)])
    assert result.exit_code == 2
    assert "put the two marker lines" in result.stderr
    assert page.read_text(encoding="utf-8") == "# No markers here\n"


def test_the_reference_command_imports_no_torch():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from amago_core.cli.app import app\n"
        "result = CliRunner().invoke(app, ['config', 'reference'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
