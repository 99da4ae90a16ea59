"""The experiment loop end to end on a tiny T-Maze: files on disk, checkpoints, resume, eval, plot."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from amago import Experiment
from amago_core.cli.app import app
from amago_core.config.sources import load_config
from amago_core.experiment.checkpoints import load_policy_weights

runner = CliRunner()


def _experiment(job, resume=False, **overrides):
    experiment = Experiment(load_config(base=job, environ={}), **overrides)
    experiment.start(resume=resume)
    return experiment


def test_run_writes_amagos_layout_and_metrics(tiny_job, tmp_path):
    experiment = _experiment(tiny_job)
    try:
        experiment.learn()
    finally:
        experiment.close()
    root = tmp_path / "runs" / "tiny"
    resolved = json.loads((root / "config.resolved.json").read_text())
    assert resolved["traj_encoder"]["kind"] == "transformer"
    assert resolved["_provenance"]["components"]["traj_encoder"] == "amago-nets==0.1.0"
    assert "command" in resolved["_provenance"]
    assert (root / "ckpts" / "latest" / "policy.safetensors").is_file()
    for epoch in range(3):
        assert (root / "ckpts" / "policy_weights" / f"policy_epoch_{epoch}.safetensors").is_file()
    # schedule.keep_states = 2: the newest two training states stay.
    states = sorted(p.name for p in (root / "ckpts" / "training_states").iterdir())
    assert states == ["tiny_epoch_1", "tiny_epoch_2"]
    assert all((root / "ckpts" / "training_states" / name / "progress.json").is_file() for name in states)
    assert list((root / "buffer" / "fifo").glob("TMaze-Passive-H3_*.npz"))
    records = [json.loads(line) for line in (root / "metrics.jsonl").read_text().splitlines()]
    for record in records:
        assert {"total_frames", "Epoch", "gradient_steps"} <= set(record)
    val = [r for r in records if "val/Average Total Return (Across All Env Names)" in r]
    assert len(val) == 3
    train = [r for r in records if "train/Critic Loss" in r]
    assert train
    assert train[-1]["gradient_steps"] > 0
    assert any("total_frames-TMaze-Passive-H3" in r for r in records)
    assert max(r["total_frames"] for r in records) == 3 * 8 * 4  # epochs x steps x actors


def test_length_grouped_batches_keep_the_number_of_updates(tiny_job):
    # 3 batches per epoch in pools of 2: the last pool is used by half; the schedule's count is what counts.
    tiny_job["schedule"] = {**tiny_job["schedule"], "train_batches_per_epoch": 3, "ckpt_interval": None}
    tiny_job["optim"] = {**tiny_job["optim"], "length_group_batches": 2}
    tiny_job["logging"] = {**tiny_job["logging"], "log_interval": 1}
    experiment = _experiment(tiny_job, epochs=2)
    weights = []
    original = experiment.train_step

    def recording_step(batch, log_step, loss_weight=1.0):
        weights.append(loss_weight)
        return original(batch, log_step, loss_weight=loss_weight)

    experiment.train_step = recording_step
    try:
        experiment.learn()
    finally:
        experiment.close()
    assert experiment.grad_update_counter == 6
    assert len(weights) == 6
    records = [json.loads(line) for line in experiment.paths.metrics.read_text().splitlines()]
    assert [r["train/Padded Sequence Length"] for r in records if "train/Padded Sequence Length" in r]


def test_length_group_batches_below_one_is_refused(tiny_job):
    with pytest.raises(ValueError, match="length_group_batches"):
        Experiment(load_config(base=tiny_job, environ={}), length_group_batches=0)


def test_latest_weights_round_trip_exactly(tiny_job):
    experiment = _experiment(tiny_job, epochs=1)
    try:
        experiment.learn()
        saved = {k: v.clone() for k, v in experiment.policy.state_dict().items()}
        with torch.no_grad():
            for p in experiment.policy.parameters():
                p.add_(1.0)
        load_policy_weights(experiment.policy, experiment.paths.latest_policy)
        for key, value in experiment.policy.state_dict().items():
            assert torch.equal(value, saved[key]), key
    finally:
        experiment.close()


def test_resume_continues_after_the_newest_checkpoint(tiny_job):
    first = _experiment(tiny_job, epochs=2)
    try:
        first.learn()
        steps_after_two = first.grad_update_counter
        frames_after_two = first.total_frames
    finally:
        first.close()
    # A plain start() in a folder that holds a run is refused (it would mix into it); start(resume=True)
    # continues it, and resume_latest() reloads the same newest checkpoint.
    second = _experiment(tiny_job, resume=True, epochs=3)
    try:
        assert second.resume_latest() == 1
        assert second.epoch == 2
        assert second.grad_update_counter == steps_after_two
        assert second.total_frames == frames_after_two
        second.learn()
        assert second.paths.saved_epochs() == [1, 2]  # the newest keep_states = 2
        assert second.grad_update_counter > steps_after_two
    finally:
        second.close()


def test_cli_dry_run_prints_the_resolved_config(tmp_path):
    result = runner.invoke(
        app, ["run", "--env", "tmaze-active", "--traj-encoder", "gru", "--dry-run", "--seed", "5"]
    )
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)
    assert config["env"]["task"] == "active"
    assert config["traj_encoder"]["kind"] == "rnn"
    assert config["run"]["seed"] == 5
    assert config["agent"]["kind"] == "agent"  # defaults resolved to real configs


def test_cli_run_without_env_uses_the_embedded_main_job():
    result = runner.invoke(app, ["run", "--dry-run"])
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)
    assert config["env"]["kind"] == "tmaze"
    assert config["run"]["max_seq_len"] == config["replay"]["traj_save_len"]


def test_cli_run_unknown_env_exits_2_with_one_line():
    result = runner.invoke(app, ["run", "--env", "tmazee-passive", "--dry-run"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "Did you mean 'tmaze-passive'?" in result.stderr


@pytest.mark.slow
def test_cli_run_eval_and_plot_on_a_tiny_job(tiny_job, tmp_path):
    config_file = tmp_path / "tiny.json"
    config_file.write_text(json.dumps(tiny_job))
    quiet = runner.invoke(
        app, ["run", "-c", str(config_file), "-o", "schedule.epochs=1", "--quiet", "--name", "q"]
    )
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stdout == ""  # --quiet: no summary either
    result = runner.invoke(app, ["run", "-c", str(config_file), "-o", "schedule.epochs=2"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    run_dir = tmp_path / "runs" / "tiny"
    assert summary["run_dir"] == str(run_dir)
    assert summary["final_test"]["Average Total Return (Across All Env Names)"] <= 1.0
    assert {p.split("/")[-1] for p in summary["plots"]} >= {"returns.png"}

    evaluated = runner.invoke(app, ["eval", str(run_dir), "--episodes", "4"])
    assert evaluated.exit_code == 0, evaluated.output
    metrics = json.loads(evaluated.stdout)
    assert "Average Total Return in TMaze-Passive-H3" in metrics

    plotted = runner.invoke(app, ["plot", str(run_dir)])
    assert plotted.exit_code == 0
    assert "returns.png" in plotted.stdout


def test_cli_eval_names_a_folder_that_is_not_a_run(tmp_path):
    result = runner.invoke(app, ["eval", str(tmp_path)])
    assert result.exit_code == 2
    assert "has no config.resolved.json" in result.stderr


@pytest.mark.parametrize("mode", ["collect", "learn"])
def test_async_modes_split_the_work_without_rewriting_the_config(tiny_job, mode):
    tiny_job["run"]["mode"] = mode
    experiment = Experiment(load_config(base=tiny_job, environ={}))
    role = experiment.role
    if mode == "collect":
        assert (role.collects, role.learns, role.only_collects) == (True, False, True)
    else:
        assert (role.collects, role.learns, role.evaluates, role.only_learns) == (False, True, False, True)
    # The config still says what the user asked for; the mode decides what this process does with it.
    assert (
        experiment.config.schedule.train_batches_per_epoch == tiny_job["schedule"]["train_batches_per_epoch"]
    )
    assert experiment.train_timesteps_per_epoch == tiny_job["schedule"]["train_timesteps_per_epoch"]
    experiment.start()
    try:
        assert (experiment.train_envs is not None) == (mode == "collect")
        assert (experiment.val_envs is not None) == (mode == "collect")
        assert experiment.dataset.has_edit_rights == (mode == "learn")
    finally:
        experiment.close()


def test_default_run_names_are_one_folder_even_for_path_like_tasks():
    from amago_core.config.experiment import ExperimentConfig
    from amago_core.experiment.naming import default_run_name

    config = ExperimentConfig.model_validate({"env": {"kind": "tmaze", "task": "passive"}})
    name = default_run_name(
        config.model_copy(update={"env": config.env.model_copy(update={"task": "a/b c"})})
    )
    assert name.startswith("tmaze-a-b-c-transformer-")
    assert "/" not in name


def test_evaluations_see_new_tasks_but_runs_repeat_with_a_seed(tiny_job):
    def first_obs_of_two_evaluations(name):
        experiment = _experiment(tiny_job, epochs=1, run_name=name)  # a fresh run never reuses a run's folder
        seen = []
        inner = experiment.val_envs.pool  # the seed the role pool hands its pool on each reset
        original = inner.reset

        def recording_reset(seed=None):
            timestep = original(seed=seed)
            seen.append((seed, timestep.obs["observation"].copy()))
            return timestep

        inner.reset = recording_reset
        try:
            experiment.evaluate_val()
            experiment.evaluate_val()
        finally:
            experiment.close()
        return seen

    first_run, second_run = first_obs_of_two_evaluations("first"), first_obs_of_two_evaluations("second")
    val_seed = first_run[0][0]
    assert [seed for seed, _ in first_run] == [val_seed, None]  # seeded once, then the stream continues
    # Apart from the train pool's seeds (3 + i, env i): val env i would otherwise replay train env i's tasks.
    assert val_seed is not None
    assert abs(val_seed - 3) >= tiny_job["rollout"]["parallel_actors"]
    for (_, a), (_, b) in zip(first_run, second_run, strict=True):
        assert (a == b).all()  # the same seed gives the same evaluations, run after run


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-c", "/nonexistent/run.toml"], "does not exist"),
        (["-o", "optim.learning_rate"], "must look like section.field=value"),
        (["-o", "optim.batch_size=many"], "optim.batch_size"),
    ],
)
def test_cli_run_bad_sources_exit_2_with_one_line(args, expected):
    result = runner.invoke(app, ["run", *args, "--dry-run"])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1
    assert expected in result.stderr


def test_a_loader_override_yielding_something_else_fails_with_one_line(tiny_job):
    experiment = _experiment(tiny_job, epochs=1)
    experiment.init_dloaders = lambda: [[experiment.dataset[0]]]  # RLData windows, not collated batches
    try:
        with pytest.raises(TypeError, match="init_dloaders must yield Batch objects"):
            experiment.learn()
    finally:
        experiment.close()


def test_every_test_pool_starts_from_its_own_seeded_reset(tiny_job):
    # A pool carries its role and whether it was seeded (an id()-keyed record of seeded pools once made a new
    # pool that reused a closed one's id skip its seeded first reset, and evaluate on unseeded tasks).
    experiment = _experiment(tiny_job, epochs=1)
    first_seeds = []
    original_interact = experiment.interact

    def recording_interact(envs, *args, **kwargs):
        assert (envs.role, envs.seeded) == ("test", False)
        first_seeds.append(envs.first_seed)
        return original_interact(envs, *args, **kwargs)

    experiment.interact = recording_interact
    try:
        for _ in range(2):
            experiment.evaluate_test(experiment.make_val_env, 4)
    finally:
        experiment.close()
    assert first_seeds[0] is not None
    assert first_seeds == [first_seeds[0]] * 2
