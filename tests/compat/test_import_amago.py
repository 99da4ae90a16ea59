"""``amago import-amago``: AMAGO v3.3.0 checkpoints act in amago exactly as they did in AMAGO.

The fixtures (``fixtures/amago_checkpoints/{ff,rnn,transformer}``) were made by AMAGO itself with
``bench/make_amago_checkpoints.py`` (reference venv): a tiny agent trained two epochs on Meta-Frozen-Lake, the run
folder's ``ckpts/config.txt`` and ``policy.pt``, and ``recorded.npz``: per step on three envs with staggered
resets, the inputs and AMAGO's argmax action, actor probabilities (every gamma) and critic values. ``cnn_nature`` and
``cnn_impala`` are the same with AMAGO's CNNTstepEncoder on a tiny uint8 image env (the script's ``TinyImageEnv``).
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
from amago_tools.policy.loader import PolicyLoadError, load_policy, load_run
from tests.compat.recorded_replay import replay

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


@pytest.mark.parametrize("encoder", ENCODERS)
def test_imported_policy_matches_amago(encoder, tmp_path):
    out = import_fixture(encoder, tmp_path / encoder, "--env", "frozen-lake", "--max-seq-len", "18")
    figures = dict(np.load(FIXTURES / encoder / "recorded.npz"))
    run = load_run(out)
    assert run.kind("traj_encoder") == encoder
    ours = replay(run.agent, figures)
    np.testing.assert_array_equal(ours["action"][..., None], figures["action"])  # AMAGO recorded (N, 1)
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


# AMAGO's CNNTstepEncoder (GRU trajectory encoder) on the script's 36x36x2 uint8 image env: Nature-ish CNN with
# channels last (and DrQ-v2 augmentation, which only acts in training), IMPALA-ish CNN with channels first.
CNN_RUNS = {"cnn_nature": ("nature", "36,36,2"), "cnn_impala": ("impala", "2,36,36")}


@pytest.mark.parametrize("name", sorted(CNN_RUNS))
def test_imported_cnn_policy_matches_amago(name, tmp_path):
    cnn_type, shape = CNN_RUNS[name]
    out = import_fixture(name, tmp_path / name, "--image-shape", shape, "--max-seq-len", "18")
    figures = dict(np.load(FIXTURES / name / "recorded.npz"))
    assert figures["obs"].dtype == np.uint8
    run = load_run(out)
    assert run.kind("tstep_encoder") == "cnn"
    config = json.loads((out / "config.resolved.json").read_text())["tstep_encoder"]
    assert config["cnn_type"] == cnn_type
    assert (config["img_features"], config["rl2_features"], config["d_output"]) == (16, 4, 16)
    if cnn_type == "impala":
        assert config["channels_first"] is True
        assert config["activation"] == "gelu"
        assert tuple(config["impala_block_depths"]) == (4, 8)
    else:
        assert config["drqv2_aug"] is True
        assert config["aug_pct_of_batch"] == 0.5
    ours = replay(run.agent, figures)
    np.testing.assert_array_equal(ours["action"][..., None], figures["action"])  # AMAGO recorded (N, 1)
    for key in ("probs", "q", "value"):
        np.testing.assert_allclose(ours[key], figures[key], rtol=0, atol=TOLERANCE, err_msg=key)


def test_cnn_runs_need_an_image_shape_and_refuse_what_amago_lacks(tmp_path):
    code, output = run_cli("import-amago", str(FIXTURES / "cnn_nature"), str(tmp_path / "a"))
    assert code != 0
    assert "pass --image-shape H,W,C" in output
    code, output = run_cli(
        "import-amago", str(FIXTURES / "cnn_nature"), str(tmp_path / "b"), "--image-shape", "44,44,2"
    )
    assert code != 0
    assert "gives 256 CNN features, but AMAGO's tstep_encoder.img_features reads 64" in output
    text = (FIXTURES / "cnn_nature" / "ckpts" / "config.txt").read_text()
    for extra, expected in (
        (
            "NatureishCNN.dilation = [1, 1, 1]",
            "sets NatureishCNN.dilation, which amago's nature CNN does not have",
        ),
        (
            "CNNTstepEncoder.cnn_type = @cnn.GridworldCNN\nGridworldCNN.padding = 1",
            "sets GridworldCNN.padding, which amago's gridworld CNN does not have",
        ),
        (
            "NatureishCNN.channels = [16, 32]",
            "NatureishCNN.channels = [16, 32], but AMAGO's NatureishCNN takes",
        ),
        ("CNNTstepEncoder.cnn_type = @MyCNN", "@MyCNN, a custom class"),
        ("CNNTstepEncoder.activation = 'adaptive'", "'adaptive', whose learned coefficients"),
        ("GridworldTstepEncoder.d_output = 8", "has no GridworldTstepEncoder (only its examples"),
    ):
        custom = tmp_path / "custom"
        (custom / "ckpts").mkdir(parents=True, exist_ok=True)
        (custom / "ckpts" / "config.txt").write_text(text + f"\n{extra}\n")
        code, output = run_cli("import-amago", str(custom), str(tmp_path / "out"), "--image-shape", "36,36,2")
        assert code != 0, extra
        assert expected in " ".join(output.split()), output


# AMAGO bindings that pick its other plain-convolution backbones (or other layers of NatureishCNN), and the
# cnn encoder options import-amago gives for them. The nets parity fixture (tests/parity/nets_parity_cases.py)
# checks that these backbones compute AMAGO's function; here the import must build them and place the weights.
CNN_VARIANTS = {
    "nature-layers": (
        "NatureishCNN.channels = [8, 8, 16]\nNatureishCNN.kernels = [5, 3, 3]\nNatureishCNN.strides = [3, 2, 1]",
        {
            "cnn_type": "nature",
            "cnn_channels": [8, 8, 16],
            "cnn_kernels": [5, 3, 3],
            "cnn_strides": [3, 2, 1],
        },
    ),
    "gridworld": (
        "CNNTstepEncoder.cnn_type = @cnn.GridworldCNN",
        {"cnn_type": "gridworld", "cnn_channels": None, "cnn_kernels": None, "cnn_strides": None},
    ),
    "gridworld-layers": (
        "CNNTstepEncoder.cnn_type = @cnn.GridworldCNN\nGridworldCNN.channels = [4, 8, 8]\n"
        "GridworldCNN.kernels = [3, 3, 2]\nGridworldCNN.strides = [2, 2, 1]",
        {
            "cnn_type": "gridworld",
            "cnn_channels": [4, 8, 8],
            "cnn_kernels": [3, 3, 2],
            "cnn_strides": [2, 2, 1],
        },
    ),
    "drq": ("CNNTstepEncoder.cnn_type = @DrQCNN", {"cnn_type": "drq", "cnn_channels": None}),
}


@pytest.mark.parametrize("name", sorted(CNN_VARIANTS))
def test_other_amago_cnn_backbones_import(name, tmp_path):
    """AMAGO's GridworldCNN, DrQCNN and NatureishCNN with other layers import as the matching cnn encoder, and
    AMAGO's backbone weights land in it (a checkpoint made from the cnn_nature one, with new backbone tensors)."""
    from gymnasium import spaces

    from amago_nets.specs import CNNTstepEncoderConfig
    from amago_nets.tstep_cnn import CNNTstepEncoder

    extra, expected = CNN_VARIANTS[name]
    text = (FIXTURES / "cnn_nature" / "ckpts" / "config.txt").read_text() + f"\n{extra}\n"
    options = {k: v for k, v in expected.items() if v is not None}
    # The backbone amago builds for these options tells the shapes of AMAGO's tensors (conv{i} is net.{2(i-1)}).
    obs_space = spaces.Dict({"observation": spaces.Box(0, 255, (36, 36, 2), np.uint8)})
    ours = CNNTstepEncoder(
        CNNTstepEncoderConfig(**options, img_features=16, d_output=16, rl2_features=4),
        obs_space=obs_space,
        rl2_space=spaces.Box(-1.0, 1.0, (5,)),
    ).cnn
    policy = torch.load(FIXTURES / "cnn_nature" / "ckpts" / "latest" / "policy.pt", weights_only=True)
    policy = {k: v for k, v in policy.items() if not k.startswith("tstep_encoder.cnn.")}
    generator = torch.Generator().manual_seed(0)
    backbone = {}
    for key, tensor in ours.state_dict().items():
        index, leaf = key.removeprefix("net.").split(".")
        backbone[f"tstep_encoder.cnn.conv{int(index) // 2 + 1}.{leaf}"] = torch.randn(
            tensor.shape, generator=generator
        )
    policy |= backbone
    policy["tstep_encoder.img_features.weight"] = torch.randn(16, ours.output_size(), generator=generator)
    run_dir = tmp_path / "run"
    (run_dir / "ckpts" / "latest").mkdir(parents=True)
    (run_dir / "ckpts" / "config.txt").write_text(text)
    torch.save(policy, run_dir / "ckpts" / "latest" / "policy.pt")
    code, output = run_cli("import-amago", str(run_dir), str(tmp_path / "out"), "--image-shape", "36,36,2")
    assert code == 0, output
    config = json.loads((tmp_path / "out" / "config.resolved.json").read_text())["tstep_encoder"]
    for key, value in expected.items():
        assert config[key] == value, key
    cnn = load_run(tmp_path / "out").agent.tstep_encoder.cnn
    assert type(cnn).__name__ == type(ours).__name__
    for key, tensor in cnn.state_dict().items():
        index, leaf = key.removeprefix("net.").split(".")
        torch.testing.assert_close(tensor, backbone[f"tstep_encoder.cnn.conv{int(index) // 2 + 1}.{leaf}"])


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


MAMBA = {"d_model": 32, "d_state": 4, "d_conv": 4, "expand": 2, "n_layers": 2}


def amago_mamba_tensors(gen: torch.Generator) -> dict[str, torch.Tensor]:
    """AMAGO's MambaTrajEncoder parameters under AMAGO's names: ``mambas.{i}.norm`` (its Normalization wrapper
    around a LayerNorm) and ``mambas.{i}.mamba`` (mamba_ssm's Mamba v1: in_proj and out_proj without bias, a
    depthwise conv1d with bias, x_proj → (dt_rank, B, C), dt_proj, A_log, D), with random values."""
    d, n, k = MAMBA["d_model"], MAMBA["d_state"], MAMBA["d_conv"]
    inner, rank = MAMBA["expand"] * d, -(-d // 16)

    def rand(*shape: int, scale: float = 0.2) -> torch.Tensor:
        return scale * torch.randn(*shape, generator=gen)

    sd = {"traj_encoder.inp.weight": rand(d, d), "traj_encoder.inp.bias": rand(d)}
    for i in range(MAMBA["n_layers"]):
        block = f"traj_encoder.mambas.{i}"
        sd |= {
            f"{block}.norm.norm.weight": 1 + rand(d),
            f"{block}.norm.norm.bias": rand(d),
            f"{block}.mamba.in_proj.weight": rand(2 * inner, d),
            f"{block}.mamba.conv1d.weight": rand(inner, 1, k, scale=0.5),
            f"{block}.mamba.conv1d.bias": rand(inner),
            f"{block}.mamba.x_proj.weight": rand(rank + 2 * n, inner),
            f"{block}.mamba.dt_proj.weight": rand(inner, rank),
            f"{block}.mamba.dt_proj.bias": rand(inner, scale=1.0) - 3.0,
            f"{block}.mamba.A_log": torch.log(torch.arange(1, n + 1).float()).repeat(inner, 1)
            + rand(inner, n),
            f"{block}.mamba.D": 1 + rand(inner),
            f"{block}.mamba.out_proj.weight": rand(d, inner),
        }
    sd |= {"traj_encoder.out_norm.norm.weight": 1 + rand(d), "traj_encoder.out_norm.norm.bias": rand(d)}
    return sd


def written_out_mamba(sd: dict[str, torch.Tensor], seq: torch.Tensor) -> torch.Tensor:
    """AMAGO's MambaTrajEncoder forward written out from the Mamba paper / mamba_ssm's selective_scan_ref, one
    time step at a time: x = inp(seq); per block x += out_proj(scan(silu(causal_conv(u))) * silu(z)) with
    (u, z) = in_proj(LayerNorm(x)); then the output LayerNorm."""
    d, n, k = MAMBA["d_model"], MAMBA["d_state"], MAMBA["d_conv"]
    inner, rank = MAMBA["expand"] * d, -(-d // 16)
    batch, length, _ = seq.shape
    x = seq @ sd["traj_encoder.inp.weight"].T + sd["traj_encoder.inp.bias"]
    for i in range(MAMBA["n_layers"]):
        p = {key.split(f"mambas.{i}.", 1)[1]: v for key, v in sd.items() if f"mambas.{i}." in key}
        h = torch.nn.functional.layer_norm(x, (d,), p["norm.norm.weight"], p["norm.norm.bias"])
        uz = h @ p["mamba.in_proj.weight"].T
        u, z = uz[..., :inner], uz[..., inner:]
        kernel = p["mamba.conv1d.weight"][:, 0]  # (inner, k): tap k - 1 reads the current step
        conv = torch.zeros_like(u)
        for t in range(length):
            for tap in range(k):
                source = t - (k - 1) + tap
                if source >= 0:
                    conv[:, t] += kernel[:, tap] * u[:, source]
        conv = torch.nn.functional.silu(conv + p["mamba.conv1d.bias"])
        dbc = conv @ p["mamba.x_proj.weight"].T
        dt, b, c = dbc[..., :rank], dbc[..., rank : rank + n], dbc[..., rank + n :]
        delta = torch.nn.functional.softplus(dt @ p["mamba.dt_proj.weight"].T + p["mamba.dt_proj.bias"])
        a = -torch.exp(p["mamba.A_log"])
        state = torch.zeros(batch, inner, n)
        ys = []
        for t in range(length):
            dt_t = delta[:, t, :, None]
            state = torch.exp(dt_t * a) * state + dt_t * b[:, t, None, :] * conv[:, t, :, None]
            ys.append((state * c[:, t, None, :]).sum(-1) + p["mamba.D"] * conv[:, t])
        y = torch.stack(ys, dim=1) * torch.nn.functional.silu(z)
        x = x + y @ p["mamba.out_proj.weight"].T
    w, bias = sd["traj_encoder.out_norm.norm.weight"], sd["traj_encoder.out_norm.norm.bias"]
    return torch.nn.functional.layer_norm(x, (d,), w, bias)


def test_amago_mamba_run_imports_and_matches_a_written_out_mamba(tmp_path):
    """AMAGO's Mamba needs mamba_ssm's CUDA kernels, so no AMAGO run made the fixture: the rnn run's config and
    weights with the GRU swapped for a Mamba (AMAGO's config section and parameter names), checked against the
    block written out above (whole sequence and step by step with the rollout state)."""
    gen = torch.Generator().manual_seed(0)
    run = tmp_path / "mamba_run"
    (run / "ckpts" / "latest").mkdir(parents=True)
    text = (FIXTURES / "rnn" / "ckpts" / "config.txt").read_text()
    head, _, rest = text.partition("# Parameters for GRUTrajEncoder:")
    rest = rest[rest.index("\n\n") :]
    section = "\n".join(f"MambaTrajEncoder.{key} = {value}" for key, value in MAMBA.items())
    (run / "ckpts" / "config.txt").write_text(
        f"{head}# Parameters for MambaTrajEncoder:\n# ===\n{section}\nMambaTrajEncoder.norm = 'layer'\n{rest}"
    )
    rnn_sd = torch.load(FIXTURES / "rnn" / "ckpts" / "latest" / "policy.pt", weights_only=True)
    mamba_sd = amago_mamba_tensors(gen)
    sd = {k: v for k, v in rnn_sd.items() if not k.startswith("traj_encoder.")} | mamba_sd
    torch.save(sd, run / "ckpts" / "latest" / "policy.pt")
    code, output = run_cli("import-amago", str(run), str(tmp_path / "out"), "--env", "frozen-lake")
    assert code == 0, output
    out = tmp_path / "out"
    config = json.loads((out / "config.resolved.json").read_text())["traj_encoder"]
    assert {k: config[k] for k in MAMBA} == MAMBA
    assert config["kind"] == "mamba"
    assert config["norm"] == "layer"
    encoder = load_run(out).agent.traj_encoder
    seq = torch.randn(2, 9, 32, generator=gen)
    time = torch.arange(9).repeat(2, 1)
    expected = written_out_mamba(mamba_sd, seq)
    with torch.no_grad():
        whole, _ = encoder(seq, time)
        state = encoder.init_hidden_state(2, "cpu")
        steps = []
        for t in range(9):
            step, state = encoder(seq[:, t : t + 1], time[:, t : t + 1], state)
            steps.append(step)
    np.testing.assert_allclose(whole.numpy(), expected.numpy(), rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(torch.cat(steps, 1).numpy(), expected.numpy(), rtol=0, atol=TOLERANCE)
