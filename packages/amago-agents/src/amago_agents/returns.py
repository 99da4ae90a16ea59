"""TD targets: random-subset ensemble reduction (REDQ) and multi-gamma n-step returns."""

from __future__ import annotations

import torch


def reduce_ensemble(values: torch.Tensor, subset_size: int, use_min: bool) -> torch.Tensor:
    """Reduces critic values ``(B, T, C, G, 1)`` over a random subset of critics to ``(B, T, G, 1)``.

    For every (b, t, g) independently, ``subset_size`` critic indices are drawn uniformly *with replacement*;
    their minimum (clipped double Q, used when the policy gradient is on) or mean is the result. A minimum
    without a policy gradient to counter it underestimates strongly, hence the mean in that case.
    """
    batch, steps, critics, gammas, _ = values.shape
    picks = torch.randint(critics, (batch, steps, subset_size, gammas, 1), device=values.device)
    chosen = values.gather(2, picks)
    return chosen.amin(2) if use_min else chosen.mean(2)


def _shift_left(x: torch.Tensor, k: int) -> torch.Tensor:
    """``x[:, k:]`` padded with zeros at the end back to the original length."""
    if k == 0:
        return x
    pad = torch.zeros_like(x[:, :k])
    return torch.cat((x[:, k:], pad), dim=1)


def nstep_targets(
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    next_values: torch.Tensor,
    gammas: torch.Tensor,
    n_step: int,
    valid: torch.Tensor,
) -> torch.Tensor:
    """n-step TD targets for every discount factor at once.

    With ``V'_t`` the value of the state after transition t (``next_values[:, t]``)::

        y_t = sum_{k<j} gamma^k r_{t+k}  +  gamma^j (1 - d_{t+j-1}) V'_{t+j-1}

    where ``j <= n_step`` stops early after the first terminated transition (``d = 1``: nothing to bootstrap)
    or before the first invalid one (padding or the window's end: bootstrap from the last valid step).
    Truncated episodes are *not* terminated: their last transition still bootstraps from the final state.

    Args:
        rewards: ``(B, T, 1)`` rewards (already reward-multiplied).
        terminated: ``(B, T, 1)`` booleans.
        next_values: ``(B, T, G, 1)`` raw-scale values of the next states.
        gammas: ``(G,)`` discount factors.
        n_step: steps summed before bootstrapping (at least 1).
        valid: ``(B, T)`` booleans, True where the transition is real.

    Returns:
        ``(B, T, G, 1)`` targets (meaningless where ``valid`` is False; mask them).
    """
    dtype = next_values.dtype
    reward = rewards.to(dtype).unsqueeze(-2)  # (B, T, 1, 1)
    not_done = (~terminated.bool()).to(dtype).unsqueeze(-2)
    gamma = gammas.to(dtype).reshape(1, 1, -1, 1)
    if n_step == 1:
        return reward + gamma * not_done * next_values
    still_valid = valid.to(dtype)[..., None, None]
    total = torch.zeros_like(next_values)
    bootstrap = torch.zeros_like(next_values)
    alive = torch.ones_like(reward)
    for k in range(n_step):
        step = alive * _shift_left(still_valid, k)  # 1 where transition t+k is summed
        total = total + step * gamma**k * _shift_left(reward, k)
        candidate = gamma ** (k + 1) * _shift_left(not_done, k) * _shift_left(next_values, k)
        bootstrap = torch.where(step > 0, candidate, bootstrap)
        alive = step * _shift_left(not_done, k)
    return total + bootstrap
