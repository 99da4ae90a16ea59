"""``amago import-amago``: AMAGO v3.3.0 checkpoints act in amago exactly as they did in AMAGO.

The fixtures (``fixtures/amago_checkpoints/{ff,rnn,transformer}``) were made by AMAGO itself with
``bench/make_amago_checkpoints.py`` (reference venv): a tiny agent trained two epochs on Meta-Frozen-Lake, the run
folder's ``ckpts/config.txt`` and ``policy.pt``, and ``recorded.npz``: per step on three envs with staggered
resets, the inputs and AMAGO's argmax action, actor probabilities (every gamma) and critic values.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import typer
from typer.testing import CliRunner

from amago_core.hooks.manager import hook_manager
from amago_core.policy.loader import PolicyLoadError, load_policy, load_run

torch.set_num_threads(1)

FIXTURES = Path(__file__).parent / "fixtures" / "amago_checkpoints"
ENCODERS = ("ff", "rnn", "transformer")
TOLERANCE = 1e-5
runner = CliRunner()


def amago_cli() -> typer.Typer:
    """A command line with the installed plugins' commands, as ``amago`` builds it (the entry point is the
    registration under test)."""
    cli = typer.Typer()
    cli.command("noop")(lambda: None)  # a second command keeps typer in multi-command mode, like `amago`
    hook_manager().hook.amago_cli_commands(app=cli)
    return cli


def run_cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(amago_cli(), list(args))
    return result.exit_code, result.output


def import_fixture(encoder: str, out: Path, *extra: str) -> Path:
    code, output = run_cli("import-amago", str(FIXTURES / encoder), str(out), *extra)
    assert code == 0, output
    return out


def replay(agent: torch.nn.Module, figures: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The agent's argmax actions, probabilities and critic values on AMAGO's recorded inputs."""
    n_envs = figures["obs"].shape[1]
    hidden = agent.init_hidden_state(n_envs, "cpu")
    out: dict[str, list[np.ndarray]] = {"action": [], "probs": [], "q": [], "value": []}
    with torch.no_grad():
        for step in range(figures["obs"].shape[0]):
            if figures["reset"][step].any():
                hidden = agent.reset_hidden_state(hidden, figures["reset"][step])
            obs = {"observation": torch.from_numpy(figures["obs"][step]).unsqueeze(1)}
            rl2 = torch.from_numpy(figures["rl2"][step]).unsqueeze(1)
            time = torch.from_numpy(figures["time"][step]).unsqueeze(1)
            states, hidden = agent.get_state_embedding(obs, rl2, time, hidden)
            probs = agent.actor(states).probs  # (N, 1, G, A)
            q = agent.critics(states, probs.unsqueeze(0))  # (1, N, 1, C, G, 1)
            out["action"].append(probs[:, 0, -1].argmax(-1, keepdim=True).numpy())
            out["probs"].append(probs[:, 0].numpy())
            out["q"].append(q[0, :, 0, ..., 0].numpy())
            out["value"].append(agent.popart(q, normalized=False)[0, :, 0, ..., 0].numpy())
    return {k: np.stack(v) for k, v in out.items()}


@pytest.mark.parametrize("encoder", ENCODERS)
def test_imported_policy_matches_amago(encoder, tmp_path):
    out = import_fixture(encoder, tmp_path / encoder, "--env", "frozen-lake", "--max-seq-len", "18")
    figures = dict(np.load(FIXTURES / encoder / "recorded.npz"))
    run = load_run(out)
    assert run.kind("traj_encoder") == encoder
    ours = replay(run.agent, figures)
    np.testing.assert_array_equal(ours["action"], figures["action"])
    for key in ("probs", "q", "value"):
        np.testing.assert_allclose(ours[key], figures[key], rtol=0, atol=TOLERANCE, err_msg=key)
    # The rollout path: get_actions' argmax equals the actor's (a fresh hidden state, first step only).
    first = {"observation": torch.from_numpy(figures["obs"][0]).unsqueeze(1)}
    actions, _ = run.agent.get_actions(
        first,
        torch.from_numpy(figures["rl2"][0]).unsqueeze(1),
        torch.from_numpy(figures["time"][0]).unsqueeze(1),
        run.agent.init_hidden_state(3, "cpu"),
        sample=False,
    )
    np.testing.assert_array_equal(actions[:, 0].numpy(), figures["action"][0])


HEADS = ("box_rnn", "gmm_ff", "multibinary_ff", "multitask_discrete_transformer", "multitask_box_rnn")


@pytest.mark.parametrize("name", HEADS)
def test_other_action_spaces_and_multitask_map_exactly(name, tmp_path):
    """Untrained AMAGO agents (Box with TanhGaussian / GMM, MultiBinary, multitask): the same state embeddings,
    raw actor outputs and critic outputs (two-hot: bin probabilities) on AMAGO's recorded inputs."""
    out = import_fixture(f"heads/{name}", tmp_path / name, "--max-seq-len", "8")
    figures = dict(np.load(FIXTURES / "heads" / name / "recorded.npz"))
    agent = load_run(out).agent
    with torch.no_grad():
        obs = {"observation": torch.from_numpy(figures["obs"])}
        rl2, time = torch.from_numpy(figures["rl2"]), torch.from_numpy(figures["time"])
        states, _ = agent.get_state_embedding(obs, rl2, time, None)
        actor = agent.actor.net(states).reshape(figures["actor"].shape)
        critic = agent.critics(states, torch.from_numpy(figures["actions"]))
        if name.startswith("multitask"):
            critic = critic.softmax(-1)
    np.testing.assert_allclose(states.numpy(), figures["states"], rtol=0, atol=TOLERANCE, err_msg="states")
    np.testing.assert_allclose(actor.numpy(), figures["actor"], rtol=0, atol=TOLERANCE, err_msg="actor")
    np.testing.assert_allclose(critic.numpy(), figures["critic"], rtol=0, atol=TOLERANCE, err_msg="critic")


def test_mapping_function_names_the_key_it_cannot_map(tmp_path):
    from amago.from_amago import AmagoCheckpointError, amago_state_dict_to_amago

    agent = load_run(import_fixture("ff", tmp_path / "ff")).agent
    amago_sd = torch.load(FIXTURES / "ff" / "ckpts" / "latest" / "policy.pt", weights_only=True)
    agent.load_state_dict(amago_state_dict_to_amago(amago_sd, agent), strict=True)
    with pytest.raises(AmagoCheckpointError, match=r"^AMAGO key actor\.base\.extra\.weight .*no counterpart"):
        amago_state_dict_to_amago({**amago_sd, "actor.base.extra.weight": torch.zeros(1)}, agent)
    partial = {k: v for k, v in amago_sd.items() if not k.startswith("traj_encoder.traj_last.")}
    with pytest.raises(AmagoCheckpointError, match=r"nothing for amago's traj_encoder\.out\.weight"):
        amago_state_dict_to_amago(partial, agent)
    wrong = {**amago_sd, "actor.base.out_layer.bias": torch.zeros(3)}
    with pytest.raises(AmagoCheckpointError, match=r"actor\.net\.net\.8\.bias has shape \(3,\)"):
        amago_state_dict_to_amago(wrong, agent)


def test_epochs_training_states_and_inferred_spaces(tmp_path):
    out = import_fixture("ff", tmp_path / "ff")
    spaces = json.loads((out / "spaces.json").read_text())
    assert spaces["agent"]["action_space"]["type"] == "Discrete"
    # Epoch 0 came from policy_weights/policy_epoch_0.pt, epoch 1 from an accelerate state's model.safetensors.
    for epoch in (0, 1):
        assert (out / "ckpts" / "policy_weights" / f"policy_epoch_{epoch}.safetensors").is_file()
        policy = load_policy(out, epoch=epoch)
        policy.reset(1)
        assert policy.act(np.zeros(4, np.float32)) in range(5)
    config = json.loads((out / "config.resolved.json").read_text())
    assert config["tstep_encoder"]["normalize_inputs"] is True
    assert config["traj_encoder"]["kind"] == "ff"


def test_refusals_are_one_line(tmp_path):
    code, output = run_cli("import-amago", str(tmp_path), str(tmp_path / "out"))
    assert code != 0
    assert "not an AMAGO run folder" in output
    custom = tmp_path / "custom"
    (custom / "ckpts" / "latest").mkdir(parents=True)
    text = (FIXTURES / "rnn" / "ckpts" / "config.txt").read_text()
    (custom / "ckpts" / "config.txt").write_text(text + "\nMyTrajEncoder.d_model = 3\n")
    code, output = run_cli("import-amago", str(custom), str(tmp_path / "out"))
    assert code != 0
    assert "MyTrajEncoder, a custom class" in output
    code, output = run_cli(
        "import-amago", str(FIXTURES / "ff"), str(tmp_path / "o2"), "--env", "tmaze-passive"
    )
    assert code != 0
    assert "timestep encoder reads 10" in output


def test_custom_actor_and_existing_output_are_refused(tmp_path):
    custom = tmp_path / "custom"
    (custom / "ckpts").mkdir(parents=True)
    text = (FIXTURES / "ff" / "ckpts" / "config.txt").read_text()
    (custom / "ckpts" / "config.txt").write_text(text + "\nAgent.actor_type = @MyActor\n")
    code, output = run_cli("import-amago", str(custom), str(tmp_path / "out"))
    assert code != 0
    assert "Agent.actor_type = @MyActor, a custom class" in output
    out = import_fixture("rnn", tmp_path / "rnn")
    code, output = run_cli("import-amago", str(FIXTURES / "rnn"), str(out))
    assert code != 0
    assert "--overwrite" in output


def test_load_policy_and_eval_point_amago_runs_to_import():
    from amago_core.cli.app import app

    with pytest.raises(PolicyLoadError, match="amago import-amago RUN_DIR"):
        load_policy(FIXTURES / "ff")
    result = runner.invoke(app, ["eval", str(FIXTURES / "ff")])
    assert result.exit_code == 2
    assert "is an AMAGO run folder; convert it with `amago import-amago RUN_DIR OUT`" in result.stderr


def test_cli_hook_module_is_import_cheap():
    code = "import sys, amago.from_amago.cli_hooks\nprint([m for m in ('torch', 'gymnasium', 'numpy') if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout
