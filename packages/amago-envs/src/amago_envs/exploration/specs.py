"""Torch-free specs of the built-in exploration wrappers (what ``amago list explorations`` loads)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec

GROUP = "amago.explorations"


def anneal_for_budget(steps_anneal: int, ratio: float) -> dict[str, Any]:
    """How an exploration schedule follows a ``--steps``/``--budget`` run ``ratio`` times the preset's length.

    A longer run anneals over the same share of it. A shorter run keeps the preset's schedule (as AMAGO's
    time-boxed runs do): squeezing it into the same share of a short run ends exploration within the first
    epoch. Measured side by side with AMAGO on T-Maze H=30 at 19k env steps: the preset's 100k-step anneal shrunk
    to 158 steps per actor never found the goal (val return 0.0 and 0.5, seeds 1 and 2), while AMAGO, still near
    epsilon 1 that early, solved it at 16,740 and 14,880 env steps.
    """
    if ratio <= 1.0:
        return {}
    return {"steps_anneal": round(steps_anneal * ratio)}


class QuietStretchConfig(ComponentConfig):
    """Options both epsilon schedules share: a stretch of every episode explored at a fixed low epsilon."""

    quiet_steps: tuple[int, int] | None = None
    """Episode steps ``[first, last)`` that use ``quiet_eps`` instead of the schedule; None: none. For tasks
    whose middle is a long deterministic walk (T-Maze's corridor), where schedule-level noise almost never
    lets an episode reach the decision at the end (AMAGO's T-Maze example uses steps 1 .. H - 3)."""
    quiet_eps: float = Field(0.0, ge=0.0, le=1.0)
    """Epsilon inside ``quiet_steps`` (not scaled by ``randomize_eps``)."""

    @model_validator(mode="after")
    def _ordered_stretch(self) -> QuietStretchConfig:
        if self.quiet_steps is not None and not 0 <= self.quiet_steps[0] < self.quiet_steps[1]:
            msg = f"quiet_steps={self.quiet_steps}: needs 0 <= first < last (episode steps [first, last))."
            raise ValueError(msg)
        return self

    def follow_episode_length(self, old: int, new: int) -> dict[str, Any]:
        """The quiet stretch keeps its first step and its distance to the episode's end (T-Maze: the corridor),
        and ``quiet_eps`` scales so the stretch draws as many random actions as before."""
        if self.quiet_steps is None:
            return {}
        first, last = self.quiet_steps
        last = last + new - old
        if last <= first:
            return {"quiet_steps": None}
        return {"quiet_steps": (first, last), "quiet_eps": min(1.0, self.quiet_eps * old / new)}

    def follow_step_budget(self, ratio: float) -> dict[str, Any]:
        """See :func:`anneal_for_budget`."""
        steps_anneal: int = getattr(self, "steps_anneal")  # noqa: B009  (every subclass has one)
        return anneal_for_budget(steps_anneal, ratio)


class EGreedyConfig(QuietStretchConfig):
    """Epsilon-greedy exploration with a linear per-actor schedule (AMAGO's default)."""

    inferred_context: ClassVar[tuple[str, ...]] = ("env", "seed", "start_step")

    kind: Literal["egreedy"] = "egreedy"
    """Registered name of this exploration wrapper."""
    eps_start: float = Field(1.0, ge=0.0, le=1.0)
    """Epsilon at the actor's first step."""
    eps_end: float = Field(0.05, ge=0.0, le=1.0)
    """Epsilon after ``steps_anneal`` steps of this actor (and from then on)."""
    steps_anneal: int = Field(1_000_000, ge=1)
    """Env steps (counted per actor, i.e. per wrapped env) over which epsilon goes from start to end."""
    randomize_eps: bool = True
    """Multiply epsilon by a U[0, 1) draw per env row, redrawn at every reset and episode end, so that actors
    explore at different rates."""

    def as_bilevel(self) -> BilevelConfig:
        """The same exploration as a ``bilevel`` schedule whose episode-start and episode-end epsilons are equal,
        so it does not decay within an episode (its ``rollout_horizon`` stays None: there is none to follow)."""
        return BilevelConfig(
            eps_start_start=self.eps_start,
            eps_start_end=self.eps_end,
            eps_end_start=self.eps_start,
            eps_end_end=self.eps_end,
            steps_anneal=self.steps_anneal,
            randomize_eps=self.randomize_eps,
            quiet_steps=self.quiet_steps,
            quiet_eps=self.quiet_eps,
        )


class BilevelConfig(QuietStretchConfig):
    """Epsilon-greedy whose epsilon also decays *within* each episode (AMAGO paper, Fig. 13): explore early in
    a rollout, exploit what was learned in context later."""

    inferred_context: ClassVar[tuple[str, ...]] = ("env", "rollout_horizon", "seed", "start_step")

    kind: Literal["bilevel"] = "bilevel"
    """Registered name of this exploration wrapper."""
    rollout_horizon: int | None = Field(None, ge=1)
    """Steps over which epsilon decays from its episode-start to its episode-end value. None takes the builder's
    ``rollout_horizon`` context (the env's rollout length)."""
    eps_start_start: float = Field(1.0, ge=0.0, le=1.0)
    """Episode-start epsilon at the actor's first step."""
    eps_start_end: float = Field(0.05, ge=0.0, le=1.0)
    """Episode-start epsilon after ``steps_anneal`` actor steps."""
    eps_end_start: float = Field(0.8, ge=0.0, le=1.0)
    """Episode-end epsilon at the actor's first step."""
    eps_end_end: float = Field(0.01, ge=0.0, le=1.0)
    """Episode-end epsilon after ``steps_anneal`` actor steps."""
    steps_anneal: int = Field(1_000_000, ge=1)
    """Env steps (counted per actor) over which both schedules anneal."""
    randomize_eps: bool = True
    """Multiply epsilon by a U[0, 1) draw per env row, redrawn at every reset and episode end."""

    def follow_episode_length(self, old: int, new: int) -> dict[str, Any]:
        """A horizon that covered whole episodes keeps covering them (plus the quiet stretch's rule)."""
        followed = super().follow_episode_length(old, new)
        if self.rollout_horizon is not None and self.rollout_horizon >= old:
            followed["rollout_horizon"] = max(1, round(self.rollout_horizon * new / old))
        return followed


class TMazeExplorationConfig(ComponentConfig):
    """AMAGO's T-Maze exploration (example 04): epsilon-greedy annealed per actor, except inside the corridor,
    where epsilon is ``corridor_eps_scale / corridor_length``.

    Schedule-level noise in a corridor of H cells almost never lets a random walk reach the junction, so the
    agent would rarely see the decision it has to remember for; a small, fixed epsilon there keeps episodes
    walking to the end while the annealed schedule still explores the start and the junction.
    """

    inferred_context: ClassVar[tuple[str, ...]] = ("env", "seed", "start_step")

    kind: Literal["tmaze"] = "tmaze"
    """Registered name of this exploration wrapper."""
    corridor_length: int = Field(10, ge=1)
    """The T-Maze's corridor length H (the suite's ``corridor_length``): episode steps ``[1, H - 3)`` are the
    quiet corridor. Presets set it from the env, and it follows ``env.corridor_length``."""
    corridor_eps_scale: float = Field(0.5, ge=0.0)
    """Epsilon inside the corridor is this divided by ``corridor_length`` (AMAGO: 0.5 / H)."""
    eps_start: float = Field(1.0, ge=0.0, le=1.0)
    """Epsilon outside the corridor at the actor's first step."""
    eps_end: float = Field(0.01, ge=0.0, le=1.0)
    """Epsilon outside the corridor after ``steps_anneal`` steps of this actor (and from then on)."""
    steps_anneal: int = Field(100_000, ge=1)
    """Env steps (counted per actor) over which epsilon outside the corridor goes from start to end."""
    randomize_eps: bool = True
    """Multiply the annealed epsilon by a U[0, 1) draw per env row, redrawn at every reset and episode end."""

    @property
    def corridor_steps(self) -> tuple[int, int] | None:
        """Episode steps ``[first, last)`` explored at the corridor's epsilon; None when the corridor is too
        short to have any (H <= 4)."""
        last = self.corridor_length - 3
        return (1, last) if last > 1 else None

    @property
    def corridor_eps(self) -> float:
        """Epsilon inside the corridor."""
        return min(1.0, self.corridor_eps_scale / self.corridor_length)

    def as_egreedy(self) -> EGreedyConfig:
        """The same exploration as ``egreedy`` with the corridor as its quiet stretch."""
        return EGreedyConfig(
            eps_start=self.eps_start,
            eps_end=self.eps_end,
            steps_anneal=self.steps_anneal,
            randomize_eps=self.randomize_eps,
            quiet_steps=self.corridor_steps,
            quiet_eps=self.corridor_eps,
        )

    def follow_episode_length(self, old: int, new: int) -> dict[str, Any]:
        """The corridor grows or shrinks with the episode (T-Maze episodes are the corridor plus 1 or 3)."""
        return {"corridor_length": max(1, self.corridor_length + new - old)}

    def follow_step_budget(self, ratio: float) -> dict[str, Any]:
        """See :func:`anneal_for_budget`."""
        return anneal_for_budget(self.steps_anneal, ratio)


EGREEDY = ComponentSpec(
    name="egreedy",
    group_default=True,  # what a run uses when it names none of this group (AMAGO's default)
    group=GROUP,
    summary="Epsilon-greedy (discrete) / Gaussian (continuous) noise annealed per actor; the noisy action is stored.",
    config=EGreedyConfig,
    factory="amago_envs.exploration.wrappers:build_egreedy",
)

BILEVEL = ComponentSpec(
    name="bilevel",
    group=GROUP,
    summary="Epsilon annealed per actor and decayed within each episode (explore early, exploit late).",
    config=BilevelConfig,
    factory="amago_envs.exploration.wrappers:build_bilevel",
)

TMAZE = ComponentSpec(
    name="tmaze",
    group=GROUP,
    summary="T-Maze's epsilon-greedy (AMAGO example 04): annealed, but 0.5 / H inside the corridor.",
    config=TMazeExplorationConfig,
    factory="amago_envs.exploration.wrappers:build_tmaze",
)
