"""AMAGO's gin configurables map onto amago's config, completely and correctly; `amago migrate-gin` uses the map.

The mapping (``amago.from_amago.gin``) is checked three ways, so it cannot rot:

- every config key and pick it names exists in amago's config: a field of an ``ExperimentConfig`` section, or an
  option of the component its configurable picks (looked up in the installed registries), with a pick's value
  among those the field allows;
- it covers every ``@gin.configurable`` of AMAGO v3.3.0 and every parameter of each, exactly: the list was
  recorded by AMAGO's own interpreter (``bench/amago_gin_configurables.py``, into
  ``fixtures/amago-3.3.0-gin-configurables.json``), since AMAGO is not installed here;
- the tables of ``docs/migration-from-amago.md`` are what ``amago migrate-gin --reference`` prints now.

Then ``amago migrate-gin`` itself: a gin file in the style of AMAGO's examples, translated and fed to
``plan_run`` as ``-o`` overrides and as a TOML file, gives the settings the file meant; every ``config.txt`` of
the AMAGO checkpoints under ``fixtures/`` translates with nothing left over; bad files fail in one line.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from amago.from_amago import gin as gin_migration
from amago.from_amago.flat import path_of
from amago.from_amago.gin import (
    BEGIN_MARKER,
    CONFIGURABLES,
    END_MARKER,
    GIN_MAPPING,
    PICK_KEYS,
    REGISTRATIONS,
    GinSyntaxError,
    generated_text,
    gin_reference,
    migrate,
    override_text,
    parse_gin,
    read_gin,
)
from amago_core.cli.app import app
from amago_core.config.experiment import SLOT_KEYS, ExperimentConfig
from amago_core.config.resolve import plan_run
from amago_core.config.sources import parse_value
from amago_core.plugins.registry import registries

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
RECORDED = json.loads((FIXTURES / "amago-3.3.0-gin-configurables.json").read_text(encoding="utf-8"))
GUIDE = HERE.parents[1] / "docs" / "migration-from-amago.md"
REALISTIC = FIXTURES / "amago_gin" / "tmaze_transformer.gin"
CONFIG_TXTS = sorted((FIXTURES / "amago_checkpoints").rglob("config.txt"))
REGENERATE = "run `amago migrate-gin --update docs/migration-from-amago.md` from the repository root"
runner = CliRunner()

SLOT_GROUPS = {
    "env": "env_suites",
    "tstep_encoder": "tstep_encoders",
    "traj_encoder": "traj_encoders",
    "agent": "agents",
    "exploration": "explorations",
}
"""The registry group holding each slot's components."""


# ---- (a) every key and pick the mapping names exists -----------------------------------------------------------


def _models_of(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation allows (one, or the members of a union)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _models_of(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models_of(arg)]
    return []


def _allowed(annotation: Any, value: Any) -> bool:
    """Whether a pick's ``value`` is one the field's annotation accepts (Literals and bools are checked)."""
    if typing.get_origin(annotation) is typing.Literal:
        return value in typing.get_args(annotation)
    if annotation is bool:
        return isinstance(value, bool)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_allowed(arg, value) for arg in typing.get_args(annotation))
    return True


def _field(key: str, picks: dict[str, Any]) -> tuple[str, Any]:
    """``(where it was found, the field's annotation)`` for a dotted config ``key``, or an AssertionError."""
    top, *rest = key.split(".")
    if top in SLOT_KEYS:
        group = getattr(registries(), SLOT_GROUPS[top])
        kind = picks.get(f"{top}.kind") or group.default_name()
        model: type[BaseModel] = group.spec(kind).config
        where = f"{top} component {kind!r} ({model.__name__})"
    else:
        section = ExperimentConfig.model_fields.get(top)
        assert section is not None, f"{key}: ExperimentConfig has no section or slot {top!r}"
        model, where = section.annotation, f"section {top}"
        assert rest, f"{key} names a whole section"
    annotation: Any = model
    prefix = top
    for part in rest:
        candidates = _models_of(annotation)
        chosen = candidates
        if len(candidates) > 1 and f"{prefix}.type" in picks:  # a union told apart by `type`: the picked one
            chosen = [m for m in candidates if _type_of(m) == picks[f"{prefix}.type"]]
        holder = next((m for m in chosen if part in m.model_fields), None)
        assert holder is not None, f"{key}: {where} has no field {part!r} under {prefix!r}"
        annotation = holder.model_fields[part].annotation
        prefix = f"{prefix}.{part}"
    return where, annotation


def _type_of(model: type[BaseModel]) -> Any:
    field = model.model_fields.get("type")
    return field.default if field is not None else None


@pytest.mark.parametrize("configurable", gin_migration.ALL_CONFIGURABLES, ids=lambda c: c.name)
def test_every_key_and_pick_exists_in_amagos_config(configurable):
    picks = dict(configurable.picks)
    for key, value in configurable.picks:
        assert key in PICK_KEYS, f"{configurable.name}: pick {key!r} is missing from PICK_KEYS"
        where, annotation = _field(key, picks)
        assert _allowed(annotation, value), f"{configurable.name}: {where} does not allow {key} = {value!r}"
    for row in configurable.parameters:
        if row.kind in ("run", "none"):
            assert row.key is None, f"{row.configurable}.{row.parameter}: a {row.kind} row names no key"
            assert row.note.strip(), f"{row.configurable}.{row.parameter}: say why in one sentence"
            continue
        assert row.key is not None
        _field(row.key, picks)
        if row.kind == "choice":
            assert row.key in PICK_KEYS, f"{row.configurable}.{row.parameter}: {row.key} picks nothing"
            assert row.choices, f"{row.configurable}.{row.parameter}: name the classes it picks"
            for name in row.choices:
                chosen = gin_migration.lookup(name)
                assert chosen is not None, f"{row.configurable}.{row.parameter}: {name} is no configurable"
                assert not chosen.picks or row.key in dict(chosen.picks), f"{name} does not set {row.key}"
            for path, value in row.unregistered:
                assert gin_migration.lookup(path) is None, f"{path} is a configurable: list it in choices"
                where, annotation = _field(row.key, {**picks, row.key: value})
                assert _allowed(annotation, value), f"{path}: {where} does not allow {row.key} = {value!r}"
        else:
            assert not row.unregistered, f"{row.configurable}.{row.parameter}: only a choice picks classes"
        if row.convert is not None:
            assert row.convert in gin_migration.CONVERSIONS


def test_the_classes_amago_names_by_a_value_are_values_its_options_accept():
    # SlowAdaptiveRational and SimNorm have no slot of their own: any activation / norm option names them.
    for key, picks in (
        ("traj_encoder.activation", {"traj_encoder.kind": "transformer"}),
        ("tstep_encoder.activation", {"tstep_encoder.kind": "ff"}),
        ("agent.actor.activation", {}),
    ):
        assert _allowed(_field(key, picks)[1], "adaptive"), key
    assert _allowed(_field("traj_encoder.norm", {"traj_encoder.kind": "transformer"})[1], "simnorm")


def test_the_pick_keys_defaults_are_values_their_fields_allow():
    for key, pick in PICK_KEYS.items():
        owners = [c for c in CONFIGURABLES if key in dict(c.picks)]
        assert owners, f"PICK_KEYS[{key!r}] is picked by no configurable"
        if pick.amago_default is not None:
            _, annotation = _field(key, dict(owners[0].picks))
            assert _allowed(annotation, pick.amago_default), key
        if pick.chooser is not None:
            owner, _, parameter = pick.chooser.partition(".")
            assert gin_migration.lookup(owner) is not None, pick.chooser
            assert gin_migration.lookup(owner).parameter(parameter) is not None, pick.chooser


def test_experiment_rows_agree_with_amagos_flat_keywords():
    experiment = gin_migration.lookup("Experiment")
    for row in experiment.parameters:
        if row.kind == "run":
            continue
        flat = ".".join(path_of(row.parameter))
        assert row.key in (flat, f"{flat}.kind"), f"Experiment.{row.parameter}: {row.key} vs {flat}"


# ---- (b) the mapping covers AMAGO v3.3.0's configurables and parameters exactly -------------------------------


def test_the_recording_is_amago_3_3_0s_own():
    assert RECORDED["amago_version"] == gin_migration.AMAGO_VERSION
    assert len(RECORDED["configurables"]) == len(CONFIGURABLES) == 41
    assert sum(len(c["parameters"]) for c in RECORDED["configurables"]) == len(GIN_MAPPING) == 333


def test_every_configurable_of_amago_has_one_entry_at_its_path():
    recorded = {c["path"] for c in RECORDED["configurables"]}
    mapped = [c.path for c in CONFIGURABLES]
    assert len(set(mapped)) == len(mapped), "a configurable is mapped twice"
    assert set(mapped) == recorded, (
        f"missing: {sorted(recorded - set(mapped))}; not AMAGO's: {sorted(set(mapped) - recorded)}"
    )


@pytest.mark.parametrize("recorded", RECORDED["configurables"], ids=lambda c: c["name"])
def test_every_parameter_of_every_configurable_is_mapped_in_amagos_order(recorded):
    configurable = gin_migration.lookup(recorded["path"])
    assert configurable is not None
    assert [row.parameter for row in configurable.parameters] == [p["name"] for p in recorded["parameters"]]
    for param, row in zip(recorded["parameters"], configurable.parameters, strict=True):
        if not param["bindable"]:
            assert row.kind == "run", (
                f"{configurable.name}.{row.parameter}: gin cannot bind it; say who passes it"
            )
            assert "denylist" in row.note, f"{configurable.name}.{row.parameter}: say that gin refuses it"
        if row.fixed:
            default = ast.literal_eval(param["default"])
            assert gin_migration.plain(row.fixed[0]) == gin_migration.plain(default), (
                f"{configurable.name}.{row.parameter}: fixed {row.fixed[0]!r}, AMAGO's default {param['default']}"
            )


def test_every_registry_of_amago_has_its_counterpart():
    assert [r.path for r in REGISTRATIONS] == RECORDED["registrations"]
    for registration in REGISTRATIONS:
        assert registration.path in registration.counterpart


# ---- (c) the migration guide holds the generated tables ---------------------------------------------------------


def test_the_guide_holds_what_amago_migrate_gin_reference_prints_now():
    page = GUIDE.read_text(encoding="utf-8")
    assert page.count(BEGIN_MARKER) == 1, GUIDE
    assert page.count(END_MARKER) == 1, GUIDE
    result = runner.invoke(app, ["migrate-gin", "--reference"])
    assert result.exit_code == 0, result.output
    assert result.stdout == gin_reference()
    assert generated_text(page) == gin_reference(), f"{GUIDE.name}'s gin mapping is stale: {REGENERATE}"
    for configurable in CONFIGURABLES:
        assert f"#### `{configurable.name}`\n" in page, configurable.name


def test_update_rewrites_only_the_block_and_says_when_it_is_current(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"# Title\n\nbefore\n\n{BEGIN_MARKER}\nold\n{END_MARKER}\n\nafter\n", encoding="utf-8")
    first = runner.invoke(app, ["migrate-gin", "--update", str(page)])
    assert first.exit_code == 0, first.output
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Title\n\nbefore\n\n")
    assert text.endswith(f"{END_MARKER}\n\nafter\n")
    assert generated_text(text) == gin_reference()
    second = runner.invoke(app, ["migrate-gin", "--update", str(page)])
    assert second.exit_code == 0
    assert "up to date" in second.stderr
    page.write_text("no markers\n", encoding="utf-8")
    missing = runner.invoke(app, ["migrate-gin", "--update", str(page)])
    assert missing.exit_code == 2
    assert missing.stderr.count("\n") == 1
    assert "marker" in missing.stderr


def _guide_blocks() -> dict[str, str]:
    """The gin example of the guide's "gin bindings" section and the blocks showing what it becomes."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index("\n### Translating gin files: `amago migrate-gin`\n") :]
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", section, flags=re.M | re.S)
    found: dict[str, str] = {}
    for lang, body in blocks:
        if lang == "gin" and "gin" not in found:
            found["gin"] = body
        elif lang == "text" and "text" not in found:
            found["text"] = body
        elif lang == "toml" and body.startswith("# file: rl_config.toml\n") and "toml" not in found:
            found["toml"] = body.removeprefix("# file: rl_config.toml\n")
    return found


def test_the_guides_example_shows_what_the_command_prints(tmp_path, monkeypatch):
    blocks = _guide_blocks()
    assert set(blocks) == {"gin", "text", "toml"}, (
        "the guide's gin example, its output or its TOML is missing"
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rl_config.gin").write_text(blocks["gin"], encoding="utf-8")
    lines = runner.invoke(app, ["migrate-gin", "rl_config.gin"])
    assert lines.exit_code == 0, lines.output
    notes = "".join(
        line + "\n" for line in lines.stderr.splitlines() if not line.startswith("amago migrate-gin:")
    )
    assert blocks["text"] == lines.stdout + notes, (
        "update the guide's output block to what the command prints"
    )
    toml = runner.invoke(app, ["migrate-gin", "rl_config.gin", "--toml"])
    assert toml.exit_code == 0, toml.output
    assert blocks["toml"] == toml.stdout, "update the guide's rl_config.toml block to what --toml prints"


# ---- amago migrate-gin ------------------------------------------------------------------------------------------


def _overrides(stdout: str) -> list[str]:
    words = shlex.split(stdout)
    assert len(words) % 2 == 0, stdout
    assert words[::2] == ["-o"] * (len(words) // 2), stdout
    return words[1::2]


def _planned(overrides: list[str] = (), files: list[Path] = ()) -> ExperimentConfig:
    return plan_run(files, flags={"env": "tmaze-passive"}, overrides=overrides, environ={}).config


def test_a_realistic_gin_file_gives_the_settings_it_meant(tmp_path, fresh_registries):
    result = runner.invoke(app, ["migrate-gin", str(REALISTIC)])
    assert result.exit_code == 0, result.output
    config = _planned(_overrides(result.stdout))
    # the file's include
    assert config.schedule.epochs == 500
    assert config.schedule.val_interval == 10
    assert config.replay.dset_max_size == 15_000
    assert config.distributed.dloader_workers == 0
    # Experiment
    assert config.run.max_seq_len == 31
    assert config.replay.traj_save_len == 31
    assert config.rollout.parallel_actors == 24
    assert config.rollout.sample_actions_train is False
    assert config.optim.learning_rate == 3e-4
    # the components, their options and the classes one level below them
    tstep = config.tstep_encoder
    assert (tstep.kind, tstep.n_layers, tstep.d_hidden, tstep.d_output) == ("ff", 2, 128, 128)
    assert tstep.normalize_inputs is False
    traj = config.traj_encoder
    assert (traj.kind, traj.d_model, traj.d_ff, traj.n_heads, traj.n_layers) == (
        "transformer",
        128,
        512,
        8,
        2,
    )
    assert (traj.attention, traj.window_size) == (
        "flex",
        17,
    )  # AMAGO's 16 steps before the query, and the query
    assert (traj.pos_emb, traj.max_time_idx) == ("learnable", 64)
    agent = config.agent
    assert (agent.kind, agent.reward_multiplier, agent.gamma, agent.num_critics) == (
        "agent",
        100.0,
        0.9999,
        6,
    )
    assert agent.multigammas == (0.9, 0.99, 0.999)
    assert (agent.fbc_filter.type, agent.fbc_filter.beta, agent.fbc_filter.weight_clip_high) == (
        "exp",
        0.5,
        50.0,
    )
    assert agent.actor.n_layers == 3
    assert agent.critic.d_hidden == 128
    exploration = config.exploration
    # example 04's TMazeExploration (a subclass of EpsilonGreedy) is amago's tmaze exploration
    assert (exploration.kind, exploration.corridor_length) == ("tmaze", 30)
    assert (exploration.eps_end, exploration.steps_anneal) == (0.01, 100_000)  # TMazeExploration's defaults
    # one line per binding it could not translate, naming it and why
    notes = [line for line in result.stderr.splitlines() if not line.startswith("amago migrate-gin:")]
    assert len(notes) == 4, result.stderr
    assert notes[0].startswith(f"{REALISTIC}:37: SigmaReparam.fast_init: no counterpart in amago: ")
    for line, parameter in zip(notes[1:], ("eps_start", "eps_end", "steps_anneal"), strict=True):
        # TMazeExploration passes these to EpsilonGreedy itself: gin's EpsilonGreedy bindings never reached it
        assert f": EpsilonGreedy.{parameter}: no effect in AMAGO either: " in line
        assert f"TMazeExploration passes {parameter} to EpsilonGreedy itself" in line


def test_the_toml_output_is_the_same_config_as_the_override_lines(tmp_path, fresh_registries):
    lines = runner.invoke(app, ["migrate-gin", str(REALISTIC)])
    toml = runner.invoke(app, ["migrate-gin", str(REALISTIC), "--toml"])
    assert toml.exit_code == 0, toml.output
    path = tmp_path / "migrated.toml"
    path.write_text(toml.stdout, encoding="utf-8")
    assert tomllib.loads(toml.stdout)["traj_encoder"]["window_size"] == 17
    from_file = _planned(files=[path])
    from_lines = _planned(_overrides(lines.stdout))
    assert from_file.model_dump() == from_lines.model_dump()


@pytest.mark.parametrize(
    "config_txt", CONFIG_TXTS, ids=lambda p: str(p.relative_to(FIXTURES / "amago_checkpoints"))
)
def test_a_runs_config_txt_translates_completely_into_a_valid_config(config_txt, fresh_registries):
    migration = migrate(read_gin(config_txt))
    assert not migration.notes, "\n".join(map(str, migration.notes))
    assert migration.translated > 30
    overrides = [f"{key}={override_text(value)}" for key, value in migration.settings.items()]
    config = _planned(overrides)
    for key, value in migration.settings.items():
        if key == "rollout.async_env_mp_context" and value is None:
            continue  # AMAGO's None (the platform's default) is amago's forkserver
        actual: Any = config
        for part in key.split("."):
            actual = getattr(actual, part)
        assert gin_migration.plain(actual) == value, key


def test_a_file_that_cannot_be_read_is_one_line_naming_it(tmp_path):
    missing = runner.invoke(app, ["migrate-gin", str(tmp_path / "nope.gin")])
    assert missing.exit_code == 2
    assert missing.stderr.count("\n") == 1
    assert "nope.gin" in missing.stderr
    bad = tmp_path / "bad.gin"
    bad.write_text("Agent.gamma = 0.99\nAgent.tau = [0.1,\n", encoding="utf-8")
    unclosed = runner.invoke(app, ["migrate-gin", str(bad)])
    assert unclosed.exit_code == 2
    assert unclosed.stderr.startswith(f"amago: error: {bad}:2: ")
    assert unclosed.stderr.count("\n") == 1
    bad.write_text("Agent.gamma = 0.99\nAgent.tau == 3\n", encoding="utf-8")
    assert f"{bad}:2: expected a binding" in runner.invoke(app, ["migrate-gin", str(bad)]).stderr
    bad.write_text("include 'elsewhere.gin'\n", encoding="utf-8")
    included = runner.invoke(app, ["migrate-gin", str(bad)])
    assert included.exit_code == 2
    assert f"{bad}:1: include 'elsewhere.gin'" in included.stderr
    nothing = runner.invoke(app, ["migrate-gin"])
    assert nothing.exit_code == 2
    assert "--reference" in nothing.stderr


def test_gin_syntax_references_macros_scopes_and_includes(tmp_path):
    (tmp_path / "base.gin").write_text("Experiment.epochs = 10\nWIDTH = 64\n", encoding="utf-8")
    text = """
include 'base.gin'
from __gin__ import dynamic_registration
import amago.agent
Experiment.traj_encoder_type = @wide/amago.nets.traj_encoders.TformerTrajEncoder
wide/TformerTrajEncoder.d_model = %WIDTH
narrow/GRUTrajEncoder.d_hidden = 8
TformerTrajEncoder.norm = None
Agent.fbc_filter_func = @exp_filter()
Multigammas.discrete = (0.9,
                        0.99)  # a tuple over two lines
Experiment.run_name = 'has # no comment'
Experiment.epochs = 20
"""
    (tmp_path / "main.gin").write_text(text, encoding="utf-8")
    statements = read_gin(tmp_path / "main.gin")
    assert [s.target for s in statements[:2]] == ["Experiment", "WIDTH"]  # the include, in place
    migration = migrate(statements)
    settings = migration.settings
    assert settings["schedule.epochs"] == 20  # the later binding wins, as in gin
    assert settings["traj_encoder.kind"] == "transformer"
    assert settings["traj_encoder.d_model"] == 64
    assert settings["traj_encoder.norm"] == "none"
    assert settings["agent.fbc_filter.type"] == "exp"
    assert settings["agent.multigammas"] == [0.9, 0.99]
    assert settings["run.name"] == "has # no comment"
    [note] = migration.notes
    assert note.binding == "narrow/GRUTrajEncoder.d_hidden"
    assert "scope 'narrow'" in note.message


def test_picks_follow_the_file_then_the_one_class_it_configures_then_amagos_default():
    def settle(text: str) -> tuple[dict[str, Any], list[str]]:
        migration = migrate(parse_gin(text, "f.gin"))
        return migration.settings, [f"{n.binding}: {n.message}" for n in migration.notes]

    # picked in the file: the other class's options had no effect in AMAGO either
    settings, notes = settle(
        "Experiment.traj_encoder_type = @GRUTrajEncoder\nTformerTrajEncoder.n_layers = 4\n"
    )
    assert settings == {"traj_encoder.kind": "rnn"}
    assert notes == [
        "TformerTrajEncoder.n_layers: no effect in AMAGO either: f.gin:1 picks GRUTrajEncoder "
        '(`traj_encoder.kind = "rnn"`), so TformerTrajEncoder is not used'
    ]
    # options of one class, no pick: that class (AMAGO's script picked it in Python)
    settings, notes = settle("GMM.gmm_modes = 3\nMultiTaskAgent.gamma = 0.99\n")
    assert settings["agent.continuous_dist.type"] == "gmm"
    assert settings["agent.continuous_dist.modes"] == 3
    assert settings["agent.kind"] == "multitask"
    assert not notes
    # options of two classes with a default among them: AMAGO's default
    settings, notes = settle("binary_filter.threshold = 0.1\nexp_filter.beta = 2.0\n")
    assert settings == {"agent.fbc_filter.type": "binary", "agent.fbc_filter.threshold": 0.1}
    assert notes[0].startswith("exp_filter.beta: no effect in AMAGO either: AMAGO uses binary_filter")
    assert "add `Agent.fbc_filter_func = @exp_filter`" in notes[0]
    # options of two components, no pick: ambiguous, with the binding that would decide
    settings, notes = settle("GRUTrajEncoder.d_hidden = 8\nMambaTrajEncoder.d_state = 4\n")
    assert settings == {}
    assert len(notes) == 2
    assert all("picks none of them" in n and "Experiment.traj_encoder_type = @" in n for n in notes)
    # a class amago picks by itself
    settings, notes = settle("Actor.continuous_dist_type = @Multibinary\n")
    assert notes[0].startswith("Actor.continuous_dist_type: nothing to set: ")
    # a pick the owner cannot make in amago
    _, notes = settle("Agent.critic_type = @NCriticsTwoHot\n")
    assert "NCriticsTwoHot cannot be picked here" in notes[0]


def test_amagos_cnn_backbones_and_their_layers_become_the_cnn_encoders_options(tmp_path, fresh_registries):
    def translate(text: str) -> tuple[dict[str, Any], list[str], ExperimentConfig]:
        path = tmp_path / "cnn.gin"
        path.write_text(text, encoding="utf-8")
        result = runner.invoke(app, ["migrate-gin", str(path)])
        assert result.exit_code == 0, result.output
        notes = [line for line in result.stderr.splitlines() if not line.startswith("amago migrate-gin:")]
        return migrate(read_gin(path)).settings, notes, _planned(_overrides(result.stdout))

    # GridworldCNN, picked (by a module path, as AMAGO's examples write it), with its layers
    settings, notes, config = translate(
        "Experiment.tstep_encoder_type = @CNNTstepEncoder\n"
        "CNNTstepEncoder.cnn_type = @cnn.GridworldCNN\n"
        "CNNTstepEncoder.channels_first = True\n"
        "GridworldCNN.channels = [8, 16, 24]\n"
        "GridworldCNN.kernels = [3, 2, 2]\n"
        "GridworldCNN.strides = [1, 1, 1]\n"
        "NatureishCNN.channels = [32, 64, 64]\n"
    )
    assert settings == {
        "tstep_encoder.kind": "cnn",
        "tstep_encoder.cnn_type": "gridworld",
        "tstep_encoder.channels_first": True,
        "tstep_encoder.cnn_channels": [8, 16, 24],
        "tstep_encoder.cnn_kernels": [3, 2, 2],
        "tstep_encoder.cnn_strides": [1, 1, 1],
    }
    assert len(notes) == 1
    assert notes[0].endswith(
        ":7: NatureishCNN.channels: no effect in AMAGO either: "
        + f"{tmp_path / 'cnn.gin'}:2 picks GridworldCNN "
        '(`tstep_encoder.cnn_type = "gridworld"`), so NatureishCNN is not used'
    )
    tstep = config.tstep_encoder
    assert (tstep.kind, tstep.cnn_type, tstep.channels_first) == ("cnn", "gridworld", True)
    assert tstep.conv_layers() == ((8, 16, 24), (3, 2, 2), (1, 1, 1))

    # GridworldCNN's options alone (a run's config.txt lists no class-valued parameter): the class they configure
    settings, notes, config = translate("GridworldCNN.channels = [4, 8, 8]\n")
    assert not notes
    assert settings == {
        "tstep_encoder.kind": "cnn",
        "tstep_encoder.cnn_type": "gridworld",
        "tstep_encoder.cnn_channels": [4, 8, 8],
    }
    assert config.tstep_encoder.conv_layers() == ((4, 8, 8), (2, 2, 2), (1, 1, 1))  # AMAGO's defaults fill in

    # NatureishCNN's layers, here two convolutions
    settings, notes, config = translate(
        "NatureishCNN.channels = [16, 32]\nNatureishCNN.kernels = [8, 4]\nNatureishCNN.strides = [4, 2]\n"
    )
    assert not notes
    assert settings["tstep_encoder.cnn_type"] == "nature"
    assert config.tstep_encoder.conv_layers() == ((16, 32), (8, 4), (4, 2))

    # DrQCNN, which AMAGO left out of gin: a script that registered it references it; it has no layer options
    for reference in ("@DrQCNN", "@amago.nets.cnn.DrQCNN"):
        settings, notes, config = translate(
            f"CNNTstepEncoder.cnn_type = {reference}\nNatureishCNN.channels = [16, 32, 32]\n"
        )
        assert settings == {"tstep_encoder.kind": "cnn", "tstep_encoder.cnn_type": "drq"}
        assert len(notes) == 1
        assert notes[0].endswith(
            ":2: NatureishCNN.channels: no effect in AMAGO either: " + f"{tmp_path / 'cnn.gin'}:1 picks "
            '`tstep_encoder.cnn_type = "drq"`, so NatureishCNN is not used'
        )
        assert (config.tstep_encoder.cnn_type, config.tstep_encoder.cnn_channels) == ("drq", None)
    # VanillaAttention, AMAGO's plain attention (no gin configurable either; bench scripts register it for CPUs)
    for reference in ("@VanillaAttention", "@amago.nets.transformer.VanillaAttention"):
        settings, notes, config = translate(f"TformerTrajEncoder.attention_type = {reference}\n")
        assert (settings, notes) == (
            {"traj_encoder.kind": "transformer", "traj_encoder.attention": "sdpa"},
            [],
        )
        assert config.traj_encoder.attention == "sdpa"
    # a class of one's own is still no AMAGO class
    _, notes, _ = translate("CNNTstepEncoder.cnn_type = @MyCNN\n")
    assert "@MyCNN is not one of AMAGO 3.3.0's configurables" in notes[0]


def test_each_kind_of_binding_that_sets_nothing_says_why():
    text = (
        "Agent.obs_space = None\nBeta.alpha_low = 2.0\nBeta.alpha_low_typo = 1\nMyEncoder.width = 3\n"
        "Agent.gamma = %UNDEFINED\nInputNorm.beta = 1e-4\nLearnablePosEmb.max_time_idx = %gin.REQUIRED\n"
        "Experiment.dataset = @DiskTrajDataset()\nDiskTrajDataset.relabeler = @MyRelabeler()\n"
    )
    migration = migrate(parse_gin(text, "f.gin"))
    messages = {n.binding: n.message for n in migration.notes}
    assert messages["Agent.obs_space"].startswith("set by the run, not a setting: ")
    assert messages["Beta.alpha_low"].startswith("no counterpart in amago: ")
    assert messages["Beta.alpha_low_typo"] == "AMAGO 3.3.0's Beta has no parameter 'alpha_low_typo'"
    assert messages["MyEncoder.width"].startswith("not a gin configurable of AMAGO 3.3.0")
    assert messages["Agent.gamma"] == "not translated: uses %UNDEFINED, which the file never defines"
    assert "gin.REQUIRED" in messages["LearnablePosEmb.max_time_idx"]
    assert messages["Experiment.dataset"].startswith("set by the run")
    assert "amago takes a plain value here, not @MyRelabeler()" in messages["DiskTrajDataset.relabeler"]
    assert migration.as_amago_does == ("f.gin:6",)  # InputNorm.beta at the value amago always uses
    assert migration.settings == {}
    assert migration.translated == 0


def test_value_conversions():
    def window(text: str) -> Any:
        return migrate(parse_gin(text, "f.gin")).settings.get("traj_encoder.window_size", "unset")

    assert window("FlashAttention.window_size = (12, 0)") == 13
    assert window("FlashAttention.window_size = (-1, -1)") is None
    assert window("SlidingWindowFlexAttention.window_size = 127") == 128
    assert window("ClippedSlidingSinkAttention.window_size = 0") == 1
    sink = migrate(
        parse_gin("ClippedSlidingSinkAttention.logit_clip = 0.0\nClippedSlidingSinkAttention.sink_size = 4\n")
    )
    assert sink.settings["traj_encoder.attention"] == "sliding_sink"
    assert sink.settings["traj_encoder.logit_clip"] is None
    assert sink.settings["traj_encoder.sink_size"] == 4
    saved = migrate(
        parse_gin("Experiment.traj_save_len = 1e10\nResidualActor.normalization = None\n")
    ).settings
    assert saved["replay.traj_save_len"] == 10**10
    assert isinstance(saved["replay.traj_save_len"], int)
    assert saved["agent.actor.type"] == "residual"
    assert saved["agent.actor.norm"] == "none"
    bad = migrate(parse_gin("FlashAttention.window_size = 12", "f.gin"))
    assert bad.notes[0].message.startswith("not translated: expected flash_attn's (left, right) pair")


@pytest.mark.parametrize(
    "value",
    [
        "layer",
        "none",
        "None",
        "true",
        "NULL",
        "~",
        "12",
        "1e-3",
        "[1]",
        '"q"',
        " pad",
        "a b",
        "",
        3,
        0.5,
        None,
    ],
)
def test_override_values_read_back_as_the_same_value(value):
    assert parse_value(override_text(value)) == value


def test_toml_leaves_out_what_it_cannot_hold():
    text, left_out = gin_migration.to_toml(
        {"a.b": 1, "a.c": None, "d.e.f": [1.5, float("inf")], "g.h": 'x"y'}
    )
    assert tomllib.loads(text) == {"a": {"b": 1}, "d": {"e": {"f": [1.5, float("inf")]}}, "g": {"h": 'x"y'}}
    assert left_out == ["a.c = null: TOML has no null; add `-o a.c=null` to the command"]


def test_syntax_errors_name_the_line():
    with pytest.raises(GinSyntaxError, match=r"^f\.gin:2: cannot read the value"):
        parse_gin("Agent.gamma = 0.9\nAgent.tau = 1 + 2\n", "f.gin")
    with pytest.raises(GinSyntaxError, match=r"^f\.gin:1: @ must be followed by a name"):
        parse_gin("Agent.actor_type = @ Actor\n", "f.gin")
