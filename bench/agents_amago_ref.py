"""The AMAGO side of the agents' parity cases (``tests/parity/agents_cases.py``): runs the real AMAGO v3.3.0.

Run only by ``bench/agents_parity_vs_amago.py``, with the AMAGO reference venv's interpreter::

    TORCH_COMPILE_DISABLE=1 .venv-amago-ref/bin/python bench/agents_amago_ref.py WORK_DIR

Reads ``WORK_DIR/cases.json`` and ``WORK_DIR/inputs/<case>.npz``, writes ``WORK_DIR/amago_ref/<case>.npz``. It
builds on ``parity_amago_ref.py`` (AMAGO's agents from a case, deterministic draws, one learning update) and adds:

- ``adamw_rel``: ``amago.utils.AdamWRel`` stepped on recorded gradients;
- ``init_value``: a ``MultiTaskAgent`` whose ``NCriticsTwoHot`` has ``init_value``, and its critics' first outputs;
- ``update`` cases with ``discrete_like_continuous``: AMAGO's ``Agent`` never wraps a discrete policy in
  ``DiscreteLikeContinuous`` (only ``MultiTaskAgent`` does), so the same one-hot actions are given to it as a Box
  space whose policy output is AMAGO's ``Discrete`` wrapped in AMAGO's ``DiscreteLikeContinuous``; every other
  line of the update is AMAGO's continuous-action code.

It measures AMAGO; nothing of the project imports it, and it copies no AMAGO code.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from functools import partial
from pathlib import Path

import numpy as np

# Before torch is imported (agents_parity_noise imports it): AMAGO's torch.compile decorators crash on CPU.
os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # parity_amago_ref, agents_parity_noise
import agents_parity_noise
import parity_amago_ref as ref
import torch

from amago import agent as amago_agent
from amago import utils as amago_utils
from amago.nets import actor_critic, policy_dists


def run_adamw_rel(case: dict, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Parameters and step counts after every update of AMAGO's AdamWRel (as ``Experiment.init_optimizer``
    would build it: learning rate and weight decay, AdamW's other defaults)."""
    count = len(case["shapes"])
    params = [torch.nn.Parameter(torch.from_numpy(inputs[f"param{i}"]).clone()) for i in range(count)]
    optimizer = amago_utils.AdamWRel(
        params, reset_interval=case["reset_interval"], lr=case["lr"], weight_decay=case["weight_decay"]
    )
    history: dict[str, list[np.ndarray]] = {f"param{i}": [] for i in range(count)}
    history.update({f"step{i}": [] for i in range(count)})
    for step in range(case["steps"]):
        for i, param in enumerate(params):
            present = bool(inputs[f"present{i}"][step])
            param.grad = torch.from_numpy(inputs[f"grads{i}"][step]).clone() if present else None
        optimizer.step()
        for i, param in enumerate(params):
            history[f"param{i}"].append(param.detach().clone().numpy())
            count_now = optimizer.state[param]["step"] if param in optimizer.state else 0
            history[f"step{i}"].append(np.asarray(float(count_now)))
    return {f"out/{k}": np.stack(v) for k, v in history.items()}


def run_init_value(case: dict, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A MultiTaskAgent whose two-hot critics start at ``init_value``: its weights, whether AMAGO warned about
    the edge, the critics' output bias, and their first bin probabilities and values on the case's inputs."""
    with_init = {**case, "bins": {**case["bins"], "init_value": case["init_value"]}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = ref.build_agent(with_init)
    out = ref.weights_of(agent)
    out["out/warned"] = np.asarray(any("init_value" in str(w.message) for w in caught))
    out["out/bias"] = agent.critics.net.output_layer.bias.detach().numpy().copy()
    with torch.no_grad():
        dist = agent.critics(
            torch.from_numpy(inputs["critic_states"]), torch.from_numpy(inputs["critic_actions"])
        )
        out["out/probs"] = dist.probs.numpy()
        out["out/values"] = agent.critics.bin_dist_to_raw_vals(dist).numpy()
    return out


class _OneHotPolicy(policy_dists.DiscreteLikeContinuous):
    """AMAGO's DiscreteLikeContinuous, with the trailing action dimension AMAGO's continuous loss sums over."""

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        return super().log_prob(action).unsqueeze(-1)


class _DiscreteAsContinuousOutput(policy_dists.Discrete):
    """AMAGO's Discrete policy output (clipped categorical, buffer one-hots softened for the critic), handed to
    the agent as a continuous one wrapped in AMAGO's DiscreteLikeContinuous."""

    @property
    def is_discrete(self) -> bool:
        return False

    def forward(self, vec: torch.Tensor, log_dict: dict | None = None) -> _OneHotPolicy:
        return _OneHotPolicy(super().forward(vec, log_dict=log_dict))


def build_discrete_like_continuous_agent(case: dict) -> torch.nn.Module:
    """AMAGO's Agent on the case's Discrete(n) actions as a Box(n) space of one-hots (see the module docstring)."""
    torch.manual_seed(case["seed"])
    obs, rl2, _ = ref.spaces_of(case)
    action = ref.gym.spaces.Box(-1.0, 1.0, (case["action"]["n"],))
    heads = case["heads"]
    sizes = {"d_hidden": heads["d_hidden"], "n_layers": heads["n_layers"]}
    options = {k: v for k, v in case.get("agent_kwargs", {}).items() if k != "discrete_like_continuous"}
    return amago_agent.Agent(
        obs_space=obs,
        rl2_space=rl2,
        action_space=action,
        max_seq_len=case["max_seq_len"],
        tstep_encoder_type=ref.tstep_encoder_type(case["tstep"]),
        traj_encoder_type=ref.traj_encoder_type(case["traj"]),
        actor_type=partial(actor_critic.Actor, continuous_dist_type=_DiscreteAsContinuousOutput, **sizes),
        critic_type=partial(actor_critic.NCritics, **sizes),
        **options,
    )


def run_update(case: dict, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``parity_amago_ref.run_update`` with deterministic Gumbel-softmax samples (and the Agent above for
    ``discrete_like_continuous`` cases)."""
    builder = ref.build_agent
    if case.get("discrete_like_continuous"):
        ref.build_agent = build_discrete_like_continuous_agent
    try:
        with agents_parity_noise.deterministic_gumbel():
            return ref.run_update(case, inputs)
    finally:
        ref.build_agent = builder


RUNNERS = {"adamw_rel": run_adamw_rel, "init_value": run_init_value, "update": run_update}


def main() -> None:
    work = Path(sys.argv[1])
    ref.install_deterministic_draws()
    cases = json.loads((work / "cases.json").read_text())
    target = work / "amago_ref"
    target.mkdir(exist_ok=True)
    for case in cases:
        with np.load(work / "inputs" / f"{case['name']}.npz") as data:
            inputs = {k: data[k] for k in data.files}
        try:
            result = RUNNERS[case["kind"]](case, inputs)
        except Exception as exc:  # one case failing (or AMAGO refusing) must not hide the others
            result = {"error": np.asarray(f"{type(exc).__name__}: {exc}")}
        np.savez(target / f"{case['name']}.npz", **result)
        status = "error: " + str(result["error"]) if "error" in result else "ok"
        print(f"AMAGO {case['name']}: {status}", flush=True)


if __name__ == "__main__":
    main()
