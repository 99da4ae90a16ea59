"""AMAGO's ``amago.cli_utils``: its shared command line, its gin helpers and its async modes, with AMAGO's names and
signatures, on amago's config.

- :func:`add_common_cli` adds AMAGO's flags (names and defaults as in AMAGO v3.3.0) to a script's parser, and
  :func:`create_experiment_from_cli` builds ``amago.Experiment`` from them.
- :func:`use_config` takes AMAGO's gin bindings: those of AMAGO's own classes become amago settings through the one
  mapping (:mod:`amago.from_amago.gin`) and wait, in this process, for the next ``amago.Experiment``
  (:mod:`amago.from_amago.bindings` says how); those of the script's own ``@gin.configurable`` classes go to
  gin-config (``pip install "amago[gin]"``).
- :func:`switch_tstep_encoder`, :func:`switch_traj_encoder`, :func:`switch_agent` and :func:`switch_exploration`
  write AMAGO's bindings for a component into the dict and return what picks it.
- :func:`switch_async_mode`, :func:`make_experiment_learn_only` and :func:`make_experiment_collect_only` set the
  ``run.mode`` setting (``--mode`` of ``amago run``), which decides at ``start()`` what the process does.

Importing this module imports no torch.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from amago._registries import list_registered_agents, list_registered_traj_encoders
from amago.from_amago.bindings import amago_class_for, use_bindings
from amago_core.config.components import SLOT_GROUPS
from amago_core.plugins import registries
from amago_core.plugins.in_process import InProcessSpec

if TYPE_CHECKING:
    from amago.from_amago.experiment import Experiment
    from amago_core.data.dataset import RLDataset


class _LazyChoices:
    """Registered names, listed when argparse checks a value or prints the help (so plugins registered by the
    script after ``add_common_cli`` count)."""

    def __init__(self, names: Callable[[], list[str]]) -> None:
        self._names = names

    def __contains__(self, item: object) -> bool:
        return item in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())


def add_common_cli(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Adds AMAGO's shared flags to ``parser`` (names, types and defaults as AMAGO v3.3.0's) and returns it.

    ``--agent_type`` and ``--traj_encoder`` take any registered name (amago's components, plugins, and classes the
    script registered). :func:`create_experiment_from_cli` reads the flags.
    """
    parser.add_argument(
        "--configs",
        type=str,
        nargs="*",
        help="Gin files bound after the script's own bindings (later files win); see use_config.",
    )
    parser.add_argument("--trials", type=int, default=1, help="Runs in a row, named {run_name}_trial_{i}.")
    parser.add_argument(
        "--agent_type",
        type=str,
        default="agent",
        choices=_LazyChoices(list_registered_agents),
        help="A registered agent (`amago list agents`): agent, or multitask for returns of many scales.",
    )
    parser.add_argument(
        "--env_mode",
        choices=["async", "sync", "already_vectorized"],
        default="async",
        help="async: one process per env; sync: envs stepped in turn here; already_vectorized: one batched env.",
    )
    parser.add_argument("--no_log", action="store_true", help="Do not log to Weights & Biases.")
    parser.add_argument(
        "--ckpt", type=int, default=None, help="Epoch checkpoint of this run_name to load after start()."
    )
    parser.add_argument(
        "--run_name",
        type=str,
        required=True,
        help="The run's name: its folder under --buffer_dir, its replay buffer and its log name.",
    )
    parser.add_argument("--epochs", type=int, default=1000, help="Training epochs.")
    parser.add_argument(
        "--buffer_dir",
        type=str,
        required=True,
        help="Folder for run folders (checkpoints, logs) and replay buffers.",
    )
    parser.add_argument(
        "--traj_encoder",
        choices=_LazyChoices(list_registered_traj_encoders),
        default="transformer",
        help="A registered trajectory encoder (`amago list traj-encoders`); ff has no memory.",
    )
    parser.add_argument(
        "--memory_size",
        type=int,
        default=256,
        help="Width of the memory: a Transformer's d_model, an RNN's hidden size.",
    )
    parser.add_argument("--memory_layers", type=int, default=3, help="Layers of the trajectory encoder.")
    parser.add_argument("--batches_per_epoch", type=int, default=1000, help="Gradient updates per epoch.")
    parser.add_argument(
        "--timesteps_per_epoch",
        type=int,
        default=1000,
        help="Env steps per epoch, per actor (data per update: parallel_actors x this / batches_per_epoch).",
    )
    parser.add_argument("--val_interval", type=int, default=20, help="Evaluate every this many epochs.")
    parser.add_argument(
        "--ckpt_interval", type=int, default=50, help="Save a checkpoint every this many epochs."
    )
    parser.add_argument(
        "--parallel_actors", type=int, default=12, help="Envs stepped side by side (train, val and test)."
    )
    parser.add_argument(
        "--dset_max_size", type=int, default=20_000, help="Replay buffer size, in trajectory files."
    )
    parser.add_argument(
        "--start_learning_at_epoch",
        type=int,
        default=0,
        help="Collect only, without updates, until this epoch.",
    )
    parser.add_argument(
        "--mixed_precision",
        choices=["no", "bf16"],
        default="no",
        help="bf16 mixed precision (a GPU with bf16).",
    )
    parser.add_argument("--dloader_workers", type=int, default=8, help="Data loader worker processes.")
    parser.add_argument("--batch_size", type=int, default=24, help="Sequences per batch (per process).")
    parser.add_argument(
        "--mode",
        type=str,
        default="both",
        choices=["learn", "collect", "both"],
        help="both: collect and learn in turn; collect / learn: one side only, sharing run_name and buffer_dir "
        "with a process running the other (switch_async_mode).",
    )
    return parser


# ---- component switches ------------------------------------------------------------------------------------


def _switch(config: dict[str, Any], slot: str, name: str, options: dict[str, Any]) -> tuple[Any, str, str]:
    """Writes ``options`` as bindings of the component ``name`` of ``slot`` into ``config``.

    Returns ``(what picks it, the binding prefix, the registered name)``: for a component AMAGO had, AMAGO's class
    path (``amago.nets.traj_encoders.TformerTrajEncoder``) and the class of that name in amago; for one AMAGO did
    not have, the path of its class or factory, and its class (the name, when a function builds it).

    Raises:
        UnknownComponentError: (a KeyError) no such registered name, with the closest ones.
    """
    spec = registries()[SLOT_GROUPS[slot]].spec(name)
    configurable = amago_class_for(slot, spec.name)
    chosen: Any
    if isinstance(spec, InProcessSpec):  # the script's own class: its bindings go to gin, as in AMAGO
        prefix = f"{spec.target.__module__}.{spec.target.__qualname__}"
        chosen = spec.target
    elif configurable is not None:
        prefix = configurable.path
        chosen = getattr(importlib.import_module(configurable.module), configurable.name)
    else:
        prefix = spec.factory.replace(":", ".")
        factory = spec.load_factory()
        chosen = factory if isinstance(factory, type) else spec.name
    config.update({f"{prefix}.{key}": value for key, value in options.items()})
    return chosen, prefix, spec.name


def switch_tstep_encoder(config: dict[str, Any], arch: str, **kwargs: Any) -> Any:
    """Picks the timestep encoder ``arch`` (``ff``, ``cnn``...) and writes ``kwargs`` as its bindings into
    ``config`` (for :func:`use_config`); returns its class, to pass as ``tstep_encoder_type``.

    Raises:
        UnknownComponentError: ``arch`` is no registered timestep encoder (`amago list tstep-encoders`).
    """
    return _switch(config, "tstep_encoder", arch, kwargs)[0]


def switch_agent(config: dict[str, Any], agent: str, **kwargs: Any) -> Any:
    """Picks the agent ``agent`` (``agent``, ``multitask``...) and writes ``kwargs`` as its bindings into
    ``config``; returns its class, to pass as ``agent_type``.

    Raises:
        UnknownComponentError: ``agent`` is no registered agent (`amago list agents`).
    """
    return _switch(config, "agent", agent, kwargs)[0]


def switch_exploration(config: dict[str, Any], strategy: str, **kwargs: Any) -> Any:
    """Picks the exploration ``strategy`` (``egreedy``, ``bilevel``, ``tmaze``...) and writes ``kwargs`` as its
    bindings into ``config``; returns what to pass as ``exploration_wrapper_type``: AMAGO's class for AMAGO's
    strategies, the registered name for one a function builds.

    Raises:
        UnknownComponentError: ``strategy`` is no registered exploration (`amago list explorations`).
    """
    return _switch(config, "exploration", strategy, kwargs)[0]


_MEMORY_OPTIONS: dict[str, Callable[[int, int], dict[str, int]]] = {
    "transformer": lambda size, layers: {"d_model": size, "d_ff": 4 * size, "n_layers": layers},
    "rnn": lambda size, layers: {"n_layers": layers, "d_output": size, "d_hidden": size},
    "ff": lambda size, layers: {"d_model": size, "n_layers": layers},
    "mamba": lambda size, layers: {"d_model": size, "n_layers": layers},
}
"""What AMAGO's ``memory_size`` and ``layers`` are for its trajectory encoders (others get the two as given)."""


def switch_traj_encoder(
    config: dict[str, Any], arch: str, memory_size: int, layers: int, **kwargs: Any
) -> Any:
    """Picks the trajectory encoder ``arch`` and writes its size and ``kwargs`` as bindings into ``config``;
    returns its class, to pass as ``traj_encoder_type``.

    As in AMAGO, ``memory_size`` and ``layers`` become ``d_model``, ``d_ff = 4 * memory_size`` and ``n_layers``
    (transformer), ``d_hidden = d_output = memory_size`` and ``n_layers`` (rnn), ``d_model`` and ``n_layers`` (ff,
    mamba), and ``memory_size`` and ``n_layers`` for any other encoder (refused by :func:`use_config` when the
    encoder has no such options, as gin refused them in AMAGO); ``kwargs`` come after and win.

    Raises:
        UnknownComponentError: ``arch`` is no registered trajectory encoder (`amago list traj-encoders`).
    """
    spec_name = registries()[SLOT_GROUPS["traj_encoder"]].spec(arch).name
    sized = _MEMORY_OPTIONS.get(spec_name, lambda size, n: {"memory_size": size, "n_layers": n})
    return _switch(config, "traj_encoder", arch, {**sized(memory_size, layers), **kwargs})[0]


# ---- bindings ----------------------------------------------------------------------------------------------


def use_config(
    custom_params: dict[str, Any], gin_configs: list[str] | None = None, finalize: bool = True
) -> None:
    """Binds ``custom_params`` (``{"Configurable.parameter": value}``), then each gin file (later wins), for the
    ``amago.Experiment`` built next (and the ones after it).

    Bindings of AMAGO's classes become amago settings through the one mapping (``amago migrate-gin`` prints the
    same); those of the script's own ``@gin.configurable`` classes go to gin-config. With ``finalize``, later
    bindings are refused, as gin's ``finalize`` locked AMAGO's config. See :mod:`amago.from_amago.bindings`.

    Raises:
        ValueError: a binding amago cannot honour (one line naming it, and why).
        ImportError: bindings of the script's own classes, without gin-config (``pip install "amago[gin]"``).
        RuntimeError: an earlier call finalized the bindings.
    """
    use_bindings(custom_params, gin_configs, finalize)


# ---- the experiment ----------------------------------------------------------------------------------------

_FLAG_SETTINGS: dict[str, str] = {
    "dloader_workers": "dloader_workers",
    "batch_size": "batch_size",
    "epochs": "epochs",
    "parallel_actors": "parallel_actors",
    "train_timesteps_per_epoch": "timesteps_per_epoch",
    "train_batches_per_epoch": "batches_per_epoch",
    "start_learning_at_epoch": "start_learning_at_epoch",
    "val_interval": "val_interval",
    "ckpt_interval": "ckpt_interval",
    "mixed_precision": "mixed_precision",
    "env_mode": "env_mode",
}
"""``amago.Experiment`` setting -> the :func:`add_common_cli` flag it takes its value from, where they differ only
in name."""


def create_experiment_from_cli(
    command_line_args: argparse.Namespace,
    make_train_env: Callable[..., Any] | Sequence[Callable[..., Any]],
    make_val_env: Callable[..., Any] | Sequence[Callable[..., Any]],
    max_seq_len: int,
    group_name: str,
    run_name: str,
    agent_type: Any,
    tstep_encoder_type: Any,
    traj_encoder_type: Any,
    traj_save_len: int | None = None,
    exploration_wrapper_type: Any = "egreedy",
    experiment_type: type[Experiment] | None = None,
    dataset: RLDataset | None = None,
    **extra_experiment_kwargs: Any,
) -> Experiment:
    """``amago.Experiment`` from :func:`add_common_cli`'s flags, as AMAGO's function of the same name built it.

    The run lives in ``{buffer_dir}/{run_name}``, and without ``dataset`` its replay buffer too
    (``{buffer_dir}/{run_name}``, ``--dset_max_size`` files); ``--no_log`` turns Weights & Biases off;
    ``group_name`` is its group there. The component arguments take AMAGO's classes, amago's classes or
    registered names (``"transformer"``), and what the ``switch_*`` helpers return. Bindings of :func:`use_config`
    apply below these arguments.

    Args:
        command_line_args: the parsed flags of :func:`add_common_cli`.
        make_train_env: returns an ``AMAGOEnv`` (or a list with one maker per actor).
        make_val_env: the same for evaluation.
        max_seq_len: the policy's context length.
        group_name: the Weights & Biases group.
        run_name: the run's name (its folder and buffer).
        agent_type: the agent.
        tstep_encoder_type: the timestep encoder.
        traj_encoder_type: the trajectory encoder.
        traj_save_len: steps per saved trajectory file (None: whole trajectories).
        exploration_wrapper_type: the exploration (AMAGO's default, epsilon-greedy).
        experiment_type: ``amago.Experiment`` or a subclass of it (None: ``amago.Experiment``).
        dataset: where training sequences come from (None: the disk buffer above).
        **extra_experiment_kwargs: more ``amago.Experiment`` settings (``val_timesteps_per_epoch``...).

    Raises:
        TypeError: a setting of ``extra_experiment_kwargs`` that the flags already give.
    """
    from amago.from_amago.experiment import Experiment

    cli = command_line_args
    settings: dict[str, Any] = {
        "agent_type": agent_type,
        "tstep_encoder_type": tstep_encoder_type,
        "traj_encoder_type": traj_encoder_type,
        "ckpt_base_dir": cli.buffer_dir,
        "max_seq_len": max_seq_len,
        "traj_save_len": traj_save_len or 10**10,
        "exploration_wrapper_type": exploration_wrapper_type,
        "run_name": run_name,
        "log_to_wandb": not cli.no_log,
        "wandb_group_name": group_name,
        **{setting: getattr(cli, flag) for setting, flag in _FLAG_SETTINGS.items()},
    }
    if dataset is None:
        settings.update(dset_root=cli.buffer_dir, dset_name=run_name, dset_max_size=cli.dset_max_size)
    twice = sorted(set(settings) & set(extra_experiment_kwargs))
    if twice:
        msg = (
            f"create_experiment_from_cli() got {', '.join(twice)} from the command line and as keywords; drop the "
            "keywords (set the flags instead), or call amago.Experiment(...) yourself"
        )
        raise TypeError(msg)
    build = Experiment if experiment_type is None else experiment_type
    experiment = build(
        dataset=dataset,
        make_train_env=make_train_env,
        make_val_env=make_val_env,
        **settings,
        **extra_experiment_kwargs,
    )
    if getattr(cli, "ckpt", None) is not None:
        # AMAGO's scripts load epoch --ckpt of this run after start(): start() opens the existing run folder.
        experiment.reopen_run = True
    return experiment


def switch_async_mode(experiment: Experiment, mode: Literal["both", "collect", "learn"]) -> Experiment:
    """Makes ``experiment`` collect data only, learn only, or do both (call it before ``experiment.start()``);
    returns it, as AMAGO's helper did.

    In amago it sets the ``run.mode`` setting (``--mode`` of ``amago run``), which decides at ``start()`` what the
    process does; processes of one run share it through ``run_name`` and the buffer folder. The parsed flags
    themselves are read for their ``--mode`` (AMAGO's examples 10 and 11 pass ``args``).

    Raises:
        pydantic.ValidationError: ``mode`` is not ``both``, ``collect`` or ``learn``.
    """
    experiment.apply_settings(mode=getattr(mode, "mode", mode))
    return experiment


def make_experiment_learn_only(experiment: Experiment) -> Experiment:
    """``switch_async_mode(experiment, "learn")``: updates only, on what collect-only processes write."""
    return switch_async_mode(experiment, "learn")


def make_experiment_collect_only(experiment: Experiment) -> Experiment:
    """``switch_async_mode(experiment, "collect")``: collects only, with the newest weights a learner saved."""
    return switch_async_mode(experiment, "collect")


__all__ = [
    "add_common_cli",
    "create_experiment_from_cli",
    "make_experiment_collect_only",
    "make_experiment_learn_only",
    "switch_agent",
    "switch_async_mode",
    "switch_exploration",
    "switch_traj_encoder",
    "switch_tstep_encoder",
    "use_config",
]


def __dir__() -> list[str]:
    return sorted({*__all__, *(k for k in globals() if k.startswith("__"))})
