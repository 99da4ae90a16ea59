"""amago's data path: timesteps, trajectories, trajectory files, datasets and batches (numpy, torch-free)."""

from __future__ import annotations

from amago_core.data.batch import Batch, collate
from amago_core.data.dataset import DatasetNotReadyError, DoNothingDataset, Relabeler, RLDataset
from amago_core.data.disk_buffer import CorruptTrajFileWarning, DiskTrajDataset
from amago_core.data.files import (
    SAVE_FORMATS,
    SaveFormat,
    TrajFileError,
    load_traj,
    parse_traj_file_name,
    save_traj,
    traj_file_stem,
)
from amago_core.data.mixture import MixtureOfDatasets
from amago_core.data.rldata import PaddedSampling, RLData
from amago_core.data.timestep import PolicyInput, Timestep
from amago_core.data.trajectory import FrozenTraj, Trajectory
from amago_core.data.writer import TrajectoryWriter

__all__ = [
    "SAVE_FORMATS",
    "Batch",
    "CorruptTrajFileWarning",
    "DatasetNotReadyError",
    "DiskTrajDataset",
    "DoNothingDataset",
    "FrozenTraj",
    "MixtureOfDatasets",
    "PaddedSampling",
    "PolicyInput",
    "RLData",
    "RLDataset",
    "Relabeler",
    "SaveFormat",
    "Timestep",
    "TrajFileError",
    "Trajectory",
    "TrajectoryWriter",
    "collate",
    "load_traj",
    "parse_traj_file_name",
    "save_traj",
    "traj_file_stem",
]
