"""Real procgen through the registry: run in an environment synced with ``--extra procgen`` (numpy<2).

    UV_PROJECT_ENVIRONMENT=/tmp/venv-procgen uv sync --locked --extra procgen
    /tmp/venv-procgen/bin/pytest -m procgen tests/envs/suites_external/procgen_real

Skipped wherever procgen is not installed (the main environment).
"""

from __future__ import annotations

import numpy as np
import pytest

from amago_core.plugins.registry import registries
from amago_envs.suites.procgen.two_attempt import BOX_SIZE

pytestmark = pytest.mark.procgen
pytest.importorskip(
    "procgen", reason='needs real procgen: pip install "amago-envs[procgen]" (own environment)'
)


def test_real_procgen_plays_two_attempts_on_one_level() -> None:
    suite = registries().env_suites.build({"kind": "procgen", "task": "easy", "games": ["coinrun"]})
    env = suite.make_env("train")
    timestep, _ = env.reset(seed=0)
    assert env.env_name == "Procgen-coinrun"
    frame = timestep.obs["observation"][0]
    assert frame.shape == (64, 64, 3)
    assert frame.dtype == np.uint8
    assert env.action_dim == 15
    rng = np.random.default_rng(0)
    boxed_frames = 0
    for _ in range(4000):  # a random coinrun agent dies or times out well within this
        timestep, _, terminated, truncated, _ = env.step(rng.integers(0, 15, size=1))
        if env.env.attempt == 2 and not terminated[0]:
            assert (timestep.obs["observation"][0, :BOX_SIZE, :BOX_SIZE] == 0).all()
            boxed_frames += 1
        if terminated[0] or truncated[0]:
            break
    assert boxed_frames > 0


def test_amago_run_one_tiny_epoch_on_real_procgen(tmp_path, run_tiny) -> None:
    overrides = [
        'env.games=["coinrun"]',
        "env.horizon=16",
        "rollout.parallel_actors=2",
        "run.max_seq_len=8",
        "replay.traj_save_len=8",
        "traj_encoder.kind=rnn",
        "schedule.epochs=1",
        "schedule.train_timesteps_per_epoch=8",
        "schedule.train_batches_per_epoch=1",
        "schedule.val_interval=1",
        "schedule.val_timesteps_per_epoch=8",
        "optim.batch_size=2",
        "logging.plot=false",
    ]
    summary = run_tiny("procgen-easy", overrides=overrides, name="pg")
    assert list((tmp_path / "pg" / "buffer" / "fifo").glob("Procgen-coinrun_*"))
    assert summary["run_dir"] == str(tmp_path / "pg")
