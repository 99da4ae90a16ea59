"""The ``babyai`` and ``xland`` timestep encoders (AMAGO examples 10 and 11): conformance, keys, presets."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from amago_core.config.resolve import resolve_config
from amago_core.config.sizing import size_schedule
from amago_core.testing.check import check_component
from amago_core.testing.nets_checks import check_tstep_encoder
from amago_nets import specs
from amago_nets.specs import BabyAITstepEncoderConfig, XLandTstepEncoderConfig
from amago_nets.tstep_babyai import BabyAITstepEncoder
from amago_nets.tstep_xland import XLandTstepEncoder

RL2_SPACE = spaces.Box(-np.inf, np.inf, shape=(8,), dtype=np.float32)  # reward + BabyAI's 7 actions


def babyai_space(side: int = 7) -> spaces.Dict:
    """BabyAI's observation space as ``MultitaskBabyAI`` declares it (grid encoding or RGB image)."""
    return spaces.Dict(
        {
            "image": spaces.Box(0, 255, shape=(side, side, 3), dtype=np.uint8),
            "mission": spaces.Box(0, 33, shape=(9,), dtype=np.int32),
            "extra": spaces.Box(0.0, 1.0, shape=(5,), dtype=np.float32),
        }
    )


XLAND_SPACE = spaces.Dict(
    {
        "grid": spaces.Box(0, 13, shape=(5, 5, 2), dtype=np.uint8),
        "direction_done": spaces.Box(0.0, 1.0, shape=(5,), dtype=np.float32),
        "goal": spaces.Box(0, 255, shape=(5,), dtype=np.uint8),
    }
)


def sample(space: spaces.Dict, batch: int = 2, length: int = 3, seed: int = 0) -> dict[str, torch.Tensor]:
    """(batch, length) observations drawn from ``space`` with their declared dtypes."""
    space.seed(seed)
    rows = [[space.sample() for _ in range(length)] for _ in range(batch)]
    return {
        key: torch.as_tensor(np.array([[step[key] for step in row] for row in rows])) for key in space.spaces
    }


@pytest.mark.parametrize("name", ["babyai", "xland"])
def test_passes_check_component(name: str) -> None:
    report = check_component("tstep-encoders", name)
    assert report.passed[-1].endswith("behaviour checks")


def test_babyai_rgb_images_pass_the_check_with_the_nature_cnn() -> None:
    image_space = spaces.Dict(
        {
            "image": spaces.Box(0, 255, shape=(63, 63, 3), dtype=np.uint8),
            "mission": spaces.Box(0, 255, shape=(9,), dtype=np.uint8),
            "extra": spaces.Box(0.0, 1.0, shape=(5,), dtype=np.float32),
        }
    )
    check_tstep_encoder(specs.BABYAI_TSTEP, {"d_output": 16}, obs_space=image_space)


def test_babyai_picks_its_cnn_by_image_size() -> None:
    grid = BabyAITstepEncoder(obs_space=babyai_space(7), rl2_space=RL2_SPACE)
    image = BabyAITstepEncoder(obs_space=babyai_space(63), rl2_space=RL2_SPACE)
    grid_kernels = {m.kernel_size for m in grid.grid.cnn.modules() if isinstance(m, torch.nn.Conv2d)}
    image_kernels = [m.kernel_size for m in image.grid.cnn.modules() if isinstance(m, torch.nn.Conv2d)]
    assert grid.grid.embed
    assert grid_kernels == {(2, 2)}
    assert not image.grid.embed
    assert image_kernels == [(8, 8), (4, 4), (3, 3)]


@pytest.mark.parametrize(
    ("encoder_type", "space", "emb_dim"),
    [
        (BabyAITstepEncoder, babyai_space(7), 300),
        (BabyAITstepEncoder, babyai_space(63), 300),
        (XLandTstepEncoder, XLAND_SPACE, 256),
    ],
    ids=["babyai-grid", "babyai-image", "xland"],
)
def test_shapes_with_the_envs_spaces(encoder_type: type, space: spaces.Dict, emb_dim: int) -> None:
    encoder = encoder_type(obs_space=space, rl2_space=RL2_SPACE)
    out = encoder(sample(space, batch=2, length=3), torch.randn(2, 3, 8))
    assert encoder.emb_dim == emb_dim
    assert out.shape == (2, 3, emb_dim)
    assert torch.isfinite(out).all()


def test_missing_key_names_it_and_what_the_env_provides() -> None:
    no_mission = spaces.Dict({k: v for k, v in babyai_space().spaces.items() if k != "mission"})
    with pytest.raises(ValueError, match="mission_key='mission' is not an observation key") as raised:
        BabyAITstepEncoder(obs_space=no_mission, rl2_space=RL2_SPACE)
    message = str(raised.value)
    assert "the env provides extra, image" in message
    assert "\n" not in message
    with pytest.raises(
        ValueError, match="grid_key='grid' is not an observation key; the env provides extra, image, mission"
    ):
        XLandTstepEncoder(obs_space=babyai_space(), rl2_space=RL2_SPACE)
    with pytest.raises(ValueError, match="Did you mean 'goal'"):
        XLandTstepEncoder(
            XLandTstepEncoderConfig(goal_key="gaol"), obs_space=XLAND_SPACE, rl2_space=RL2_SPACE
        )


def test_key_names_come_from_the_config() -> None:
    renamed = spaces.Dict({"view": XLAND_SPACE["grid"], "task": XLAND_SPACE["goal"]})
    config = XLandTstepEncoderConfig(grid_key="view", goal_key="task", extra_key=None, d_output=16)
    encoder = XLandTstepEncoder(config, obs_space=renamed, rl2_space=RL2_SPACE)
    assert encoder(sample(renamed), torch.zeros(2, 3, 8)).shape == (2, 3, 16)


def test_embedded_ids_must_be_bounded_integers() -> None:
    float_grid = spaces.Dict({**XLAND_SPACE.spaces, "grid": spaces.Box(0.0, 1.0, shape=(5, 5, 2))})
    with pytest.raises(ValueError, match=r"must hold bounded integer ids.*or set grid_id_embedding=0"):
        XLandTstepEncoder(obs_space=float_grid, rl2_space=RL2_SPACE)
    scaled = XLandTstepEncoder(
        XLandTstepEncoderConfig(grid_id_embedding=0), obs_space=float_grid, rl2_space=RL2_SPACE
    )
    assert not scaled.grid.embed


@pytest.mark.parametrize(
    ("encoder_type", "space", "token_key"),
    [(BabyAITstepEncoder, babyai_space(), "mission"), (XLandTstepEncoder, XLAND_SPACE, "goal")],
    ids=["babyai-mission", "xland-goal"],
)
def test_the_tokens_change_the_output(encoder_type: type, space: spaces.Dict, token_key: str) -> None:
    torch.manual_seed(0)
    encoder = encoder_type(obs_space=space, rl2_space=RL2_SPACE).eval()
    obs = sample(space, batch=1, length=1)
    other = dict(obs)
    other[token_key] = obs[token_key].clone()
    other[token_key][..., 0] = (obs[token_key][..., 0] + 1) % 10
    rl2s = torch.zeros(1, 1, 8)
    with torch.no_grad():
        assert not torch.allclose(encoder(obs, rl2s), encoder(other, rl2s), atol=1e-4)
        assert torch.allclose(encoder(obs, rl2s), encoder(dict(obs), rl2s))


@pytest.mark.parametrize("hide_rl2s", [False, True])
def test_rl2_input_follows_hide_rl2s(hide_rl2s: bool) -> None:
    config = BabyAITstepEncoderConfig(hide_rl2s=hide_rl2s, d_output=16)
    encoder = BabyAITstepEncoder(config, obs_space=babyai_space(), rl2_space=RL2_SPACE).eval()
    obs = sample(babyai_space(), batch=1, length=2)
    with torch.no_grad():
        same = torch.allclose(encoder(obs, torch.zeros(1, 2, 8)), encoder(obs, 5 * torch.ones(1, 2, 8)))
    assert same is hide_rl2s


def test_babyai_encodes_a_real_env_observation() -> None:
    pytest.importorskip("minigrid")
    from amago_envs.suites.babyai.env import MultitaskBabyAI

    env = MultitaskBabyAI(levels=("GoToLocal",), mission_tokens=9)
    obs, _ = env.reset(seed=0)
    encoder = BabyAITstepEncoder(obs_space=env.observation_space, rl2_space=RL2_SPACE)
    batch = {key: torch.as_tensor(value)[None, None] for key, value in obs.items()}
    assert encoder(batch, torch.zeros(1, 1, 8)).shape == (1, 1, 300)


def _resolve(env: str):
    from amago.default_job import DEFAULT_JOB

    return resolve_config([], {"env": env}, [], default_job=DEFAULT_JOB)


@pytest.mark.parametrize(
    ("env", "kind"),
    [("babyai-GoToLocal", "babyai"), ("babyai-multitask", "babyai"), ("xland-local-small", "xland")],
)
def test_presets_select_them_and_smoke_shrinks_them(env: str, kind: str) -> None:
    config = _resolve(env)
    assert config.tstep_encoder.kind == kind
    assert isinstance(config.tstep_encoder, BabyAITstepEncoderConfig | XLandTstepEncoderConfig)
    sized = size_schedule(config, {}, env_steps=64, smoke=True)
    assert sized["tstep_encoder"]["kind"] == kind
    assert sized["tstep_encoder"]["d_output"] == 16
    assert sized["tstep_encoder"]["cnn_channels"] == (8, 8, 8)
