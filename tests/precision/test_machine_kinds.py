"""The suite's precision-sensitive parts on every kind of machine, its flags faked: AVX2 only, AVX-512 with
avx512_bf16, AMX, and a CUDA GPU with bf16 (the run itself stays on this CPU; only what the precision choice sees
is faked).

Before issue 39 the suite passed on AVX2 CPUs and failed on the others: `auto` resolved to bf16 there, a Beta policy
crashed at its first bf16 update, a resume-refusal test expected the record to hold `no`, and the record held the
resolved precision, not `auto`. Here each kind runs: the suite's pinned `auto` (fp32 everywhere, recorded as
`auto`); `auto` unpinned with the phase timings faked (fp32 without native bf16, else each phase as timed); an
explicit bf16 Beta run (trains everywhere; warns only where bf16 is emulated); and a resume that refuses another
precision in one line naming the recorded one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.config.sources import load_config
from amago_core.experiment import Experiment, hardware, precision_probe, setup
from amago_core.experiment.hardware import AUTO_VARIABLE, PhaseTimes

MACHINES: dict[str, tuple[frozenset[str], str]] = {
    "avx2": (frozenset({"avx", "avx2", "fma", "f16c"}), "cpu"),
    "avx512_bf16": (frozenset({"avx", "avx2", "avx512f", "avx512bw", "avx512_bf16"}), "cpu"),
    "amx": (frozenset({"avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"}), "cpu"),
    "cuda_bf16": (frozenset({"avx", "avx2"}), "cuda"),
}
"""Each kind: its CPU flags and the device type a run trains on."""

NATIVE_BF16 = {"avx2": False, "avx512_bf16": True, "amx": True, "cuda_bf16": True}

TIMES = PhaseTimes(update_fp32=0.2, update_bf16=0.1, step_fp32=0.003, step_bf16=0.004)
"""Faked start timings: the update faster in bf16, the policy step faster in fp32."""

TINY: dict[str, Any] = {
    "env": {"id": "gym-Pendulum-v1", "max_episode_steps": 6},
    "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16},
    "traj_encoder": {"kind": "rnn", "d_hidden": 16, "d_output": 16, "n_layers": 1},
    "agent": {"kind": "agent", "continuous_dist": {"type": "beta"}},
    "exploration": {"kind": "egreedy", "steps_anneal": 50},
    "run": {"max_seq_len": 4, "seed": 5, "torch_threads": 1, "name": "tiny"},
    "replay": {"traj_save_len": 4},
    "rollout": {"parallel_actors": 2},
    "schedule": {
        "epochs": 2,
        "train_timesteps_per_epoch": 6,
        "train_batches_per_epoch": 2,
        "val_interval": 1,
        "val_timesteps_per_epoch": 6,
        "ckpt_interval": 1,
    },
    "optim": {"batch_size": 4, "lr_warmup_steps": 2},
    "logging": {"verbose": False, "plot": False},
}
"""A Beta policy (the one bf16 crashed) on Pendulum, trained in a second."""


@pytest.fixture(params=sorted(MACHINES))
def machine(request, monkeypatch) -> str:
    """This process runs on the kind of machine named, as far as the precision choice can tell."""
    flags, device = MACHINES[request.param]
    monkeypatch.setattr(hardware, "cpu_flags", lambda: flags)
    monkeypatch.setattr(hardware, "cpu_slowdown", lambda precision: 1.0 if precision == "no" else 20.0)
    monkeypatch.setattr(setup, "training_device_type", lambda: device)
    real_native = hardware.native_bf16
    monkeypatch.setattr(
        hardware,
        "native_bf16",
        lambda device_type: True if device_type == "cuda" else real_native(device_type),
    )
    monkeypatch.setattr(precision_probe, "measure_phases", lambda agent, **_: TIMES)
    return request.param


def _job(tmp_path: Path, **optim: Any) -> dict[str, Any]:
    job = json.loads(json.dumps(TINY))
    job["run"]["ckpt_base_dir"] = str(tmp_path / "runs")
    job["optim"].update(optim)
    return job


def _train(job: dict[str, Any], resume: bool = False) -> Experiment:
    experiment = Experiment(load_config(base=job, environ={}))
    experiment.start(resume=resume)
    try:
        experiment.learn()
    finally:
        experiment.close()
    return experiment


def _record(experiment: Experiment) -> dict[str, Any]:
    return json.loads(Path(experiment.paths.config).read_text())


def _finite_losses(experiment: Experiment) -> list[float]:
    lines = (experiment.paths.root / "metrics.jsonl").read_text().splitlines()
    losses = [json.loads(line).get("train/Loss") for line in lines]
    return [loss for loss in losses if loss is not None]


def test_the_suites_pin_trains_in_fp32_and_records_auto_on_every_machine(machine, tmp_path, monkeypatch):
    monkeypatch.setenv(AUTO_VARIABLE, "no")  # what the root conftest sets for the whole suite
    experiment = _train(_job(tmp_path))
    assert experiment.precision is not None
    assert (experiment.precision.used, experiment.precision.rollout) == ("no", "no")
    record = _record(experiment)
    assert record["optim"]["mixed_precision"] == "auto"
    assert record["_provenance"]["precision"]["reason"] == f"auto: pinned by {AUTO_VARIABLE}"
    assert _finite_losses(experiment)


def test_auto_unpinned_resolves_by_the_machine_and_the_timings(machine, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(AUTO_VARIABLE, raising=False)
    experiment = _train(_job(tmp_path))
    assert experiment.precision is not None
    expected = ("bf16", "no") if NATIVE_BF16[machine] else ("no", "no")
    assert (experiment.precision.used, experiment.precision.rollout) == expected
    entry = _record(experiment)["_provenance"]["precision"]
    assert ("update_ms" in entry) == NATIVE_BF16[machine]  # timed only where bf16 is native
    losses = _finite_losses(experiment)
    assert losses
    assert all(abs(loss) < 1e6 for loss in losses)
    assert "amago: warning" not in capsys.readouterr().err


def test_an_explicit_bf16_beta_run_trains_everywhere_and_warns_only_where_emulated(
    machine, tmp_path, monkeypatch, capsys
):
    monkeypatch.delenv(AUTO_VARIABLE, raising=False)
    experiment = _train(_job(tmp_path, mixed_precision="bf16"))
    assert experiment.precision is not None
    assert experiment.precision.used == "bf16"
    assert _finite_losses(experiment)
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("amago: warning")]
    assert len(warnings) == (0 if NATIVE_BF16[machine] else 1)


def test_a_resume_refuses_another_precision_naming_the_recorded_one(machine, tmp_path, monkeypatch):
    monkeypatch.delenv(AUTO_VARIABLE, raising=False)
    experiment = _train(_job(tmp_path, mixed_precision="no"))
    before = {p: p.read_bytes() for p in experiment.paths.root.rglob("*") if p.is_file()}
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    result = CliRunner().invoke(
        app, ["run", "--resume", str(experiment.paths.root), "-o", "optim.mixed_precision=bf16", "--quiet"]
    )
    assert result.exit_code == 2, result.output
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("amago: error:")]
    assert "optim.mixed_precision: no → bf16" in error
    assert {p: p.read_bytes() for p in experiment.paths.root.rglob("*") if p.is_file()} == before
