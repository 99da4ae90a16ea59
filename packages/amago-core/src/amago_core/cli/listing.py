"""`amago list`, `amago show` and `amago plugins`."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from amago_core.cli.describe import component_details, field_rows
from amago_core.cli.output import STATUS_STYLE, console, fail, print_json
from amago_core.plugins.errors import PluginError
from amago_core.plugins.groups import ENV_SUITES, GROUPS, ComponentGroup, find_group
from amago_core.plugins.in_process import IN_PROCESS, InProcessSpec
from amago_core.plugins.kernels import kernel_report
from amago_core.plugins.registry import ComponentInfo, registries

WIDE_LISTING = 150
"""`amago list` draws its full table (aliases and distribution columns, whole summaries) from this many
terminal columns; narrower, one line per component (:func:`_compact_listing`)."""
ENV_IDS_SHOWN = 8
"""`amago show envs SUITE` names this many env ids; `amago list envs SUITE` lists every one."""

STATUS_MEANING = (
    "ok: the spec loads and its requirements are installed; listing imports no factory, "
    "`amago doctor` builds each component."
)
"""What `amago list` checked, printed under its tables (the doctor's build check is what catches a factory
that raises when called)."""


def _group_or_fail(word: str) -> ComponentGroup:
    try:
        return find_group(word)
    except ValueError as exc:
        fail(f"{exc} See `amago list`.")


def _info_or_fail(group: ComponentGroup, name: str) -> ComponentInfo:
    registry = registries()[group]
    try:
        spec = registry.spec(name)
    except PluginError as exc:
        fail(str(exc))
    for info in registry.describe():
        if info.spec is spec:
            return info
    fail(f"{group.label} {name!r} could not be described; run `amago doctor`.")  # pragma: no cover


def list_components(group_word: str | None, suite: str | None, as_json: bool) -> None:
    groups = GROUPS if group_word is None else (_group_or_fail(group_word),)
    if suite is not None:
        if groups != (ENV_SUITES,):
            fail("a second argument (a suite) only goes with `amago list envs SUITE`.")
        list_tasks(suite, as_json)
        return
    described = {group: registries()[group].describe() for group in groups}
    if as_json:
        if group_word is None:
            print_json({g.cli_name: [i.to_json() for i in infos] for g, infos in described.items()})
        else:
            print_json([i.to_json() for i in described[groups[0]]])
        return
    out = console()
    if out.width < WIDE_LISTING:
        _compact_listing(out, described)
        return
    from rich.markup import escape
    from rich.table import Table

    for group, infos in described.items():
        table = Table(title=f"{group.cli_name} ({group.entry_point_group})", title_justify="left")
        for column in ("name", "aliases", "status", "distribution", "summary"):
            table.add_column(column)
        for info in infos:
            style = STATUS_STYLE[str(info.status)]
            summary = escape(info.summary)
            if info.detail:
                summary = f"{summary} [{style}]{escape(info.detail)}[/]".strip()
            table.add_row(
                f"{info.name} (default)" if info.spec is not None and info.spec.group_default else info.name,
                ", ".join(info.aliases),
                f"[{style}]{info.status}[/]",
                "; ".join(info.distribution),
                summary,
            )
        if not infos:
            table.add_row("(none installed)", "", "", "", "")
        out.print(table)
    out.print(f"[dim]{STATUS_MEANING}[/]")


def _compact_listing(out: Any, described: dict[ComponentGroup, list[ComponentInfo]]) -> None:
    """`amago list` on a narrow terminal: one line per component (name, status, summary cut with an ellipsis).

    The wide table wraps every summary into a column a few words wide (238 lines at 80 columns); here each
    component keeps one line, and what does not fit (distributions, whole summaries) is one command away.
    """
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    for group, infos in described.items():
        table = Table(
            title=f"{group.cli_name} ({group.entry_point_group})",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            expand=True,
        )
        names = [_listed_name(info) for info in infos] or ["(none installed)"]
        table.add_column("name", no_wrap=True, min_width=min(max(len(n) for n in names), out.width // 3))
        table.add_column("status", no_wrap=True)
        table.add_column("summary", no_wrap=True, overflow="ellipsis", ratio=1)
        for name, info in zip(names, infos, strict=False):
            style = STATUS_STYLE[str(info.status)]
            # What is wrong with a component matters more than what it is: its detail comes first.
            text = (
                f"[{style}]{escape(info.detail)}[/] {escape(info.summary)}"
                if info.detail
                else escape(info.summary)
            )
            table.add_row(escape(name), f"[{style}]{info.status}[/]", text.strip())
        if not infos:
            table.add_row("(none installed)", "", "")
        out.print(table)
    out.print(f"[dim]{STATUS_MEANING} More: `amago show GROUP NAME`, --json, {WIDE_LISTING}+ columns.[/]")


def _listed_name(info: ComponentInfo) -> str:
    """The name as listed: ``(default)`` marks the group's default, ``(in-process)`` a component this process
    registered (the narrow listing has no distribution column to say it), aliases follow in brackets."""
    name = f"{info.name} (default)" if info.spec is not None and info.spec.group_default else info.name
    if isinstance(info.spec, InProcessSpec):
        name = f"{name} ({IN_PROCESS})"
    return f"{name} [{', '.join(info.aliases)}]" if info.aliases else name


def list_tasks(suite: str, as_json: bool) -> None:
    try:
        spec = registries().env_suites.spec(suite)
    except PluginError as exc:
        fail(str(exc))
    tasks = list(spec.tasks)
    default = spec.default_task
    prefix = spec.name.replace("_", "-")
    rows = [{"task": t, "env_id": f"{prefix}-{t}", "default": t == default} for t in tasks]
    if as_json:
        print_json({"suite": spec.name, "tasks": rows})
        return
    out = console()
    if not rows:
        out.print(f"{prefix}: this suite takes no task; its env id is [bold]{prefix}[/]")
        return
    for row in rows:
        marker = " (default)" if row["default"] else ""
        out.print(f"{row['env_id']}{marker}")


def show_component(group_word: str, name: str, as_json: bool) -> None:
    group = _group_or_fail(group_word)
    info = _info_or_fail(group, name)
    if as_json:
        print_json(component_details(info), exact_floats=True)  # config defaults, as a config reads them
        return
    from rich.markup import escape
    from rich.table import Table

    out = console()
    style = STATUS_STYLE[str(info.status)]
    out.print(f"[bold]{info.name}[/] ({group.label})  {escape(info.summary)}")
    if info.aliases:
        out.print(f"aliases: {', '.join(info.aliases)}")
    out.print(f"distribution: {'; '.join(info.distribution)}")
    out.print(f"status: [{style}]{info.status}[/] {escape(info.detail)}".rstrip())
    if isinstance(info.spec, InProcessSpec):
        base = info.spec.base
        takes = f"the options of {base.name!r}, whose class it derives from" if base else "no options"
        out.print(f"class: {info.spec.factory}, registered in this process; it takes {takes}")
    elif info.spec is not None:
        out.print(f"factory: {info.spec.factory}")
    if info.spec is not None:
        if info.spec.requires:
            out.print(
                escape(f"requires: {', '.join(info.spec.requires)}  (install: {info.spec.install_hint})")
            )
        if info.spec.config.inferred_context:
            out.print(f"inferred from the run: {', '.join(info.spec.config.inferred_context)}")
        for kernel in kernel_report(info.spec):
            style = "green" if kernel["usable"] else "yellow"
            out.print(f"CUDA kernel {kernel['module']}: [{style}]{escape(str(kernel['why']))}[/]")
        tasks = info.spec.tasks
        if tasks:
            prefix = info.name.replace("_", "-")
            ids = ", ".join(f"{prefix}-{task}" for task in tasks[:ENV_IDS_SHOWN])
            if len(tasks) > ENV_IDS_SHOWN:
                ids += f", ... ({len(tasks)} in all; `amago list envs {info.name}` lists them all)"
            out.print(f"env ids: {ids}")
    table = Table(title="config fields", title_justify="left")
    for column in ("field", "type", "default", "description"):
        table.add_column(column, overflow="fold")
    for row in field_rows(info):
        table.add_row(*(escape(row[key]) for key in ("name", "type", "default", "description")))
    out.print(table)


def distribution_report() -> list[dict[str, Any]]:
    """Per distribution: version, components (``group:name``), hook modules, problems, skip reason.

    Components this process registered belong to no distribution and are left out (`amago list` shows them).
    """
    from amago_core.hooks.manager import hook_manager

    regs = registries()
    report: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"version": "", "components": [], "hooks": [], "problems": [], "skipped": None}
    )
    for registry in regs:
        for info in registry.describe():
            for origin in info.distribution:
                if origin.startswith(IN_PROCESS):
                    continue
                dist, _, version = origin.partition(" ")
                entry = report[dist]
                entry["version"] = version
                entry["components"].append(f"{registry.group.cli_name}:{info.name}")
                if info.status in ("broken", "conflict"):
                    entry["problems"].append(info.detail)
        for record in registry.skipped():
            entry = report[record.distribution]
            entry["version"] = record.version
            entry["skipped"] = record.skip_reason
    for status in hook_manager().statuses:
        entry = report[status.record.distribution]
        entry["version"] = status.record.version
        entry["hooks"].append(status.record.name)
        if status.error:
            entry["problems"].append(status.error)
    for record in regs.hook_records:
        if record.skip_reason:
            report[record.distribution].update(version=record.version, skipped=record.skip_reason)
    rows = []
    for dist, entry in sorted(report.items()):
        dist_status = "skipped" if entry["skipped"] else ("broken" if entry["problems"] else "ok")
        rows.append({"distribution": dist, **entry, "status": dist_status})
    return rows


def list_distributions(as_json: bool) -> None:
    rows = distribution_report()
    if as_json:
        print_json({"switches": registries().switches.describe(), "distributions": rows})
        return
    from rich.markup import escape
    from rich.table import Table

    out = console()
    table = Table(title=f"plugin distributions ({registries().switches.describe()})", title_justify="left")
    for column in ("distribution", "version", "status", "components", "hooks"):
        table.add_column(column, overflow="fold")
    for row in rows:
        style = {"ok": "green", "skipped": "yellow", "broken": "red"}[row["status"]]
        status = f"[{style}]{row['status']}[/]"
        if row["skipped"]:
            status += f" ({escape(row['skipped'])})"
        table.add_row(
            row["distribution"], row["version"], status, ", ".join(row["components"]), ", ".join(row["hooks"])
        )
    out.print(table)
    for row in rows:  # problems below the table: they are long, and a table cell would shred them
        for problem in row["problems"]:
            out.print(f"[red]x[/] {row['distribution']}: {escape(problem)}")
