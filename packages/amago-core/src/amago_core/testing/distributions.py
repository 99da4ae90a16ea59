"""Writes fake installed distributions (a dist-info folder with entry points, plus modules) for tests."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class FakeDistribution:
    """A distribution written into a site directory.

    Attributes:
        name: distribution name (``amago-plugin-demo``).
        version: its version.
        site: the directory holding its dist-info and modules (put it on ``sys.path``/``PYTHONPATH``).
        entry_points: ``{group: {entry name: "module:attr"}}``.
        modules: ``{"pkg/mod.py": source}`` written under ``site``.
    """

    name: str
    version: str
    site: Path
    entry_points: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    modules: Mapping[str, str] = field(default_factory=dict)

    @property
    def dist_info(self) -> Path:
        return self.site / f"{self.name.replace('-', '_')}-{self.version}.dist-info"


def write_distribution(
    site: Path,
    name: str,
    *,
    version: str = "1.0.0",
    entry_points: Mapping[str, Mapping[str, str]] | None = None,
    modules: Mapping[str, str] | None = None,
) -> FakeDistribution:
    """Writes ``name``'s dist-info (METADATA, entry_points.txt, RECORD) and its modules into ``site``.

    Module sources are dedented, so tests can pass indented triple-quoted strings.
    """
    dist = FakeDistribution(name, version, Path(site), dict(entry_points or {}), dict(modules or {}))
    dist.dist_info.mkdir(parents=True, exist_ok=True)
    (dist.dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = []
    for group, entries in dist.entry_points.items():
        lines.append(f"[{group}]")
        lines.extend(f"{entry} = {target}" for entry, target in entries.items())
        lines.append("")
    (dist.dist_info / "entry_points.txt").write_text("\n".join(lines))
    written = []
    for relative, source in dist.modules.items():
        path = dist.site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        written.append(relative)
    (dist.dist_info / "RECORD").write_text("".join(f"{p},,\n" for p in written))
    return dist


def activate_site(site: Path) -> None:
    """Puts ``site`` first on ``sys.path`` so its distributions and modules are found."""
    entry = str(site)
    if entry not in sys.path:
        sys.path.insert(0, entry)
    importlib.invalidate_caches()
