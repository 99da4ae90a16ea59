"""Parity cases of the AMAGO components amago-agents and the optimiser added later (issue 28): ``AdamWRel``,
the two-hot critics' ``init_value`` and discrete actions treated like continuous ones.

They follow ``parity_cases.py`` (whose helpers they reuse): ``bench/agents_parity_vs_amago.py`` makes each case's
inputs (:func:`make_inputs`), AMAGO v3.3.0 computes its outputs in its own venv (``bench/agents_amago_ref.py``),
and :func:`compare` returns amago's rows against them. The fixture (``fixtures/agents_amago-3.3.0.npz``) holds the
inputs, AMAGO's weights and AMAGO's outputs, so the tests (``tests/agents/test_against_amago_components.py``,
``tests/experiment/test_adamw_rel.py``) need no AMAGO installed.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / "bench")]  # parity_cases; agents_parity_noise
import agents_parity_noise  # noqa: E402
import parity_cases  # noqa: E402
from parity_cases import Row, _row  # noqa: E402

FIXTURE = HERE / "fixtures" / "agents_amago-3.3.0.npz"
"""Inputs, AMAGO's weights and AMAGO's outputs of every case (``agents_parity_vs_amago.py --record``)."""

ADAMW_REL_ATOL, ADAMW_REL_RTOL = 1e-7, 1e-6
"""Parameter trajectories of the optimiser: the same float32 arithmetic on both sides, so far below the
network cases' tolerance (``parity_cases.ATOL/RTOL``)."""

BINS = {"min_return": -100.0, "max_return": 100.0, "output_bins": 64}

GAMMAS = 7
"""Discount factors of every agent case: AMAGO's six default multigammas and ``gamma`` (both sides' defaults)."""


def _multitask(name: str, action: dict[str, Any], init_value: float, bins: dict[str, Any]) -> dict[str, Any]:
    return parity_cases._update(
        name,
        action,
        parity_cases.FF,
        agent="multitask",
        bins=bins,
        kind="init_value",
        init_value=init_value,
        seed=11,
    )


CASES: list[dict[str, Any]] = [
    # Three resets in 10 updates; one parameter has no gradient at first, another misses one update.
    {
        "name": "adamw-rel",
        "kind": "adamw_rel",
        "reset_interval": 3,
        "steps": 10,
        "lr": 1e-2,
        "weight_decay": 1e-3,
        "shapes": [[4, 3], [3], [2]],
        "first_step": [0, 0, 2],
        "skipped": [[], [5], []],
    },
    _multitask("init-value-symlog", {"type": "box", "dim": 2}, 12.5, BINS),
    _multitask("init-value-discrete", {"type": "discrete", "n": 3}, -40.0, BINS),
    _multitask(
        "init-value-raw-bins",
        {"type": "box", "dim": 2},
        -2.0,
        {"min_return": -10.0, "max_return": 30.0, "output_bins": 48, "use_symlog": False},
    ),
    # 5 bins from the top of 32: AMAGO warns that the bump is cut off, and so does amago.
    _multitask("init-value-near-edge", {"type": "box", "dim": 2}, 90.0, {**BINS, "output_bins": 32}),
    # Outside the support: AMAGO raises, amago refuses the config.
    _multitask("init-value-outside", {"type": "box", "dim": 2}, 150.0, BINS),
    # Agent with discrete actions treated like continuous ones: AMAGO's Agent on the same one-hots as a Box
    # space whose policy is its DiscreteLikeContinuous (see bench/agents_amago_ref.py).
    parity_cases._update(
        "agent-discrete-like-continuous-ff",
        {"type": "discrete", "n": 3},
        parity_cases.FF,
        discrete_like_continuous=True,
        agent_kwargs={
            "discrete_like_continuous": True,
            "num_actions_for_value_in_critic_loss": 2,
            "num_actions_for_value_in_actor_loss": 2,
        },
    ),
    parity_cases._update(
        "agent-discrete-like-continuous-offline-gru",
        {"type": "discrete", "n": 4},
        parity_cases.GRU,
        discrete_like_continuous=True,
        agent_kwargs={"discrete_like_continuous": True, "online_coeff": 0.0, "n_step": 2},
    ),
    # MultiTaskAgent treats discrete actions like continuous ones by itself; with the policy gradient on, the
    # straight-through Gumbel samples carry it (the existing multitask-discrete-ff case has it off).
    parity_cases._update(
        "multitask-discrete-online-ff",
        {"type": "discrete", "n": 3},
        parity_cases.FF,
        agent="multitask",
        bins={"min_return": -100.0, "max_return": 100.0, "output_bins": 32},
        agent_kwargs={"online_coeff": 0.5},
    ),
]


# ------------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------------


def make_inputs(case: dict[str, Any]) -> dict[str, np.ndarray]:
    """Seeded inputs of a case (numpy)."""
    rng = np.random.default_rng(sum(map(ord, case["name"])))
    if case["kind"] == "adamw_rel":
        out: dict[str, np.ndarray] = {}
        for index, shape in enumerate(case["shapes"]):
            out[f"param{index}"] = rng.normal(0.0, 1.0, shape).astype(np.float32)
            grads = rng.normal(0.0, 1.0, (case["steps"], *shape)) * np.linspace(
                1.0, 0.2, case["steps"]
            ).reshape(-1, *([1] * len(shape)))
            out[f"grads{index}"] = grads.astype(np.float32)
            present = np.arange(case["steps"]) >= case["first_step"][index]
            present[case["skipped"][index]] = False
            out[f"present{index}"] = present
        return out
    if case["kind"] == "init_value":
        # The critics' own inputs: (B, T, D) states of the trajectory encoder's width and (K, B, T, G, A) actions.
        dim = parity_cases.action_dim(case)
        shape = (1, 2, 3, GAMMAS)
        if case["action"]["type"] == "discrete":
            actions = np.eye(dim, dtype=np.float32)[rng.integers(0, dim, shape)]
        else:
            actions = rng.uniform(-0.9, 0.9, (*shape, dim)).astype(np.float32)
        return {
            "critic_states": rng.normal(0.0, 1.0, (2, 3, case["traj"]["d_model"])).astype(np.float32),
            "critic_actions": actions,
        }
    return parity_cases.make_inputs(case)


# ------------------------------------------------------------------------------------------------------
# amago's side
# ------------------------------------------------------------------------------------------------------


def adamw_rel_trajectory(
    case: dict[str, Any], inputs: dict[str, np.ndarray], *, resume_at: int | None = None
) -> dict[str, np.ndarray]:
    """amago's ``AdamWRel`` on a case: parameters and step counts after every update.

    With ``resume_at``, the optimiser is rebuilt from its state dict after that many updates (as a resumed
    run's would be), which must not change the trajectory.
    """
    from amago_core.experiment.optimizers import AdamWRel

    count = len(case["shapes"])
    params = [torch.nn.Parameter(torch.from_numpy(inputs[f"param{i}"]).clone()) for i in range(count)]

    def build() -> AdamWRel:
        return AdamWRel(
            params, reset_interval=case["reset_interval"], lr=case["lr"], weight_decay=case["weight_decay"]
        )

    optimizer = build()
    history: dict[str, list[np.ndarray]] = {f"param{i}": [] for i in range(count)}
    history.update({f"step{i}": [] for i in range(count)})
    for step in range(case["steps"]):
        if step == resume_at:
            state = optimizer.state_dict()
            optimizer = build()
            optimizer.load_state_dict(state)
        for i, param in enumerate(params):
            present = bool(inputs[f"present{i}"][step])
            param.grad = torch.from_numpy(inputs[f"grads{i}"][step]).clone() if present else None
        optimizer.step()
        for i, param in enumerate(params):
            history[f"param{i}"].append(param.detach().clone().numpy())
            count_now = optimizer.state.get(param, {}).get("step", 0)
            history[f"step{i}"].append(np.asarray(float(count_now)))
    return {f"out/{k}": np.stack(v) for k, v in history.items()}


def _compare_adamw_rel(
    case: dict[str, Any], inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray]
) -> list[Row]:
    rows = []
    for label, resume_at in (("", None), (" (resumed after 4 updates)", 4)):
        ours = adamw_rel_trajectory(case, inputs, resume_at=resume_at)
        for key, value in ours.items():
            theirs = ref[key]
            diff = np.abs(value.astype(np.float64) - theirs.astype(np.float64))
            ok = value.shape == theirs.shape and bool(
                np.all(diff <= ADAMW_REL_ATOL + ADAMW_REL_RTOL * np.abs(theirs))
            )
            rel = diff / np.maximum(np.abs(theirs), 1e-12)
            rows.append(
                Row(case["name"], f"{key[4:]} every update{label}", float(diff.max()), float(rel.max()), ok)
            )
    return rows


def amago_init_config(case: dict[str, Any]) -> dict[str, Any]:
    """amago's multitask config of an ``init_value`` case (AMAGO's ``init_value`` is ``critic_init_value``)."""
    config = parity_cases.agent_config({**case, "kind": "update"})
    config["critic_init_value"] = case["init_value"]
    return config


def _build_init_agent(case: dict[str, Any]) -> tuple[torch.nn.Module, list[str]]:
    from amago_core.plugins import registries

    reg = registries()
    obs, rl2, action = parity_cases._spaces(case)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = reg.agents.build(
            amago_init_config(case),
            obs_space=obs,
            rl2_space=rl2,
            action_space=action,
            max_seq_len=case["max_seq_len"],
            tstep_encoder=reg.tstep_encoders.builder(dict(case["tstep"])),
            traj_encoder=reg.traj_encoders.builder(dict(case["traj"])),
        )
    return agent, [str(w.message) for w in caught if "critic_init_value" in str(w.message)]


def _compare_init_value(
    case: dict[str, Any], inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray]
) -> list[Row]:
    from pydantic import ValidationError

    name = case["name"]
    if "error" in ref:  # AMAGO refused the value: amago's config must refuse it too, naming the key
        try:
            _build_init_agent(case)
        except ValidationError as exc:
            message = str(exc)
            ok = "critic_init_value" in message and "outside the bins' support" in message
            amago_said = str(ref["error"]).splitlines()[0]
            return [Row(name, "refused like AMAGO", 0.0, 0.0, ok, f"AMAGO: {amago_said}")]
        return [Row(name, "refused like AMAGO", math.inf, math.inf, False, "amago accepted the value")]

    agent, warned = _build_init_agent(case)
    fresh_bias = agent.critics.out.bias.detach().clone()
    rows = [
        _row(
            name,
            "initial output bias (every critic)",
            fresh_bias.reshape(-1, fresh_bias.shape[-1]).numpy(),
            ref["out/bias"].reshape(-1, ref["out/bias"].shape[-1]),
        ),
        Row(
            name,
            "near-edge warning as AMAGO's",
            0.0,
            0.0,
            bool(warned) == bool(ref["out/warned"]),
            f"amago warned: {bool(warned)}, AMAGO warned: {bool(ref['out/warned'])}",
        ),
    ]
    # AMAGO's other weights, amago's own output bias: the initial distribution then depends on the
    # initialisation under test only through that bias.
    weights = parity_cases.mapped_weights(agent, ref)
    for key in [k for k in weights if k.endswith("critics.out.bias")]:
        weights[key] = fresh_bias.clone()
    agent.load_state_dict(weights, strict=True)
    with torch.no_grad():
        states = torch.from_numpy(inputs["critic_states"])
        actions = torch.from_numpy(inputs["critic_actions"])
        logits = agent.critics(states, actions)  # (K, B, T, C, G, bins)
        probs = logits.softmax(-1)
        values = agent.bins.to_values(probs).unsqueeze(-1)
    rows.append(_row(name, "initial bin probabilities", probs.numpy(), ref["out/probs"]))
    rows.append(_row(name, "initial values", values.numpy(), ref["out/values"]))
    return rows


def compare(
    case: dict[str, Any], inputs: dict[str, np.ndarray], reference: dict[str, np.ndarray]
) -> list[Row]:
    """amago's outputs of ``case`` against AMAGO's ``reference``, one row per compared quantity."""
    torch.manual_seed(0)
    try:
        if case["kind"] == "adamw_rel":
            return _compare_adamw_rel(case, inputs, reference)
        if case["kind"] == "init_value":
            return _compare_init_value(case, inputs, reference)
        with agents_parity_noise.deterministic_gumbel():
            return parity_cases.compare(case, inputs, reference)
    except Exception as exc:  # a case amago cannot even build is a difference too, reported as a row
        return [Row(case["name"], "amago raised", math.inf, math.inf, False, f"{type(exc).__name__}: {exc}")]


# ------------------------------------------------------------------------------------------------------
# The fixture
# ------------------------------------------------------------------------------------------------------


def write_fixture(
    path: Path, inputs: dict[str, dict[str, np.ndarray]], references: dict[str, dict[str, np.ndarray]]
) -> None:
    """Every case's inputs and AMAGO's reference (online weights only) in one compressed npz."""
    parity_cases.write_fixture(path, inputs, references)


def read_fixture(path: Path = FIXTURE) -> dict[str, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """``{case: (inputs, reference)}``."""
    return parity_cases.read_fixture(path)
