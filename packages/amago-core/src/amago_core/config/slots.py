"""Component slots: config fields that take a name or a table and validate it with the chosen plugin's Config.

``traj_encoder = "mamba"`` and ``[traj_encoder] kind = "mamba", d_model = 512`` both become a validated
``MambaConfig``; a bad value is reported at ``traj_encoder.d_model``. Names are looked up in the registries the
validation context carries (:func:`validation_context`), so a run validates against the registries it builds
from (``Experiment(registries=...)``); without one, in the process-wide :func:`~amago_core.plugins.registry.registries`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationError, ValidationInfo
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from amago_core.config.component import ComponentConfig
from amago_core.plugins.errors import PluginError
from amago_core.plugins.groups import ENV_SUITES, RELABELERS, ComponentGroup
from amago_core.plugins.registry import Registries, registries

REGISTRIES_KEY = "amago_registries"
"""The key of the validation context that holds the :class:`Registries` slots look names up in."""


def validation_context(registries: Registries | None) -> dict[str, Any] | None:
    """The pydantic validation context that makes slots look names up in ``registries``.

    ``ExperimentConfig.model_validate(data, context=validation_context(regs))``; None (the process-wide
    registries) gives None, pydantic's own default.
    """
    return None if registries is None else {REGISTRIES_KEY: registries}


def context_registries(context: Any) -> Registries | None:
    """The registries a validation context carries (None when it carries none)."""
    if isinstance(context, Mapping):
        found = context.get(REGISTRIES_KEY)
        if found is not None and not isinstance(found, Registries):
            msg = (
                f"the validation context's {REGISTRIES_KEY!r} is a {type(found).__name__}, not Registries; "
                "build the context with amago_core.config.slots.validation_context(registries)."
            )
            raise TypeError(msg)
        return found
    return None


def _or_installed(registries_: Registries | None) -> Registries:
    return registries_ if registries_ is not None else registries()


def _plugin_error(exc: Exception) -> PydanticCustomError:
    return PydanticCustomError("component", "{reason}", {"reason": str(exc)})


class ComponentSlot:
    """Annotation marker: ``traj_encoder: Annotated[ComponentConfig | str, ComponentSlot(TRAJ_ENCODERS)]``."""

    def __init__(self, group: ComponentGroup):
        self.group = group

    def validate(self, value: Any, registries: Registries | None = None) -> ComponentConfig:
        """``value`` (a name, a table or a config) as the chosen plugin's validated Config.

        Args:
            value: what the config holds in this slot.
            registries: where to look the name up (default: the process-wide registries).

        Raises:
            pydantic_core.PydanticCustomError: the value is no component of this group (the plugin error chained).
            pydantic.ValidationError: the plugin's Config refuses an option (located at that option).
        """
        if not isinstance(value, str | Mapping | ComponentConfig):
            msg = "expected a {label} name or a table with kind = '<name>', got {type}"
            raise PydanticCustomError(
                "component", msg, {"label": self.group.label, "type": type(value).__name__}
            )
        if isinstance(value, Mapping) and "class" in value:
            msg = (
                "this {label} was the Python class {cls} in the run that wrote this config; a config can only name "
                "registered components. Rerun the script that used the class, or register it as a plugin."
            )
            raise PydanticCustomError(
                "component", msg, {"label": self.group.label, "cls": str(value["class"])}
            )
        try:
            return _or_installed(registries)[self.group].make_config(value)
        except ValidationError:
            raise  # already located at the offending field of the plugin's Config
        except (PluginError, ValueError, TypeError) as exc:
            raise _plugin_error(exc) from exc

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.with_info_plain_validator_function(
            self._validate_in_context,
            serialization=core_schema.plain_serializer_function_ser_schema(
                _dump_component, when_used="always"
            ),
        )

    def _validate_in_context(self, value: Any, info: ValidationInfo) -> ComponentConfig:
        return self.validate(value, context_registries(info.context))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return component_json_schema(self.group, handler)


def _dump_component(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, ComponentConfig) else value


class EnvSlot(ComponentSlot):
    """The env slot: an env id (``tmaze-passive``), or a table with ``id`` or ``kind``/``task`` and options."""

    def __init__(self) -> None:
        super().__init__(ENV_SUITES)

    def validate(self, value: Any, registries: Registries | None = None) -> ComponentConfig:
        if isinstance(value, str):
            value = {"id": value}
        if isinstance(value, Mapping) and "id" in value:
            data = dict(value)
            try:
                suite, task = _or_installed(registries).resolve_env_id(str(data.pop("id")))
            except PluginError as exc:
                raise _plugin_error(exc) from exc
            data["kind"] = suite
            if task is not None:
                data["task"] = task
            value = data
        return super().validate(value, registries)


class RelabelerSlot(ComponentSlot):
    """The ``replay.relabeler`` slot: a relabeler name or table, or None for no relabeling.

    A slot inside a section rather than a top-level field: the config names registered relabelers only, so a
    ``Relabeler`` object (which the Python API takes through its dataset) is refused with the way to pass it.
    """

    def __init__(self) -> None:
        super().__init__(RELABELERS)

    def validate(self, value: Any, registries: Registries | None = None) -> ComponentConfig:
        if callable(getattr(value, "relabel", None)):
            msg = (
                "a {cls} object is not a config value (the config names registered relabelers, see `amago list "
                "relabelers`); pass it through the dataset: Experiment(dataset=DiskTrajDataset(..., relabeler=it))"
            )
            raise PydanticCustomError("component", msg, {"cls": type(value).__name__})
        return super().validate(value, registries)


def component_json_schema(group: ComponentGroup, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
    """A name of an installed component, or one of their config tables (every installed plugin included).

    Each plugin's Config goes through the parent's schema generator (``handler``), so its nested models land
    in the parent's ``$defs`` and every ``$ref`` resolves. The schema describes what is installed (the
    process-wide registries): schema generation has no validation context.
    """
    registry = registries()[group]
    tables = [
        handler(info.spec.config.__pydantic_core_schema__)
        for info in registry.describe()
        if info.spec is not None
    ]
    names = registry.names()
    name_schema: JsonSchemaValue = {"type": "string", "description": f"name of an installed {group.label}"}
    if names and group is not ENV_SUITES:  # env ids carry a task after the suite name, so no enum
        name_schema["enum"] = names
    return {"anyOf": [name_schema, *tables], "description": f"{group.label}: a name or a config table"}
