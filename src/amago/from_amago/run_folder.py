"""An AMAGO v3.3.0 run folder → an amago run folder that ``amago.load_policy`` and ``amago eval`` read.

Reads ``ckpts/config.txt`` (gin's text, parsed without gin) and the weights AMAGO saved — ``ckpts/latest/policy.pt``,
``ckpts/policy_weights/policy_epoch_{e}.pt`` and accelerate states ``ckpts/training_states/{run}_epoch_{e}/``
(``model.safetensors`` or ``pytorch_model.bin``) — as tensors only (``torch.load(weights_only=True)``), and
writes ``config.resolved.json``, ``spaces.json``, ``ckpts/latest/policy.safetensors`` and
``ckpts/policy_weights/policy_epoch_{e}.safetensors``.

The AMAGO folder may come from anyone, and so may what lies at the output: every file is written inside the
output folder through no symlink (checked for all of them before the first is written), under a temp name renamed
into place (never through a hard link), while the output's run lock is held; an output that is a symlink, a file,
a folder of other files, or an amago run without ``--overwrite`` is refused in one line.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch  # noqa: TID253 (imported by the command body only, never by the CLI's listing)
from gymnasium import spaces

from amago.from_amago.gin_config import AmagoConfigError, AmagoRunConfig, read_config
from amago.from_amago.weights import AmagoCheckpointError, amago_state_dict_to_amago

__all__ = ["AmagoImportError", "ImportResult", "import_amago_run"]

DEFAULT_MAX_SEQ_LEN = 128
"""Context length written when the user gives none (AMAGO passes max_seq_len in Python, not through gin)."""

_EPOCH_FILE = re.compile(r"^policy_epoch_(\d+)\.pt$")
_STATE_DIR = re.compile(r"^.+_epoch_(\d+)$")
# Wrappers a training state's model keys may carry (DDP, torch.compile).
_WRAPPER_PREFIXES = ("module.", "_orig_mod.")


class AmagoImportError(ValueError):
    """The AMAGO run cannot be imported; the message is one line that says what to do."""


@dataclass
class ImportResult:
    """What an import wrote.

    Attributes:
        out: the amago run folder.
        epochs: the epochs whose weights were written (besides ``latest``).
        latest_from: the AMAGO file ``latest`` came from.
        notes: one-line remarks (inferred spaces, the context length used, sections left out).
    """

    out: Path
    epochs: list[int] = field(default_factory=list)
    latest_from: Path | None = None
    notes: list[str] = field(default_factory=list)


def _load_tensors(path: Path) -> dict[str, torch.Tensor]:
    """A state dict of tensors from an AMAGO weights file, never unpickling objects."""
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            data: Any = load_file(str(path), device="cpu")
        else:
            data = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # torch raises UnpicklingError, RuntimeError or OSError for unreadable files
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        msg = f"cannot read {path} as tensors only ({first}); pass AMAGO's own policy.pt / model.safetensors."
        raise AmagoImportError(msg) from exc
    if not isinstance(data, Mapping) or not all(isinstance(v, torch.Tensor) for v in data.values()):
        msg = f"{path} is not a state dict of tensors; pass AMAGO's policy.pt (an agent's state_dict())."
        raise AmagoImportError(msg)
    out = {}
    for key, value in data.items():
        for prefix in _WRAPPER_PREFIXES:
            if key.startswith(prefix):
                key = key[len(prefix) :]
        out[key] = value
    return out


def _find_weights(ckpts: Path) -> tuple[Path | None, dict[int, Path]]:
    """``(latest policy file or None, {epoch: file})`` of an AMAGO ``ckpts`` folder (plain weights win)."""
    epochs: dict[int, Path] = {}
    states = ckpts / "training_states"
    if states.is_dir():
        for folder in states.iterdir():
            match = _STATE_DIR.match(folder.name)
            if not match or not folder.is_dir():
                continue
            for name in ("model.safetensors", "pytorch_model.bin"):
                if (folder / name).is_file():
                    epochs[int(match.group(1))] = folder / name
                    break
    weights = ckpts / "policy_weights"
    if weights.is_dir():
        for file in weights.iterdir():
            match = _EPOCH_FILE.match(file.name)
            if match:
                epochs[int(match.group(1))] = file
    latest = ckpts / "latest" / "policy.pt"
    return (latest if latest.is_file() else None), dict(sorted(epochs.items()))


def _check_out(out: Path, overwrite: bool) -> None:
    """Refuses an output that is not a folder of the import's own: a symlink (which may point anywhere), a file,
    a folder of other files, or an amago run (unless ``overwrite``)."""
    from amago_core.experiment.run_dir import RunPaths

    if out.is_symlink():
        msg = (
            f"{out} is a symlink (to {os.readlink(out)}): import-amago writes only into a real folder, never "
            "through a link that may point anywhere; pass the path of a new folder as OUT"
        )
        raise AmagoImportError(msg)
    if not out.exists():
        return
    if not out.is_dir():
        msg = f"{out} is a file; pass the path of a new folder as OUT"
        raise AmagoImportError(msg)
    if RunPaths(out.parent, out.name).holds_a_run():
        if not overwrite:
            msg = f"{out} already holds an amago run; pass --overwrite to replace it or choose another OUT."
            raise AmagoImportError(msg)
        return
    if any(out.iterdir()):
        msg = (
            f"{out} holds files but no amago run: import-amago writes into a new or empty folder only (--overwrite "
            "replaces an amago run, nothing else); choose another OUT"
        )
        raise AmagoImportError(msg)


def _left_over(paths: Any, epochs: list[int]) -> str | None:
    """A note naming the replaced run's weights and states an ``--overwrite`` import leaves (it deletes nothing)."""
    old = [epoch for epoch, _ in paths.saved_policies() if epoch not in epochs]
    states = paths.saved_epochs()
    if not old and not states:
        return None
    kept = [f"policy weights of epochs {', '.join(map(str, old))}"] if old else []
    kept += [f"training states of epochs {', '.join(map(str, states))}"] if states else []
    return (
        f"{paths.root} still holds what the run it replaced left ({'; '.join(kept)}): they are not the AMAGO run's; "
        "delete them unless you mean to keep them"
    )


def _check_run_dir(run_dir: Path) -> Path:
    if not run_dir.is_dir():
        msg = f"no folder at {run_dir}; pass an AMAGO run folder ({{ckpt_base_dir}}/{{run_name}}, holding ckpts/config.txt)."
        raise AmagoImportError(msg)
    ckpts = run_dir / "ckpts"
    if not (ckpts / "config.txt").is_file():
        if (run_dir / "config.resolved.json").is_file():
            msg = f"{run_dir} is already an amago run folder; load it with amago.load_policy or `amago eval`."
        elif (run_dir / "config.txt").is_file() and run_dir.name == "ckpts":
            msg = f"{run_dir} is an AMAGO ckpts folder; pass its parent, the run folder ({run_dir.parent})."
        else:
            msg = f"{run_dir} is not an AMAGO run folder (no ckpts/config.txt); pass {{ckpt_base_dir}}/{{run_name}} of an AMAGO run."
        raise AmagoImportError(msg)
    return ckpts


# ---- spaces ---------------------------------------------------------------------------------------------


def _shape(sd: Mapping[str, torch.Tensor], key: str) -> tuple[int, ...]:
    if key not in sd:
        msg = f"the AMAGO weights lack {key}; import-amago maps AMAGO's ff and cnn timestep encoders and plain Actor only."
        raise AmagoImportError(msg)
    return tuple(sd[key].shape)


def _is_cnn(config: AmagoRunConfig) -> bool:
    return config.tstep_encoder.get("kind") == "cnn"


def _rl2_inputs(sd: Mapping[str, torch.Tensor], config: AmagoRunConfig) -> int:
    """Width of the previous reward and action input the AMAGO timestep encoder reads."""
    return _shape(sd, "tstep_encoder.rl2_features.weight")[1]


def _image_space(shape: tuple[int, ...]) -> spaces.Box:
    """AMAGO's CNN scaled every image by ``x / 128 - 1``; amago does that for uint8 pixels, so images are uint8."""
    return spaces.Box(0, 255, shape, np.uint8)


def _infer_spaces(
    sd: Mapping[str, torch.Tensor],
    config: AmagoRunConfig,
    multibinary: bool,
    image_shape: tuple[int, ...] | None = None,
) -> Any:
    """The observation and action spaces the weight shapes imply (no env to ask): a flat Box for the ff timestep
    encoder, a uint8 image of ``image_shape`` for the cnn one."""
    from amago_core.rollout.spaces import PolicySpaces

    state_dim = _shape(sd, "actor.base.in_layer.weight")[1]
    gammas = _shape(sd, "popart.mu")[0]
    actor_out = _shape(sd, "actor.base.out_layer.weight")[0]
    critic_in = _shape(sd, "critics.net.inp_layer.weight")[1]
    if critic_in == state_dim:  # Agent's discrete critic reads the state only
        action: spaces.Space[Any] = spaces.Discrete(actor_out // gammas)
        dim = actor_out // gammas
    else:
        dim = critic_in - state_dim - 1
        per_gamma = actor_out // gammas
        if multibinary:
            action = spaces.MultiBinary(dim)
        elif per_gamma == dim:
            action = spaces.Discrete(dim)
        else:
            action = spaces.Box(-1.0, 1.0, (dim,), np.float32)
    obs: spaces.Box
    if _is_cnn(config):
        if image_shape is None:
            msg = "the weights of AMAGO's CNN do not tell the image's height and width; pass --image-shape H,W,C (the env's observation shape, e.g. 84,84,3) or --env ENV_ID."
            raise AmagoImportError(msg)
        obs = _image_space(image_shape)
        key = str(config.tstep_encoder.get("obs_key", "observation"))
    else:
        inputs = _shape(sd, "tstep_encoder.base.in_layer.weight")[1]
        obs_dim = inputs - (1 + dim)
        if obs_dim < 1:
            msg = "cannot infer the observation size from the weights; pass --env ENV_ID with the run's env."
            raise AmagoImportError(msg)
        obs = spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        key = "observation"
    return PolicySpaces(
        obs_space=spaces.Dict({key: obs}),
        rl2_space=spaces.Box(-np.inf, np.inf, (1 + dim,), np.float32),
        action_space=action,
        env_observation_space=obs,
        env_action_space=action,
    )


def _env_spaces(env_id: str) -> tuple[Any, Any]:
    """The env slot config and the spaces of one env of ``env_id``."""
    from amago_core.config.experiment import ExperimentConfig
    from amago_core.plugins.registry import registries
    from amago_core.rollout.spaces import PolicySpaces

    try:
        suite = ExperimentConfig.model_validate({"env": env_id}).component("env")
    except Exception as exc:  # pydantic / plugin errors name the unknown id and the closest ones
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1].strip()
        msg = f"--env {env_id}: {first}"
        raise AmagoImportError(msg) from exc
    env = registries().env_suites.build(suite).make_env("test")
    try:
        return suite, PolicySpaces.of_env(env)
    finally:
        env.close()


def _check_env_fits(sd: Mapping[str, torch.Tensor], found: Any, env_id: str, config: AmagoRunConfig) -> None:
    """Says which shape differs when the env's spaces do not match the weights."""
    from gymnasium.spaces.utils import flatdim

    rl2 = int(found.rl2_space.shape[0])
    if _is_cnn(config):
        key = str(config.tstep_encoder.get("obs_key", "observation"))
        image = found.obs_space.spaces.get(key)
        if image is None:
            msg = f"--env {env_id} has no observation key {key!r} (keys: {', '.join(found.obs_space.spaces)}), which AMAGO's CNNTstepEncoder.obs_key reads; pass the env the run trained on."
            raise AmagoImportError(msg)
        if getattr(image, "dtype", None) != np.uint8:
            msg = f"--env {env_id}'s {key!r} images are {getattr(image, 'dtype', image)}, not uint8: AMAGO's CNN scaled every image by x/128 - 1, amago's only uint8 pixels; serve the frames as uint8 pixels to import this run."
            raise AmagoImportError(msg)
        reads = _rl2_inputs(sd, config)
        if rl2 != reads:
            msg = f"--env {env_id} gives {rl2} reward/action inputs, but the AMAGO timestep encoder reads {reads} (tstep_encoder.rl2_features.weight); pass the env the run trained on."
            raise AmagoImportError(msg)
        return
    inputs = _shape(sd, "tstep_encoder.base.in_layer.weight")[1]
    obs = sum(flatdim(s) for s in found.obs_space.spaces.values())
    if obs + rl2 != inputs:
        msg = (
            f"--env {env_id} gives {obs} observation + {rl2} reward/action inputs = {obs + rl2}, but the AMAGO "
            f"timestep encoder reads {inputs} (tstep_encoder.base.in_layer.weight); pass the env the run trained on."
        )
        raise AmagoImportError(msg)


def _check_image_fits(sd: Mapping[str, torch.Tensor], agent: torch.nn.Module, where: str) -> None:
    """The CNN's flattened output for the given image shape must be what AMAGO's ``img_features`` layer reads."""
    reads = _shape(sd, "tstep_encoder.img_features.weight")[1]
    layer = getattr(getattr(agent, "tstep_encoder", None), "img_features", None)
    gives = getattr(layer, "in_features", reads)
    if gives != reads:
        msg = f"the image shape from {where} gives {gives} CNN features, but AMAGO's tstep_encoder.img_features reads {reads}; pass the run's own image shape."
        raise AmagoImportError(msg)


# ---- the import -----------------------------------------------------------------------------------------


def _build_agent(config: AmagoRunConfig, found: Any, max_seq_len: int) -> torch.nn.Module:
    from amago_core.plugins.registry import registries

    reg = registries()
    discrete = isinstance(found.action_space, spaces.Discrete)
    try:
        return reg.agents.build(
            config.agent_for(discrete),
            obs_space=found.obs_space,
            rl2_space=found.rl2_space,
            action_space=found.action_space,
            max_seq_len=max_seq_len,
            tstep_encoder=reg.tstep_encoders.builder(config.tstep_encoder),
            traj_encoder=reg.traj_encoders.builder(config.traj_encoder),
        )
    except Exception as exc:  # config validation and agent checks raise one-line ValueErrors
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        msg = f"cannot build the amago agent for this AMAGO run: {first}"
        raise AmagoImportError(msg) from exc


def _run_record(
    config: AmagoRunConfig, found: Any, out: Path, max_seq_len: int, env: Any, source: Path
) -> dict[str, Any]:
    from amago_core.config.experiment import ExperimentConfig
    from amago_core.config.sources import PROVENANCE_KEY

    discrete = isinstance(found.action_space, spaces.Discrete)
    table: dict[str, Any] = {
        "run": {"name": out.name, "ckpt_base_dir": str(out.parent), "max_seq_len": max_seq_len},
        "tstep_encoder": config.tstep_encoder,
        "traj_encoder": config.traj_encoder,
        "agent": config.agent_for(discrete),
    }
    if env is not None:
        table["env"] = env.to_dict() if hasattr(env, "to_dict") else env
    resolved = ExperimentConfig.model_validate(table).resolved()
    record = resolved.model_dump(mode="json")
    record[PROVENANCE_KEY] = {
        "command": shlex.join(sys.argv),
        "imported_from_amago": str(source.resolve()),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    return record


def import_amago_run(
    run_dir: str | Path,
    out: str | Path,
    *,
    env_id: str | None = None,
    max_seq_len: int | None = None,
    overwrite: bool = False,
    echo: Callable[[str], None] | None = None,
    image_shape: tuple[int, ...] | None = None,
) -> ImportResult:
    """Converts an AMAGO v3.3.0 run folder into an amago run folder.

    Args:
        run_dir: the AMAGO run folder (``{ckpt_base_dir}/{run_name}``, holding ``ckpts/config.txt``).
        out: the amago run folder to write.
        env_id: an amago env id whose spaces the agent is built with (checked against the weights); None:
            a flat Box observation and the action space the weights imply.
        max_seq_len: the run's context length (AMAGO's ``Experiment(max_seq_len=...)``, not in config.txt).
        overwrite: replace an existing amago run folder at ``out``.
        echo: where one-line notes go as they happen.
        image_shape: the image observation's shape (as the env gives it) of a run with AMAGO's CNN timestep
            encoder and no ``env_id`` (the weights do not tell an image's height and width).

    Raises:
        AmagoImportError: not an AMAGO run, a custom class, weights that do not map (one line each).
    """
    from amago_core.experiment.run_dir import RunPaths

    run_dir, out = Path(run_dir), Path(out)
    ckpts = _check_run_dir(run_dir)
    _check_out(out, overwrite)
    try:
        config = read_config(ckpts / "config.txt")
    except AmagoConfigError as exc:
        raise AmagoImportError(str(exc)) from exc
    latest, epochs = _find_weights(ckpts)
    if latest is None and not epochs:
        msg = f"{ckpts} holds no AMAGO weights (latest/policy.pt, policy_weights/*.pt or training_states/*/); train the AMAGO run first."
        raise AmagoImportError(msg)
    result = ImportResult(out=out, notes=list(config.notes))
    latest_source = latest if latest is not None else epochs[max(epochs)]
    result.latest_from = latest_source
    reference = _load_tensors(latest_source)

    multibinary = config.multibinary_policy
    env_config = None
    if env_id is not None:
        env_config, found = _env_spaces(env_id)
        _check_env_fits(reference, found, env_id, config)
    else:
        found = _infer_spaces(reference, config, multibinary, image_shape)
        if _is_cnn(config):
            (key, image), *_ = found.obs_space.spaces.items()
            result.notes.append(
                f"no --env: built with a uint8 image observation {key!r} of shape {image.shape} (--image-shape) and "
                f"action space {found.action_space} read from the weight shapes"
            )
        else:
            result.notes.append(
                f"no --env: built with a flat Box observation 'observation' of size {found.obs_space['observation'].shape[0]} "
                f"and action space {found.action_space} read from the weight shapes"
            )
    if max_seq_len is None:
        max_seq_len = DEFAULT_MAX_SEQ_LEN
        result.notes.append(
            f"max_seq_len is not in config.txt: wrote {max_seq_len} (pass --max-seq-len with the AMAGO run's value)"
        )
    agent = _build_agent(config, found, max_seq_len)
    if _is_cnn(config):
        _check_image_fits(reference, agent, f"--env {env_id}" if env_id is not None else "--image-shape")

    paths = RunPaths(out.parent, out.name)
    sources = [("latest", latest_source, paths.latest_policy)]
    sources += [(f"epoch {e}", path, paths.policy_at(e)) for e, path in epochs.items()]
    mapped = []
    for label, source, target in sources:
        state = reference if source == latest_source else _load_tensors(source)
        try:
            converted = amago_state_dict_to_amago(state, agent)
        except AmagoCheckpointError as exc:
            msg = f"{source}: {exc}"
            raise AmagoImportError(msg) from exc
        mapped.append((label, converted, target))
    record = _run_record(config, found, out, max_seq_len, env_config, run_dir)
    _write_run(paths, agent, mapped, found.to_json(), record, result)
    left_over = _left_over(paths, result.epochs)
    if left_over is not None:
        result.notes.append(left_over)
    if echo is not None:
        for note in result.notes:
            echo(note)
    return result


def _write_run(
    paths: Any,
    agent: torch.nn.Module,
    mapped: list[tuple[str, dict[str, torch.Tensor], Path]],
    spaces_json: Any,
    record: dict[str, Any],
    result: ImportResult,
) -> None:
    """Writes the amago run folder, holding its run lock: every path is checked to stay inside it through no
    symlink before the first file is written, and each file is renamed into place (never written through a link).

    Raises:
        AmagoImportError: a path is a symlink, another amago process holds the folder, or a write failed.
    """
    from amago_core.experiment.checkpoints import save_policy_weights
    from amago_core.experiment.run_lock import RunInUseError, acquire
    from amago_core.io import UnsafePathError, atomic_write_json

    root = paths.root
    try:
        folders = (paths.training_states, paths.policy_weights, paths.latest_policy.parent, paths.plots)
        for target in (*folders, paths.spaces, paths.config, *(target for _, _, target in mapped)):
            paths.check(target)
        lock = acquire(root, "import-amago")
        try:
            paths.make_dirs()
            for label, converted, target in mapped:
                agent.load_state_dict(converted, strict=True)
                save_policy_weights(agent, target, root=root)
                if label.startswith("epoch "):
                    result.epochs.append(int(label.split()[1]))
            atomic_write_json(paths.spaces, spaces_json, root=root)
            atomic_write_json(paths.config, record, root=root)
        finally:
            if lock is not None:
                lock.release()
    except (RunInUseError, UnsafePathError) as exc:  # one line naming the other process or the link
        raise AmagoImportError(str(exc)) from exc
    except OSError as exc:
        msg = f"cannot write {root}: {exc.strerror or exc}; free space or fix the folder's permissions, then retry"
        raise AmagoImportError(msg) from exc
