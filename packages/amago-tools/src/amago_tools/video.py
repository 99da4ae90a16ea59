"""Videos of test episodes: env 0 of the test pool renders every step, and each finished episode becomes a file.

Files are ``{folder}/{prefix}_episode_{i}.mp4`` (imageio-ffmpeg, ``pip install "amago-tools[video]"``) or
``.gif`` (Pillow, which matplotlib already brings). Frames are gymnasium ``rgb_array`` pictures:
``env.render()`` returning an ``(H, W, 3)`` uint8 array, so the env must be built with
``render_mode="rgb_array"`` (the numpy suites are).

The recorder wraps the gymnasium env inside row 0's ``AMAGOEnv``: it sees each step before the pool's
same-step reset replaces the finished episode's last picture, and it runs in whichever process steps that
env, so sync and async pools record alike. It writes the files itself; the caller lists them afterwards
with :meth:`VideoRequest.written`. An evaluation records through core's generic maker wrapper:
``experiment.evaluate_test(make_env, steps, wrap_test_makers=request.wrap_test_makers)``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import gymnasium
import numpy as np

from amago_core.io import atomic_write, inside
from amago_core.rollout.env import AMAGOEnv, EnvContractError

VideoFormat = Literal["mp4", "gif"]
FORMAT_CHOICES: tuple[str, ...] = ("auto", "mp4", "gif")
"""What ``--video-format`` takes: ``auto`` is mp4 when imageio-ffmpeg is installed, else GIF."""

VIDEO_FOLDER = "videos"
"""Where a run's videos go, inside the run folder."""

DEFAULT_FPS = 8.0
"""Frames per second when the env's ``metadata["render_fps"]`` says nothing."""

MP4_HINT = 'pip install "amago-tools[video]"'


class VideoFramesError(EnvContractError):
    """The recorded env gave no RGB frame (or is one that cannot be recorded); nothing was written."""


def mp4_available() -> bool:
    """Whether imageio-ffmpeg and its ffmpeg binary are installed (mp4 videos)."""
    try:
        import imageio_ffmpeg
    except ImportError:
        return False
    try:
        imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:  # installed without a binary for this platform, and none on PATH
        return False
    return True


def resolve_format(requested: str) -> VideoFormat:
    """``auto`` -> ``mp4`` when available, else ``gif``; ``mp4``/``gif`` as asked.

    Raises:
        ValueError: an unknown format, or ``mp4`` without imageio-ffmpeg (one line with the install command).
    """
    if requested not in FORMAT_CHOICES:
        msg = f"unknown video format {requested!r}; use one of: {', '.join(FORMAT_CHOICES)}"
        raise ValueError(msg)
    if requested == "gif":
        return "gif"
    if mp4_available():
        return "mp4"
    if requested == "mp4":
        msg = f"mp4 videos need imageio-ffmpeg: {MP4_HINT} (or --video-format gif)"
        raise ValueError(msg)
    return "gif"


def _even_sized(frames: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Frames padded (black, bottom and right) to one size with even sides: H.264's yuv420p needs even sides,
    and an env may change its picture size between episodes of a multi-task run."""
    height = max(f.shape[0] for f in frames)
    width = max(f.shape[1] for f in frames)
    height, width = height + height % 2, width + width % 2
    out = []
    for frame in frames:
        if frame.shape[:2] != (height, width):
            padded = np.zeros((height, width, 3), dtype=np.uint8)
            padded[: frame.shape[0], : frame.shape[1]] = frame
            frame = padded
        out.append(np.ascontiguousarray(frame))
    return out


def _write_mp4(frames: list[np.ndarray], path: Path, fps: float) -> None:
    import imageio_ffmpeg

    height, width = frames[0].shape[:2]
    writer = imageio_ffmpeg.write_frames(
        str(path),
        (width, height),
        fps=fps,
        codec="libx264",
        pix_fmt_in="rgb24",
        pix_fmt_out="yuv420p",
        macro_block_size=2,  # the frames are padded to even sides already: no rescaling
        output_params=["-f", "mp4"],  # the temp file's name has no .mp4 suffix to guess from
        ffmpeg_log_level="error",
    )
    writer.send(None)  # start the generator
    for frame in frames:
        writer.send(frame)
    writer.close()


def _write_gif(frames: list[np.ndarray], path: Path, fps: float) -> None:
    from PIL import Image

    images = [Image.fromarray(frame) for frame in frames]
    # Pillow merges identical consecutive frames into one that lasts as long as they did together.
    images[0].save(
        path, format="GIF", save_all=True, append_images=images[1:], duration=round(1000 / fps), loop=0
    )


def write_video(frames: Sequence[np.ndarray], path: Path, fps: float) -> Path:
    """Writes ``frames`` (``(H, W, 3)`` uint8) to ``path`` atomically; the suffix (.mp4 or .gif) picks the format.

    Raises:
        ValueError: no frames, or a suffix other than .mp4 / .gif.
    """
    if not frames:
        msg = f"no frames to write to {path}"
        raise ValueError(msg)
    writers: dict[str, Callable[[list[np.ndarray], Path, float], None]] = {
        ".mp4": _write_mp4,
        ".gif": _write_gif,
    }
    write = writers.get(path.suffix)
    if write is None:
        msg = f"video files end in .mp4 or .gif; got {path.name}"
        raise ValueError(msg)
    even = _even_sized(frames)
    atomic_write(path, lambda tmp: write(even, tmp, fps))
    return path


@dataclass(frozen=True)
class VideoRequest:
    """Which episodes to record and where (picklable: it travels to an async pool's worker).

    Attributes:
        folder: where the files go (``RUN_DIR/videos`` for ``amago eval``).
        prefix: file names start with it (``epoch_{E}``).
        episodes: finished episodes of env 0 to record (the first ones).
        video_format: ``mp4`` or ``gif``.
        fps: frames per second; None takes the env's ``metadata["render_fps"]`` (else ``DEFAULT_FPS``).
    """

    folder: Path
    prefix: str
    episodes: int = 1
    video_format: VideoFormat = "gif"
    fps: float | None = None

    def __post_init__(self) -> None:
        if self.episodes < 1:
            msg = f"record at least one episode; got episodes={self.episodes}"
            raise ValueError(msg)

    def path(self, episode: int) -> Path:
        """The file of the ``episode``-th recorded episode (from 0), checked to go through no symlink (the folder
        lies in a run folder, which may come from anyone).

        Raises:
            amago_core.io.UnsafePathError: the folder or the file is a symlink.
        """
        return inside(
            self.folder.parent, self.folder / f"{self.prefix}_episode_{episode}.{self.video_format}"
        )

    def _existing(self) -> list[tuple[int, Path]]:
        pattern = re.compile(rf"^{re.escape(self.prefix)}_episode_(\d+)\.(mp4|gif)$")
        found = []
        if self.folder.is_dir():
            for child in self.folder.iterdir():
                match = pattern.match(child.name)
                if match:
                    found.append((int(match.group(1)), child))
        return sorted(found)

    def clear(self) -> None:
        """Removes the files an earlier recording with this prefix left (recording again replaces them)."""
        existing = self._existing()
        if existing:
            inside(self.folder.parent, self.folder)  # never delete through a symlinked folder
        for _, path in existing:
            path.unlink(missing_ok=True)

    def written(self) -> list[Path]:
        """The files recorded so far, in episode order."""
        return [path for _, path in self._existing() if path.suffix == f".{self.video_format}"]

    def wrap_test_makers(self, makers: Sequence[Callable[[], Any]]) -> list[Callable[[], Any]]:
        """For ``Experiment.evaluate_test(wrap_test_makers=...)``: clears this prefix's earlier files, then
        returns ``makers`` with the first one's env recorded (:func:`record_first_env`)."""
        self.clear()
        return record_first_env(makers, self)


def _rgb_frame(frame: Any, env_name: str) -> np.ndarray:
    """``frame`` as an ``(H, W, 3)`` uint8 array (an alpha channel is dropped).

    Raises:
        VideoFramesError: anything else, naming what the env returned.
    """
    arr = np.asarray(frame) if isinstance(frame, np.ndarray | list | tuple) else None
    if arr is None or arr.ndim != 3 or arr.shape[2] not in (3, 4) or arr.dtype != np.uint8:
        got = f"an array of shape {arr.shape} and dtype {arr.dtype}" if arr is not None else repr(frame)[:40]
        msg = (
            f"env {env_name!r} rendered {got}; --video needs RGB frames ((H, W, 3) uint8): build the env "
            "with render_mode='rgb_array'"
        )
        raise VideoFramesError(msg)
    return np.array(arr[..., :3])  # a copy: envs may reuse their picture buffer


class EpisodeRecorder(gymnasium.Wrapper):
    """Renders after every reset and step, and writes each finished episode to a file (up to the request's count).

    Args:
        env: the gymnasium env inside an ``AMAGOEnv`` (built with ``render_mode="rgb_array"``).
        request: what to record and where.
        env_name: the env's name, for messages.
    """

    def __init__(self, env: gymnasium.Env, request: VideoRequest, env_name: str):
        super().__init__(env)
        self.request = request
        self.env_name = env_name
        self.recorded = 0
        self.frames: list[np.ndarray] = []
        fps = request.fps or (getattr(env, "metadata", None) or {}).get("render_fps") or DEFAULT_FPS
        self.fps = float(fps)

    @property
    def recording(self) -> bool:
        """False once the requested episodes are written (nothing is rendered after that)."""
        return self.recorded < self.request.episodes

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        # An episode cut off before its end (the pool was reset) is not a recording of a whole episode.
        self.frames = [self._frame()] if self.recording else []
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.recording and self.frames:
            self.frames.append(self._frame())
            if terminated or truncated:
                write_video(self.frames, self.request.path(self.recorded), self.fps)
                self.recorded += 1
                self.frames = []
        return obs, reward, terminated, truncated, info

    def _frame(self) -> np.ndarray:
        """The env's picture now; an env that cannot render (gymnasium's default ``render``) is one line."""
        try:
            frame = self.env.render()
        except NotImplementedError as exc:
            msg = (
                f"env {self.env_name!r} cannot render (its render() raises NotImplementedError), so --video cannot "
                "record it; evaluate it without --video"
            )
            raise VideoFramesError(msg) from exc
        return _rgb_frame(frame, self.env_name)


def _recording_env(make_env: Callable[[], Any], request: VideoRequest) -> Any:
    env = make_env()
    if not isinstance(env, AMAGOEnv):
        return env  # the pool's EnvCreator refuses it with its own message
    if env.batched_envs > 1:
        msg = (
            f"--video records single envs; {env.env_name!r} is already vectorised ({env.batched_envs} rows): "
            "evaluate without --video, or with rollout.env_mode = 'sync'"
        )
        raise VideoFramesError(msg)
    # Inside the AMAGOEnv, so every inner_step / inner_reset (stacked pools call those directly) passes through.
    env.env = EpisodeRecorder(env.env, request, env.env_name)
    return env


def record_first_env(makers: Sequence[Callable[[], Any]], request: VideoRequest) -> list[Callable[[], Any]]:
    """``makers`` with the first one's env recorded (the rest unchanged); picklable for async pools."""
    if not makers:
        msg = "no env makers to record from"
        raise ValueError(msg)
    return [functools.partial(_recording_env, makers[0], request), *makers[1:]]
