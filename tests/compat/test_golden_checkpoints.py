"""Golden amago checkpoints: run folders of today's format still load and act exactly as when they were saved.

The fixtures (``fixtures/amago_golden/{ff,rnn,transformer}``) were made once by ``bench/make_golden_checkpoint.py``
and are never regenerated here: a run folder trimmed to what loading reads (``config.resolved.json``,
``spaces.json``, ``task_split.json``, ``ckpts/latest/policy.safetensors`` and the epoch-1 training state) and
``recorded.npz``: three T-Mazes with staggered restarts, what the saved policy was given (observation, reward,
restarts; the agent's inputs) and what it gave (argmax action, actor probabilities, critic values).

Every file a loader reads carries the checkpoint format (``FORMAT``); a newer one is refused in one line, an
older one goes through ``MIGRATIONS``. A future format change adds its step there and keeps these fixtures loading.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from amago_core import file_format
from amago_core.cli.app import app
from amago_core.experiment import checkpoints
from amago_core.file_format import FORMAT, MIGRATIONS
from amago_tools.policy.loader import PolicyLoadError, load_policy, load_run
from tests.compat.recorded_replay import replay

torch.set_num_threads(1)

FIXTURES = Path(__file__).parent / "fixtures" / "amago_golden"
ENCODERS = ("ff", "rnn", "transformer")
TOLERANCE = 1e-5
runner = CliRunner()


def golden(encoder: str, tmp_path: Path) -> Path:
    """A copy of the golden run (loading and resuming write into a run folder; the fixture stays as made)."""
    return Path(shutil.copytree(FIXTURES / encoder, tmp_path / encoder))


def recorded(encoder: str) -> dict[str, np.ndarray]:
    return dict(np.load(FIXTURES / encoder / "recorded.npz"))


def the_state(run_dir: Path) -> Path:
    (state,) = (run_dir / "ckpts" / "training_states").iterdir()
    return state


def assert_acts_as_recorded(agent: torch.nn.Module, figures: dict[str, np.ndarray]) -> None:
    ours = replay(agent, figures)
    np.testing.assert_array_equal(ours["action"], figures["action"])
    for key in ("probs", "value"):
        np.testing.assert_allclose(ours[key], figures[key], rtol=0, atol=TOLERANCE, err_msg=key)


def assert_loop_acts_as_recorded(run_dir: Path, figures: dict[str, np.ndarray]) -> None:
    """``load_policy`` in a plain vector-env loop, fed what the saved policy was fed, takes its actions."""
    policy = load_policy(run_dir)
    policy.reset(figures["env_obs"].shape[1])
    for step in range(figures["env_obs"].shape[0]):
        action = policy.act(figures["env_obs"][step], figures["env_reward"][step], figures["env_done"][step])
        np.testing.assert_array_equal(action, figures["env_action"][step], err_msg=f"step {step}")


def amago(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def error_line(output: str) -> str:
    """The one ``amago: error:`` line of a failed command (warnings may come before it)."""
    (line,) = [line for line in output.splitlines() if line.startswith("amago: error:")]
    return line


def weights_format(path: Path) -> str | None:
    with safe_open(str(path), framework="pt") as file:
        return (file.metadata() or {}).get("format")


def rewrite_weights(path: Path, metadata: dict[str, str]) -> None:
    save_file(load_file(str(path)), str(path), metadata=metadata)


def edit_json(path: Path, edit) -> None:
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))


@pytest.mark.parametrize("encoder", ENCODERS)
def test_load_policy_acts_as_the_saved_policy(encoder, tmp_path):
    run_dir, figures = golden(encoder, tmp_path), recorded(encoder)
    assert figures["reset"].any(axis=0).all()  # every env restarts...
    assert figures["reset"].any(axis=1).sum() >= 6  # ...at staggered steps
    run = load_run(run_dir)
    assert run.kind("traj_encoder") == encoder
    assert_acts_as_recorded(run.agent, figures)
    assert_loop_acts_as_recorded(run_dir, figures)


@pytest.mark.parametrize("encoder", ENCODERS)
def test_amago_eval_runs_the_golden_policy(encoder, tmp_path):
    run_dir = golden(encoder, tmp_path)
    code, output = amago("eval", str(run_dir), "--episodes", "2", "--timesteps", "40")
    assert code == 0, output
    metrics = json.loads(output[output.index("{") :])
    assert metrics["Episodes"] >= 2, metrics
    # Logged at the counters of the training state saved with the evaluated weights.
    saved = json.loads((the_state(run_dir) / "progress.json").read_text())
    record = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert (record["Epoch"], record["gradient_steps"]) == (1, saved["grad_update_counter"])


@pytest.mark.parametrize("encoder", ENCODERS)
def test_resume_trains_one_more_epoch_from_the_golden_state(encoder, tmp_path):
    run_dir, figures = golden(encoder, tmp_path), recorded(encoder)
    saved = json.loads((the_state(run_dir) / "progress.json").read_text())
    state_agent = load_run(run_dir).agent  # with the weights of the training state a resume starts from
    checkpoints.load_policy_weights(state_agent, the_state(run_dir) / "model.safetensors")
    assert_acts_as_recorded(state_agent, figures)
    code, output = amago("run", "--resume", str(run_dir), "-o", "schedule.epochs=3", "--quiet")
    assert code == 0, output
    resumed = json.loads(
        (run_dir / "ckpts" / "training_states" / f"{encoder}_epoch_2" / "progress.json").read_text()
    )
    assert resumed["epoch"] == 2
    assert resumed["format"] == FORMAT
    assert resumed["total_frames"] > saved["total_frames"]
    assert (
        resumed["grad_update_counter"] == saved["grad_update_counter"] + 50
    )  # the schedule it was saved with
    # It trained on: the latest weights are the new epoch's.
    assert not np.allclose(
        replay(load_run(run_dir).agent, figures)["value"], figures["value"], atol=TOLERANCE
    )


def test_the_golden_runs_are_of_todays_format():
    for encoder in ENCODERS:
        run_dir = FIXTURES / encoder
        config = json.loads((run_dir / "config.resolved.json").read_text())
        assert config["_provenance"]["format"] == 1
        assert json.loads((the_state(run_dir) / "progress.json").read_text())["format"] == 1
        assert weights_format(run_dir / "ckpts" / "latest" / "policy.safetensors") == "1"
        assert weights_format(the_state(run_dir) / "model.safetensors") == "1"


def test_every_older_format_has_its_migration_step():
    assert sorted(MIGRATIONS) == list(range(FORMAT))


def test_a_newer_format_is_refused_in_one_line(tmp_path):
    newer = FORMAT + 1
    expected = f"has checkpoint format {newer}, newer than this amago's {FORMAT}: upgrade amago to load it."

    weights = golden("ff", tmp_path / "weights")
    rewrite_weights(weights / "ckpts" / "latest" / "policy.safetensors", {"format": str(newer)})
    with pytest.raises(PolicyLoadError, match=r"policy\.safetensors " + expected.replace(".", r"\.")):
        load_policy(weights)
    code, output = amago("eval", str(weights), "--episodes", "1")
    assert code != 0
    assert f"policy.safetensors {expected}" in error_line(output), output

    config = golden("ff", tmp_path / "config")
    edit_json(config / "config.resolved.json", lambda record: record["_provenance"].update(format=newer))
    with pytest.raises(PolicyLoadError, match=r"config\.resolved\.json " + expected.replace(".", r"\.")):
        load_policy(config)
    for args in (("eval", str(config), "--episodes", "1"), ("run", "--resume", str(config), "--quiet")):
        code, output = amago(*args)
        assert code != 0
        assert f"config.resolved.json {expected}" in error_line(output), output

    state = golden("ff", tmp_path / "state")
    edit_json(the_state(state) / "progress.json", lambda record: record.update(format=newer))
    code, output = amago("run", "--resume", str(state), "-o", "schedule.epochs=3", "--quiet")
    assert code != 0
    assert f"progress.json {expected}" in error_line(output), output
    assert not (state / "ckpts" / "training_states" / "ff_epoch_2").exists()

    spaces = golden("ff", tmp_path / "spaces")
    edit_json(spaces / "spaces.json", lambda record: record.update(format=newer))
    with pytest.raises(PolicyLoadError, match=f"spaces.json has format {newer}, newer .*: upgrade amago"):
        load_policy(spaces)


def test_a_run_from_before_the_format_number_loads_through_the_migrations(tmp_path):
    """Format 0 (no number in any file: every run folder written before it was recorded) goes through
    ``MIGRATIONS[0]`` and acts, evaluates and resumes as the numbered run does."""
    run_dir, figures = golden("rnn", tmp_path), recorded("rnn")
    edit_json(run_dir / "config.resolved.json", lambda record: record["_provenance"].pop("format"))
    edit_json(the_state(run_dir) / "progress.json", lambda record: record.pop("format"))
    for weights in (
        run_dir / "ckpts" / "latest" / "policy.safetensors",
        the_state(run_dir) / "model.safetensors",
    ):
        rewrite_weights(weights, {})
        assert weights_format(weights) is None
    assert_acts_as_recorded(load_run(run_dir).agent, figures)
    assert_loop_acts_as_recorded(run_dir, figures)
    code, output = amago("eval", str(run_dir), "--episodes", "1", "--timesteps", "20")
    assert code == 0, output
    code, output = amago("run", "--resume", str(run_dir), "-o", "schedule.epochs=3", "--quiet")
    assert code == 0, output
    assert (
        json.loads((run_dir / "ckpts" / "training_states" / "rnn_epoch_2" / "progress.json").read_text())[
            "format"
        ]
        == FORMAT
    )


def test_a_future_format_step_is_applied_to_every_file_the_golden_runs_load(tmp_path, monkeypatch):
    """What the next format change does: ``FORMAT`` 2 with ``MIGRATIONS[1]``. The golden runs (format 1) then load
    through that step (here one that changes nothing but is seen: they still act exactly as recorded), and what the
    weights step returns is what the agent gets (a step that drops a tensor fails naming it)."""
    calls: list[str] = []

    def seen(kind):
        def step(data):
            calls.append(kind)
            return data

        return step

    monkeypatch.setattr(file_format, "FORMAT", 2)
    monkeypatch.setitem(MIGRATIONS, 1, {kind: seen(kind) for kind in ("progress", "config", "weights")})
    run_dir, figures = golden("transformer", tmp_path), recorded("transformer")
    assert_acts_as_recorded(load_run(run_dir).agent, figures)
    assert sorted(calls) == ["config", "weights"]
    code, output = amago("run", "--resume", str(run_dir), "-o", "schedule.epochs=3", "--quiet")
    assert code == 0, output
    assert {"progress", "weights"} <= set(calls[2:])
    assert (
        json.loads(
            (run_dir / "ckpts" / "training_states" / "transformer_epoch_2" / "progress.json").read_text()
        )["format"]
        == 2
    )

    dropped = sorted(load_file(str(FIXTURES / "transformer" / "ckpts" / "latest" / "policy.safetensors")))[0]
    monkeypatch.setitem(
        MIGRATIONS, 1, {"weights": lambda tensors: {k: v for k, v in tensors.items() if k != dropped}}
    )
    with pytest.raises(PolicyLoadError, match=f"missing \\['{dropped}'\\]"):
        load_policy(golden("transformer", tmp_path / "dropped"))


def test_a_config_step_is_applied_wherever_a_run_record_is_read(tmp_path, monkeypatch):
    """A future config step (here: one that renames a setting back) reaches every reader of a run's
    ``config.resolved.json``: the policy loader, ``amago eval`` and ``amago run --resume``. Without the step the
    old name is refused, so each of them really went through it."""
    run_dir = golden("ff", tmp_path)
    edit_json(
        run_dir / "config.resolved.json",
        lambda record: record["schedule"].update(epochs_before_rename=record["schedule"].pop("epochs")),
    )
    code, output = amago("eval", str(run_dir), "--episodes", "1", "--timesteps", "20")
    assert code != 0
    assert "epochs_before_rename" in output, output

    def renamed(record):
        schedule = dict(record["schedule"])
        schedule["epochs"] = schedule.pop("epochs_before_rename")
        return {**record, "schedule": schedule}

    monkeypatch.setattr(file_format, "FORMAT", 2)
    monkeypatch.setitem(MIGRATIONS, 1, {"config": renamed})
    assert_acts_as_recorded(load_run(run_dir).agent, recorded("ff"))
    code, output = amago("eval", str(run_dir), "--episodes", "1", "--timesteps", "20")
    assert code == 0, output
    code, output = amago("run", "--resume", str(run_dir), "-o", "schedule.epochs=3", "--quiet")
    assert code == 0, output
    record = json.loads((run_dir / "config.resolved.json").read_text())
    assert record["_provenance"]["format"] == 2
    assert record["schedule"]["epochs"] == 3
    assert "epochs_before_rename" not in record["schedule"]
