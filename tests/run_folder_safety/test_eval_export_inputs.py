"""`amago eval`, `amago export` and `amago run --resume` held to `amago run`'s standard (issue 42): the numbers say
what they are (`--episodes N` evaluates N), `-o` works as for `run` where it can, a planted link or a deep file is
one line, and nothing outside the run folder changes."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import gymnasium
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import TINY, amago, snapshot

from amago_core.experiment.checkpoints import read_progress
from amago_core.experiment.safe_state import DamagedStateError, load_state
from amago_core.rollout import AMAGOEnv, EnvCreator
from amago_core.rollout.pools.sync import SyncPool
from amago_envs.suites.tmaze import TMaze
from amago_tools.video import VideoFramesError, VideoRequest, record_first_env

# The tiny run: 4 actors, 8 val steps per env, T-Maze episodes of 4 steps (each env plays two per evaluation).
ACTORS = 4
DEEP = "[" * 5000 + "]" * 5000
"""A JSON file nested past Python's own JSON reader."""


def copy_of(finished_run: Path, tmp_path: Path) -> Path:
    run_dir = tmp_path / "runs" / "victim"
    shutil.copytree(finished_run, run_dir, symlinks=True)
    return run_dir


def evaluated(run_dir: Path, *args: str) -> tuple[dict, str]:
    result = amago("eval", str(run_dir), *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_eval_evaluates_exactly_the_episodes_asked(finished_run, tmp_path):
    run_dir = copy_of(finished_run, tmp_path)
    # More than the run's val steps play (8), and not a multiple of the actors: every env finishes its episodes
    # in the same step, so only each env's share makes the count exact.
    for asked in (10, 5, 3):
        metrics, stderr = evaluated(run_dir, "--episodes", str(asked))
        assert (metrics["Episodes"], metrics["episodes_evaluated"]) == (asked, asked)
        assert stderr == ""
    metrics, stderr = evaluated(run_dir)
    assert metrics["episodes_evaluated"] == 2 * ACTORS  # without --episodes: the run's val steps
    metrics, stderr = evaluated(run_dir, "--episodes", "10", "--timesteps", "4")
    assert metrics["episodes_evaluated"] == ACTORS
    assert stderr == (
        "amago: warning: evaluated 4 of 10 episodes: the 4 steps per env ran out first; raise --timesteps\n"
    )


def test_eval_takes_o_for_what_an_evaluation_can_change(finished_run, tmp_path):
    run_dir = copy_of(finished_run, tmp_path)
    metrics, _ = evaluated(
        run_dir, "-o", "env.corridor_length=5", "-o", "rollout.parallel_actors=2", "--episodes", "3"
    )
    assert "Average Total Return in TMaze-Passive-H5" in metrics
    assert metrics["episodes_evaluated"] == 3
    before = snapshot(run_dir)
    for item, key in (("optim.learning_rate=1", "optim.learning_rate"), ("traj_encoder=rnn", "traj_encoder")):
        refused = amago("eval", str(run_dir), "-o", item)
        assert refused.exit_code == 2
        assert refused.stderr.count("\n") == 1
        assert f"`amago eval` cannot change {key}, which the run's policy was trained with" in refused.stderr
    assert snapshot(run_dir) == before


def test_export_takes_o_for_the_env_it_checks_on(finished_run, tmp_path):
    run_dir = copy_of(finished_run, tmp_path)
    result = amago("export", str(run_dir), "--format", "torchscript", "-o", "env.corridor_length=5")
    assert result.exit_code == 0, result.output
    manifest = json.loads((run_dir / "export" / "policy_step.json").read_text())
    assert manifest["checked_on"].endswith("tmaze env(s) -o env.corridor_length=5")
    assert manifest["run"]["env"]["corridor_length"] == 3  # what the policy was trained on
    for item in ("optim.learning_rate=1", "env.kind=gym"):
        refused = amago("export", str(run_dir), "--format", "torchscript", "-o", item)
        assert refused.exit_code == 2
        assert refused.stderr.count("\n") == 1


def test_export_never_writes_through_a_link_in_the_run_folder(finished_run, tmp_path):
    outside = tmp_path / "someone-elses"
    outside.mkdir()
    (outside / "policy_step.pt").write_text("theirs")
    plants = {
        "a linked export folder": lambda export: export.symlink_to(outside, target_is_directory=True),
        "a linked policy_step.pt": lambda export: (
            export.mkdir(),
            (export / "policy_step.pt").symlink_to(outside / "policy_step.pt"),
        ),
    }
    for what, plant in plants.items():
        run_dir = copy_of(finished_run, tmp_path / what.replace(" ", "-"))
        plant(run_dir / "export")
        result = amago("export", str(run_dir), "--format", "torchscript")
        assert result.exit_code != 0, what
        assert result.output.count("\n") == 1, result.output
        assert "is a symlink" in result.output
        assert [path.name for path in outside.iterdir()] == ["policy_step.pt"]  # not even a temp file there
        assert (outside / "policy_step.pt").read_text() == "theirs"
    # A hard link is replaced, never written through: the other name keeps its content.
    run_dir = copy_of(finished_run, tmp_path / "hard-link")
    (run_dir / "export").mkdir()
    os.link(outside / "policy_step.pt", run_dir / "export" / "policy_step.pt")
    assert amago("export", str(run_dir), "--format", "torchscript").exit_code == 0
    assert (outside / "policy_step.pt").read_text() == "theirs"


class CannotRender(TMaze):
    """A T-Maze that cannot render, as POPGym's envs (gymnasium's default ``render``)."""

    render = gymnasium.Env.render


def test_video_of_an_env_that_cannot_render_says_so_in_one_line(tmp_path):
    request = VideoRequest(tmp_path, "epoch_0")
    (maker,) = record_first_env(
        [lambda: AMAGOEnv(CannotRender(corridor_length=3), env_name="NoPictures")], request
    )
    pool = SyncPool([EnvCreator(maker)])
    with pytest.raises(VideoFramesError, match="env 'NoPictures' cannot render") as caught:
        pool.reset()
    assert "\n" not in str(caught.value)


def test_eval_video_of_a_popgym_run_names_the_env_that_cannot_render(tmp_path):
    pytest.importorskip("popgym")
    config = tmp_path / "popgym.json"
    tiny = {key: value for key, value in TINY.items() if key != "env"}
    config.write_text(json.dumps({**tiny, "run": {**TINY["run"], "ckpt_base_dir": str(tmp_path / "runs")}}))
    env = "popgym-repeat-previous-easy"
    trained = amago(
        "run", "-c", str(config), "--env", env, "--name", "pg", "-o", "schedule.epochs=1", "--quiet"
    )
    assert trained.exit_code == 0, trained.output
    result = amago("eval", str(tmp_path / "runs" / "pg"), "--video", "--video-format", "gif")
    assert result.exit_code != 0
    assert result.stderr.count("\n") == 1
    assert f"env {env!r} cannot render" in result.stderr
    assert "evaluate it without --video" in result.stderr


def test_resume_of_a_folder_that_does_not_exist_says_so(tmp_path):
    (tmp_path / "a-file").write_text("")
    for path, what in ((tmp_path / "nowhere", "does not exist"), (tmp_path / "a-file", "is a file")):
        result = amago("run", "--resume", str(path))
        assert result.exit_code == 2
        assert result.stderr == (
            f"amago: error: cannot resume {path}: it {what}; pass the run folder to continue "
            "({ckpt_base_dir}/{run_name}, the one holding config.resolved.json), or drop --resume to start a new run\n"
        )


def test_state_files_nested_too_deep_are_damaged_naming_the_file(tmp_path):
    for depth in (100, 5000):  # past amago's limit; past Python's own reader
        folder = tmp_path / str(depth)
        folder.mkdir()
        for name in ("progress.json", "optimizer.json"):
            (folder / name).write_text("[" * depth + "]" * depth)
        with pytest.raises(
            DamagedStateError, match="nests lists or tables more than 64 levels deep"
        ) as caught:
            read_progress(folder)
        assert str(folder / "progress.json") in str(caught.value)
        with pytest.raises(DamagedStateError, match=r"optimizer\.json nests lists or tables") as caught:
            load_state(folder, "optimizer")
        assert "\n" not in str(caught.value)


def test_resume_skips_a_state_whose_progress_nests_too_deep_in_one_line(finished_run, tmp_path):
    run_dir = copy_of(finished_run, tmp_path)
    newest = [
        run_dir / "ckpts" / "training_states" / "victim_epoch_1",
        run_dir / "ckpts" / "latest" / "state_epoch_1",
    ]
    for state in newest:
        (state / "progress.json").write_text(DEEP)
    result = amago("run", "--resume", str(run_dir), "-o", "schedule.epochs=3", "--quiet")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("amago: warning: skipping")]
    assert len(warnings) == len(newest)
    for state in newest:  # each named in its own line
        assert any(
            f"{state / 'progress.json'} nests lists or tables more than 64" in line for line in warnings
        )
    assert "amago: resuming after epoch 0" in result.stderr
    assert "Traceback" not in result.output
