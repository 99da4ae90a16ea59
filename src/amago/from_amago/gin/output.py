"""amago settings as text: the value of an ``-o key=value`` override, and a TOML config for ``-c``.

What ``amago migrate-gin`` prints (:meth:`~amago.from_amago.gin.migration.Migration.override_lines` and
:meth:`~amago.from_amago.gin.migration.Migration.toml`). Standard library only.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any


def plain(value: Any) -> Any:
    """``value`` with tuples as lists and dict keys as strings: amago's configs are JSON/TOML data."""
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    return value


_READS_AS_OTHER = {"true", "false", "none", "null", "~"}


def override_text(value: Any) -> str:
    """``value`` as the text after ``key=`` in ``-o key=value``, read back to the same value by amago.

    amago reads an override's value as JSON when it parses, else as a string (``true``/``none`` spelt any way are
    booleans and null): a string that would read as something else is written as a JSON string.
    """
    if isinstance(value, str):
        if value.strip() != value or value.lower() in _READS_AS_OTHER or _is_json(value):
            return json.dumps(value)
        return value
    return json.dumps(plain(value), separators=(",", ":"))


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items()) + "}"
    msg = f"TOML has no value for {value!r}"
    raise ValueError(msg)


def _has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, list | tuple):
        return any(_has_null(item) for item in value)
    if isinstance(value, dict):
        return any(_has_null(item) for item in value.values())
    return False


def to_toml(settings: dict[str, Any]) -> tuple[str, list[str]]:
    """``settings`` (dotted key -> value) as a TOML document, and a line for each value TOML cannot hold.

    TOML has no null, so a ``None`` (or a list holding one) is left out of the document, and its line says to
    pass it as ``-o key=null`` instead.
    """
    tree: dict[str, Any] = {}
    left_out: list[str] = []
    for key, value in settings.items():
        if _has_null(value):
            left_out.append(
                f"{key} = {json.dumps(value)}: TOML has no null; add `-o {key}={override_text(value)}` to the command"
            )
            continue
        table = tree
        *parents, last = key.split(".")
        for part in parents:
            table = table.setdefault(part, {})
        table[last] = plain(value)
    lines: list[str] = []

    def write(table: dict[str, Any], path: list[str]) -> None:
        scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
        tables = [(k, v) for k, v in table.items() if isinstance(v, dict)]
        if path and scalars:
            lines.append(f"\n[{'.'.join(_toml_key(p) for p in path)}]")
        lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in scalars)
        for k, v in tables:
            write(v, [*path, k])

    write(tree, [])
    text = "\n".join(lines).lstrip("\n")
    return (text + "\n" if text else ""), left_out
