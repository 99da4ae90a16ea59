"""Cue Recall: a third-party amago env suite (see ``specs`` for the entry point, ``env`` for the task)."""
