"""Weights & Biases log backend, contributed through the ``amago_log_backends`` hook when a run asks for it.

Works without a network in ``WANDB_MODE=offline`` or ``disabled``. wandb is imported only when a run
actually logs to it, never at CLI start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amago_core.hooks.specs import hookimpl

X_AXES = ("total_frames", "Epoch", "gradient_steps")


class WandbLogBackend:
    """Logs every record to one wandb run; x-axis keys are declared so charts can be re-plotted against them."""

    def __init__(self, run_dir: Path, config: dict[str, Any]):
        import wandb

        logging_cfg = config.get("logging", {})
        run_cfg = config.get("run", {})
        self._wandb = wandb
        self.run = wandb.init(
            project=logging_cfg.get("wandb_project"),
            entity=logging_cfg.get("wandb_entity"),
            group=logging_cfg.get("wandb_group_name"),
            name=run_cfg.get("name"),
            dir=str(Path(run_dir)),
            config=config,
            reinit="finish_previous",
        )
        for axis in X_AXES:
            self.run.define_metric(axis)

    def log(self, metrics: dict[str, Any], *, step: int) -> None:
        self.run.log(metrics)

    def close(self) -> None:
        self.run.finish()


@hookimpl
def amago_log_backends(run_dir: Path, config: dict[str, Any]) -> WandbLogBackend | None:
    """Contributes a wandb backend when ``logging.log_to_wandb`` is true."""
    if not config.get("logging", {}).get("log_to_wandb"):
        return None
    return WandbLogBackend(run_dir, config)
