"""The plugin's own tests, as its author wrote them against plugin API 1. Frozen: they must keep passing."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.plugins import registries

OURS = {
    "traj-encoders": {"my_lstm", "fast_lstm"},
    "tstep-encoders": {"pixels"},
    "envs": {"bandit", "coin", "dial"},
}


def test_every_component_is_listed_ok() -> None:
    listed = CliRunner().invoke(app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    by_group = json.loads(listed.stdout)
    for group, names in OURS.items():
        statuses = {i["name"]: i["status"] for i in by_group[group] if i["name"] in names}
        assert statuses == dict.fromkeys(names, "ok"), by_group[group]


def test_the_alias_resolves_to_the_lstm() -> None:
    registry = registries().traj_encoders
    assert registry.resolve("lstm2") == "my_lstm"
    assert registry.make_config({"kind": "lstm2", "d_hidden": 8}).d_hidden == 8


def test_the_lstm_keeps_the_trajectory_encoder_contract() -> None:
    pytest.importorskip("torch")
    from amago_core.testing.nets_checks import check_traj_encoder

    check_traj_encoder(registries().traj_encoders.spec("my_lstm"), {"d_hidden": 8})


def test_the_pixels_encoder_is_checked_on_its_example_image() -> None:
    pytest.importorskip("torch")
    from amago_core.testing import check_component

    report = check_component("tstep-encoders", "pixels", config={"d_output": 8})
    assert report.passed[-1].endswith("behaviour checks")


def test_bandit_lists_its_tasks_and_builds_envs() -> None:
    listed = CliRunner().invoke(app, ["list", "envs", "bandit", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)["tasks"]
    assert [(r["env_id"], r["default"]) for r in rows] == [("bandit-easy", True), ("bandit-hard", False)]
    assert registries().resolve_env_id("bandit-hard") == ("bandit", "hard")
    suite = registries().env_suites.build({"kind": "bandit", "task": "hard", "arms": 3})
    env = suite.make_env("train")
    assert env.env_name == "Bandit-hard-3arms"
    timestep, _ = env.reset(seed=0)
    assert timestep.obs["observation"].shape == (1, 1)


def test_presets_come_through() -> None:
    from amago_core.config.presets import preset_for_env

    assert preset_for_env("coin")["run"]["max_seq_len"] == 12
    assert preset_for_env("dial-large")["run"]["max_seq_len"] == 32
    assert preset_for_env("dial")["run"]["max_seq_len"] == 16


def test_the_cuda_kernel_is_reported() -> None:
    from amago_core.plugins.kernels import kernel_report

    (kernel,) = kernel_report(registries().traj_encoders.spec("fast_lstm"))
    assert kernel["module"] == "v1_fused_lstm_kernels"
    assert kernel["installed"] is False


def test_our_own_extra_key_is_still_readable() -> None:
    spec = registries().env_suites.spec("dial")
    assert spec.extra["paper"] == "https://example.org/dial"
    assert spec.extra["tasks"] == ["small", "large"]
