"""Attempts per trial by split: the meta-RL suites train on ``k_train`` attempts and evaluate on ``k_eval``.

Evaluating with more attempts than trained is how in-context adaptation beyond the training horizon is measured
(AMAGO's branch after v3.3.0: Wind, HalfCheetahVel and Meta-World). Pure Python: spec modules import it.
"""

from __future__ import annotations

from amago_core.config.task_split import SPLIT_NAMES


def split_attempts(split: str, train: int, evaluation: int) -> int:
    """Attempts per trial in ``split``: ``train`` for ``train``, ``evaluation`` for ``val`` and ``test``.

    Raises:
        ValueError: ``split`` is not train, val or test.
    """
    if split not in SPLIT_NAMES:
        msg = f"unknown split {split!r}; use one of: {', '.join(SPLIT_NAMES)}."
        raise ValueError(msg)
    return train if split == "train" else evaluation
