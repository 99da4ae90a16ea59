"""The parity cases and amago's side of them: what ``bench/parity_vs_amago.py`` and the fixture tests share.

A case names a configuration both libraries build (sizes, action space, agent options). For each case the
harness makes inputs (:func:`make_inputs`), AMAGO v3.3.0 computes its outputs in its own venv
(``bench/parity_amago_ref.py``), and :func:`compare` computes amago's outputs on AMAGO's weights and the same
inputs and returns one row per compared quantity. The fixture (``fixtures/amago-3.3.0.npz``) holds the inputs,
AMAGO's online weights and AMAGO's outputs: numbers AMAGO produced, so the tests need no AMAGO installed.

Randomness is made deterministic on both sides in the same way (``bench/parity_noise.py``): policy noise is a
function of the policy mean, REDQ subsets a fixed pattern.

``compare(..., precision="bf16")`` runs amago's forward under the bf16 autocast its experiment loop uses for the
update (``torch.autocast(device_type="cpu", dtype=torch.bfloat16)`` around the loss, the backward outside it),
with the update's discrete decisions (mode picks, the binary advantage filter) replayed from an fp32 run of the
same weights (``parity_noise.DecisionTape``); inside :func:`recording`, every elementwise comparison also keeps both
arrays, so ``bench/parity_vs_amago.py --precision bf16`` can set amago's bf16 numbers against AMAGO's bf16 and
AMAGO's fp32 ones.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # parity_noise: one definition of the shared randomness
import parity_noise  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "amago-3.3.0.npz"
"""Inputs, AMAGO's weights and AMAGO's outputs of every case (written by ``parity_vs_amago.py --record``)."""

ATOL, RTOL = 1e-5, 1e-4
"""Float32 tolerance: ``|amago - AMAGO| <= ATOL + RTOL * |AMAGO|`` elementwise."""

OBS_DIM, BATCH, LENGTH = 5, 3, 7
TSTEP = {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16, "normalize_inputs": True}
IMAGE = [40, 40, 3]
NATURE_CNN = {"kind": "cnn", "cnn_type": "nature", "img_features": 16, "d_output": 16}
IMPALA_CNN = {
    "kind": "cnn",
    "cnn_type": "impala",
    "impala_block_depths": [4, 8, 8],
    "img_features": 16,
    "d_output": 16,
}
HEADS = {"d_hidden": 16, "n_layers": 2}
FF = {"kind": "ff", "d_model": 16, "n_layers": 1}
GRU = {"kind": "rnn", "d_hidden": 16, "n_layers": 1, "d_output": 16}
TRANSFORMER = {
    "kind": "transformer",
    "d_model": 16,
    "n_heads": 2,
    "d_ff": 32,
    "n_layers": 2,
    "dropout_ff": 0.0,
    "dropout_emb": 0.0,
}


def _update(name: str, action: dict, traj: dict, **extra: Any) -> dict[str, Any]:
    case = {
        "name": name,
        "kind": "update",
        "agent": "agent",
        "obs_dim": OBS_DIM,
        "action": action,
        "tstep": TSTEP,
        "traj": traj,
        "heads": HEADS,
        "max_seq_len": LENGTH + 1,
        "seed": 3,
    }
    case.update(extra)
    return case


CASES: list[dict[str, Any]] = [
    _update("agent-discrete-ff", {"type": "discrete", "n": 3}, FF),
    # Actor outputs scaled up: the rollout gamma's top probability passes clip_high = 0.99.
    _update("agent-discrete-clipped-gru", {"type": "discrete", "n": 3}, GRU, actor_out_scale=60.0),
    _update("agent-discrete-nstep3-ff", {"type": "discrete", "n": 4}, FF, agent_kwargs={"n_step": 3}),
    _update(
        "agent-tanh-gaussian-transformer",
        {"type": "box", "dim": 2},
        TRANSFORMER,
        agent_kwargs={"num_actions_for_value_in_critic_loss": 2, "num_actions_for_value_in_actor_loss": 2},
    ),
    # Buffer actions at the bounds (offline data often has them): the GMM's log-probability there.
    _update(
        "agent-gmm-ff",
        {"type": "box", "dim": 2},
        FF,
        dist="gmm",
        agent_kwargs={"online_coeff": 0.0},
        saturate=True,
    ),
    # Image observations: AMAGO's CNN timestep encoder, Nature-ish and IMPALA-ish backbones.
    _update("agent-discrete-nature-cnn", {"type": "discrete", "n": 3}, FF, tstep=NATURE_CNN, image=IMAGE),
    _update("agent-tanh-gaussian-impala-cnn", {"type": "box", "dim": 2}, GRU, tstep=IMPALA_CNN, image=IMAGE),
    _update(
        "agent-multibinary-ff",
        {"type": "multibinary", "dim": 4},
        FF,
        dist="multibinary",
        agent_kwargs={"online_coeff": 0.0},
    ),
    _update(
        "multitask-tanh-gaussian-ff",
        {"type": "box", "dim": 2},
        FF,
        agent="multitask",
        bins={"min_return": -100.0, "max_return": 100.0, "output_bins": 32},
    ),
    _update(
        "multitask-tanh-gaussian-online-gru",
        {"type": "box", "dim": 2},
        GRU,
        agent="multitask",
        bins={"min_return": -100.0, "max_return": 100.0, "output_bins": 32},
        agent_kwargs={"online_coeff": 0.5, "n_step": 2},
    ),
    _update(
        "multitask-discrete-ff",
        {"type": "discrete", "n": 3},
        FF,
        agent="multitask",
        bins={"min_return": -100.0, "max_return": 100.0, "output_bins": 32},
    ),
    {"name": "popart-500-updates", "kind": "popart", "gammas": 7, "steps": 500},
    {
        "name": "two-hot-labels",
        "kind": "twohot",
        "bins": {"min_return": -1000.0, "max_return": 1000.0, "output_bins": 64},
    },
    {
        "name": "epsilon-schedules",
        "kind": "epsilon",
        "egreedy": {"eps_start": 1.0, "eps_end": 0.05, "steps_anneal": 1000},
        "bilevel": {
            "rollout_horizon": 50,
            "eps_start_start": 1.0,
            "eps_start_end": 0.05,
            "eps_end_start": 0.8,
            "eps_end_end": 0.01,
            "steps_anneal": 1000,
        },
    },
    {
        "name": "rollout-gru",
        "kind": "rollout",
        "agent": "agent",
        "obs_dim": OBS_DIM,
        "action": {"type": "discrete", "n": 3},
        "tstep": TSTEP,
        "traj": GRU,
        "heads": HEADS,
        "max_seq_len": 6,
        "seed": 5,
    },
    {
        "name": "rollout-transformer",
        "kind": "rollout",
        "agent": "agent",
        "obs_dim": OBS_DIM,
        "action": {"type": "discrete", "n": 3},
        "tstep": TSTEP,
        "traj": TRANSFORMER,
        "heads": HEADS,
        "max_seq_len": 6,  # rollouts of 14 steps: the KV cache slides
        "seed": 5,
    },
]


# ------------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------------


def action_dim(case: dict[str, Any]) -> int:
    """Buffer action size of a case."""
    action = case["action"]
    return int(action["n"] if action["type"] == "discrete" else action["dim"])


def _buffer_actions(case: dict[str, Any], rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    dim = action_dim(case)
    kind = case["action"]["type"]
    if kind == "discrete":
        return np.eye(dim, dtype=np.float32)[rng.integers(0, dim, shape)]
    if kind == "multibinary":
        return rng.integers(0, 2, (*shape, dim)).astype(np.float32)
    actions = rng.uniform(-0.95, 0.95, (*shape, dim)).astype(np.float32)
    if case.get("saturate"):
        actions[0, :2] = [[1.0, -1.0], [-1.0, 1.0]]
        actions[1, 1, 0] = 1.0
    return actions


def make_inputs(case: dict[str, Any]) -> dict[str, np.ndarray]:
    """Seeded inputs of a case (numpy): a batch, target sequences, grids or rollouts, by the case's kind."""
    rng = np.random.default_rng(sum(map(ord, case["name"])))
    kind = case["kind"]
    if kind == "update":
        steps = LENGTH - 1
        actions = _buffer_actions(case, rng, (BATCH, steps))
        rews = rng.normal(0.1, 0.3, (BATCH, steps, 1)).astype(np.float32)
        rews *= rng.random((BATCH, steps, 1)) < 0.5  # sparse
        dones = np.zeros((BATCH, steps, 1), dtype=bool)
        dones[1, 3] = True  # row 1 terminates after transition 3 (then a new episode's steps follow)
        mask = np.ones((BATCH, LENGTH), dtype=bool)
        mask[0, 5:] = False  # row 0 is padded after 5 observations
        rl2s = np.zeros((BATCH, LENGTH, 1 + action_dim(case)), dtype=np.float32)
        rl2s[:, 1:, 0] = rews[..., 0]
        rl2s[:, 1:, 1:] = actions
        time_idxs = np.tile(np.arange(LENGTH, dtype=np.int64) + 2, (BATCH, 1))[..., None]
        if case.get("image"):
            obs = rng.integers(0, 256, (BATCH, LENGTH, *case["image"]), dtype=np.uint8)
        else:
            obs = rng.normal(0.0, 1.5, (BATCH, LENGTH, OBS_DIM)).astype(np.float32)
        return {
            "obs": obs,
            "rl2s": rl2s,
            "time_idxs": time_idxs,
            "rews": rews,
            "dones": dones,
            "actions": actions,
            "mask": mask,
        }
    if kind == "popart":
        shape = (case["steps"], 2, 4, 1, case["gammas"], 1)
        targets = rng.normal(0.1, 0.3, shape) * (rng.random(shape) < 0.3)
        targets[200:] *= 40.0  # the scale moves late in training
        masks = np.ones(shape, dtype=bool)
        masks[:, 1, 2:] = False
        return {"targets": targets.astype(np.float32), "masks": masks}
    if kind == "twohot":
        values = np.concatenate(
            [rng.normal(0, 30, 40), rng.normal(0, 800, 20), [0.0, -1000.0, 1000.0, 5000.0, -3e4]]
        )
        logits = rng.normal(0, 2, (12, case["bins"]["output_bins"]))
        return {"values": values.astype(np.float32)[:, None], "logits": logits.astype(np.float32)}
    if kind == "epsilon":
        return {
            "global_steps": np.array([0, 1, 10, 250, 500, 999, 1000, 1001, 5000], dtype=np.int64),
            "local_steps": np.arange(0, 50, dtype=np.int64),
        }
    if kind == "rollout":
        steps, rows = 14, 4
        dones = np.zeros((steps, rows), dtype=bool)
        dones[3, 0] = dones[8, 0] = dones[5, 1] = dones[11, 2] = True  # row 3 never resets: its cache slides
        time_idxs = np.zeros((steps, rows), dtype=np.int64)
        for t in range(1, steps):
            time_idxs[t] = np.where(dones[t - 1], 0, time_idxs[t - 1] + 1)
        dim = action_dim(case)
        rl2s = np.zeros((steps, rows, 1 + dim), dtype=np.float32)
        rl2s[1:, :, 0] = rng.normal(0, 1, (steps - 1, rows))
        rl2s[1:, :, 1:] = np.eye(dim, dtype=np.float32)[rng.integers(0, dim, (steps - 1, rows))]
        rl2s[1:][dones[:-1]] = 0.0  # a new episode's first step has no previous action or reward
        return {
            "obs": rng.normal(0, 1, (steps, rows, OBS_DIM)).astype(np.float32),
            "rl2s": rl2s,
            "time_idxs": time_idxs,
            "dones": dones,
        }
    msg = f"unknown parity case kind {kind!r}"
    raise ValueError(msg)


# ------------------------------------------------------------------------------------------------------
# amago's side
# ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One compared quantity: the largest differences and whether they are within float tolerance."""

    case: str
    quantity: str
    max_abs: float
    max_rel: float
    ok: bool
    note: str = ""
    documented: bool = False
    """A difference amago keeps on purpose (the note says why; docs/migration-from-amago.md lists it)."""


@dataclass(frozen=True)
class Pair:
    """Both sides of one elementwise comparison, as float64 (kept by :func:`recording`)."""

    case: str
    quantity: str
    ours: np.ndarray
    theirs: np.ndarray


_recorded: ContextVar[list[Pair] | None] = ContextVar("parity_recorded_pairs", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[Pair]]:
    """Collects every pair of arrays :func:`compare` checks (each gradient too, not only the rows it returns)."""
    pairs: list[Pair] = []
    token = _recorded.set(pairs)
    try:
        yield pairs
    finally:
        _recorded.reset(token)


def forward_precision(precision: str) -> contextlib.AbstractContextManager[Any]:
    """The autocast amago's experiment loop puts around the update's forward (``"bf16"``); nothing in fp32."""
    if precision == "bf16":
        return torch.autocast(device_type="cpu", dtype=torch.bfloat16)
    if precision != "no":
        msg = f"parity harness: precision {precision!r} is not compared; use 'no' or 'bf16'."
        raise ValueError(msg)
    return contextlib.nullcontext()


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    """A tensor as numpy: bf16/fp16 (which numpy lacks) widened to fp32, every other dtype as it is."""
    tensor = tensor.detach()
    if tensor.dtype in (torch.bfloat16, torch.float16):
        tensor = tensor.float()
    return tensor.numpy()


def _row(case: str, quantity: str, ours: Any, theirs: Any) -> Row:
    if isinstance(ours, torch.Tensor):
        ours = _numpy(ours)
    a = np.asarray(ours, dtype=np.float64)
    b = np.asarray(theirs, dtype=np.float64)
    pairs = _recorded.get()
    if pairs is not None:
        pairs.append(Pair(case, quantity, a, b))
    if a.shape != b.shape:
        return Row(case, quantity, math.inf, math.inf, False, f"shapes differ: {a.shape} vs AMAGO {b.shape}")
    if a.size == 0:
        return Row(case, quantity, 0.0, 0.0, True)
    diff = np.abs(a - b)
    rel = diff / np.maximum(np.abs(b), 1e-12)
    ok = bool(np.all(diff <= ATOL + RTOL * np.abs(b)))
    return Row(case, quantity, float(diff.max()), float(rel.max()), ok)


def _spaces(case: dict[str, Any]) -> tuple[spaces.Dict, spaces.Box, spaces.Space]:
    dim = action_dim(case)
    kind = case["action"]["type"]
    if kind == "discrete":
        action: spaces.Space = spaces.Discrete(dim)
    elif kind == "multibinary":
        action = spaces.MultiBinary(dim)
    else:
        action = spaces.Box(-1.0, 1.0, (dim,))
    if case.get("image"):
        image = spaces.Box(0, 255, tuple(case["image"]), dtype=np.uint8)
        obs = spaces.Dict({"observation": image})
    else:
        obs = spaces.Dict({"observation": spaces.Box(-5.0, 5.0, (case["obs_dim"],))})
    return obs, spaces.Box(-np.inf, np.inf, (1 + dim,)), action


def agent_config(case: dict[str, Any]) -> dict[str, Any]:
    """amago's agent config for a case (AMAGO's keyword names are amago's field names)."""
    config: dict[str, Any] = {
        "kind": case["agent"],
        "actor": dict(case["heads"]),
        "critic": dict(case["heads"]),
        **case.get("agent_kwargs", {}),
    }
    if case.get("dist") == "gmm":
        config["continuous_dist"] = {"type": "gmm"}
    if case["agent"] == "multitask":
        config.update(case["bins"])
    return config


def build_amago_agent(case: dict[str, Any]) -> torch.nn.Module:
    """amago's agent for a case, built through the installed plugins."""
    from amago_core.plugins import registries

    reg = registries()
    obs, rl2, action = _spaces(case)
    traj = dict(case["traj"])
    return reg.agents.build(
        agent_config(case),
        obs_space=obs,
        rl2_space=rl2,
        action_space=action,
        max_seq_len=case["max_seq_len"],
        tstep_encoder=reg.tstep_encoders.builder(dict(case["tstep"])),
        traj_encoder=reg.traj_encoders.builder(traj),
    )


def load_amago_weights(agent: torch.nn.Module, reference: dict[str, np.ndarray]) -> None:
    """Loads AMAGO's weights (as the fixture stores them: online networks only) into amago's agent."""
    agent.load_state_dict(mapped_weights(agent, reference), strict=True)


_tape: ContextVar[parity_noise.DecisionTape | None] = ContextVar("parity_decision_tape", default=None)


def _decide(computed: torch.Tensor) -> torch.Tensor:
    tape = _tape.get()
    return computed if tape is None else tape.decide(computed)


@contextlib.contextmanager
def _using(tape: parity_noise.DecisionTape | None) -> Iterator[None]:
    token = _tape.set(tape)
    try:
        yield
    finally:
        _tape.reset(token)


def _pin_filter(agent: Any) -> None:
    """Routes the agent's advantage filter through the decision tape (the binary filter: a pure decision)."""
    from amago_agents.specs import BinaryFilterConfig

    if isinstance(agent.config.fbc_filter, BinaryFilterConfig):
        original = agent.fbc_filter
        agent.fbc_filter = lambda adv: _decide(original(adv))


def _record_decisions(
    case: dict[str, Any], inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray]
) -> parity_noise.DecisionTape:
    """The decisions of an fp32 update of a fresh agent on the same weights and batch (no backward)."""
    agent = build_amago_agent(case)
    load_amago_weights(agent, ref)
    agent.train()
    _pin_filter(agent)
    tape = parity_noise.DecisionTape()
    with deterministic_draws(), _using(tape):
        agent.loss(_torch_batch(inputs))
    tape.replaying = True
    return tape


@contextlib.contextmanager
def deterministic_draws() -> Iterator[None]:
    """amago's random draws replaced by the harness's deterministic ones (see ``bench/parity_noise.py``)."""
    from amago_agents import distributions

    def gmm_sample(self: Any) -> torch.Tensor:
        pick = _decide(self.logits.argmax(-1))[..., None, None]
        pick = pick.expand(*self.logits.shape[:-1], 1, self.loc.shape[-1])
        loc = self.loc.gather(-2, pick).squeeze(-2)
        std = self.std.gather(-2, pick).squeeze(-2)
        return torch.tanh(loc + parity_noise.noise_for(loc) * std).detach()

    def bernoulli_sample(self: Any) -> torch.Tensor:
        return _decide(self.logits > 0).to(self.logits.dtype).detach()

    def one_hot_sample(self: Any) -> torch.Tensor:
        return (
            torch.nn.functional.one_hot(_decide(self.probs.argmax(-1)), self.probs.shape[-1])
            .to(self.probs.dtype)
            .detach()
        )

    patches = [
        (torch, "randn_like", parity_noise.noise_for),
        (torch, "randint", parity_noise.fake_randint),
        (distributions.TanhGMM, "sample", gmm_sample),
        (distributions.IndependentBernoulli, "sample", bernoulli_sample),
        (distributions.ClippedCategorical, "sample_one_hot", one_hot_sample),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def _torch_batch(inputs: dict[str, np.ndarray]) -> Any:
    from amago_core.data.batch import Batch

    return Batch(
        obs={"observation": inputs["obs"]},
        rl2s=inputs["rl2s"],
        time_idxs=inputs["time_idxs"],
        rews=inputs["rews"],
        dones=inputs["dones"],
        actions=inputs["actions"],
        mask=inputs["mask"],
    ).to_torch()


def _compare_update(
    case: dict[str, Any], inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray], precision: str
) -> list[Row]:
    from amago_agents import agent as agent_module
    from amago_agents import multitask as multitask_module

    name = case["name"]
    tape = None if precision == "no" else _record_decisions(case, inputs, ref)
    agent = build_amago_agent(case)
    load_amago_weights(agent, ref)
    agent.train()
    if tape is not None:
        _pin_filter(agent)
    recorded: dict[str, torch.Tensor] = {}
    module = multitask_module if case["agent"] == "multitask" else agent_module
    original = module.nstep_targets

    def recording(*args: Any, **kwargs: Any) -> torch.Tensor:
        out = original(*args, **kwargs)
        recorded["targets"] = out.detach().clone()
        return out

    module.nstep_targets = recording
    try:
        with deterministic_draws(), _using(tape):
            with forward_precision(precision):  # as the experiment's training caster: the forward only
                loss, summary = agent.loss(_torch_batch(inputs))
            loss.backward()
    finally:
        module.nstep_targets = original
    pairs = _recorded.get()
    if tape is not None and pairs is not None:
        theirs = ref.get("out/decision_flips", np.array([np.nan, np.nan]))
        pairs.append(Pair(name, "decisions bf16 flipped", np.array([tape.flips, tape.total], float), theirs))

    rows = [
        _row(name, "loss", loss.detach(), ref["out/loss"]),
        _row(name, "critic loss", summary["Critic Loss"], ref["out/critic_loss"]),
        _row(name, "actor loss", summary["Actor Loss"], ref["out/actor_loss"]),
    ]
    valid = inputs["mask"][:, 1:]
    if "out/td_target" in ref:
        theirs = ref["out/td_target"][:, :, 0]  # (B, T, G, 1)
        rows.append(_row(name, "n-step targets", _numpy(recorded["targets"])[valid], theirs[valid]))
    # Gradients: AMAGO's, renamed and reshaped by the same mapping as its weights (zeros where none).
    grads = {k[len("grad/") :]: v for k, v in ref.items() if k.startswith("grad/")}
    as_weights = {
        key: grads.get(key[len("weight/") :], np.zeros_like(value))
        for key, value in ref.items()
        if key.startswith("weight/")
    }
    mapped = mapped_weights(agent, as_weights)
    worst: Row | None = None
    for param_name, param in agent.named_parameters():
        if param.grad is None:
            continue
        row = _row(name, f"grad {param_name}", param.grad.numpy(), mapped[param_name].numpy())
        if worst is None or (not row.ok and worst.ok) or (row.ok == worst.ok and row.max_abs > worst.max_abs):
            worst = row
        if not row.ok:
            rows.append(row)
    if worst is not None and worst.ok:
        rows.append(
            Row(name, f"every gradient (worst: {worst.quantity[5:]})", worst.max_abs, worst.max_rel, True)
        )
    for stat in ("mu", "nu", "w", "b"):
        rows.append(
            _row(name, f"PopArt {stat}", getattr(agent.popart, stat).detach(), ref[f"out/popart_{stat}"])
        )
    rows += _initialisation_rows(case, mapped_weights(agent, ref))
    norm = getattr(agent.tstep_encoder, "input_norm", None)
    if norm is not None:
        rows.append(_row(name, "input norm mu", norm.mu, ref["out/input_norm_mu"]))
        rows.append(_row(name, "input norm nu", norm.nu, ref["out/input_norm_nu"]))
    return rows


def mapped_weights(agent: torch.nn.Module, reference: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """AMAGO's initial weights under amago's names (the fixture keeps the online networks only)."""
    from amago.from_amago.weights import amago_state_dict_to_amago

    weights = {
        k[len("weight/") :]: torch.from_numpy(v) for k, v in reference.items() if k.startswith("weight/")
    }
    for online, copies in (
        ("critics", ("target_critics", "maximized_critics")),
        ("actor", ("target_actor",)),
    ):
        for key in [k for k in weights if k.startswith(online + ".")]:
            for copy_name in copies:
                weights.setdefault(copy_name + key[len(online) :], weights[key].clone())
    return amago_state_dict_to_amago(weights, agent)


def _initialisation_rows(case: dict[str, Any], theirs: dict[str, torch.Tensor]) -> list[Row]:
    """amago's freshly initialised parameters against AMAGO's, by their spread (the draws differ, the
    distributions must not): the standard deviation of each trainable tensor of 64 or more entries, within
    ``0.1 + 3 / sqrt(n)`` relative; constant tensors (norm gains, σReparam gains) must be equal."""
    torch.manual_seed(case["seed"] + 1)
    fresh = build_amago_agent(case)
    rows: list[Row] = []
    worst_ratio, worst_name = 0.0, ""
    for param_name, param in fresh.named_parameters():
        if not param_name.startswith(("tstep_encoder.", "traj_encoder.", "actor.", "critics.")):
            continue
        if case.get("actor_out_scale") and param_name.startswith("actor."):
            continue  # the case scales AMAGO's actor outputs on purpose
        ours, ref_values = param.detach().double(), theirs[param_name].double()
        if ours.numel() < 2 or float(ref_values.std()) == 0.0:
            if not torch.equal(ours, ref_values):
                rows.append(_row(case["name"], f"initial {param_name}", ours.numpy(), ref_values.numpy()))
            continue
        if ours.numel() < 64:
            continue
        ratio = float(ours.std() / ref_values.std())
        allowed = 0.1 + 3.0 / math.sqrt(ours.numel())
        if abs(ratio - 1.0) > allowed:
            rows.append(
                Row(
                    case["name"],
                    f"initial std of {param_name}",
                    abs(ratio - 1.0),
                    abs(ratio - 1.0),
                    False,
                    f"std ratio amago/AMAGO {ratio:.2f} (allowed ±{allowed:.2f})",
                )
            )
        elif abs(ratio - 1.0) > worst_ratio:
            worst_ratio, worst_name = abs(ratio - 1.0), param_name
    if not rows:
        rows.append(
            Row(
                case["name"],
                f"initial weight spread (worst: {worst_name})",
                worst_ratio,
                worst_ratio,
                True,
                "relative std difference",
            )
        )
    return rows


def _compare_popart(
    case: dict[str, Any], inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray], precision: str
) -> list[Row]:
    from amago_agents.popart import PopArt

    popart = PopArt(case["gammas"])
    history: dict[str, list[np.ndarray]] = {k: [] for k in ("mu", "nu", "w", "b", "sigma")}
    targets = torch.from_numpy(inputs["targets"])[:, :, :, 0]  # (steps, B, T, G, 1)
    masks = torch.from_numpy(inputs["masks"])[:, :, :, 0]
    for step in range(targets.shape[0]):
        with forward_precision(precision):
            popart.update_stats(targets[step], masks[step])
        for stat in history:
            history[stat].append(getattr(popart, stat).detach().clone().numpy())
    return [
        _row(case["name"], f"PopArt {stat} (every update)", np.stack(v), ref[f"out/{stat}"])
        for stat, v in history.items()
    ]


def _compare_twohot(
    case: dict[str, Any], inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray], precision: str
) -> list[Row]:
    from amago_agents.twohot import ValueBins

    bins = case["bins"]
    values = inputs["values"][:, 0]
    inside = (values >= bins["min_return"]) & (values <= bins["max_return"])
    rows = []
    for label_type in ("twohot", "hlgauss"):
        value_bins = ValueBins(
            bins["min_return"], bins["max_return"], bins["output_bins"], label_type=label_type
        )
        with forward_precision(precision):
            labels = _numpy(value_bins.to_labels(torch.from_numpy(values)))
            bin_values = value_bins.logits_to_values(torch.from_numpy(inputs["logits"]))
        theirs = ref[f"out/labels_{label_type}"]
        if label_type == "twohot":
            rows.append(_row(case["name"], "twohot labels", labels, theirs))
        else:
            rows.append(
                _row(case["name"], "hlgauss labels (targets inside the bins)", labels[inside], theirs[inside])
            )
            beyond = _row(
                case["name"], "hlgauss labels (targets beyond the bins)", labels[~inside], theirs[~inside]
            )
            rows.append(
                Row(
                    beyond.case,
                    beyond.quantity,
                    beyond.max_abs,
                    beyond.max_rel,
                    True,
                    "amago clamps a target into the bins (as two-hot does); AMAGO's labels vanish there",
                    documented=not beyond.ok,
                )
            )
        rows.append(
            _row(
                case["name"],
                f"{label_type} bin values",
                _numpy(bin_values)[:, None],
                ref[f"out/values_{label_type}"],
            )
        )
    return rows


def _compare_epsilon(
    case: dict[str, Any], inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray], precision: str
) -> list[Row]:
    del precision  # numpy schedules: no autocast reaches them
    import gymnasium as gym

    from amago_core.rollout.env import AMAGOEnv
    from amago_envs.exploration.specs import BilevelConfig, EGreedyConfig
    from amago_envs.exploration.wrappers import BilevelEpsilonGreedy, EpsilonGreedy

    env = AMAGOEnv(gym.make("CartPole-v1"), env_name="parity")
    wrappers = {
        "egreedy": EpsilonGreedy(env, EGreedyConfig(randomize_eps=False, **case["egreedy"])),
        "bilevel": BilevelEpsilonGreedy(env, BilevelConfig(randomize_eps=False, **case["bilevel"])),
    }
    rows = []
    for name, wrapper in wrappers.items():
        grid = []
        for global_step in inputs["global_steps"]:
            wrapper.global_step = int(global_step)
            grid.append(np.broadcast_to(wrapper.epsilon(inputs["local_steps"]), inputs["local_steps"].shape))
        rows.append(_row(case["name"], f"{name} epsilon per step", np.stack(grid), ref[f"out/eps_{name}"]))
    return rows


def _compare_rollout(
    case: dict[str, Any], inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray], precision: str
) -> list[Row]:
    agent = build_amago_agent(case)
    load_amago_weights(agent, ref)
    agent.eval()
    steps, rows_n = inputs["obs"].shape[:2]
    hidden = agent.init_hidden_state(rows_n, "cpu")
    states, probs, values = [], [], []
    with torch.no_grad():
        for t in range(steps):
            obs = {"observation": torch.from_numpy(inputs["obs"][t][:, None])}
            rl2 = torch.from_numpy(inputs["rl2s"][t][:, None])
            time = torch.from_numpy(inputs["time_idxs"][t][:, None, None])
            with forward_precision(precision):
                state, hidden = agent.get_state_embedding(obs, rl2, time, hidden)
                policy = agent.actor(state)
                p = policy.probs
                value = agent.critics(state, p.unsqueeze(0))
            values.append(_numpy(value))
            states.append(_numpy(state[:, 0]))
            probs.append(_numpy(p[:, 0, -1]))
            hidden = agent.reset_hidden_state(hidden, inputs["dones"][t])
    name = case["name"]
    ours_probs = np.stack(probs)
    actions_equal = bool(np.array_equal(ours_probs.argmax(-1), ref["out/actions"]))
    pairs = _recorded.get()
    if pairs is not None:
        pairs.append(
            Pair(
                name,
                "argmax actions per step",
                ours_probs.argmax(-1).astype(float),
                ref["out/actions"].astype(float),
            )
        )
    return [
        _row(name, "states per step", np.stack(states), ref["out/states"]),
        _row(name, "action probabilities per step", ours_probs, ref["out/probs"]),
        _row(name, "critic values per step", np.stack(values), ref["out/values"]),
        Row(name, "argmax actions per step", 0.0 if actions_equal else math.inf, 0.0, actions_equal),
    ]


COMPARE = {
    "update": _compare_update,
    "popart": _compare_popart,
    "twohot": _compare_twohot,
    "epsilon": _compare_epsilon,
    "rollout": _compare_rollout,
}


def compare(
    case: dict[str, Any],
    inputs: dict[str, np.ndarray],
    reference: dict[str, np.ndarray],
    precision: str = "no",
) -> list[Row]:
    """amago's outputs of ``case`` against AMAGO's ``reference`` (its weights and outputs), one row each.

    Args:
        case: one of :data:`CASES`.
        inputs: the case's inputs (:func:`make_inputs`).
        reference: AMAGO's weights and outputs for them.
        precision: ``"no"`` (fp32) or ``"bf16"``: amago's forward under the experiment loop's bf16 autocast.

    Returns:
        One row per compared quantity, judged by the float32 tolerance.
    """
    if "error" in reference:
        expected = case.get("amago_fails")
        note = f"{reference['error']}" if expected is None else expected
        return [
            Row(case["name"], "AMAGO raised", math.nan, math.nan, expected is not None, note, documented=True)
        ]
    if case.get("amago_fails"):
        return [Row(case["name"], "AMAGO no longer raises", math.nan, math.nan, False, case["amago_fails"])]
    torch.manual_seed(0)
    try:
        return COMPARE[case["kind"]](case, inputs, reference, precision)
    except Exception as exc:  # a case amago cannot even build or load is a difference too, reported as a row
        return [Row(case["name"], "amago raised", math.inf, math.inf, False, f"{type(exc).__name__}: {exc}")]


# ------------------------------------------------------------------------------------------------------
# The fixture: one npz, keys "<case>/<input|ref>/<name>"
# ------------------------------------------------------------------------------------------------------


def online_only(reference: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A reference without AMAGO's target-network weights (copies of the online ones at build time)."""
    copies = ("weight/target_critics.", "weight/maximized_critics.", "weight/target_actor.")
    return {k: v for k, v in reference.items() if not k.startswith(copies)}


def write_fixture(
    path: Path, inputs: dict[str, dict[str, np.ndarray]], references: dict[str, dict[str, np.ndarray]]
) -> None:
    """Writes every case's inputs and AMAGO's reference into one compressed npz."""
    flat: dict[str, np.ndarray] = {}
    for name, case_inputs in inputs.items():
        flat.update({f"{name}/input/{k}": v for k, v in case_inputs.items()})
        flat.update({f"{name}/ref/{k}": v for k, v in online_only(references[name]).items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **flat)


def read_fixture(path: Path = FIXTURE) -> dict[str, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """``{case: (inputs, reference)}`` from a fixture file."""
    out: dict[str, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = {}
    with np.load(path) as data:
        for key in data.files:
            name, part, field = key.split("/", 2)
            inputs, reference = out.setdefault(name, ({}, {}))
            (inputs if part == "input" else reference)[field] = data[key]
    return out
