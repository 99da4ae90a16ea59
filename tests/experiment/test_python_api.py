"""The seeds' Python API: Experiment with env makers and component *classes*, including a user subclass."""

from __future__ import annotations

import json

import torch
from torch import nn

import amago
from amago_nets.base import TstepEncoder
from amago_nets.tstep_ff import FFTstepEncoder


def make_env():
    from amago_envs.suites.tmaze import TMaze

    return amago.envs.AMAGOEnv(TMaze(corridor_length=3), env_name="MyTMaze")


class TinyCustomTstepEncoder(TstepEncoder):
    """A user encoder in AMAGO's style: built from the spaces alone, no config."""

    def __init__(self, obs_space, rl2_space):
        super().__init__(obs_space=obs_space, rl2_space=rl2_space)
        width = obs_space["observation"].shape[-1] + rl2_space.shape[-1]
        self.layer = nn.Linear(width, 16)

    @property
    def emb_dim(self) -> int:
        return 16

    def inner_forward(self, obs, rl2s):
        return torch.tanh(self.layer(torch.cat((obs["observation"].float(), rl2s), dim=-1)))


def _experiment(tmp_path, **kwargs):
    defaults = dict(
        run_name="api",
        ckpt_base_dir=tmp_path,
        max_seq_len=4,
        dataset=None,
        tstep_encoder_type=FFTstepEncoder,
        traj_encoder_type="gru",
        agent_type="agent",
        val_timesteps_per_epoch=8,
        make_train_env=make_env,
        make_val_env=make_env,
        parallel_actors=2,
        traj_save_len=4,
        epochs=2,
        train_timesteps_per_epoch=8,
        train_batches_per_epoch=2,
        batch_size=4,
        val_interval=1,
        ckpt_interval=1,
        verbose=False,
        seed=0,
    )
    defaults.update(kwargs)
    return amago.Experiment(**defaults)


def test_experiment_from_classes_and_names(tmp_path):
    experiment = _experiment(tmp_path)
    experiment.start()
    try:
        assert experiment.DEVICE.type == "cpu"
        assert type(experiment.policy.tstep_encoder).__name__ == "FFTstepEncoder"
        assert type(experiment.policy.traj_encoder).__name__ == "GRUTrajEncoder"
        experiment.learn()
        metrics = experiment.evaluate_test(make_env, timesteps=8, episodes=2)
        assert "Average Total Return in MyTMaze" in metrics
    finally:
        experiment.close()
    resolved = json.loads((tmp_path / "api" / "config.resolved.json").read_text())
    assert resolved["tstep_encoder"]["kind"] == "ff"  # a registered class is recorded by its config
    assert resolved["traj_encoder"]["kind"] == "rnn"


def test_a_user_subclass_plugs_in_as_a_type(tmp_path):
    experiment = _experiment(tmp_path, tstep_encoder_type=TinyCustomTstepEncoder, epochs=1)
    experiment.start()
    try:
        assert isinstance(experiment.policy.tstep_encoder, TinyCustomTstepEncoder)
        experiment.learn()
    finally:
        experiment.close()
    resolved = json.loads((tmp_path / "api" / "config.resolved.json").read_text())
    assert resolved["tstep_encoder"]["class"].endswith(":TinyCustomTstepEncoder")


def test_bad_settings_fail_before_anything_is_built(tmp_path):
    import pytest

    with pytest.raises(
        ValueError, match=r"replay.traj_save_len \(2\) must be at least run.max_seq_len \(4\)"
    ):
        _experiment(tmp_path, traj_save_len=2)
    with pytest.raises(
        ValueError, match=r"rollout\.env_mode\n  Input should be .sync., .async. or .already_vectorized."
    ):
        _experiment(tmp_path, env_mode="threads")
