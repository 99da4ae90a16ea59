"""Loading a local minari dataset and naming its environment (shared by the suite and the converter)."""

from __future__ import annotations

from typing import Any


class DatasetNotFoundError(LookupError):
    """The minari dataset is not available locally."""


def load_local_dataset(dataset_id: str) -> Any:
    """Loads a minari dataset that is already on this machine (never downloads).

    Raises:
        DatasetNotFoundError: the dataset is not under ``MINARI_DATASETS_PATH``; names the datasets that are.
    """
    import minari

    local = minari.list_local_datasets()
    if dataset_id not in local:
        msg = (
            f"minari dataset {dataset_id!r} is not available locally (MINARI_DATASETS_PATH); local datasets: "
            f"{', '.join(sorted(local)) or '(none)'}. Download it with `minari download {dataset_id}` where there "
            "is network access, or create it with minari.DataCollector."
        )
        raise DatasetNotFoundError(msg)
    return minari.load_dataset(dataset_id)


def dataset_env_name(dataset_id: str) -> str:
    """The env name of a dataset's trajectories and metrics: its id with ``/`` and ``_`` written as ``-``."""
    return dataset_id.replace("/", "-").replace("_", "-")
