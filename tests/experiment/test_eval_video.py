"""`amago eval RUN_DIR --video`: episodes of test env 0 as mp4 (GIF without imageio-ffmpeg), one frame per step."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageSequence
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.rollout import AMAGOEnv, EnvCreator
from amago_core.rollout.pools.async_pool import AsyncPool
from amago_core.rollout.pools.sync import SyncPool
from amago_envs.suites import grid_frames
from amago_envs.suites.specs import TMAZE
from amago_envs.suites.tmaze import RIGHT, UP, TMaze
from amago_tools.video import VideoFramesError, VideoRequest, record_first_env, write_video

runner = CliRunner()
CORRIDOR = 3  # the tiny job's T-Maze
FRAMES_PER_EPISODE = CORRIDOR + 1 + 1  # the reset's picture, then one per step
GIF_FRAME_MS = 250  # T-Maze's render_fps is 4


def gif_frames(path: Path) -> list[np.ndarray]:
    with Image.open(path) as image:
        return [np.asarray(frame.convert("RGB")) for frame in ImageSequence.Iterator(image)]


def gif_duration_ms(path: Path) -> int:
    with Image.open(path) as image:
        return sum(frame.info["duration"] for frame in ImageSequence.Iterator(image))


def mp4_frame_count(path: Path) -> int:
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    assert meta["fps"] == 4
    return sum(1 for _ in reader)


@pytest.mark.slow
def test_eval_records_episodes_as_mp4_then_gif_without_imageio(tiny_job, tmp_path, monkeypatch):
    pytest.importorskip("imageio_ffmpeg")
    config_file = tmp_path / "tiny.json"
    config_file.write_text(json.dumps(tiny_job))
    trained = runner.invoke(app, ["run", "-c", str(config_file), "-o", "schedule.epochs=2", "--quiet"])
    assert trained.exit_code == 0, trained.output
    run_dir = tmp_path / "runs" / "tiny"

    # 4 actors x 8 steps of 4-step episodes: test env 0 finishes two.
    result = runner.invoke(app, ["eval", str(run_dir), "--video", "--video-episodes", "2"])
    assert result.exit_code == 0, result.output
    videos = [Path(p) for p in json.loads(result.stdout)["videos"]]
    assert [p.name for p in videos] == ["epoch_1_episode_0.mp4", "epoch_1_episode_1.mp4"]  # newest state: 1
    assert all(p.parent == run_dir / "videos" for p in videos)
    assert [mp4_frame_count(p) for p in videos] == [FRAMES_PER_EPISODE] * 2

    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # as if the [video] extra were not installed
    again = runner.invoke(app, ["eval", str(run_dir), "--video", "--epoch", "0"])
    assert again.exit_code == 0, again.output
    (gif,) = (Path(p) for p in json.loads(again.stdout)["videos"])
    assert gif == run_dir / "videos" / "epoch_0_episode_0.gif"
    # Pillow merges identical consecutive frames (an agent walking into a wall) into longer ones.
    assert gif_duration_ms(gif) == FRAMES_PER_EPISODE * GIF_FRAME_MS
    tmaze = TMaze(CORRIDOR, render_mode="rgb_array")
    tmaze.reset(seed=0)
    assert gif_frames(gif)[0].shape == tmaze.render().shape

    unavailable = runner.invoke(app, ["eval", str(run_dir), "--video", "--video-format", "mp4"])
    assert unavailable.exit_code == 2
    assert unavailable.stderr.count("\n") == 1
    assert 'pip install "amago-tools[video]"' in unavailable.stderr


def _tmaze(render_mode: str | None = "rgb_array") -> AMAGOEnv:
    return AMAGOEnv(TMaze(corridor_length=CORRIDOR, render_mode=render_mode), env_name="TMaze")


def _walk_up(pool) -> None:
    """Right along the corridor, then up at the junction, in every row."""
    pool.reset(seed=0)
    for action in [RIGHT] * CORRIDOR + [UP]:
        pool.step(np.full(pool.num_envs, action))


def _cell_colour(frame: np.ndarray, row: int, col: int, cell: int) -> tuple[int, ...]:
    return tuple(int(c) for c in frame[row * cell + cell // 2, col * cell + cell // 2])


@pytest.mark.parametrize("stack", [True, False])
def test_the_last_frame_is_the_turn_not_the_next_episode(tmp_path, stack):
    # The pool resets a finished row in the same step; the video must still end on the episode's last picture.
    request = VideoRequest(tmp_path, "epoch_0", episodes=1, video_format="gif")
    makers = record_first_env([_tmaze, _tmaze], request)
    pool = SyncPool([EnvCreator(make) for make in makers], stack=stack)
    assert pool.stacked == stack
    _walk_up(pool)
    pool.close()
    (video,) = request.written()
    frames = gif_frames(video)
    assert len(frames) == FRAMES_PER_EPISODE  # the agent moved every step: no frame merged
    cell = frames[0].shape[1] // (CORRIDOR + 1)
    assert _cell_colour(frames[0], 1, 0, cell) == grid_frames.AGENT  # starts on the oracle cell
    assert _cell_colour(frames[-1], 0, CORRIDOR, cell) == grid_frames.AGENT  # ends turned up at the junction


def test_an_async_worker_records_env_0(tmp_path):
    # Workers import what they unpickle: the env maker must be importable (a suite's), not this test module's.
    make_env = functools.partial(TMAZE.build({"corridor_length": CORRIDOR}).make_env, "test")
    request = VideoRequest(tmp_path, "epoch_3", episodes=1, video_format="gif")
    makers = record_first_env([make_env, make_env], request)
    pool = AsyncPool([EnvCreator(make) for make in makers])
    try:
        _walk_up(pool)
    finally:
        pool.close()
    assert [p.name for p in request.written()] == ["epoch_3_episode_0.gif"]
    assert len(gif_frames(request.written()[0])) == FRAMES_PER_EPISODE


@pytest.mark.parametrize("render_mode", [None, "ansi"])
def test_an_env_without_rgb_frames_fails_in_one_line(tmp_path, render_mode):
    request = VideoRequest(tmp_path, "epoch_0")
    (maker,) = record_first_env([lambda: _tmaze(render_mode)], request)
    pool = SyncPool([EnvCreator(maker)])
    with pytest.raises(VideoFramesError, match="render_mode='rgb_array'") as caught:
        pool.reset()
    assert "\n" not in str(caught.value)


def test_recording_again_replaces_that_epochs_files_only(tmp_path):
    frame = np.zeros((4, 6, 3), dtype=np.uint8)
    old = VideoRequest(tmp_path, "epoch_2", episodes=2, video_format="gif")
    for i in range(2):
        write_video([frame, frame + 1], old.path(i), fps=4)
    other_epoch = write_video([frame], tmp_path / "epoch_20_episode_0.gif", fps=4)
    VideoRequest(tmp_path, "epoch_2", video_format="mp4").clear()
    assert old.written() == []
    assert other_epoch.is_file()


def test_odd_sized_frames_are_padded_to_even_sides(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    frames = [np.full((5, 7, 3), value, dtype=np.uint8) for value in (0, 90, 180)]
    path = write_video(frames, tmp_path / "odd.mp4", fps=4)
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    assert next(reader)["size"] == (8, 6)
    assert sum(1 for _ in reader) == 3
