"""`optim.mixed_precision=auto`: fp32 without native bf16; with it, each phase in the precision measured faster.

The CPU's flags are read from /proc/cpuinfo and the phases are timed at start; the tests replace the reader and
the timings, so they hold on any machine (the suite pins `auto` through AMAGO_AUTO_PRECISION, which these tests
unset). What a run records is what was asked for (`auto`); the provenance holds what it resolved to, and a resume
resolves `auto` again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amago import Experiment
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.resume import refused_changes
from amago_core.config.sources import load_config
from amago_core.experiment import hardware, precision_probe, setup
from amago_core.experiment.hardware import (
    AUTO_VARIABLE,
    RECORDED_CPU_FLAGS,
    PhaseTimes,
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
def _auto_not_pinned(monkeypatch):
    """These tests are about what `auto` resolves to: the suite's pin (the root conftest) is off here."""
    monkeypatch.delenv(AUTO_VARIABLE, raising=False)


@pytest.fixture(autouse=True)
def _fresh_accelerate_state():
    """accelerate keeps one process-wide state, whose precision cannot change once set: each test starts and
    leaves it unset (as a new process would be)."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


BF16_UPDATE_FASTER = PhaseTimes(update_fp32=0.200, update_bf16=0.100, step_fp32=0.003, step_bf16=0.004)
"""What a CPU with native bf16 measured for a small ff model (issue 39): the update 2x faster in bf16, a policy
step for 16 envs slower (the casts cost more than the matmuls save)."""


def _cpu(
    monkeypatch: pytest.MonkeyPatch,
    cpuinfo: str,
    slowdown: float = 30.0,
    times: PhaseTimes = BF16_UPDATE_FASTER,
) -> list[int]:
    """This process trains on a CPU with ``cpuinfo``'s flags, where emulated matmuls measure ``slowdown`` and the
    start's phase timings measure ``times``; returns a list that counts the timings taken."""
    monkeypatch.setattr(hardware, "cpu_flags", lambda: parse_cpu_flags(cpuinfo))
    monkeypatch.setattr(hardware, "cpu_slowdown", lambda precision: 1.0 if precision == "no" else slowdown)
    monkeypatch.setattr(setup, "training_device_type", lambda: "cpu")
    timed: list[int] = []

    def measure(agent, **_: Any) -> PhaseTimes:
        timed.append(1)
        return times

    monkeypatch.setattr(precision_probe, "measure_phases", measure)
    return timed


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
        "rollout": "no",
        "device": "cpu",
        "native": True,
        "reason": "auto: no native bf16 on cpu",
    }


def test_auto_on_a_cpu_with_native_bf16_waits_for_the_phase_timings(monkeypatch):
    _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    choice = choose_precision("auto", "cpu")
    assert choice.pending
    assert (choice.native, choice.slowdown, choice.warning()) == (True, None, None)
    decided = choice.decided(BF16_UPDATE_FASTER)
    assert (decided.used, decided.rollout, decided.pending) == ("bf16", "no", False)
    assert decided.reason == "auto: native bf16 on cpu, timed"
    assert decided.record()["update_ms"] == {"no": 200.0, "bf16": 100.0}
    assert decided.record()["policy_step_ms"] == {"no": 3.0, "bf16": 4.0}
    assert decided.describe() == (
        "update bf16, rollouts fp32 (auto: native bf16 on cpu, timed: update 100.0 ms bf16 vs 200.0 ms fp32, "
        "policy step 4.00 ms bf16 vs 3.00 ms fp32)"
    )


@pytest.mark.parametrize(
    ("update", "step", "expected"),
    [
        ((0.1, 0.2), (0.003, 0.002), ("no", "bf16")),
        ((0.2, 0.2), (0.003, 0.003), ("no", "no")),
        ((0.2, 0.195), (0.003, 0.0029), ("no", "no")),  # within the noise of three timings: fp32
        ((0.2, 0.18), (0.003, 0.0028), ("bf16", "bf16")),
    ],
)
def test_each_phase_takes_bf16_only_where_it_measured_faster(monkeypatch, update, step, expected):
    _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    times = PhaseTimes(update_fp32=update[0], update_bf16=update[1], step_fp32=step[0], step_bf16=step[1])
    decided = choose_precision("auto", "cpu").decided(times)
    assert (decided.used, decided.rollout) == expected


def test_the_auto_pin_resolves_without_flags_or_timings(monkeypatch):
    _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    monkeypatch.setenv(AUTO_VARIABLE, "no")
    choice = choose_precision("auto", "cpu")
    assert (choice.used, choice.rollout, choice.pending) == ("no", "no", False)
    assert choice.reason == f"auto: pinned by {AUTO_VARIABLE}"
    monkeypatch.setenv(AUTO_VARIABLE, "fp8")
    with pytest.raises(
        ValueError, match=f"{AUTO_VARIABLE}='fp8' is not a precision; set it to no, fp16 or bf16"
    ):
        choose_precision("auto", "cpu")
    monkeypatch.setenv(AUTO_VARIABLE, "bf16")
    assert choose_precision("no", "cpu").used == "no"  # the pin is auto's answer, not an override


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
    bf16 = choose_precision("bf16", "cpu")
    assert (bf16.used, bf16.rollout, bf16.pending, bf16.warning()) == ("bf16", "no", False, None)
    assert choose_precision("bf16", "cuda").rollout == "bf16"  # a GPU acts in it too
    with pytest.raises(ValueError, match="set it to auto, no, fp16 or bf16"):
        choose_precision("fp8", "cpu")


def test_auto_on_resume_keeps_the_recorded_precision_on_a_machine_without_it(monkeypatch):
    _cpu(monkeypatch, AVX2_ONLY, slowdown=30.0)
    choice = choose_precision("auto", "cpu", saved="bf16")
    assert (choice.used, choice.reason) == ("bf16", "auto: kept from the resumed run's record")
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


def _autocast_dtype(context: Any) -> Any:
    import torch

    with context:
        return torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None


def test_a_run_on_a_cpu_without_bf16_trains_in_fp32_and_records_auto(tiny_job, monkeypatch, capsys):
    timed = _cpu(monkeypatch, AVX2_ONLY)
    experiment = _experiment(tiny_job)
    experiment.start()
    try:
        assert experiment.accelerator is not None
        assert experiment.accelerator.mixed_precision == "no"
        assert _autocast_dtype(experiment.training_caster()) is None
        record = _record(experiment)
    finally:
        experiment.close()
    assert timed == []  # nothing to time without native bf16
    assert "amago: warning" not in capsys.readouterr().err
    # The record keeps what was asked for: rerun or resumed elsewhere, `auto` resolves there.
    assert record["optim"]["mixed_precision"] == "auto"
    provenance = record["_provenance"]
    assert provenance["precision"]["requested"] == "auto"
    assert (provenance["precision"]["used"], provenance["precision"]["rollout"]) == ("no", "no")
    assert provenance["cpu_flags"] == {
        flag: flag in parse_cpu_flags(AVX2_ONLY) for flag in RECORDED_CPU_FLAGS
    }
    assert load_config([experiment.paths.config], environ={}).optim.mixed_precision == "auto"


def test_a_run_on_a_cpu_with_native_bf16_times_the_phases_and_prints_the_decision(
    tiny_job, monkeypatch, capsys
):
    import torch

    timed = _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    experiment = _experiment(tiny_job, verbose=True)
    experiment.start()
    try:
        assert experiment.accelerator is not None
        assert (
            experiment.accelerator.mixed_precision == "no"
        )  # the experiment's casters decide, not accelerate
        assert experiment.config.optim.mixed_precision == "auto"
        assert _autocast_dtype(experiment.training_caster()) == torch.bfloat16
        assert _autocast_dtype(experiment.caster()) is None  # the policy step measured faster in fp32
        record = _record(experiment)
    finally:
        experiment.close()
    assert timed == [1]
    assert record["optim"]["mixed_precision"] == "auto"
    entry = record["_provenance"]["precision"]
    assert (entry["used"], entry["rollout"], entry["reason"]) == (
        "bf16",
        "no",
        "auto: native bf16 on cpu, timed",
    )
    assert entry["update_ms"] == {"no": 200.0, "bf16": 100.0}
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "precision" in line]
    assert line.endswith(
        "precision update bf16, rollouts fp32 (auto: native bf16 on cpu, timed: update 100.0 ms bf16 vs 200.0 ms "
        "fp32, policy step 4.00 ms bf16 vs 3.00 ms fp32)"
    )


def test_a_policy_step_measured_faster_in_bf16_acts_in_bf16(tiny_job, monkeypatch):
    import torch

    _cpu(
        monkeypatch,
        SAPPHIRE_RAPIDS,
        times=PhaseTimes(update_fp32=0.1, update_bf16=0.2, step_fp32=0.004, step_bf16=0.002),
    )
    experiment = _experiment(tiny_job)
    experiment.start()
    try:
        assert _autocast_dtype(experiment.training_caster()) is None
        assert _autocast_dtype(experiment.caster()) == torch.bfloat16
        experiment.evaluate_val()
    finally:
        experiment.close()


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


def test_auto_resolves_again_on_resume_and_says_so(tiny_job, monkeypatch, capsys):
    # Machine A has native bf16: auto trains the update in bf16 and records `auto`, with what it resolved to.
    _cpu(monkeypatch, SAPPHIRE_RAPIDS)
    first = _experiment(tiny_job, epochs=1)
    first.start()
    try:
        first.learn()
    finally:
        first.close()
    assert _record(first)["optim"]["mixed_precision"] == "auto"
    assert _record(first)["_provenance"]["precision"]["used"] == "bf16"
    capsys.readouterr()
    # Machine B has none: auto resolves to fp32 there, in one line, and emulates nothing.
    _cpu(monkeypatch, AVX2_ONLY, slowdown=20.0)
    again = _experiment(tiny_job, epochs=2)
    again.start(resume=True)
    try:
        again.learn()
        assert again.precision is not None
        assert (again.precision.used, again.precision.reason) == ("no", "auto: no native bf16 on cpu")
    finally:
        again.close()
    err = capsys.readouterr().err
    assert "amago: warning" not in err
    (note,) = [line for line in err.splitlines() if line.startswith("amago: note: optim.mixed_precision")]
    assert note == (
        "amago: note: optim.mixed_precision=auto resolved again on this machine: update fp32, rollouts fp32 (the "
        "run trained with update bf16, rollouts fp32 before; auto: no native bf16 on cpu)."
    )
    assert _record(again)["_provenance"]["precision"]["used"] == "no"


def test_auto_keeps_the_precision_an_older_record_holds(tiny_job, monkeypatch, capsys):
    """Records written before they kept `auto` hold the resolved value: such a state continues in it."""
    _cpu(monkeypatch, AVX2_ONLY, slowdown=20.0)
    first = _experiment(tiny_job, epochs=1, mixed_precision="bf16")
    first.start()
    try:
        first.learn()
    finally:
        first.close()
    capsys.readouterr()
    again = _experiment(tiny_job, epochs=1)
    again.start(resume=True)
    try:
        assert again.precision is not None
        assert (again.precision.used, again.precision.reason) == (
            "bf16",
            "auto: kept from the resumed run's record",
        )
    finally:
        again.close()
    (warning,) = [line for line in capsys.readouterr().err.splitlines() if "amago: warning" in line]
    assert "a resume keeps it" in warning


def test_open_accelerator_resolves_auto_itself_and_leaves_bf16_to_the_casters(monkeypatch):
    _cpu(monkeypatch, AVX2_ONLY)
    assert setup.open_accelerator(ExperimentConfig()).mixed_precision == "no"
    assert setup.accelerate_precision("bf16") == "no"
    assert setup.accelerate_precision("fp16") == "fp16"  # its gradient scaler


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


def test_the_cli_resumes_an_auto_run_on_another_machine(tiny_job, tmp_path, monkeypatch):
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
    record = json.loads((run_dir / "config.resolved.json").read_text())
    assert (record["optim"]["mixed_precision"], record["_provenance"]["precision"]["used"]) == (
        "auto",
        "bf16",
    )

    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)  # a resume is a new process
    _cpu(monkeypatch, AVX2_ONLY, slowdown=20.0)
    resumed = runner.invoke(app, ["run", "--resume", str(run_dir), "-o", "schedule.epochs=2", "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert "amago: warning" not in resumed.stderr
    assert "optim.mixed_precision=auto resolved again on this machine: update fp32" in resumed.stderr
    record = json.loads((run_dir / "config.resolved.json").read_text())
    assert (record["optim"]["mixed_precision"], record["_provenance"]["precision"]["used"]) == ("auto", "no")


# ---- the phase timings ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("action_space", ["discrete", "continuous", "multibinary"])
def test_timing_the_phases_leaves_the_agent_and_the_random_streams_as_they_were(action_space):
    import numpy as np
    import torch
    from gymnasium import spaces

    from amago_core.plugins import registries

    spaces_by_name = {
        "discrete": spaces.Discrete(3),
        "continuous": spaces.Box(-1, 1, (2,)),
        "multibinary": spaces.MultiBinary(2),
    }
    action = spaces_by_name[action_space]
    dim = 3 if action_space == "discrete" else 2
    obs_space = spaces.Dict({"observation": spaces.Box(-np.inf, np.inf, (4,))})
    rl2_space = spaces.Box(-np.inf, np.inf, (1 + dim,))
    torch.manual_seed(0)
    agent = registries().agents.build(
        {"kind": "agent", "online_coeff": 0.0} if action_space == "multibinary" else "agent",
        obs_space=obs_space,
        rl2_space=rl2_space,
        action_space=action,
        max_seq_len=8,
        tstep_encoder=registries().tstep_encoders.builder({"kind": "ff", "d_hidden": 16, "d_output": 8}),
        traj_encoder=registries().traj_encoders.builder({"kind": "rnn", "d_hidden": 8, "d_output": 8}),
    )
    before = {k: v.clone() for k, v in agent.state_dict().items()}
    rng = torch.get_rng_state()
    times = precision_probe.measure_phases(
        agent,
        obs_space=obs_space,
        rl2_space=rl2_space,
        action_space=action,
        batch_size=4,
        seq_len=8,
        acting_rows=3,
        device=torch.device("cpu"),
        policy_threads=1,
    )
    assert min(times.update_fp32, times.update_bf16, times.step_fp32, times.step_bf16) > 0
    after = agent.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # PopArt's statistics included
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(p.grad is None for p in agent.parameters())
    assert agent.training
