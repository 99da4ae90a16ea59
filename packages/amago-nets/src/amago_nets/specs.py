"""Torch-free specs and configs of amago-nets' timestep and trajectory encoders.

Entry points name the ``ComponentSpec`` objects below. Listing them imports pydantic and amago_core only;
the factories (and torch) are imported when a component is built.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec

TRAJ_GROUP = "amago.traj_encoders"
TSTEP_GROUP = "amago.tstep_encoders"

Activation = Literal["leaky_relu", "relu", "gelu", "mish", "silu", "adaptive"]
"""Activation functions every built-in network accepts. ``adaptive`` is a learnable rational function
``P(x) / Q(x)`` (AMAGO's ``SlowAdaptiveRational``; ``amago_nets.layers.AdaptiveRational``), initialised close to
leaky ReLU; each field's docstring says which layers share one set of its coefficients."""

Norm = Literal["none", "layer", "rmsnorm", "unitball", "hypersphere", "simnorm"]
"""Normalisations every built-in network accepts (``simnorm`` needs a width divisible by 8)."""


# --------------------------------------------------------------------------------------------------------
# Timestep encoders
# --------------------------------------------------------------------------------------------------------


class TstepEncoderConfig(ComponentConfig):
    """Options every timestep encoder shares; third-party tstep encoder configs may derive from it."""

    hide_rl2s: bool = False
    """Zero the whole previous-reward-and-action input (the network keeps its size; the input carries no signal)."""
    hide_rewards: bool = False
    """Zero only the previous-reward column of the rl2 input (applied before ``hide_rl2s``; both may be set)."""


class FFTstepEncoderConfig(TstepEncoderConfig):
    """MLP over every flattened observation key and the previous reward and action."""

    kind: Literal["ff"] = "ff"
    """Registered name of this timestep encoder."""
    n_layers: int = 2
    """Number of hidden layers of the MLP (each Linear → norm → activation)."""
    d_hidden: int = 512
    """Width of the MLP's hidden layers."""
    d_output: int = 256
    """Size of the timestep embedding handed to the trajectory encoder."""
    norm: Norm = "none"
    """Normalisation inside the MLP's hidden layers."""
    out_norm: Norm = "layer"
    """Normalisation of the output embedding."""
    activation: Activation = "leaky_relu"
    """Activation of the hidden layers (``adaptive``: a learnable rational function initialised close to leaky
    ReLU, one set of coefficients shared by the MLP's layers, as in AMAGO)."""
    normalize_inputs: bool = True
    """Standardise inputs with running mean/variance statistics (updated in train mode only)."""
    obs_keys: tuple[str, ...] | None = None
    """Observation keys to encode (None: every key of the observation space, sorted by name)."""
    auto_scale: bool = False
    """Raise ``d_hidden`` and ``d_output`` to at least the flattened input size."""

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer."""
        return {"n_layers": 1, "d_hidden": 16, "d_output": 16}

    @model_validator(mode="after")
    def _check_sizes(self) -> FFTstepEncoderConfig:
        if self.n_layers < 1 or self.d_hidden < 1 or self.d_output < 1:
            msg = "ff tstep encoder: n_layers, d_hidden and d_output must all be at least 1."
            raise ValueError(msg)
        return self


class CNNTstepEncoderConfig(TstepEncoderConfig):
    """CNN over one image key, merged with the previous reward and action."""

    kind: Literal["cnn"] = "cnn"
    """Registered name of this timestep encoder."""
    obs_key: str = "observation"
    """Observation key holding the image (uint8 pixels 0..255, or floats already scaled to about [-1, 1])."""
    cnn_type: Literal["nature", "impala", "drq", "gridworld"] = "nature"
    """Backbone (AMAGO's ``cnn_type``): ``nature`` (strided convolutions, as in DQN: AMAGO's ``NatureishCNN``),
    ``impala`` (residual blocks with max-pooling: ``IMPALAishCNN``), ``drq`` (DrQ-v2's four 32-channel 3×3
    convolutions: ``DrQCNN``) or ``gridworld`` (three small convolutions for grid maps: ``GridworldCNN``)."""
    channels_first: bool = False
    """Images are (C, H, W) instead of (H, W, C)."""
    img_features: int = 256
    """Width of the linear layer after the flattened CNN output."""
    rl2_features: int = 12
    """Width of the linear embedding of the (symlog-scaled) previous reward and action."""
    d_output: int = 256
    """Size of the timestep embedding handed to the trajectory encoder."""
    out_norm: Norm = "layer"
    """Normalisation of the output embedding."""
    activation: Activation = "leaky_relu"
    """Activation between layers (``adaptive``: a learnable rational function initialised close to leaky ReLU;
    the nature, drq and gridworld CNNs share one across their convolutions, each IMPALA residual block has its own, and the merge
    layer has one more, as in AMAGO)."""
    drqv2_aug: bool = False
    """DrQ-v2 random-shift augmentation in train mode (pad 4 px, shift each frame independently)."""
    aug_pct_of_batch: float = 0.75
    """Fraction of the batch (its last rows) that is augmented when ``drqv2_aug`` is on."""
    impala_block_depths: tuple[int, ...] = (16, 32, 32)
    """Channels of each IMPALA block (``impala`` only)."""
    impala_post_group_norm: bool = True
    """GroupNorm after each IMPALA residual block (``impala`` only)."""
    cnn_channels: tuple[int, ...] | None = None
    """Output channels of each convolution (``nature`` and ``gridworld`` only; AMAGO's ``channels``). None: the
    backbone's AMAGO default, nature 32, 64, 64 and gridworld 16, 32, 48."""
    cnn_kernels: tuple[int, ...] | None = None
    """Kernel size of each (square) convolution (``nature`` and ``gridworld`` only; AMAGO's ``kernels``). None:
    the backbone's AMAGO default, nature 8, 4, 3 and gridworld 2, 2, 2."""
    cnn_strides: tuple[int, ...] | None = None
    """Stride of each convolution (``nature`` and ``gridworld`` only; AMAGO's ``strides``). None: the backbone's
    AMAGO default, nature 4, 2, 1 and gridworld 1, 1, 1."""

    def smoke_options(self) -> dict[str, Any]:
        """16 image features, a 16-wide output."""
        return {"img_features": 16, "d_output": 16}

    def conv_layers(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """The ``nature`` or ``gridworld`` backbone's channels, kernels and strides, AMAGO's defaults filled in.

        Raises:
            ValueError: ``cnn_type`` is neither ``nature`` nor ``gridworld`` (the others have no such options).
        """
        if self.cnn_type not in _CONV_DEFAULTS:
            msg = (
                f"cnn tstep encoder: cnn_type={self.cnn_type!r} has no channels, kernels or strides options."
            )
            raise ValueError(msg)
        channels, kernels, strides = _CONV_DEFAULTS[self.cnn_type]
        return (self.cnn_channels or channels, self.cnn_kernels or kernels, self.cnn_strides or strides)

    @model_validator(mode="after")
    def _check_fraction(self) -> CNNTstepEncoderConfig:
        if not 0.0 <= self.aug_pct_of_batch <= 1.0:
            msg = f"cnn tstep encoder: aug_pct_of_batch must lie in [0, 1], got {self.aug_pct_of_batch}."
            raise ValueError(msg)
        return self

    @model_validator(mode="after")
    def _check_conv_layers(self) -> CNNTstepEncoderConfig:
        fields = {
            "cnn_channels": self.cnn_channels,
            "cnn_kernels": self.cnn_kernels,
            "cnn_strides": self.cnn_strides,
        }
        given = {name: value for name, value in fields.items() if value is not None}
        if not given:
            return self
        if self.cnn_type not in _CONV_DEFAULTS:
            hint = (
                "impala_block_depths"
                if self.cnn_type == "impala"
                else "nothing (its layers are fixed, as AMAGO's)"
            )
            msg = (
                f"cnn tstep encoder: {', '.join(given)} only apply to cnn_type nature or gridworld, but cnn_type is "
                f"{self.cnn_type!r}; unset them (the {self.cnn_type} backbone takes {hint})."
            )
            raise ValueError(msg)
        for name, value in given.items():
            if not value or min(value) < 1:
                msg = f"cnn tstep encoder: {name} must list at least one value, each at least 1; got {list(value)}."
                raise ValueError(msg)
        resolved = dict(zip(fields, self.conv_layers(), strict=True))
        if len({len(value) for value in resolved.values()}) > 1:
            shown = ", ".join(
                f"{name}={list(value)}{'' if name in given else ' (default)'}"
                for name, value in resolved.items()
            )
            msg = (
                f"cnn tstep encoder: {shown} must have the same length (one entry per convolution); "
                "give all three with one entry per convolution."
            )
            raise ValueError(msg)
        return self


_CONV_DEFAULTS: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {
    "nature": ((32, 64, 64), (8, 4, 3), (4, 2, 1)),
    "gridworld": ((16, 32, 48), (2, 2, 2), (1, 1, 1)),
}
"""AMAGO's NatureishCNN and GridworldCNN defaults: (channels, kernels, strides)."""


class GridworldTstepEncoderConfig(TstepEncoderConfig):
    """Options the gridworld timestep encoders (``babyai``, ``xland``) share.

    Their pipeline: a small CNN over the grid of integer tile ids (each channel's ids embedded first), an
    embedding of the goal or mission tokens, and an MLP over the extra features plus the symlog-scaled previous
    reward and action; the three are concatenated → Linear → norm.
    """

    cnn_channels: tuple[int, int, int] | None = None
    """Output channels of the three convolutions (None: the backbone's own: gridworld 16, 32, 48 (BabyAI) or
    32, 48, 64 (XLand); nature 32, 64, 64)."""
    grid_id_embedding: int = Field(8, ge=0)
    """Width of the learned embedding of each grid channel's integer ids (tile, colour, state), applied before
    the gridworld CNN; 0 scales the ids like pixels instead (``x / 128 - 1``), as AMAGO's examples did."""
    extra_features: int = Field(16, ge=1)
    """Width of the MLP (one hidden layer) over the extra observation key and the previous reward and action."""
    d_output: int = Field(256, ge=1)
    """Size of the timestep embedding handed to the trajectory encoder."""
    out_norm: Norm = "layer"
    """Normalisation of the output embedding."""
    activation: Activation = "leaky_relu"
    """Activation of the CNN and of the extras MLP (``adaptive``: a learnable rational function initialised
    close to leaky ReLU, one for the CNN's convolutions and one for the MLP)."""


class BabyAITstepEncoderConfig(GridworldTstepEncoderConfig):
    """AMAGO example 10's BabyAI encoder: grid (or image) CNN, mission-token RNN, direction and attempt extras."""

    kind: Literal["babyai"] = "babyai"
    """Registered name of this timestep encoder."""
    image_key: str = "image"
    """Observation key of the grid encoding or RGB image (uint8, (H, W, C))."""
    mission_key: str = "mission"
    """Observation key of the mission's word ids (integers, one per word, 0 for blank)."""
    extra_key: str | None = "extra"
    """Observation key of the extra float features (BabyAI: one-hot direction, attempt progress); None: none."""
    cnn_type: Literal["auto", "gridworld", "nature"] = "auto"
    """``gridworld`` (three 2x2 stride-1 convs, for grid encodings), ``nature`` (DQN's convs, for RGB images
    at least 36 pixels a side) or ``auto``: nature for images at least 36 pixels a side, else gridworld."""
    mission_token_embedding: int = Field(18, ge=1)
    """Width of the learned embedding of each mission word id."""
    mission_hidden: int = Field(96, ge=1)
    """Hidden size of the RNN that reads the mission's words."""
    mission_features: int = Field(48, ge=1)
    """Size of the mission embedding (a Linear and LayerNorm after the RNN's last state)."""
    d_output: int = Field(300, ge=1)
    """Size of the timestep embedding handed to the trajectory encoder (AMAGO's example: 300)."""

    def smoke_options(self) -> dict[str, Any]:
        """8-channel convs, 4-wide embeddings, a 16-wide output."""
        return {
            "cnn_channels": (8, 8, 8),
            "grid_id_embedding": min(self.grid_id_embedding, 4),
            "mission_token_embedding": 4,
            "mission_hidden": 8,
            "mission_features": 8,
            "extra_features": 4,
            "d_output": 16,
        }


class XLandTstepEncoderConfig(GridworldTstepEncoderConfig):
    """AMAGO example 11's XLand-MiniGrid encoder: gridworld CNN, goal-token embedding, direction extras."""

    kind: Literal["xland"] = "xland"
    """Registered name of this timestep encoder."""
    grid_key: str = "grid"
    """Observation key of the egocentric grid of (tile id, colour id) pairs (integers, (H, W, 2))."""
    goal_key: str = "goal"
    """Observation key of the ruleset's goal encoding (integer tokens: goal id, tile, colour, ...)."""
    extra_key: str | None = "direction_done"
    """Observation key of the extra float features (XLand: one-hot direction, new-episode flag); None: none."""
    goal_token_embedding: int = Field(8, ge=1)
    """Width of the learned embedding of each goal token (one table per token position)."""
    goal_features: int = Field(32, ge=1)
    """Size of the goal embedding (the concatenated token embeddings → Linear → LayerNorm)."""

    def smoke_options(self) -> dict[str, Any]:
        """8-channel convs, 4-wide embeddings, a 16-wide output."""
        return {
            "cnn_channels": (8, 8, 8),
            "grid_id_embedding": min(self.grid_id_embedding, 4),
            "goal_token_embedding": 4,
            "goal_features": 8,
            "extra_features": 4,
            "d_output": 16,
        }


FF_TSTEP = ComponentSpec(
    name="ff",
    group_default=True,  # what a run uses when it names none of this group (AMAGO's default)
    group=TSTEP_GROUP,
    summary="MLP over all (flattened) observation keys plus previous reward and action.",
    config=FFTstepEncoderConfig,
    factory="amago_nets.tstep_ff:FFTstepEncoder",
)

CNN_TSTEP = ComponentSpec(
    name="cnn",
    group=TSTEP_GROUP,
    summary="Nature or IMPALA CNN over one image key, optional DrQ-v2 augmentation.",
    config=CNNTstepEncoderConfig,
    factory="amago_nets.tstep_cnn:CNNTstepEncoder",
    example_obs={"observation": {"shape": [36, 36, 3], "dtype": "uint8"}},
)

BABYAI_TSTEP = ComponentSpec(
    name="babyai",
    group=TSTEP_GROUP,
    summary="BabyAI (example 10): grid or image CNN + mission-token RNN + direction/attempt extras.",
    config=BabyAITstepEncoderConfig,
    factory="amago_nets.tstep_babyai:BabyAITstepEncoder",
    example_obs={
        "image": {"shape": [7, 7, 3], "dtype": "uint8"},
        "mission": {"shape": [9], "dtype": "uint8"},
        "extra": {"shape": [5], "dtype": "float32"},
    },
)

XLAND_TSTEP = ComponentSpec(
    name="xland",
    group=TSTEP_GROUP,
    summary="XLand-MiniGrid (example 11): gridworld CNN over tile/colour ids + goal-token embedding + extras.",
    config=XLandTstepEncoderConfig,
    factory="amago_nets.tstep_xland:XLandTstepEncoder",
    example_obs={
        "grid": {"shape": [5, 5, 2], "dtype": "uint8"},
        "goal": {"shape": [5], "dtype": "uint8"},
        "direction_done": {"shape": [5], "dtype": "float32"},
    },
)


# --------------------------------------------------------------------------------------------------------
# Trajectory encoders
# --------------------------------------------------------------------------------------------------------


class IdentityTrajEncoderConfig(ComponentConfig):
    """No sequence model: the timestep embeddings are the output (no memory)."""

    kind: Literal["identity"] = "identity"
    """Registered name of this trajectory encoder."""


class FFTrajEncoderConfig(ComponentConfig):
    """Residual feed-forward blocks applied to each timestep alone (no memory; an ablation baseline)."""

    kind: Literal["ff"] = "ff"
    """Registered name of this trajectory encoder."""
    d_model: int = 256
    """Width of the residual stream and of the output."""
    d_ff: int | None = None
    """Hidden width of each residual block (None: 4 × d_model)."""
    n_layers: int = 1
    """Number of residual feed-forward blocks."""
    dropout: float = 0.0
    """Dropout probability inside the blocks and on the output."""
    activation: Activation = "leaky_relu"
    """Activation of the input layer and inside the blocks (``adaptive``: a learnable rational function
    initialised close to leaky ReLU, one for the input layer and one per block, as in AMAGO)."""
    norm: Norm = "none"
    """Normalisation inside the residual blocks."""
    out_norm: Norm = "layer"
    """Normalisation of the output."""

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer."""
        return {"d_model": 16, "d_ff": 32, "n_layers": 1}


class RNNTrajEncoderConfig(ComponentConfig):
    """GRU over the timestep embeddings; rollouts carry its hidden state step to step."""

    kind: Literal["rnn"] = "rnn"
    """Registered name of this trajectory encoder (also reachable as ``gru``)."""
    d_hidden: int = 256
    """Hidden size of each GRU layer."""
    n_layers: int = 2
    """Number of stacked GRU layers."""
    d_output: int = 256
    """Size of the output (a Linear after the GRU)."""
    norm: Norm = "layer"
    """Normalisation of the output."""

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer."""
        return {"d_hidden": 16, "d_output": 16, "n_layers": 1}


class TransformerTrajEncoderConfig(ComponentConfig):
    """Causal pre-norm Transformer; rollouts use a per-row KV cache holding the last ``max_seq_len`` steps."""

    kind: Literal["transformer"] = "transformer"
    """Registered name of this trajectory encoder."""
    d_model: int = 256
    """Width of the residual stream and of the output."""
    n_heads: int = 8
    """Number of attention heads (must divide d_model)."""
    d_ff: int = 1024
    """Hidden width of each feed-forward sublayer."""
    n_layers: int = 3
    """Number of Transformer layers."""
    dropout_ff: float = 0.05
    """Dropout after the feed-forward sublayer."""
    dropout_emb: float = 0.05
    """Dropout on the input embedding (after adding positions)."""
    dropout_attn: float = 0.0
    """Dropout on attention probabilities (not supported by the ``flex`` backend, which needs 0)."""
    dropout_qkv: float = 0.0
    """Dropout on the query/key/value projections."""
    activation: Activation = "leaky_relu"
    """Activation of the feed-forward sublayers (``adaptive``: a learnable rational function initialised close
    to leaky ReLU, one per layer, as in AMAGO)."""
    norm: Norm = "layer"
    """Normalisation used by the pre-norm layers and the final output."""
    pos_emb: Literal["fixed", "learnable", "rope"] = "fixed"
    """Positions of absolute episode time: ``fixed`` sinusoids (any length), ``learnable`` table, or ``rope``."""
    max_time_idx: int = 10_000
    """Size of the ``learnable`` position table; later time indices share its last entry."""
    sigma_reparam: bool = True
    """σReparam linear layers (weights divided by their spectral norm estimate, times a learned scale)."""
    normformer_norms: bool = True
    """Extra NormFormer normalisations after attention and inside the feed-forward sublayer."""
    head_scaling: bool = True
    """A learned scale per attention head (frozen at 1 when off)."""
    attention: Literal["sdpa", "flash", "flex", "sliding_sink"] = "sdpa"
    """Attention backend: ``sdpa`` (torch, any device), ``flash`` (flash-attn on CUDA, else falls back to
    sdpa with a warning), ``flex`` (torch flex_attention for training; cached rollout steps use sdpa), or
    ``sliding_sink``: AMAGO's ``ClippedSlidingSinkAttention``, the sliding window plus an attention sink
    (``sink_size``) and logit clipping (``logit_clip``), in plain PyTorch on any device (flash-attn has no
    sink mask and only tanh soft-capping, not a clip; without ``logit_clip`` it runs through sdpa)."""
    window_size: int | None = None
    """Sliding-window attention: each step sees itself and the previous ``window_size - 1`` steps, in
    training and in rollouts (None: the context is ``max_seq_len``). AMAGO's flex attention classes
    (``SlidingWindowFlexAttention``, ``ClippedSlidingSinkAttention``) count only the steps before the query:
    their ``window_size = w`` is ``window_size = w + 1`` here."""
    sink_size: int = Field(0, ge=0)
    """``sliding_sink`` only: the first ``sink_size`` steps stay visible to every later step even after the
    window has moved past them (0: no sink; at least 1 needs ``window_size``). They are the first steps of the
    sequence attended over: in rollouts the episode's first steps (the KV cache keeps them besides the window),
    in training the sampled window's first steps, as in AMAGO."""
    logit_clip: float | None = Field(None, gt=0)
    """``sliding_sink`` only: attention logits (q·k / sqrt(head_dim)) are clamped to [-logit_clip,
    logit_clip] before the softmax (None: no clipping; AMAGO's ``logit_clip = 0`` means the same)."""

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer of 2 heads."""
        return {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1}

    @model_validator(mode="after")
    def _check_heads(self) -> TransformerTrajEncoderConfig:
        if self.d_model % self.n_heads != 0:
            msg = (
                f"transformer: n_heads={self.n_heads} must divide d_model={self.d_model}; change one of them."
            )
            raise ValueError(msg)
        if self.pos_emb == "rope" and (self.d_model // self.n_heads) % 2 != 0:
            msg = "transformer: rope needs an even head size (d_model / n_heads); change d_model or n_heads."
            raise ValueError(msg)
        if self.window_size is not None and self.window_size < 1:
            msg = f"transformer: window_size must be at least 1 (or None), got {self.window_size}."
            raise ValueError(msg)
        if self.attention == "flex" and self.dropout_attn > 0:
            msg = "transformer: the flex backend has no attention dropout; set dropout_attn=0 or use sdpa."
            raise ValueError(msg)
        if self.attention != "sliding_sink" and (self.sink_size or self.logit_clip is not None):
            msg = (
                f"transformer: sink_size and logit_clip belong to attention='sliding_sink' (got "
                f"attention={self.attention!r}); set attention='sliding_sink' or drop them."
            )
            raise ValueError(msg)
        if self.sink_size >= 1 and self.window_size is None:
            msg = (
                f"transformer: sink_size={self.sink_size} keeps the first steps visible once a sliding window "
                "has moved past them, so it needs window_size; set window_size (e.g. 128) or sink_size=0."
            )
            raise ValueError(msg)
        return self


class MambaTrajEncoderConfig(ComponentConfig):
    """Mamba (selective state-space) blocks; pure PyTorch scan, ``mamba_ssm`` kernels used on CUDA when installed."""

    kind: Literal["mamba"] = "mamba"
    """Registered name of this trajectory encoder."""
    d_model: int = 256
    """Width of the residual stream and of the output."""
    d_state: int = 16
    """Size of each channel's SSM state."""
    d_conv: int = 4
    """Kernel size of the causal depthwise convolution."""
    expand: int = 2
    """Inner width multiplier (d_inner = expand × d_model)."""
    n_layers: int = 3
    """Number of pre-norm residual Mamba blocks."""
    norm: Norm = "layer"
    """Normalisation before each block and of the output."""
    dt_rank: int | None = None
    """Rank of the step-size projection (None: ceil(d_model / 16), as in Mamba)."""
    scan: Literal["auto", "parallel", "sequential"] = "auto"
    """Pure-PyTorch training scan: ``parallel`` (chunks scanned at once, ~2·chunk + L/chunk steps), ``sequential``
    (L small steps), or ``auto``: sequential on CPU (where its per-step state stays in cache and it is faster)
    and parallel on GPUs (where the number of steps, i.e. kernel launches, dominates)."""
    chunk_size: int = 16
    """Chunk length of the ``parallel`` scan (about sqrt(L) needs the fewest sequential steps)."""
    use_kernels: bool = True
    """Use mamba_ssm's CUDA selective-scan kernel for training when installed and on CUDA."""

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer with a 4-wide state."""
        return {"d_model": 16, "d_state": 4, "n_layers": 1}

    @model_validator(mode="after")
    def _check_sizes(self) -> MambaTrajEncoderConfig:
        if min(self.d_model, self.d_state, self.d_conv, self.expand, self.n_layers, self.chunk_size) < 1:
            msg = "mamba: d_model, d_state, d_conv, expand, n_layers and chunk_size must all be at least 1."
            raise ValueError(msg)
        return self


IDENTITY_TRAJ = ComponentSpec(
    name="identity",
    group=TRAJ_GROUP,
    summary="No sequence model: passes timestep embeddings through (no memory).",
    config=IdentityTrajEncoderConfig,
    factory="amago_nets.traj_simple:IdentityTrajEncoder",
)

FF_TRAJ = ComponentSpec(
    name="ff",
    group=TRAJ_GROUP,
    summary="Residual feed-forward blocks per timestep (no memory; a memory ablation).",
    config=FFTrajEncoderConfig,
    factory="amago_nets.traj_simple:FFTrajEncoder",
)

RNN_TRAJ = ComponentSpec(
    name="rnn",
    group=TRAJ_GROUP,
    summary="GRU; constant-cost rollout steps.",
    config=RNNTrajEncoderConfig,
    factory="amago_nets.traj_rnn:GRUTrajEncoder",
    aliases=("gru",),
)

TRANSFORMER_TRAJ = ComponentSpec(
    name="transformer",
    group_default=True,  # what a run uses when it names none of this group (AMAGO's default)
    group=TRAJ_GROUP,
    summary="Causal Transformer with a per-row KV cache; sdpa, flash-attn, flex or sliding-sink attention.",
    config=TransformerTrajEncoderConfig,
    factory="amago_nets.traj_transformer:TransformerTrajEncoder",
    install_hint='pip install "amago-nets[flash]"  (optional: the flash attention backend)',
    cuda_kernels={"flash_attn": 'pip install "amago-nets[flash]"'},
)

MAMBA_TRAJ = ComponentSpec(
    name="mamba",
    group=TRAJ_GROUP,
    summary="Mamba selective SSM; pure PyTorch, mamba_ssm kernels on CUDA when installed.",
    config=MambaTrajEncoderConfig,
    factory="amago_nets.traj_mamba:MambaTrajEncoder",
    install_hint='pip install "amago-nets[mamba]"  (optional: the CUDA kernels)',
    cuda_kernels={
        "mamba_ssm": 'pip install "amago-nets[mamba]"',
        "causal_conv1d": 'pip install "amago-nets[mamba]"',
    },
)
