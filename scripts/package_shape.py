"""The shape of the workspace, generated: its distributions, what each owns, and the commands each adds.

Writes the generated block of ``docs/packages.md`` (``--update``) or prints it. Everything is read from the
source of truth: each ``pyproject.toml`` (description, internal dependencies, entry points) and the ``amago``
command itself (which distribution's module defines each command and each ``amago run`` / ``amago eval`` option),
so the page cannot drift; ``tests/docs_commands/test_package_shape.py`` fails when it does.

    uv run python scripts/package_shape.py --update docs/packages.md
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from amago_tools.generated_block import GeneratedBlock

ROOT = Path(__file__).resolve().parents[1]
BLOCK = GeneratedBlock(
    "<!-- BEGIN GENERATED: package shape (scripts/package_shape.py) -->",
    "<!-- END GENERATED: package shape -->",
    "the package shape",
)
GROUP_WORDS = {
    "amago.tstep_encoders": ("timestep encoder", "timestep encoders"),
    "amago.traj_encoders": ("trajectory encoder", "trajectory encoders"),
    "amago.agents": ("agent", "agents"),
    "amago.explorations": ("exploration wrapper", "exploration wrappers"),
    "amago.relabelers": ("relabeler", "relabelers"),
    "amago.env_suites": ("env suite", "env suites"),
    "amago.collectors": ("collector backend", "collector backends"),
    "amago": ("hook module", "hook modules"),
    "pytest11": ("pytest plugin", "pytest plugins"),
}


def projects() -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """(distribution, folder, [project] table) of every workspace member, the meta-package first."""
    folders = [ROOT, *sorted((ROOT / "packages").iterdir()), *sorted((ROOT / "plugins-examples").iterdir())]
    for folder in folders:
        file = folder / "pyproject.toml"
        if file.is_file():
            project = tomllib.loads(file.read_text(encoding="utf-8"))["project"]
            yield project["name"], folder, project


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()


def command_owners() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Distribution -> the ``amago`` commands it defines, and -> the ``amago run`` / ``amago eval`` options it adds
    (``run --budget``)."""
    from amago_core.cli import app as app_module
    from amago_core.cli.eval_cmd import plugin_eval_options
    from amago_core.cli.run_cmd import plugin_run_options

    sources = sorted(
        ((folder / "src", name) for name, folder, _ in projects()), key=lambda item: -len(item[0].parts)
    )

    def owner(module: str) -> str:
        """The workspace distribution whose ``src`` holds ``module`` (editable installs name no files)."""
        file = Path(sys.modules[module].__file__ or "").resolve()
        return next((name for src, name in sources if file.is_relative_to(src)), "?")

    commands: dict[str, list[str]] = {}
    app = app_module.app
    for info in app.registered_commands:
        callback = info.callback
        wrapped = getattr(callback, "__wrapped__", callback)
        commands.setdefault(owner(wrapped.__module__), []).append(info.name or wrapped.__name__)
    for group in app.registered_groups:
        typer_app = group.typer_instance
        module = (
            typer_app.registered_commands[0].callback.__module__ if typer_app.registered_commands else "?"
        )
        commands.setdefault(owner(module), []).append(f"{group.name} …")
    options: dict[str, list[str]] = {}
    for command, hook, added in (
        ("run", "amago_run_options", plugin_run_options()),
        ("eval", "amago_eval_options", plugin_eval_options()),
    ):
        for option in added:
            declared = option.annotation.__metadata__[0]
            # Annotated's `typer.Option("--flag")` keeps its first name as `default` until Typer reads it.
            names = [
                d for d in (declared.default, *declared.param_decls) if isinstance(d, str) and d[:1] == "-"
            ]
            flag = names[0] if names else f"--{option.name}"
            options.setdefault(_option_owner(hook, option.name, owner), []).append(f"{command} {flag}")
    return commands, options


def _option_owner(hook: str, name: str, owner: Any) -> str:
    """The distribution whose ``hook`` (``amago_run_options``...) returned the option called ``name``."""
    from amago_core.hooks.manager import hook_manager

    for impl in getattr(hook_manager().hook, hook).get_hookimpls():
        if any(option.name == name for option in impl.function() or ()):
            return owner(impl.function.__module__)
    return "?"


def generate() -> str:
    """The generated Markdown: a dependency graph (mermaid) and one table row per distribution."""
    members = list(projects())
    internal = {name for name, _, _ in members}
    commands, options = command_owners()
    lines = ["```mermaid", "graph BT"]
    for name, _, project in members:
        for requirement in project.get("dependencies", []):
            if _name(requirement) in internal:
                lines.append(f"    {name} --> {_name(requirement)}")
    lines += [
        "```",
        "",
        "| distribution | folder | what it owns | entry points | adds to `amago` |",
        "|---|---|---|---|---|",
    ]
    for name, folder, project in members:
        groups = project.get("entry-points", {})
        entries = ", ".join(
            f"{len(points)} {GROUP_WORDS.get(group, (group, group))[len(points) != 1]}"
            for group, points in sorted(groups.items())
        )
        added = [f"`amago {command}`" for command in commands.get(name, [])]
        added += [f"`amago {flag}`" for flag in options.get(name, [])]
        where = folder.relative_to(ROOT).as_posix() or "."
        lines.append(
            f"| `{name}` | `{where}` | {project.get('description', '')} | {entries or '—'} | "
            f"{', '.join(added) or '—'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", type=Path, help="rewrite this page's generated block instead of printing")
    args = parser.parse_args(argv)
    text = generate()
    if args.update is None:
        sys.stdout.write(text)
        return 0
    page = args.update.read_text(encoding="utf-8")
    try:
        args.update.write_text(BLOCK.replace(page, text), encoding="utf-8")
    except ValueError as exc:
        sys.stderr.write(f"package_shape: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
