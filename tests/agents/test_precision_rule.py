"""Mixed precision's one rule (`amago_nets.precision`): networks in the autocast dtype, the math on them in fp32.

Under bf16 autocast the encoders and the heads' networks compute in bf16; distributions (sampling and
log-probabilities), PopArt statistics, n-step targets, two-hot labels and the losses see fp32 tensors with autocast
off. Before the rule, a Beta policy crashed at its first bf16 update (torch's Dirichlet sampler has no bf16 kernel)
and every distribution, target and label computed in bf16.
"""

from __future__ import annotations

import pytest
import torch

from amago_agents.popart import PopArt
from amago_nets.precision import full_precision, network_precision, to_full


def _cpu_autocast_dtype() -> torch.dtype | None:
    return torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None


def test_full_precision_turns_autocast_off_and_network_precision_turns_it_back_on():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert _cpu_autocast_dtype() == torch.bfloat16
        with full_precision():
            assert _cpu_autocast_dtype() is None
            with network_precision():
                assert _cpu_autocast_dtype() == torch.bfloat16
                with full_precision():  # math inside a network is fp32 again
                    assert _cpu_autocast_dtype() is None
            assert _cpu_autocast_dtype() is None
        assert _cpu_autocast_dtype() == torch.bfloat16


def test_without_autocast_both_contexts_change_nothing():
    with full_precision(), network_precision():
        assert _cpu_autocast_dtype() is None
    with network_precision():  # outside a full_precision region: whatever is on stays on
        assert _cpu_autocast_dtype() is None
    x = torch.ones(2, dtype=torch.float64)
    assert to_full(x) is x
    assert to_full(torch.ones(2, dtype=torch.bfloat16)).dtype == torch.float32


def _record_dtypes(agent: torch.nn.Module, seen: dict[str, set[torch.dtype]]) -> None:
    """Notes the output dtype of every Linear-like layer of the heads and the input dtype PopArt sees."""

    def hook(name: str):
        def record(_module, inputs, output) -> None:
            tensor = inputs[0] if name == "popart input" else output
            seen.setdefault(name, set()).add(tensor.dtype)

        return record

    agent.actor.net.register_forward_hook(hook("actor network"))
    agent.critics.out.register_forward_hook(hook("critic network"))
    agent.popart.register_forward_hook(hook("popart input"))
    original = PopArt.update_stats

    def update_stats(self, targets, mask):
        seen.setdefault("td targets", set()).add(targets.dtype)
        return original(self, targets, mask)

    agent.popart.update_stats = update_stats.__get__(agent.popart)


@pytest.mark.parametrize(
    ("kind", "space", "options"),
    [
        ("agent", "continuous", {"continuous_dist": {"type": "beta"}}),
        ("agent", "continuous", {"continuous_dist": {"type": "tanh_gaussian"}}),
        ("agent", "discrete", {}),
        ("multitask", "continuous", {"continuous_dist": {"type": "beta"}}),
    ],
)
def test_under_bf16_autocast_the_networks_run_in_bf16_and_the_loss_math_in_fp32(
    make_agent, make_batch, kind, space, options
):
    agent = make_agent(kind, space, **options)
    seen: dict[str, set[torch.dtype]] = {}
    _record_dtypes(agent, seen)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = agent.loss(make_batch(space), log_step=True)
    loss.backward()
    assert seen["actor network"] == {torch.bfloat16}
    assert seen["critic network"] == {torch.bfloat16}
    assert seen["td targets"] == {torch.float32}
    if kind == "agent":
        assert seen["popart input"] == {torch.float32}
    assert loss.dtype == torch.float32
    assert torch.isfinite(loss)
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in agent.parameters())


@pytest.mark.parametrize("dist", ["beta", "tanh_gaussian", "gmm"])
def test_a_rollout_under_bf16_autocast_samples_in_fp32(make_agent, make_batch, dist):
    online = {"online_coeff": 0.0} if dist == "gmm" else {}  # mixtures have no reparameterised samples
    agent = make_agent("agent", "continuous", continuous_dist={"type": dist}, **online)
    batch = make_batch("continuous")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        actions, _ = agent.get_actions(
            {"observation": batch.obs["observation"][:, :1]},
            batch.rl2s[:, :1],
            batch.time_idxs[:, :1],
            agent.init_hidden_state(3, "cpu"),
        )
    assert actions.dtype == torch.float32
    assert actions.shape == (3, 1, 2)
    assert ((actions >= -1) & (actions <= 1)).all()
