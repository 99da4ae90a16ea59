"""`amago run`'s checks before the first step: the wall-time estimate of a long run, env processes vs the machine."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from amago_core.cli import run_cmd
from amago_core.cli.app import app
from amago_core.config.lengths import longest_sample
from amago_core.config.resolve import resolve_config
from amago_core.config.sizing import apply_sizing, size_schedule
from amago_core.config.sources import merge_sources
from amago_tools import preflight
from amago_tools.preflight import available_memory_mb, env_process_problem
from amago_tools.sizing import calibrate, estimate
from amago_tools.sizing.budget import Costs
from amago_tools.sizing.estimate import ESTIMATE_ABOVE_SECONDS, estimate_line, floor_seconds

runner = CliRunner()


def _resolved(flags: dict, overrides: list[str] | None = None):
    overrides = overrides or []
    return resolve_config([], flags, overrides), merge_sources([], flags, overrides)


def _cpu_costs(probe) -> Costs:
    window = longest_sample(probe)
    return Costs(
        seconds_per_pool_step=0.0005 * probe.rollout.parallel_actors,
        seconds_per_update=0.01 * window,
        startup_seconds=3.0,
        sequence_length=window,
    )


@pytest.fixture
def no_training(monkeypatch) -> list:
    """`amago run` up to its first step: the measurement is faked (a CPU's costs), training is not started."""
    probes: list = []

    def time_probe(probe):
        probes.append(probe)
        return _cpu_costs(probe)

    monkeypatch.setattr(calibrate, "time_probe", time_probe)
    monkeypatch.setattr(run_cmd, "_train", lambda *args, **kwargs: None)
    monkeypatch.setattr(estimate, "_cuda_available", lambda: False)
    monkeypatch.delenv(preflight.SKIP_VARIABLE, raising=False)
    return probes


def test_the_main_job_smoke_runs_and_tiny_configs_are_never_measured():
    preset, _ = _resolved({"env": "tmaze-passive"}, [])
    default = resolve_config([], {}, [], default_job=run_cmd.default_job())
    assert floor_seconds(default) < ESTIMATE_ABOVE_SECONDS / 10  # ~25 s for a ~3 min run
    user = merge_sources([], {"env": "tmaze-passive"}, [])
    smoke = apply_sizing(preset, size_schedule(preset, user, 32, smoke=True))
    assert floor_seconds(smoke) < 1
    assert floor_seconds(preset) > 10 * ESTIMATE_ABOVE_SECONDS  # the GPU-sized preset: 1,000 x 1,000 updates


def test_a_gpu_sized_preset_on_a_cpu_says_how_long_and_what_fits_an_hour(no_training):
    result = runner.invoke(app, ["run", "--env", "tmaze-passive"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stderr.splitlines() if "this run needs" in line]
    assert " h on this CPU (1,000 epochs x 1,000 steps" in line
    assert "--budget 1h or --steps " in line
    assert line.endswith("fits an hour.")
    assert len(no_training) == 1


def test_the_steps_that_fit_an_hour_do_fit_it():
    config, user = _resolved({"env": "tmaze-passive"})
    costs = _cpu_costs(calibrate.probe_config(config, "/tmp/unused"))
    line = estimate_line(config, config, user, costs, cuda=False)
    steps = line.split("--steps ")[1].split(" ")[0]
    result = runner.invoke(app, ["run", "--env", "tmaze-passive", "--steps", steps, "--dry-run"])
    assert result.exit_code == 0, result.output
    from amago_core.config.experiment import ExperimentConfig
    from amago_tools.sizing.budget import estimated_seconds

    sized = ExperimentConfig.model_validate_json(result.stdout[result.stdout.index("{") :])
    assert estimated_seconds(sized, costs) <= 3600


def test_with_a_gpu_the_estimate_is_printed_without_advice():
    config, user = _resolved({"env": "tmaze-passive"})
    costs = _cpu_costs(calibrate.probe_config(config, "/tmp/unused"))
    line = estimate_line(config, config, user, costs, cuda=True)
    assert "this run needs ~" in line
    assert "--budget" not in line


@pytest.mark.parametrize("off", [["--no-preflight"], ["--quiet"], ["--smoke"]])
def test_the_estimate_can_be_turned_off_and_small_runs_skip_it(no_training, off):
    result = runner.invoke(app, ["run", "--env", "tmaze-passive", *off])
    assert result.exit_code == 0, result.output
    assert "this run needs" not in result.stderr
    assert not no_training


def test_the_environment_variable_turns_the_checks_off(no_training, monkeypatch):
    monkeypatch.setenv(preflight.SKIP_VARIABLE, "1")
    result = runner.invoke(app, ["run", "--env", "tmaze-passive"])
    assert result.exit_code == 0, result.output
    assert "this run needs" not in result.stderr
    assert not no_training


def test_a_dry_run_is_not_measured(no_training):
    result = runner.invoke(app, ["run", "--env", "tmaze-passive", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert not no_training
    assert "this run needs ~" not in result.stderr  # the measured estimate's words
    assert "this run needs at least" in result.stderr  # a long preset's floor, from its schedule alone


def _async(actors: int, **extra: object):
    overrides = [f"rollout.parallel_actors={actors}", "rollout.env_mode=async"]
    overrides += [f"{key}={value}" for key, value in extra.items()]
    config, _ = _resolved({"env": "tmaze-passive"}, overrides)
    return config


def test_thirty_six_async_workers_on_two_cores_get_one_warning_with_a_suggestion():
    # Issue 26: 36 forkserver workers on 2 cores and 23 GB were OOM-killed after 12 minutes.
    message, refuse = env_process_problem(_async(36), cores=2, available_mb=23_000)
    assert not refuse
    assert "72 async env workers" in message
    assert "36 stepping at once on 2 cores" in message
    assert "-o rollout.parallel_actors=4" in message
    assert "rollout.env_mode=sync" in message


def test_workers_that_clearly_cannot_fit_in_memory_are_refused():
    message, refuse = env_process_problem(_async(36), cores=16, available_mb=4_000)
    assert refuse
    assert "GB of 3.9 GB available" in message


def test_in_process_envs_and_few_workers_pass():
    config, _ = _resolved({"env": "tmaze-passive"})
    assert env_process_problem(config, cores=2, available_mb=1_000) is None  # sync: no processes
    assert env_process_problem(_async(4), cores=2, available_mb=23_000) is None


def test_local_ray_actors_are_counted():
    config = _async(4, **{"ray.actors": 8})
    message, _ = env_process_problem(config, cores=2, available_mb=23_000)
    assert "8 Ray actors" in message
    assert "-o ray.actors=" in message
    remote = _async(4, **{"ray.actors": 8, "ray.address": "auto"})  # on a cluster we cannot see: not counted
    assert env_process_problem(remote, cores=2, available_mb=23_000) is None


def test_a_real_run_warns_before_it_starts_and_a_dry_run_does_not(no_training, monkeypatch):
    monkeypatch.setattr(preflight, "usable_cores", lambda: 2)
    monkeypatch.setattr(preflight, "available_memory_mb", lambda: 23_000)
    flags = ["--env", "tmaze-passive", "-o", "rollout.parallel_actors=36", "-o", "rollout.env_mode=async"]
    result = runner.invoke(app, ["run", *flags, "--no-preflight"])
    assert "oversubscribe" not in result.stderr
    result = runner.invoke(app, ["run", *flags, "--dry-run"])
    assert "oversubscribe" not in result.stderr
    result = runner.invoke(app, ["run", *flags, "-o", "schedule.epochs=1"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stderr.splitlines() if "oversubscribe" in line]
    assert line.startswith("amago: warning: ")
    monkeypatch.setattr(preflight, "available_memory_mb", lambda: 2_000)
    result = runner.invoke(app, ["run", *flags, "-o", "schedule.epochs=1"])
    assert result.exit_code == 2
    assert "--no-preflight" in result.stderr


def test_available_memory_is_read_from_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683656 kB\nMemAvailable:   23830220 kB\n")
    assert available_memory_mb(meminfo) == 23_271
    assert available_memory_mb(tmp_path / "missing") is None


def test_a_smoke_run_is_checked_once_sized_and_a_smoke_dry_run_is_not(no_training, monkeypatch):
    monkeypatch.setattr(preflight, "usable_cores", lambda: 2)
    monkeypatch.setattr(preflight, "available_memory_mb", lambda: 1)  # no async worker fits
    flags = ["--env", "tmaze-passive", "--smoke", "-o", "rollout.env_mode=async"]
    result = runner.invoke(app, ["run", *flags, "--dry-run"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["run", *flags, "--no-preflight"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["run", *flags])
    assert result.exit_code == 2
    assert "--no-preflight" in result.stderr
