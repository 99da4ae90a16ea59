"""Where XLand rulesets come from: generated here from a seed, or a benchmark file already on disk.

A ruleset is three uint8 arrays in xminigrid's encoding: the goal (``[goal id, tile, colour, 0, 0]``), the
rules (``[3, tile a, colour a, tile b, colour b, product tile, product colour]`` for "put a next to b and
get the product"; all-zero rows are empty rules) and the objects placed at reset (``[tile, colour]``, zero
rows are padding).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

# xminigrid's tile and colour ids (xminigrid.core.constants), repeated here so generation needs no jax.
_OBJECT_TILES = (3, 4, 5, 7, 11, 12)  # ball, square, pyramid, key, hex, star
_OBJECT_COLOURS = tuple(range(1, 12))  # red ... pink (0 is "empty")
_GOAL_IDS = (1, 3)  # AgentHoldGoal (pick it up), AgentNearGoal (stand next to it)
_TILE_NEAR_RULE = 3
GOAL_LEN = 5
RULE_LEN = 7


class BenchmarkUnavailableError(ValueError):
    """A named xminigrid benchmark is not on disk and the suite will not download it."""


@dataclass(frozen=True)
class Rulesets:
    """A stack of rulesets (leading dim = ruleset index).

    Attributes:
        goals: ``(R, 5)`` uint8.
        rules: ``(R, num_rules, 7)`` uint8.
        init_tiles: ``(R, num_objects, 2)`` uint8.
    """

    goals: np.ndarray
    rules: np.ndarray
    init_tiles: np.ndarray

    def __len__(self) -> int:
        return int(self.goals.shape[0])

    def subset(self, index: np.ndarray) -> Rulesets:
        """The rulesets at ``index``."""
        return Rulesets(self.goals[index], self.rules[index], self.init_tiles[index])

    def padded(self, capacity: int) -> Rulesets:
        """The same rulesets followed by zero rows up to ``capacity`` (never sampled: callers pass the size)."""
        extra = capacity - len(self)
        if extra <= 0:
            return self

        def pad(a: np.ndarray) -> np.ndarray:
            return np.concatenate([a, np.zeros((extra, *a.shape[1:]), dtype=a.dtype)])

        return Rulesets(pad(self.goals), pad(self.rules), pad(self.init_tiles))

    def split(self, train_fraction: float, seed: int) -> tuple[Rulesets, Rulesets]:
        """A seeded shuffle cut into (train, held-out) parts; both keep at least one ruleset."""
        order = np.random.default_rng(seed).permutation(len(self))
        cut = min(max(int(len(self) * train_fraction), 1), len(self) - 1)
        return self.subset(order[:cut]), self.subset(order[cut:])


def generate_rulesets(num: int, chain_depth: int, distractors: int, seed: int) -> Rulesets:
    """Generates ``num`` solvable rulesets offline.

    Each ruleset picks distinct objects: a goal object and a goal (hold it or stand next to it); then, for a
    chain of ``chain_depth`` rules, the goal object is not placed but made by putting two other objects next
    to each other, the first of which is itself made by the next rule, and so on. The objects at the chain's
    leaves and ``distractors`` unrelated objects are placed in the grid.

    Args:
        num: rulesets to make.
        chain_depth: rules between the placed objects and the goal object (0: the goal object is placed).
        distractors: objects that play no part in the task.
        seed: generator seed.
    """
    rng = np.random.default_rng(seed)
    objects = np.array([(t, c) for t in _OBJECT_TILES for c in _OBJECT_COLOURS], dtype=np.uint8)
    needed = 1 + 2 * chain_depth + distractors
    if needed > len(objects):
        msg = (
            f"a chain of {chain_depth} rules with {distractors} distractors needs {needed} distinct objects."
        )
        raise ValueError(msg)
    num_placed = chain_depth + 1 + distractors
    goals = np.zeros((num, GOAL_LEN), dtype=np.uint8)
    rules = np.zeros((num, max(chain_depth, 1), RULE_LEN), dtype=np.uint8)
    init_tiles = np.zeros((num, num_placed, 2), dtype=np.uint8)
    for i in range(num):
        picked = objects[rng.choice(len(objects), size=needed, replace=False)]
        goal_object, rest = picked[0], list(picked[1:])
        goals[i, 0] = rng.choice(_GOAL_IDS)
        goals[i, 1:3] = goal_object
        product = goal_object
        placed = []
        for depth in range(chain_depth):
            made_from, partner = rest.pop(), rest.pop()
            rules[i, depth] = (_TILE_NEAR_RULE, *made_from, *partner, *product)
            placed.append(partner)
            product = made_from
        placed.append(product)
        placed.extend(rest)  # the distractors
        init_tiles[i] = np.stack(placed)[rng.permutation(num_placed)]
    return Rulesets(goals, rules, init_tiles)


def benchmark_path(name: str) -> str:
    """Where xminigrid keeps (and looks for) a downloaded benchmark file."""
    from xminigrid import benchmarks

    return os.path.join(benchmarks.DATA_PATH, benchmarks.NAME2HFFILENAME[name])


def load_benchmark_rulesets(name: str) -> Rulesets:
    """Loads an xminigrid benchmark that is already on disk.

    Raises:
        BenchmarkUnavailableError: the file is missing; the message says how to pre-fetch it.
    """
    from xminigrid import benchmarks

    path = benchmark_path(name)
    if not os.path.exists(path):
        msg = (
            f"xland benchmark {name!r} is downloaded by xminigrid at run time and is not at {path}; pre-fetch it "
            f"on a machine with network access (python -c \"import xminigrid; xminigrid.load_benchmark('{name}')\") "
            "and copy it there (or set XLAND_MINIGRID_DATA to its folder), or use a generated task such as "
            "xland-local-small."
        )
        raise BenchmarkUnavailableError(msg)
    data = benchmarks.load_bz2_pickle(path)
    return Rulesets(
        goals=np.asarray(data["goals"], dtype=np.uint8),
        rules=np.asarray(data["rules"], dtype=np.uint8),
        init_tiles=np.asarray(data["init_tiles"], dtype=np.uint8),
    )
