"""AMAGO v3.3.0's gin configurables, what each parameter became in amago, and `amago migrate-gin`.

The mapping is data, kept once here: :data:`CONFIGURABLES` lists every ``@gin.configurable`` class and function of
AMAGO v3.3.0 with each of its parameters (:class:`GinBinding`: the amago config key a binding of it sets, or why
there is none), and :data:`REGISTRATIONS` AMAGO's shortcut-name registries. Three things read it:

- :func:`migrate` translates a parsed gin file (:func:`read_gin`) into amago settings, which
  ``amago migrate-gin FILE.gin`` prints as ``-o key=value`` lines or a TOML config, with one line on stderr per
  binding it cannot translate;
- :func:`gin_reference` renders the tables of ``docs/migration-from-amago.md`` (``amago migrate-gin --update``
  rewrites the page's generated block);
- ``tests/compat/test_gin_mapping.py`` checks that every key named here exists in amago's config and that the
  list covers AMAGO's configurables and parameters exactly (against a list AMAGO's own interpreter recorded).

How a configurable's options reach amago: most AMAGO classes became one component of a slot (``TformerTrajEncoder``
is the ``transformer`` trajectory encoder) or one choice inside a component (``FlashAttention`` is
``traj_encoder.attention = "flash"``). Those settings are the configurable's *picks*, outermost first. A binding of
one of its parameters is translated together with its picks, so ``TformerTrajEncoder.n_layers = 4`` becomes
``traj_encoder.kind=transformer`` and ``traj_encoder.n_layers=4``: the lines mean the same whatever preset lies
underneath. Which class a file means, for each pick:

1. the one the file picks (``Experiment.traj_encoder_type = @GRUTrajEncoder``; ``TformerTrajEncoder.pos_emb =
   "learnable"``); bindings of the other classes had no effect in AMAGO either and are reported;
2. else the one class whose options the file sets: AMAGO's scripts picked classes in Python, and a run's
   operative config (``ckpts/config.txt``) lists only the classes the run built, without the class-valued
   parameters that picked them;
3. else AMAGO's default class, when the file sets options of several classes and the default is one of them
   (``FlashAttention``, ``binary_filter``...); the others had no effect in AMAGO and are reported;
4. else the file is ambiguous (options of ``GRUTrajEncoder`` and ``TformerTrajEncoder``, no pick): those bindings
   are reported, with the binding that would pick one.

Torch-free and standard-library only: `amago migrate-gin` and `amago --help` import it.
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
import shlex
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from amago_core.generated_block import GeneratedBlock

AMAGO_VERSION = "3.3.0"
"""The AMAGO release whose gin configurables this module maps."""

Kind = Literal["setting", "choice", "run", "none"]
"""What a gin parameter became in amago:

- ``setting``: a config key takes the binding's value (converted where the note says);
- ``choice``: the value is a ``@reference`` to another configurable, and picking it is setting that configurable's
  picks (``Agent.fbc_filter_func = @exp_filter`` is ``agent.fbc_filter.type = "exp"``);
- ``run``: set by the run, not a setting: AMAGO passes the value when it builds the object (an observation space,
  a layer width, another setting), so a gin binding of it never took effect;
- ``none``: no counterpart; the note says why and what to do instead.
"""


@dataclass(frozen=True)
class GinBinding:
    """One parameter of one AMAGO gin configurable, and its amago counterpart.

    Attributes:
        configurable: the configurable's name as gin files write it (``TformerTrajEncoder``).
        parameter: the parameter's name.
        key: the amago config key a binding sets (``traj_encoder.n_layers``): for a ``choice``, the key its
            picks set; None for ``run`` and ``none``.
        kind: see :data:`Kind`.
        note: what a reader needs besides the key (for ``run`` and ``none``: what sets it, or why there is none).
        convert: the name of the value conversion in :data:`CONVERSIONS`, when AMAGO's value means something else
            in amago (``FlashAttention.window_size = (12, 0)`` is ``window_size = 13``).
        fixed: for ``none``: ``(value,)`` when amago always does what this value does in AMAGO (its default), so
            a binding of that value needs nothing (a run's ``config.txt`` lists every default); else empty.
        choices: for ``choice``: the names of the configurables AMAGO lets it reference.
        unregistered: for ``choice``: ``(dotted path, value of key)`` for each class of AMAGO the parameter takes
            that AMAGO left out of gin (``amago.nets.cnn.DrQCNN``): a file references it once its script registers
            it (``gin.external_configurable``), and the reference sets ``key`` to the value.
    """

    configurable: str
    parameter: str
    key: str | None
    kind: Kind
    note: str = ""
    convert: str | None = None
    fixed: tuple[Any, ...] = ()
    choices: tuple[str, ...] = ()
    unregistered: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class GinConfigurable:
    """An AMAGO gin configurable: where its options live in amago, and its parameters.

    Attributes:
        name: the class or function name (``TformerTrajEncoder``).
        module: its AMAGO module (``amago.nets.traj_encoders``).
        picks: the ``(key, value)`` settings that make amago use the same thing, outermost first
            (``(("traj_encoder.kind", "transformer"),)``); empty when it is always used, or is no component.
        summary: one sentence: what it is, and its amago counterpart.
        parameters: one :class:`GinBinding` per parameter, in AMAGO's order. A binding of its options picks
            it when the file picks nothing for that slot.
    """

    name: str
    module: str
    picks: tuple[tuple[str, Any], ...]
    summary: str
    parameters: tuple[GinBinding, ...]

    @property
    def path(self) -> str:
        """The dotted path gin registers it under (``amago.nets.traj_encoders.TformerTrajEncoder``)."""
        return f"{self.module}.{self.name}"

    def parameter(self, name: str) -> GinBinding | None:
        """The row of parameter ``name``, or None."""
        return next((row for row in self.parameters if row.parameter == name), None)


@dataclass(frozen=True)
class PickKey:
    """A config key that picks between AMAGO classes (``traj_encoder.attention``).

    Attributes:
        amago_default: the value AMAGO's own default class stands for (``"flash"``), or None when AMAGO's scripts
            picked the class in Python (the components, the env, the optimiser).
        chooser: the AMAGO binding that picks it, for messages (None: only Python code picks it).
    """

    amago_default: Any
    chooser: str | None


@dataclass(frozen=True)
class Registration:
    """One of AMAGO's shortcut-name registries (``register_traj_encoder``) and its amago counterpart.

    Attributes:
        path: AMAGO's dotted path of the function.
        counterpart: what does the same in amago.
    """

    path: str
    counterpart: str


@dataclass(frozen=True)
class Conversion:
    """A change of a gin value into amago's meaning of the same setting.

    Attributes:
        describe: one sentence for the docs, e.g. "AMAGO's `None` is `"none"`".
        apply: the conversion; raises ``ValueError`` with a one-line reason for a value it cannot convert.
    """

    describe: str
    apply: Callable[[Any], Any]


# --------------------------------------------------------------------------------------------------------------
# Value conversions
# --------------------------------------------------------------------------------------------------------------


def _norm_name(value: Any) -> Any:
    # AMAGO's Normalization treats None as no normalisation; amago spells that "none".
    return "none" if value is None else value


def _flash_window(value: Any) -> Any:
    # flash_attn's (left, right) lets a query see `left` steps before it; amago's window counts the query too.
    # The right half does not matter: AMAGO's Transformer is always causal.
    if not (isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        msg = f"expected flash_attn's (left, right) pair of ints, got {value!r}"
        raise ValueError(msg)
    left = value[0]
    return None if left < 0 else left + 1


def _window_plus_one(value: Any) -> Any:
    # AMAGO's flex masks keep keys with 0 <= query - key <= window_size: the query and window_size steps before.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        msg = f"expected a window size (an int >= 0), got {value!r}"
        raise ValueError(msg)
    return value + 1


def _zero_is_none(value: Any) -> Any:
    # AMAGO turns clipping off with 0; amago with None.
    return None if value in (None, 0) else value


def _whole_number(value: Any) -> Any:
    # AMAGO's traj_save_len defaults to the float 1e10; amago's setting is an int.
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


CONVERSIONS: dict[str, Conversion] = {
    "norm": Conversion('AMAGO\'s `None` is `"none"`.', _norm_name),
    "flash_window": Conversion(
        "flash_attn's `(left, right)` becomes `left + 1` (the step itself and `left` before it); `(-1, -1)` "
        "becomes `None` (the whole context).",
        _flash_window,
    ),
    "window_plus_one": Conversion(
        "AMAGO's window counts the steps before the query, amago's counts the query too: `w` becomes `w + 1`.",
        _window_plus_one,
    ),
    "zero_is_none": Conversion("AMAGO's `0` (no clipping) is `None`.", _zero_is_none),
    "whole_number": Conversion("A whole float such as AMAGO's `1e10` becomes an int.", _whole_number),
}
"""Value conversions :attr:`GinBinding.convert` names."""


# --------------------------------------------------------------------------------------------------------------
# The mapping
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    """A parameter row before it knows its configurable (see :func:`_configurable`)."""

    parameter: str
    key: str | None
    kind: Kind
    note: str = ""
    convert: str | None = None
    fixed: tuple[Any, ...] = ()
    choices: tuple[str, ...] = ()
    unregistered: tuple[tuple[str, Any], ...] = ()


_TOP_LEVEL = frozenset(
    {
        "run",
        "env",
        "tstep_encoder",
        "traj_encoder",
        "agent",
        "exploration",
        "rollout",
        "replay",
        "optim",
        "schedule",
    }
    | {"logging", "distributed", "ray"}
)
"""The first part of every amago config key (sections and component slots): a key starting otherwise is relative
to its configurable's prefix."""


def _set(parameter: str, key: str | None = None, *, note: str = "", convert: str | None = None) -> _Row:
    """A ``setting``: ``key`` None is ``<prefix>.<parameter>``; a key not starting with a section or slot name is
    relative to the prefix (``critic.d_hidden`` under ``agent``)."""
    return _Row(parameter, key, "setting", note, convert)


def _choose(
    parameter: str,
    key: str,
    choices: str,
    *,
    note: str = "",
    unregistered: tuple[tuple[str, Any], ...] = (),
) -> _Row:
    """A ``choice`` of one of ``choices`` (names separated by spaces), whose picks set ``key`` (resolved against
    the prefix like :func:`_set`); ``unregistered``: see :attr:`GinBinding.unregistered`."""
    return _Row(parameter, key, "choice", note, choices=tuple(choices.split()), unregistered=unregistered)


def _run(parameter: str, note: str) -> _Row:
    """Set by the run, not a setting; ``note`` says what passes it."""
    return _Row(parameter, None, "run", note)


def _none(parameter: str, note: str, *fixed: Any) -> _Row:
    """No counterpart; ``note`` says why; ``fixed``: the one value amago always behaves as (AMAGO's default)."""
    return _Row(parameter, None, "none", note, fixed=fixed)


def _configurable(
    name: str,
    module: str,
    prefix: str,
    summary: str,
    rows: Iterable[_Row],
    *,
    picks: tuple[tuple[str, Any], ...] = (),
) -> GinConfigurable:
    def full_key(row: _Row) -> str | None:
        if row.kind in ("run", "none"):
            return None
        key = row.key or row.parameter
        return key if key.split(".")[0] in _TOP_LEVEL else f"{prefix}.{key}"

    parameters = tuple(
        GinBinding(
            name,
            row.parameter,
            full_key(row),
            row.kind,
            row.note,
            row.convert,
            row.fixed,
            row.choices,
            row.unregistered,
        )
        for row in rows
    )
    return GinConfigurable(name, module, picks, summary, parameters)


def _same(parameters: str) -> list[_Row]:
    """Settings whose amago field has AMAGO's name (``parameters``: the names, separated by spaces)."""
    return [_set(parameter) for parameter in parameters.split()]


_TRANSFORMER = ("traj_encoder.kind", "transformer")
_CNN = ("tstep_encoder.kind", "cnn")
_OBS_SPACE = _run("obs_space", "the env's observation space, passed by the agent.")
_RL2_SPACE = _run(
    "rl2_space", "the space of the previous action and reward (made by `AMAGOEnv`), passed by the agent."
)
_TSTEP_DIM = _run("tstep_dim", "the timestep encoder's output width, passed by the agent.")
_TRAJ_MAX_SEQ_LEN = _run("max_seq_len", "`run.max_seq_len`, passed by the agent.")
_STATE_DIM = _run("state_dim", "the trajectory encoder's output width, passed by the agent.")
_ACTION_DIM = _run("action_dim", "the size of the action space, passed by the agent.")
_DISCRETE = _run("discrete", "whether the action space is discrete, passed by the agent.")
_GAMMAS = _run(
    "gammas", "the agent's discount factors (`agent.gamma` and `agent.multigammas`), passed by the agent."
)
_D_ACTION = _run("d_action", "the size of the action space, passed by the actor head.")
_ADV = _run("adv", "the advantage estimates, passed by the agent at each update.")
_CNN_IMG_SHAPE = _run("img_shape", "the image's shape, read from the observation space.")
_CNN_CHANNELS_FIRST = _run(
    "channels_first",
    "passed by the timestep encoder: its own `channels_first` (`tstep_encoder.channels_first`).",
)
_CNN_ACTIVATION = _run(
    "activation", "passed by the timestep encoder: its own `activation` (`tstep_encoder.activation`)."
)
_ATTENTION_CAUSAL = _run(
    "causal", "`TformerTrajEncoder` always passes `True`; amago's Transformer is always causal."
)
_ATTENTION_DROPOUT = _run(
    "dropout", "`TformerTrajEncoder` passes its `dropout_attn` (`traj_encoder.dropout_attn`)."
)
_ENV = _run("amago_env", "the env it wraps, passed by the experiment.")


_AGENT_CONTEXT = (
    "obs_space",
    "rl2_space",
    "action_space",
    "max_seq_len",
    "tstep_encoder_type",
    "traj_encoder_type",
)
_MULTITASK_CONTEXT = (
    "obs_space",
    "rl2_space",
    "action_space",
    "tstep_encoder_type",
    "traj_encoder_type",
    "max_seq_len",
)


def _agent_rows(agent: str, first: tuple[str, ...]) -> list[_Row]:
    """The parameters ``Agent`` and ``MultiTaskAgent`` share (``agent`` names the class, for notes), the first
    six in the order ``first`` gives (the two classes order them differently)."""
    rows = [
        _OBS_SPACE,
        _RL2_SPACE,
        _run("action_space", "the env's action space, passed by the experiment."),
        _run("max_seq_len", "`run.max_seq_len`, passed by the experiment."),
        _run(
            "tstep_encoder_type",
            "the experiment passes its own (`Experiment.tstep_encoder_type`): the `tstep_encoder` slot.",
        ),
        _run(
            "traj_encoder_type",
            "the experiment passes its own (`Experiment.traj_encoder_type`): the `traj_encoder` slot.",
        ),
        *_same(
            "num_critics num_critics_td online_coeff offline_coeff critic_loss_weight gamma reward_multiplier tau fake_filter num_actions_for_value_in_critic_loss num_actions_for_value_in_actor_loss"
        ),
        _choose("fbc_filter_func", "fbc_filter.type", "binary_filter exp_filter leaky_relu_filter"),
        _set("popart", "popart.enabled"),
        *_same("use_target_actor use_multigamma n_step"),
        _choose("actor_type", "actor.type", "Actor ResidualActor"),
        _choose(
            "critic_type",
            "agent.kind",
            "NCritics NCriticsTwoHot",
            note=f"the critic comes with the agent in amago: `NCritics` with `agent`, `NCriticsTwoHot` with "
            f"`multitask`, so `{agent}.critic_type` has nothing else to pick.",
        ),
        _none(
            "pass_obs_keys_to_actor",
            "amago's actor heads see only the trajectory encoder's output; AMAGO's use for it, masking actions, is "
            "`AMAGOEnv(env, action_mask_key=...)`, which keeps the policy on the allowed actions.",
            None,
        ),
    ]
    by_name = {row.parameter: row for row in rows[: len(first)]}
    return [by_name[name] for name in first] + rows[len(first) :]


def _critic_head_rows() -> list[_Row]:
    return [
        _set("d_hidden", "critic.d_hidden"),
        _set("n_layers", "critic.n_layers"),
        _set("dropout_p", "critic.dropout"),
        _set("activation", "critic.activation"),
    ]


def _dist_choices() -> list[_Row]:
    return [
        _choose(
            "continuous_dist_type",
            "agent.continuous_dist.type",
            "TanhGaussian GMM Beta Multibinary",
            note="amago uses a Bernoulli policy for MultiBinary action spaces by itself.",
        ),
        _choose("discrete_dist_type", "agent.discrete_dist.type", "Discrete"),
    ]


CONFIGURABLES: tuple[GinConfigurable, ...] = (
    _configurable(
        "Experiment",
        "amago.experiment",
        "run",
        "The run's settings: amago's config sections (`run`, `rollout`, `replay`, `optim`, `schedule`, `logging`, "
        "`distributed`) and component slots; the same keywords work on `amago.Experiment(...)`.",
        [
            _set("run_name", "run.name"),
            _set("ckpt_base_dir", "run.ckpt_base_dir"),
            _set("max_seq_len", "run.max_seq_len"),
            _run(
                "dataset",
                "a Python object: amago builds the replay dataset from `replay.*`; your own `RLDataset` still goes "
                "in as `Experiment(dataset=...)`.",
            ),
            _choose("tstep_encoder_type", "tstep_encoder.kind", "FFTstepEncoder CNNTstepEncoder"),
            _choose(
                "traj_encoder_type",
                "traj_encoder.kind",
                "IdentityTrajEncoder FFTrajEncoder GRUTrajEncoder TformerTrajEncoder MambaTrajEncoder",
            ),
            _choose("agent_type", "agent.kind", "Agent MultiTaskAgent"),
            _set("val_timesteps_per_epoch", "schedule.val_timesteps_per_epoch"),
            _run(
                "make_train_env",
                "a Python function: an env id (`env`, `--env`) replaces it, or pass your own as "
                "`Experiment(make_train_env=...)`.",
            ),
            _run(
                "make_val_env",
                "a Python function: an env id (`env`, `--env`) replaces it, or pass your own as "
                "`Experiment(make_val_env=...)`.",
            ),
            _set("parallel_actors", "rollout.parallel_actors"),
            _set("env_mode", "rollout.env_mode"),
            _set("async_env_mp_context", "rollout.async_env_mp_context"),
            _choose("exploration_wrapper_type", "exploration.kind", "EpsilonGreedy BilevelEpsilonGreedy"),
            _set("sample_actions_train", "rollout.sample_actions_train"),
            _set("sample_actions_val", "rollout.sample_actions_val"),
            _set("force_reset_train_envs_every", "rollout.force_reset_train_envs_every"),
            _set("log_to_wandb", "logging.log_to_wandb"),
            _set("wandb_project", "logging.wandb_project"),
            _set("wandb_entity", "logging.wandb_entity"),
            _set("wandb_group_name", "logging.wandb_group_name"),
            _set("verbose", "logging.verbose"),
            _set("log_interval", "logging.log_interval"),
            _set("traj_save_len", "replay.traj_save_len", convert="whole_number"),
            _set("has_dset_edit_rights", "replay.has_dset_edit_rights"),
            _set("stagger_traj_file_lengths", "replay.stagger_traj_file_lengths"),
            _set("save_trajs_as", "replay.save_trajs_as"),
            _set("padded_sampling", "replay.padded_sampling"),
            _set("dloader_workers", "distributed.dloader_workers"),
            _set("epochs", "schedule.epochs"),
            _set("start_learning_at_epoch", "schedule.start_learning_at_epoch"),
            _set("start_collecting_at_epoch", "schedule.start_collecting_at_epoch"),
            _set("train_timesteps_per_epoch", "schedule.train_timesteps_per_epoch"),
            _set("train_batches_per_epoch", "schedule.train_batches_per_epoch"),
            _set("val_interval", "schedule.val_interval"),
            _set("ckpt_interval", "schedule.ckpt_interval"),
            _set("always_save_latest", "schedule.always_save_latest"),
            _set("always_load_latest", "schedule.always_load_latest"),
            _set("batch_size", "optim.batch_size"),
            _set("batches_per_update", "optim.batches_per_update"),
            _set("learning_rate", "optim.learning_rate"),
            _set("lr_warmup_steps", "optim.lr_warmup_steps"),
            _set("grad_clip", "optim.grad_clip"),
            _set("l2_coeff", "optim.l2_coeff"),
            _set("mixed_precision", "optim.mixed_precision"),
        ],
    ),
    _configurable(
        "DiskTrajDataset",
        "amago.loading",
        "replay",
        "The replay buffer on disk; amago builds it from the `replay` section.",
        [
            *_same("dset_root dset_name dset_max_size dset_min_size"),
            _set(
                "relabeler",
                note="AMAGO takes a `Relabeler` object here; amago's relabelers are plugins chosen by name "
                "(`amago list relabelers`), so only `None` carries over.",
            ),
        ],
    ),
    _configurable(
        "AdamWRel",
        "amago.utils",
        "optim",
        "AdamW with step-count resets (Ellis et al., 2024), which AMAGO's scripts built in an `init_optimizer` "
        "override: amago's `adamw_rel` optimiser.",
        [
            _run("params", "the agent's trainable parameters, passed by the experiment."),
            _set("reset_interval"),
            _set(
                "lr",
                "learning_rate",
                note="amago passes one learning rate to either optimiser.",
            ),
            _none(
                "betas",
                "amago's optimisers use Adam's default `(0.9, 0.999)`, as AMAGO's experiment did; other values "
                "need an `Experiment.init_optimizer` override.",
                (0.9, 0.999),
            ),
            _none(
                "eps",
                "amago's optimisers use Adam's default `1e-8`; another value needs an `Experiment.init_optimizer` "
                "override.",
                1e-8,
            ),
            _set(
                "weight_decay",
                "l2_coeff",
                note="amago passes `optim.l2_coeff` (default 1e-3) to either optimiser; AdamWRel's own default was "
                "0, so set `optim.l2_coeff=0` to match an AdamWRel built without it.",
            ),
            _none(
                "amsgrad",
                "amago's AdamWRel has no AMSGrad variant (AMAGO's default was off); it needs an "
                "`Experiment.init_optimizer` override.",
                False,
            ),
        ],
        picks=(("optim.optimizer", "adamw_rel"),),
    ),
    _configurable(
        "FFTstepEncoder",
        "amago.nets.tstep_encoders",
        "tstep_encoder",
        "The MLP timestep encoder: the `ff` timestep encoder.",
        [
            _OBS_SPACE,
            _RL2_SPACE,
            *_same("n_layers d_hidden d_output"),
            _set("norm", convert="norm"),
            _set("out_norm", convert="norm"),
            *_same("activation hide_rl2s normalize_inputs"),
            _set("specify_obs_keys", "obs_keys"),
            _set("auto_scale"),
        ],
        picks=(("tstep_encoder.kind", "ff"),),
    ),
    _configurable(
        "CNNTstepEncoder",
        "amago.nets.tstep_encoders",
        "tstep_encoder",
        "The image timestep encoder: the `cnn` timestep encoder.",
        [
            _OBS_SPACE,
            _RL2_SPACE,
            _choose(
                "cnn_type",
                "cnn_type",
                "NatureishCNN IMPALAishCNN GridworldCNN",
                note=f"`DrQCNN` is no gin configurable of AMAGO {AMAGO_VERSION}: a file references it once its "
                "script registers it with gin (`gin.external_configurable`).",
                unregistered=(("amago.nets.cnn.DrQCNN", "drq"),),
            ),
            *_same("channels_first img_features rl2_features d_output"),
            _set("out_norm", convert="norm"),
            *_same("activation hide_rl2s drqv2_aug aug_pct_of_batch obs_key"),
        ],
        picks=(_CNN,),
    ),
    _configurable(
        "NatureishCNN",
        "amago.nets.cnn",
        "tstep_encoder",
        "DQN's CNN: the `nature` backbone of the `cnn` timestep encoder.",
        [
            _CNN_IMG_SHAPE,
            _CNN_CHANNELS_FIRST,
            _CNN_ACTIVATION,
            _set("channels", "cnn_channels"),
            _set("kernels", "cnn_kernels"),
            _set("strides", "cnn_strides"),
        ],
        picks=(_CNN, ("tstep_encoder.cnn_type", "nature")),
    ),
    _configurable(
        "IMPALAishCNN",
        "amago.nets.cnn",
        "tstep_encoder",
        "IMPALA's residual CNN: the `impala` backbone of the `cnn` timestep encoder.",
        [
            _CNN_IMG_SHAPE,
            _CNN_CHANNELS_FIRST,
            _CNN_ACTIVATION,
            _set("cnn_block_depths", "impala_block_depths"),
            _set("post_group_norm", "impala_post_group_norm"),
        ],
        picks=(_CNN, ("tstep_encoder.cnn_type", "impala")),
    ),
    _configurable(
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
            _set("channels", "cnn_channels"),
            _set("kernels", "cnn_kernels"),
            _set("strides", "cnn_strides"),
        ],
        picks=(_CNN, ("tstep_encoder.cnn_type", "gridworld")),
    ),
    _configurable(
        "IdentityTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "No sequence model: the `identity` trajectory encoder.",
        [_TSTEP_DIM, _TRAJ_MAX_SEQ_LEN],
        picks=(("traj_encoder.kind", "identity"),),
    ),
    _configurable(
        "FFTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "Residual feed-forward blocks without memory: the `ff` trajectory encoder.",
        [
            _TSTEP_DIM,
            _TRAJ_MAX_SEQ_LEN,
            *_same("d_model d_ff n_layers dropout activation"),
            _set("norm", convert="norm"),
            _set("out_norm", convert="norm"),
            _none(
                "layer_type",
                "amago's ff trajectory encoder uses plain linear layers (AMAGO's default `nn.Linear`); other layer "
                "types need a trajectory encoder plugin.",
            ),
        ],
        picks=(("traj_encoder.kind", "ff"),),
    ),
    _configurable(
        "GRUTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "The GRU: the `rnn` trajectory encoder (also named `gru`).",
        [
            _TSTEP_DIM,
            _TRAJ_MAX_SEQ_LEN,
            *_same("d_hidden n_layers d_output"),
            _set("norm", convert="norm"),
        ],
        picks=(("traj_encoder.kind", "rnn"),),
    ),
    _configurable(
        "TformerTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "The causal Transformer: the `transformer` trajectory encoder.",
        [
            _TSTEP_DIM,
            _run(
                "max_seq_len",
                "`run.max_seq_len`, passed by the agent (a sliding window shorter than it: `traj_encoder.window_size`).",
            ),
            *_same(
                "d_model n_heads d_ff n_layers dropout_ff dropout_emb dropout_attn dropout_qkv activation"
            ),
            _set("norm", convert="norm"),
            *_same("pos_emb sigma_reparam normformer_norms head_scaling"),
            _choose(
                "attention_type",
                "attention",
                "FlashAttention SlidingWindowFlexAttention ClippedSlidingSinkAttention",
                note="AMAGO's `VanillaAttention` (plain PyTorch attention) is `sdpa`, amago's default.",
            ),
        ],
        picks=(_TRANSFORMER,),
    ),
    _configurable(
        "MambaTrajEncoder",
        "amago.nets.traj_encoders",
        "traj_encoder",
        "Mamba: the `mamba` trajectory encoder (pure PyTorch, or the mamba_ssm kernels on CUDA).",
        [
            _TSTEP_DIM,
            _TRAJ_MAX_SEQ_LEN,
            *_same("d_model d_state d_conv expand n_layers"),
            _set("norm", convert="norm"),
        ],
        picks=(("traj_encoder.kind", "mamba"),),
    ),
    _configurable(
        "FlashAttention",
        "amago.nets.transformer",
        "traj_encoder",
        "flash-attn's attention, AMAGO's default: amago's `flash` attention (on CUDA with flash-attn installed; "
        "elsewhere it falls back to `sdpa` with a warning).",
        [
            _ATTENTION_CAUSAL,
            _ATTENTION_DROPOUT,
            _set("window_size", convert="flash_window"),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.attention", "flash")),
    ),
    _configurable(
        "SlidingWindowFlexAttention",
        "amago.nets.transformer",
        "traj_encoder",
        "Sliding-window attention through torch's flex_attention: amago's `flex` attention.",
        [
            _ATTENTION_CAUSAL,
            _ATTENTION_DROPOUT,
            _set("window_size", convert="window_plus_one"),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.attention", "flex")),
    ),
    _configurable(
        "ClippedSlidingSinkAttention",
        "amago.nets.transformer",
        "traj_encoder",
        "A sliding window with an attention sink and clipped logits: amago's `sliding_sink` attention.",
        [
            _ATTENTION_CAUSAL,
            _ATTENTION_DROPOUT,
            _set("window_size", convert="window_plus_one"),
            _set("logit_clip", convert="zero_is_none"),
            _set("sink_size"),
            _none(
                "sink_bias",
                "amago adds nothing to the sink's logits (AMAGO's default 0.0); a bias needs a trajectory encoder "
                "plugin.",
                0.0,
            ),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.attention", "sliding_sink")),
    ),
    _configurable(
        "LearnablePosEmb",
        "amago.nets.transformer",
        "traj_encoder",
        "A learned table of positions: amago's `learnable` positions.",
        [
            _run("d_model", "`TformerTrajEncoder` passes its `d_model` (`traj_encoder.d_model`)."),
            _set("max_time_idx"),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.pos_emb", "learnable")),
    ),
    _configurable(
        "SigmaReparam",
        "amago.nets.transformer",
        "traj_encoder",
        "σReparam linear layers of the Transformer.",
        [
            _run("d_in", "the layer's input width, from the Transformer's sizes."),
            _run("d_out", "the layer's output width, from the Transformer's sizes."),
            _none(
                "bias",
                "amago's σReparam layers have a bias wherever AMAGO's default gives one (every layer but the "
                "query/key/value projection); removing them needs a trajectory encoder plugin.",
                True,
            ),
            _none(
                "fast_init",
                "amago always uses the SVD initialisation (AMAGO's default); the legacy initialisation of the "
                "first AMAGO paper is not kept.",
                False,
            ),
        ],
        picks=(_TRANSFORMER, ("traj_encoder.sigma_reparam", True)),
    ),
    _configurable(
        "SimNorm",
        "amago.nets.ff",
        "traj_encoder",
        'Simplicial normalisation: the `"simnorm"` value of any `norm` option.',
        [
            _none(
                "dim",
                "amago's `simnorm` uses groups of 8 (AMAGO's default), so widths must be divisible by 8.",
                8,
            )
        ],
    ),
    _configurable(
        "InputNorm",
        "amago.nets.utils",
        "tstep_encoder",
        "Running mean/variance normalisation of the `ff` timestep encoder's input.",
        [
            _run("dim", "the flattened input width, from the observation and action spaces."),
            _none("beta", "amago's input statistics keep AMAGO's default update rate, 1e-4.", 1e-4),
            _none("init_nu", "amago's input statistics start from AMAGO's default second moment, 1.0.", 1.0),
            _run(
                "skip",
                "`FFTstepEncoder` passes `not normalize_inputs` (`tstep_encoder.normalize_inputs`); gin refuses to "
                "bind it (AMAGO's denylist).",
            ),
        ],
        picks=(("tstep_encoder.kind", "ff"), ("tstep_encoder.normalize_inputs", True)),
    ),
    _configurable(
        "SlowAdaptiveRational",
        "amago.nets.utils",
        "traj_encoder",
        'The learnable rational activation: the `"adaptive"` value of any `activation` option.',
        [
            _none(
                "trainable",
                "amago's `adaptive` activation always trains its coefficients (AMAGO's default); a frozen one "
                "needs a plugin.",
                True,
            )
        ],
    ),
    _configurable(
        "Agent",
        "amago.agent",
        "agent",
        "The off-policy actor-critic: the `agent` agent.",
        _agent_rows("Agent", _AGENT_CONTEXT),
        picks=(("agent.kind", "agent"),),
    ),
    _configurable(
        "MultiTaskAgent",
        "amago.agent",
        "agent",
        "Two-hot classification critics for returns of many scales: the `multitask` agent.",
        _agent_rows("MultiTaskAgent", _MULTITASK_CONTEXT),
        picks=(("agent.kind", "multitask"),),
    ),
    _configurable(
        "Multigammas",
        "amago.agent",
        "agent",
        "The extra discount factors every agent learns: `agent.multigammas`.",
        [
            _set(
                "discrete",
                "multigammas",
                note="amago keeps one list for every action space: use the one for your env's actions.",
            ),
            _set(
                "continuous",
                "multigammas",
                note="amago keeps one list for every action space: use the one for your env's actions.",
            ),
        ],
    ),
    _configurable(
        "binary_filter",
        "amago.agent",
        "agent.fbc_filter",
        "The binary advantage filter of filtered behaviour cloning, AMAGO's default.",
        [_ADV, _set("threshold")],
        picks=(("agent.fbc_filter.type", "binary"),),
    ),
    _configurable(
        "exp_filter",
        "amago.agent",
        "agent.fbc_filter",
        "The exponential advantage filter (AWAC / CRR-exp).",
        [
            _ADV,
            _set("beta"),
            _set("clip_adv_low", "adv_clip_low"),
            _set("clip_adv_high", "adv_clip_high"),
            _set("clip_weights_low", "weight_clip_low"),
            _set("clip_weights_high", "weight_clip_high"),
        ],
        picks=(("agent.fbc_filter.type", "exp"),),
    ),
    _configurable(
        "leaky_relu_filter",
        "amago.agent",
        "agent.fbc_filter",
        "The leaky-ReLU advantage filter.",
        [
            _ADV,
            *_same("beta tau"),
            _set("neg_slope", "negative_slope"),
            _set("target_f0"),
            _set("clip_weights_low", "clip_low"),
            _set("clip_weights_high", "clip_high"),
            _set("add_binary"),
        ],
        picks=(("agent.fbc_filter.type", "leaky_relu"),),
    ),
    _configurable(
        "Actor",
        "amago.nets.actor_critic",
        "agent.actor",
        "The MLP actor head, AMAGO's default.",
        [
            _STATE_DIM,
            _ACTION_DIM,
            _DISCRETE,
            _GAMMAS,
            *_same("n_layers d_hidden activation"),
            _set("dropout_p", "dropout"),
            *_dist_choices(),
        ],
        picks=(("agent.actor.type", "plain"),),
    ),
    _configurable(
        "ResidualActor",
        "amago.nets.actor_critic",
        "agent.actor",
        "The residual actor head.",
        [
            _STATE_DIM,
            _ACTION_DIM,
            _DISCRETE,
            _GAMMAS,
            *_same("feature_dim residual_ff_dim residual_blocks activation"),
            _set("normalization", "norm", convert="norm"),
            _set("dropout_p", "dropout"),
            *_dist_choices(),
        ],
        picks=(("agent.actor.type", "residual"),),
    ),
    _configurable(
        "NCritics",
        "amago.nets.actor_critic",
        "agent",
        "The ensemble of Q-value critics of the `agent` agent (`agent.critic`).",
        [
            _STATE_DIM,
            _ACTION_DIM,
            _DISCRETE,
            _GAMMAS,
            _run("num_critics", "the agent passes its `num_critics` (`agent.num_critics`)."),
            *_critic_head_rows(),
        ],
        picks=(("agent.kind", "agent"),),
    ),
    _configurable(
        "NCriticsTwoHot",
        "amago.nets.actor_critic",
        "agent",
        "The ensemble of two-hot classification critics of the `multitask` agent (`agent.critic` and the bins' "
        "options).",
        [
            _STATE_DIM,
            _ACTION_DIM,
            _GAMMAS,
            _DISCRETE,
            _run("num_critics", "the agent passes its `num_critics` (`agent.num_critics`)."),
            *_critic_head_rows(),
            *_same("min_return max_return output_bins use_symlog label_type"),
            _set("sigma", "hlgauss_sigma"),
            _set("init_value", "critic_init_value"),
        ],
        picks=(("agent.kind", "multitask"),),
    ),
    _configurable(
        "PopArtLayer",
        "amago.nets.actor_critic",
        "agent.popart",
        "PopArt value normalisation of both agents: `agent.popart`.",
        [
            _run("gammas", "the number of discount factors, passed by the agent."),
            *_same("beta init_nu"),
            _run(
                "enabled",
                "the agent passes its `popart` (`agent.popart.enabled`); gin refuses to bind it (AMAGO's denylist).",
            ),
        ],
    ),
    _configurable(
        "Discrete",
        "amago.nets.policy_dists",
        "agent.discrete_dist",
        "The categorical policy of discrete action spaces.",
        [_D_ACTION, *_same("clip_prob_low clip_prob_high")],
        picks=(("agent.discrete_dist.type", "discrete"),),
    ),
    _configurable(
        "TanhGaussian",
        "amago.nets.policy_dists",
        "agent.continuous_dist",
        "The tanh-squashed Gaussian policy, AMAGO's default.",
        [
            _D_ACTION,
            *_same("std_low std_high"),
            _none(
                "std_activation",
                "amago bounds the standard deviation as AMAGO's default does (`tanh_bounded_positive`); another "
                "function needs an agent plugin.",
            ),
            _none(
                "clip_actions_on_log_prob",
                "amago clamps buffer actions to ±0.99 before their log-probability, AMAGO's default; other bounds "
                "need an agent plugin.",
                (-0.99, 0.99),
            ),
        ],
        picks=(("agent.continuous_dist.type", "tanh_gaussian"),),
    ),
    _configurable(
        "GMM",
        "amago.nets.policy_dists",
        "agent.continuous_dist",
        "A mixture of tanh-squashed Gaussians.",
        [
            _D_ACTION,
            _set("gmm_modes", "modes"),
            _set("std_low"),
            _none(
                "std_high",
                "amago's mixture has no upper bound on the standard deviation, AMAGO's default (`None`).",
                None,
            ),
            _none(
                "std_activation",
                "amago uses AMAGO's default (`softplus_bounded_positive`); another function needs an agent plugin.",
            ),
        ],
        picks=(("agent.continuous_dist.type", "gmm"),),
    ),
    _configurable(
        "Beta",
        "amago.nets.policy_dists",
        "agent.continuous_dist",
        "The Beta policy rescaled to [-1, 1].",
        [
            _D_ACTION,
            _none(
                "alpha_low",
                "amago keeps AMAGO's default: alpha is softplus + 1.0001 (a unimodal Beta).",
                1.0001,
            ),
            _none("alpha_high", "amago keeps AMAGO's default: no upper bound (`None`).", None),
            _none(
                "beta_low",
                "amago keeps AMAGO's default: beta is softplus + 1.0001 (a unimodal Beta).",
                1.0001,
            ),
            _none("beta_high", "amago keeps AMAGO's default: no upper bound (`None`).", None),
            _none(
                "std_activation",
                "amago keeps AMAGO's default softplus; another function needs an agent plugin.",
            ),
            _none(
                "clip_actions_on_log_prob",
                "amago clamps buffer actions to ±0.99 before their log-probability, AMAGO's default.",
                (-0.99, 0.99),
            ),
        ],
        picks=(("agent.continuous_dist.type", "beta"),),
    ),
    _configurable(
        "Multibinary",
        "amago.nets.policy_dists",
        "agent",
        "AMAGO's Bernoulli policy for MultiBinary action spaces, which its scripts picked with "
        "`Actor.continuous_dist_type = @Multibinary`; amago uses one for those action spaces by itself.",
        [_D_ACTION],
    ),
    _configurable(
        "DiscreteLikeContinuous",
        "amago.nets.policy_dists",
        "agent",
        "Discrete actions as one-hots with Gumbel-softmax samples, which AMAGO's `MultiTaskAgent` always uses: "
        "amago's `discrete_like_continuous`, always on for `multitask` (on `agent` it turns the same treatment on).",
        [
            _run("categorical", "the policy's categorical distribution, passed by the agent."),
            _set("gumbel_softmax_temperature", "gumbel_temperature"),
        ],
        picks=(("agent.kind", "multitask"), ("agent.discrete_like_continuous", True)),
    ),
    _configurable(
        "EpsilonGreedy",
        "amago.envs.exploration",
        "exploration",
        "Epsilon-greedy (discrete) or Gaussian (continuous) exploration: the `egreedy` exploration.",
        [_ENV, *_same("eps_start eps_end steps_anneal randomize_eps")],
        picks=(("exploration.kind", "egreedy"),),
    ),
    _configurable(
        "BilevelEpsilonGreedy",
        "amago.envs.exploration",
        "exploration",
        "Epsilon annealed over training and decayed within each rollout: the `bilevel` exploration.",
        [
            _ENV,
            *_same(
                "rollout_horizon eps_start_start eps_start_end eps_end_start eps_end_end steps_anneal randomize_eps"
            ),
        ],
        picks=(("exploration.kind", "bilevel"),),
    ),
    _configurable(
        "AtariGame",
        "amago.envs.builtin.ale_retro",
        "env",
        "One Atari game through ale-py: the `ale` env suite (env ids `ale-<Game>`, e.g. `--env ale-Pong`).",
        [
            _set(
                "game",
                "task",
                note="the game's name as ale-py spells it (`Pong`), as in the env id `ale-Pong`.",
            ),
            *_same("resolution grayscale"),
            _set("time_limit", "time_limit_frames"),
            *_same("frame_skip channels_last action_space sticky_action_prob terminal_on_life_loss"),
            _none("version", "amago always plays `ALE/<Game>-v5`, AMAGO's default version.", "v5"),
            *_same("continuous_action_threshold clip_rewards"),
        ],
        picks=(("env.kind", "ale"),),
    ),
)
"""Every gin configurable of AMAGO v3.3.0, in the order of its modules, with each parameter's counterpart."""

PICK_KEYS: dict[str, PickKey] = {
    "tstep_encoder.kind": PickKey(None, "Experiment.tstep_encoder_type"),
    "traj_encoder.kind": PickKey(None, "Experiment.traj_encoder_type"),
    "agent.kind": PickKey(None, "Experiment.agent_type"),
    "exploration.kind": PickKey(None, "Experiment.exploration_wrapper_type"),
    "env.kind": PickKey(None, None),
    "optim.optimizer": PickKey(None, None),
    "agent.actor.type": PickKey("plain", "Agent.actor_type"),
    "agent.fbc_filter.type": PickKey("binary", "Agent.fbc_filter_func"),
    "agent.continuous_dist.type": PickKey("tanh_gaussian", "Actor.continuous_dist_type"),
    "agent.discrete_dist.type": PickKey("discrete", "Actor.discrete_dist_type"),
    "agent.discrete_like_continuous": PickKey(True, None),
    "tstep_encoder.cnn_type": PickKey("nature", "CNNTstepEncoder.cnn_type"),
    "tstep_encoder.normalize_inputs": PickKey(True, "FFTstepEncoder.normalize_inputs"),
    "traj_encoder.attention": PickKey("flash", "TformerTrajEncoder.attention_type"),
    "traj_encoder.pos_emb": PickKey("fixed", "TformerTrajEncoder.pos_emb"),
    "traj_encoder.sigma_reparam": PickKey(True, "TformerTrajEncoder.sigma_reparam"),
}
"""Every key a configurable's picks name, with AMAGO's default for it."""

REGISTRATIONS: tuple[Registration, ...] = tuple(
    Registration(path, f"in-script registration: `{path}` (same call)")
    for path in (
        "amago.agent.register_agent",
        "amago.envs.exploration.register_exploration",
        "amago.nets.traj_encoders.register_traj_encoder",
        "amago.nets.tstep_encoders.register_tstep_encoder",
    )
)
"""AMAGO's shortcut-name registries: a class decorated with one and with ``@gin.configurable`` (as their docstrings
show) is a configurable of the script's own."""

GIN_MAPPING: tuple[GinBinding, ...] = tuple(
    row for configurable in CONFIGURABLES for row in configurable.parameters
)
"""Every parameter of every configurable, as one flat table."""

_BY_NAME: dict[str, GinConfigurable] = {configurable.name: configurable for configurable in CONFIGURABLES}


# --------------------------------------------------------------------------------------------------------------
# Reading gin files
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """A gin ``@name`` value: a configurable (``@scope/name`` within a scope; ``@name()`` called).

    Attributes:
        name: as written, module path included (``amago.nets.transformer.FlashAttention``).
        scope: the scope before the name, or None.
        called: written ``@name()``: gin passes what calling it returns instead of the class or function.
    """

    name: str
    scope: str | None = None
    called: bool = False

    def __str__(self) -> str:
        scope = f"{self.scope}/" if self.scope else ""
        return f"@{scope}{self.name}{'()' if self.called else ''}"


@dataclass(frozen=True)
class Macro:
    """A gin ``%NAME`` value: the value of the macro ``NAME = ...``."""

    name: str

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class GinStatement:
    """One binding (or macro definition) of a gin file.

    Attributes:
        source: the file it came from, as given (an include: its resolved path).
        line: its first line there.
        scope: ``scope`` of ``scope/Configurable.param`` (None: unscoped).
        target: the configurable as written (``amago.agent.Agent`` or ``Agent``); a macro's name.
        parameter: the parameter; None for a macro definition.
        value: a Python value, in which :class:`Reference` and :class:`Macro` may appear.
    """

    source: str
    line: int
    scope: str | None
    target: str
    parameter: str | None
    value: Any

    @property
    def where(self) -> str:
        """``file:line``."""
        return f"{self.source}:{self.line}"

    @property
    def binding(self) -> str:
        """The binding's key as a gin file writes it (``scope/Configurable.param``)."""
        scope = f"{self.scope}/" if self.scope else ""
        return f"{scope}{self.target}" + (f".{self.parameter}" if self.parameter else "")


class GinSyntaxError(ValueError):
    """A gin file that cannot be read; ``str()`` is one line naming the file and line."""

    def __init__(self, source: str, line: int, message: str) -> None:
        self.source, self.line, self.message = source, line, message
        super().__init__(f"{source}:{line}: {message}")


_KEY = re.compile(r"^(?:(?P<scope>[A-Za-z_][\w.]*(?:/[A-Za-z_][\w.]*)*)/)?(?P<name>[A-Za-z_][\w.]*)$")
_SKIPPED = (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)


def _logical_lines(text: str, source: str) -> Iterator[list[tokenize.TokenInfo]]:
    """The tokens of each statement of ``text``; brackets continue a statement over lines, as in Python."""
    tokens: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in _SKIPPED:
                continue
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if tokens:
                    yield tokens
                tokens = []
                continue
            if token.type == tokenize.ERRORTOKEN and not token.string.isspace():
                raise GinSyntaxError(source, token.start[0], f"unexpected character {token.string!r}")
            tokens.append(token)
    except tokenize.TokenError as exc:
        line = exc.args[1][0] if len(exc.args) > 1 else text.count("\n") + 1
        first = tokens[0].start[0] if tokens else line
        raise GinSyntaxError(source, first, f"{exc.args[0]} (an unclosed bracket or string?)") from None
    except (IndentationError, SyntaxError) as exc:
        raise GinSyntaxError(source, exc.lineno or 1, exc.msg) from None


def _dotted_name(tokens: list[tokenize.TokenInfo], start: int, *, scoped: bool) -> tuple[str, int]:
    """The name written without spaces from ``tokens[start]`` on (``a.b``, with ``scoped``: ``s/a.b``)."""
    allowed = {".", "/"} if scoped else {"."}
    end = start
    text = ""
    while end < len(tokens):
        token = tokens[end]
        touching = end == start or token.start == tokens[end - 1].end
        if not touching or not (token.type == tokenize.NAME or token.string in allowed):
            break
        text += token.string
        end += 1
    return text, end


def _read_value(tokens: list[tokenize.TokenInfo], source: str) -> Any:
    """A binding's value: Python literals with ``@references`` and ``%MACROS`` anywhere inside them."""
    pieces: list[str] = []
    placeholders: dict[str, Reference | Macro] = {}
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type == tokenize.OP and token.string in ("@", "%"):
            name, end = _dotted_name(tokens, index + 1, scoped=True)
            if not name or end == index + 1 or tokens[index + 1].start != token.end:
                raise GinSyntaxError(source, token.start[0], f"{token.string} must be followed by a name")
            placeholder = f"__gin_value_{len(placeholders)}__"
            if token.string == "%":
                placeholders[placeholder] = Macro(name)
            else:
                called = end + 1 < len(tokens) and tokens[end].string == "(" and tokens[end + 1].string == ")"
                scope, _, bare = name.rpartition("/")
                placeholders[placeholder] = Reference(bare, scope or None, called)
                end += 2 if called else 0
            pieces.append(placeholder)
            index = end
            continue
        pieces.append(token.string)
        index += 1
    text = " ".join(pieces)
    line = tokens[0].start[0]
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise GinSyntaxError(source, line, f"cannot read the value {_clip(text)!r}") from None
    return _literal(tree.body, placeholders, source, line)


def _literal(node: ast.expr, placeholders: dict[str, Reference | Macro], source: str, line: int) -> Any:
    """Evaluates a literal (numbers, strings, True/False/None, lists, tuples, dicts) with the placeholders."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in placeholders:
        return placeholders[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _literal(node.operand, placeholders, source, line)
        if isinstance(operand, int | float) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.List):
        return [_literal(item, placeholders, source, line) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(item, placeholders, source, line) for item in node.elts)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {
            _literal(key, placeholders, source, line): _literal(value, placeholders, source, line)
            for key, value in zip(node.keys, node.values, strict=True)
            if key is not None
        }
    text = ast.unparse(node)
    msg = f"cannot read the value {_clip(text)!r}: gin values are Python literals, @references and %MACROS"
    raise GinSyntaxError(source, line, msg)


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def parse_gin(
    text: str,
    source: str = "<gin>",
    include: Callable[[str, str, int], list[GinStatement]] | None = None,
) -> list[GinStatement]:
    """The bindings and macro definitions of gin ``text``, in order; ``include`` lines read through ``include``.

    ``import`` lines are skipped (they load Python modules that register configurables; amago has none to load).

    Args:
        text: the file's text.
        source: its name in messages.
        include: called as ``include(path, source, line)`` for ``include 'path'``; None refuses includes.

    Raises:
        GinSyntaxError: a statement cannot be read, or an include fails; the message names file and line.
    """
    statements: list[GinStatement] = []
    for tokens in _logical_lines(text, source):
        first = tokens[0]
        line = first.start[0]
        if first.type == tokenize.NAME and first.string in ("import", "from"):
            continue
        if first.type == tokenize.NAME and first.string == "include" and len(tokens) > 1:
            if len(tokens) != 2 or tokens[1].type != tokenize.STRING:
                raise GinSyntaxError(source, line, "include takes one quoted path: include 'other.gin'")
            path = ast.literal_eval(tokens[1].string)
            if include is None:
                raise GinSyntaxError(source, line, f"cannot follow include {path!r} here")
            statements.extend(include(path, source, line))
            continue
        equals = next((i for i, token in enumerate(tokens) if token.string == "="), None)
        if equals is None or equals == 0 or equals == len(tokens) - 1:
            msg = "expected a binding `Configurable.parameter = value`, a macro `NAME = value`, an include or an import"
            raise GinSyntaxError(source, line, msg)
        key, end = _dotted_name(tokens, 0, scoped=True)
        match = _KEY.match(key)
        if end != equals or match is None:
            raise GinSyntaxError(
                source,
                line,
                f"cannot read the binding key {_clip(' '.join(t.string for t in tokens[:equals]))!r}",
            )
        name = match["name"]
        target, _, parameter = name.rpartition(".")
        value = _read_value(tokens[equals + 1 :], source)
        if target:
            statements.append(GinStatement(source, line, match["scope"], target, parameter, value))
        else:  # no dot: a macro definition
            statements.append(GinStatement(source, line, match["scope"], name, None, value))
    return statements


def read_gin(path: str | Path) -> list[GinStatement]:
    """Every binding of the gin file at ``path``, its includes followed (relative to the including file's folder,
    then to the working directory, as gin's search path starts there).

    Raises:
        OSError: ``path`` itself cannot be read.
        GinSyntaxError: a statement cannot be read, or an include is missing or includes itself.
    """
    top = Path(path)
    reading: list[Path] = []

    def read(file: Path, shown: str) -> list[GinStatement]:
        reading.append(file.resolve())
        try:
            return parse_gin(file.read_text(encoding="utf-8"), shown, include)
        finally:
            reading.pop()

    def include(name: str, source: str, line: int) -> list[GinStatement]:
        here = reading[-1].parent
        found = next((c for c in (here / name, Path(name)) if c.is_file()), None)
        if found is None:
            raise GinSyntaxError(source, line, f"include {name!r}: no such file next to {source} or here")
        if found.resolve() in reading:
            raise GinSyntaxError(source, line, f"include {name!r} includes itself")
        try:
            return read(found, str(found))
        except (OSError, UnicodeDecodeError) as exc:
            raise GinSyntaxError(source, line, f"include {name!r}: {exc}") from None

    return read(top, str(path))


# --------------------------------------------------------------------------------------------------------------
# Translating
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Note:
    """A binding that did not become a setting (or needed none), and why: one line on stderr.

    Attributes:
        where: ``file:line``.
        binding: the binding's key as written.
        message: why, and what to do instead.
    """

    where: str
    binding: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.binding}: {self.message}"


@dataclass(frozen=True)
class Migration:
    """What a gin file becomes in amago.

    Attributes:
        settings: amago config key -> value: sections and slots in the order the file first set them, each
            slot's picks before its options (an override of a ``kind`` drops the options given before it).
        notes: one per binding that was not translated, or needed nothing, in file order.
        translated: how many bindings became settings.
        as_amago_does: bindings (``file:line``) of a parameter amago has no setting for, to the value amago
            always behaves as (AMAGO's default, which a run's ``config.txt`` lists): nothing to translate or report.
    """

    settings: dict[str, Any]
    notes: tuple[Note, ...]
    translated: int
    as_amago_does: tuple[str, ...] = ()

    def override_lines(self) -> list[str]:
        """One ``-o key=value`` per setting, quoted for a POSIX shell."""
        return [f"-o {shlex.quote(f'{key}={override_text(value)}')}" for key, value in self.settings.items()]

    def toml(self) -> tuple[str, list[str]]:
        """The settings as a TOML config for ``-c``, and one line per setting TOML cannot hold (a null)."""
        return to_toml(self.settings)


class _Unset:
    """The resolved value of a pick key nothing decides."""


class _Ambiguous:
    """The resolved value of a pick key that bindings of several classes imply."""

    def __init__(self, values: list[Any]) -> None:
        self.values = values


@dataclass
class _Candidate:
    """A binding that maps to settings, pending the check that its configurable is the one AMAGO used."""

    statement: GinStatement
    configurable: GinConfigurable
    row: GinBinding
    chain: tuple[tuple[str, Any], ...]
    """The picks this binding needs: its configurable's, plus a choice's own."""
    explicit: tuple[str, Any] | None
    """The pick key this binding sets itself (a choice, or a setting of a pick key), with its value."""
    settings: list[tuple[str, Any]] = field(default_factory=list)
    """What it sets, picks included."""
    nothing: str | None = None
    """Why it needs no setting (a choice of a class amago uses by itself), or None."""


def lookup(name: str) -> GinConfigurable | None:
    """The configurable a gin file means by ``name`` (``Agent``, or a module path ending in AMAGO's)."""
    configurable = _BY_NAME.get(name.rpartition(".")[2])
    if configurable is None:
        return None
    if name == configurable.name or configurable.path == name or configurable.path.endswith(f".{name}"):
        return configurable
    return None


def _unregistered_value(row: GinBinding, name: str) -> tuple[str, Any] | None:
    """``(class name, value of the row's key)`` when ``name`` (as a gin file writes it) is one of the classes of
    AMAGO the row takes that AMAGO left out of gin (:attr:`GinBinding.unregistered`), else None."""
    for path, value in row.unregistered:
        if name == path or path.endswith(f".{name}"):
            return path.rpartition(".")[2], value
    return None


def _chooser_of(key: str, value: Any) -> GinConfigurable | None:
    """The configurable whose last pick is ``key = value`` (``traj_encoder.attention = "flash"``: FlashAttention)."""
    return next((c for c in CONFIGURABLES if c.picks and c.picks[-1] == (key, value)), None)


def _show_pick(key: str, value: Any) -> str:
    chosen = _chooser_of(key, value)
    text = f"`{key} = {json.dumps(value)}`"
    return f"{chosen.name} ({text})" if chosen else text


def _resolve_macros(value: Any, macros: dict[str, GinStatement], seen: tuple[str, ...] = ()) -> Any:
    if isinstance(value, Macro):
        if value.name in seen:
            msg = f"%{value.name} refers to itself"
            raise ValueError(msg)
        if value.name in ("gin.REQUIRED", "REQUIRED"):
            msg = "left as gin.REQUIRED (a value the script must give); amago has nothing to set"
            raise ValueError(msg)
        definition = macros.get(value.name)
        if definition is None:
            msg = f"uses %{value.name}, which the file never defines"
            raise ValueError(msg)
        return _resolve_macros(definition.value, macros, (*seen, value.name))
    if isinstance(value, list):
        return [_resolve_macros(item, macros, seen) for item in value]
    if isinstance(value, tuple):
        return tuple(_resolve_macros(item, macros, seen) for item in value)
    if isinstance(value, dict):
        return {key: _resolve_macros(item, macros, seen) for key, item in value.items()}
    return value


def _contains_reference(value: Any) -> bool:
    if isinstance(value, Reference):
        return True
    if isinstance(value, list | tuple):
        return any(_contains_reference(item) for item in value)
    if isinstance(value, dict):
        return any(_contains_reference(item) for item in value.values())
    return False


def _plain(value: Any) -> Any:
    """Tuples as lists: amago's configs are JSON/TOML data."""
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


def migrate(statements: Iterable[GinStatement]) -> Migration:
    """Translates gin bindings into amago settings (see the module docstring for how picks are decided).

    Later bindings of the same parameter win, as in gin. Every binding that does not become a setting gets a
    :class:`Note`: not an AMAGO configurable, set by the run, no counterpart, no effect in AMAGO either (its class
    was not the one used), ambiguous, or a value that cannot be converted.
    """
    statements = list(statements)
    position = {id(statement): index for index, statement in enumerate(statements)}  # includes sit in place
    macros: dict[str, GinStatement] = {}
    latest: dict[tuple[str | None, str, str], GinStatement] = {}
    for statement in statements:
        if statement.parameter is None:
            macros[statement.target] = statement
            continue
        configurable = lookup(statement.target)
        name = configurable.name if configurable else statement.target
        binding = (statement.scope, name, statement.parameter)
        latest.pop(binding, None)  # a rebinding moves to where it was last written
        latest[binding] = statement
    notes: list[tuple[GinStatement, str]] = []
    scopes = {
        reference.scope
        for statement in [*latest.values(), *macros.values()]
        for reference in _references(statement.value)
        if reference.scope
    }
    candidates: list[_Candidate] = []
    as_amago_does: list[GinStatement] = []
    for statement in latest.values():
        candidate = _candidate(statement, macros, scopes, notes, as_amago_does)
        if candidate is not None:
            candidates.append(candidate)
    resolved = _resolve_picks(candidates)
    settings: dict[str, tuple[Any, GinStatement]] = {}
    translated = 0
    for candidate in candidates:
        problem = _inactive_reason(candidate, resolved)
        if problem is not None:
            notes.append((candidate.statement, problem))
            continue
        if candidate.nothing is not None:
            notes.append((candidate.statement, f"nothing to set: {candidate.nothing}"))
            continue
        translated += 1
        for key, value in candidate.settings:
            previous = settings.get(key)
            if previous is not None and previous[0] != value and previous[1] is not candidate.statement:
                earlier = previous[1]
                notes.append(
                    (
                        candidate.statement,
                        f"sets {key} = {json.dumps(value)} where {earlier.binding} ({earlier.where}) set "
                        f"{json.dumps(previous[0])}; amago has one {key}, and this later binding wins",
                    )
                )
            settings[key] = (value, candidate.statement)
    ordered = sorted(notes, key=lambda item: position[id(item[0])])
    return Migration(
        settings=_picks_first({key: value for key, (value, _) in settings.items()}),
        notes=tuple(Note(s.where, s.binding, message) for s, message in ordered),
        translated=translated,
        as_amago_does=tuple(statement.where for statement in as_amago_does),
    )


def _picks_first(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` grouped by section or slot (in the order the file first set each), picks before options.

    Overrides apply in order, and an override of a slot's ``kind`` replaces the options given before it (they
    belonged to the previous kind), so a component's kind must come before its options.
    """
    groups: dict[str, list[str]] = {}
    for key in settings:
        groups.setdefault(key.split(".")[0], []).append(key)

    def rank(key: str) -> int:
        return 0 if key.endswith(".kind") else 1 if key in PICK_KEYS else 2

    ordered = [key for keys in groups.values() for key in sorted(keys, key=rank)]
    return {key: settings[key] for key in ordered}


def _references(value: Any) -> Iterator[Reference]:
    if isinstance(value, Reference):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _references(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _references(item)


def _candidate(
    statement: GinStatement,
    macros: dict[str, GinStatement],
    scopes: set[str],
    notes: list[tuple[GinStatement, str]],
    as_amago_does: list[GinStatement],
) -> _Candidate | None:
    """What one binding would set, or None with a note saying why it sets nothing (or, for a value amago always
    behaves as, an entry in ``as_amago_does``)."""
    configurable = lookup(statement.target)
    if configurable is None:
        notes.append(
            (
                statement,
                f"not a gin configurable of AMAGO {AMAGO_VERSION}: for a class of your own, write it as an amago "
                "plugin (`amago plugin new GROUP NAME`) and give its options in the plugin's config",
            )
        )
        return None
    row = configurable.parameter(statement.parameter or "")
    if row is None:
        notes.append(
            (
                statement,
                f"AMAGO {AMAGO_VERSION}'s {configurable.name} has no parameter {statement.parameter!r}",
            )
        )
        return None
    if statement.scope is not None and statement.scope not in scopes:
        notes.append(
            (
                statement,
                f"applies only inside the gin scope {statement.scope!r}, which no @{statement.scope}/... reference "
                "of the file opens; amago has no scopes",
            )
        )
        return None
    if row.kind == "run":
        notes.append((statement, f"set by the run, not a setting: {row.note}"))
        return None
    try:
        value = _resolve_macros(statement.value, macros)
    except ValueError as exc:
        notes.append((statement, f"not translated: {exc}"))
        return None
    if row.kind == "none":
        if row.fixed and _plain(value) == _plain(row.fixed[0]):
            as_amago_does.append(statement)
        else:
            notes.append((statement, f"no counterpart in amago: {row.note}"))
        return None
    key = row.key or ""
    if row.kind == "choice":
        return _choice_candidate(statement, configurable, row, key, value, notes)
    if _contains_reference(value):
        extra = f" ({row.note})" if row.note else ""
        notes.append((statement, f"not translated: amago takes a plain value here, not {value}{extra}"))
        return None
    if row.convert is not None:
        try:
            value = CONVERSIONS[row.convert].apply(value)
        except ValueError as exc:
            notes.append((statement, f"not translated: {exc}"))
            return None
    value = _plain(value)
    explicit = (key, value) if key in PICK_KEYS else None
    candidate = _Candidate(statement, configurable, row, configurable.picks, explicit)
    candidate.settings = [*configurable.picks, (key, value)]
    return candidate


def _choice_candidate(
    statement: GinStatement,
    configurable: GinConfigurable,
    row: GinBinding,
    key: str,
    value: Any,
    notes: list[tuple[GinStatement, str]],
) -> _Candidate | None:
    if not isinstance(value, Reference):
        notes.append(
            (statement, f"not translated: expected a @reference to one of AMAGO's classes, got {value!r}")
        )
        return None
    chosen = lookup(value.name)
    if chosen is not None and chosen.name not in row.choices:
        names = ", ".join(row.choices)
        notes.append(
            (
                statement,
                f"not translated: AMAGO's {row.configurable}.{row.parameter} takes one of {names}, not {value}",
            )
        )
        return None
    unregistered = _unregistered_value(row, value.name) if chosen is None else None
    if unregistered is not None:
        # a class of AMAGO's that its script registered with gin: it picks like a configurable without options
        _, picked_value = unregistered
        chain = (*configurable.picks, (key, picked_value))
        candidate = _Candidate(statement, configurable, row, chain, chain[-1])
        candidate.settings = list(chain)
        return candidate
    if chosen is None:
        notes.append(
            (
                statement,
                f"not translated: {value} is not one of AMAGO {AMAGO_VERSION}'s configurables; a class of your own "
                "becomes an amago plugin (`amago plugin new GROUP NAME`), chosen by its name",
            )
        )
        return None
    if not chosen.picks:
        return _Candidate(statement, configurable, row, configurable.picks, None, nothing=chosen.summary)
    picked = dict(chosen.picks)
    clash = [(k, v) for k, v in configurable.picks if k in picked and picked[k] != v]
    if key not in picked or clash:
        where = ", ".join(f"`{k} = {json.dumps(v)}`" for k, v in chosen.picks)
        notes.append(
            (
                statement,
                f"not translated: {chosen.name} cannot be picked here: in amago it is {where} ({chosen.summary})",
            )
        )
        return None
    chain = tuple(dict([*configurable.picks, *chosen.picks]).items())
    candidate = _Candidate(statement, configurable, row, chain, (key, picked[key]))
    candidate.settings = list(chain)
    return candidate


@dataclass(frozen=True)
class _Pick:
    """How a pick key was decided: its value, and the binding that set it (None: AMAGO's default, or implied)."""

    value: Any
    by: GinStatement | None = None


def _resolve_picks(candidates: list[_Candidate]) -> dict[str, _Pick]:
    """The value of every pick key: what the file picks; else the one class whose options the file sets; else
    AMAGO's default, when the file sets options of none or of several classes, that one among them."""
    resolved: dict[str, _Pick] = {}
    resolving: set[str] = set()

    def satisfied(chain: Iterable[tuple[str, Any]]) -> bool:
        return all(resolve(k).value == v for k, v in chain)

    def resolve(key: str) -> _Pick:
        if key in resolved:
            return resolved[key]
        if key in resolving:  # a pick that depends on itself: nothing decides it
            return _Pick(_Unset())
        resolving.add(key)
        try:
            setters = [
                c
                for c in candidates
                if c.explicit is not None and c.explicit[0] == key and satisfied(_outer(c.chain, key))
            ]
            implied: list[Any] = []
            for c in candidates:
                picks = dict(c.configurable.picks)
                wanted = key in picks and picks[key] not in implied
                if wanted and satisfied(_outer(c.configurable.picks, key)):
                    implied.append(picks[key])
            default = PICK_KEYS[key].amago_default
            if setters and setters[-1].explicit is not None:
                pick = _Pick(setters[-1].explicit[1], setters[-1].statement)
            elif len(implied) == 1:
                pick = _Pick(implied[0])
            elif default is not None and (default in implied or not implied):
                pick = _Pick(default)
            else:
                pick = _Pick(_Ambiguous(implied) if implied else _Unset())
        finally:
            resolving.discard(key)
        resolved[key] = pick
        return pick

    for candidate in candidates:
        for key, _ in candidate.chain:
            resolve(key)
    return resolved


def _outer(chain: Iterable[tuple[str, Any]], key: str) -> list[tuple[str, Any]]:
    """The picks of ``chain`` before ``key``: what must hold for a binding to decide ``key``."""
    outer = []
    for k, v in chain:
        if k == key:
            break
        outer.append((k, v))
    return outer


def _pick_line(key: str, value: Any) -> str:
    """The gin binding that makes AMAGO pick ``key = value`` (``TformerTrajEncoder.attention_type = @Flex...``)."""
    chooser = PICK_KEYS[key].chooser
    if chooser is None:
        return ""
    owner, _, parameter = chooser.partition(".")
    row = _BY_NAME[owner].parameter(parameter)
    chosen = _chooser_of(key, value)
    if row is not None and row.kind == "choice":
        name = chosen.name if chosen is not None else _unregistered_name(row, value)
        if name is not None:
            return f"`{chooser} = @{name}`"
    return f"`{chooser} = {json.dumps(value)}`"


def _unregistered_name(row: GinBinding, value: Any) -> str | None:
    """The class of :attr:`GinBinding.unregistered` whose reference sets the row's key to ``value``, or None."""
    return next((path.rpartition(".")[2] for path, picked in row.unregistered if picked == value), None)


def _inactive_reason(candidate: _Candidate, resolved: dict[str, _Pick]) -> str | None:
    """None when AMAGO used the binding's class (so it becomes settings), else why it is not translated."""
    name = candidate.configurable.name
    for key, wanted in candidate.chain:
        pick = resolved.get(key, _Pick(_Unset()))
        if not isinstance(pick.value, _Ambiguous | _Unset) and pick.value == wanted:
            continue
        line = _pick_line(key, wanted)
        if isinstance(pick.value, _Ambiguous):
            options = " and ".join(_show_pick(key, v) for v in pick.value.values)
            how = (
                f"add `{PICK_KEYS[key].chooser} = @...` to the file" if PICK_KEYS[key].chooser else "keep one"
            )
            return (
                f"not translated: the file sets options of {options} but picks none of them (AMAGO's script "
                f"picked one in Python); {how}"
            )
        if isinstance(pick.value, _Unset):
            rest = candidate.settings[len(candidate.chain) :]
            by_hand = " ".join(f"-o {k}={override_text(v)}" for k, v in rest)
            summary = candidate.configurable.summary
            return f"not translated: {summary[0].lower()}{summary[1:]} Set it by hand: {by_hand}"
        if pick.by is not None:
            return (
                f"no effect in AMAGO either: {pick.by.where} picks {_show_pick(key, pick.value)}, so {name} is "
                "not used"
            )
        suggestion = f"; if your script picked {name} in Python, add {line} to the file" if line else ""
        return (
            f"no effect in AMAGO either: AMAGO uses {_show_pick(key, pick.value)} unless the file picks another"
            f"{suggestion}"
        )
    return None


# --------------------------------------------------------------------------------------------------------------
# Writing settings
# --------------------------------------------------------------------------------------------------------------

_READS_AS_OTHER = {"true", "false", "none", "null", "~"}


def override_text(value: Any) -> str:
    """``value`` as the text after ``key=`` in ``-o key=value``, read back to the same value by amago.

    amago reads an override's value as JSON when it parses, else as a string (``true``/``none`` spelt any way are
    booleans and null): a string that would read as something else is written as a JSON string.
    """
    if isinstance(value, str):
        if value.strip() != value or value.lower() in _READS_AS_OTHER or _is_json(value):
            return json.dumps(value)
        return value
    return json.dumps(_plain(value), separators=(",", ":"))


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items()) + "}"
    msg = f"TOML has no value for {value!r}"
    raise ValueError(msg)


def _has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, list | tuple):
        return any(_has_null(item) for item in value)
    if isinstance(value, dict):
        return any(_has_null(item) for item in value.values())
    return False


def to_toml(settings: dict[str, Any]) -> tuple[str, list[str]]:
    """``settings`` (dotted key -> value) as a TOML document, and a line for each value TOML cannot hold.

    TOML has no null, so a ``None`` (or a list holding one) is left out of the document, and its line says to
    pass it as ``-o key=null`` instead.
    """
    tree: dict[str, Any] = {}
    left_out: list[str] = []
    for key, value in settings.items():
        if _has_null(value):
            left_out.append(
                f"{key} = {json.dumps(value)}: TOML has no null; add `-o {key}={override_text(value)}` to the command"
            )
            continue
        table = tree
        *parents, last = key.split(".")
        for part in parents:
            table = table.setdefault(part, {})
        table[last] = _plain(value)
    lines: list[str] = []

    def write(table: dict[str, Any], path: list[str]) -> None:
        scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
        tables = [(k, v) for k, v in table.items() if isinstance(v, dict)]
        if path and scalars:
            lines.append(f"\n[{'.'.join(_toml_key(p) for p in path)}]")
        lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in scalars)
        for k, v in tables:
            write(v, [*path, k])

    write(tree, [])
    text = "\n".join(lines).lstrip("\n")
    return (text + "\n" if text else ""), left_out


# --------------------------------------------------------------------------------------------------------------
# The reference tables of docs/migration-from-amago.md
# --------------------------------------------------------------------------------------------------------------

BEGIN_MARKER = "<!-- generated by: amago migrate-gin --reference -->"
"""The line before the generated tables in a Markdown page."""
END_MARKER = "<!-- end of generated gin mapping -->"
"""The line after them."""

_KIND_CELL = {"run": "set by the run (not a setting)", "none": "no counterpart"}


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _choice_text(row: GinBinding, name: str) -> str:
    """``@Name → "value"`` for one of a choice row's classes."""
    chosen, owner = _BY_NAME[name], _BY_NAME[row.configurable]
    picks = dict(chosen.picks)
    if not chosen.picks:
        return f"`@{name}` → nothing to set"
    if row.key not in picks or any(picks.get(k, v) != v for k, v in owner.picks):
        return f"`@{name}` → no counterpart here"
    return f"`@{name}` → `{json.dumps(picks[row.key])}`"


def _amago_cell(row: GinBinding, configurable: GinConfigurable) -> str:
    if row.key is None:
        return _KIND_CELL[row.kind]
    return f"`{row.key}`"


def _note_cell(row: GinBinding) -> str:
    parts = []
    if row.kind == "choice" and row.key is not None:
        texts = [_choice_text(row, name) for name in row.choices]
        texts += [f"`@{path.rpartition('.')[2]}` → `{json.dumps(value)}`" for path, value in row.unregistered]
        parts.append("; ".join(texts) + ".")
    if row.note:
        # a note is a sentence; only amago's own name stays lower case at its start
        parts.append(row.note if row.note.startswith("amago") else row.note[0].upper() + row.note[1:])
    if row.convert is not None:
        parts.append(CONVERSIONS[row.convert].describe)
    return " ".join(parts)


def mapping_counts() -> dict[str, int]:
    """How many configurables, parameters, and parameters of each :data:`Kind` the mapping holds."""
    counts = {"configurables": len(CONFIGURABLES), "parameters": len(GIN_MAPPING)}
    for kind in ("setting", "choice", "run", "none"):
        counts[kind] = sum(row.kind == kind for row in GIN_MAPPING)
    return counts


def gin_reference(heading_level: int = 4) -> str:
    """The mapping as Markdown: a summary, one table per configurable, then AMAGO's registries; ends in a newline."""
    hashes = "#" * heading_level
    counts = mapping_counts()
    blocks = [
        f"Every `@gin.configurable` of AMAGO {AMAGO_VERSION}: {counts['configurables']} configurables, "
        f"{counts['parameters']} parameters. {counts['setting']} are settings, {counts['choice']} pick a class "
        f"(a `@reference`), {counts['run']} are set by the run (AMAGO passes them when it builds the object, so a "
        f"binding of them never took effect) and {counts['none']} have no counterpart (each note says why). A "
        "configurable's *picks* are the settings that make amago use the same thing; `amago migrate-gin` writes "
        "them together with the configurable's options."
    ]
    for configurable in CONFIGURABLES:
        picks = ", ".join(f"`{key} = {json.dumps(value)}`" for key, value in configurable.picks)
        lines = [
            f"{hashes} `{configurable.name}`",
            "",
            f"`{configurable.path}`. {configurable.summary}" + (f" Picks: {picks}." if picks else ""),
            "",
            "| parameter | amago | note |",
            "|---|---|---|",
        ]
        for row in configurable.parameters:
            cells = (f"`{row.parameter}`", _amago_cell(row, configurable), _note_cell(row))
            lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
        blocks.append("\n".join(lines))
    registry_lines = [
        f"{hashes} AMAGO's registries",
        "",
        "A script's own component class, registered under a short name (and `@gin.configurable` as their "
        "docstrings show), keeps its registration:",
        "",
        "| AMAGO | amago |",
        "|---|---|",
        *(f"| `{r.path}` | {_cell(r.counterpart)} |" for r in REGISTRATIONS),
    ]
    blocks.append("\n".join(registry_lines))
    return "\n\n".join(blocks) + "\n"


GIN_MAPPING_BLOCK = GeneratedBlock(BEGIN_MARKER, END_MARKER, "the gin mapping")
"""The block ``amago migrate-gin --update`` rewrites."""


def replace_generated(page: str, generated: str) -> str:
    """``page`` with the text between :data:`BEGIN_MARKER` and :data:`END_MARKER` replaced by ``generated``.

    Raises:
        ValueError: the page lacks one of the marker lines; the message says where they go.
    """
    return GIN_MAPPING_BLOCK.replace(page, generated)


def generated_text(page: str) -> str:
    """The text between the marker lines of ``page``.

    Raises:
        ValueError: the page lacks one of the marker lines.
    """
    return GIN_MAPPING_BLOCK.text(page)
