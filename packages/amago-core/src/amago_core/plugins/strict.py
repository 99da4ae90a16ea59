"""The base of every amago config model (unknown keys fail with a did-you-mean, values are frozen), and its
validation errors as lines a person can act on.

It sits in the plugin API because a plugin's config and its spec are such models; the experiment config
(``amago_core.config``) builds on it from above.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from amago_core.plugins.field_docs import attach_field_docstrings
from amago_core.suggest import closest


def _accepted_keys(model: type[BaseModel]) -> set[str]:
    keys = set(model.model_fields)
    keys.update(f.alias for f in model.model_fields.values() if f.alias)
    return keys


def unknown_key_error(model: type[BaseModel], unknown: list[str], data: Any) -> ValidationError:
    """Builds a ValidationError with one ``unknown_field`` line per unknown key, located at that key."""
    accepted = sorted(_accepted_keys(model))
    line_errors: list[InitErrorDetails] = []
    for key in unknown:
        guess = closest(key, accepted)
        hint = f"did you mean {guess!r}? " if guess else ""
        line_errors.append(
            {
                "type": PydanticCustomError(
                    "unknown_field",
                    "unknown field '{key}'; {hint}valid fields: {fields}",
                    {"key": key, "hint": hint, "fields": ", ".join(accepted)},
                ),
                "loc": (key,),
                "input": data,
            }
        )
    return ValidationError.from_exception_data(model.__name__, line_errors)


class StrictModel(BaseModel):
    """Frozen pydantic model that rejects unknown keys with a did-you-mean naming the valid fields.

    Field docstrings become field descriptions (shown by ``amago show`` and the JSON Schema), so every
    field of a subclass carries a docstring right below it.
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_default=True,
        protected_namespaces=(),
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Runs before pydantic collects the fields, so docstrings become real field descriptions.
        attach_field_docstrings(cls)
        super().__init_subclass__(**kwargs)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_keys(cls, data: Any) -> Any:
        # pydantic's own extra="forbid" error says only "Extra inputs are not permitted"; a misspelt
        # key deserves the closest valid name, so unknown keys are caught here first.
        if isinstance(data, dict):
            accepted = _accepted_keys(cls)
            unknown = [k for k in data if isinstance(k, str) and k not in accepted]
            if unknown:
                raise unknown_key_error(cls, unknown, data)
        return data


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
