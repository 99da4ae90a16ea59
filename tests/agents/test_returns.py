"""Multi-gamma n-step targets (hand-computed) and the random-subset ensemble reduction."""

from __future__ import annotations

import pytest
import torch

from amago_agents.returns import nstep_targets, reduce_ensemble

GAMMAS = torch.tensor([0.5, 0.9])
REWARDS = torch.tensor([1.0, 2.0, 3.0, 4.0]).reshape(1, 4, 1)
# Value of the state after each transition, per gamma: (B=1, T=4, G=2, 1).
NEXT_VALUES = torch.tensor([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0], [70.0, 80.0]]).reshape(1, 4, 2, 1)
ALL_VALID = torch.ones(1, 4, dtype=torch.bool)


def dones(*terminated_at: int) -> torch.Tensor:
    flags = torch.zeros(1, 4, 1, dtype=torch.bool)
    for t in terminated_at:
        flags[0, t] = True
    return flags


def targets(terminated: torch.Tensor, n_step: int, valid: torch.Tensor = ALL_VALID) -> torch.Tensor:
    return nstep_targets(REWARDS, terminated, NEXT_VALUES, GAMMAS, n_step, valid)[0, :, :, 0]


def test_one_step_terminated_stops_bootstrapping() -> None:
    expected = torch.tensor([[6.0, 19.0], [2.0, 2.0], [28.0, 57.0], [39.0, 76.0]])
    torch.testing.assert_close(targets(dones(1), 1), expected)


def test_one_step_truncation_still_bootstraps() -> None:
    # A truncated episode is not terminated: its last transition bootstraps from the final state's value.
    expected = torch.tensor([[6.0, 19.0], [17.0, 38.0], [28.0, 57.0], [39.0, 76.0]])
    torch.testing.assert_close(targets(dones(), 1), expected)


def test_two_step_stops_at_terminal_and_window_end() -> None:
    expected = torch.tensor(
        [
            [1 + 0.5 * 2, 1 + 0.9 * 2],  # terminal after the second reward: nothing to bootstrap
            [2.0, 2.0],  # terminal at once
            [3 + 0.5 * 4 + 0.25 * 70, 3 + 0.9 * 4 + 0.81 * 80],
            [4 + 0.5 * 70, 4 + 0.9 * 80],  # the window ends: one step, bootstrap from the last state
        ]
    )
    torch.testing.assert_close(targets(dones(1), 2), expected)


def test_two_step_stops_before_padding() -> None:
    valid = torch.tensor([[True, True, True, False]])
    got = targets(dones(), 2, valid)
    torch.testing.assert_close(got[2], torch.tensor([3 + 0.5 * 50, 3 + 0.9 * 60]))
    torch.testing.assert_close(got[0], torch.tensor([1 + 0.5 * 2 + 0.25 * 30, 1 + 0.9 * 2 + 0.81 * 40]))


def test_three_step_sum() -> None:
    got = targets(dones(), 3)
    torch.testing.assert_close(got[0, 0], torch.tensor(1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 50))
    torch.testing.assert_close(got[0, 1], torch.tensor(1 + 0.9 * 2 + 0.81 * 3 + 0.729 * 60))


def test_n_step_one_matches_general_loop() -> None:
    # The n = 1 shortcut and the loop agree when the loop runs a single step.
    terminated = dones(2)
    general = nstep_targets(REWARDS, terminated, NEXT_VALUES, GAMMAS, 1, ALL_VALID)
    torch.testing.assert_close(general[0, :, :, 0], targets(terminated, 1))


# ---- ensemble reduction ------------------------------------------------------------------------------


def ensemble(members: list[float], batch: int = 200, steps: int = 100, gammas: int = 3) -> torch.Tensor:
    values = torch.tensor(members).reshape(1, 1, -1, 1, 1)
    return values.expand(batch, steps, len(members), gammas, 1).clone()


def test_reduction_picks_members_only() -> None:
    torch.manual_seed(0)
    out = reduce_ensemble(ensemble([1.0, 5.0, 9.0]), subset_size=1, use_min=True)
    assert out.shape == (200, 100, 3, 1)
    assert set(out.unique().tolist()) == {1.0, 5.0, 9.0}


@pytest.mark.parametrize(("use_min", "expected"), [(True, 29 / 9), (False, 5.0)])
def test_reduction_min_and_mean_with_replacement(use_min: bool, expected: float) -> None:
    # Two draws with replacement from {1, 5, 9}: E[min] = 1·5/9 + 5·3/9 + 9·1/9 = 29/9; E[mean] = 5.
    torch.manual_seed(0)
    out = reduce_ensemble(ensemble([1.0, 5.0, 9.0]), subset_size=2, use_min=use_min)
    assert out.mean().item() == pytest.approx(expected, abs=0.05)
    if use_min:
        # min of two draws can equal any member (with replacement, even the largest: both draws were 9).
        assert set(out.unique().tolist()) == {1.0, 5.0, 9.0}
    else:
        assert set(out.unique().tolist()) == {1.0, 3.0, 5.0, 7.0, 9.0}


def test_reduction_draws_independently_per_entry() -> None:
    torch.manual_seed(0)
    out = reduce_ensemble(ensemble([1.0, 5.0, 9.0], batch=1, steps=1, gammas=64), subset_size=1, use_min=True)
    assert out.unique().numel() > 1, "every gamma must draw its own subset"
    out = reduce_ensemble(ensemble([1.0, 5.0, 9.0], batch=64, steps=1, gammas=1), subset_size=1, use_min=True)
    assert out.unique().numel() > 1, "every sequence must draw its own subset"
