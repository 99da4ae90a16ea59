"""``CueRecall``: the gymnasium environment (numpy only)."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np


class CueRecall(gymnasium.Env[np.ndarray, int]):
    """A one-shot memory test: the answer depends only on the first observation.

    Step 0 shows a one-hot cue; the next ``delay`` observations are blank (or, with ``noise``, sometimes a
    random distractor symbol); the last observation raises the question flag. The action taken then ends the
    episode with reward 1 if it names the cue, else 0. Actions before the question do nothing.

    Observation: ``num_cues`` one-hot symbol slots, then a question flag (``float32``).

    Args:
        num_cues: symbols to choose between.
        delay: blank steps between cue and question.
        noise: chance per blank step of a distractor symbol.
    """

    def __init__(self, num_cues: int = 4, delay: int = 5, noise: float = 0.0):
        if num_cues < 2 or delay < 0 or not 0.0 <= noise <= 1.0:
            msg = f"need num_cues >= 2, delay >= 0, 0 <= noise <= 1; got {num_cues}, {delay}, {noise}."
            raise ValueError(msg)
        self.num_cues, self.delay, self.noise = num_cues, delay, noise
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, (num_cues + 1,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(num_cues)
        self._t: int | None = None

    def _obs(self, symbol: int | None, question: bool) -> np.ndarray:
        obs = np.zeros(self.num_cues + 1, dtype=np.float32)
        if symbol is not None:
            obs[symbol] = 1.0
        obs[-1] = float(question)
        return obs

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        """Draws a new cue and shows it (with the question flag too when there is no delay)."""
        super().reset(seed=seed)
        self.cue = int(self.np_random.integers(self.num_cues))
        self._t = 0
        return self._obs(self.cue, question=self.delay == 0), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Advances the delay, or answers the question and ends the episode."""
        if self._t is None:
            msg = "CueRecall.step() before reset() or after the answer; call reset() first."
            raise RuntimeError(msg)
        if self._t == self.delay:  # the question is showing: this action is the answer
            self._t = None
            reward = 1.0 if int(action) == self.cue else 0.0
            return self._obs(None, question=False), reward, True, False, {}
        self._t += 1
        if self._t == self.delay:
            return self._obs(None, question=True), 0.0, False, False, {}
        distract = self.noise > 0 and self.np_random.random() < self.noise
        symbol = int(self.np_random.integers(self.num_cues)) if distract else None
        return self._obs(symbol, question=False), 0.0, False, False, {}
