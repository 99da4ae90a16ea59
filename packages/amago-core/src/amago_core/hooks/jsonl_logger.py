"""The always-on local log backend: one JSON object per line in ``{run_dir}/metrics.jsonl``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from amago_core.hooks.specs import hookimpl
from amago_core.io import atomic_write_text


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN/inf; keep them visible instead of dropping the record
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return _json_safe(value.item())
    return value


class JsonlLogBackend:
    """Appends metrics records to a JSONL file, flushed per record so a killed run keeps what it logged."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")

    def log(self, metrics: dict[str, Any], *, step: int) -> None:
        record = {"step": step, **{key: _json_safe(value) for key, value in metrics.items()}}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def rollback(self, *, after_epoch: int) -> None:
        """Moves the records of epochs after ``after_epoch`` to ``{name}.rolled-back.jsonl`` (kept, not lost).

        A resumed run redoes those epochs; left in place, their records would make curves run backwards.
        """
        self._file.close()
        kept: list[str] = []
        moved: list[str] = []
        for line in self.path.read_text(encoding="utf-8").splitlines(keepends=True):
            try:
                epoch = json.loads(line).get("Epoch")
            except (json.JSONDecodeError, AttributeError):
                epoch = None  # a line cut short by a kill: it belongs to the work being redone
            (kept if isinstance(epoch, int) and epoch <= after_epoch else moved).append(line)
        if moved:
            with self.path.with_name(f"{self.path.stem}.rolled-back.jsonl").open(
                "a", encoding="utf-8"
            ) as out:
                out.writelines(line if line.endswith("\n") else line + "\n" for line in moved)
            atomic_write_text(self.path, "".join(kept))
        self._file = self.path.open("a", encoding="utf-8")


def metrics_file_name(mode: str | None) -> str:
    """``metrics.jsonl``; a collect-only process writes ``metrics-collect.jsonl`` so its records stay apart."""
    return "metrics-collect.jsonl" if mode == "collect" else "metrics.jsonl"


@hookimpl
def amago_log_backends(run_dir: Path, config: dict[str, Any]) -> JsonlLogBackend:
    """amago's own backend: always on."""
    return JsonlLogBackend(Path(run_dir) / metrics_file_name(config.get("run", {}).get("mode")))
