"""A run whose envs were Python makers (no env id): its policy loads from spaces.json and exports on made-up inputs."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from amago import Experiment
from amago_core.rollout import AMAGOEnv
from amago_envs.suites.tmaze import TMaze
from amago_tools.export import export_policy
from amago_tools.policy import PolicyLoadError, load_policy


def make_env():
    return AMAGOEnv(TMaze(corridor_length=2), env_name="my-tmaze")


@pytest.fixture(scope="module")
def python_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("python_api")
    experiment = Experiment(
        run_name="maker",
        ckpt_base_dir=str(base),
        make_train_env=make_env,
        make_val_env=make_env,
        traj_encoder_type={"kind": "rnn", "d_hidden": 16, "d_output": 16},
        tstep_encoder_type={"kind": "ff", "d_hidden": 16, "d_output": 16},
        max_seq_len=4,
        traj_save_len=4,
        parallel_actors=2,
        epochs=1,
        train_timesteps_per_epoch=8,
        train_batches_per_epoch=1,
        batch_size=4,
        val_interval=None,
        verbose=False,
        seed=1,
    )
    experiment.start()
    try:
        experiment.learn()
    finally:
        experiment.close()
    return base / "maker"


def test_the_policy_loads_without_any_env_id(python_run):
    policy = load_policy(python_run)
    policy.reset()
    env = TMaze(corridor_length=2)
    obs, _ = env.reset(seed=0)
    assert policy.act(obs) in range(4)
    assert policy.act(np.zeros(2, dtype=np.float32), reward=0.0) in range(4)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch marks TorchScript deprecated
def test_the_export_is_checked_on_inputs_made_from_the_spaces(python_run, tmp_path):
    report = export_policy(python_run, tmp_path, formats=["torchscript"], check_steps=40)
    assert report.results[0].error is None
    assert report.results[0].steps_checked == 40
    assert "made-up env(s)" in report.checked_on


def test_without_spaces_json_the_run_cannot_name_its_spaces(python_run, tmp_path):
    copied = tmp_path / "maker"
    shutil.copytree(python_run, copied)
    (copied / "spaces.json").unlink()
    with pytest.raises(PolicyLoadError, match=r"has no spaces.json .* names no env"):
        load_policy(copied)
