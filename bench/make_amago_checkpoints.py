"""Makes the AMAGO v3.3.0 checkpoints that ``tests/compat/test_import_amago.py`` imports.

Runs with the reference AMAGO venv, never with the project's (AMAGO is a separate program here):

    TORCH_COMPILE_DISABLE=1 .venv-amago-ref/bin/python bench/make_amago_checkpoints.py [--out DIR]

For each trajectory encoder (ff, GRU, Transformer) it trains a tiny AMAGO agent (d 32, 2 layers) on Meta-Frozen-Lake
(3x3, k = 2) for two short epochs, then keeps from the run folder what an AMAGO user keeps (``ckpts/config.txt``
and ``ckpts/latest/policy.pt``; for ff also the epoch-0 policy weights and the epoch-1 accelerate state's
``model.safetensors``) and records, with the trained policy on three envs whose rollouts end at staggered steps,
every step's inputs (observation, rl2, time index, which envs reset before it) and outputs: the argmax action,
the actor's probabilities for every gamma and the online critics' values of those probabilities (raw and
PopArt-denormalised). Written to ``tests/compat/fixtures/amago_checkpoints/{ff,rnn,transformer}/``.

The CNN runs (``CNN_RUNS``: ``cnn_nature``, ``cnn_impala``) do the same with AMAGO's CNNTstepEncoder (Nature-ish
with channels last and DrQ-v2 augmentation; IMPALA-ish with channels first and GELU) and a small GRU on
:class:`TinyImageEnv`, a 36x36x2 uint8 image env defined here; their recorded observations are uint8 pixels.
Only these: ``--encoders cnn_nature cnn_impala --no-heads``.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "compat" / "fixtures" / "amago_checkpoints"
LAKE = {"size": 3, "k_episodes": 2}
ROLLOUT = 9 * LAKE["k_episodes"]  # size² steps per attempt, k attempts
STAGGER = (7, 11, 13)  # forced rollout ends per env (shorter than the context, so the KV cache never rolls)
STEPS = 30
IMAGE = 36  # the smallest square frame DQN's convolutions (8/4, 4/2, 3/1) take


class TinyImageEnv:
    """A 36x36 two-channel uint8 image env: a bright 6x6 patch in one of four quadrants (channel 0) and the step
    count as a brightness ramp (channel 1); reward 1 for naming the quadrant (Discrete(4)), 6 steps per episode.

    Built as a gymnasium env on first use (the class body needs gymnasium, imported by the reference venv only).
    """

    def __new__(cls, channels_first: bool = False, seed: int = 0):
        import gymnasium as gym

        class _Env(gym.Env):
            def __init__(self) -> None:
                shape = (2, IMAGE, IMAGE) if channels_first else (IMAGE, IMAGE, 2)
                self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
                self.action_space = gym.spaces.Discrete(4)
                self._rng = np.random.default_rng(seed)
                self._t = 0
                self._target = 0

            def _frame(self) -> np.ndarray:
                frame = np.zeros((IMAGE, IMAGE, 2), np.uint8)
                row, col = divmod(self._target, 2)
                top, left = 6 + 18 * row, 6 + 18 * col
                frame[top : top + 6, left : left + 6, 0] = 255
                frame[:, :, 1] = np.uint8(40 * self._t) + np.arange(IMAGE, dtype=np.uint8)[None, :]
                return frame.transpose(2, 0, 1).copy() if channels_first else frame

            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                self._t, self._target = 0, int(self._rng.integers(4))
                return self._frame(), {}

            def step(self, action):
                reward = float(int(action) == self._target)
                self._t += 1
                self._target = int(self._rng.integers(4))
                return self._frame(), reward, False, self._t >= 6, {}

        return _Env()


# CNN timestep encoder runs (GRU trajectory encoder): the backbone class and its options, the encoder's options.
CNN_RUNS: dict[str, dict] = {
    "cnn_nature": {
        "cnn_type": "NatureishCNN",
        "backbone": {},
        "img_features": 16,
        "rl2_features": 4,
        "d_output": 16,
        "drqv2_aug": True,
        "aug_pct_of_batch": 0.5,
    },
    "cnn_impala": {
        "cnn_type": "IMPALAishCNN",
        "backbone": {"cnn_block_depths": [4, 8]},
        "channels_first": True,
        "img_features": 16,
        "rl2_features": 4,
        "d_output": 16,
        "activation": "gelu",
    },
}


def train(encoder: str, root: Path) -> tuple[object, Path]:
    """A two-epoch AMAGO run of ``encoder``; returns (experiment, its ckpts folder).

    ``encoder`` is a trajectory encoder (ff, rnn, transformer; with the ff timestep encoder on Meta-Frozen-Lake)
    or a CNN case of ``CNN_RUNS`` (a GRU over AMAGO's CNN timestep encoder on :class:`TinyImageEnv`).
    """
    import gin

    import amago
    from amago import cli_utils
    from amago.envs import AMAGOEnv
    from amago.envs.builtin.toy_gym import MetaFrozenLake
    from amago.loading import DiskTrajDataset
    from amago.nets import cnn

    gin.clear_config()
    config = {
        "amago.nets.actor_critic.Actor.d_hidden": 32,
        "amago.nets.actor_critic.NCritics.d_hidden": 32,
        "amago.nets.traj_encoders.TformerTrajEncoder.n_heads": 4,
    }
    if encoder == "transformer":
        config["amago.nets.traj_encoders.TformerTrajEncoder.attention_type"] = (
            amago.nets.transformer.VanillaAttention
        )
    if encoder in CNN_RUNS:
        options = dict(CNN_RUNS[encoder])
        backbone = options.pop("cnn_type")
        for key, value in options.pop("backbone").items():
            config[f"amago.nets.cnn.{backbone}.{key}"] = value
        traj_type = cli_utils.switch_traj_encoder(config, arch="rnn", memory_size=16, layers=1)
        tstep_type = cli_utils.switch_tstep_encoder(
            config, arch="cnn", cnn_type=getattr(cnn, backbone), **options
        )
        channels_first = bool(options.get("channels_first", False))

        def make_env():
            return AMAGOEnv(TinyImageEnv(channels_first), env_name="tiny_image")
    else:
        traj_type = cli_utils.switch_traj_encoder(config, arch=encoder, memory_size=32, layers=2)
        tstep_type = cli_utils.switch_tstep_encoder(
            config, arch="ff", n_layers=1, d_hidden=32, d_output=32, normalize_inputs=True
        )

        def make_env():
            return AMAGOEnv(MetaFrozenLake(**LAKE), env_name="meta_frozen_lake_3x3_k2")

    agent_type = cli_utils.switch_agent(config, "agent", tau=0.004)
    cli_utils.use_config(config)

    run_name = f"tiny_{encoder}"
    exp = amago.Experiment(
        run_name=run_name,
        ckpt_base_dir=str(root),
        dataset=DiskTrajDataset(dset_root=str(root), dset_name=run_name, dset_max_size=1000),
        make_train_env=make_env,
        make_val_env=make_env,
        tstep_encoder_type=tstep_type,
        traj_encoder_type=traj_type,
        agent_type=agent_type,
        max_seq_len=ROLLOUT,
        traj_save_len=ROLLOUT,
        parallel_actors=2,
        env_mode="sync",
        dloader_workers=0,
        log_to_wandb=False,
        verbose=False,
        batch_size=4,
        epochs=2,
        train_timesteps_per_epoch=ROLLOUT,
        train_batches_per_epoch=6,
        val_interval=None,
        val_timesteps_per_epoch=ROLLOUT,
        ckpt_interval=1,
        always_save_latest=True,
        learning_rate=3e-3,
    )
    exp.start()
    exp.learn()
    return exp, root / run_name / "ckpts"


def record(policy: torch.nn.Module, seed: int, encoder: str) -> dict[str, np.ndarray]:
    """Inputs and outputs of ``policy`` step by step on three envs with staggered rollout ends."""
    import random

    from amago.envs import AMAGOEnv
    from amago.envs.amago_env import SequenceWrapper
    from amago.envs.builtin.toy_gym import MetaFrozenLake

    random.seed(seed)
    np.random.seed(seed)
    if encoder in CNN_RUNS:
        channels_first = bool(CNN_RUNS[encoder].get("channels_first", False))
        envs = [
            SequenceWrapper(AMAGOEnv(TinyImageEnv(channels_first, seed=i), env_name="tiny_image"), None)
            for i in range(len(STAGGER))
        ]
    else:
        envs = [SequenceWrapper(AMAGOEnv(MetaFrozenLake(**LAKE), env_name="lake"), None) for _ in STAGGER]
    for env in envs:
        env.reset()
    lengths = [0] * len(envs)
    hidden = policy.init_hidden_state(len(envs), torch.device("cpu"))
    rows: dict[str, list[np.ndarray]] = {
        k: [] for k in ("obs", "rl2", "time", "reset", "action", "probs", "q", "value")
    }
    reset = np.zeros(len(envs), dtype=bool)
    for _ in range(STEPS):
        stamps = [env.current_timestep for env in envs]
        obs = np.concatenate([s[0]["observation"] for s in stamps], 0)
        if obs.dtype != np.uint8:  # images stay uint8 pixels, as the CNN encoder reads them
            obs = obs.astype(np.float32)
        rl2 = np.concatenate([s[1] for s in stamps], 0).astype(np.float32)
        time = np.concatenate([s[2] for s in stamps], 0)
        if reset.any():
            hidden = policy.traj_encoder.reset_hidden_state(hidden, reset)
        with torch.no_grad():
            obs_t = {"observation": torch.from_numpy(obs).unsqueeze(1)}
            rl2_t = torch.from_numpy(rl2).unsqueeze(1)
            time_t = torch.from_numpy(time).unsqueeze(1)
            # get_actions on a copy of the state (the Transformer's cache is updated in place), then the same
            # step through the encoders and heads for the probabilities and values.
            actions, _ = policy.get_actions(
                obs_t, rl2_t, time_t, hidden_state=copy.deepcopy(hidden), sample=False
            )
            states, hidden = policy.get_state_embedding(obs_t, rl2_t, time_t, hidden_state=hidden)
            probs = policy.actor(states).probs  # (N, 1, G, A)
            if not torch.equal(probs[:, :, -1].argmax(-1, keepdim=True), actions.long()):
                raise SystemExit("get_actions and the actor disagree: the recording is not reproducible")
            q = policy.critics(states, probs.unsqueeze(0))  # (1, N, 1, C, G, 1)
            value = policy.popart(q, normalized=False)
        rows["probs"].append(probs[:, 0].numpy())
        rows["q"].append(q[0, :, 0, ..., 0].numpy())
        rows["value"].append(value[0, :, 0, ..., 0].numpy())
        rows["obs"].append(obs)
        rows["rl2"].append(rl2)
        rows["time"].append(time)
        rows["reset"].append(reset.copy())
        rows["action"].append(actions.squeeze(1).numpy().reshape(len(envs), -1))
        reset = np.zeros(len(envs), dtype=bool)
        for i, env in enumerate(envs):
            *_, terminated, truncated, _ = env.step(actions[i].squeeze(0).numpy())
            lengths[i] += 1
            if np.any(terminated) or np.any(truncated) or lengths[i] == STAGGER[i]:
                env.reset()
                lengths[i] = 0
                reset[i] = True
    return {k: np.stack(v) for k, v in rows.items() if v}


# Untrained agents for the other action spaces and the multitask agent: (name, agent, traj encoder, action, dist).
HEADS = (
    ("box_rnn", "agent", "rnn", "box", None),
    ("gmm_ff", "agent", "ff", "box", "GMM"),
    ("multibinary_ff", "agent", "ff", "multibinary", "Multibinary"),
    ("multitask_discrete_transformer", "multitask", "transformer", "discrete", None),
    ("multitask_box_rnn", "multitask", "rnn", "box", None),
)


def make_heads(out: Path) -> None:
    """Tiny untrained AMAGO agents (random, perturbed weights) with their raw head outputs on random inputs.

    For each: ``ckpts/config.txt`` (gin's operative config after building), ``ckpts/latest/policy.pt`` and
    ``recorded.npz``: observations (N, T, 5), rl2s, time indices and critic actions, and AMAGO's state
    embeddings (full-sequence forward), raw actor outputs ``(N, T, G, P)`` and raw critic outputs
    ``(1, N, T, C, G, O)`` (bin probabilities for the two-hot critic). The raw outputs check the weight mapping (critic input order included) apart from
    the distributions' math.
    """
    import gin
    import gymnasium as gym

    import amago
    from amago.agent import Agent, MultiTaskAgent
    from amago.nets import policy_dists, traj_encoders
    from amago.nets.tstep_encoders import FFTstepEncoder

    encoders = {
        "ff": traj_encoders.FFTrajEncoder,
        "rnn": traj_encoders.GRUTrajEncoder,
        "transformer": traj_encoders.TformerTrajEncoder,
    }
    for name, kind, encoder, action, dist in HEADS:
        gin.clear_config()
        bindings = {
            "FFTstepEncoder.n_layers": 1,
            "FFTstepEncoder.d_hidden": 16,
            "FFTstepEncoder.d_output": 16,
            "FFTrajEncoder.d_model": 16,
            "GRUTrajEncoder.d_hidden": 16,
            "GRUTrajEncoder.d_output": 16,
            "TformerTrajEncoder.d_model": 16,
            "TformerTrajEncoder.d_ff": 32,
            "TformerTrajEncoder.n_heads": 2,
            "TformerTrajEncoder.n_layers": 2,
            "Actor.d_hidden": 16,
            "NCritics.d_hidden": 16,
            "NCriticsTwoHot.d_hidden": 16,
            "NCriticsTwoHot.min_return": -10.0,
            "NCriticsTwoHot.max_return": 10.0,
            "NCriticsTwoHot.output_bins": 8,
        }
        for key, value in bindings.items():
            gin.bind_parameter(key, value)
        gin.bind_parameter("TformerTrajEncoder.attention_type", amago.nets.transformer.VanillaAttention)
        if dist is not None:
            gin.bind_parameter("Actor.continuous_dist_type", getattr(policy_dists, dist))
        space = {
            "discrete": gym.spaces.Discrete(3),
            "box": gym.spaces.Box(-1.0, 1.0, (2,)),
            "multibinary": gym.spaces.MultiBinary(3),
        }[action]
        dim = 2 if action == "box" else 3
        cls = MultiTaskAgent if kind == "multitask" else Agent
        agent = cls(
            obs_space=gym.spaces.Dict({"observation": gym.spaces.Box(-1.0, 1.0, (5,))}),
            rl2_space=gym.spaces.Box(-np.inf, np.inf, (1 + dim,)),
            action_space=space,
            max_seq_len=8,
            tstep_encoder_type=FFTstepEncoder,
            traj_encoder_type=encoders[encoder],
        )
        with torch.no_grad():
            for tensor in agent.state_dict().values():
                if tensor.is_floating_point():
                    tensor.add_(0.05 * torch.randn_like(tensor))
        agent.eval()
        dest = out / name
        if dest.exists():
            shutil.rmtree(dest)
        (dest / "ckpts" / "latest").mkdir(parents=True)
        (dest / "ckpts" / "config.txt").write_text(gin.operative_config_str())
        torch.save(agent.state_dict(), dest / "ckpts" / "latest" / "policy.pt")
        gen = torch.Generator().manual_seed(0)
        n, t = 2, 6
        obs = torch.rand(n, t, 5, generator=gen) * 2 - 1
        rl2 = torch.randn(n, t, 1 + dim, generator=gen)
        time = torch.arange(t).repeat(n, 1).unsqueeze(-1)
        gammas = len(agent.gammas)
        if action == "discrete":
            actions = torch.softmax(torch.randn(1, n, t, gammas, dim, generator=gen), -1)
        elif action == "multibinary":
            actions = (torch.rand(1, n, t, gammas, dim, generator=gen) > 0.5).float()
        else:
            actions = torch.rand(1, n, t, gammas, dim, generator=gen) * 1.8 - 0.9
        with torch.no_grad():
            states, _ = agent.get_state_embedding({"observation": obs}, rl2, time, hidden_state=None)
            actor = agent.actor.actor_network_forward(state=states, log_dict=None, straight_from_obs={})
            critic = agent.critics(states, actions)
            if isinstance(critic, torch.distributions.Categorical):
                critic = critic.probs  # the two-hot critic's bin probabilities (multitask)
        np.savez(
            dest / "recorded.npz",
            obs=obs.numpy(),
            rl2=rl2.numpy(),
            time=time.numpy(),
            actions=actions.numpy(),
            states=states.numpy(),
            actor=actor.numpy(),
            critic=critic.numpy(),
        )
        print(name, tuple(actor.shape), tuple(critic.shape))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--encoders", nargs="*", default=["ff", "rnn", "transformer", *CNN_RUNS])
    parser.add_argument(
        "--no-heads", action="store_true", help="Skip the untrained other-action-space agents."
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for encoder in args.encoders:
        with tempfile.TemporaryDirectory() as tmp:
            exp, ckpts = train(encoder, Path(tmp))
            policy = exp.policy
            policy.eval()
            dest = args.out / encoder
            if dest.exists():
                shutil.rmtree(dest)
            (dest / "ckpts" / "latest").mkdir(parents=True)
            shutil.copy(ckpts / "config.txt", dest / "ckpts" / "config.txt")
            shutil.copy(ckpts / "latest" / "policy.pt", dest / "ckpts" / "latest" / "policy.pt")
            if encoder == "ff":
                # One epoch as plain weights, another as an accelerate state (import-amago reads both).
                (dest / "ckpts" / "policy_weights").mkdir()
                shutil.copy(
                    ckpts / "policy_weights" / "policy_epoch_0.pt",
                    dest / "ckpts" / "policy_weights" / "policy_epoch_0.pt",
                )
                state = ckpts / "training_states" / f"tiny_{encoder}_epoch_1"
                (dest / "ckpts" / "training_states" / state.name).mkdir(parents=True)
                shutil.copy(state / "model.safetensors", dest / "ckpts" / "training_states" / state.name)
            policy.load_state_dict(torch.load(dest / "ckpts" / "latest" / "policy.pt", weights_only=True))
            figures = record(policy, seed=1, encoder=encoder)
            np.savez(dest / "recorded.npz", **figures)
            print(encoder, {k: v.shape for k, v in figures.items()}, sorted(os.listdir(dest / "ckpts")))
    if not args.no_heads:
        make_heads(args.out / "heads")


if __name__ == "__main__":
    main()
