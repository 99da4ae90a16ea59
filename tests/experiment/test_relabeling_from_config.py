"""Relabeling chosen in the config (``replay.relabeler``): the run builds the relabeler into its replay buffer,
seeds it from the run's seed, and trains on what it rewrites."""

from __future__ import annotations

import json

import numpy as np
import pytest

from amago import Experiment
from amago_core.config.sources import load_config
from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.data.files import load_traj
from amago_core.experiment.setup import relabel_seed
from amago_envs.suites.mazerunner_relabel import MazeRunnerHindsightRelabeler

MARK_SPEC = '''
from typing import ClassVar, Literal

from amago_core.config import ComponentConfig
from amago_core.plugins import ComponentSpec


class MarkConfig(ComponentConfig):
    inferred_context: ClassVar[tuple[str, ...]] = ("seed", "env")

    kind: Literal["mark"] = "mark"
    """Registered name."""
    reward: float = 7.0
    """Every reward becomes this."""


SPEC = ComponentSpec(
    name="mark", group="amago.relabelers", summary="marks rewards", config=MarkConfig, factory="mark_pkg.impl:Mark"
)
'''

MARK_IMPL = """
from amago_core.data.dataset import Relabeler


class Mark(Relabeler):
    def __init__(self, config, *, seed, env):
        self.config, self.seed, self.env = config, seed, env
        self.calls = 0

    def relabel(self, traj):
        self.calls += 1
        traj.rews[:] = self.config.reward
        return traj
"""


@pytest.fixture
def mark_relabeler(fake_distribution) -> None:
    """Installs a fake ``amago-plugin-mark`` with relabeler ``mark`` (every reward becomes ``reward``)."""
    fake_distribution(
        "amago-plugin-mark",
        entry_points={"amago.relabelers": {"mark": "mark_pkg.specs:SPEC"}},
        modules={"mark_pkg/__init__.py": "", "mark_pkg/specs.py": MARK_SPEC, "mark_pkg/impl.py": MARK_IMPL},
    )


def test_a_relabeler_in_the_config_rewrites_what_training_loads(mark_relabeler, tiny_job, run_job):
    tiny_job["replay"] = {**tiny_job["replay"], "relabeler": {"kind": "mark", "reward": 7.0}}
    experiment = run_job(tiny_job, epochs=1)
    relabeler = experiment.dataset.relabeler
    assert type(relabeler).__name__ == "Mark"
    assert relabeler.calls > 0  # training sampled its windows through it
    assert relabeler.seed == relabel_seed(3, 0)
    assert relabeler.env == experiment.config.env
    files = experiment.dataset.all_files
    assert files
    assert any((load_traj(path).rews != 7.0).any() for path in files)  # the files keep the env's rewards
    assert (experiment.dataset.sample_random_trajectory().rews == 7.0).all()
    record = json.loads(experiment.paths.config.read_text(encoding="utf-8"))
    assert record["replay"]["relabeler"] == {"kind": "mark", "reward": 7.0}
    assert record["_provenance"]["components"]["relabeler"] == "amago-plugin-mark==1.0.0"


def test_the_flat_keyword_chooses_it_and_a_given_dataset_refuses_it(mark_relabeler, tiny_job, tmp_path):
    given = DiskTrajDataset(tmp_path / "mine", "mine", dset_max_size=10)
    experiment = Experiment(load_config(base=tiny_job, environ={}), relabeler="mark", dataset=given)
    assert experiment.relabeler.kind == "mark"
    with pytest.raises(
        ValueError, match=r"replay.relabeler is 'mark', but this run was given its own dataset"
    ):
        experiment.start()


def test_relabeling_seeds_are_drawn_apart_per_process_and_repeat():
    seeds = [relabel_seed(3, process) for process in range(3)]
    assert len(set(seeds)) == 3
    assert 3 not in seeds  # apart from the sampler's seed too
    assert seeds == [relabel_seed(3, process) for process in range(3)]
    assert relabel_seed(None, 1) is None


class Draws:
    """A map-style dataset whose items are draws of a relabeler's generator, as each dataloader worker sees it."""

    def __init__(self, relabeler: MazeRunnerHindsightRelabeler) -> None:
        self.relabeler = relabeler

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> int:
        return int(self.relabeler.rng.integers(1 << 30))


def worker_draws(seed: int) -> list[int]:
    import torch
    from torch.utils.data import DataLoader

    torch.manual_seed(0)  # what a seeded run does; the workers' seeds follow from it
    loader = DataLoader(Draws(MazeRunnerHindsightRelabeler(seed=seed)), batch_size=None, num_workers=2)
    return [int(draw) for draw in loader]  # workers take turns: items 0, 2 from one, 1, 3 from the other


def test_each_dataloader_worker_relabels_with_its_own_stream():
    draws = worker_draws(seed=5)
    assert draws[0] != draws[1]  # the two workers' first draws
    assert draws == worker_draws(seed=5)
    assert draws != worker_draws(seed=6)


def test_hindsight_from_the_config_makes_every_mazerunner_episode_succeed(tiny_job, run_job):
    tiny_job["env"] = {"id": "mazerunner", "maze_dim": 7, "time_limit": 8}
    tiny_job["run"] = {**tiny_job["run"], "max_seq_len": 8}
    tiny_job["replay"] = {"traj_save_len": 1000, "relabeler": {"kind": "hindsight", "strategy": "all"}}
    tiny_job["rollout"] = {"parallel_actors": 2}
    tiny_job["schedule"] = {**tiny_job["schedule"], "train_timesteps_per_epoch": 20, "val_interval": None}
    experiment = run_job(tiny_job, epochs=1)
    relabeler = experiment.dataset.relabeler
    assert isinstance(relabeler, MazeRunnerHindsightRelabeler)
    assert (relabeler.num_goals, relabeler.strategy, relabeler.seed) == (3, "all", relabel_seed(3, 0))
    assert experiment.grad_update_counter > 0
    stored = [load_traj(path) for path in experiment.dataset.all_files]
    assert len(stored) >= 2
    assert min(traj.rews.sum() for traj in stored) < 3  # 8 random steps rarely reach three goals
    for _ in range(8):
        relabeled = experiment.dataset.sample_random_trajectory()
        assert relabeled.rews.sum() == 3  # "all": every relabeled episode reaches all its goals
        assert set(relabeled.obs) == {"obs", "achieved", "goals"}  # the default encoder reads every key
        np.testing.assert_array_equal(relabeled.rl2s[1:, 0], relabeled.rews[:, 0])


def test_relabeling_draws_from_the_samplers_saved_generator(tiny_job, run_job):
    # What makes a resumed run relabel exactly as the uninterrupted one: the relabeler draws from the dataset's
    # generator (saved with the training state), not from a stream of its own that no checkpoint holds.
    tiny_job["env"] = {"id": "mazerunner", "maze_dim": 7, "time_limit": 8}
    tiny_job["run"] = {**tiny_job["run"], "max_seq_len": 8}
    tiny_job["replay"] = {"traj_save_len": 1000, "relabeler": {"kind": "hindsight", "strategy": "some"}}
    tiny_job["rollout"] = {"parallel_actors": 2}
    tiny_job["schedule"] = {**tiny_job["schedule"], "train_timesteps_per_epoch": 20, "val_interval": None}
    experiment = run_job(tiny_job, epochs=1)
    dataset, relabeler = experiment.dataset, experiment.dataset.relabeler
    saved = dataset.rng.bit_generator.state

    def samples() -> list[np.ndarray]:
        return [dataset.sample_random_trajectory().obs["goals"] for _ in range(12)]

    first = samples()
    assert relabeler.rng is dataset.rng
    dataset.rng.bit_generator.state = saved  # what resuming restores
    relabeler.seed, relabeler.rng = 12345, None  # the relabeler's own stream differs after a restart
    again = samples()
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
