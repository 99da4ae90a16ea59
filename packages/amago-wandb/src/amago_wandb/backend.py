"""Weights & Biases log backend, contributed through the ``amago_log_backends`` hook when a run asks for it
(registered as ``wandb = "amago_wandb.backend"`` under the ``amago`` entry-point group).

Works without a network in ``WANDB_MODE=offline`` or ``disabled``. wandb is imported only when a run
actually logs to it, never at CLI start, and is optional: a run that asks for it without it installed stops
with one line saying what to install.

A training run records its wandb run in ``RUN_DIR/wandb-run.json`` (id, project, entity, mode).
``amago eval`` reads it to add its test metrics and videos to that run (same id, resumed) instead of opening
another; :func:`resume_recorded_run` says in one line why it cannot when wandb is not usable there.

wandb keeps its own files in ``RUN_DIR/wandb/``: a history file per wandb run (``run-*.wandb``, a few times the
size of ``metrics.jsonl``: it grows with every record) and its debug logs. amago leaves them alone: trimming the
history would lose what has not been synced. ``wandb sync`` uploads offline runs and ``wandb clean`` then
removes synced ones; ``amago doctor RUN_DIR`` shows the folder's size.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from amago_core.hooks.specs import hookimpl
from amago_core.io import atomic_write_json

X_AXES = ("total_frames", "Epoch", "gradient_steps")
RUN_RECORD = "wandb-run.json"
"""The file, in the run folder, that names the run's wandb run."""
INSTALL_HINT = "pip install amago-wandb"
OFFLINE_MODES = ("offline", "dryrun")


class WandbNotInstalledError(ImportError):
    """A run asks for wandb (``logging.log_to_wandb``) but wandb is not installed."""


class WandbUnusableError(RuntimeError):
    """wandb cannot be used here (not installed, disabled, no API key, or it failed to start); one line why."""


def import_wandb() -> Any:
    """The wandb module.

    Raises:
        WandbNotInstalledError: one line with the install command.
    """
    try:
        import wandb
    except ImportError:
        msg = (
            f"logging.log_to_wandb is true but wandb is not installed: {INSTALL_HINT}, or set "
            "logging.log_to_wandb=false"
        )
        raise WandbNotInstalledError(msg) from None
    return wandb


class WandbLogBackend:
    """Logs every record to one wandb run; x-axis keys are declared so charts can be re-plotted against them.

    Args:
        run: the wandb run (from ``wandb.init``).
        wandb: the wandb module.
    """

    def __init__(self, run: Any, wandb: Any):
        self.run = run
        self._wandb = wandb
        for axis in X_AXES:
            self.run.define_metric(axis)

    @classmethod
    def start(cls, run_dir: Path, config: dict[str, Any]) -> WandbLogBackend:
        """Opens a new wandb run for a training process and records it in ``RUN_DIR/wandb-run.json``.

        A collect-only process opens a run of its own but records nothing: the learner's run is the one that
        ``amago eval`` continues.
        """
        wandb = import_wandb()
        logging_cfg = config.get("logging", {})
        run_cfg = config.get("run", {})
        run = wandb.init(
            project=logging_cfg.get("wandb_project"),
            entity=logging_cfg.get("wandb_entity"),
            group=logging_cfg.get("wandb_group_name"),
            name=run_cfg.get("name"),
            dir=str(Path(run_dir)),
            config=config,
            reinit="finish_previous",
        )
        if run_cfg.get("mode") != "collect" and not run.disabled:
            record = {
                "id": run.id,
                "project": run.project or None,
                "entity": run.entity or None,  # offline runs have none yet
                "mode": "offline" if run.offline else "online",
            }
            atomic_write_json(Path(run_dir) / RUN_RECORD, record)
        return cls(run, wandb)

    def log(self, metrics: dict[str, Any], *, step: int) -> None:
        self.run.log(metrics)

    def log_videos(self, key: str, paths: list[Path], *, x_axes: dict[str, Any]) -> None:
        """Logs video files (mp4 or gif) under ``key``, with the x-axes of the weights that played them."""
        self.run.log({key: [self._wandb.Video(str(path)) for path in paths], **x_axes})

    def close(self) -> None:
        self.run.finish()


def recorded_run(run_dir: Path) -> dict[str, Any] | None:
    """What ``RUN_DIR/wandb-run.json`` says (None when the run recorded no wandb run, or the file is unreadable)."""
    path = Path(run_dir) / RUN_RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("id"), str) else None


def _has_credentials(wandb: Any) -> bool:
    """Whether wandb finds an API key (env, settings, .netrc) without prompting for one."""
    try:
        return bool(wandb.login(prompt=False, verify=False))
    except TypeError:  # wandb before `prompt=`: only the environment can be checked without a prompt
        return bool(os.environ.get("WANDB_API_KEY"))


def _mode(wandb: Any) -> str:
    """The mode wandb would run in: ``WANDB_MODE``, else its settings files (``wandb offline``), else online."""
    mode = os.environ.get("WANDB_MODE", "").strip().lower()
    if mode:
        return mode
    return str(getattr(wandb.setup().settings, "mode", "online") or "online").lower()


def resume_recorded_run(run_dir: Path, config: dict[str, Any]) -> WandbLogBackend:
    """Resumes the wandb run a training run recorded, for ``amago eval`` to add its test metrics and videos to.

    Never prompts for an API key: without one (and outside offline mode) it refuses instead. In offline
    mode the records go to a new offline folder of the same run id, merged into the run by ``wandb sync``.

    Args:
        run_dir: the run folder.
        config: the run's resolved config (the project and entity when the record lacks them).

    Raises:
        WandbUnusableError: one line saying why wandb cannot be used and what would make it usable.
    """
    record = recorded_run(run_dir)
    if record is None:
        msg = f"{Path(run_dir) / RUN_RECORD} is missing (the run was trained before amago recorded its wandb run)"
        raise WandbUnusableError(msg)
    run_id = record["id"]
    try:
        wandb = import_wandb()
    except WandbNotInstalledError:
        msg = f"wandb is not installed ({INSTALL_HINT})"
        raise WandbUnusableError(msg) from None
    mode = _mode(wandb)
    if mode == "disabled":
        msg = "wandb is disabled (WANDB_MODE=disabled)"
        raise WandbUnusableError(msg)
    if mode not in OFFLINE_MODES and not _has_credentials(wandb):
        msg = f"no wandb API key is configured (`wandb login`, or WANDB_MODE=offline to add them to run {run_id} offline)"
        raise WandbUnusableError(msg)
    logging_cfg = config.get("logging", {})
    try:
        run = wandb.init(
            id=run_id,
            resume="allow",
            project=record.get("project") or logging_cfg.get("wandb_project"),
            entity=record.get("entity") or logging_cfg.get("wandb_entity"),
            dir=str(Path(run_dir)),
            reinit="finish_previous",
        )
    except Exception as exc:  # network, server or auth trouble: the metrics still go to the local file
        first = (str(exc).strip().splitlines() or [""])[0]
        msg = f"wandb could not resume run {run_id} ({type(exc).__name__}: {first})"
        raise WandbUnusableError(msg) from exc
    return WandbLogBackend(run, wandb)


@hookimpl
def amago_log_backends(run_dir: Path, config: dict[str, Any]) -> WandbLogBackend | None:
    """Contributes a wandb backend when ``logging.log_to_wandb`` is true."""
    if not config.get("logging", {}).get("log_to_wandb"):
        return None
    return WandbLogBackend.start(run_dir, config)


@hookimpl
def amago_eval_log_backends(run_dir: Path, config: dict[str, Any], metrics: Path) -> WandbLogBackend | None:
    """For ``amago eval`` of a run trained with wandb: its wandb run, resumed; or one line why the test records
    stay in ``metrics`` only."""
    if not config.get("logging", {}).get("log_to_wandb"):
        return None
    try:
        return resume_recorded_run(run_dir, config)
    except WandbUnusableError as exc:
        reason = " ".join(str(exc).split())
        sys.stderr.write(f"amago: warning: {reason}; test metrics written to {metrics} only\n")
        return None
