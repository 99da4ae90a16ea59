"""The relabeler group: listed like every group, and chosen by ``replay.relabeler`` from every config source."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from amago.from_amago.flat import flat_names, flat_to_tree
from amago_core.cli.app import app
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.sources import load_config
from amago_core.data.dataset import Relabeler
from amago_core.plugins import GROUPS, RELABELERS, find_group, registries

from .conftest import plugin_modules

runner = CliRunner()


def relabeler_of(config: ExperimentConfig) -> dict[str, object] | None:
    value = config.replay.relabeler
    return None if value is None else config.model_dump(mode="json")["replay"]["relabeler"]


def test_the_group_answers_to_every_spelling_and_has_a_registry():
    assert RELABELERS in GROUPS
    for word in ("relabelers", "relabeler", "amago.relabelers", "Relabelers"):
        assert find_group(word) is RELABELERS
    assert registries().relabelers is registries()[RELABELERS]
    assert (RELABELERS.key, RELABELERS.entry_point_group) == ("relabeler", "amago.relabelers")


def test_amago_list_and_show_describe_the_hindsight_relabeler():
    listed = runner.invoke(app, ["list", "relabelers", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["hindsight"]["status"] == "ok"
    assert rows["hindsight"]["group"] == "relabelers"
    assert rows["hindsight"]["distribution"][0].startswith("amago-envs ")
    shown = runner.invoke(app, ["show", "relabelers", "hindsight"])
    assert shown.exit_code == 0, shown.output
    assert "inferred from the run: seed, env" in shown.stdout
    assert "strategy" in shown.stdout


def test_unset_means_no_relabeling():
    assert ExperimentConfig().replay.relabeler is None
    assert load_config(environ={}).replay.relabeler is None


def test_a_name_or_a_table_validates_into_the_relabelers_own_config():
    by_name = ExperimentConfig.model_validate({"replay": {"relabeler": "hindsight"}})
    assert relabeler_of(by_name) == {"kind": "hindsight", "strategy": "some", "drop_achieved": False}
    by_table = ExperimentConfig.model_validate(
        {"replay": {"relabeler": {"kind": "hindsight", "strategy": "all"}}}
    )
    assert relabeler_of(by_table) == {"kind": "hindsight", "strategy": "all", "drop_achieved": False}


@pytest.mark.parametrize(
    ("table", "location", "words"),
    [
        (
            {"kind": "hindsight", "strategy": "most"},
            ("replay", "relabeler", "strategy"),
            "'all', 'some' or 'none'",
        ),
        (
            {"kind": "hindsight", "stratgy": "all"},
            ("replay", "relabeler", "stratgy"),
            "did you mean 'strategy'",
        ),
        ({"strategy": "all"}, ("replay", "relabeler"), "a relabeler table needs kind = '<name>'"),
    ],
)
def test_a_bad_table_is_located_at_its_field(table, location, words):
    with pytest.raises(ValidationError) as caught:
        ExperimentConfig.model_validate({"replay": {"relabeler": table}})
    (error,) = caught.value.errors()
    assert error["loc"] == location
    assert words in error["msg"]


def test_an_unknown_name_is_one_line_with_did_you_mean():
    result = runner.invoke(
        app, ["run", "--env", "mazerunner", "-o", "replay.relabeler=hindsigt", "--dry-run"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "amago: error: config: replay.relabeler: unknown relabeler 'hindsigt'. Did you mean 'hindsight'? "
    )
    assert result.stderr.endswith(" See `amago list relabelers`.\n")
    assert len(result.stderr.splitlines()) == 1


def test_a_relabeler_object_is_refused_with_the_way_to_pass_it():
    with pytest.raises(
        ValidationError, match=r"pass it through the dataset: .*DiskTrajDataset\(\.\.\., relabeler=it\)"
    ):
        ExperimentConfig.model_validate({"replay": {"relabeler": Relabeler()}})


def test_every_source_chooses_it(tmp_path):
    assert relabeler_of(load_config(overrides=["replay.relabeler=hindsight"], environ={})) == {
        "kind": "hindsight",
        "strategy": "some",
        "drop_achieved": False,
    }
    options = load_config(
        overrides=["replay.relabeler.kind=hindsight", "replay.relabeler.strategy=all"], environ={}
    )
    assert relabeler_of(options) == {"kind": "hindsight", "strategy": "all", "drop_achieved": False}
    named_then_refined = load_config(
        overrides=["replay.relabeler=hindsight", "replay.relabeler.strategy=all"], environ={}
    )
    assert relabeler_of(named_then_refined) == relabeler_of(options)
    table = tmp_path / "relabel.toml"
    table.write_text('[replay.relabeler]\nkind = "hindsight"\ndrop_achieved = true\n', encoding="utf-8")
    # `none` on the command line reads as null, which the strategy takes as its "none".
    from_file = load_config(files=[table], overrides=["replay.relabeler.strategy=none"], environ={})
    assert relabeler_of(from_file) == {"kind": "hindsight", "strategy": "none", "drop_achieved": True}
    from_environment = load_config(environ={"AMAGO_REPLAY__RELABELER": "hindsight"})
    assert relabeler_of(from_environment) == {"kind": "hindsight", "strategy": "some", "drop_achieved": False}


def test_the_flat_keyword_is_the_replay_field():
    assert flat_names()["relabeler"] == ("replay", "relabeler")
    assert flat_to_tree({"relabeler": "hindsight"}) == {"replay": {"relabeler": "hindsight"}}


def test_the_config_round_trips_through_json_and_the_schema_lists_relabelers():
    config = load_config(overrides=['replay.relabeler={"kind": "hindsight", "strategy": "all"}'], environ={})
    dumped = json.loads(json.dumps(config.model_dump(mode="json")))
    again = ExperimentConfig.model_validate(dumped)
    assert again.resolved() == config.resolved()
    assert relabeler_of(again) == {"kind": "hindsight", "strategy": "all", "drop_achieved": False}
    schema = ExperimentConfig.model_json_schema()["$defs"]["ReplaySection"]["properties"]["relabeler"]
    names = [s for choice in schema["anyOf"] for s in choice.get("anyOf", []) if s.get("type") == "string"]
    assert "hindsight" in names[0]["enum"]


def test_a_third_party_relabeler_is_listed_and_selectable(fake_distribution):
    fake_distribution(
        "amago-plugin-fakerelab",
        entry_points={"amago.relabelers": {"fakerelab": "fakerelab_pkg.specs:SPEC"}},
        modules=plugin_modules("fakerelab_pkg", "fakerelab", group="amago.relabelers"),
    )
    listed = runner.invoke(app, ["list", "relabelers", "--json"])
    assert {row["name"] for row in json.loads(listed.stdout)} >= {"hindsight", "fakerelab"}
    config = load_config(
        overrides=["replay.relabeler.kind=fakerelab", "replay.relabeler.width=3"], environ={}
    )
    assert relabeler_of(config) == {"kind": "fakerelab", "width": 3}
