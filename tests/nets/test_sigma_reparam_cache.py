"""σReparam's eval-time weight cache: reused while nothing changes, rebuilt after any in-place update."""

from __future__ import annotations

import torch

from amago_nets.layers import SigmaReparamLinear


def _reference(layer: SigmaReparamLinear, x: torch.Tensor) -> torch.Tensor:
    sigma = torch.einsum("o,oi,i->", layer.u, layer.weight, layer.v)
    return torch.nn.functional.linear(x, layer.gamma / sigma * layer.weight, layer.bias)


def test_cached_eval_weight_tracks_optimiser_steps_and_loads():
    torch.manual_seed(0)
    layer = SigmaReparamLinear(8, 4)
    x = torch.randn(3, 8)
    layer.eval()
    with torch.no_grad():
        before = layer(x)
        cached = layer._eval_weight
        assert torch.equal(layer(x), before)
        assert layer._eval_weight is cached  # reused, not rebuilt
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.5)
    layer.train()
    layer(x).sum().backward()
    optimizer.step()
    layer.eval()
    with torch.no_grad():
        after_step = layer(x)
        assert torch.allclose(after_step, _reference(layer, x))
        assert not torch.allclose(after_step, before)
    saved = {k: v.clone() for k, v in layer.state_dict().items()}
    with torch.no_grad():
        layer.weight.add_(1.0)
        assert torch.allclose(layer(x), _reference(layer, x))
    layer.load_state_dict(saved)
    with torch.no_grad():
        assert torch.allclose(layer(x), after_step)


def test_eval_with_gradients_does_not_use_the_cache():
    layer = SigmaReparamLinear(5, 3).eval()
    x = torch.randn(2, 5)
    out = layer(x)
    out.sum().backward()
    assert layer.weight.grad is not None
    assert layer._eval_weight is None
