"""Typed spec fields: what core reads from a spec is declared, documented and checked when the spec loads."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import ValidationError

from amago_core.config import ComponentConfig, EnvSuiteConfig
from amago_core.plugins import ComponentSpec, InvalidSpecError


class WideConfig(ComponentConfig):
    kind: Literal["wide"] = "wide"
    """Registered name."""


class GridConfig(EnvSuiteConfig):
    kind: Literal["grid"] = "grid"
    """Registered name."""


def make_spec(group: str = "amago.traj_encoders", config: type = WideConfig, **fields: Any) -> ComponentSpec:
    name = config.kind_name()
    return ComponentSpec(name=name, group=group, summary="s", config=config, factory="m:f", **fields)


def encoder_spec(**fields: Any) -> ComponentSpec:
    return make_spec(**fields)


def suite_spec(**fields: Any) -> ComponentSpec:
    return make_spec("amago.env_suites", GridConfig, **fields)


def test_a_misspelt_field_fails_with_did_you_mean() -> None:
    with pytest.raises(ValidationError, match=r"unknown field 'taks'; did you mean 'tasks'\?"):
        suite_spec(taks=("easy",))
    with pytest.raises(ValidationError, match="did you mean 'cuda_kernels'"):
        encoder_spec(cuda_kernel={"flash_attn": "pip install flash-attn"})


def test_the_free_form_extra_mapping_is_deprecated_and_mapped_onto_the_fields_that_replace_it() -> None:
    # Plugin API 1 as first published took extra={...}; it keeps loading until its deprecation window ends
    # (tests/core/test_plugin_api_compat.py covers the details).
    with pytest.warns(DeprecationWarning, match=r"extra=\.\.\.\) is deprecated and is removed in .*tasks="):
        spec = suite_spec(extra={"tasks": ["easy"]})
    assert spec.tasks == ("easy",)


def test_suite_fields_belong_to_env_suites_only() -> None:
    with pytest.raises(InvalidSpecError, match=r"tasks is for env suites \(amago.env_suites\) only"):
        encoder_spec(tasks=("a",))
    with pytest.raises(InvalidSpecError, match="example_obs is for timestep encoders"):
        encoder_spec(example_obs={"image": {"shape": [8, 8, 3], "dtype": "uint8"}})
    with pytest.raises(InvalidSpecError, match="an env suite cannot be a group default"):
        suite_spec(group_default=True)


def test_tasks_default_task_and_preset_keys_agree() -> None:
    with pytest.raises(
        InvalidSpecError, match=r"default_task 'medium' is not one of tasks \['easy', 'hard'\]"
    ):
        suite_spec(tasks=("easy", "hard"), default_task="medium")
    with pytest.raises(InvalidSpecError, match=r"preset 'hadr' names no task\. Did you mean 'hard'\?"):
        suite_spec(tasks=("easy", "hard"), presets={"hadr": {}})


def test_example_obs_is_validated_into_typed_arrays() -> None:
    spec = make_spec("amago.tstep_encoders", example_obs={"image": {"shape": [8, 8, 3], "dtype": "uint8"}})
    assert spec.example_obs["image"].shape == (8, 8, 3)
    with pytest.raises(ValidationError, match=r"example_obs\.image\.dtype"):
        make_spec("amago.tstep_encoders", example_obs={"image": {"shape": [8], "dtype": "int7"}})


def test_a_preset_for_a_task_merges_over_the_any_task_preset() -> None:
    spec = suite_spec(
        tasks=("easy", "hard"),
        default_task="easy",
        presets={
            "*": {"run": {"max_seq_len": 8}, "optim": {"batch_size": 4}},
            "hard": {"run": {"max_seq_len": 32}},
        },
    )
    assert spec.preset_for("hard") == {"run": {"max_seq_len": 32}, "optim": {"batch_size": 4}}
    assert spec.preset_for(None) == {"run": {"max_seq_len": 8}, "optim": {"batch_size": 4}}
