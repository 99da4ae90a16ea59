"""Did-you-mean suggestions for names typed by people (component names, config keys, hook names)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, candidates: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """Returns the candidate most similar to ``word``, or None when nothing is close enough.

    Args:
        word: what the user typed.
        candidates: the valid names.
        cutoff: minimum similarity ratio (0..1) for a suggestion; below it, guessing would mislead.
    """
    pool = list(candidates)
    lowered = {c.lower(): c for c in pool}
    if word.lower() in lowered:  # a case slip is the most likely mistake of all
        return lowered[word.lower()]
    matches = difflib.get_close_matches(word, pool, n=1, cutoff=cutoff)
    return matches[0] if matches else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """Returns " Did you mean 'x'?" (with the leading space) or an empty string."""
    match = closest(word, candidates)
    return f" Did you mean {match!r}?" if match else ""
