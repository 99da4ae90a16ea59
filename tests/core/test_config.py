"""Config slots, sources and their precedence, error texts and JSON Schema export."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from amago_core.config.errors import describe_validation_error
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.sources import ConfigSourceError, load_config, merge_sources, parse_override
from tests.core.conftest import SPEC_TEMPLATE


def _lines(exc: ValidationError) -> list[str]:
    return describe_validation_error(exc)


def test_slot_accepts_a_name(demo_plugin):
    config = ExperimentConfig(traj_encoder="demo")
    assert config.traj_encoder.kind == "demo"
    assert config.traj_encoder.width == 8


def test_slot_accepts_a_table_and_validates_with_the_plugins_config(demo_plugin):
    config = ExperimentConfig.model_validate({"traj_encoder": {"kind": "dem", "width": "16"}})
    assert type(config.traj_encoder).__name__ == "DemoConfig"
    assert config.traj_encoder.width == 16
    assert config.traj_encoder.kind == "demo"  # the alias resolves to the canonical kind


def test_slot_error_points_at_the_plugin_field(demo_plugin):
    with pytest.raises(ValidationError) as excinfo:
        ExperimentConfig.model_validate({"traj_encoder": {"kind": "demo", "width": "wide"}})
    (line,) = _lines(excinfo.value)
    assert line.startswith("config: traj_encoder.width: Input should be a valid integer")
    assert "(got 'wide')" in line


def test_unknown_field_in_a_slot_gets_did_you_mean(demo_plugin):
    with pytest.raises(ValidationError) as excinfo:
        ExperimentConfig.model_validate({"traj_encoder": {"kind": "demo", "widht": 3}})
    (line,) = _lines(excinfo.value)
    assert "traj_encoder.widht: unknown field 'widht'; did you mean 'width'?" in line


def test_unknown_kind_in_a_slot_suggests_installed(demo_plugin):
    with pytest.raises(ValidationError) as excinfo:
        ExperimentConfig.model_validate({"traj_encoder": {"kind": "dmeo"}})
    (line,) = _lines(excinfo.value)
    assert "traj_encoder: unknown trajectory encoder 'dmeo'. Did you mean 'demo'?" in line


def test_a_table_without_kind_is_rejected(demo_plugin):
    with pytest.raises(ValidationError, match="needs kind"):
        ExperimentConfig.model_validate({"traj_encoder": {"width": 3}})


def test_unknown_section_field_gets_did_you_mean():
    with pytest.raises(ValidationError) as excinfo:
        ExperimentConfig.model_validate({"optim": {"lerning_rate": 1e-3}})
    assert (
        "optim.lerning_rate: unknown field 'lerning_rate'; did you mean 'learning_rate'?"
        in _lines(excinfo.value)[0]
    )


def test_cross_field_rule_names_both_fields():
    with pytest.raises(ValidationError) as excinfo:
        ExperimentConfig.model_validate({"replay": {"traj_save_len": 10}, "run": {"max_seq_len": 64}})
    assert "replay.traj_save_len (10) must be at least run.max_seq_len (64)" in _lines(excinfo.value)[0]


def test_default_slots_stay_names_until_resolved(demo_plugin):
    config = ExperimentConfig()
    assert config.traj_encoder == "transformer"
    assert config.component("traj_encoder").kind == "transformer"
    assert ExperimentConfig(traj_encoder="demo").component("traj_encoder").kind == "demo"


def test_resolving_a_default_that_is_not_installed_raises_the_plugin_error(fake_distribution, monkeypatch):
    from amago_core.plugins import UnknownComponentError

    monkeypatch.setenv("AMAGO_BLOCK_PLUGINS", "amago-nets")
    fake_distribution("amago-plugin-nothing")  # rescans registries with the block in force
    with pytest.raises(
        UnknownComponentError, match="no timestep encoder chosen, and no installed distribution"
    ):
        ExperimentConfig()


def test_core_names_no_component_the_installed_distributions_mark_the_defaults():
    config = ExperimentConfig()
    assert (config.tstep_encoder, config.traj_encoder, config.agent, config.exploration) == (
        "ff",
        "transformer",
        "agent",
        "egreedy",
    )
    assert ExperimentConfig(exploration=None).exploration is None  # null still means "no exploration"


def test_two_installed_defaults_for_one_group_name_both(fake_distribution):
    from amago_core.plugins import DuplicateComponentError

    fake_distribution(
        "amago-plugin-rival",
        entry_points={"amago.traj_encoders": {"rival": "rival_pkg.specs:SPEC"}},
        modules={
            "rival_pkg/__init__.py": "",
            "rival_pkg/specs.py": SPEC_TEMPLATE.format(
                cls="Rival",
                name="rival",
                group="amago.traj_encoders",
                summary="rival",
                package="rival_pkg",
                requires=(),
                hint=None,
                aliases=(),
            ).replace("aliases=(),", "aliases=(), group_default=True,"),
        },
    )
    with pytest.raises(
        DuplicateComponentError, match=r"'rival' \(amago-plugin-rival 1.0.0\) and 'transformer'"
    ):
        ExperimentConfig()
    assert ExperimentConfig(traj_encoder="rival").traj_encoder.kind == "rival"


def test_precedence_override_beats_flag_beats_file_beats_env(tmp_path):
    file = tmp_path / "run.toml"
    file.write_text(
        "[optim]\nlearning_rate = 0.1\nbatch_size = 7\ngrad_clip = 3.0\n[run]\nmax_seq_len = 64\n"
    )
    environ = {
        "AMAGO_OPTIM__LEARNING_RATE": "0.5",
        "AMAGO_OPTIM__BATCH_SIZE": "5",
        "AMAGO_OPTIM__L2_COEFF": "0.25",
        "AMAGO_RUN__MAX_SEQ_LEN": "32",
    }
    config = load_config(
        files=[file],
        flags={"run": {"max_seq_len": 16}, "optim": {"grad_clip": None}},
        overrides=["optim.learning_rate=0.01"],
        environ=environ,
    )
    assert config.optim.learning_rate == 0.01  # override > file > env
    assert config.optim.batch_size == 7  # file > env
    assert config.optim.l2_coeff == 0.25  # env > default
    assert config.run.max_seq_len == 16  # flag > file > env
    assert config.optim.grad_clip == 3.0  # an unset flag (None) changes nothing
    assert config.optim.lr_warmup_steps == 500  # default


def test_later_files_win_and_json_yaml_are_accepted(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"optim": {"batch_size": 3, "learning_rate": 0.2}}))
    (tmp_path / "b.yaml").write_text("optim:\n  batch_size: 4\n")
    config = load_config(files=[tmp_path / "a.json", tmp_path / "b.yaml"], environ={})
    assert config.optim.batch_size == 4
    assert config.optim.learning_rate == 0.2


def test_wandb_environment_names_from_amago_are_honoured():
    config = load_config(
        environ={"AMAGO_WANDB_PROJECT": "proj", "AMAGO_WANDB_ENTITY": "me", "AMAGO_PLUGINS": "x"}
    )
    assert (config.logging.wandb_project, config.logging.wandb_entity) == ("proj", "me")


def test_switching_a_slot_kind_drops_the_old_kinds_options(demo_plugin, tmp_path):
    file = tmp_path / "run.toml"
    file.write_text('[traj_encoder]\nkind = "transformer"\nsome_transformer_option = 1\n')
    merged = merge_sources(files=[file], flags={"traj_encoder": "demo"}, environ={})
    assert merged["traj_encoder"] == "demo"
    same_kind = merge_sources(files=[file], flags={"traj_encoder": "transformer"}, environ={})
    assert same_kind["traj_encoder"]["some_transformer_option"] == 1


def test_options_a_later_kind_leaves_out_are_named_in_one_warning(tmp_path):
    """A recipe's kind-less ``[traj_encoder]`` (written for the preset's Transformer) under ``--traj-encoder gru``:
    its options are dropped, and a warning says which and where gru's own are."""
    import warnings

    from amago.default_job import DEFAULT_JOB
    from amago_core.config.resolve import LeftOutOptionsWarning, resolve_config

    file = tmp_path / "recipe.toml"
    file.write_text("[traj_encoder]\nd_model = 128\nd_ff = 512\n")
    with pytest.warns(LeftOutOptionsWarning) as caught:
        config = resolve_config([file], {"traj_encoder": "gru"}, [], default_job=DEFAULT_JOB)
    assert config.traj_encoder.kind == "rnn"
    assert [str(w.message) for w in caught] == [
        "traj_encoder: d_ff, d_model left out, given before a later source chose rnn, which has no such option; "
        "give its own (`amago show traj-encoders rnn`)."
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeftOutOptionsWarning)
        kept = resolve_config([file], {"traj_encoder": "transformer"}, [], default_job=DEFAULT_JOB)
        assert (kept.traj_encoder.d_model, kept.traj_encoder.d_ff) == (128, 512)
        own = resolve_config(
            [], {"traj_encoder": "gru"}, ["traj_encoder.d_hidden=64"], default_job=DEFAULT_JOB
        )
        assert own.traj_encoder.d_hidden == 64  # gru's own option: nothing left out


def test_options_given_with_a_kind_that_a_later_source_switches_are_named_in_one_warning(tmp_path):
    """A ``-c`` table that names its kind (``kind = "transformer"``, ``n_layers = 3``) under ``--traj-encoder gru``:
    every option is dropped, even ``n_layers``, which gru has too; the warning names those no later source gave
    again. Options kept (the same kind, or given after the choice) warn nothing."""
    import warnings

    from amago.default_job import DEFAULT_JOB
    from amago_core.config.resolve import LeftOutOptionsWarning, resolve_config

    file = tmp_path / "recipe.toml"
    file.write_text(
        '[traj_encoder]\nkind = "transformer"\nd_model = 128\nn_layers = 3\n'
        '[env]\nid = "tmaze-passive"\ncorridor_length = 4\n'
    )
    with pytest.warns(LeftOutOptionsWarning) as caught:
        config = resolve_config([file], {"traj_encoder": "gru"}, [], default_job=DEFAULT_JOB)
    assert config.traj_encoder.n_layers == 2  # gru's default: the transformer's 3 did not carry over
    assert [str(w.message) for w in caught] == [
        "traj_encoder: d_model, n_layers given for transformer left out: a later source chose gru, which starts "
        "from its own defaults (`amago show traj-encoders gru`)."
    ]
    with pytest.warns(LeftOutOptionsWarning) as caught:
        again = resolve_config(
            [file], {"traj_encoder": "gru"}, ["traj_encoder.n_layers=3"], default_job=DEFAULT_JOB
        )
    assert again.traj_encoder.n_layers == 3
    assert [str(w.message).split(" left out")[0] for w in caught] == [
        "traj_encoder: d_model given for transformer"
    ]
    with pytest.warns(LeftOutOptionsWarning) as caught:
        resolve_config([file], {"env": "tmaze-active"}, [], default_job=DEFAULT_JOB)
    assert [str(w.message) for w in caught] == [
        "env: corridor_length given for tmaze-passive left out: a later source chose tmaze-active, which starts "
        "from its own defaults."
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeftOutOptionsWarning)
        kept = resolve_config([file], {"traj_encoder": "transformer"}, [], default_job=DEFAULT_JOB)
        assert (kept.traj_encoder.d_model, kept.traj_encoder.n_layers) == (128, 3)


JOB_WITH_ALTERNATIVE = {
    "agent": {
        "kind": "agent",
        "reward_multiplier": 10.0,
        "by_kind": {"multitask": {"reward_multiplier": 10.0, "output_bins": 32}, "agent": {"tau": 0.01}},
    }
}


def test_a_jobs_options_by_kind_follow_the_kind_the_run_picks():
    kept = merge_sources(base=JOB_WITH_ALTERNATIVE, environ={})
    assert kept["agent"] == {"kind": "agent", "reward_multiplier": 10.0, "tau": 0.01}  # no by_kind left over
    switched = merge_sources(base=JOB_WITH_ALTERNATIVE, flags={"agent": "multitask"}, environ={})
    assert switched["agent"] == {"kind": "multitask", "reward_multiplier": 10.0, "output_bins": 32}
    # Still the lowest layer: what the user sets wins.
    user = merge_sources(
        base=JOB_WITH_ALTERNATIVE,
        flags={"agent": "multitask"},
        overrides=["agent.output_bins=64"],
        environ={},
    )
    assert user["agent"]["output_bins"] == 64
    assert (
        load_config(base=JOB_WITH_ALTERNATIVE, flags={"agent": "multitask"}, environ={}).agent.output_bins
        == 32
    )


def test_options_by_kind_must_be_a_table():
    with pytest.raises(ConfigSourceError, match=r"agent\.by_kind must be a table"):
        merge_sources(base={"agent": {"kind": "agent", "by_kind": ["multitask"]}}, environ={})


def test_override_on_a_slot_fills_in_the_default_kind(demo_plugin):
    merged = merge_sources(overrides=["traj_encoder.width=5"], environ={})
    assert merged["traj_encoder"] == {"kind": "transformer", "width": 5}
    named = load_config(overrides=["traj_encoder=demo", "traj_encoder.width=5"], environ={})
    assert named.traj_encoder.width == 5


def test_override_values_are_parsed():
    assert parse_override("a.b=3") == {"a": {"b": 3}}
    assert parse_override("a.b=3e-4") == {"a": {"b": 3e-4}}
    assert parse_override("a=true") == {"a": True}
    assert parse_override("a=None") == {"a": None}
    assert parse_override("a=[1, 2]") == {"a": [1, 2]}
    assert parse_override("a=mamba") == {"a": "mamba"}
    with pytest.raises(ConfigSourceError, match=r"section\.field=value"):
        parse_override("optim.learning_rate")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("missing.toml", None, "does not exist"),
        ("bad.toml", "[optim\n", "is not valid TOML"),
        ("bad.json", "{", "is not valid JSON"),
        ("bad.yaml", "a: [1,\n", "is not valid YAML"),
        ("conf.ini", "[a]", "unknown format '.ini'"),
        ("list.json", "[1, 2]", "must hold a table"),
    ],
)
def test_unreadable_config_files_name_the_file(tmp_path, name, text, expected):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigSourceError, match=expected) as excinfo:
        load_config(files=[path], environ={})
    assert name in str(excinfo.value)


def test_schema_includes_installed_components(demo_plugin):
    schema = ExperimentConfig.model_json_schema()
    slot = schema["properties"]["traj_encoder"]
    titles = json.dumps(slot)
    assert "DemoConfig" in titles or "demo (trajectory encoder)" in titles
    assert "demo" in slot["anyOf"][0]["enum"]
    assert (
        schema["$defs"]["OptimSection"]["properties"]["learning_rate"]["description"]
        == "AdamW learning rate."
    )


def test_every_section_field_is_documented():
    from pydantic import BaseModel

    def walk(model: type[BaseModel]):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no docstring"
            if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
                walk(field.annotation)

    walk(ExperimentConfig)


def test_an_optional_slot_resolves_its_default_name(demo_plugin):
    config = ExperimentConfig()
    assert isinstance(config.exploration, str)
    # `exploration` is `Slot | None`: resolving it must find its slot despite the Optional wrapper.
    from amago_core.plugins import UnknownComponentError

    try:
        resolved = config.component("exploration")
    except UnknownComponentError:
        pytest.skip("no exploration plugin installed here")
    assert resolved.kind == config.exploration
    assert ExperimentConfig(exploration=None).component("exploration") is None


def test_schema_refs_of_nested_plugin_models_resolve(fake_distribution):
    modules = {
        "nested_pkg/__init__.py": "",
        "nested_pkg/specs.py": '''
            from typing import Literal
            from amago_core.config import ComponentConfig, StrictModel
            from amago_core.plugins import ComponentSpec

            class Inner(StrictModel):
                depth: int = 2
                """How deep."""

            class NestedConfig(ComponentConfig):
                kind: Literal["nested"] = "nested"
                """Registered name."""
                inner: Inner = Inner()
                """A nested table."""

            SPEC = ComponentSpec(name="nested", group="amago.traj_encoders", summary="nested",
                                 config=NestedConfig, factory="nested_pkg.specs:NestedConfig")
        ''',
    }
    fake_distribution(
        "amago-plugin-nested",
        entry_points={"amago.traj_encoders": {"nested": "nested_pkg.specs:SPEC"}},
        modules=modules,
    )
    schema = ExperimentConfig.model_json_schema()
    text = json.dumps(schema)
    refs = {part.split('"')[0] for part in text.split('"$ref": "#/$defs/')[1:]}
    assert "Inner" in refs
    assert refs <= set(schema["$defs"]), refs - set(schema["$defs"])


def test_env_suite_presets_are_the_base_layer(fake_distribution):
    from amago_core.cli.run_cmd import resolve_run_config

    modules = {
        "preset_pkg/__init__.py": "",
        "preset_pkg/specs.py": '''
            from typing import Literal
            from amago_core.config import EnvSuiteConfig
            from amago_core.plugins import ComponentSpec

            class GridConfig(EnvSuiteConfig):
                kind: Literal["grid"] = "grid"
                """Registered name."""
                size: int = 5
                """Side length."""

            SPEC = ComponentSpec(
                name="grid", group="amago.env_suites", summary="grid", config=GridConfig,
                factory="preset_pkg.specs:GridConfig",
                tasks=["easy", "hard"],
                default_task="easy",
                presets={
                    "*": {"run": {"max_seq_len": 64}, "optim": {"batch_size": 7}},
                    "hard": {"run": {"max_seq_len": 256}, "env": {"size": 9}},
                },
            )
        ''',
    }
    fake_distribution(
        "amago-plugin-grid",
        entry_points={"amago.env_suites": {"grid": "preset_pkg.specs:SPEC"}},
        modules=modules,
    )
    easy = resolve_run_config([], [], {"env": "grid"}, None).config
    assert (easy.run.max_seq_len, easy.optim.batch_size) == (64, 7)
    hard = resolve_run_config([], ["optim.batch_size=3"], {"env": "grid-hard"}, None).config
    assert hard.run.max_seq_len == 256
    assert hard.env.size == 9  # preset env options survive the user's env id
    assert hard.env.task == "hard"
    assert hard.optim.batch_size == 3  # the user's override beats the preset
