"""The plugin is found as an installed hook module, stays off unless asked, and its event files read back."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest.importorskip("amago_plugin_tensorboard", reason="install the workspace (uv sync) to test the plugin")
pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from amago_core.hooks.manager import hook_manager
from amago_plugin_tensorboard import hooks
from amago_plugin_tensorboard.backend import TensorBoardLogBackend

RETURN = "val/Average Total Return (Across All Env Names)"


def _scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    accumulator = EventAccumulator(str(folder))
    accumulator.Reload()
    return {
        tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
        for tag in accumulator.Tags()["scalars"]
    }


def _record(epoch: int, gradient_steps: int, **metrics: float) -> dict[str, float | int]:
    return {**metrics, "total_frames": 100 * epoch, "Epoch": epoch, "gradient_steps": gradient_steps}


def test_is_registered_as_a_hook_module(fresh_registries) -> None:
    found = [ep for ep in entry_points(group="amago") if ep.name == "tensorboard"]
    assert [ep.value for ep in found] == ["amago_plugin_tensorboard.hooks"]
    names = [status.record.name for status in hook_manager().statuses if status.error is None]
    assert "tensorboard" in names


def test_stays_off_unless_the_switch_is_on(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(hooks.SWITCH, raising=False)
    assert hooks.amago_log_backends(run_dir=tmp_path, config={}) is None
    monkeypatch.setenv(hooks.SWITCH, "0")
    assert hooks.amago_log_backends(run_dir=tmp_path, config={}) is None
    monkeypatch.setenv(hooks.SWITCH, "1")
    backend = hooks.amago_log_backends(run_dir=tmp_path, config={})
    assert isinstance(backend, TensorBoardLogBackend)
    assert backend.log_dir == tmp_path / "tensorboard"
    backend.close()


def test_a_switch_value_that_is_neither_on_nor_off_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match=r"AMAGO_TENSORBOARD='maybe' is neither on nor off; set it to 1"):
        hooks.enabled({hooks.SWITCH: "maybe"})


def test_a_collect_only_process_writes_a_run_of_its_own(tmp_path) -> None:
    assert hooks.log_dir(tmp_path, {"run": {"mode": "collect"}}) == tmp_path / "tensorboard" / "collect"
    assert hooks.log_dir(tmp_path, {"run": {"mode": "both"}}) == tmp_path / "tensorboard"


def test_scalars_read_back_against_their_x_axes(tmp_path) -> None:
    backend = TensorBoardLogBackend(tmp_path, config={"run": {"name": "t"}})
    backend.log(_record(0, 0, **{RETURN: -1.0000000149011612, "val/Episodes": 24.0}), step=1)
    backend.log(_record(0, 10, **{"train/Loss": 4.5}), step=2)
    backend.log(_record(1, 20, **{"train/Loss": 3.5, "train/Note": "text"}), step=3)  # type: ignore[arg-type]
    backend.log(_record(1, 20, **{RETURN: 0.5}), step=4)
    backend.close()

    epochs = _scalars(tmp_path / "epochs")
    assert epochs[RETURN] == [(0, pytest.approx(-1.0)), (1, 0.5)]
    assert epochs["val/Episodes"] == [(0, 24.0)]
    assert epochs["total_frames"] == [(0, 0.0), (1, 100.0)]
    assert "Epoch" not in epochs  # the x-axes are steps, not curves
    assert "train/Loss" not in epochs
    steps = _scalars(tmp_path / "gradient_steps")
    assert steps == {"train/Loss": [(10, 4.5), (20, 3.5)]}  # the string metric is not a scalar

    accumulator = EventAccumulator(str(tmp_path / "epochs"))
    accumulator.Reload()
    assert "config/text_summary" in accumulator.Tags()["tensors"]


def test_a_resumed_run_hides_what_the_killed_run_logged_after_its_checkpoint(tmp_path) -> None:
    killed = TensorBoardLogBackend(tmp_path)
    for epoch in range(4):  # epochs 0..3 logged, but the checkpoint holds epoch 1
        killed.log(_record(epoch, 10 * (epoch + 1), **{RETURN: float(epoch)}), step=2 * epoch)
        killed.log(_record(epoch, 10 * (epoch + 1), **{"train/Loss": float(epoch)}), step=2 * epoch + 1)
    killed.close()

    resumed = TensorBoardLogBackend(tmp_path)
    resumed.rollback(after_epoch=1)
    resumed.log(_record(2, 30, **{RETURN: 20.0}), step=4)
    resumed.log(_record(2, 30, **{"train/Loss": 20.0}), step=5)
    resumed.close()

    assert _scalars(tmp_path / "epochs")[RETURN] == [(0, 0.0), (1, 1.0), (2, 20.0)]
    assert _scalars(tmp_path / "gradient_steps")["train/Loss"] == [(10, 0.0), (20, 1.0), (30, 20.0)]


TINY_JOB = {
    "env": {"id": "tmaze-passive", "corridor_length": 3},
    "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16},
    "traj_encoder": {"kind": "rnn", "d_hidden": 16, "d_output": 16, "n_layers": 1},
    "run": {"max_seq_len": 4, "seed": 1, "name": "tiny"},
    "replay": {"traj_save_len": 4},
    "rollout": {"parallel_actors": 2},
    "schedule": {
        "epochs": 2,
        "train_timesteps_per_epoch": 8,
        "train_batches_per_epoch": 2,
        "val_interval": 1,
        "val_timesteps_per_epoch": 8,
    },
    "optim": {"batch_size": 4},
    "logging": {"verbose": False, "plot": False, "log_interval": 1},
}


def test_a_tiny_run_writes_event_files_whose_scalars_read_back(
    tmp_path, monkeypatch, fresh_registries
) -> None:
    pytest.importorskip("amago_envs")
    pytest.importorskip("amago_nets")
    from typer.testing import CliRunner

    from amago_core.cli.app import app

    monkeypatch.setenv(hooks.SWITCH, "1")
    config_file = tmp_path / "tiny.json"
    config_file.write_text(json.dumps(TINY_JOB))
    result = CliRunner().invoke(
        app, ["run", "-c", str(config_file), "-o", f"run.ckpt_base_dir={tmp_path / 'runs'}", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "runs" / "tiny"
    assert list((run_dir / "tensorboard" / "epochs").glob("events.out.tfevents.*"))

    local = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    val_returns = [(r["Epoch"], r[RETURN]) for r in local if RETURN in r]
    losses = [(r["gradient_steps"], r["train/Loss"]) for r in local if "train/Loss" in r]
    assert len(val_returns) == 2  # both epochs evaluated
    assert losses  # and training was logged
    epochs = _scalars(run_dir / "tensorboard" / "epochs")
    assert epochs[RETURN] == [(epoch, pytest.approx(value)) for epoch, value in val_returns]
    steps = _scalars(run_dir / "tensorboard" / "gradient_steps")
    assert steps["train/Loss"] == [(step, pytest.approx(value, rel=1e-6)) for step, value in losses]
