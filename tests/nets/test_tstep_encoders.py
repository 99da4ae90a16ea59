"""Timestep encoders: the built-ins and a user's own encoder pass the check; the options do what they say."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest
import torch
from gymnasium import spaces

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec
from amago_core.testing.nets_checks import check_tstep_encoder
from amago_nets import specs
from amago_nets.cnn import DrQv2Aug
from amago_nets.tstep_cnn import CNNTstepEncoder
from amago_nets.tstep_ff import FFTstepEncoder

VECTOR_SPACE = spaces.Dict({"observation": spaces.Box(-1.0, 1.0, shape=(5,), dtype=np.float32)})
RL2_SPACE = spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32)
MIXED_SPACE = spaces.Dict({"grid": spaces.Box(0, 1, shape=(2, 3)), "step": spaces.Discrete(4)})
IMAGE_CF_SPACE = spaces.Dict({"pixels": spaces.Box(0, 255, shape=(3, 36, 36), dtype=np.uint8)})
SMALL_FF = {"d_hidden": 16, "d_output": 8}
SMALL_CNN = {"img_features": 16, "d_output": 8}


@pytest.mark.parametrize(
    ("spec", "config", "obs_space"),
    [
        (specs.FF_TSTEP, None, None),
        (specs.FF_TSTEP, {**SMALL_FF, "norm": "rmsnorm", "out_norm": "simnorm"}, MIXED_SPACE),
        (specs.FF_TSTEP, {**SMALL_FF, "normalize_inputs": False, "auto_scale": True}, MIXED_SPACE),
        (specs.CNN_TSTEP, None, None),
        (specs.CNN_TSTEP, {**SMALL_CNN, "cnn_type": "impala", "impala_block_depths": (4, 8)}, None),
        (
            specs.CNN_TSTEP,
            {**SMALL_CNN, "obs_key": "pixels", "channels_first": True, "drqv2_aug": True},
            IMAGE_CF_SPACE,
        ),
        (specs.CNN_TSTEP, {**SMALL_CNN, "cnn_type": "drq"}, None),
        (specs.CNN_TSTEP, {**SMALL_CNN, "cnn_type": "gridworld", "activation": "adaptive"}, None),
        (
            specs.CNN_TSTEP,
            {
                **SMALL_CNN,
                "obs_key": "pixels",
                "channels_first": True,
                "cnn_channels": (4, 8),
                "cnn_kernels": (5, 3),
                "cnn_strides": (3, 2),
            },
            IMAGE_CF_SPACE,
        ),
    ],
    ids=[
        "ff-default",
        "ff-mixed-keys",
        "ff-autoscale",
        "cnn-default",
        "cnn-impala",
        "cnn-channels-first-aug",
        "cnn-drq",
        "cnn-gridworld-adaptive",
        "cnn-nature-two-layers",
    ],
)
def test_builtin_passes_the_check(
    spec: ComponentSpec, config: dict | None, obs_space: spaces.Dict | None
) -> None:
    check_tstep_encoder(spec, config, obs_space=obs_space)


class RobotConfig(ComponentConfig):
    """Config of the seeds' tutorial encoder, as a plugin would declare it."""

    kind: Literal["robot"] = "robot"
    """Registered name."""


@pytest.mark.usefixtures("helpers_on_path")
def test_a_users_multimodal_encoder_plugs_in_as_a_component() -> None:
    spec = ComponentSpec(
        name="robot",
        group="amago.tstep_encoders",
        summary="image + joints",
        config=RobotConfig,
        factory="nets_test_helpers:MultiModalRobotTstepEncoder",
    )
    obs_space = spaces.Dict(
        {
            "image": spaces.Box(0, 255, shape=(36, 36, 3), dtype=np.uint8),
            "joints": spaces.Box(-1, 1, shape=(7,)),
        }
    )
    check_tstep_encoder(spec, None, obs_space=obs_space)
    assert spec.build(None, obs_space=obs_space, rl2_space=RL2_SPACE).emb_dim == 64


@pytest.mark.usefixtures("helpers_on_path")
def test_check_catches_an_encoder_that_mixes_timesteps() -> None:
    spec = ComponentSpec(
        name="robot",
        group="amago.tstep_encoders",
        summary="peeks",
        config=RobotConfig,
        factory="nets_test_helpers:PeekingTstepEncoder",
    )
    with pytest.raises(AssertionError, match="encoded independently"):
        check_tstep_encoder(spec, None)


def _ff(**options: object) -> FFTstepEncoder:
    config = specs.FFTstepEncoderConfig(**{**SMALL_FF, **options})
    return FFTstepEncoder(config, obs_space=VECTOR_SPACE, rl2_space=RL2_SPACE)


def test_hide_rewards_zeroes_only_the_reward_column() -> None:
    encoder = _ff(hide_rewards=True).eval()
    obs = {"observation": torch.randn(2, 3, 5)}
    rl2s = torch.randn(2, 3, 3)
    other_rewards = rl2s.clone()
    other_rewards[..., 0] += 5.0
    torch.testing.assert_close(encoder(obs, rl2s), encoder(obs, other_rewards))
    other_actions = rl2s.clone()
    other_actions[..., 1] += 5.0
    assert not torch.allclose(encoder(obs, rl2s), encoder(obs, other_actions))


def test_hide_rl2s_zeroes_the_whole_rl2_vector() -> None:
    encoder = _ff(hide_rl2s=True).eval()
    obs = {"observation": torch.randn(2, 3, 5)}
    torch.testing.assert_close(encoder(obs, torch.randn(2, 3, 3)), encoder(obs, torch.randn(2, 3, 3)))


def test_input_statistics_update_in_train_mode_only() -> None:
    encoder = _ff()
    obs, rl2s = {"observation": torch.randn(2, 3, 5) + 3.0}, torch.randn(2, 3, 3)
    encoder.eval()
    encoder(obs, rl2s)
    assert encoder.input_norm.mu.abs().sum() == 0
    encoder.train()
    encoder(obs, rl2s)
    assert encoder.input_norm.mu.abs().sum() > 0


def test_ff_rejects_an_unknown_obs_key_with_a_suggestion() -> None:
    with pytest.raises(ValueError, match="Did you mean 'observation'"):
        _ff(obs_keys=("observaton",))


def test_cnn_rejects_an_unknown_image_key() -> None:
    config = specs.CNNTstepEncoderConfig(obs_key="image")
    with pytest.raises(ValueError, match="set obs_key to the image key"):
        CNNTstepEncoder(config, obs_space=VECTOR_SPACE, rl2_space=RL2_SPACE)


@pytest.mark.parametrize(
    ("cnn_type", "backbone", "convs", "delta_orthogonal"),
    [
        ("nature", "NatureishCNN", [(32, 8, 4), (64, 4, 2), (64, 3, 1)], True),
        ("drq", "DrQCNN", [(32, 3, 2), (32, 3, 1), (32, 3, 1), (32, 3, 1)], True),
        ("gridworld", "GridworldCNN", [(16, 2, 1), (32, 2, 1), (48, 2, 1)], False),
    ],
)
def test_plain_cnn_backbones_have_amagos_layers_and_init(
    cnn_type: str, backbone: str, convs: list[tuple[int, int, int]], delta_orthogonal: bool
) -> None:
    space = spaces.Dict({"observation": spaces.Box(0, 255, shape=(36, 36, 3), dtype=np.uint8)})
    config = specs.CNNTstepEncoderConfig(**SMALL_CNN, cnn_type=cnn_type)
    cnn = CNNTstepEncoder(config, obs_space=space, rl2_space=RL2_SPACE).cnn
    assert type(cnn).__name__ == backbone
    layers = [m for m in cnn.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(m.out_channels, m.kernel_size[0], m.stride[0]) for m in layers] == convs
    # The parameters keep the nature backbone's names (net.{2 i}), which the AMAGO weight mapping relies on.
    assert sorted(cnn.state_dict()) == sorted(
        f"net.{2 * i}.{leaf}" for i in range(len(convs)) for leaf in ("weight", "bias")
    )
    off_centre_zero = all((m.weight.count_nonzero() <= m.out_channels * m.in_channels) for m in layers)
    assert off_centre_zero is delta_orthogonal


def test_cnn_layer_options_are_checked() -> None:
    config = specs.CNNTstepEncoderConfig(cnn_type="gridworld", cnn_channels=(8, 8, 8))
    assert config.conv_layers() == ((8, 8, 8), (2, 2, 2), (1, 1, 1))
    with pytest.raises(ValueError, match="only apply to cnn_type nature or gridworld"):
        specs.CNNTstepEncoderConfig(cnn_type="drq", cnn_kernels=(3, 3, 3))
    with pytest.raises(ValueError, match=r"must have the same length.*give all three"):
        specs.CNNTstepEncoderConfig(cnn_channels=(8, 8))
    with pytest.raises(ValueError, match="each at least 1"):
        specs.CNNTstepEncoderConfig(cnn_type="gridworld", cnn_strides=(1, 0, 1))
    small = spaces.Dict({"observation": spaces.Box(0, 255, shape=(10, 10, 3), dtype=np.uint8)})
    with pytest.raises(ValueError, match="use larger images or smaller kernels"):
        CNNTstepEncoder(specs.CNNTstepEncoderConfig(), obs_space=small, rl2_space=RL2_SPACE)


def test_drq_augmentation_shifts_train_rows_only() -> None:
    space = spaces.Dict({"observation": spaces.Box(0, 255, shape=(36, 36, 3), dtype=np.uint8)})
    config = specs.CNNTstepEncoderConfig(**SMALL_CNN, drqv2_aug=True, aug_pct_of_batch=0.5)
    encoder = CNNTstepEncoder(config, obs_space=space, rl2_space=RL2_SPACE)
    images = torch.randint(0, 256, (4, 2, 36, 36, 3), dtype=torch.uint8)
    torch.manual_seed(1)
    augmented = encoder.train()._maybe_augment(images)
    assert torch.equal(augmented[:2], images[:2])
    assert not torch.equal(augmented[2:], images[2:])
    assert torch.equal(encoder.eval()._maybe_augment(images), images)


def test_drq_shift_moves_pixels_by_whole_steps() -> None:
    torch.manual_seed(0)
    images = torch.arange(8 * 8, dtype=torch.float32).reshape(1, 1, 8, 8, 1).repeat(1, 1, 1, 1, 2)
    shifted = DrQv2Aug(pad=2)(images)
    assert shifted.shape == images.shape
    # Every output pixel is an input pixel (integer shift with replicate padding), not a blend.
    assert (shifted - shifted.round()).abs().max() < 1e-3
    assert set(shifted.round().unique().tolist()) <= set(images.unique().tolist())
    # A zero shift has probability 1/25 per frame; five frames all unshifted would mean no augmentation.
    batch = DrQv2Aug(pad=2)(images.repeat(5, 1, 1, 1, 1))
    assert any(not torch.equal(frame, images[0]) for frame in batch)
