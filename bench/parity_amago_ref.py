"""The AMAGO side of the parity harness: runs the real AMAGO v3.3.0 on the harness's inputs, writes its outputs.

Run only by ``bench/parity_vs_amago.py``, with the interpreter of the AMAGO reference venv
(``../shared/baselines/amago-3.3.0/setup.sh``)::

    TORCH_COMPILE_DISABLE=1 .venv-amago-ref/bin/python bench/parity_amago_ref.py WORK_DIR \
        [--precision bf16] [--draw N] [--out NAME]

``WORK_DIR/cases.json`` lists the cases and ``WORK_DIR/inputs/<case>.npz`` holds each case's inputs; this
program writes ``WORK_DIR/amago_ref/<case>.npz`` (``WORK_DIR/NAME/`` with ``--out``): AMAGO's weights
(``weight/<state-dict key>``) and what AMAGO computed (``out/<name>``). It measures AMAGO; nothing of the project
imports it, and it copies no AMAGO code. ``--draw N`` (N > 0) perturbs the freshly built weights
(:func:`perturb_parameters`): the same problem, another draw of bf16's roundings.

``--precision bf16`` runs AMAGO as its ``Experiment(mixed_precision="bf16")`` trains: the agent goes through
``accelerate.Accelerator(mixed_precision="bf16").prepare``, which wraps its whole forward (networks, policy
distributions, PopArt, targets, losses) in ``torch.autocast(device_type="cpu", dtype=torch.bfloat16)`` and casts
its outputs to fp32; the backward runs outside it. Rollouts and the standalone PopArt / label cases run their
calls inside the same autocast (AMAGO's own rollout caster is ``torch.autocast("cuda")``, a no-op on a CPU: this
measures its networks in bf16 as a GPU run would compute them, with bf16 instead of fp16). An update's discrete
decisions (mode picks, the binary advantage filter) are replayed from an fp32 update of the same weights, and the
number bf16 would have flipped is written as ``out/decision_flips`` (flipped, total): see ``parity_noise.DecisionTape`` in
``tests/parity/parity_cases.py``, amago's side of the same rule.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from functools import partial
from pathlib import Path

import numpy as np

# Before torch is imported: AMAGO's torch.compile decorators crash in training on CPU.
os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # parity_noise, next to this file
import parity_noise

torch.set_num_threads(1)

import gymnasium as gym  # noqa: E402

from amago import agent as amago_agent  # noqa: E402
from amago.loading import Batch  # noqa: E402
from amago.nets import actor_critic, cnn, policy_dists, traj_encoders, transformer, tstep_encoders  # noqa: E402

PAD = 4.0  # AMAGO's padding value: its loss recovers the mask from rows of it

_ACCELERATOR = None
"""The one ``accelerate.Accelerator`` of a bf16 run (accelerate keeps one state per process)."""


def forward_precision(precision: str) -> contextlib.AbstractContextManager:
    """The autocast AMAGO's bf16 forward runs in (accelerate's, on a CPU); nothing in fp32."""
    if precision == "bf16":
        return torch.autocast(device_type="cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def prepared(agent: torch.nn.Module, precision: str) -> torch.nn.Module:
    """The agent as AMAGO's Experiment trains it: through ``accelerator.prepare`` under mixed precision."""
    global _ACCELERATOR
    if precision == "no":
        return agent  # as the fp32 harness always ran it: the plain module
    if _ACCELERATOR is None:
        from accelerate import Accelerator

        _ACCELERATOR = Accelerator(mixed_precision=precision, cpu=True)
    return _ACCELERATOR.prepare(agent)


def as_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A tensor as numpy: bf16/fp16 (which numpy lacks) widened to fp32, every other dtype as it is."""
    tensor = tensor.detach()
    if tensor.dtype in (torch.bfloat16, torch.float16):
        tensor = tensor.float()
    return tensor.numpy()


# ------------------------------------------------------------------------------------------------------
# Deterministic stand-ins for AMAGO's random draws (see parity_noise)
# ------------------------------------------------------------------------------------------------------


_TAPE: parity_noise.DecisionTape | None = None
"""The tape of the update running now (None: decisions as computed, the fp32 harness)."""


def decide(computed: torch.Tensor) -> torch.Tensor:
    """A discrete decision as computed, or as the running tape records or replays it."""
    return computed if _TAPE is None else _TAPE.decide(computed)


@contextlib.contextmanager
def using(tape: parity_noise.DecisionTape | None):
    global _TAPE
    saved, _TAPE = _TAPE, tape
    try:
        yield
    finally:
        _TAPE = saved


def pin_filter(agent: torch.nn.Module) -> None:
    """Routes AMAGO's binary advantage filter (its default, a pure decision) through the tape."""
    original = agent.fbc_filter_func
    if original is amago_agent.binary_filter:
        agent.fbc_filter_func = lambda adv: decide(original(adv))


def _normal_rsample(self, sample_shape=torch.Size()):  # noqa: B008 - torch's own default
    shape = self._extended_shape(sample_shape)
    return self.loc.expand(shape) + parity_noise.noise_for(self.loc).expand(shape) * self.scale.expand(shape)


def _normal_sample(self, sample_shape=torch.Size()):  # noqa: B008
    with torch.no_grad():
        return _normal_rsample(self, sample_shape)


def _gmm_sample(self, sample_shape=torch.Size(), return_pretanh_value=False):  # noqa: B008
    mixture = self.base_dist
    logits = mixture.mixture_distribution.logits  # (..., M)
    components = mixture.component_distribution.base_dist  # Normal, loc (..., M, A)
    pick = decide(logits.argmax(-1))[..., None, None]
    pick = pick.expand(*logits.shape, components.loc.shape[-1])[..., :1, :]
    loc = components.loc.gather(-2, pick).squeeze(-2)
    std = components.scale.gather(-2, pick).squeeze(-2)
    pre = (loc + parity_noise.noise_for(loc) * std).detach()
    out = torch.tanh(pre).expand(*sample_shape, *pre.shape)
    return (out, pre) if return_pretanh_value else out


def _bernoulli_sample(self, sample_shape=torch.Size()):  # noqa: B008
    with torch.no_grad():
        return decide(self.logits > 0).to(self.logits.dtype).expand(self._extended_shape(sample_shape))


def _one_hot_sample(self, sample_shape=torch.Size()):  # noqa: B008
    with torch.no_grad():
        top = torch.nn.functional.one_hot(decide(self.probs.argmax(-1)), self.probs.shape[-1])
        top = top.to(self.probs.dtype)
        return top.expand(self._extended_shape(sample_shape))


def install_deterministic_draws() -> None:
    """Every draw an update makes becomes the harness's deterministic one."""
    torch.distributions.Normal.rsample = _normal_rsample
    torch.distributions.Normal.sample = _normal_sample
    torch.distributions.Bernoulli.sample = _bernoulli_sample
    torch.distributions.OneHotCategorical.sample = _one_hot_sample
    policy_dists._TanhWrappedDistribution.sample = _gmm_sample
    torch.randint = parity_noise.fake_randint


# ------------------------------------------------------------------------------------------------------
# Building AMAGO's agent from a case
# ------------------------------------------------------------------------------------------------------


def spaces_of(case: dict) -> tuple[gym.spaces.Dict, gym.spaces.Box, gym.spaces.Space]:
    """Observation, rl2 and action spaces of a case (a flat Box, or a uint8 image, under 'observation')."""
    if case.get("image"):
        obs = gym.spaces.Dict({"observation": gym.spaces.Box(0, 255, tuple(case["image"]), dtype=np.uint8)})
    else:
        obs = gym.spaces.Dict({"observation": gym.spaces.Box(-5.0, 5.0, (case["obs_dim"],))})
    action = case["action"]
    if action["type"] == "discrete":
        space: gym.spaces.Space = gym.spaces.Discrete(action["n"])
        dim = action["n"]
    elif action["type"] == "multibinary":
        space = gym.spaces.MultiBinary(action["dim"])
        dim = action["dim"]
    else:
        space = gym.spaces.Box(-1.0, 1.0, (action["dim"],))
        dim = action["dim"]
    rl2 = gym.spaces.Box(-np.inf, np.inf, (1 + dim,))
    return obs, rl2, space


def traj_encoder_type(spec: dict):
    """AMAGO's trajectory encoder class for a case's encoder spec, as a partial with its sizes."""
    options = {k: v for k, v in spec.items() if k != "kind"}
    if spec["kind"] == "ff":
        return partial(traj_encoders.FFTrajEncoder, **options)
    if spec["kind"] == "rnn":
        return partial(traj_encoders.GRUTrajEncoder, **options)
    if spec["kind"] == "transformer":
        return partial(
            traj_encoders.TformerTrajEncoder, attention_type=transformer.VanillaAttention, **options
        )
    raise ValueError(spec["kind"])


def tstep_encoder_type(spec: dict):
    """AMAGO's timestep encoder class for a case's spec (amago's config names), as a partial with its sizes."""
    options = {k: v for k, v in spec.items() if k != "kind"}
    if spec["kind"] == "ff":
        return partial(tstep_encoders.FFTstepEncoder, **options)
    backbone = options.pop("cnn_type")
    depths = options.pop("impala_block_depths", None)
    if backbone == "nature":
        cnn_type = cnn.NatureishCNN
    else:
        cnn_type = partial(cnn.IMPALAishCNN, cnn_block_depths=list(depths))
    return partial(tstep_encoders.CNNTstepEncoder, cnn_type=cnn_type, **options)


PERTURBATION = 2.0**-12
"""Relative size of :func:`perturb_parameters`' change: 1/16 of bf16's unit roundoff."""


def perturb_parameters(module: torch.nn.Module, draw: int) -> None:
    """Every parameter times ``1 + PERTURBATION·N(0, 1)``, seeded by ``draw`` (0: unchanged).

    The bf16 comparison needs another draw of bf16's roundings of the same computation, to measure how far one
    bf16 result strays by chance: a change far below bf16's spacing (2^-8 relative) keeps the problem the same but
    moves some roundings, of weights and of every activation after them, to the other side. amago loads the
    perturbed weights from this program's output, and the fp32 reference is computed on them too.
    """
    if draw == 0:
        return
    generator = torch.Generator().manual_seed(draw)
    with torch.no_grad():
        for param in module.parameters():
            noise = torch.randn(param.shape, generator=generator)
            param.mul_(1.0 + PERTURBATION * noise)


def build_agent(case: dict, draw: int = 0) -> torch.nn.Module:
    """AMAGO's Agent or MultiTaskAgent for a case, seeded (its weights perturbed for a draw > 0)."""
    torch.manual_seed(case["seed"])
    obs, rl2, action = spaces_of(case)
    heads = case["heads"]
    dist = case.get("dist")
    actor_kwargs = {"d_hidden": heads["d_hidden"], "n_layers": heads["n_layers"]}
    if dist == "gmm":
        actor_kwargs["continuous_dist_type"] = policy_dists.GMM
    elif dist == "multibinary":
        actor_kwargs["continuous_dist_type"] = policy_dists.Multibinary
    if case.get("discrete_clip") is not None:
        low, high = case["discrete_clip"]
        actor_kwargs["discrete_dist_type"] = partial(
            policy_dists.Discrete, clip_prob_low=low, clip_prob_high=high
        )
    critic_kwargs = {"d_hidden": heads["d_hidden"], "n_layers": heads["n_layers"]}
    if case["agent"] == "multitask":
        critic_kwargs.update(case["bins"])
        critic_type = partial(actor_critic.NCriticsTwoHot, **critic_kwargs)
        agent_cls = amago_agent.MultiTaskAgent
    else:
        critic_type = partial(actor_critic.NCritics, **critic_kwargs)
        agent_cls = amago_agent.Agent
    tstep = tstep_encoder_type(case["tstep"])
    agent = agent_cls(
        obs_space=obs,
        rl2_space=rl2,
        action_space=action,
        max_seq_len=case["max_seq_len"],
        tstep_encoder_type=tstep,
        traj_encoder_type=traj_encoder_type(case["traj"]),
        actor_type=partial(actor_critic.Actor, **actor_kwargs),
        critic_type=critic_type,
        **case.get("agent_kwargs", {}),
    )
    scale = case.get("actor_out_scale")
    if scale:
        # Saturates the policy (probabilities past the clip) so the clipped-gradient path is exercised.
        with torch.no_grad():
            for name in ("actor", "target_actor"):
                getattr(agent, name).base.out_layer.weight.mul_(scale)
    perturb_parameters(agent, draw)
    return agent


def amago_batch(inputs: dict[str, np.ndarray]) -> Batch:
    """AMAGO's Batch of the case inputs: padded steps hold AMAGO's pad value, as its collate writes them."""
    mask = inputs["mask"]
    trans = mask[:, 1:]

    def padded(x: np.ndarray, where: np.ndarray, value: float) -> torch.Tensor:
        out = x.copy()
        out[~where] = value
        return torch.from_numpy(out)

    return Batch(
        obs={"observation": padded(inputs["obs"], mask, PAD)},
        rl2s=padded(inputs["rl2s"], mask, PAD),
        rews=padded(inputs["rews"], trans, PAD),
        dones=padded(inputs["dones"], trans, True),
        actions=padded(inputs["actions"], trans, PAD),
        time_idxs=padded(inputs["time_idxs"], mask, PAD).long(),
    )


def weights_of(agent: torch.nn.Module) -> dict[str, np.ndarray]:
    # Copies: numpy views would follow the in-place updates of the buffers (PopArt, input statistics).
    return {f"weight/{k}": v.detach().cpu().numpy().copy() for k, v in agent.state_dict().items()}


# ------------------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------------------


def run_update(case: dict, inputs: dict[str, np.ndarray], precision: str, draw: int) -> dict[str, np.ndarray]:
    """One learning update: targets, losses, every gradient, PopArt and input statistics after it."""
    tape = None
    if precision != "no":
        # The decisions of an fp32 update of the same weights (a fresh agent: the update moves its statistics).
        tape = parity_noise.DecisionTape()
        fp32_agent = build_agent(case, draw)
        fp32_agent.train()
        pin_filter(fp32_agent)
        with using(tape):
            fp32_agent(amago_batch(inputs), log_step=False)
        tape.replaying = True
    agent = build_agent(case, draw)
    out = weights_of(agent)
    agent = prepared(agent, precision)
    agent.train()
    if tape is not None:
        pin_filter(agent)
    recorded: dict[str, torch.Tensor] = {}
    nstep = partial(amago_agent.nstep_return, n=agent.n_step)

    def recording_nstep(*args, **kwargs):
        result = nstep(*args, **kwargs)
        recorded["td_target"] = result.detach().clone()
        return result

    agent._nstep_fn = recording_nstep
    with using(tape):
        loss = agent(amago_batch(inputs), log_step=False)
    loss.backward()
    if tape is not None:
        out["out/decision_flips"] = np.array([tape.flips, tape.total], dtype=np.float64)
    out["out/loss"] = as_numpy(loss)
    out["out/critic_loss"] = np.asarray(float(agent.update_info["Critic Loss"]))
    out["out/actor_loss"] = np.asarray(float(agent.update_info["Actor Loss"]))
    if "td_target" in recorded:
        out["out/td_target"] = as_numpy(recorded["td_target"])  # (B, L-1, 1, G, 1)
    for name, param in agent.named_parameters():
        if param.grad is not None:
            out[f"grad/{name}"] = param.grad.detach().numpy()
    for name in ("mu", "nu", "w", "b"):
        out[f"out/popart_{name}"] = getattr(agent.popart, name).detach().numpy()
    norm = getattr(agent.tstep_encoder, "in_norm", None)
    if norm is not None:
        out["out/input_norm_mu"] = norm.mu.detach().numpy()
        out["out/input_norm_nu"] = norm.nu.detach().numpy()
    return out


def run_popart(case: dict, inputs: dict[str, np.ndarray], precision: str, draw: int) -> dict[str, np.ndarray]:
    """PopArt's statistics after each of a sequence of target batches."""
    layer = actor_critic.PopArtLayer(gammas=case["gammas"], **case.get("popart", {}))
    history = {k: [] for k in ("mu", "nu", "w", "b", "sigma")}
    targets, masks = torch.from_numpy(inputs["targets"]), torch.from_numpy(inputs["masks"])
    for step in range(targets.shape[0]):
        with forward_precision(precision):
            layer.update_stats(targets[step], masks[step].float())
        for name in history:
            history[name].append(getattr(layer, name).detach().clone().numpy())
    return {f"out/{k}": np.stack(v) for k, v in history.items()}


def run_twohot(case: dict, inputs: dict[str, np.ndarray], precision: str, draw: int) -> dict[str, np.ndarray]:
    """Two-hot / HL-Gauss labels of raw values and values of bin logits."""
    out = {}
    for label_type in ("twohot", "hlgauss"):
        critic = actor_critic.NCriticsTwoHot(
            state_dim=4,
            action_dim=1,
            gammas=torch.tensor([0.9]),
            discrete=False,
            num_critics=1,
            label_type=label_type,
            **case["bins"],
        )
        with forward_precision(precision):
            labels = critic.raw_vals_to_labels(torch.from_numpy(inputs["values"]))
            dist = torch.distributions.Categorical(logits=torch.from_numpy(inputs["logits"]))
            values = critic.bin_dist_to_raw_vals(dist)
        out[f"out/labels_{label_type}"] = as_numpy(labels)
        out[f"out/values_{label_type}"] = as_numpy(values)
    return out


def run_epsilon(
    case: dict, inputs: dict[str, np.ndarray], precision: str, draw: int
) -> dict[str, np.ndarray]:
    """Epsilon of egreedy and bilevel exploration at a grid of (actor step, episode step); numpy, no autocast."""
    from amago.envs import AMAGOEnv
    from amago.envs.builtin.toy_gym import MetaFrozenLake
    from amago.envs.exploration import BilevelEpsilonGreedy, EpsilonGreedy

    env = AMAGOEnv(MetaFrozenLake(size=3, k_episodes=2), env_name="parity")
    wrappers = {
        "egreedy": EpsilonGreedy(env, randomize_eps=False, **case["egreedy"]),
        "bilevel": BilevelEpsilonGreedy(env, randomize_eps=False, **case["bilevel"]),
    }
    out = {}
    for name, wrapper in wrappers.items():
        rows = []
        for global_step in inputs["global_steps"]:
            wrapper.global_step = int(global_step)
            rows.append(
                np.broadcast_to(wrapper.current_eps(inputs["local_steps"]), inputs["local_steps"].shape)
            )
        out[f"out/eps_{name}"] = np.stack(rows).astype(np.float64)
    return out


def run_rollout(
    case: dict, inputs: dict[str, np.ndarray], precision: str, draw: int
) -> dict[str, np.ndarray]:
    """Step-by-step rollout states, probabilities and values with staggered episode resets (Discrete actions)."""
    agent = build_agent(case, draw)
    out = weights_of(agent)
    agent.eval()
    steps, rows = inputs["obs"].shape[:2]
    hidden = agent.init_hidden_state(rows, torch.device("cpu"))
    states, probs, values, actions = [], [], [], []
    with torch.no_grad():
        for t in range(steps):
            obs = {"observation": torch.from_numpy(inputs["obs"][t][:, None])}
            rl2 = torch.from_numpy(inputs["rl2s"][t][:, None])
            time = torch.from_numpy(inputs["time_idxs"][t][:, None, None])
            with forward_precision(precision):
                state, hidden = agent.get_state_embedding(obs, rl2, time, hidden_state=hidden)
                dist = agent.actor(state)
                p = dist.probs  # (N, 1, G, A)
                value = agent.critics(state, p.unsqueeze(0))
            values.append(as_numpy(value))
            states.append(as_numpy(state[:, 0]))
            probs.append(as_numpy(p[:, 0, -1]))
            actions.append(as_numpy(p[:, 0, -1].argmax(-1)))
            hidden = agent.reset_hidden_state(hidden, inputs["dones"][t])
    out["out/states"] = np.stack(states)
    out["out/probs"] = np.stack(probs)
    out["out/values"] = np.stack(values)
    out["out/actions"] = np.stack(actions)
    return out


RUNNERS = {
    "update": run_update,
    "popart": run_popart,
    "twohot": run_twohot,
    "epsilon": run_epsilon,
    "rollout": run_rollout,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--precision", choices=("no", "bf16"), default="no")
    parser.add_argument("--draw", type=int, default=0, help="0: the built weights; N > 0: perturbed, seed N")
    parser.add_argument("--out", default="amago_ref", help="folder under WORK_DIR for the outputs")
    args = parser.parse_args()
    work = args.work
    install_deterministic_draws()
    cases = json.loads((work / "cases.json").read_text())
    target = work / args.out
    target.mkdir(exist_ok=True)
    for case in cases:
        with np.load(work / "inputs" / f"{case['name']}.npz") as data:
            inputs = {k: data[k] for k in data.files}
        try:
            result = RUNNERS[case["kind"]](case, inputs, args.precision, args.draw)
        except Exception as exc:  # one case failing (an AMAGO bug) must not hide the others
            result = {"error": np.asarray(f"{type(exc).__name__}: {exc}")}
        np.savez(target / f"{case['name']}.npz", **result)
        status = "error: " + str(result["error"]) if "error" in result else "ok"
        suffix = "" if args.out == "amago_ref" else f" ({args.out})"
        print(f"AMAGO {case['name']}{suffix}: {status}", flush=True)


if __name__ == "__main__":
    main()
