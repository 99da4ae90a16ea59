"""amago-nets' pieces against AMAGO v3.3.0's: rational activation, clipped sliding-sink attention, CNN backbones.

Shared by ``bench/nets_parity_vs_amago.py`` (which runs AMAGO on :func:`make_inputs` in its own venv, through
``bench/nets_amago_ref.py``) and ``tests/nets/test_nets_against_amago.py`` (which compares amago with the numbers
recorded in :data:`FIXTURE`, so no AMAGO install is needed). The approach is ``parity_cases``', at the level of
single components:

- ``rational`` cases: AMAGO's ``SlowAdaptiveRational`` (activation ``"adaptive"``) against
  :class:`amago_nets.layers.AdaptiveRational`: the initial coefficients; then, on each side's initial ones
  (``rational-init``) or on those moved by the same offsets (``rational-perturbed``, as after training), the
  values and the gradients of ``sum(f(x) * upstream)`` with respect to the input and both coefficient vectors.
- ``sliding_sink`` cases: AMAGO's ``ClippedSlidingSinkAttention`` against amago's ``sliding_sink`` attention
  on the same queries, keys and values: the training forward over a whole sequence, and a rollout step by
  step through each library's KV cache with rows restarting at different steps. AMAGO's ``window_size = w``
  lets a query see the ``w`` steps before it, amago's ``window_size`` counts the query too: amago runs
  ``w + 1``.
- ``cnn`` cases: AMAGO's image backbones (``NatureishCNN`` with other channels, kernels and strides than DQN's,
  ``DrQCNN``, ``GridworldCNN``) against the backbone amago's ``cnn`` timestep encoder builds from the same options
  (``cnn_type``, ``cnn_channels``, ``cnn_kernels``, ``cnn_strides``): which init each applies (``init_flags``, per
  convolution: off-centre taps zero, biases zero, centre tap orthogonal with leaky ReLU's gain: AMAGO's
  delta-orthogonal init, or torch's default), then, with the case's weights loaded (amago's side maps AMAGO's
  names through ``amago.from_amago.amago_state_dict_to_amago``), the features of uint8 frames and the gradients
  of ``sum(features * upstream)`` for the first convolution's weight and every bias.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "nets_amago-3.3.0.npz"
"""Inputs and AMAGO's outputs of every case (written by ``bench/nets_parity_vs_amago.py --record``)."""

ATOL, RTOL = 1e-5, 1e-4
"""Float32 tolerance: ``|amago - AMAGO| <= ATOL + RTOL * |AMAGO|`` elementwise (``parity_cases``' too)."""

BATCH, LENGTH, HEADS, HEAD_DIM = 3, 14, 2, 8
RESTARTS = ((), (4,), (2, 9))
"""Steps after which each rollout row's episode ends (the next step starts a new one)."""

CASES: list[dict[str, Any]] = [
    {"name": "rational-init", "kind": "rational", "perturb": 0.0},
    {"name": "rational-perturbed", "kind": "rational", "perturb": 0.4},
    # Logits of these inputs spread over about ±6, so every clip below is active on most pairs.
    {"name": "sink-w3-s2-clip0.5", "kind": "sliding_sink", "window": 3, "sink": 2, "logit_clip": 0.5},
    {"name": "sink-w3-s2-noclip", "kind": "sliding_sink", "window": 3, "sink": 2, "logit_clip": None},
    {"name": "sink-w4-s0-clip1", "kind": "sliding_sink", "window": 4, "sink": 0, "logit_clip": 1.0},
    {"name": "sink-w1-s3-clip2", "kind": "sliding_sink", "window": 1, "sink": 3, "logit_clip": 2.0},
    {"name": "sink-w20-s1-clip0.3", "kind": "sliding_sink", "window": 20, "sink": 1, "logit_clip": 0.3},
    # Image backbones: ``options`` are AMAGO's keyword arguments (and amago's cnn_<option> fields).
    {
        "name": "cnn-nature-custom",
        "kind": "cnn",
        "cnn_type": "nature",
        "options": {"channels": [6, 8, 10], "kernels": [5, 3, 2], "strides": [2, 2, 1]},
        "img_shape": [26, 26, 3],
        "channels_first": False,
        "activation": "leaky_relu",
    },
    {
        "name": "cnn-drq",
        "kind": "cnn",
        "cnn_type": "drq",
        "options": {},
        "img_shape": [2, 15, 15],
        "channels_first": True,
        "activation": "gelu",
    },
    {
        "name": "cnn-gridworld",
        "kind": "cnn",
        "cnn_type": "gridworld",
        "options": {},
        "img_shape": [7, 7, 3],
        "channels_first": False,
        "activation": "leaky_relu",
    },
    {
        "name": "cnn-gridworld-custom",
        "kind": "cnn",
        "cnn_type": "gridworld",
        "options": {"channels": [4, 6, 8], "kernels": [3, 2, 1], "strides": [2, 1, 1]},
        "img_shape": [3, 11, 9],
        "channels_first": True,
        "activation": "relu",
    },
]

CNN_FRAMES = (2, 2)
"""(batch, length) of each cnn case's uint8 frames."""

_CNN_DEFAULTS = {
    "nature": ([32, 64, 64], [8, 4, 3], [4, 2, 1]),
    "drq": ([32, 32, 32, 32], [3, 3, 3, 3], [2, 1, 1, 1]),
    "gridworld": ([16, 32, 48], [2, 2, 2], [1, 1, 1]),
}
"""AMAGO v3.3.0's layers of each backbone: (channels, kernels, strides)."""


def cnn_layers(case: dict[str, Any]) -> list[tuple[int, int, int, int]]:
    """(in channels, out channels, kernel, stride) of each convolution of a cnn case's backbone."""
    channels, kernels, strides = _CNN_DEFAULTS[case["cnn_type"]]
    options = case["options"]
    channels = options.get("channels", channels)
    kernels, strides = options.get("kernels", kernels), options.get("strides", strides)
    shape = case["img_shape"]
    ins = [shape[0] if case["channels_first"] else shape[-1], *channels[:-1]]
    return list(zip(ins, channels, kernels, strides, strict=True))


def cnn_feature_size(case: dict[str, Any]) -> int:
    """Flattened feature size of a cnn case's backbone (valid convolutions, no padding)."""
    shape = case["img_shape"]
    height, width = shape[1:] if case["channels_first"] else shape[:2]
    layers = cnn_layers(case)
    for _, _, kernel, stride in layers:
        height, width = (height - kernel) // stride + 1, (width - kernel) // stride + 1
    return layers[-1][1] * height * width


def make_inputs(case: dict[str, Any]) -> dict[str, np.ndarray]:
    """Seeded inputs of a case (numpy)."""
    rng = np.random.default_rng(sum(map(ord, case["name"])))
    if case["kind"] == "rational":
        grid = np.linspace(-4.0, 4.0, 81, dtype=np.float32)
        x = np.concatenate([grid, rng.normal(0.0, 2.0, 79).astype(np.float32)]).reshape(4, 40)
        # Each side moves its own initial coefficients by these, so the initial ones are compared too:
        # numerator + delta, denominator * scale + delta (sign flips included: Q's terms enter by their
        # absolute values, whatever the signs).
        perturb = case["perturb"]
        return {
            "x": x,
            "upstream": rng.normal(size=x.shape).astype(np.float32),
            "numerator_delta": (perturb * rng.normal(size=6)).astype(np.float32),
            "denominator_scale": np.array([1, -1, 1, -1] if perturb else [1, 1, 1, 1], dtype=np.float32),
            "denominator_delta": (perturb * rng.normal(size=4)).astype(np.float32),
        }
    if case["kind"] == "cnn":
        return _cnn_inputs(case, rng)
    qkv = rng.normal(0.0, 1.5, (BATCH, LENGTH, 3, HEADS, HEAD_DIM)).astype(np.float32)
    restarts = np.zeros((BATCH, LENGTH), dtype=bool)
    for row, ends in enumerate(RESTARTS):
        restarts[row, list(ends)] = True
    return {"qkv": qkv, "restarts": restarts}


def _cnn_inputs(case: dict[str, Any], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """uint8 frames, AMAGO-named weights (``param_conv{i}.weight`` / ``.bias``; float16 values, to keep the
    fixture small, used as float32) and the upstream gradient of the features."""
    frames = rng.integers(0, 256, (*CNN_FRAMES, *case["img_shape"]), dtype=np.uint8)
    inputs = {"frames": frames}
    for i, (c_in, c_out, kernel, _) in enumerate(cnn_layers(case), start=1):
        # A wider spread than torch's init, so that activations' negative sides and every tap matter.
        scale = 1.5 / math.sqrt(c_in * kernel * kernel)
        inputs[f"param_conv{i}.weight"] = rng.normal(0.0, scale, (c_out, c_in, kernel, kernel)).astype(
            np.float16
        )
        inputs[f"param_conv{i}.bias"] = rng.normal(0.0, 0.2, c_out).astype(np.float16)
    inputs["upstream"] = rng.normal(size=(*CNN_FRAMES, cnn_feature_size(case))).astype(np.float32)
    return inputs


def cnn_init_flags(weights: dict[str, Any], n_convs: int) -> np.ndarray:
    """Per convolution ``i`` (AMAGO names ``conv{i}.weight`` / ``.bias`` in ``weights``, torch tensors): whether
    the off-centre taps are zero, the biases are zero, and the centre tap is orthogonal with leaky ReLU's gain
    (AMAGO's delta-orthogonal init gives 1, 1, 1; torch's default 0, 0, 0)."""
    gain_sq = torch.nn.init.calculate_gain("leaky_relu") ** 2
    flags = np.zeros((n_convs, 3), dtype=np.float32)
    for i in range(n_convs):
        weight = weights[f"conv{i + 1}.weight"].detach().double()
        bias = weights[f"conv{i + 1}.bias"].detach()
        mid = weight.shape[2] // 2
        centre = weight[:, :, mid, mid]
        off = weight.clone()
        off[:, :, mid, mid] = 0.0
        gram = centre @ centre.T if centre.shape[0] <= centre.shape[1] else centre.T @ centre
        orthogonal = torch.allclose(gram, gain_sq * torch.eye(gram.shape[0], dtype=gram.dtype), atol=1e-4)
        flags[i] = [float(not off.any()), float(not bias.any()), float(orthogonal)]
    return flags


# ------------------------------------------------------------------------------------------------------
# amago's side
# ------------------------------------------------------------------------------------------------------


def amago_outputs(case: dict[str, Any], inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What amago computes on a case's inputs, named like AMAGO's outputs."""
    if case["kind"] == "rational":
        return _rational(inputs)
    if case["kind"] == "cnn":
        return _cnn(case, inputs)
    return _sliding_sink(case, inputs)


def _rational(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from amago_nets.layers import activation_module

    rational = activation_module("adaptive")
    init_numerator = rational.numerator.detach().numpy().copy()
    init_denominator = rational.denominator.detach().numpy().copy()
    with torch.no_grad():
        rational.numerator.add_(torch.from_numpy(inputs["numerator_delta"]))
        rational.denominator.mul_(torch.from_numpy(inputs["denominator_scale"]))
        rational.denominator.add_(torch.from_numpy(inputs["denominator_delta"]))
    x = torch.from_numpy(inputs["x"]).requires_grad_(True)
    y = rational(x)
    (y * torch.from_numpy(inputs["upstream"])).sum().backward()
    return {
        "init_numerator": init_numerator,
        "init_denominator": init_denominator,
        "y": y.detach().numpy(),
        "grad_x": x.grad.numpy(),
        "grad_numerator": rational.numerator.grad.numpy(),
        "grad_denominator": rational.denominator.grad.numpy(),
    }


def _sliding_sink(case: dict[str, Any], inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from amago_nets.attention import attend_cached, attend_window
    from amago_nets.kv_cache import KVCache

    context = case["window"] + 1  # AMAGO's window leaves the query out, amago's counts it
    sink, clip = case["sink"], case["logit_clip"]
    q, k, v = torch.from_numpy(inputs["qkv"]).unbind(dim=2)
    train = attend_window(
        q, k, v, context=context, dropout_p=0.0, backend="sliding_sink", sink=sink, logit_clip=clip
    )
    # The rollout as the encoder's step runs it: a sorted-row cache of window + sink slots per row.
    cache = KVCache.empty(1, BATCH, context + sink, HEADS, HEAD_DIM, "cpu", heads_first=True, sink=sink)
    steps = []
    for t in range(LENGTH):
        cache.write(0, cache.by_row(k[:, t : t + 1]), cache.by_row(v[:, t : t + 1]))
        valid = cache.by_row(cache.valid_after_write())
        out = attend_cached(
            cache.by_row(q[:, t : t + 1]),
            cache.layer_keys(0),
            cache.layer_values(0),
            valid,
            backend="sliding_sink",
            logit_clip=clip,
        )
        steps.append(cache.by_env(out))
        cache = cache.advanced().reset(inputs["restarts"][:, t])
    return {"train": train.numpy(), "rollout": torch.cat(steps, dim=1).numpy()}


def _cnn(case: dict[str, Any], inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from gymnasium import spaces

    from amago.from_amago import amago_state_dict_to_amago
    from amago_nets.specs import CNNTstepEncoderConfig
    from amago_nets.tstep_cnn import CNNTstepEncoder

    options = {f"cnn_{name}": tuple(value) for name, value in case["options"].items()}
    config = CNNTstepEncoderConfig(
        cnn_type=case["cnn_type"],
        channels_first=case["channels_first"],
        activation=case["activation"],
        **options,
    )
    obs_space = spaces.Dict({"observation": spaces.Box(0, 255, tuple(case["img_shape"]), np.uint8)})
    encoder = CNNTstepEncoder(config, obs_space=obs_space, rl2_space=spaces.Box(-1.0, 1.0, (3,)))
    backbone = encoder.cnn
    n_convs = len(cnn_layers(case))
    # The init amago applied, read under AMAGO's names (through the same weight mapping as below).
    holder = torch.nn.Module()
    holder.tstep_encoder = torch.nn.Module()
    holder.tstep_encoder.cnn = backbone
    ours_by_amago_name = {
        f"conv{i}.{leaf}": backbone.state_dict()[f"net.{2 * (i - 1)}.{leaf}"]
        for i in range(1, n_convs + 1)
        for leaf in ("weight", "bias")
    }
    init_flags = cnn_init_flags(ours_by_amago_name, n_convs)
    amago_sd = {
        f"tstep_encoder.cnn.{key.removeprefix('param_')}": torch.from_numpy(value.astype(np.float32))
        for key, value in inputs.items()
        if key.startswith("param_")
    }
    holder.load_state_dict(amago_state_dict_to_amago(amago_sd, holder), strict=True)
    features = backbone(torch.from_numpy(inputs["frames"]))
    (features * torch.from_numpy(inputs["upstream"])).sum().backward()
    params = dict(backbone.named_parameters())
    out = {"init_flags": init_flags, "features": features.detach().numpy()}
    out["grad_conv1.weight"] = params["net.0.weight"].grad.numpy()
    for i in range(1, n_convs + 1):
        out[f"grad_conv{i}.bias"] = params[f"net.{2 * (i - 1)}.bias"].grad.numpy()
    return out


# ------------------------------------------------------------------------------------------------------
# Comparison and fixture
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


def compare(
    case: dict[str, Any], inputs: dict[str, np.ndarray], reference: dict[str, np.ndarray]
) -> list[Row]:
    """One row per quantity AMAGO recorded for ``case``: amago's value against AMAGO's."""
    ours = amago_outputs(case, inputs)
    rows = []
    for quantity in sorted(reference):
        a = np.asarray(ours[quantity], dtype=np.float64)
        b = np.asarray(reference[quantity], dtype=np.float64)
        if a.shape != b.shape:
            rows.append(
                Row(case["name"], quantity, math.inf, math.inf, False, f"shapes {a.shape} vs {b.shape}")
            )
            continue
        diff = np.abs(a - b)
        ok = bool(np.all(diff <= ATOL + RTOL * np.abs(b)))
        rel = float((diff / np.maximum(np.abs(b), 1e-12)).max())
        rows.append(Row(case["name"], quantity, float(diff.max()), rel, ok))
    return rows


def write_fixture(
    path: Path, inputs: dict[str, dict[str, np.ndarray]], references: dict[str, dict[str, np.ndarray]]
) -> None:
    """Writes every case's inputs and AMAGO's outputs into one compressed npz."""
    flat: dict[str, np.ndarray] = {}
    for name, case_inputs in inputs.items():
        flat.update({f"{name}/input/{k}": v for k, v in case_inputs.items()})
        flat.update({f"{name}/ref/{k}": v for k, v in references[name].items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **flat)


def read_fixture(path: Path = FIXTURE) -> dict[str, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """``{case: (inputs, AMAGO's outputs)}`` from a fixture file."""
    out: dict[str, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = {}
    with np.load(path) as data:
        for key in data.files:
            name, part, field = key.split("/", 2)
            inputs, reference = out.setdefault(name, ({}, {}))
            (inputs if part == "input" else reference)[field] = data[key]
    return out
