"""docs/packages.md's generated block is what scripts/package_shape.py generates now, and README's layout table
names every workspace distribution's folder (the page and the README cannot drift from the workspace)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("package_shape", ROOT / "scripts" / "package_shape.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_package_page_is_generated_from_the_workspace() -> None:
    script = _script()
    page = (ROOT / "docs" / "packages.md").read_text(encoding="utf-8")
    assert script.BLOCK.text(page) == script.generate(), (
        "docs/packages.md is stale: run `uv run python scripts/package_shape.py --update docs/packages.md`"
    )


def test_the_page_names_every_command_of_amago() -> None:
    from amago_core.cli.app import app

    page = (ROOT / "docs" / "packages.md").read_text(encoding="utf-8")
    names = [info.name for info in app.registered_commands] + [g.name for g in app.registered_groups]
    missing = [name for name in names if f"`amago {name}" not in page]
    assert not missing, f"docs/packages.md does not say which distribution adds {missing}"


def test_the_readme_layout_table_lists_every_distribution_folder() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `([^`]+)` \|", layout, flags=re.MULTILINE))
    folders = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "packages").glob("*/pyproject.toml")}
    assert folders <= rows, f"README's layout table lacks {sorted(folders - rows)}"
    assert "docs/packages.md" in layout
