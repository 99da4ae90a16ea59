"""``padded_sampling="center"``: a uniform window centre, the window clamped inside the file, never padded.

With ``none`` a file's first and last steps are in a window with probability ``1 / (n - length + 1)``; with
``center`` the windows of the centres near an edge all start (or end) there, so each edge is covered with
probability about ``length / (2n)`` (``(length // 2 + 1) / n`` for the first step, ``ceil(length / 2) / n`` for the
last), the two together about ``length / n``: half the coverage of a step in the middle instead of ``1 / length``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from amago_core.config.experiment import ExperimentConfig
from amago_core.data.dataset import RLDataset
from amago_core.data.mixture import MixtureOfDatasets
from amago_core.data.rldata import PaddedSampling, RLData
from amago_core.experiment.checkpoints import random_states, restore_random_states

N, LENGTH, DRAWS = 200, 20, 20_000
"""A file of N transitions, windows of LENGTH, and enough draws that every margin below is over 5 standard
errors of its estimate (a binomial proportion p over DRAWS has a standard error of sqrt(p (1 - p) / DRAWS))."""


def trajectory(n: int) -> RLData:
    """``n`` transitions; row t of every array holds t, so a window says where it was cut."""
    t = np.arange(n + 1)
    return RLData(
        obs={"x": t[:, None].astype(np.float32)},
        rews=t[:n, None].astype(np.float32),
        dones=np.zeros((n, 1), bool),
        actions=t[:n, None].astype(np.float32),
        time_idxs=t[:, None].astype(np.int64),
        rl2s=np.tile(t[:, None], (1, 2)).astype(np.float32),
    )


class OneFile(RLDataset):
    """A dataset of one trajectory of ``n`` transitions."""

    def __init__(self, n: int, seed: int | None) -> None:
        super().__init__(dset_name="one-file", seed=seed)
        self.data = trajectory(n)

    @property
    def save_new_trajs_to(self) -> Path | None:
        return None

    def get_description(self) -> str:
        return "one trajectory"

    def sample_random_trajectory(self) -> RLData:
        return self.data


def _starts(mode: PaddedSampling, draws: int = DRAWS, seed: int = 0) -> np.ndarray:
    data, rng = trajectory(N), np.random.default_rng(seed)
    return np.array([int(data.random_slice(LENGTH, mode, rng=rng).time_idxs[0, 0]) for _ in range(draws)])


def _coverage(starts: np.ndarray, step: int) -> float:
    """The share of windows (transitions ``[s, s + LENGTH)``) that hold transition ``step``."""
    return float(np.mean((starts <= step) & (step < starts + LENGTH)))


def test_center_covers_the_first_and_last_steps_about_length_over_2n_times_and_none_1_over_n_minus_length():
    center, none = _starts("center"), _starts("none")
    first, last, middle = 0, N - 1, N // 2
    # center: exactly (LENGTH // 2 + 1) / N = 0.055 and ceil(LENGTH / 2) / N = 0.05; standard errors ~0.0016.
    assert _coverage(center, first) == pytest.approx((LENGTH // 2 + 1) / N, abs=0.01)
    assert _coverage(center, last) == pytest.approx(-(-LENGTH // 2) / N, abs=0.01)
    assert _coverage(center, first) + _coverage(center, last) == pytest.approx((LENGTH + 1) / N, abs=0.015)
    assert _coverage(center, middle) == pytest.approx(LENGTH / N, abs=0.015)  # 0.1, standard error ~0.0021
    # none: 1 / (N - LENGTH + 1) = 0.0055 each, standard error ~0.0005; the middle LENGTH times that.
    for edge in (first, last):
        assert _coverage(none, edge) == pytest.approx(1 / (N - LENGTH + 1), abs=0.003)
    assert _coverage(none, middle) == pytest.approx(LENGTH / (N - LENGTH + 1), abs=0.015)
    # What the mode is for: the edges go from 1/LENGTH of the middle's coverage to about half of it.
    for edge in (first, last):
        assert _coverage(center, edge) > 5 * _coverage(none, edge)
        assert 0.4 < _coverage(center, edge) / _coverage(center, middle) < 0.7


def test_center_windows_are_whole_aligned_and_reach_both_ends():
    data, rng = trajectory(N), np.random.default_rng(1)
    starts = set()
    for _ in range(3000):
        window = data.random_slice(LENGTH, "center", rng=rng)
        first = int(window.time_idxs[0, 0])
        assert len(window) == LENGTH  # never a shorter (padded) window
        assert len(window.time_idxs) == LENGTH + 1
        np.testing.assert_array_equal(window.obs["x"][:, 0], np.arange(first, first + LENGTH + 1))
        np.testing.assert_array_equal(window.actions[:, 0], np.arange(first, first + LENGTH))
        np.testing.assert_array_equal(window.rl2s[:, 0], window.time_idxs[:, 0])
        starts.add(first)
    assert min(starts) == 0
    assert max(starts) == N - LENGTH  # clamped inside the file: the last window ends at its last observation


@pytest.mark.parametrize("n", [3, LENGTH])
def test_a_file_no_longer_than_the_window_is_returned_whole(n):
    data = trajectory(n)
    assert data.random_slice(LENGTH, "center", rng=np.random.default_rng(0)) is data


def test_one_step_longer_than_the_window_gives_both_windows():
    data, rng = trajectory(LENGTH + 1), np.random.default_rng(2)
    starts = {int(data.random_slice(LENGTH, "center", rng=rng).time_idxs[0, 0]) for _ in range(200)}
    assert starts == {0, 1}


def _dataset_starts(dataset: RLDataset, draws: int) -> list[int]:
    return [int(dataset[i].time_idxs[0, 0]) for i in range(draws)]


def test_the_dataset_samples_center_windows_and_a_resumed_stream_repeats_them():
    dataset = OneFile(N, seed=7)
    dataset.configure(items_per_epoch=64, max_seq_len=LENGTH, padded_sampling="center")
    before = _dataset_starts(dataset, 50)
    assert all(0 <= s <= N - LENGTH for s in before)
    saved = random_states(dataset.rng)  # what a training state holds of the dataset
    after = _dataset_starts(dataset, 50)

    resumed = OneFile(N, seed=7)
    resumed.configure(items_per_epoch=64, max_seq_len=LENGTH, padded_sampling="center")
    restore_random_states(saved, resumed.rng)
    assert _dataset_starts(resumed, 50) == after

    fresh = OneFile(N, seed=7)
    fresh.configure(items_per_epoch=64, max_seq_len=LENGTH, padded_sampling="center")
    assert _dataset_starts(fresh, 50) == before  # the same seed, the same windows
    other_process = OneFile(N, seed=7)
    other_process.seed_for_process(1)
    other_process.configure(items_per_epoch=64, max_seq_len=LENGTH, padded_sampling="center")
    assert _dataset_starts(other_process, 50) != before  # a process of its own draws windows of its own


def test_a_mixture_passes_center_to_its_children_and_resumes_from_its_one_stream():
    def mixture() -> MixtureOfDatasets:
        built = MixtureOfDatasets([OneFile(N, None), OneFile(N // 2, None)], [0.5, 0.5], seed=11)
        built.configure(items_per_epoch=64, max_seq_len=LENGTH, padded_sampling="center")
        return built

    first = mixture()
    assert [child.padded_sampling for child in first.datasets] == ["center", "center"]
    _dataset_starts(first, 30)
    saved = random_states(first.rng)
    after = _dataset_starts(first, 50)
    resumed = mixture()
    restore_random_states(saved, resumed.rng)
    assert _dataset_starts(resumed, 50) == after


def test_the_config_takes_center_and_names_it_in_the_replay_docstring():
    config = ExperimentConfig.model_validate({"replay": {"padded_sampling": "center"}})
    assert config.replay.padded_sampling == "center"
    assert "`center`" in (type(config.replay).model_fields["padded_sampling"].description or "")
    with pytest.raises(ValueError, match="padded_sampling"):
        OneFile(N, seed=0).configure(items_per_epoch=1, max_seq_len=LENGTH, padded_sampling="centre")  # type: ignore[arg-type]
