"""Actor and critic heads: small networks on the trajectory encoder's state embeddings.

The critic ensemble runs all ``num_critics`` MLPs in one batched matmul per layer (weights ``(C, d_in,
d_out)``), which is what makes the default four critics × seven gammas cheap on a CPU.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from amago_agents.distributions import OneHotDist, Policy, PolicyDistribution
from amago_agents.specs import ActorHeadConfig, CriticHeadConfig
from amago_nets.layers import MLP, activation_module, normalization, symlog
from amago_nets.precision import full_precision, network_precision, to_full
from amago_nets.real_steps import RealSteps


class ResidualBlock(nn.Module):
    """``x + norm(Linear(act(norm(Linear(x)))))`` (BRO-style)."""

    def __init__(self, dim: int, d_hidden: int, activation: str, norm: str, dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, d_hidden),
            normalization(norm, d_hidden),
            activation_module(activation),
            nn.Dropout(dropout),
            nn.Linear(d_hidden, dim),
            normalization(norm, dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Adds the block's output to its input."""
        return x + self.net(x)


class ActorHead(nn.Module):
    """Maps state embeddings ``(..., D)`` to one policy per discount factor, a :class:`Policy` over ``(..., G)``.

    Args:
        state_dim: size of the state embedding.
        num_gammas: number of discount factors G (one policy each; the last one acts).
        dist: the policy distribution (decides the output size).
        config: ``plain`` MLP or ``residual`` blocks, widths, activation.
    """

    def __init__(
        self, state_dim: int, num_gammas: int, dist: PolicyDistribution, config: ActorHeadConfig | None = None
    ) -> None:
        super().__init__()
        config = config or ActorHeadConfig()
        self.dist = dist
        self.num_gammas = num_gammas
        d_out = num_gammas * dist.input_dimension
        if config.type == "plain":
            self.net: nn.Module = MLP(
                state_dim, config.d_hidden, config.n_layers, d_out, config.activation, "none", config.dropout
            )
        else:
            self.net = nn.Sequential(
                nn.Linear(state_dim, config.feature_dim),
                activation_module(config.activation),
                *(
                    ResidualBlock(
                        config.feature_dim,
                        config.residual_ff_dim,
                        config.activation,
                        config.norm,
                        config.dropout,
                    )
                    for _ in range(config.residual_blocks)
                ),
                nn.Linear(config.feature_dim, d_out),
            )

    def forward(
        self, state: torch.Tensor, real: RealSteps | None = None, allowed: torch.Tensor | None = None
    ) -> Policy:
        """The policies for ``state`` ``(..., D)``, batched over ``(..., G)``.

        With ``real`` (``state`` is ``(B, T, D)``), the network runs on the real timesteps only; padded ones
        get all-zero distribution parameters (a valid distribution that every loss masks out). ``allowed``
        (``(..., 1, A)`` bool, an env's action mask) keeps a discrete policy on the allowed actions. Under
        autocast the network computes in its dtype and the policy's parameters are fp32 (:mod:`amago_nets.precision`).
        """
        with network_precision():
            params = (
                self.net(state) if real is None or not real.padded else real.put(self.net(real.take(state)))
            )
        params = to_full(params).reshape(*state.shape[:-1], self.num_gammas, self.dist.input_dimension)
        return self._policy(params, allowed)

    def acting_policy(self, state: torch.Tensor, allowed: torch.Tensor | None = None) -> Policy:
        """The policy of the last discount factor alone (the one that acts), over ``(..., 1)``.

        Its parameters are exactly the last gamma's of :meth:`forward` (the whole network runs; its output layer
        is small); only that policy is built and sampled, which is most of a rollout step's head cost with seven
        gammas.
        """
        with network_precision():
            params = self.net(state)
        params = to_full(params).reshape(*state.shape[:-1], self.num_gammas, self.dist.input_dimension)
        return self._policy(params[..., -1:, :], allowed)

    def _policy(self, params: torch.Tensor, allowed: torch.Tensor | None) -> Policy:
        if allowed is None:
            return self.dist(params)
        if not isinstance(self.dist, OneHotDist):
            msg = f"action masks apply to discrete policies, not {type(self.dist).__name__}"
            raise TypeError(msg)
        return self.dist(params, allowed)


class EnsembleLinear(nn.Module):
    """``C`` independent linear layers applied in one batched matmul.

    Initialised by default as AMAGO's einsum ensembles (einops' ``EinMix``): weights ``U(±sqrt(3 / fan_in))``,
    biases ``U(±sqrt(1 / fan_in))``, i.e. He-uniform weights, sqrt(3) wider than ``nn.Linear``'s default; with
    ``init="linear"``, ``nn.Linear``'s default per member (weights and biases ``U(±1 / sqrt(d_in))``).

    Args:
        num_members: ensemble size C.
        d_in: input size.
        d_out: output size.
        bias: learn a bias per member.
        fan_in: inputs one output sums over (default ``d_in``); a layer that is one part of a wider input
            layer passes the whole layer's input size, so both parts start as that one layer would
            (``init="amago"`` only: ``linear`` draws each part as a layer of its own).
        init: ``amago`` or ``linear`` (see :class:`~amago_agents.specs.CriticHeadConfig`).
    """

    def __init__(
        self,
        num_members: int,
        d_in: int,
        d_out: int,
        bias: bool = True,
        *,
        fan_in: int | None = None,
        init: str = "amago",
    ) -> None:
        super().__init__()
        if init == "linear":
            weight_bound = bias_bound = 1.0 / math.sqrt(d_in)
        elif init == "amago":
            fan_in = fan_in or d_in
            weight_bound, bias_bound = math.sqrt(3.0 / fan_in), math.sqrt(1.0 / fan_in)
        else:
            msg = f"EnsembleLinear: init={init!r} is not one of 'amago', 'linear'."
            raise ValueError(msg)
        self.weight = nn.Parameter(
            torch.empty(num_members, d_in, d_out).uniform_(-weight_bound, weight_bound)
        )
        self.bias = (
            nn.Parameter(torch.empty(num_members, 1, d_out).uniform_(-bias_bound, bias_bound))
            if bias
            else None
        )

    def forward_shared(self, x: torch.Tensor) -> torch.Tensor:
        """Every member applied to the same input ``(N, d_in)``, as ``(C, N, d_out)`` (one batched matmul).

        The input is broadcast with a stride-0 batch dimension (no copy); the output is contiguous per member,
        which the following batched matmuls need (a single wide matmul would need a transpose copy instead).
        """
        members = self.weight.shape[0]
        broadcast = x.unsqueeze(0).expand(members, *x.shape)
        if self.bias is None:
            return torch.bmm(broadcast, self.weight)
        return torch.baddbmm(self.bias, broadcast, self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Member ``c`` applied to ``x[c]``: ``(C, N, d_in) -> (C, N, d_out)``."""
        if self.bias is None:
            return torch.bmm(x, self.weight)
        return torch.baddbmm(self.bias, x, self.weight)


def gamma_features(gammas: torch.Tensor) -> torch.Tensor:
    """``symlog(1 / (1 - gamma))`` (the effective horizon, squashed): how critics tell the gammas apart."""
    return symlog(1.0 / (1.0 - gammas.clamp(max=1.0 - 1e-6)))


class CriticEnsemble(nn.Module):
    """``C`` critics, each predicting every discount factor, evaluated together.

    Two input layouts, as in AMAGO:

    - ``action_input=False`` (discrete actions in ``agent``): the critic sees the state only and outputs a value
      per (gamma, action); ``Q(s, p) = sum_a p_a Q(s, a)``, so passing policy probabilities gives V(s) exactly.
    - ``action_input=True`` (continuous actions, and every action space in ``multitask``): the critic sees
      ``[state, symlog(1/(1-gamma)), action]`` with the gammas folded into the batch. The state's share of the
      first layer is computed once and broadcast over action samples and gammas.

    Args:
        state_dim: size of the state embedding D.
        action_dim: size of the action vector A.
        gammas: the discount factors (G).
        num_critics: ensemble size C.
        config: hidden layers, width, activation, dropout.
        action_input: layout (see above).
        out_dim: outputs per (critic, gamma, action sample): 1 for values, the bin count for two-hot critics.
    """

    gamma_features: torch.Tensor

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        gammas: tuple[float, ...],
        num_critics: int,
        config: CriticHeadConfig | None = None,
        *,
        action_input: bool,
        out_dim: int = 1,
    ) -> None:
        super().__init__()
        config = config or CriticHeadConfig()
        self.num_critics = num_critics
        self.num_gammas = len(gammas)
        self.action_dim = action_dim
        self.action_input = action_input
        self.out_dim = out_dim
        self.register_buffer(
            "gamma_features", gamma_features(torch.tensor(gammas, dtype=torch.float32))[:, None]
        )
        d = config.d_hidden
        # The first layer is one layer over [state, gamma feature, action] split in two (the state's share is
        # computed once per state, not once per action sample and gamma); both parts start as that layer would.
        d_extra = 1 + action_dim if action_input else 0
        init = config.init
        self.inp_state = EnsembleLinear(num_critics, state_dim, d, fan_in=state_dim + d_extra, init=init)
        # The (gamma feature, action) part: no bias (inp_state has one).
        self.inp_extra = (
            EnsembleLinear(num_critics, d_extra, d, bias=False, fan_in=state_dim + d_extra, init=init)
            if action_input
            else None
        )
        self.hidden = nn.ModuleList(
            EnsembleLinear(num_critics, d, d, init=init) for _ in range(config.n_layers - 1)
        )
        final = out_dim if action_input else self.num_gammas * action_dim * out_dim
        self.out = EnsembleLinear(num_critics, d, final, init=init)
        self.act = activation_module(config.activation)
        self.leaky = isinstance(self.act, nn.LeakyReLU)
        self.negative_slope = self.act.negative_slope if isinstance(self.act, nn.LeakyReLU) else 0.0
        # Identity at p = 0: nn.Dropout in train mode still copies its input even when it drops nothing.
        self.dropout = nn.Dropout(config.dropout) if config.dropout > 0 else nn.Identity()

    def _activate(self, h: torch.Tensor) -> torch.Tensor:
        # In place: a matmul's backward needs its inputs, never its output, so overwriting the pre-activation
        # is safe and saves a (C, N, d_hidden) allocation per layer.
        return self.dropout(F.leaky_relu(h, self.negative_slope, inplace=True) if self.leaky else self.act(h))

    def _trunk(self, h: torch.Tensor) -> torch.Tensor:
        """The layers after the first: ``(C, ..., d_hidden)`` pre-activations -> ``(C, N, out)``."""
        # Activated before it is flattened: the in-place activation must not write through a view (autograd
        # would rebuild the view's whole base in backward, 12 % of a continuous-action update on a CPU).
        h = self._activate(h).reshape(self.num_critics, -1, h.shape[-1])
        for layer in self.hidden:
            h = self._activate(layer(h))
        return self.out(h)

    def forward(
        self, state: torch.Tensor, actions: torch.Tensor, real: RealSteps | None = None
    ) -> torch.Tensor:
        """Critic outputs for ``state`` ``(B, T, D)`` and actions ``(K, B, T, G, A)`` (K samples per gamma).

        With ``real``, only the real timesteps are evaluated; padded ones are zeros (every loss masks them).

        Returns:
            ``(K, B, T, C, G, out_dim)`` in fp32: under autocast the network computes in its dtype and the math
            on its outputs does not (:mod:`amago_nets.precision`).
        """
        with network_precision():
            if real is not None and real.padded:
                values = real.put(self._evaluate(real.take(state), real.take(actions, dim=1)), dim=1)
            else:
                values = self._evaluate(state, actions)
        return to_full(values)

    def _evaluate(self, state: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        batch, steps, _ = state.shape
        samples = actions.shape[0]
        flat_state = state.reshape(batch * steps, -1)
        h_state = self.inp_state.forward_shared(flat_state)  # (C, B*T, d)
        if not self.action_input:
            values = self._trunk(h_state)  # (C, B*T, G*A*out)
            values = values.reshape(
                self.num_critics, batch, steps, self.num_gammas, self.action_dim, self.out_dim
            )
            # Dot the per-action values with the (one-hot or probability) action: an exact expectation, and math
            # on the network's outputs, so fp32 (amago_nets.precision); in bf16 it ran as many tiny batched
            # matmuls, 23 vs 5 ms per update on an avx512_bf16 CPU.
            with full_precision():
                return torch.einsum("cbtgao,kbtga->kbtcgo", to_full(values), to_full(actions))
        extra = torch.cat(
            (self.gamma_features.expand(samples, batch, steps, -1, -1), actions.clamp(-0.999, 0.999)), dim=-1
        )  # (K, B, T, G, 1 + A)
        if self.inp_extra is None:  # built whenever action_input is True
            msg = "CriticEnsemble: action_input=True but the (gamma, action) input layer is missing."
            raise RuntimeError(msg)
        # Rows ordered (sample, gamma, step), so that the state's share broadcasts over the first two dimensions
        # and the sum is a tensor of its own (see _trunk).
        extra = extra.permute(0, 3, 1, 2, 4).reshape(-1, extra.shape[-1])  # (K*G*B*T, 1 + A)
        h_extra = self.inp_extra.forward_shared(extra)  # (C, K*G*B*T, d)
        h_extra = h_extra.view(self.num_critics, samples * self.num_gammas, batch * steps, -1)
        h = h_extra + h_state.view(self.num_critics, 1, batch * steps, -1)
        out = self._trunk(h)  # (C, K*G*B*T, out)
        out = out.reshape(self.num_critics, samples, self.num_gammas, batch, steps, self.out_dim)
        return out.permute(1, 3, 4, 0, 2, 5)
