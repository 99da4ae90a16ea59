"""The gin mapping, first half: AMAGO's ``Experiment``, replay buffer, optimiser and networks below the agent.

Every ``@gin.configurable`` of ``amago.experiment``, ``amago.loading``, ``amago.utils`` and ``amago.nets`` up to
the agents (timestep encoders and their CNNs, trajectory encoders, attention, position embeddings, norms), with
each parameter's amago counterpart; :mod:`.mapping` joins the two halves in the order of AMAGO's modules.
"""

from __future__ import annotations

from amago.from_amago.gin.model import (
    AMAGO_VERSION,
    OBS_SPACE,
    RL2_SPACE,
    GinConfigurable,
    by_run,
    choice,
    make_configurable,
    no_counterpart,
    same_names,
    setting,
)

_TRANSFORMER = ("traj_encoder.kind", "transformer")
_CNN = ("tstep_encoder.kind", "cnn")
_TSTEP_DIM = by_run("tstep_dim", "the timestep encoder's output width, passed by the agent.")
_TRAJ_MAX_SEQ_LEN = by_run("max_seq_len", "`run.max_seq_len`, passed by the agent.")
_CNN_IMG_SHAPE = by_run("img_shape", "the image's shape, read from the observation space.")
_CNN_CHANNELS_FIRST = by_run(
    "channels_first",
    "passed by the timestep encoder: its own `channels_first` (`tstep_encoder.channels_first`).",
)
_CNN_ACTIVATION = by_run(
    "activation", "passed by the timestep encoder: its own `activation` (`tstep_encoder.activation`)."
)
_ATTENTION_CAUSAL = by_run(
    "causal", "`TformerTrajEncoder` always passes `True`; amago's Transformer is always causal."
)
_ATTENTION_DROPOUT = by_run(
    "dropout", "`TformerTrajEncoder` passes its `dropout_attn` (`traj_encoder.dropout_attn`)."
)


NETS: tuple[GinConfigurable, ...] = (
    make_configurable(
        "Experiment",
        "amago.experiment",
        "run",
        "The run's settings: amago's config sections (`run`, `rollout`, `replay`, `optim`, `schedule`, `logging`, "
        "`distributed`) and component slots; the same keywords work on `amago.Experiment(...)`.",
        [
            setting("run_name", "run.name"),
            setting("ckpt_base_dir", "run.ckpt_base_dir"),
            setting("max_seq_len", "run.max_seq_len"),
            by_run(
                "dataset",
                "a Python object: amago builds the replay dataset from `replay.*`; your own `RLDataset` still goes "
                "in as `Experiment(dataset=...)`.",
            ),
            choice("tstep_encoder_type", "tstep_encoder.kind", "FFTstepEncoder CNNTstepEncoder"),
            choice(
                "traj_encoder_type",
                "traj_encoder.kind",
                "IdentityTrajEncoder FFTrajEncoder GRUTrajEncoder TformerTrajEncoder MambaTrajEncoder",
            ),
            choice("agent_type", "agent.kind", "Agent MultiTaskAgent"),
            setting("val_timesteps_per_epoch", "schedule.val_timesteps_per_epoch"),
            by_run(
                "make_train_env",
                "a Python function: an env id (`env`, `--env`) replaces it, or pass your own as "
                "`Experiment(make_train_env=...)`.",
            ),
            by_run(
                "make_val_env",
                "a Python function: an env id (`env`, `--env`) replaces it, or pass your own as "
                "`Experiment(make_val_env=...)`.",
            ),
            setting("parallel_actors", "rollout.parallel_actors"),
            setting("env_mode", "rollout.env_mode"),
            setting("async_env_mp_context", "rollout.async_env_mp_context"),
            choice(
                "exploration_wrapper_type",
                "exploration.kind",
                "EpsilonGreedy BilevelEpsilonGreedy TMazeExploration",
            ),
            setting("sample_actions_train", "rollout.sample_actions_train"),
            setting("sample_actions_val", "rollout.sample_actions_val"),
            setting("force_reset_train_envs_every", "rollout.force_reset_train_envs_every"),
            setting("log_to_wandb", "logging.log_to_wandb"),
            setting("wandb_project", "logging.wandb_project"),
            setting("wandb_entity", "logging.wandb_entity"),
            setting("wandb_group_name", "logging.wandb_group_name"),
            setting("verbose", "logging.verbose"),
            setting("log_interval", "logging.log_interval"),
            setting("traj_save_len", "replay.traj_save_len", convert="whole_number"),
            setting("has_dset_edit_rights", "replay.has_dset_edit_rights"),
            setting("stagger_traj_file_lengths", "replay.stagger_traj_file_lengths"),
            setting("save_trajs_as", "replay.save_trajs_as"),
            setting("padded_sampling", "replay.padded_sampling"),
            setting("dloader_workers", "distributed.dloader_workers"),
            setting("epochs", "schedule.epochs"),
            setting("start_learning_at_epoch", "schedule.start_learning_at_epoch"),
            setting("start_collecting_at_epoch", "schedule.start_collecting_at_epoch"),
            setting("train_timesteps_per_epoch", "schedule.train_timesteps_per_epoch"),
            setting("train_batches_per_epoch", "schedule.train_batches_per_epoch"),
            setting("val_interval", "schedule.val_interval"),
            setting("ckpt_interval", "schedule.ckpt_interval"),
            setting("always_save_latest", "schedule.always_save_latest"),
            setting("always_load_latest", "schedule.always_load_latest"),
            setting("batch_size", "optim.batch_size"),
            setting("batches_per_update", "optim.batches_per_update"),
            setting("learning_rate", "optim.learning_rate"),
            setting("lr_warmup_steps", "optim.lr_warmup_steps"),
            setting("grad_clip", "optim.grad_clip"),
            setting("l2_coeff", "optim.l2_coeff"),
            setting("mixed_precision", "optim.mixed_precision"),
        ],
    ),
    make_configurable(
        "DiskTrajDataset",
        "amago.loading",
        "replay",
        "The replay buffer on disk; amago builds it from the `replay` section.",
        [
            *same_names("dset_root dset_name dset_max_size dset_min_size"),
            setting(
                "relabeler",
                note="AMAGO takes a `Relabeler` object here; amago's relabelers are plugins chosen by name "
                "(`amago list relabelers`), so only `None` carries over.",
            ),
        ],
    ),
    make_configurable(
        "AdamWRel",
        "amago.utils",
        "optim",
        "AdamW with step-count resets (Ellis et al., 2024), which AMAGO's scripts built in an `init_optimizer` "
        "override: amago's `adamw_rel` optimiser.",
        [
            by_run("params", "the agent's trainable parameters, passed by the experiment."),
            setting("reset_interval"),
            setting(
                "lr",
                "learning_rate",
                note="amago passes one learning rate to either optimiser.",
            ),
            no_counterpart(
                "betas",
                "amago's optimisers use Adam's default `(0.9, 0.999)`, as AMAGO's experiment did; other values "
                "need an `Experiment.init_optimizer` override.",
                (0.9, 0.999),
            ),
            no_counterpart(
                "eps",
                "amago's optimisers use Adam's default `1e-8`; another value needs an `Experiment.init_optimizer` "
                "override.",
                1e-8,
            ),
            setting(
                "weight_decay",
                "l2_coeff",
                note="amago passes `optim.l2_coeff` (default 1e-3) to either optimiser; AdamWRel's own default was "
                "0, so set `optim.l2_coeff=0` to match an AdamWRel built without it.",
            ),
            no_counterpart(
                "amsgrad",
                "amago's AdamWRel has no AMSGrad variant (AMAGO's default was off); it needs an "
                "`Experiment.init_optimizer` override.",
                False,
            ),
        ],
        picks=(("optim.optimizer", "adamw_rel"),),
    ),
    make_configurable(
        "FFTstepEncoder",
        "amago.nets.tstep_encoders",
        "tstep_encoder",
        "The MLP timestep encoder: the `ff` timestep encoder.",
        [
            OBS_SPACE,
            RL2_SPACE,
            *same_names("n_layers d_hidden d_output"),
            setting("norm", convert="norm"),
            setting("out_norm", convert="norm"),
            *same_names("activation hide_rl2s normalize_inputs"),
            setting("specify_obs_keys", "obs_keys"),
            setting("auto_scale"),
        ],
        picks=(("tstep_encoder.kind", "ff"),),
    ),
    make_configurable(
        "CNNTstepEncoder",
        "amago.nets.tstep_encoders",
        "tstep_encoder",
        "The image timestep encoder: the `cnn` timestep encoder.",
        [
            OBS_SPACE,
            RL2_SPACE,
            choice(
                "cnn_type",
                "cnn_type",
                "NatureishCNN IMPALAishCNN GridworldCNN",
                note=f"`DrQCNN` is no gin configurable of AMAGO {AMAGO_VERSION}: a file references it once its "
                "script registers it with gin (`gin.external_configurable`).",
                unregistered=(("amago.nets.cnn.DrQCNN", "drq"),),
            ),
            *same_names("channels_first img_features rl2_features d_output"),
            setting("out_norm", convert="norm"),
            *same_names("activation hide_rl2s drqv2_aug aug_pct_of_batch obs_key"),
        ],
        picks=(_CNN,),
    ),
    make_configurable(
        "NatureishCNN",
        "amago.nets.cnn",
        "tstep_encoder",
        "DQN's CNN: the `nature` backbone of the `cnn` timestep encoder.",
        [
            _CNN_IMG_SHAPE,
            _CNN_CHANNELS_FIRST,
            _CNN_ACTIVATION,
            setting("channels", "cnn_channels"),
            setting("kernels", "cnn_kernels"),
            setting("strides", "cnn_strides"),
        ],
        picks=(_CNN, ("tstep_encoder.cnn_type", "nature")),
    ),
    make_configurable(
        "IMPALAishCNN",
        "amago.nets.cnn",
        "tstep_encoder",
        "IMPALA's residual CNN: the `impala` backbone of the `cnn` timestep encoder.",
        [
            _CNN_IMG_SHAPE,
            _CNN_CHANNELS_FIRST,
            _CNN_ACTIVATION,
            setting("cnn_block_depths", "impala_block_depths"),
            setting("post_group_norm", "impala_post_group_norm"),
        ],
        picks=(_CNN, ("tstep_encoder.cnn_type", "impala")),
    ),
    make_configurable(
        "GridworldCNN",
        "amago.nets.cnn",
        "tstep_encoder",
        "The small CNN of AMAGO's gridworld examples: the `gridworld` backbone of the `cnn` timestep encoder. "
        "(The `babyai` and `xland` timestep encoders, AMAGO's examples 10 and 11, build their own, sized by their "
        "`cnn_channels`.)",
        [
            _CNN_IMG_SHAPE,
            _CNN_CHANNELS_FIRST,
            _CNN_ACTIVATION,
            setting("channels", "cnn_channels"),
            setting("kernels", "cnn_kernels"),
            setting("strides", "cnn_strides"),
        ],
        picks=(_CNN, ("tstep_encoder.cnn_type", "gridworld")),
    ),
    make_configurable(
        "IdentityTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "No sequence model: the `identity` trajectory encoder.",
        [_TSTEP_DIM, _TRAJ_MAX_SEQ_LEN],
        picks=(("traj_encoder.kind", "identity"),),
    ),
    make_configurable(
        "FFTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "Residual feed-forward blocks without memory: the `ff` trajectory encoder.",
        [
            _TSTEP_DIM,
            _TRAJ_MAX_SEQ_LEN,
            *same_names("d_model d_ff n_layers dropout activation"),
            setting("norm", convert="norm"),
            setting("out_norm", convert="norm"),
            no_counterpart(
                "layer_type",
                "amago's ff trajectory encoder uses plain linear layers (AMAGO's default `nn.Linear`); other layer "
                "types need a trajectory encoder plugin.",
            ),
        ],
        picks=(("traj_encoder.kind", "ff"),),
    ),
    make_configurable(
        "GRUTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "The GRU: the `rnn` trajectory encoder (also named `gru`).",
        [
            _TSTEP_DIM,
            _TRAJ_MAX_SEQ_LEN,
            *same_names("d_hidden n_layers d_output"),
            setting("norm", convert="norm"),
        ],
        picks=(("traj_encoder.kind", "rnn"),),
    ),
    make_configurable(
        "TformerTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "The causal Transformer: the `transformer` trajectory encoder.",
        [
            _TSTEP_DIM,
            by_run(
                "max_seq_len",
                "`run.max_seq_len`, passed by the agent (a sliding window shorter than it: `traj_encoder.window_size`).",
            ),
            *same_names(
                "d_model n_heads d_ff n_layers dropout_ff dropout_emb dropout_attn dropout_qkv activation"
            ),
            setting("norm", convert="norm"),
            *same_names("pos_emb sigma_reparam normformer_norms head_scaling"),
            choice(
                "attention_type",
                "attention",
                "FlashAttention SlidingWindowFlexAttention ClippedSlidingSinkAttention",
                note="AMAGO's `VanillaAttention` (plain PyTorch attention; no gin configurable, a script registers it "
                "with `gin.external_configurable` to bind it) is `sdpa`, amago's default.",
                unregistered=(("amago.nets.transformer.VanillaAttention", "sdpa"),),
            ),
        ],
        picks=(_TRANSFORMER,),
    ),
    make_configurable(
        "MambaTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "Mamba: the `mamba` trajectory encoder (pure PyTorch, or the mamba_ssm kernels on CUDA).",
        [
            _TSTEP_DIM,
            _TRAJ_MAX_SEQ_LEN,
            *same_names("d_model d_state d_conv expand n_layers"),
            setting("norm", convert="norm"),
        ],
        picks=(("traj_encoder.kind", "mamba"),),
    ),
    make_configurable(
        "FlashAttention",
        "amago.nets.transformer",
        "traj_encoder",
        "flash-attn's attention, AMAGO's default: amago's `flash` attention (on CUDA with flash-attn installed; "
        "elsewhere it falls back to `sdpa` with a warning).",
        [
            _ATTENTION_CAUSAL,
            _ATTENTION_DROPOUT,
            setting("window_size", convert="flash_window"),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.attention", "flash")),
    ),
    make_configurable(
        "SlidingWindowFlexAttention",
        "amago.nets.transformer",
        "traj_encoder",
        "Sliding-window attention through torch's flex_attention: amago's `flex` attention.",
        [
            _ATTENTION_CAUSAL,
            _ATTENTION_DROPOUT,
            setting("window_size", convert="window_plus_one"),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.attention", "flex")),
    ),
    make_configurable(
        "ClippedSlidingSinkAttention",
        "amago.nets.transformer",
        "traj_encoder",
        "A sliding window with an attention sink and clipped logits: amago's `sliding_sink` attention.",
        [
            _ATTENTION_CAUSAL,
            _ATTENTION_DROPOUT,
            setting("window_size", convert="window_plus_one"),
            setting("logit_clip", convert="zero_is_none"),
            setting("sink_size"),
            no_counterpart(
                "sink_bias",
                "amago adds nothing to the sink's logits (AMAGO's default 0.0); a bias needs a trajectory encoder "
                "plugin.",
                0.0,
            ),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.attention", "sliding_sink")),
    ),
    make_configurable(
        "LearnablePosEmb",
        "amago.nets.transformer",
        "traj_encoder",
        "A learned table of positions: amago's `learnable` positions.",
        [
            by_run("d_model", "`TformerTrajEncoder` passes its `d_model` (`traj_encoder.d_model`)."),
            setting("max_time_idx"),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.pos_emb", "learnable")),
    ),
    make_configurable(
        "SigmaReparam",
        "amago.nets.transformer",
        "traj_encoder",
        "σReparam linear layers of the Transformer.",
        [
            by_run("d_in", "the layer's input width, from the Transformer's sizes."),
            by_run("d_out", "the layer's output width, from the Transformer's sizes."),
            no_counterpart(
                "bias",
                "amago's σReparam layers have a bias wherever AMAGO's default gives one (every layer but the "
                "query/key/value projection); removing them needs a trajectory encoder plugin.",
                True,
            ),
            no_counterpart(
                "fast_init",
                "amago always uses the SVD initialisation (AMAGO's default); the legacy initialisation of the "
                "first AMAGO paper is not kept.",
                False,
            ),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.sigma_reparam", True)),
    ),
    make_configurable(
        "SimNorm",
        "amago.nets.ff",
        "traj_encoder",
        'Simplicial normalisation: the `"simnorm"` value of any `norm` option.',
        [
            no_counterpart(
                "dim",
                "amago's `simnorm` uses groups of 8 (AMAGO's default), so widths must be divisible by 8.",
                8,
            )
        ],
    ),
    make_configurable(
        "InputNorm",
        "amago.nets.utils",
        "tstep_encoder",
        "Running mean/variance normalisation of the `ff` timestep encoder's input.",
        [
            by_run("dim", "the flattened input width, from the observation and action spaces."),
            no_counterpart("beta", "amago's input statistics keep AMAGO's default update rate, 1e-4.", 1e-4),
            no_counterpart(
                "init_nu", "amago's input statistics start from AMAGO's default second moment, 1.0.", 1.0
            ),
            by_run(
                "skip",
                "`FFTstepEncoder` passes `not normalize_inputs` (`tstep_encoder.normalize_inputs`); gin refuses to "
                "bind it (AMAGO's denylist).",
            ),
        ],
        picks=(("tstep_encoder.kind", "ff"), ("tstep_encoder.normalize_inputs", True)),
    ),
    make_configurable(
        "SlowAdaptiveRational",
        "amago.nets.utils",
        "traj_encoder",
        'The learnable rational activation: the `"adaptive"` value of any `activation` option.',
        [
            no_counterpart(
                "trainable",
                "amago's `adaptive` activation always trains its coefficients (AMAGO's default); a frozen one "
                "needs a plugin.",
                True,
            )
        ],
    ),
)
"""The configurables up to ``amago.agent``, in the order of AMAGO's modules."""
