"""``load_policy``: a run folder's trained agent, rebuilt from its config and safetensors weights.

Nothing is unpickled: the agent is built from ``config.resolved.json`` through the installed plugins, with the
spaces of ``spaces.json`` (or, for runs older than that file, of one env built from the run's env suite), and
its weights come from a ``.safetensors`` file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
from safetensors import SafetensorError

from amago_core.config.component import ComponentConfig
from amago_core.config.components import ComponentBuildError, RunComponents
from amago_core.config.experiment import ExperimentConfig
from amago_core.experiment.agent_api import ReloadAware, RolloutPolicy
from amago_core.experiment.checkpoints import load_policy_weights
from amago_core.experiment.run_dir import RunPaths
from amago_core.file_format import RefusedStateError, migrated_config
from amago_core.plugins.errors import PluginError
from amago_core.plugins.registry import Registries
from amago_core.plugins.registry import registries as installed_registries
from amago_core.rollout.spaces import SPACES_FORMAT, PolicySpaces, SpaceRecordError
from amago_tools.policy.stateful import StatefulPolicy

PICKLE_SUFFIXES = (".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".bin")
"""Files that torch or pickle would have to unpickle to read, which amago never does (a file can run code)."""

RUN_FOLDER = "a run folder ({ckpt_base_dir}/{run_name}, the one holding config.resolved.json)"


class PolicyLoadError(ValueError):
    """A run folder's policy cannot be loaded; the message says why and what to do."""


@dataclass(frozen=True)
class LoadedRun:
    """A run folder's agent with what was read to build it.

    Attributes:
        run_dir: the run folder.
        config: the run's config.
        weights: the ``.safetensors`` file the agent's weights came from.
        spaces: the spaces the agent was built with, and the env's own.
        agent: the agent, in eval mode.
    """

    run_dir: Path
    config: ExperimentConfig
    weights: Path
    spaces: PolicySpaces
    agent: torch.nn.Module

    @property
    def env(self) -> ComponentConfig | None:
        """The run's env suite config (None for a run whose envs were Python makers)."""
        return self.config.component("env")

    def kind(self, slot: str) -> str:
        """The component kind in ``slot`` (``traj_encoder``...), or ``none``."""
        component = self.config.component(slot)
        return component.kind if component is not None else "none"

    @property
    def policy(self) -> RolloutPolicy:
        """The agent, as the rollout methods it is called through."""
        return cast(RolloutPolicy, self.agent)


def _refuse_path(run_dir: Path) -> None:
    if not run_dir.exists():
        msg = f"no run folder at {run_dir}; pass {RUN_FOLDER}."
        raise PolicyLoadError(msg)
    if run_dir.is_file():
        if run_dir.suffix in PICKLE_SUFFIXES:
            msg = (
                f"{run_dir} is a pickle file, which amago never loads (unpickling can run code); pass {RUN_FOLDER}: "
                "its weights are .safetensors."
            )
        else:
            msg = f"{run_dir} is a file; pass {RUN_FOLDER}: the agent is built from its config.resolved.json."
        raise PolicyLoadError(msg)


def _refuse_pickles(folder: Path) -> None:
    """Says so when ``folder`` holds pickle checkpoints (an AMAGO run, or a ``torch.save``) in place of weights."""
    pickles = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.suffix in PICKLE_SUFFIXES)
    if pickles:
        msg = (
            f"{folder} holds pickle checkpoints ({', '.join(pickles[:3])}) but no amago weights (amago never "
            "unpickles: a file can run code); if it is an AMAGO run folder, convert it with "
            "`amago import-amago RUN_DIR OUT` and load OUT."
        )
        raise PolicyLoadError(msg)


def _read_config(run_dir: Path, registries: Registries) -> ExperimentConfig:
    """The run's recorded config, validated against the registries its agent is rebuilt from."""
    from pydantic import ValidationError

    from amago_core.config.errors import describe_validation_error
    from amago_core.config.sources import ConfigSourceError, SourceFile, merge_layers, read_sources

    config_file = RunPaths(run_dir.parent, run_dir.name).config
    if not config_file.is_file():
        _refuse_pickles(run_dir)
        msg = f"{run_dir} has no config.resolved.json; pass {RUN_FOLDER}."
        raise PolicyLoadError(msg)
    try:
        # A newer format is refused, an older one migrated (MIGRATIONS), before the record is validated.
        record = migrated_config(dict(SourceFile.read(config_file).raw), config_file)
        layers = read_sources([SourceFile(config_file, record)], environ={})
        config = ExperimentConfig.validate_with(merge_layers(layers, registries=registries), registries)
        return config.resolved(registries)
    except RefusedStateError as exc:
        raise PolicyLoadError(str(exc)) from exc
    except ValidationError as exc:
        problems = "; ".join(describe_validation_error(exc, source=str(config_file)))
        msg = f"cannot rebuild the run's agent: {problems}"
        raise PolicyLoadError(msg) from exc
    except (ConfigSourceError, PluginError) as exc:
        msg = f"cannot rebuild the run's agent from {config_file}: {exc}"
        raise PolicyLoadError(msg) from exc


def _weights_file(paths: RunPaths, epoch: int | None) -> Path:
    weights = paths.policy_at(epoch) if epoch is not None else paths.latest_policy
    if weights.is_file():
        return weights
    if paths.ckpts.is_dir():
        _refuse_pickles(paths.ckpts)
    saved = sorted(
        int(p.stem.rsplit("_", 1)[-1])
        for p in paths.policy_weights.glob("policy_epoch_*.safetensors")
        if p.stem.rsplit("_", 1)[-1].isdigit()
    )
    if epoch is not None:
        choice = f"saved epochs: {saved}" if saved else "no epoch has saved weights yet"
        msg = f"no policy weights for epoch {epoch} at {weights}; {choice}."
    else:
        msg = f"no policy weights at {weights}; train first (each epoch ends by writing them)."
    raise PolicyLoadError(msg)


def _spaces(paths: RunPaths, config: ExperimentConfig, registries: Registries) -> PolicySpaces:
    """The recorded spaces, or (for runs older than ``spaces.json``) those of one env of the run's suite."""
    recorded = paths.spaces
    if recorded.is_file():
        try:
            record = json.loads(recorded.read_text(encoding="utf-8"))
            found = record.get("format") if isinstance(record, dict) else None
            if isinstance(found, int) and found > SPACES_FORMAT:
                msg = f"{recorded} has format {found}, newer than this amago's {SPACES_FORMAT}: upgrade amago to load it."
                raise PolicyLoadError(msg)
            return PolicySpaces.from_json(record)
        except (json.JSONDecodeError, SpaceRecordError) as exc:
            msg = f"{recorded} is damaged ({exc}); delete it to rebuild the spaces from the run's env suite."
            raise PolicyLoadError(msg) from exc
    suite_config = config.component("env")
    if suite_config is None:
        msg = (
            f"{paths.root} has no {recorded.name} (the run predates it) and its config names no env to read the "
            "spaces from; rerun it with this amago, or with an env id."
        )
        raise PolicyLoadError(msg)
    env = registries.env_suites.build(suite_config).make_env("test")
    try:
        return PolicySpaces.of_env(env)
    finally:
        env.close()


def load_run(
    run_dir: str | Path,
    epoch: int | None = None,
    *,
    device: torch.device | str = "cpu",
    registries: Registries | None = None,
) -> LoadedRun:
    """Rebuilds a run folder's agent and loads its weights (see :func:`load_policy`).

    Raises:
        PolicyLoadError: not a run folder, no weights (or only pickles), or weights that do not fit the agent.
    """
    run_dir = Path(run_dir)
    _refuse_path(run_dir)
    registries = registries if registries is not None else installed_registries()
    config = _read_config(run_dir, registries)
    paths = RunPaths(run_dir.parent, run_dir.name)
    weights = _weights_file(paths, epoch)
    spaces = _spaces(paths, config, registries)
    try:
        components = RunComponents.resolve(config, registries, {})
        agent = components.agent.build(
            obs_space=spaces.obs_space,
            rl2_space=spaces.rl2_space,
            action_space=spaces.action_space,
            max_seq_len=config.run.max_seq_len,
            tstep_encoder=components.tstep_encoder.builder(),
            traj_encoder=components.traj_encoder.builder(),
        )
    except (PluginError, ComponentBuildError) as exc:
        msg = f"cannot rebuild the agent of {run_dir}: {exc}"
        raise PolicyLoadError(msg) from exc
    try:
        load_policy_weights(agent, weights)
    except RefusedStateError as exc:  # a newer format: the message says to upgrade amago
        raise PolicyLoadError(str(exc)) from exc
    except (RuntimeError, SafetensorError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        msg = f"cannot load {weights}: {first}"
        raise PolicyLoadError(msg) from exc
    if isinstance(agent, ReloadAware):
        agent.on_checkpoint_loaded(False)
    agent.to(device).eval()
    return LoadedRun(run_dir=run_dir, config=config, weights=weights, spaces=spaces, agent=agent)


def load_policy(
    run_dir: str | Path,
    epoch: int | None = None,
    *,
    device: torch.device | str = "cpu",
    sample: bool = False,
    registries: Registries | None = None,
) -> StatefulPolicy:
    """The trained policy of a run folder, ready for a plain gymnasium loop (no Experiment, buffer or pool).

    Args:
        run_dir: ``{ckpt_base_dir}/{run_name}``.
        epoch: the weights of this epoch (``ckpts/policy_weights``); None: the latest (``ckpts/latest``).
        device: where the agent runs.
        sample: sample actions (False: the policy's most likely action).
        registries: where to find the run's components (default: the installed plugins); the recorded config
            is validated against them too, so a run of a component only they hold loads.

    Returns:
        A :class:`~amago_tools.policy.StatefulPolicy`: call ``reset(n_envs)``, then ``act(obs, reward, done)``.

    Raises:
        PolicyLoadError: not a run folder, no weights (or only pickles), or weights that do not fit the agent.
    """
    run = load_run(run_dir, epoch, device=device, registries=registries)
    return StatefulPolicy(
        run.policy, run.spaces, device=device, sample=sample, name=str(run.config.run.name or run_dir)
    )


def describe(loaded: LoadedRun) -> dict[str, Any]:
    """A JSON-safe summary of what was loaded (for exported files' manifests)."""
    env = loaded.env
    return {
        "run_dir": str(loaded.run_dir),
        "weights": str(loaded.weights),
        "env": env.to_dict() if env is not None else None,
        "traj_encoder": loaded.kind("traj_encoder"),
        "agent": loaded.kind("agent"),
        "max_seq_len": loaded.config.run.max_seq_len,
    }
