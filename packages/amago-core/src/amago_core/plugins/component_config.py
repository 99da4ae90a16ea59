"""``ComponentConfig``: the base class of every plugin's own config model (``EnvSuiteConfig`` for env suites).

Plugins import it as ``amago_core.config.ComponentConfig``; it lives in the plugin API, below the config package.
"""

from __future__ import annotations

from typing import Any, ClassVar, get_args

from amago_core.plugins.strict import StrictModel


class ComponentConfig(StrictModel):
    """Config of one pluggable component (an encoder, agent, exploration wrapper or env suite).

    Subclasses pin ``kind`` to their registered name, so a config file names what it configures::

        class MambaConfig(ComponentConfig):
            kind: Literal["mamba"] = "mamba"
            d_model: int = 256
            \"\"\"Width of the residual stream.\"\"\"

    What is chosen lives here; what is inferred from the run (spaces, ``max_seq_len``, ``tstep_dim``) is
    passed by the builder as keyword context and never appears in a config.
    """

    kind: str
    """Registered name of the component this config belongs to."""

    # Fields a builder passes as context, listed so that `amago show` can explain them.
    inferred_context: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def kind_name(cls) -> str | None:
        """The name pinned by ``kind: Literal["name"]``, or None when the subclass did not pin one."""
        field = cls.model_fields.get("kind")
        if field is None:
            return None
        literal_args = get_args(field.annotation)
        if len(literal_args) == 1 and isinstance(literal_args[0], str):
            return literal_args[0]
        return field.default if isinstance(field.default, str) else None

    @classmethod
    def fields_missing_docs(cls) -> list[str]:
        """Names of fields without a description (every field should say what it means)."""
        return [name for name, f in cls.model_fields.items() if not (f.description or "").strip()]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of this config (including ``kind``)."""
        return self.model_dump(mode="json")

    # `amago run` sizes any preset to the machine without knowing the component: each config says which of its
    # own options are counted in episode steps or in env steps, and what its smallest useful form is.

    def follow_episode_length(self, old: int, new: int) -> dict[str, Any]:
        """Options that follow the env's episode length when it changes from ``old`` to ``new`` steps.

        Called when the user's env options make an episode longer or shorter than the preset (or main job) it
        came with was written for; only options the user did not set themselves are replaced. Default: none.

        Returns:
            ``{field: new value}`` for the options counted in episode steps.
        """
        return {}

    def follow_step_budget(self, ratio: float) -> dict[str, Any]:
        """Options counted in env steps per actor, when a budget runs ``ratio`` times the preset's steps.

        Example: an exploration schedule annealed over ``steps_anneal`` steps anneals over the same share of a
        longer run (and keeps its own length in a shorter one). Only options the user did not set themselves are
        replaced. Default: none.
        """
        return {}

    def smoke_options(self) -> dict[str, Any]:
        """The smallest useful form of this component for ``amago run --smoke`` (seconds end to end).

        Default: none (the component runs as configured). Encoders return tiny widths and depths.
        """
        return {}


class EnvSuiteConfig(ComponentConfig):
    """Config base of an env suite (entry-point group ``amago.env_suites``).

    Users name an env by id: the suite name with ``_`` written as ``-``, then an optional task
    (``tmaze-passive``, ``gym-CartPole-v1``). The registry splits the id and fills ``task``; the suite
    validates the task and its own options. A suite's spec lists its tasks in ``ComponentSpec.tasks`` so
    that ``amago list envs SUITE`` needs no import of the suite's library.
    """

    task: str | None = None
    """Task within the suite (the env id's part after the suite name); None picks the suite's default."""

    whole_episode_memory: ClassVar[bool] = False
    """True for memory tasks whose policy must see a whole episode at once (T-Maze, k-shot meta-RL with short
    episodes): a ``run.max_seq_len`` below :meth:`episode_steps` gets a warning saying what to set."""
    attempt_options: ClassVar[tuple[str, ...]] = ()
    """Options that set the attempts per trial of evaluation (``amago eval --attempts K`` sets each to K); empty:
    a suite without multi-attempt trials."""
    attempt_metrics: ClassVar[dict[str, str]] = {}
    """The per-attempt info keys the suite logs, by kind (``success``, ``return``), each with an ``{i}`` where the
    attempt index goes (what ``amago eval --attempts`` reports by attempt)."""

    def episode_steps(self) -> int | None:
        """The most steps one env episode (a whole meta-episode, for k-shot suites) takes with these options.

        Presets write their sequence lengths, save lengths and val horizons for the suite's default options;
        when a user's options change this number, the settings that covered whole episodes follow it (see
        ``amago_core.config.episode``). None (the default): unknown or unbounded, nothing follows.
        """
        return None

    def best_known_return(self) -> float | None:
        """The highest return one episode of this task can reach (or the best published), when known: what
        ``amago bench memory`` normalises a score of 1 to when the user gives no ``--best``. Default: None
        (unknown; the bench uses its own best score and says so)."""
        return None

    def eval_episode_steps(self) -> int | None:
        """:meth:`episode_steps` of a val or test episode, which the val horizon follows; a suite whose evaluation
        plays more attempts per trial than training (``k_eval``) says so here. Default: :meth:`episode_steps`."""
        return self.episode_steps()
