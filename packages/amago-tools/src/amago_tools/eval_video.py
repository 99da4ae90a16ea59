"""``amago eval --video``: records test env 0's first episodes to ``RUN_DIR/videos`` through amago-core's eval hooks.

Torch-free and import-cheap (typer only); :mod:`amago_tools.video` (numpy, gymnasium, the writers) loads when an
evaluation records.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from amago_core.cli.output import fail
from amago_core.hooks.specs import EvalRequest, RunOption

if TYPE_CHECKING:
    from amago_tools.video import VideoRequest


def eval_options() -> list[RunOption]:
    """``--video``, ``--video-episodes`` and ``--video-format``."""
    return [
        RunOption(
            "video",
            Annotated[
                bool,
                typer.Option(
                    "--video",
                    help="Record episodes of test env 0 to RUN_DIR/videos (and to wandb when the run uses it).",
                ),
            ],
            False,
        ),
        RunOption(
            "video_episodes",
            Annotated[int, typer.Option("--video-episodes", min=1, help="Episodes to record with --video.")],
            1,
        ),
        RunOption(
            "video_format",
            Annotated[
                str,
                typer.Option(
                    "--video-format",
                    help="auto (mp4 when imageio-ffmpeg is installed, else gif), mp4 or gif.",
                ),
            ],
            "auto",
        ),
    ]


def _video_request(request: EvalRequest) -> VideoRequest | None:
    """What ``--video`` records in this evaluation (None without it); exits 2 in one line on a format this machine
    cannot write."""
    if not request.options.get("video"):
        return None
    from amago_tools.video import VIDEO_FOLDER, VideoRequest, resolve_format

    try:
        fmt = resolve_format(request.options["video_format"])
    except ValueError as exc:
        fail(str(exc))
    label = request.epoch if request.epoch is not None else "latest"
    return VideoRequest(
        request.run_dir / VIDEO_FOLDER, f"epoch_{label}", request.options["video_episodes"], fmt
    )


def check_video_options(request: EvalRequest) -> None:
    """Before the run is loaded: an unusable ``--video-format`` stops ``amago eval`` in one line."""
    _video_request(request)


def recording_makers(
    request: EvalRequest,
) -> Callable[[list[Callable[[], Any]]], Sequence[Callable[[], Any]]] | None:
    """The test makers with env 0 recorded (earlier videos of the same epoch cleared), with ``--video``."""
    video = _video_request(request)
    return None if video is None else video.wrap_test_makers


def recorded_videos(request: EvalRequest) -> Mapping[str, Any] | None:
    """After the evaluation: the files (``videos`` in the printed JSON), sent to the backends that take videos;
    one line when env 0 finished fewer episodes than asked."""
    video = _video_request(request)
    if video is None:
        return None
    written = video.written()
    if written:
        request.log_files("videos", written)
    if len(written) < video.episodes:
        # With --episodes, env 0 plays only its share of them: more steps would not record more.
        more = "--episodes" if request.options.get("episodes") else "--timesteps"
        sys.stderr.write(
            f"amago: warning: recorded {len(written)} of {video.episodes} episode(s): test env 0 "
            f"finished only {len(written)} within the evaluation; raise {more}\n"
        )
    return {"videos": [str(path) for path in written]}
