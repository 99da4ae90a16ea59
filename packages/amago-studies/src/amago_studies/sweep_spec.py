"""What ``amago sweep --space FILE`` reads: the search space over config keys and the objective.

A sweep file is TOML (or JSON / YAML), for example::

    objective = "val/Average Total Return (Across All Env Names)"
    last = 3
    direction = "maximize"
    pruner = "median"

    [space]
    "optim.learning_rate" = { log_uniform = [1e-5, 1e-3] }
    "traj_encoder.kind" = ["gru", "transformer"]
    "agent.tau" = { uniform = [0.001, 0.01] }
    "traj_encoder.n_layers" = { int = [1, 4] }

A list is a choice among its values; a table names one range. Torch-free and Optuna-free: the sweep driver
turns each :class:`Param` into an Optuna distribution when it runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from amago_core.experiment.metrics import AVERAGE_RETURN_KEY

DEFAULT_OBJECTIVE = f"val/{AVERAGE_RETURN_KEY}"
"""The val return averaged over every env of the run: what ``amago run`` reports as its val return."""
RANGE_KINDS = ("uniform", "log_uniform", "int", "log_int")
"""The ways to write a range: floats (evenly or on a log scale) or integers (evenly or on a log scale)."""
Scalar = str | int | float | bool | None
INT64_MAX = 2**63 - 1
"""The largest integer a config value may hold: torch and numpy store integers in 64 bits, so a larger one
fails every trial with an ``OverflowError`` (a sweep file refuses it before anything runs)."""


class Param(BaseModel):
    """One searched config key: a choice among values, or a range.

    Attributes:
        key: the dotted config key (``optim.learning_rate``), as ``-o`` takes it.
        choices: the values to choose among (a list in the sweep file), or None for a range.
        kind: the range's kind (one of :data:`RANGE_KINDS`), or None for choices.
        low: the range's lower end (included).
        high: the range's upper end (included).
        step: the spacing of an evenly spaced range (``{uniform = [0, 1], step = 0.25}``), or None.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    """The dotted config key (``optim.learning_rate``), as ``-o`` takes it."""
    choices: tuple[Scalar, ...] | None = None
    """The values to choose among (a list in the sweep file), or None for a range."""
    kind: Literal["uniform", "log_uniform", "int", "log_int"] | None = None
    """The range's kind, or None for choices."""
    low: float | None = None
    """The range's lower end (included)."""
    high: float | None = None
    """The range's upper end (included)."""
    step: float | None = None
    """The spacing of an evenly spaced range, or None for a continuous (or unit-step integer) one."""

    @classmethod
    def parse(cls, key: str, value: Any) -> Param:
        """A sweep file's ``key = value`` as a Param.

        Raises:
            ValueError: one line naming the key and how to write it.
        """
        how = (
            f'write "{key}" = ["a", "b"] for a choice, or one of {{uniform = [lo, hi]}}, {{log_uniform = [lo, hi]}}, '
            f"{{int = [lo, hi]}}, {{log_int = [lo, hi]}} (optionally with step = ...)"
        )
        if not key or any(not part.isidentifier() for part in key.split(".")):
            msg = f"space key {key!r} is not a dotted config key like optim.learning_rate; {how}"
            raise ValueError(msg)
        if isinstance(value, list | tuple):
            if len(value) < 2:
                msg = f"space key {key!r}: a choice needs at least two values (got {list(value)!r}); {how}"
                raise ValueError(msg)
            if not all(item is None or isinstance(item, str | int | float | bool) for item in value):
                msg = f"space key {key!r}: choices must be strings, numbers, booleans or null (Optuna stores them); {how}"
                raise ValueError(msg)
            unstorable = [item for item in value if isinstance(item, int | float) and not _storable(item)]
            if unstorable:
                msg = (
                    f"space key {key!r}: the choice {unstorable[0]!r} is not finite or does not fit a 64-bit "
                    f"integer (at most {INT64_MAX:,} in size); every trial with it would fail, so drop it"
                )
                raise ValueError(msg)
            if len(set(map(repr, value))) != len(value):
                msg = f"space key {key!r}: a choice is listed twice in {list(value)!r}; list each once"
                raise ValueError(msg)
            return cls(key=key, choices=tuple(value))
        if not isinstance(value, Mapping):
            msg = f"space key {key!r}: {value!r} is neither a list of choices nor a range table; {how}"
            raise ValueError(msg)
        table = dict(value)
        step = table.pop("step", None)
        kinds = [name for name in table if name in RANGE_KINDS]
        unknown = [name for name in table if name not in RANGE_KINDS]
        if unknown or len(kinds) != 1:
            msg = f"space key {key!r}: the table {value!r} must name exactly one range; {how}"
            raise ValueError(msg)
        kind = kinds[0]
        bounds = table[kind]
        if (
            not isinstance(bounds, list | tuple)
            or len(bounds) != 2
            or not all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
        ):
            msg = f"space key {key!r}: {kind} takes two numbers [low, high], not {bounds!r}"
            raise ValueError(msg)
        if not all(_storable(bound) for bound in bounds):
            msg = (
                f"space key {key!r}: {kind} bounds {list(bounds)!r} must be finite, and whole ones must fit a "
                f"64-bit integer (at most {INT64_MAX:,} in size); narrow the range"
            )
            raise ValueError(msg)
        if step is not None and (
            isinstance(step, bool) or not isinstance(step, int | float) or not _storable(step)
        ):
            msg = f"space key {key!r}: step must be a finite number, not {step!r}"
            raise ValueError(msg)
        return cls(key=key, kind=kind, low=float(bounds[0]), high=float(bounds[1]), step=step)

    @model_validator(mode="after")
    def _consistent(self) -> Param:
        if (self.choices is None) == (self.kind is None):
            msg = f"space key {self.key!r}: give either choices or a range"
            raise ValueError(msg)
        if self.kind is None:
            return self
        low, high = self.low, self.high
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)) or low >= high:
            msg = f"space key {self.key!r}: {self.kind} needs finite bounds with low < high, got [{low}, {high}]"
            raise ValueError(msg)
        if self.kind.startswith("log") and low <= 0:
            msg = f"space key {self.key!r}: {self.kind} needs low > 0 (a log scale), got {low}"
            raise ValueError(msg)
        if self.kind.startswith("log") and self.step is not None:
            msg = f"space key {self.key!r}: a log scale has no step; drop step or use {self.kind.removeprefix('log_')}"
            raise ValueError(msg)
        if self.kind in ("int", "log_int") and not (low.is_integer() and high.is_integer()):
            msg = f"space key {self.key!r}: {self.kind} takes whole numbers, got [{low}, {high}]"
            raise ValueError(msg)
        whole = self.kind in ("int", "log_int")
        if (whole and not -INT64_MAX - 1 <= low <= high <= INT64_MAX) or not math.isfinite(high - low):
            # Optuna draws an int range as Python integers and a uniform one as low + u * (high - low): either
            # would pass here and fail every trial later (an int64 overflow, an infinite value).
            why = (
                f"overflows a 64-bit integer (each end at most {INT64_MAX:,} in size)"
                if whole
                else "is too wide (high - low is not a finite number)"
            )
            msg = f"space key {self.key!r}: {self.kind} [{low:g}, {high:g}] {why}; narrow the range"
            raise ValueError(msg)
        if self.step is not None and not (math.isfinite(self.step) and self.step > 0):
            msg = f"space key {self.key!r}: step must be a finite number > 0, got {self.step}"
            raise ValueError(msg)
        if self.kind == "int" and self.step is not None and not float(self.step).is_integer():
            msg = f"space key {self.key!r}: an int range takes a whole step, got {self.step}; uniform takes fractions"
            raise ValueError(msg)
        return self

    def probe_values(self) -> list[Scalar]:
        """Values that check the key and its range before any trial runs: every choice, or both ends."""
        if self.choices is not None:
            return list(self.choices)
        low, high = float(self.low or 0.0), float(self.high or 0.0)  # set for a range (_consistent)
        if self.kind in ("int", "log_int"):
            return [int(low), int(high)]
        return [low, high]

    def admits(self, value: Any) -> bool:
        """Whether ``value`` is one of the choices, or a number inside the range (a whole one for ``int``)."""
        if self.choices is not None:
            return any(value == choice and type(value) is type(choice) for choice in self.choices)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        inside = float(self.low or 0.0) <= value <= float(self.high or 0.0)
        return inside and (self.kind not in ("int", "log_int") or float(value).is_integer())

    def describe(self) -> str:
        """``optim.learning_rate: log_uniform [1e-05, 0.001]`` / ``traj_encoder.kind: one of gru, transformer``."""
        if self.choices is not None:
            return f"{self.key}: one of {', '.join(map(str, self.choices))}"
        step = f" step {self.step:g}" if self.step is not None else ""
        return f"{self.key}: {self.kind} [{self.low:g}, {self.high:g}]{step}"


class SweepSpec(BaseModel):
    """A sweep file: the search space and how a trial is scored.

    Attributes:
        space: the searched keys (the ``[space]`` table), in the file's order.
        objective: the logged metric a trial is scored by.
        last: how many of the objective's last values are averaged into a trial's score.
        direction: whether a higher or a lower score is better.
        pruner: how unpromising trials are stopped early.
        prune_after: evaluations a trial always gets before it may be pruned.
        startup_trials: trials that finish before any pruning, and before the sampler models the space.
        sampler_seed: the seed of Optuna's TPE sampler.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    space: tuple[Param, ...] = Field(min_length=1)
    """The searched keys (the ``[space]`` table), in the file's order."""
    objective: str = DEFAULT_OBJECTIVE
    """The logged metric a trial is scored by: a key of the run's ``metrics.jsonl`` (``val/...`` or ``test/...``)."""
    last: int = Field(default=3, ge=1)
    """How many of the objective's last values (its last evaluations) are averaged into the trial's score."""
    direction: Literal["maximize", "minimize"] = "maximize"
    """Whether a higher (a return) or a lower (a loss) score is better."""
    pruner: Literal["median", "hyperband", "none"] = "median"
    """``median``: stop a trial whose running score is below the median of earlier trials at the same
    evaluation; ``hyperband``: Optuna's Hyperband; ``none``: every trial runs to its end."""
    prune_after: int = Field(default=1, ge=0)
    """Evaluations a trial always gets before it may be pruned (the first val returns are noisy)."""
    startup_trials: int = Field(default=4, ge=0)
    """Trials that finish before pruning starts and before the TPE sampler models the space (random until then)."""
    sampler_seed: int | None = 0
    """The seed of Optuna's TPE sampler (null: a fresh one each time). With several workers the order trials
    finish in still differs between sweeps."""
    enqueue: tuple[dict[str, Scalar], ...] = ()
    """Trials to run first, each a table of values for the searched keys (``[[enqueue]]`` tables): e.g. the
    config's own values, so that the sweep measures its default beside what it finds. A key left out is drawn."""

    @field_validator("space", mode="before")
    @classmethod
    def _parse_space(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return tuple(Param.parse(str(key), item) for key, item in value.items())
        return value

    @field_validator("space")
    @classmethod
    def _keys_once(cls, params: tuple[Param, ...]) -> tuple[Param, ...]:
        keys = [param.key for param in params]
        for key in keys:
            if any(other != key and other.startswith(key + ".") for other in keys):
                msg = f"space keys {key!r} and one under it are both searched; search one of them"
                raise ValueError(msg)
        return params

    @field_validator("objective")
    @classmethod
    def _split_metric(cls, value: str) -> str:
        if not value.startswith(("val/", "test/", "train/")):
            msg = f"objective {value!r} must be a metrics.jsonl key starting with val/, test/ or train/ (e.g. {DEFAULT_OBJECTIVE!r})"
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _enqueued_in_space(self) -> SweepSpec:
        params = {param.key: param for param in self.space}
        for number, values in enumerate(self.enqueue, start=1):
            for key, value in values.items():
                param = params.get(key)
                if param is None:
                    msg = f"enqueue #{number}: {key!r} is not a key of [space] ({', '.join(params)})"
                    raise ValueError(msg)
                if not param.admits(value):
                    msg = f"enqueue #{number}: {key} = {value!r} is outside its space ({param.describe()})"
                    raise ValueError(msg)
        return self

    def as_table(self) -> dict[str, Any]:
        """The spec as the sweep file would write it (what the sweep folder records)."""
        data = self.model_dump(mode="json", exclude={"space"})
        data["space"] = {param.key: _as_written(param) for param in self.space}
        return data


def _storable(number: float) -> bool:
    """Whether a number of a sweep file can be a config value: a finite float, or an integer that fits 64 bits."""
    if isinstance(number, int):
        return -INT64_MAX - 1 <= number <= INT64_MAX
    return math.isfinite(number)


def _as_written(param: Param) -> Any:
    if param.choices is not None:
        return list(param.choices)
    low: float | int = param.low or 0.0
    high: float | int = param.high or 0.0
    if param.kind in ("int", "log_int"):
        low, high = int(low), int(high)
    table: dict[str, Any] = {str(param.kind): [low, high]}
    if param.step is not None:
        table["step"] = param.step
    return table


def read_sweep_spec(path: str | Path) -> SweepSpec:
    """Reads and validates a sweep file (``.toml``, ``.json`` or ``.yaml``).

    Raises:
        amago_core.config.sources.ConfigSourceError: the file cannot be read or parsed.
        pydantic.ValidationError: the space or a setting is invalid.
    """
    from amago_core.config.sources import read_raw_config_file

    return SweepSpec.model_validate(read_raw_config_file(path))
