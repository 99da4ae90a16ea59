"""The format number of a run folder's files and the steps that migrate older ones (below ``config``, which reads
a run's record as a config source, and ``experiment``, which reads its states and weights)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

FORMAT = 1
"""Version of the files a checkpoint loads from, recorded in each: ``progress.json`` (``format``), the policy weights
(safetensors metadata ``format``), ``config.resolved.json`` (``_provenance.format``); 0: from before amago recorded
it. A change to any of them raises it and adds ``MIGRATIONS[FORMAT - 1]``, tested on tests/compat's golden runs."""

PROVENANCE_KEY = "_provenance"
"""Top-level key of `config.resolved.json` holding versions and the command line; ignored when loading."""


class RefusedStateError(ValueError):
    """A checkpoint amago will not load (pickle files, or a format newer than :data:`FORMAT`); the message says why."""


MIGRATIONS: dict[int, dict[str, Callable[[Any], Any]]] = {0: {}}
"""``MIGRATIONS[N]``, migrate_from_N: per file kind (``progress``, ``config``: the JSON record; ``weights``: the
tensors by name), what turns it from format N into N + 1; a kind it lacks is unchanged. Format 0 is format 1's
layout (progress records of both may lack the fields ``Progress.from_json`` defaults)."""


def migrated(kind: str, data: Any, found: int, file: Path) -> Any:
    """``data`` of ``file`` (a ``kind`` file: progress, config or weights; of format ``found``) as :data:`FORMAT`.

    Raises:
        RefusedStateError: ``found`` is newer than :data:`FORMAT`.
    """
    if found > FORMAT:
        msg = f"{file} has checkpoint format {found}, newer than this amago's {FORMAT}: upgrade amago to load it."
        raise RefusedStateError(msg)
    for step in range(found, FORMAT):
        data = MIGRATIONS[step].get(kind, lambda unchanged: unchanged)(data)
    return data


def migrated_config(record: Mapping[str, Any], file: Path) -> dict[str, Any]:
    """``file``'s ``config.resolved.json`` record (its format in ``_provenance``; 0: none) as :data:`FORMAT`, its
    provenance saying so (migrating it again changes nothing)."""
    provenance = record.get(PROVENANCE_KEY)
    provenance = provenance if isinstance(provenance, dict) else {}
    data = migrated("config", dict(record), int(provenance.get("format", 0)), file)
    return {**data, PROVENANCE_KEY: {**provenance, "format": FORMAT}}
