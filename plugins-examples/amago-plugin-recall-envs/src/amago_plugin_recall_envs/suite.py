"""``CueRecallSuite``: what the ``cue_recall`` entry point builds (only amago's public API is used)."""

from __future__ import annotations

from amago_core.rollout import AMAGOEnv
from amago_plugin_recall_envs.env import CueRecall
from amago_plugin_recall_envs.specs import TASK_DELAYS, CueRecallConfig

SPLITS = ("train", "val", "test")


class CueRecallSuite:
    """Called as ``factory(config)`` by amago's registry; the experiment asks it for envs per split.

    Args:
        config: the validated suite config (None: defaults).
    """

    def __init__(self, config: CueRecallConfig | None = None):
        self.config = config or CueRecallConfig()

    @property
    def delay(self) -> int:
        """The delay in use (the config's, else the task's)."""
        if self.config.delay is not None:
            return self.config.delay
        return TASK_DELAYS[self.config.task or "short"]

    @property
    def env_name(self) -> str:
        """``CueRecall-C<cues>-D<delay>`` (no ``_`` or ``/``: trajectory file names split on them)."""
        return f"CueRecall-C{self.config.num_cues}-D{self.delay}"

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """A fresh env wrapped in ``AMAGOEnv`` (every split draws cues the same way).

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        if split not in SPLITS:
            msg = f"unknown split {split!r}; use one of: {', '.join(SPLITS)}."
            raise ValueError(msg)
        env = CueRecall(num_cues=self.config.num_cues, delay=self.delay, noise=self.config.noise)
        return AMAGOEnv(env, env_name=self.env_name)
