"""The AMAGO names scripts use to write their own datasets and timestep encoders, with AMAGO's signatures:
``amago.loading.RLData`` / ``RLDataset`` / ``MixtureOfDatasets`` / ``DiskTrajDataset``, ``amago.agent``'s filters,
``amago.nets.utils`` / ``amago.nets.ff`` helpers, and ``experiment.load_checkpoint(epoch)``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import amago
from amago.agent import binary_filter, exp_filter
from amago.loading import DiskTrajDataset, MixtureOfDatasets, RLData, RLDataset
from amago.nets.ff import Normalization
from amago.nets.utils import add_activation_log, symlog
from amago_core.data import rldata


def _tensors(length: int, obs_dim: int = 2, action_dim: int = 4) -> dict[str, torch.Tensor]:
    """AMAGO's RLData arguments as an offline dataset of AMAGO built them: torch tensors, no rl2s."""
    actions = torch.nn.functional.one_hot(torch.randint(0, action_dim, (length - 1,)), action_dim).float()
    return {
        "obs": {"observation": torch.rand(length, obs_dim)},
        "rews": torch.rand(length - 1, 1),
        "dones": torch.zeros(length - 1, 1, dtype=torch.bool),
        "actions": actions,
        "time_idxs": torch.arange(length).unsqueeze(-1),
    }


def test_rldata_takes_amagos_tensors_and_derives_rl2s_as_amago_did():
    given = _tensors(6)
    data = RLData(**given)
    assert isinstance(data, rldata.RLData)
    assert data.rl2s.shape == (6, 5)
    assert np.array_equal(data.rl2s[0], np.zeros(5, dtype=np.float32))  # nothing before the first timestep
    assert np.allclose(data.rl2s[1:, :1], given["rews"].numpy())
    assert np.allclose(data.rl2s[1:, 1:], given["actions"].numpy())
    assert data.dones.dtype == bool
    assert data.time_idxs.dtype == np.int64
    window = data.random_slice(3, padded_sampling="none", rng=np.random.default_rng(0))
    assert len(window) == 3


def test_every_dataset_of_amago_is_an_amago_rldataset():
    assert issubclass(DiskTrajDataset, RLDataset)
    assert issubclass(MixtureOfDatasets, RLDataset)
    assert not issubclass(int, RLDataset)


def test_amagos_filters_take_amagos_keywords():
    adv = torch.tensor([-10.0, 0.0, 0.7, 10.0])
    assert binary_filter(adv, threshold=0.5).tolist() == [0.0, 0.0, 1.0, 1.0]
    weights = exp_filter(adv, beta=1.0, clip_adv_low=-1.0, clip_weights_high=2.0)
    assert weights[0].item() == pytest.approx(np.exp(-1.0))
    assert weights[-1].item() == pytest.approx(2.0)


def test_amagos_net_helpers_keep_their_signatures():
    assert isinstance(Normalization("layer", d_model=8), torch.nn.LayerNorm)
    assert isinstance(Normalization(None, 8), torch.nn.Identity)
    assert symlog(-(np.e - 1)) == pytest.approx(-1.0)
    assert torch.allclose(symlog(torch.tensor([np.e - 1])), torch.tensor([1.0]))
    log: dict[str, float] = {}
    add_activation_log("encoder-rep", torch.tensor([1.0, 3.0]), log)
    assert log["activation-encoder-rep-mean"] == pytest.approx(2.0)
    add_activation_log("encoder-rep", torch.tensor([1.0]), None)  # amago calls inner_forward without a dict


class DemoDataset(RLDataset):
    """A script's dataset written for AMAGO: tensors in, the experiment in ``on_end_of_collection``."""

    def __init__(self, obs_dim: int, action_dim: int):
        super().__init__(dset_name="demos")
        self.obs_dim, self.action_dim = obs_dim, action_dim
        self.seen: list[object] = []

    @property
    def save_new_trajs_to(self):
        return None

    def get_description(self) -> str:
        return "random demos"

    def sample_random_trajectory(self):
        return RLData(**_tensors(5, self.obs_dim, self.action_dim))

    def on_end_of_collection(self, experiment):
        self.seen.append(experiment)
        return {"calls": float(len(self.seen))}


@pytest.mark.slow
def test_a_scripts_dataset_in_a_mixture_trains_and_load_checkpoint_restores_an_epoch(tmp_path):
    from amago.envs.builtin.tmaze import TMazeAltPassive

    env = amago.AMAGOEnv(TMazeAltPassive(corridor_length=3), env_name="tmaze")
    obs_dim, action_dim = env.observation_space["observation"].shape[0], env.action_dim
    demos = DemoDataset(obs_dim, action_dim)
    online = DiskTrajDataset(dset_root=str(tmp_path), dset_name="mix", dset_max_size=100)
    mixture = MixtureOfDatasets([demos, online], sampling_weights=[0.5, 0.5], smooth_sudden_starts=1)
    settings = {
        "run_name": "mix",
        "ckpt_base_dir": tmp_path,
        "max_seq_len": 4,
        "traj_save_len": 5,
        "parallel_actors": 2,
        "env_mode": "sync",
        "train_timesteps_per_epoch": 8,
        "train_batches_per_epoch": 2,
        "batch_size": 4,
        "val_interval": None,
        "ckpt_interval": 1,
        "tstep_encoder_type": "ff",
        "traj_encoder_type": "ff",
        "verbose": False,
        "seed": 0,
    }
    make_env = lambda: amago.AMAGOEnv(TMazeAltPassive(corridor_length=3), env_name="tmaze")  # noqa: E731
    experiment = amago.Experiment(dataset=mixture, make_train_env=make_env, epochs=2, **settings)
    experiment.start()
    try:
        experiment.learn()
        after_first = {k: v.clone() for k, v in experiment.policy.state_dict().items()}
    finally:
        experiment.close()
    assert demos.seen
    assert all(seen is experiment for seen in demos.seen)  # AMAGO passed the experiment to the hook
    saved = sorted(p.name for p in (tmp_path / "mix" / "ckpts").iterdir())
    assert saved
    resumed = amago.Experiment(make_train_env=make_env, epochs=2, **settings)
    resumed.start(resume=True)  # a fresh start() in a folder that holds a run is refused
    try:
        resumed.load_checkpoint(1)  # AMAGO's call: the whole training state of an epoch
        loaded = resumed.policy.state_dict()
        assert all(torch.equal(loaded[k].cpu(), v.cpu()) for k, v in after_first.items())
        resumed.load_checkpoint(0, resume_training_state=False)  # the policy weights of epoch 0
    finally:
        resumed.close()
