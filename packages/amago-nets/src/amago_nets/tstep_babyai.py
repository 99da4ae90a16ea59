"""The ``babyai`` timestep encoder (AMAGO example 10): grid or image CNN, mission-token RNN, extras."""

from __future__ import annotations

import functools
from typing import Literal

from gymnasium import spaces

from amago_nets.specs import BabyAITstepEncoderConfig
from amago_nets.tstep_gridworld import (
    NATURE_MIN_SIDE,
    GridworldTstepEncoder,
    ObsKey,
    TokenRNNEmbedding,
    observation_box,
)


class BabyAITstepEncoder(GridworldTstepEncoder):
    """CNN(image) ⊕ RNN(mission word ids) ⊕ MLP(extra ⊕ symlog(rl2)) → Linear → norm.

    The image is BabyAI's (object, colour, state) grid encoding (gridworld CNN over embedded ids) or an RGB
    rendering (Nature CNN); ``cnn_type="auto"`` tells them apart by size. The mission goes through AMAGO's
    ``TokenGoalEmb``: word embedding → RNN → Linear → LayerNorm.
    """

    def __init__(
        self, config: BabyAITstepEncoderConfig | None = None, *, obs_space: spaces.Dict, rl2_space: spaces.Box
    ) -> None:
        config = config or BabyAITstepEncoderConfig()
        image_key = ObsKey("image_key", config.image_key)
        cnn_type: Literal["gridworld", "nature"]
        if config.cnn_type == "auto":
            side = min(observation_box("babyai", obs_space, image_key).shape[:2])
            cnn_type = "nature" if side >= NATURE_MIN_SIDE else "gridworld"
        else:
            cnn_type = config.cnn_type
        super().__init__(
            config,
            obs_space=obs_space,
            rl2_space=rl2_space,
            owner="babyai",
            grid_key=image_key,
            token_key=ObsKey("mission_key", config.mission_key),
            extra_key=None if config.extra_key is None else ObsKey("extra_key", config.extra_key),
            cnn_type=cnn_type,
            # AMAGO's GridworldCNN and NatureishCNN channels.
            default_channels=(16, 32, 48) if cnn_type == "gridworld" else (32, 64, 64),
            token_embedding=functools.partial(
                TokenRNNEmbedding,
                token_dim=config.mission_token_embedding,
                hidden=config.mission_hidden,
                d_output=config.mission_features,
            ),
        )
