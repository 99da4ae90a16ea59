"""The ``xland`` timestep encoder (AMAGO example 11): gridworld CNN over tile/colour ids, goal tokens, extras."""

from __future__ import annotations

import functools

from gymnasium import spaces

from amago_nets.specs import XLandTstepEncoderConfig
from amago_nets.tstep_gridworld import GridworldTstepEncoder, ObsKey, TokenFlatEmbedding


class XLandTstepEncoder(GridworldTstepEncoder):
    """CNN(embedded grid ids) ⊕ embedding(goal tokens) ⊕ MLP(direction/new-episode ⊕ symlog(rl2)) → Linear → norm.

    The goal is a short fixed-layout code (goal id, tile, colour, ...), so each position gets its own
    embedding table and the embeddings are concatenated.
    """

    def __init__(
        self, config: XLandTstepEncoderConfig | None = None, *, obs_space: spaces.Dict, rl2_space: spaces.Box
    ) -> None:
        config = config or XLandTstepEncoderConfig()
        super().__init__(
            config,
            obs_space=obs_space,
            rl2_space=rl2_space,
            owner="xland",
            grid_key=ObsKey("grid_key", config.grid_key),
            token_key=ObsKey("goal_key", config.goal_key),
            extra_key=None if config.extra_key is None else ObsKey("extra_key", config.extra_key),
            cnn_type="gridworld",  # XLand's views are a few tiles wide
            default_channels=(32, 48, 64),  # AMAGO's example 11
            token_embedding=functools.partial(
                TokenFlatEmbedding, token_dim=config.goal_token_embedding, d_output=config.goal_features
            ),
        )
