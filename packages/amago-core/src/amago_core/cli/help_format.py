"""How ``--help`` shows flags: ``--dry-run``, not ``--dry-run <bool>``.

Typer 0.29's rich help prints each option's type in a column, a flag's too (``<bool>``), which reads as though the
flag took a value. Its plain (non-rich) help already leaves flags without one; :func:`show_flags_without_a_type`
makes the rich help agree. It changes how help is drawn only, never how arguments are parsed.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperOption

_typed_display = TyperOption.display_type_rich


def _display_type_unless_flag(option: TyperOption, ctx: Any) -> str | None:
    # A counting option (-vvv) is a flag too: it takes no value either.
    if option.is_flag or option.count:
        return None
    return _typed_display(option, ctx)


def show_flags_without_a_type() -> None:
    """Make Typer's rich ``--help`` show no type for options that take no value (idempotent)."""
    TyperOption.display_type_rich = _display_type_unless_flag  # type: ignore[method-assign,assignment]
