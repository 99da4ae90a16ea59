"""AMAGO's ``amago.loading``: datasets and batches (amago-core's data path). ``RLData`` and ``RLDataset`` take
AMAGO's arguments for datasets a script writes itself (:mod:`amago.from_amago.data`)."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "RLData": "amago.from_amago.data:RLData",
        "Batch": "amago_core.data.batch:Batch",
        "RLData_pad_collate": "amago_core.data.batch:collate",
        "RLDataset": "amago.from_amago.data:RLDataset",
        "DiskTrajDataset": "amago_core.data.disk_buffer:DiskTrajDataset",
        "MixtureOfDatasets": "amago_core.data.mixture:MixtureOfDatasets",
        "DoNothingDataset": "amago_core.data.dataset:DoNothingDataset",
    },
    no_counterpart={
        "MAGIC_PAD_VAL": "a Batch carries its padding as a boolean mask (Batch.mask), not as a pad value",
        "load_traj_from_disk": "amago_core.data.load_traj(path) reads a trajectory file as a FrozenTraj "
        "(pickled .traj files only with allow_pickle=True)",
    },
)
