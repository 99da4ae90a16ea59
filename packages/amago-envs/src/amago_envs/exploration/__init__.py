"""Exploration wrappers (entry-point group ``amago.explorations``): ``egreedy`` and ``bilevel``.

Importing this package is cheap; the wrappers live in :mod:`amago_envs.exploration.wrappers`.
"""

from __future__ import annotations
