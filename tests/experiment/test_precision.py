"""`optim.mixed_precision=auto`: bf16 where the training device computes it natively, fp32 elsewhere.

The CPU's flags are read from /proc/cpuinfo; the tests that need one kind of CPU or the other replace the reader,
so they hold on any machine. What a run records is the precision it used; `auto` on resume keeps it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.resume import refused_changes
from amago_core.config.sources import load_config
from amago_core.experiment import Experiment, hardware, setup
from amago_core.experiment.hardware import (
    RECORDED_CPU_FLAGS,
    choose_precision,
    cpu_native,
    parse_cpu_flags,
)
from amago_core.experiment.run_dir import RunPaths

AVX2_ONLY = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme de pse tsc msr sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2
bogomips\t: 4899.99

processor\t: 1
flags\t\t: fpu vme avx avx2 avx512_bf16
"""
"""Two processors: the first one's flags count (every core of a machine lists the same)."""

SAPPHIRE_RAPIDS = """processor\t: 0
flags\t\t: fpu avx avx2 avx512f avx512bw avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8
"""

GRAVITON3 = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp bf16 i8mm sve
"""


@pytest.fixture(autouse=True)
def _fresh_accelerate_state():
    """accelerate keeps one process-wide state, whose precision cannot change once set: each test starts and
    leaves it unset (as a new process would be)."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


def _cpu(monkeypatch: pytest.MonkeyPatch, cpuinfo: str, slowdown: float = 30.0) -> None:
    """This process trains on a CPU with ``cpuinfo``'s flags, where emulated matmuls measure ``slowdown``."""
    monkeypatch.setattr(hardware, "cpu_flags", lambda: parse_cpu_flags(cpuinfo))
    monkeypatch.setattr(hardware, "cpu_slowdown", lambda precision: 1.0 if precision == "no" else slowdown)
    monkeypatch.setattr(setup, "training_device_type", lambda: "cpu")


# ---- the hardware module --------------------------------------------------------------------------------------


def test_cpu_flags_are_read_from_the_first_processor():
    flags = parse_cpu_flags(AVX2_ONLY)
    assert {"avx", "avx2", "fma"} <= flags
    assert "avx512_bf16" not in flags
    assert not cpu_native("bf16", flags)
    assert not cpu_native("fp16", flags)
    assert cpu_native("no", flags)


def test_avx512_bf16_amx_and_arm_bf16_are_native():
    intel = parse_cpu_flags(SAPPHIRE_RAPIDS)
    assert cpu_native("bf16", intel)
    assert cpu_native("fp16", intel)
    assert cpu_native("bf16", frozenset({"amx_tile", "amx_bf16"}))
    assert not cpu_native("bf16", frozenset({"avx512f"}))
    arm = parse_cpu_flags(GRAVITON3)
    assert cpu_native("bf16", arm)
    assert cpu_native("fp16", arm)
    assert parse_cpu_flags("") == frozenset()


def test_the_recorded_flags_are_the_ones_that_decide_matmul_speed():
    recorded = hardware.recorded_cpu_flags(parse_cpu_flags(SAPPHIRE_RAPIDS))
    assert set(recorded) == set(RECORDED_CPU_FLAGS) >= {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}
    assert recorded["avx512_bf16"]
    assert recorded["amx_tile"]
    assert not recorded["amx_fp16"]


def test_the_hardware_module_imports_without_torch():
    code = "import sys, amago_core.experiment.hardware as h; h.cpu_flags(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_this_machines_flags_and_a_measured_slowdown():
    flags = hardware.cpu_flags()
    assert flags is hardware.cpu_flags()  # read once per process
    slowdown = hardware.cpu_slowdown("bf16")
    assert slowdown > 0
    assert hardware.cpu_slowdown("bf16") == slowdown  # measured once per process
    assert hardware.cpu_slowdown("no") == 1.0


# ---- resolving the setting ------------------------------------------------------------------------------------


def test_auto_is_the_default_and_records_never_hold_it():
    assert ExperimentConfig().optim.mixed_precision == "auto"


def test_auto_is_fp32_on_a_cpu_without_native_bf16_and_measures_nothing(monkeypatch):
    _cpu(monkeypatch, AVX2_ONLY)
    monkeypatch.setattr(hardware, "cpu_slowdown", lambda precision: pytest.fail("nothing to measure in fp32"))
    choice = choose_precision("auto", "cpu")
    assert (choice.used, choice.native, choice.slowdown) == ("no", True, None)
    assert choice.warning() is None
    assert choice.record() == {
        "requested": "auto",
        "used": "no",
        "device": "cpu",
        "native": True,
        "reason": "auto: no native bf16 on cpu",
    }


def test_auto_is_bf16_on_a_cpu_with_native_bf16(monkeypatch):
    _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    choice = choose_precision("auto", "cpu")
    assert (choice.used, choice.native, choice.slowdown) == ("bf16", True, None)
    assert choice.warning() is None


def test_auto_is_fp32_on_devices_it_does_not_know():
    assert choose_precision("auto", "mps").used == "no"


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_reduced_precision_on_a_cpu_that_emulates_it_is_one_warning_line(monkeypatch, precision):
    _cpu(monkeypatch, AVX2_ONLY, slowdown=31.6)
    choice = choose_precision(precision, "cpu")
    assert (choice.used, choice.native) == (precision, False)
    line = choice.warning()
    assert line is not None
    assert "\n" not in line
    assert f"optim.mixed_precision={precision} on a CPU without native {precision}" in line
    assert "~32x slower than fp32 here" in line
    assert line.endswith("set optim.mixed_precision=auto (or no) to train in fp32.")
    assert choice.record()["measured_slowdown_vs_fp32"] == 31.6


def test_asked_for_precisions_are_used_as_asked(monkeypatch):
    _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    assert choose_precision("no", "cpu").used == "no"
    assert choose_precision("bf16", "cpu").warning() is None
    with pytest.raises(ValueError, match="set it to auto, no, fp16 or bf16"):
        choose_precision("fp8", "cpu")


def test_auto_on_resume_keeps_the_recorded_precision_on_a_machine_without_it(monkeypatch):
    _cpu(monkeypatch, AVX2_ONLY, slowdown=30.0)
    choice = choose_precision("auto", "cpu", saved="bf16")
    assert (choice.used, choice.reason) == ("bf16", "auto: kept from the resumed run")
    line = choice.warning()
    assert line is not None
    assert "\n" not in line
    assert "this run was trained in bf16 and a resume keeps it" in line
    assert "start a new run with optim.mixed_precision=auto" in line
    assert choose_precision("auto", "cpu", saved="no").used == "no"


def test_a_resume_may_ask_for_auto_but_not_for_another_precision():
    saved = {"optim": {"mixed_precision": "bf16"}}
    assert refused_changes(saved, {"optim": {"mixed_precision": "auto"}}) == []
    (refused,) = refused_changes(saved, {"optim": {"mixed_precision": "no"}})
    assert str(refused) == "optim.mixed_precision: bf16 → no"


# ---- a run ----------------------------------------------------------------------------------------------------


def _experiment(job: dict[str, Any], **settings: Any) -> Experiment:
    job = {**job, "run": {**job["run"], "torch_threads": 1}}
    job["logging"] = {**job["logging"], "log_interval": 1, "plot": False}
    return Experiment(load_config(base=job, environ={}), **settings)


def _record(experiment: Experiment) -> dict[str, Any]:
    return json.loads(Path(experiment.paths.config).read_text())


def test_a_run_on_a_cpu_without_bf16_trains_in_fp32_and_records_it(tiny_job, monkeypatch, capsys):
    _cpu(monkeypatch, AVX2_ONLY)
    experiment = _experiment(tiny_job)
    experiment.start()
    try:
        assert experiment.accelerator is not None
        assert experiment.accelerator.mixed_precision == "no"
        record = _record(experiment)
    finally:
        experiment.close()
    assert "amago: warning" not in capsys.readouterr().err
    # The record holds the value used, which code that predates `auto` reads too and which reruns the same.
    assert record["optim"]["mixed_precision"] == "no"
    provenance = record["_provenance"]
    assert provenance["precision"]["requested"] == "auto"
    assert provenance["precision"]["used"] == "no"
    assert provenance["cpu_flags"] == {
        flag: flag in parse_cpu_flags(AVX2_ONLY) for flag in RECORDED_CPU_FLAGS
    }
    assert load_config([experiment.paths.config], environ={}).optim.mixed_precision == "no"


def test_a_run_on_a_cpu_with_native_bf16_gives_the_accelerator_bf16(tiny_job, monkeypatch):
    _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    experiment = _experiment(tiny_job)
    experiment.start()
    try:
        assert experiment.accelerator is not None
        assert experiment.accelerator.mixed_precision == "bf16"
        assert experiment.config.optim.mixed_precision == "bf16"
        with experiment.training_caster():
            import torch

            assert torch.get_autocast_dtype("cpu") == torch.bfloat16
        record = _record(experiment)
    finally:
        experiment.close()
    assert record["optim"]["mixed_precision"] == "bf16"
    assert record["_provenance"]["precision"]["reason"] == "auto: native bf16 on cpu"


def test_bf16_asked_for_on_a_cpu_without_it_warns_once_at_start(tiny_job, monkeypatch, capsys):
    _cpu(monkeypatch, AVX2_ONLY, slowdown=25.0)
    experiment = _experiment(tiny_job, mixed_precision="bf16")
    experiment.start()
    experiment.close()
    warnings = [line for line in capsys.readouterr().err.splitlines() if "amago: warning" in line]
    assert warnings == [
        "amago: warning: optim.mixed_precision=bf16 on a CPU without native bf16 (no avx512_bf16 or AMX): a "
        "bf16 matmul measured ~25x slower than fp32 here; set optim.mixed_precision=auto (or no) to train in fp32."
    ]


def test_auto_resumes_a_run_in_the_precision_it_recorded(tiny_job, monkeypatch, capsys):
    # Machine A has native bf16: auto trains in bf16 and records it.
    _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    first = _experiment(tiny_job, epochs=1)
    first.start()
    try:
        first.learn()
    finally:
        first.close()
    assert _record(first)["optim"]["mixed_precision"] == "bf16"
    capsys.readouterr()
    # Machine B has none: auto keeps bf16 for the resumed state, and says what it costs here.
    _cpu(monkeypatch, AVX2_ONLY, slowdown=20.0)
    again = _experiment(tiny_job, epochs=1)
    again.start(resume=True)
    try:
        assert again.accelerator is not None
        assert again.accelerator.mixed_precision == "bf16"
        assert again.precision is not None
        assert again.precision.reason == "auto: kept from the resumed run"
    finally:
        again.close()
    (warning,) = [line for line in capsys.readouterr().err.splitlines() if "amago: warning" in line]
    assert "a resume keeps it" in warning


def test_open_accelerator_resolves_auto_itself(monkeypatch):
    _cpu(monkeypatch, AVX2_ONLY)
    accelerator = setup.open_accelerator(ExperimentConfig())
    assert accelerator.mixed_precision == "no"


def test_recorded_precision_reads_only_a_resolved_value(tmp_path):
    paths = RunPaths(tmp_path, "run")
    assert setup.recorded_precision(paths) is None  # no record
    paths.root.mkdir(parents=True)
    for value, read in (("bf16", "bf16"), ("no", "no"), ("auto", None)):
        paths.config.write_text(json.dumps({"optim": {"mixed_precision": value}}))
        assert setup.recorded_precision(paths) == read
    paths.config.write_text("not json")
    assert setup.recorded_precision(paths) is None


def test_auto_on_a_cpu_without_bf16_gives_the_same_metrics_as_fp32(tiny_job, tmp_path, monkeypatch):
    """On a CPU without native bf16 `auto` is fp32: the same seeded run, record by record."""
    _cpu(monkeypatch, AVX2_ONLY)
    rows = {}
    for precision in ("no", "auto"):
        job = {**tiny_job, "run": {**tiny_job["run"], "ckpt_base_dir": str(tmp_path / precision)}}
        experiment = _experiment(job, epochs=2, mixed_precision=precision)
        experiment.start()
        try:
            experiment.learn()
        finally:
            experiment.close()
        lines = (tmp_path / precision / "tiny" / "metrics.jsonl").read_text().splitlines()
        rows[precision] = [
            {k: v for k, v in json.loads(line).items() if "time" not in k.lower() and "FPS" not in k}
            for line in lines
        ]
    assert any("train/Loss" in row for row in rows["no"])
    assert rows["auto"] == rows["no"]


def test_the_cli_resumes_in_the_recorded_precision_and_accepts_auto(tiny_job, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from amago_core.cli.app import app

    runner = CliRunner()
    tiny_job["run"] = {**tiny_job["run"], "torch_threads": 1}
    tiny_job["logging"] = {**tiny_job["logging"], "plot": False}
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(tiny_job))
    _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    started = runner.invoke(app, ["run", "-c", str(config), "-o", "schedule.epochs=1", "--quiet"])
    assert started.exit_code == 0, started.output
    run_dir = Path(tiny_job["run"]["ckpt_base_dir"]) / "tiny"
    assert json.loads((run_dir / "config.resolved.json").read_text())["optim"]["mixed_precision"] == "bf16"

    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)  # a resume is a new process
    _cpu(monkeypatch, AVX2_ONLY, slowdown=20.0)
    resumed = runner.invoke(
        app,
        [
            "run",
            "--resume",
            str(run_dir),
            "-o",
            "optim.mixed_precision=auto",
            "-o",
            "schedule.epochs=2",
            "--quiet",
        ],
    )
    assert resumed.exit_code == 0, resumed.output
    (warning,) = [line for line in resumed.stderr.splitlines() if "amago: warning" in line]
    assert "this run was trained in bf16 and a resume keeps it" in warning
    record = json.loads((run_dir / "config.resolved.json").read_text())
    assert record["optim"]["mixed_precision"] == "bf16"
    assert record["_provenance"]["precision"]["requested"] == "auto"
