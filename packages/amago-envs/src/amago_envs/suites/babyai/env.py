"""``MultitaskBabyAI``: k attempts at a random BabyAI level and layout, with AMAGO's observation modes.

At every reset the env draws a level and a layout seed; the agent then gets ``k_episodes`` attempts at that
exact layout (minigrid regenerates it from the seed). It is never told the level: the mission text and what
happened in earlier attempts are all it has. The step after an attempt ends restarts the layout and pays no
reward; the env terminates when the last attempt ends, logging ``Episode {n} Success`` for each attempt.
"""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import cv2
import gymnasium
import minigrid  # noqa: F401  (registers the BabyAI-* ids)
import numpy as np
from minigrid.wrappers import FullyObsWrapper, RGBImgObsWrapper, RGBImgPartialObsWrapper

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX

MISSION_WORDS: tuple[str, ...] = (
    "a", "after", "and", "ball", "behind", "blue", "box", "door", "front", "go", "green", "grey", "in", "key",
    "left", "next", "object", "of", "on", "open", "pick", "purple", "put", "red", "right", "the", "then", "to",
    "up", "yellow", "you", "your",
)  # fmt: skip
"""BabyAI's mission vocabulary; word ``i`` is encoded as ``i + 2`` (0 blank, 1 unknown word)."""

_WORD_IDS = {word: i + 2 for i, word in enumerate(MISSION_WORDS)}
IMAGE_SIDE = 63
"""Side of the RGB observations (a 7x7 view at tile size 9; full maps are resized to it)."""


def babyai_gym_id(level: str) -> str:
    """The newest registered ``BabyAI-<level>-v*`` id.

    Raises:
        ValueError: minigrid registers no such level.
    """
    pattern = re.compile(rf"^BabyAI-{re.escape(level)}-v(\d+)$")
    versions = [(int(m.group(1)), key) for key in gymnasium.registry if (m := pattern.match(key))]
    if not versions:
        msg = f"minigrid registers no BabyAI level {level!r}; see `amago list envs babyai` for the levels."
        raise ValueError(msg)
    return max(versions)[1]


def encode_mission(mission: str, length: int) -> np.ndarray:
    """Word ids of ``mission`` (punctuation dropped), zero-padded or cut to ``length``."""
    words = re.findall(r"[a-z]+", mission.lower())[:length]
    ids = np.zeros(length, dtype=np.int32)
    ids[: len(words)] = [_WORD_IDS.get(word, 1) for word in words]
    return ids


class MultitaskBabyAI(gymnasium.Env[dict[str, np.ndarray], np.int64]):
    """BabyAI meta-RL over a set of levels and a range of layout seeds.

    Observations: ``image`` (see ``obs_kind``), ``mission`` (``mission_tokens`` word ids) and ``extra``
    (one-hot agent direction, then ``attempt / k_episodes``). Actions: BabyAI's 7.

    Args:
        levels: BabyAI level names (``GoToLocal``) drawn uniformly at each reset.
        k_episodes: attempts per (level, layout).
        seed_range: layout seeds are drawn from ``[low, high)``.
        obs_kind: ``partial-grid``, ``full-grid``, ``partial-image`` or ``full-image``.
        mission_tokens: length of the mission encoding.
        full_grid_size: side the ``full-grid`` encoding is padded to.
    """

    def __init__(
        self,
        levels: tuple[str, ...],
        k_episodes: int = 2,
        seed_range: tuple[int, int] = (0, 1_000_000),
        obs_kind: str = "partial-grid",
        mission_tokens: int = 9,
        full_grid_size: int = 22,
    ):
        if not levels:
            msg = "MultitaskBabyAI needs at least one level."
            raise ValueError(msg)
        if seed_range[0] >= seed_range[1]:
            msg = f"seed_range {seed_range} is empty; give (low, high) with low < high."
            raise ValueError(msg)
        self.gym_ids = {level: babyai_gym_id(level) for level in levels}
        self.levels = tuple(levels)
        self.k_episodes = k_episodes
        self.seed_range = seed_range
        self.obs_kind = obs_kind
        self.mission_tokens = mission_tokens
        self.full_grid_size = full_grid_size
        side = {"partial-grid": 7, "full-grid": full_grid_size}.get(obs_kind, IMAGE_SIDE)
        if obs_kind not in ("partial-grid", "full-grid", "partial-image", "full-image"):
            msg = f"obs_kind {obs_kind!r} is not one of partial-grid, full-grid, partial-image, full-image."
            raise ValueError(msg)
        # gymnasium types a Dict space's elements as dict[str, Space] rather than dicts of samples.
        self.observation_space = gymnasium.spaces.Dict(  # type: ignore[assignment]
            {
                "image": gymnasium.spaces.Box(0, 255, shape=(side, side, 3), dtype=np.uint8),
                "mission": gymnasium.spaces.Box(
                    0, len(MISSION_WORDS) + 1, shape=(mission_tokens,), dtype=np.int32
                ),
                "extra": gymnasium.spaces.Box(0.0, 1.0, shape=(5,), dtype=np.float32),
            }
        )
        self.action_space = gymnasium.spaces.Discrete(7)
        self._envs: dict[str, gymnasium.Env[Any, Any]] = {}
        self.current_level = self.levels[0]

    @property
    def env_name(self) -> str:
        """``babyai-<Level>`` of the current level, so metrics are kept per level."""
        return f"babyai-{self.current_level}"

    def _level_env(self, level: str) -> gymnasium.Env[Any, Any]:
        # One env per level, built on first use: gym.make is far slower than a seeded reset.
        if level not in self._envs:
            env = gymnasium.make(self.gym_ids[level])
            if self.obs_kind == "full-grid":
                env = FullyObsWrapper(env)
            elif self.obs_kind == "partial-image":
                env = RGBImgPartialObsWrapper(env, tile_size=9)
            elif self.obs_kind == "full-image":
                env = RGBImgObsWrapper(env)
            self._envs[level] = env
        return self._envs[level]

    def _observe(self, raw: dict[str, Any]) -> dict[str, np.ndarray]:
        image: np.ndarray = np.asarray(raw["image"], dtype=np.uint8)
        if self.obs_kind == "full-grid":
            if max(image.shape[:2]) > self.full_grid_size:
                msg = (
                    f"level {self.current_level!r} has a {image.shape[0]}x{image.shape[1]} grid, larger than "
                    f"full_grid_size={self.full_grid_size}; raise full_grid_size."
                )
                raise ValueError(msg)
            padded = np.zeros((self.full_grid_size, self.full_grid_size, 3), dtype=np.uint8)
            padded[: image.shape[0], : image.shape[1]] = image
            image = padded
        elif self.obs_kind == "full-image":
            image = cv2.resize(image, (IMAGE_SIDE, IMAGE_SIDE), interpolation=cv2.INTER_AREA)
        extra = np.zeros(5, dtype=np.float32)
        extra[int(raw["direction"])] = 1.0
        extra[4] = self._attempt / self.k_episodes
        return {
            "image": image,
            "mission": encode_mission(raw["mission"], self.mission_tokens),
            "extra": extra,
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Draws a level and a layout and starts the first attempt."""
        super().reset(seed=seed)
        self.current_level = self.levels[int(self.np_random.integers(len(self.levels)))]
        self._layout_seed = int(self.np_random.integers(*self.seed_range))
        self._env = self._level_env(self.current_level)
        self._attempt = 1
        self._restart_next = False
        raw, info = self._reset_layout()
        return self._observe(raw), info

    def _reset_layout(self) -> tuple[dict[str, Any], dict[str, Any]]:
        # minigrid prints its level-generation retries ("Sampling rejected: ...") to stdout, which would
        # corrupt the JSON `amago run` prints there.
        with contextlib.redirect_stdout(io.StringIO()):
            return self._env.reset(seed=self._layout_seed)

    def step(
        self, action: int | np.integer
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """A step of the current attempt, or the zero-reward step that restarts the layout."""
        if self._restart_next:
            self._restart_next = False
            raw, info = self._reset_layout()
            return self._observe(raw), 0.0, False, False, info
        raw, reward, terminated, truncated, info = self._env.step(int(action))
        done = False
        if terminated or truncated:
            info = dict(info)
            info[f"{AMAGO_ENV_LOG_PREFIX} Episode {self._attempt} Success"] = float(float(reward) > 0.0)
            self._attempt += 1
            done = self._attempt > self.k_episodes
            self._restart_next = not done
        # The attempt counter in the observation moves on with the attempt that just ended.
        return self._observe(raw), float(reward), done, False, info
