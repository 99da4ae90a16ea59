"""Turns component specs and their config fields into rows for `amago show` and `amago list`."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from amago_core.plugins.in_process import IN_PROCESS_KEY, InProcessSpec
from amago_core.plugins.registry import ComponentInfo


def type_name(annotation: Any) -> str:
    """A short, readable type: ``int``, ``'sdpa' | 'flash'``, ``int | None``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "None"
    if origin is not None:
        args = ", ".join(type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def default_text(field: FieldInfo) -> str:
    if field.default is PydanticUndefined:
        return "(required)" if field.default_factory is None else "(computed)"
    return repr(field.default)


def field_rows(info: ComponentInfo) -> list[dict[str, str]]:
    """One row per config field: name, type, default, description."""
    if info.spec is None:
        return []
    return [
        {
            "name": name,
            "type": type_name(field.annotation),
            "default": default_text(field),
            "description": (field.description or "").strip(),
        }
        for name, field in info.spec.config.model_fields.items()
    ]


def component_details(info: ComponentInfo) -> dict[str, Any]:
    """Everything `amago show --json` prints about one component."""
    data = info.to_json()
    if info.spec is not None:
        spec = info.spec
        data.update(
            {
                "factory": spec.factory,
                "requires": list(spec.requires),
                "install_hint": spec.install_hint,
                "api_version": spec.api_version,
                "inferred_context": list(spec.config.inferred_context),
                "fields": field_rows(info),
                "config_schema": spec.config.model_json_schema(),
            }
        )
        typed = {
            "group_default": spec.group_default,
            "tasks": list(spec.tasks),
            "default_task": spec.default_task,
        }
        data.update(typed)
        if isinstance(spec, InProcessSpec):
            # What the class is and whose options it takes; the factory string is its path, never imported.
            data[IN_PROCESS_KEY] = spec.factory
            data["options_of"] = spec.base.name if spec.base is not None else None
        if spec.presets:
            data["presets"] = {task: dict(preset) for task, preset in spec.presets.items()}
        if spec.example_obs:
            data["example_obs"] = {
                key: array.model_dump(mode="json") for key, array in spec.example_obs.items()
            }
        from amago_core.plugins.kernels import kernel_report

        data["cuda_kernels"] = kernel_report(spec)
    return data
