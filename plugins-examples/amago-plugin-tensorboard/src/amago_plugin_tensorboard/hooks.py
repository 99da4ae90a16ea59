"""The plugin's hook module: registered under the ``amago`` entry-point group, imported when amago starts.

It stays cheap (no torch, no tensorboard at import): the backend module is imported only when a run asks for
it by setting ``AMAGO_TENSORBOARD=1``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amago_core.hooks import hookimpl

SWITCH = "AMAGO_TENSORBOARD"
"""Environment variable that turns the backend on for the runs started with it (1 / 0)."""

_ON = {"1", "true", "yes", "on"}
_OFF = {"", "0", "false", "no", "off"}


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``AMAGO_TENSORBOARD`` asks for TensorBoard event files.

    Raises:
        ValueError: the variable holds something other than an on/off word.
    """
    raw = (os.environ if environ is None else environ).get(SWITCH, "").strip().lower()
    if raw in _ON:
        return True
    if raw in _OFF:
        return False
    msg = f"{SWITCH}={raw!r} is neither on nor off; set it to 1 (write TensorBoard event files) or 0."
    raise ValueError(msg)


def log_dir(run_dir: Path, config: Mapping[str, Any]) -> Path:
    """``{run_dir}/tensorboard``; a collect-only process writes ``{run_dir}/tensorboard/collect``.

    Each folder is one TensorBoard run, so a collector's records never interleave with the learner's
    (the same split as amago's ``metrics-collect.jsonl``).
    """
    folder = Path(run_dir) / "tensorboard"
    return folder / "collect" if config.get("run", {}).get("mode") == "collect" else folder


@hookimpl
def amago_log_backends(run_dir: Path, config: dict[str, Any]) -> Any:
    """Contributes a TensorBoard backend when ``AMAGO_TENSORBOARD=1``; stays out otherwise."""
    if not enabled():
        return None
    from amago_plugin_tensorboard.backend import TensorBoardLogBackend

    return TensorBoardLogBackend(log_dir(run_dir, config), config=config)
