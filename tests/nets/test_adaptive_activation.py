"""``activation="adaptive"``: the learnable rational activation (AMAGO's ``SlowAdaptiveRational``).

Its values and gradients against AMAGO's own class are in ``test_nets_against_amago.py``; here: its shape as a
function, where the built-in components share its coefficients, and every component's conformance check.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from amago_core.testing.check import check_component
from amago_nets import specs
from amago_nets.cnn import NatureishCNN
from amago_nets.layers import MLP, AdaptiveRational, activation_module
from amago_nets.traj_transformer import TransformerTrajEncoder


def _rationals(module: torch.nn.Module) -> list[AdaptiveRational]:
    """The distinct rational activations of ``module`` (``modules()`` lists a shared module once)."""
    return [m for m in module.modules() if isinstance(m, AdaptiveRational)]


def test_it_starts_close_to_leaky_relu() -> None:
    x = torch.linspace(-3, 3, 601)
    with torch.no_grad():
        gap = (activation_module("adaptive")(x) - F.leaky_relu(x, 0.01)).abs()
    assert float(gap.max()) < 0.05


def test_it_has_no_poles_whatever_the_coefficients() -> None:
    """Every term of the denominator enters by its absolute value, so it never falls below 1."""
    torch.manual_seed(0)
    rational = AdaptiveRational()
    x = torch.linspace(-5, 5, 2001)
    for _ in range(20):
        with torch.no_grad():
            rational.numerator.normal_()
            rational.denominator.normal_(std=3.0)
            numerator = sum(a * x**i for i, a in enumerate(rational.numerator))
            assert torch.isfinite(rational(x)).all()
            # P / f == Q >= 1 wherever f is not tiny.
            y = rational(x)
            big = y.abs() > 1e-3
            assert bool((numerator[big] / y[big] >= 1 - 1e-4).all())


def test_its_coefficients_learn() -> None:
    rational = AdaptiveRational()
    rational(torch.randn(10)).square().sum().backward()
    for coefficients in (rational.numerator, rational.denominator):
        assert coefficients.grad is not None
        assert coefficients.grad.abs().sum() > 0


def test_it_keeps_the_input_dtype_and_shape() -> None:
    x = torch.randn(2, 3, 5, 7, dtype=torch.float64)
    y = AdaptiveRational()(x)
    assert (y.shape, y.dtype) == (x.shape, x.dtype)


def test_an_mlp_and_a_nature_cnn_share_one_set_of_coefficients_as_in_amago() -> None:
    mlp = MLP(4, 8, n_layers=3, d_output=2, activation="adaptive")
    assert len(_rationals(mlp)) == 1
    cnn = NatureishCNN((36, 36, 3), activation="adaptive")
    assert len(_rationals(cnn)) == 1
    # A shared module's coefficients are one parameter each, however many layers apply it.
    assert sum(p.numel() for m in _rationals(mlp) for p in m.parameters()) == 10


def test_a_transformer_has_one_per_layer_as_in_amago() -> None:
    config = specs.TransformerTrajEncoderConfig(
        d_model=16, n_heads=2, d_ff=32, n_layers=3, activation="adaptive"
    )
    assert len(_rationals(TransformerTrajEncoder(config, tstep_dim=4, max_seq_len=8))) == 3


def test_an_unknown_activation_names_the_choices() -> None:
    with pytest.raises(ValueError, match="adaptive"):
        activation_module("swish")


@pytest.mark.parametrize(
    ("group", "name", "config"),
    [
        ("tstep-encoders", "ff", {"n_layers": 2, "d_hidden": 16, "d_output": 16, "activation": "adaptive"}),
        ("tstep-encoders", "cnn", {"img_features": 16, "d_output": 16, "activation": "adaptive"}),
        (
            "tstep-encoders",
            "cnn",
            {"cnn_type": "impala", "impala_block_depths": [4, 8], "d_output": 16, "activation": "adaptive"},
        ),
        (
            "tstep-encoders",
            "xland",
            {**specs.XLandTstepEncoderConfig().smoke_options(), "activation": "adaptive"},
        ),
        (
            "tstep-encoders",
            "babyai",
            {**specs.BabyAITstepEncoderConfig().smoke_options(), "activation": "adaptive"},
        ),
        ("traj-encoders", "ff", {"d_model": 16, "n_layers": 2, "activation": "adaptive"}),
        (
            "traj-encoders",
            "transformer",
            {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2, "activation": "adaptive"},
        ),
    ],
    ids=["ff-tstep", "nature-cnn", "impala-cnn", "xland", "babyai", "ff-traj", "transformer"],
)
def test_components_with_the_adaptive_activation_pass_check_component(
    group: str, name: str, config: dict
) -> None:
    report = check_component(group, name, config=config)
    assert report.passed[-1].endswith("behaviour checks")
