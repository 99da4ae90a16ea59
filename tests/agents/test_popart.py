"""PopArt keeps the critic's de-normalised outputs while its statistics move."""

from __future__ import annotations

import torch

from amago_agents.popart import PopArt
from amago_agents.specs import PopArtConfig


def test_update_preserves_unnormalised_outputs() -> None:
    torch.manual_seed(0)
    popart = PopArt(3)
    outputs = torch.randn(5, 7, 4, 3, 1)
    for scale in (1.0, 50.0, 0.1, 1000.0):
        before = popart(outputs, normalized=False)
        popart.update_stats(scale * torch.randn(5, 7, 3, 1) + scale, torch.ones(5, 7, 1, 1, dtype=torch.bool))
        torch.testing.assert_close(popart(outputs, normalized=False), before, rtol=1e-4, atol=1e-3)
    assert not torch.allclose(popart.w, torch.ones_like(popart.w)), "statistics should have moved"


def test_statistics_follow_targets_with_bias_correction() -> None:
    popart = PopArt(2, PopArtConfig(beta=0.5))
    targets = torch.tensor([[2.0, -4.0]]).reshape(1, 1, 2, 1).expand(3, 4, 2, 1)
    popart.update_stats(targets, torch.ones(3, 4, 1, 1, dtype=torch.bool))
    # The initial statistics count as one earlier observation: beta_1 = beta / (1 - (1 - beta)^2) = 2/3 here,
    # so the first update keeps a third of mu = 0, nu = init_nu = 100 (tests/parity checks AMAGO's own numbers).
    torch.testing.assert_close(popart.mu, torch.tensor([[2.0], [-4.0]]) * 2 / 3)
    torch.testing.assert_close(popart.nu, torch.tensor([[4.0], [16.0]]) * 2 / 3 + 100 / 3)
    normalized = popart.normalize_values(torch.tensor([[3.0], [-4.0]]))
    torch.testing.assert_close(popart.denormalize_values(normalized), torch.tensor([[3.0], [-4.0]]))


def test_masked_and_non_finite_targets_are_ignored() -> None:
    clean, dirty = PopArt(1), PopArt(1)
    targets = torch.randn(4, 6, 1, 1)
    mask = torch.ones(4, 6, 1, 1, dtype=torch.bool)
    mask[0, 3:] = False
    garbage = targets.clone()
    garbage[0, 3:] = float("nan")
    clean.update_stats(targets[mask[..., 0, 0]].reshape(-1, 1, 1), torch.ones(1, 1, 1, dtype=torch.bool))
    dirty.update_stats(garbage, mask)
    torch.testing.assert_close(dirty.mu, clean.mu)
    torch.testing.assert_close(dirty.nu, clean.nu)
    poisoned = torch.full((2, 2, 1, 1), float("nan"))
    dirty.update_stats(poisoned, torch.ones(2, 2, 1, 1, dtype=torch.bool))
    assert torch.isfinite(dirty.mu).all()
    assert torch.isfinite(dirty.w).all()


def test_disabled_is_identity() -> None:
    popart = PopArt(2, PopArtConfig(enabled=False))
    x = torch.randn(3, 2, 1)
    popart.update_stats(100 * x, torch.ones(3, 1, 1, dtype=torch.bool))
    torch.testing.assert_close(popart(x), x)
    torch.testing.assert_close(popart.normalize_values(x), x)


def test_statistics_are_checkpoint_state() -> None:
    popart = PopArt(2)
    popart.update_stats(torch.randn(3, 2, 1) * 10, torch.ones(3, 1, 1, dtype=torch.bool))
    restored = PopArt(2)
    restored.load_state_dict(popart.state_dict())
    for name in ("mu", "nu", "w", "b", "updates"):
        assert torch.equal(getattr(restored, name), getattr(popart, name))
