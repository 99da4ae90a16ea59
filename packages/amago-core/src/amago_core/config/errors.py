"""Turns pydantic validation errors into lines a person can act on."""

from __future__ import annotations

from pydantic import ValidationError


def _location(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif "[" in str(item) or "function-" in str(item):  # pydantic's internal union/validator tags
            continue
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(top level)"


def describe_validation_error(error: ValidationError, *, source: str = "config") -> list[str]:
    """One line per problem: ``traj_encoder.d_model: Input should be a valid integer (got 'abc')``."""
    lines = []
    for item in error.errors(include_url=False):
        message = item["msg"].removeprefix("Value error, ")
        value = item.get("input")
        if item["type"] not in {"unknown_field", "component", "missing"} and isinstance(
            value, str | int | float
        ):
            shown = repr(value)
            if len(shown) <= 60:
                message += f" (got {shown})"
        lines.append(f"{source}: {_location(item['loc'])}: {message}")
    return lines
