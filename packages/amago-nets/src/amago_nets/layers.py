"""Building blocks shared by the encoders: activations, normalisations, MLPs, input statistics, σReparam."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class AdaptiveRational(nn.Module):
    """A learnable rational activation ``P(x) / Q(x)`` (Delfosse et al. 2021, "Adaptive Rational Activations to
    Boost Deep Reinforcement Learning"); the config name ``adaptive``, AMAGO's ``SlowAdaptiveRational``.

    ``P(x) = a0 + a1·x + ... + a5·x^5`` and ``Q(x) = 1 + |b1·x| + |b2·x^2| + |b3·x^3| + |b4·x^4|``, applied
    elementwise. Every term of ``Q`` enters by its absolute value, so ``Q >= 1`` and the function has no poles
    however the coefficients are trained. Both coefficient vectors are parameters, initialised to the paper's
    fit of leaky ReLU (the same numbers as AMAGO), so a fresh network starts out close to a leaky-ReLU one.

    Attributes:
        numerator: (6,) ``a0..a5``.
        denominator: (4,) ``b1..b4``.
    """

    NUMERATOR_INIT = (
        0.029792778657264946,
        0.6183735264987601,
        2.323309062531321,
        3.051936237265109,
        1.4854203263828845,
        0.2510244961111299,
    )
    """``a0..a5`` of the leaky-ReLU fit."""
    DENOMINATOR_INIT = (-1.1419548357285474, 4.393159974992486, 0.8714712309957245, 0.34719662339598834)
    """``b1..b4`` of the leaky-ReLU fit."""

    def __init__(self) -> None:
        super().__init__()
        self.numerator = nn.Parameter(torch.tensor(self.NUMERATOR_INIT, dtype=torch.float32))
        self.denominator = nn.Parameter(torch.tensor(self.DENOMINATOR_INIT, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Applies the rational function to every element of ``x``."""
        a, b = self.numerator, self.denominator
        # x^1..x^5 by repeated products, each power used by both P and Q.
        powers = [x]
        for _ in range(a.shape[0] - 2):
            powers.append(powers[-1] * x)
        numerator = a[0] + a[1] * powers[0]
        for coefficient, power in zip(a[2:], powers[1:], strict=True):
            numerator = numerator + coefficient * power
        denominator = 1 + (b[0] * powers[0]).abs()
        for coefficient, power in zip(b[1:], powers[1:], strict=False):
            denominator = denominator + (coefficient * power).abs()
        return numerator / denominator


def activation_module(name: str) -> nn.Module:
    """Returns the activation named in a config (``leaky_relu``, ``relu``, ``gelu``, ``mish``, ``silu``,
    ``adaptive``).

    Each call makes a new module; ``adaptive`` has learnable coefficients, so a network that calls this once
    and reuses the module shares one set of them across the places it is applied.
    """
    table: dict[str, type[nn.Module]] = {
        "leaky_relu": nn.LeakyReLU,
        "relu": nn.ReLU,
        "gelu": nn.GELU,
        "mish": nn.Mish,
        "silu": nn.SiLU,
        "adaptive": AdaptiveRational,
    }
    if name not in table:
        msg = f"unknown activation {name!r}; choose one of {sorted(table)}."
        raise ValueError(msg)
    return table[name]()


def symlog(x: torch.Tensor) -> torch.Tensor:
    """sign(x)·log(|x| + 1): squashes large rewards while keeping small ones almost linear."""
    return torch.sign(x) * torch.log1p(x.abs())


class RMSNorm(nn.Module):
    """Root-mean-square normalisation with a learned scale."""

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalises the last dimension."""
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.scale


class UnitBall(nn.Module):
    """Projects each vector to (about) unit length; ``scale_by_sqrt_dim`` gives the hypersphere variant."""

    def __init__(self, dim: int, scale_by_sqrt_dim: bool) -> None:
        super().__init__()
        self.factor = math.sqrt(dim) if scale_by_sqrt_dim else 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalises the last dimension."""
        return self.factor * x / (x.norm(dim=-1, keepdim=True) + 1e-5)


class SimNorm(nn.Module):
    """Softmax within consecutive groups of 8 features (TD-MPC2's simplicial normalisation)."""

    group = 8

    def __init__(self, dim: int) -> None:
        super().__init__()
        if dim % self.group != 0:
            msg = f"simnorm needs a width divisible by {self.group}, got {dim}; pick another norm or width."
            raise ValueError(msg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalises the last dimension in groups."""
        shape = x.shape
        return F.softmax(x.reshape(*shape[:-1], -1, self.group), dim=-1).reshape(shape)


def normalization(method: str, dim: int) -> nn.Module:
    """Returns the normalisation named in a config for vectors of size ``dim``."""
    if method == "none":
        return nn.Identity()
    if method == "layer":
        return nn.LayerNorm(dim)
    if method == "rmsnorm":
        return RMSNorm(dim)
    if method == "unitball":
        return UnitBall(dim, scale_by_sqrt_dim=False)
    if method == "hypersphere":
        return UnitBall(dim, scale_by_sqrt_dim=True)
    if method == "simnorm":
        return SimNorm(dim)
    msg = f"unknown normalisation {method!r}; choose none, layer, rmsnorm, unitball, hypersphere or simnorm."
    raise ValueError(msg)


class MLP(nn.Module):
    """``n_layers`` × (Linear → norm → activation → dropout), then a plain output Linear.

    The layers share one activation module (see :func:`activation_module`).
    """

    def __init__(
        self,
        d_input: int,
        d_hidden: int,
        n_layers: int,
        d_output: int,
        activation: str = "leaky_relu",
        norm: str = "none",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = d_input
        # One activation module for every layer, as AMAGO's MLP: a learnable one (``adaptive``) then has one
        # set of coefficients per MLP, not one per layer.
        act = activation_module(activation)
        for _ in range(n_layers):
            layers += [nn.Linear(width, d_hidden), normalization(norm, d_hidden), act, nn.Dropout(dropout)]
            width = d_hidden
        layers.append(nn.Linear(width, d_output))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Applies the MLP to the last dimension."""
        return self.net(x)


class FFBlock(nn.Module):
    """Residual feed-forward block: ``x + drop(act(norm2(ff2(drop(act(norm1(ff1(x))))))))``."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str, norm: str) -> None:
        super().__init__()
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = normalization(norm, d_ff)
        self.norm2 = normalization(norm, d_model)
        self.act = activation_module(activation)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Applies the block."""
        inner = self.drop(self.act(self.norm1(self.ff1(x))))
        return x + self.drop(self.act(self.norm2(self.ff2(inner))))


class InputNorm(nn.Module):
    """Standardises inputs with running statistics updated in train mode (bias-corrected EMA, like PopArt).

    Rows flagged by ``pad_mask`` are left out of the statistics; in eval mode the statistics are frozen, so
    rollouts and training see the same transform between updates.
    """

    mu: torch.Tensor
    nu: torch.Tensor
    steps: torch.Tensor

    def __init__(self, dim: int, beta: float = 1e-4, init_nu: float = 1.0) -> None:
        super().__init__()
        self.beta = beta
        self.register_buffer("mu", torch.zeros(dim))
        self.register_buffer("nu", torch.full((dim,), float(init_nu)))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    @property
    def sigma(self) -> torch.Tensor:
        """Running standard deviation, clamped away from 0 and infinity."""
        return (self.nu - self.mu.pow(2) + 1e-5).clamp_min(0).sqrt().clamp(1e-3, 1e6)

    @torch.no_grad()
    def update_stats(self, x: torch.Tensor, pad_mask: torch.Tensor | None = None) -> None:
        """Folds a batch (..., dim) into the running mean and second moment."""
        flat = x.reshape(-1, x.shape[-1]).float()
        if pad_mask is not None:
            flat = flat[~pad_mask.reshape(-1)]
        if flat.shape[0] == 0:
            return
        self.steps += 1
        # Bias correction with the initial statistics counted as one earlier observation (AMAGO's counter starts
        # at 1), so the first batch mixes about half and half with mu = 0, nu = init_nu instead of replacing them.
        # In float32 on the device (no host sync), as AMAGO computes it, so the rounding is the same too.
        beta_t = self.beta / (1.0 - (1.0 - self.beta) ** (self.steps + 1).to(self.mu.dtype))
        self.mu.mul_(1 - beta_t).add_(beta_t * flat.mean(0))
        self.nu.mul_(1 - beta_t).add_(beta_t * flat.pow(2).mean(0))

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Returns ``(x - mu) / sigma`` (clamped ±1e4), updating the statistics first in train mode."""
        if self.training:
            self.update_stats(x, pad_mask)
        sigma = self.sigma
        centred = x - self.mu
        # Near-constant features would be blown up by a tiny sigma; centring alone is the safer choice.
        scaled = (centred / sigma).clamp(-1e4, 1e4)
        return torch.where((sigma > 0.01) & torch.isfinite(scaled), scaled, centred)


class SigmaReparamLinear(nn.Module):
    """Linear layer with ``W_hat = gamma / sigma(W) · W`` (σReparam, Zhai et al. 2023).

    ``sigma(W)`` is estimated as ``uᵀWv`` with ``u, v`` refined by one power-iteration step per training
    forward; eval mode uses the stored vectors, so rollouts are deterministic.
    """

    u: torch.Tensor
    v: torch.Tensor

    def __init__(self, d_in: int, d_out: int, bias: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_out, d_in))
        nn.init.trunc_normal_(self.weight, std=0.02)
        self.bias = nn.Parameter(torch.zeros(d_out)) if bias else None
        with torch.no_grad():
            u, _, vh = torch.linalg.svd(self.weight, full_matrices=False)
        self.register_buffer("u", u[:, 0].clone())
        self.register_buffer("v", vh[0].clone())
        self.gamma = nn.Parameter(torch.ones(()))
        self._eval_weight: torch.Tensor | None = None
        self._eval_key: tuple[int, ...] | None = None

    def _state_key(self) -> tuple[int, ...]:
        # In-place updates (optimiser steps, load_state_dict, power iterations) bump a tensor's version
        # counter, so equal keys mean W_hat is unchanged. Read from the parameter and buffer dicts: this runs
        # on every rollout step of every such layer, and attribute access through nn.Module costs more.
        params, buffers = self._parameters, self._buffers
        w, g, u, v = params["weight"], params["gamma"], buffers["u"], buffers["v"]
        if w is None or g is None or u is None or v is None:  # only if someone deleted them
            return ()
        return (
            w._version, g._version, u._version, v._version, w.data_ptr(), g.data_ptr(), u.data_ptr(), v.data_ptr()
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Applies the reparametrised linear map."""
        if self.training:
            with torch.no_grad():
                # u first, then v from the new u (AMAGO's order of the power-iteration step).
                self.u.copy_(F.normalize(self.weight @ self.v, dim=0))
                self.v.copy_(F.normalize(self.weight.t() @ self.u, dim=0))
        elif not torch.is_grad_enabled() and not torch.compiler.is_exporting():
            # Rollouts run the same weights for many steps: build W_hat once until any input changes. (Not
            # while torch.export captures a graph: its fake tensors have no data pointers to key the cache on.)
            key = self._state_key()
            if self._eval_weight is None or key != self._eval_key:
                sigma = torch.einsum("o,oi,i->", self.u, self.weight, self.v)
                self._eval_weight = self.gamma / sigma * self.weight
                self._eval_key = key
            return F.linear(x, self._eval_weight, self.bias)
        sigma = torch.einsum("o,oi,i->", self.u, self.weight, self.v)
        return F.linear(x, self.gamma / sigma * self.weight, self.bias)


def linear_layer(d_in: int, d_out: int, *, bias: bool = True, sigma_reparam: bool = False) -> nn.Module:
    """A plain ``nn.Linear`` or, when asked, a :class:`SigmaReparamLinear`."""
    if sigma_reparam:
        return SigmaReparamLinear(d_in, d_out, bias=bias)
    return nn.Linear(d_in, d_out, bias=bias)
