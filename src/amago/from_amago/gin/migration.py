"""An AMAGO gin file as amago settings: :func:`migrate`, what ``amago migrate-gin`` prints.

Each binding of one of AMAGO's configurables (:mod:`.mapping`) becomes its amago setting together with the
configurable's *picks*, the settings that make amago use the same class. Which class a file means, for each pick:

1. the one the file picks (``Experiment.traj_encoder_type = @GRUTrajEncoder``; ``TformerTrajEncoder.pos_emb =
   "learnable"``); bindings of the other classes had no effect in AMAGO either and are reported;
2. else the one class whose options the file sets: AMAGO's scripts picked classes in Python, and a run's
   operative config (``ckpts/config.txt``) lists only the classes the run built, without the class-valued
   parameters that picked them. A subclass wins over its base (``TMazeExploration`` over ``EpsilonGreedy``):
   the base's section lists what the subclass left to it. A binding of the base's parameter then counts as gin
   applied it: for the subclass where the subclass leaves that argument to the base
   (``EpsilonGreedy.randomize_eps``), and not at all where the subclass passes it itself
   (``EpsilonGreedy.eps_start``: reported);
3. else AMAGO's default class, when the file sets options of several classes and the default is one of them
   (``FlashAttention``, ``binary_filter``...); the others had no effect in AMAGO and are reported;
4. else the file is ambiguous (options of ``GRUTrajEncoder`` and ``TformerTrajEncoder``, no pick): those bindings
   are reported, with the binding that would pick one.

Torch-free and standard-library only.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from amago.from_amago.gin.mapping import ALL_CONFIGURABLES, BY_NAME, PICK_KEYS, ancestors, lookup, passed_by
from amago.from_amago.gin.model import AMAGO_VERSION, CONVERSIONS, GinBinding, GinConfigurable
from amago.from_amago.gin.output import override_text, plain, to_toml
from amago.from_amago.gin.syntax import GinStatement, Reference, resolve_macros

NoteReason = Literal[
    "unknown",
    "no_parameter",
    "scope",
    "run",
    "not_translated",
    "no_counterpart",
    "nothing",
    "inactive",
    "ambiguous",
    "overridden",
    "passed_by_subclass",
]
"""Why a binding became no setting (or needed none):

- ``unknown``: not a gin configurable of AMAGO;
- ``no_parameter``: AMAGO's configurable has no such parameter (gin refused it in AMAGO too);
- ``scope``: bound inside a gin scope nothing opens (no effect in AMAGO either);
- ``run``: the run passes the value (a gin binding of it never took effect);
- ``not_translated``: the value cannot be converted (or names a class amago cannot pick there);
- ``no_counterpart``: amago has no setting for it;
- ``nothing``: it picks what amago uses by itself;
- ``inactive``: its class is not the one used (no effect in AMAGO either);
- ``ambiguous``: nothing picks which of AMAGO's classes it belongs to (options of several, none picked);
- ``overridden``: a later binding sets the same amago key (the later one wins);
- ``passed_by_subclass``: a parameter of a base class whose subclass (the class used) passes that argument to the
  base itself, so gin's binding of the base never reached it (no effect in AMAGO either).
"""


@dataclass(frozen=True)
class Note:
    """A binding that did not become a setting (or needed none), and why: one line on stderr.

    Attributes:
        where: ``file:line``.
        binding: the binding's key as written.
        message: why, and what to do instead.
        reason: what kind of note it is (:data:`NoteReason`), for callers that treat some as errors.
    """

    where: str
    binding: str
    message: str
    reason: NoteReason = "not_translated"

    def __str__(self) -> str:
        return f"{self.where}: {self.binding}: {self.message}"


@dataclass(frozen=True)
class Migration:
    """What a gin file becomes in amago.

    Attributes:
        settings: amago config key -> value: sections and slots in the order the file first set them, each
            slot's picks before its options (an override of a ``kind`` drops the options given before it).
        notes: one per binding that was not translated, or needed nothing, in file order.
        translated: how many bindings became settings.
        as_amago_does: bindings (``file:line``) of a parameter amago has no setting for, to the value amago
            always behaves as (AMAGO's default, which a run's ``config.txt`` lists): nothing to translate or report.
    """

    settings: dict[str, Any]
    notes: tuple[Note, ...]
    translated: int
    as_amago_does: tuple[str, ...] = ()

    def override_lines(self) -> list[str]:
        """One ``-o key=value`` per setting, quoted for a POSIX shell."""
        return [f"-o {shlex.quote(f'{key}={override_text(value)}')}" for key, value in self.settings.items()]

    def toml(self) -> tuple[str, list[str]]:
        """The settings as a TOML config for ``-c``, and one line per setting TOML cannot hold (a null)."""
        return to_toml(self.settings)


class _Unset:
    """The resolved value of a pick key nothing decides."""


class _Ambiguous:
    """The resolved value of a pick key that bindings of several classes imply."""

    def __init__(self, values: list[Any]) -> None:
        self.values = values


@dataclass
class _Candidate:
    """A binding that maps to settings, pending the check that its configurable is the one AMAGO used."""

    statement: GinStatement
    configurable: GinConfigurable
    row: GinBinding
    chain: tuple[tuple[str, Any], ...]
    """The picks this binding needs: its configurable's, plus a choice's own."""
    explicit: tuple[str, Any] | None
    """The pick key this binding sets itself (a choice, or a setting of a pick key), with its value."""
    settings: list[tuple[str, Any]] = field(default_factory=list)
    """What it sets, picks included."""
    nothing: str | None = None
    """Why it needs no setting (a choice of a class amago uses by itself), or None."""


def _unregistered_value(row: GinBinding, name: str) -> tuple[str, Any] | None:
    """``(class name, value of the row's key)`` when ``name`` (as a gin file writes it) is one of the classes of
    AMAGO the row takes that AMAGO left out of gin (:attr:`GinBinding.unregistered`), else None."""
    for path, value in row.unregistered:
        if name == path or path.endswith(f".{name}"):
            return path.rpartition(".")[2], value
    return None


def _chooser_of(key: str, value: Any) -> GinConfigurable | None:
    """The configurable whose last pick is ``key = value`` (``traj_encoder.attention = "flash"``: FlashAttention)."""
    return next((c for c in ALL_CONFIGURABLES if c.picks and c.picks[-1] == (key, value)), None)


def _show_pick(key: str, value: Any) -> str:
    chosen = _chooser_of(key, value)
    text = f"`{key} = {json.dumps(value)}`"
    return f"{chosen.name} ({text})" if chosen else text


def _contains_reference(value: Any) -> bool:
    if isinstance(value, Reference):
        return True
    if isinstance(value, list | tuple):
        return any(_contains_reference(item) for item in value)
    if isinstance(value, dict):
        return any(_contains_reference(item) for item in value.values())
    return False


def migrate(statements: Iterable[GinStatement]) -> Migration:
    """Translates gin bindings into amago settings (see the module docstring for how picks are decided).

    Later bindings of the same parameter win, as in gin. Every binding that does not become a setting gets a
    :class:`Note`: not an AMAGO configurable, set by the run, no counterpart, no effect in AMAGO either (its class
    was not the one used), ambiguous, or a value that cannot be converted.
    """
    statements = list(statements)
    position = {id(statement): index for index, statement in enumerate(statements)}  # includes sit in place
    macros: dict[str, GinStatement] = {}
    latest: dict[tuple[str | None, str, str], GinStatement] = {}
    for statement in statements:
        if statement.parameter is None:
            macros[statement.target] = statement
            continue
        configurable = lookup(statement.target)
        name = configurable.name if configurable else statement.target
        binding = (statement.scope, name, statement.parameter)
        latest.pop(binding, None)  # a rebinding moves to where it was last written
        latest[binding] = statement
    notes: list[tuple[GinStatement, str, NoteReason]] = []
    scopes = {
        reference.scope
        for statement in [*latest.values(), *macros.values()]
        for reference in _references(statement.value)
        if reference.scope
    }
    candidates: list[_Candidate] = []
    as_amago_does: list[GinStatement] = []
    for statement in latest.values():
        candidate = _candidate(statement, macros, scopes, notes, as_amago_does)
        if candidate is not None:
            candidates.append(candidate)
    resolved = _resolve_picks(candidates)
    settings: dict[str, tuple[Any, GinStatement]] = {}
    translated = 0
    for index, candidate in enumerate(candidates):
        in_subclass = _in_subclass(candidate, resolved)
        if isinstance(in_subclass, tuple):
            notes.append((candidate.statement, in_subclass[1], in_subclass[0]))
            continue
        if in_subclass is not None:
            candidate = candidates[index] = in_subclass
        problem = _inactive_reason(candidate, resolved)
        if problem is not None:
            notes.append((candidate.statement, problem[1], problem[0]))
            continue
        if candidate.nothing is not None:
            notes.append((candidate.statement, f"nothing to set: {candidate.nothing}", "nothing"))
            continue
        translated += 1
        for key, value in candidate.settings:
            previous = settings.get(key)
            if previous is not None and previous[0] != value and previous[1] is not candidate.statement:
                earlier = previous[1]
                notes.append(
                    (
                        candidate.statement,
                        f"sets {key} = {json.dumps(value)} where {earlier.binding} ({earlier.where}) set "
                        f"{json.dumps(previous[0])}; amago has one {key}, and this later binding wins",
                        "overridden",
                    )
                )
            settings[key] = (value, candidate.statement)
    ordered = sorted(notes, key=lambda item: position[id(item[0])])
    return Migration(
        settings=_picks_first({key: value for key, (value, _) in settings.items()}),
        notes=tuple(Note(s.where, s.binding, message, reason) for s, message, reason in ordered),
        translated=translated,
        as_amago_does=tuple(statement.where for statement in as_amago_does),
    )


def _picks_first(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` grouped by section or slot (in the order the file first set each), picks before options.

    Overrides apply in order, and an override of a slot's ``kind`` replaces the options given before it (they
    belonged to the previous kind), so a component's kind must come before its options.
    """
    groups: dict[str, list[str]] = {}
    for key in settings:
        groups.setdefault(key.split(".")[0], []).append(key)

    def rank(key: str) -> int:
        return 0 if key.endswith(".kind") else 1 if key in PICK_KEYS else 2

    ordered = [key for keys in groups.values() for key in sorted(keys, key=rank)]
    return {key: settings[key] for key in ordered}


def _references(value: Any) -> Iterator[Reference]:
    if isinstance(value, Reference):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _references(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _references(item)


def _candidate(
    statement: GinStatement,
    macros: dict[str, GinStatement],
    scopes: set[str],
    notes: list[tuple[GinStatement, str, NoteReason]],
    as_amago_does: list[GinStatement],
) -> _Candidate | None:
    """What one binding would set, or None with a note saying why it sets nothing (or, for a value amago always
    behaves as, an entry in ``as_amago_does``)."""
    configurable = lookup(statement.target)
    if configurable is None:
        notes.append(
            (
                statement,
                f"not a gin configurable of AMAGO {AMAGO_VERSION}: for a class of your own, write it as an amago "
                "plugin (`amago plugin new GROUP NAME`) and give its options in the plugin's config",
                "unknown",
            )
        )
        return None
    row = configurable.parameter(statement.parameter or "")
    if row is None:
        notes.append(
            (
                statement,
                f"AMAGO {AMAGO_VERSION}'s {configurable.name} has no parameter {statement.parameter!r}",
                "no_parameter",
            )
        )
        return None
    if statement.scope is not None and statement.scope not in scopes:
        notes.append(
            (
                statement,
                f"applies only inside the gin scope {statement.scope!r}, which no @{statement.scope}/... reference "
                "of the file opens; amago has no scopes",
                "scope",
            )
        )
        return None
    if row.kind == "run":
        notes.append((statement, f"set by the run, not a setting: {row.note}", "run"))
        return None
    try:
        value = resolve_macros(statement.value, macros)
    except ValueError as exc:
        notes.append((statement, f"not translated: {exc}", "not_translated"))
        return None
    if row.kind == "none":
        if row.fixed and plain(value) == plain(row.fixed[0]):
            as_amago_does.append(statement)
        else:
            notes.append((statement, f"no counterpart in amago: {row.note}", "no_counterpart"))
        return None
    key = row.key or ""
    if row.kind == "choice":
        return _choice_candidate(statement, configurable, row, key, value, notes)
    if _contains_reference(value):
        extra = f" ({row.note})" if row.note else ""
        notes.append(
            (
                statement,
                f"not translated: amago takes a plain value here, not {value}{extra}",
                "not_translated",
            )
        )
        return None
    if row.convert is not None:
        try:
            value = CONVERSIONS[row.convert].apply(value)
        except ValueError as exc:
            notes.append((statement, f"not translated: {exc}", "not_translated"))
            return None
    value = plain(value)
    explicit = (key, value) if key in PICK_KEYS else None
    candidate = _Candidate(statement, configurable, row, configurable.picks, explicit)
    candidate.settings = [*configurable.picks, (key, value)]
    return candidate


def _choice_candidate(
    statement: GinStatement,
    configurable: GinConfigurable,
    row: GinBinding,
    key: str,
    value: Any,
    notes: list[tuple[GinStatement, str, NoteReason]],
) -> _Candidate | None:
    if not isinstance(value, Reference):
        notes.append(
            (
                statement,
                f"not translated: expected a @reference to one of AMAGO's classes, got {value!r}",
                "not_translated",
            )
        )
        return None
    chosen = lookup(value.name)
    if chosen is not None and chosen.name not in row.choices:
        names = ", ".join(row.choices)
        notes.append(
            (
                statement,
                f"not translated: AMAGO's {row.configurable}.{row.parameter} takes one of {names}, not {value}",
                "not_translated",
            )
        )
        return None
    unregistered = _unregistered_value(row, value.name) if chosen is None else None
    if unregistered is not None:
        # a class of AMAGO's that its script registered with gin: it picks like a configurable without options
        _, picked_value = unregistered
        chain = (*configurable.picks, (key, picked_value))
        candidate = _Candidate(statement, configurable, row, chain, chain[-1])
        candidate.settings = list(chain)
        return candidate
    if chosen is None:
        notes.append(
            (
                statement,
                f"not translated: {value} is not one of AMAGO {AMAGO_VERSION}'s configurables; a class of your own "
                "becomes an amago plugin (`amago plugin new GROUP NAME`), chosen by its name",
                "not_translated",
            )
        )
        return None
    if not chosen.picks:
        return _Candidate(statement, configurable, row, configurable.picks, None, nothing=chosen.summary)
    picked = dict(chosen.picks)
    clash = [(k, v) for k, v in configurable.picks if k in picked and picked[k] != v]
    if key not in picked or clash:
        where = ", ".join(f"`{k} = {json.dumps(v)}`" for k, v in chosen.picks)
        notes.append(
            (
                statement,
                f"not translated: {chosen.name} cannot be picked here: in amago it is {where} ({chosen.summary})",
                "not_translated",
            )
        )
        return None
    chain = tuple(dict([*configurable.picks, *chosen.picks]).items())
    candidate = _Candidate(statement, configurable, row, chain, (key, picked[key]))
    candidate.settings = list(chain)
    return candidate


@dataclass(frozen=True)
class _Pick:
    """How a pick key was decided: its value, and the binding that set it (None: AMAGO's default, or implied)."""

    value: Any
    by: GinStatement | None = None


def _resolve_picks(candidates: list[_Candidate]) -> dict[str, _Pick]:
    """The value of every pick key: what the file picks; else the one class whose options the file sets (a
    subclass over its base); else AMAGO's default, when the file sets options of none or of several classes, that
    one among them."""
    resolved: dict[str, _Pick] = {}
    resolving: set[str] = set()

    def satisfied(chain: Iterable[tuple[str, Any]]) -> bool:
        return all(resolve(k).value == v for k, v in chain)

    def resolve(key: str) -> _Pick:
        if key in resolved:
            return resolved[key]
        if key in resolving:  # a pick that depends on itself: nothing decides it
            return _Pick(_Unset())
        resolving.add(key)
        try:
            setters = [
                c
                for c in candidates
                if c.explicit is not None and c.explicit[0] == key and satisfied(_outer(c.chain, key))
            ]
            implying = [
                c.configurable
                for c in candidates
                if key in dict(c.configurable.picks) and satisfied(_outer(c.configurable.picks, key))
            ]
            # a subclass wins over its base: the base's options are what the subclass left to it
            subclassed = {
                ancestor.name
                for configurable in implying
                for ancestor in ancestors(configurable)
                if dict(ancestor.picks).get(key) != dict(configurable.picks)[key]
            }
            implied: list[Any] = []
            for configurable in implying:
                value = dict(configurable.picks)[key]
                if configurable.name not in subclassed and value not in implied:
                    implied.append(value)
            default = PICK_KEYS[key].amago_default
            if setters and setters[-1].explicit is not None:
                pick = _Pick(setters[-1].explicit[1], setters[-1].statement)
            elif len(implied) == 1:
                pick = _Pick(implied[0])
            elif default is not None and (default in implied or not implied):
                pick = _Pick(default)
            else:
                pick = _Pick(_Ambiguous(implied) if implied else _Unset())
        finally:
            resolving.discard(key)
        resolved[key] = pick
        return pick

    for candidate in candidates:
        for key, _ in candidate.chain:
            resolve(key)
    return resolved


def _outer(chain: Iterable[tuple[str, Any]], key: str) -> list[tuple[str, Any]]:
    """The picks of ``chain`` before ``key``: what must hold for a binding to decide ``key``."""
    outer = []
    for k, v in chain:
        if k == key:
            break
        outer.append((k, v))
    return outer


def _pick_line(key: str, value: Any) -> str:
    """The gin binding that makes AMAGO pick ``key = value`` (``TformerTrajEncoder.attention_type = @Flex...``)."""
    chooser = PICK_KEYS[key].chooser
    if chooser is None:
        return ""
    owner, _, parameter = chooser.partition(".")
    row = BY_NAME[owner].parameter(parameter)
    chosen = _chooser_of(key, value)
    if row is not None and row.kind == "choice":
        name = chosen.name if chosen is not None else _unregistered_name(row, value)
        if name is not None:
            return f"`{chooser} = @{name}`"
    return f"`{chooser} = {json.dumps(value)}`"


def _unregistered_name(row: GinBinding, value: Any) -> str | None:
    """The class of :attr:`GinBinding.unregistered` whose reference sets the row's key to ``value``, or None."""
    return next((path.rpartition(".")[2] for path, picked in row.unregistered if picked == value), None)


def _in_subclass(
    candidate: _Candidate, resolved: dict[str, _Pick]
) -> _Candidate | tuple[NoteReason, str] | None:
    """A binding of a base class's parameter where a subclass of it is the class used (``EpsilonGreedy.eps_start``
    with ``TMazeExploration``): the binding as the subclass's setting when the subclass leaves that argument to the
    base, else why it has no effect; None when the class used is not a subclass of the binding's."""
    if candidate.row.kind == "choice":
        return None
    configurable = candidate.configurable
    for key, wanted in candidate.chain:
        pick = resolved.get(key, _Pick(_Unset()))
        if isinstance(pick.value, _Ambiguous | _Unset) or pick.value == wanted:
            continue
        used = _chooser_of(key, pick.value)
        if used is None or configurable not in ancestors(used):
            return None
        parameter = candidate.row.parameter
        how = f"{pick.by.where} picks it" if pick.by is not None else "the file configures it"
        passer = passed_by(used, configurable, parameter)
        if passer is not None:
            instead = f"; bind {passer.name}.{parameter} instead" if passer.parameter(parameter) else ""
            return (
                "passed_by_subclass",
                f"no effect in AMAGO either: the class used is {used.name} ({how}), and {passer.name} passes "
                f"{parameter} to {passer.base} itself{instead}",
            )
        # the base's key, under the subclass's picks: the subclass's component has the base's option (tmaze has
        # egreedy's randomize_eps; tests/compat/test_gin_amago_runs.py resolves it)
        moved = _Candidate(candidate.statement, used, candidate.row, used.picks, None)
        moved.settings = [*used.picks, *candidate.settings[len(candidate.chain) :]]
        return moved
    return None


def _inactive_reason(candidate: _Candidate, resolved: dict[str, _Pick]) -> tuple[NoteReason, str] | None:
    """None when AMAGO used the binding's class (so it becomes settings), else what kind of note, and why it is not
    translated."""
    name = candidate.configurable.name
    for key, wanted in candidate.chain:
        pick = resolved.get(key, _Pick(_Unset()))
        if not isinstance(pick.value, _Ambiguous | _Unset) and pick.value == wanted:
            continue
        line = _pick_line(key, wanted)
        if isinstance(pick.value, _Ambiguous):
            options = " and ".join(_show_pick(key, v) for v in pick.value.values)
            how = (
                f"add `{PICK_KEYS[key].chooser} = @...` to the file" if PICK_KEYS[key].chooser else "keep one"
            )
            return (
                "ambiguous",
                f"not translated: the file sets options of {options} but picks none of them (AMAGO's script "
                f"picked one in Python); {how}",
            )
        if isinstance(pick.value, _Unset):
            rest = candidate.settings[len(candidate.chain) :]
            by_hand = " ".join(f"-o {k}={override_text(v)}" for k, v in rest)
            summary = candidate.configurable.summary
            return "ambiguous", f"not translated: {summary[0].lower()}{summary[1:]} Set it by hand: {by_hand}"
        if pick.by is not None:
            return (
                "inactive",
                f"no effect in AMAGO either: {pick.by.where} picks {_show_pick(key, pick.value)}, so {name} is "
                "not used",
            )
        suggestion = f"; if your script picked {name} in Python, add {line} to the file" if line else ""
        return (
            "inactive",
            f"no effect in AMAGO either: AMAGO uses {_show_pick(key, pick.value)} unless the file picks another"
            f"{suggestion}",
        )
    return None
