"""The plugin keeps amago's env-suite contract and is discoverable once installed."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points

import numpy as np
import pytest

pytest.importorskip(
    "amago_plugin_recall_envs", reason="install the plugin (it is in the root dev group: uv sync) to test it"
)

from amago_plugin_recall_envs.env import CueRecall
from amago_plugin_recall_envs.specs import CUE_RECALL
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.plugins.registry import registries


def test_is_registered_and_listed_with_its_tasks() -> None:
    found = [ep for ep in entry_points(group="amago.env_suites") if ep.name == "cue_recall"]
    assert len(found) == 1
    assert found[0].load() is CUE_RECALL
    info = next(i for i in registries().env_suites.describe() if i.name == "cue_recall")
    assert str(info.status) == "ok"
    assert registries().resolve_env_id("cue-recall-long") == ("cue_recall", "long")
    listed = CliRunner().invoke(app, ["list", "envs", "--json"])
    assert listed.exit_code == 0, listed.output
    assert "cue_recall" in listed.stdout


@pytest.mark.parametrize("delay", [0, 1, 4])
def test_only_the_remembered_cue_is_rewarded(delay: int) -> None:
    env = CueRecall(num_cues=3, delay=delay)
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        cue = int(np.argmax(obs[:3]))
        assert obs[3] == float(delay == 0)
        for _ in range(delay):
            obs, reward, terminated, _, _ = env.step(0)
            assert reward == 0.0
            assert not terminated
            assert obs[:3].sum() == 0.0  # no noise: nothing but the question
        assert obs[3] == 1.0
        _, reward, terminated, truncated, _ = env.step(cue)
        assert (reward, terminated, truncated) == (1.0, True, False)
        env.reset(seed=seed)
        for _ in range(delay):
            env.step(0)
        assert env.step((cue + 1) % 3)[1] == 0.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_noise_shows_distractors_but_never_the_question_early() -> None:
    env = CueRecall(num_cues=4, delay=50, noise=1.0)
    env.reset(seed=0)
    for _ in range(49):
        obs, *_ = env.step(0)
        assert obs[:4].sum() == 1.0
        assert obs[4] == 0.0


def test_suite_builds_amagoenvs_and_the_preset_fits_an_episode() -> None:
    suite = registries().env_suites.build({"kind": "cue_recall", "task": "medium", "num_cues": 5})
    env = suite.make_env("val")
    assert env.env_name == "CueRecall-C5-D25"
    timestep, _ = env.reset(seed=1)
    assert timestep.obs["observation"].shape == (1, 6)
    assert env.action_dim == 5
    with pytest.raises(ValueError, match="cue_recall has no task"):
        registries().env_suites.build({"kind": "cue_recall", "task": "huge"})
    from amago_core.config.presets import preset_for_env

    assert preset_for_env("cue-recall-medium")["run"]["max_seq_len"] == 27


def test_spec_module_imports_neither_gymnasium_nor_numpy() -> None:
    code = (
        "import sys, amago_plugin_recall_envs.specs\n"
        "print([m for m in ('gymnasium', 'numpy', 'torch') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_amago_run_one_tiny_epoch(tmp_path) -> None:
    overrides = [
        f"run.ckpt_base_dir={tmp_path}",
        "rollout.parallel_actors=2",
        "tstep_encoder.n_layers=1",
        "tstep_encoder.d_hidden=16",
        "tstep_encoder.d_output=16",
        "traj_encoder.kind=rnn",
        "schedule.epochs=1",
        "schedule.train_timesteps_per_epoch=7",
        "schedule.train_batches_per_epoch=2",
        "schedule.val_timesteps_per_epoch=7",
        "optim.batch_size=4",
        "logging.plot=false",
        "logging.verbose=false",  # no progress bars: stdout holds the JSON summary alone
    ]
    args = ["run", "--env", "cue-recall-short", "--name", "cr"]
    args += [a for o in overrides for a in ("-o", o)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["run_dir"] == str(tmp_path / "cr")
    assert list((tmp_path / "cr" / "buffer" / "fifo").glob("CueRecall-C4-D5_*"))
