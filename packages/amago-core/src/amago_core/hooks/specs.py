"""pluggy hook specifications: the 1:N extension points where several plugins all take part.

A plugin implements hooks in a torch-free module and registers that module under the ``amago``
entry-point group::

    [project.entry-points.amago]
    my_logger = "my_pkg.amago_hooks"

    # my_pkg/amago_hooks.py
    from amago_core.hooks import hookimpl

    @hookimpl
    def amago_log_backends(run_dir, config):
        return MyBackend(run_dir)

Component registration (encoders, agents, envs...) does not go through pluggy: listing must not import
every plugin. Hook modules are imported when the CLI starts, so they must stay cheap (no torch at import).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pluggy

PROJECT_NAME = "amago"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@runtime_checkable
class LogBackend(Protocol):
    """Where metrics go. Every record carries its x-axes (``total_frames``, ``Epoch``, ``gradient_steps``)."""

    def log(self, metrics: dict[str, Any], *, step: int) -> None:
        """Records one flat dict of metrics (``"val/Average Total Return (Across All Env Names)"``: 1.0)."""

    def close(self) -> None:
        """Flushes and releases resources at the end of the run."""


class AmagoHookSpecs:
    """The hooks amago calls. Implementations take any subset of the arguments, by name."""

    @hookspec
    def amago_log_backends(
        self, run_dir: Path, config: dict[str, Any]
    ) -> LogBackend | list[LogBackend] | None:
        """Returns the log backend(s) this plugin contributes to a run (or None to stay out).

        Args:
            run_dir: the run's folder, ``{ckpt_base_dir}/{run_name}``.
            config: the resolved experiment config as a JSON-safe dict.
        """

    @hookspec
    def amago_on_epoch_end(self, experiment: Any, epoch: int, metrics: dict[str, Any]) -> None:
        """Called after every epoch (trained or not) with that epoch's metrics: ``val/``, ``train/`` (the last
        logged step), ``dataset/`` and the x-axes. ``experiment.request_stop()`` ends the run after it."""

    @hookspec
    def amago_on_evaluation(self, experiment: Any, split: str, metrics: dict[str, Any]) -> None:
        """Called after an evaluation; ``split`` is ``val``, ``test``, or ``test-<tasks>`` for `amago eval --tasks`
        on other tasks than the run's test split (``test-unseen``, ``test-train``, ``test-val``)."""

    @hookspec
    def amago_on_checkpoint(self, experiment: Any, epoch: int, path: Path) -> None:
        """Called after a checkpoint is written to ``path``."""

    @hookspec(firstresult=True)
    def amago_default_job(self) -> dict[str, Any] | None:
        """The config `amago run` uses when no env is given anywhere (the first plugin to answer wins).

        The ``amago`` meta-package answers with its embedded main job; amago-core names no component itself.
        """

    @hookspec
    def amago_cli_commands(self, app: Any) -> None:
        """Adds commands to the ``amago`` Typer app (``app.command()(my_function)``)."""
