"""The gin mapping, third part: configurable classes that AMAGO's example scripts define.

AMAGO's examples define some classes of their own with ``@gin.configurable`` (gin registers them under the
script's module, ``__main__``), and a run of such a script lists them in its ``ckpts/config.txt``. Those with an
amago counterpart are here, each with the AMAGO class it subclasses (:attr:`GinConfigurable.base`), so that a
binding of the base's parameter is read as gin applied it: to the subclass only where the subclass leaves that
argument to the base.
"""

from __future__ import annotations

from amago.from_amago.gin.model import GinConfigurable, by_run, make_configurable, no_counterpart, setting

EXAMPLES: tuple[GinConfigurable, ...] = (
    make_configurable(
        "TMazeExploration",
        "__main__",
        "exploration",
        "AMAGO example 04's epsilon-greedy for T-Maze: the schedule's epsilon, "
        "but 0.5 / horizon inside the corridor (episode steps 1 to horizon - 4): the `tmaze` exploration.",
        [
            by_run("env", "the env it wraps, passed by the experiment."),
            no_counterpart(
                "start_window",
                "amago's corridor starts after the first step (`start_window = 0`, AMAGO's default).",
                0,
            ),
            no_counterpart(
                "end_window",
                "amago's corridor ends 3 steps before the horizon (`end_window = 3`, AMAGO's default).",
                3,
            ),
            setting("horizon", "corridor_length"),
            setting("eps_start"),
            setting("eps_end"),
            setting("steps_anneal"),
        ],
        picks=(("exploration.kind", "tmaze"),),
        base="EpsilonGreedy",
        inherits=("randomize_eps",),  # it passes eps_start, eps_end and steps_anneal to EpsilonGreedy itself
        example="examples/04_tmaze.py",
    ),
)
"""The example scripts' configurables with a counterpart in amago."""
