"""Reading AMAGO's gin files without gin: the one parser of ``amago migrate-gin`` and ``amago import-amago``.

:func:`read_gin` reads a file (its includes followed) into :class:`GinStatement` records, one per binding or macro
definition; values are Python literals in which :class:`Reference` (``@name``) and :class:`Macro` (``%NAME``) may
appear, and :func:`resolve_macros` replaces the macros. ``import`` lines are skipped: they load Python modules
that register configurables, and amago has none to load. Standard library only.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Reading gin files
# --------------------------------------------------------------------------------------------------------------

MAX_GIN_DEPTH = 64
"""Deepest a gin value may nest, counting each list, tuple or dict and each ``%MACRO`` followed (AMAGO's configs
nest two or three levels). A file nesting deeper is refused in one line instead of exhausting Python's stack."""
MAX_GIN_VALUE_ITEMS = 100_000
"""Most values one binding may expand to once its ``%MACROS`` are replaced: a macro listing another twice, that
one listing a third twice... doubles at each step, and a few dozen lines would expand past any memory."""
MAX_INCLUDE_DEPTH = 32
"""Deepest chain of ``include`` lines followed (a file including one that includes another...)."""


@dataclass(frozen=True)
class Reference:
    """A gin ``@name`` value: a configurable (``@scope/name`` within a scope; ``@name()`` called).

    Attributes:
        name: as written, module path included (``amago.nets.transformer.FlashAttention``).
        scope: the scope before the name, or None.
        called: written ``@name()``: gin passes what calling it returns instead of the class or function.
    """

    name: str
    scope: str | None = None
    called: bool = False

    def __str__(self) -> str:
        scope = f"{self.scope}/" if self.scope else ""
        return f"@{scope}{self.name}{'()' if self.called else ''}"


@dataclass(frozen=True)
class Macro:
    """A gin ``%NAME`` value: the value of the macro ``NAME = ...``."""

    name: str

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class GinStatement:
    """One binding (or macro definition) of a gin file.

    Attributes:
        source: the file it came from, as given (an include: its resolved path).
        line: its first line there.
        scope: ``scope`` of ``scope/Configurable.param`` (None: unscoped).
        target: the configurable as written (``amago.agent.Agent`` or ``Agent``); a macro's name.
        parameter: the parameter; None for a macro definition.
        value: a Python value, in which :class:`Reference` and :class:`Macro` may appear.
    """

    source: str
    line: int
    scope: str | None
    target: str
    parameter: str | None
    value: Any

    @property
    def where(self) -> str:
        """``file:line``."""
        return f"{self.source}:{self.line}"

    @property
    def binding(self) -> str:
        """The binding's key as a gin file writes it (``scope/Configurable.param``)."""
        scope = f"{self.scope}/" if self.scope else ""
        return f"{scope}{self.target}" + (f".{self.parameter}" if self.parameter else "")


class GinSyntaxError(ValueError):
    """A gin file that cannot be read; ``str()`` is one line naming the file and line."""

    def __init__(self, source: str, line: int, message: str) -> None:
        self.source, self.line, self.message = source, line, message
        super().__init__(f"{source}:{line}: {message}")


_KEY = re.compile(r"^(?:(?P<scope>[A-Za-z_][\w.]*(?:/[A-Za-z_][\w.]*)*)/)?(?P<name>[A-Za-z_][\w.]*)$")
_SKIPPED = (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)


def _logical_lines(text: str, source: str) -> Iterator[list[tokenize.TokenInfo]]:
    """The tokens of each statement of ``text``; brackets continue a statement over lines, as in Python."""
    tokens: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in _SKIPPED:
                continue
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if tokens:
                    yield tokens
                tokens = []
                continue
            if token.type == tokenize.ERRORTOKEN and not token.string.isspace():
                raise GinSyntaxError(source, token.start[0], f"unexpected character {token.string!r}")
            tokens.append(token)
    except tokenize.TokenError as exc:
        line = exc.args[1][0] if len(exc.args) > 1 else text.count("\n") + 1
        first = tokens[0].start[0] if tokens else line
        raise GinSyntaxError(source, first, f"{exc.args[0]} (an unclosed bracket or string?)") from None
    except (IndentationError, SyntaxError) as exc:
        raise GinSyntaxError(source, exc.lineno or 1, exc.msg) from None


def _dotted_name(tokens: list[tokenize.TokenInfo], start: int, *, scoped: bool) -> tuple[str, int]:
    """The name written without spaces from ``tokens[start]`` on (``a.b``, with ``scoped``: ``s/a.b``)."""
    allowed = {".", "/"} if scoped else {"."}
    end = start
    text = ""
    while end < len(tokens):
        token = tokens[end]
        touching = end == start or token.start == tokens[end - 1].end
        if not touching or not (token.type == tokenize.NAME or token.string in allowed):
            break
        text += token.string
        end += 1
    return text, end


def _read_value(tokens: list[tokenize.TokenInfo], source: str) -> Any:
    """A binding's value: Python literals with ``@references`` and ``%MACROS`` anywhere inside them."""
    pieces: list[str] = []
    placeholders: dict[str, Reference | Macro] = {}
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type == tokenize.OP and token.string in ("@", "%"):
            name, end = _dotted_name(tokens, index + 1, scoped=True)
            if not name or end == index + 1 or tokens[index + 1].start != token.end:
                raise GinSyntaxError(source, token.start[0], f"{token.string} must be followed by a name")
            placeholder = f"__gin_value_{len(placeholders)}__"
            if token.string == "%":
                placeholders[placeholder] = Macro(name)
            else:
                called = end + 1 < len(tokens) and tokens[end].string == "(" and tokens[end + 1].string == ")"
                scope, _, bare = name.rpartition("/")
                placeholders[placeholder] = Reference(bare, scope or None, called)
                end += 2 if called else 0
            pieces.append(placeholder)
            index = end
            continue
        pieces.append(token.string)
        index += 1
    text = " ".join(pieces)
    line = tokens[0].start[0]
    if _bracket_depth(tokens) > MAX_GIN_DEPTH:
        raise GinSyntaxError(source, line, _too_deep(f"the value {_clip(text)!r}"))
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise GinSyntaxError(source, line, f"cannot read the value {_clip(text)!r}") from None
    except RecursionError:
        # Python's parser gives up on a chain such as `- - - ... 1` thousands long; its traceback says nothing.
        msg = f"the value {_clip(text)!r} nests more deeply than Python can parse; gin values are literals a few levels deep: fix the line"
        raise GinSyntaxError(source, line, msg) from None
    return _literal(tree.body, placeholders, _Where(source, line, text))


_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")


def _bracket_depth(tokens: list[tokenize.TokenInfo]) -> int:
    """The deepest nesting of brackets among ``tokens``."""
    depth = deepest = 0
    for token in tokens:
        if token.type != tokenize.OP:
            continue
        if token.string in _OPENING:
            depth += 1
            deepest = max(deepest, depth)
        elif token.string in _CLOSING:
            depth -= 1
    return deepest


def _too_deep(what: str) -> str:
    return (
        f"{what} nests more than {MAX_GIN_DEPTH} levels deep (each list, tuple, dict and %MACRO followed is one; "
        "AMAGO's configs nest two or three); flatten it"
    )


@dataclass(frozen=True)
class _Where:
    """The statement a value is read from, for messages: its file, line and value text."""

    source: str
    line: int
    text: str


def _literal(
    node: ast.expr, placeholders: dict[str, Reference | Macro], where: _Where, depth: int = 0
) -> Any:
    """Evaluates a literal (numbers, strings, True/False/None, lists, tuples, dicts) with the placeholders.

    Raises:
        GinSyntaxError: not a literal, or nested more than :data:`MAX_GIN_DEPTH` levels deep.
    """
    if depth > MAX_GIN_DEPTH:
        raise GinSyntaxError(where.source, where.line, _too_deep(f"the value {_clip(where.text)!r}"))
    inner = depth + 1
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in placeholders:
        return placeholders[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _literal(node.operand, placeholders, where, inner)
        if isinstance(operand, int | float) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.List):
        return [_literal(item, placeholders, where, inner) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(item, placeholders, where, inner) for item in node.elts)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {
            _literal(key, placeholders, where, inner): _literal(value, placeholders, where, inner)
            for key, value in zip(node.keys, node.values, strict=True)
            if key is not None
        }
    # The node's own text (ast.unparse would recurse through a node that may be thousands deep).
    text = ast.get_source_segment(where.text, node) or where.text
    msg = f"cannot read the value {_clip(text)!r}: gin values are Python literals, @references and %MACROS"
    raise GinSyntaxError(where.source, where.line, msg)


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def parse_gin(
    text: str,
    source: str = "<gin>",
    include: Callable[[str, str, int], list[GinStatement]] | None = None,
) -> list[GinStatement]:
    """The bindings and macro definitions of gin ``text``, in order; ``include`` lines read through ``include``.

    ``import`` lines are skipped (they load Python modules that register configurables; amago has none to load).

    Args:
        text: the file's text.
        source: its name in messages.
        include: called as ``include(path, source, line)`` for ``include 'path'``; None refuses includes.

    Raises:
        GinSyntaxError: a statement cannot be read, or an include fails; the message names file and line.
    """
    statements: list[GinStatement] = []
    for tokens in _logical_lines(text, source):
        first = tokens[0]
        line = first.start[0]
        if first.type == tokenize.NAME and first.string in ("import", "from"):
            continue
        if first.type == tokenize.NAME and first.string == "include" and len(tokens) > 1:
            if len(tokens) != 2 or tokens[1].type != tokenize.STRING:
                raise GinSyntaxError(source, line, "include takes one quoted path: include 'other.gin'")
            path = ast.literal_eval(tokens[1].string)
            if include is None:
                raise GinSyntaxError(source, line, f"cannot follow include {path!r} here")
            statements.extend(include(path, source, line))
            continue
        equals = next((i for i, token in enumerate(tokens) if token.string == "="), None)
        if equals is None or equals == 0 or equals == len(tokens) - 1:
            msg = "expected a binding `Configurable.parameter = value`, a macro `NAME = value`, an include or an import"
            raise GinSyntaxError(source, line, msg)
        key, end = _dotted_name(tokens, 0, scoped=True)
        match = _KEY.match(key)
        if end != equals or match is None:
            raise GinSyntaxError(
                source,
                line,
                f"cannot read the binding key {_clip(' '.join(t.string for t in tokens[:equals]))!r}",
            )
        name = match["name"]
        target, _, parameter = name.rpartition(".")
        value = _read_value(tokens[equals + 1 :], source)
        if target:
            statements.append(GinStatement(source, line, match["scope"], target, parameter, value))
        else:  # no dot: a macro definition
            statements.append(GinStatement(source, line, match["scope"], name, None, value))
    return statements


def read_gin(path: str | Path) -> list[GinStatement]:
    """Every binding of the gin file at ``path``, its includes followed (relative to the including file's folder,
    then to the working directory, as gin's search path starts there).

    Raises:
        OSError: ``path`` itself cannot be read.
        GinSyntaxError: a statement cannot be read, an include is missing, includes itself or nests more than
            :data:`MAX_INCLUDE_DEPTH` deep, or a value with its ``%MACROS`` replaced nests more than
            :data:`MAX_GIN_DEPTH` levels or expands to more than :data:`MAX_GIN_VALUE_ITEMS` values.
    """
    top = Path(path)
    reading: list[Path] = []

    def read(file: Path, shown: str) -> list[GinStatement]:
        reading.append(file.resolve())
        try:
            return parse_gin(file.read_text(encoding="utf-8"), shown, include)
        finally:
            reading.pop()

    def include(name: str, source: str, line: int) -> list[GinStatement]:
        if len(reading) >= MAX_INCLUDE_DEPTH:
            msg = f"include {name!r}: includes nest more than {MAX_INCLUDE_DEPTH} files deep; include the files from one file instead"
            raise GinSyntaxError(source, line, msg)
        here = reading[-1].parent
        found = next((c for c in (here / name, Path(name)) if c.is_file()), None)
        if found is None:
            raise GinSyntaxError(source, line, f"include {name!r}: no such file next to {source} or here")
        if found.resolve() in reading:
            raise GinSyntaxError(source, line, f"include {name!r} includes itself")
        try:
            return read(found, str(found))
        except (OSError, UnicodeDecodeError) as exc:
            raise GinSyntaxError(source, line, f"include {name!r}: {exc}") from None

    statements = read(top, str(path))
    check_expansion(statements)
    return statements


def check_expansion(statements: list[GinStatement]) -> None:
    """Refuses values that, their ``%MACROS`` replaced, nest too deeply or grow too large to resolve.

    Measured once per macro (a macro used many times is not walked again), and the walk stops as soon as a value
    passes :data:`MAX_GIN_DEPTH`, so that a hostile file can exhaust neither the stack nor memory here.

    Raises:
        GinSyntaxError: naming the statement whose value nests more than :data:`MAX_GIN_DEPTH` levels (each
            container and each macro followed is one) or expands to more than :data:`MAX_GIN_VALUE_ITEMS` values.
    """
    macros = {statement.target: statement for statement in statements if statement.parameter is None}
    measured: dict[str, tuple[int, int]] = {}
    for statement in statements:
        try:
            _measure(statement.value, macros, measured, level=0, resolving=())
        except _TooLarge as exc:
            raise GinSyntaxError(statement.source, statement.line, f"{statement.binding}: {exc}") from None


class _TooLarge(ValueError):
    """A value that nests too deeply or expands to too many values (the message follows the binding's name)."""


def _measure(
    value: Any,
    macros: dict[str, GinStatement],
    measured: dict[str, tuple[int, int]],
    *,
    level: int,
    resolving: tuple[str, ...],
) -> tuple[int, int]:
    """``(levels of nesting below value, values it expands to)``, its macros replaced; ``measured`` caches each
    macro's. Raises :class:`_TooLarge` once ``level`` (the nesting above ``value``) plus its own passes the bound.

    A macro that refers to itself or is never defined counts as one value: :func:`resolve_macros` says what is
    wrong with it.
    """
    if level > MAX_GIN_DEPTH:
        raise _TooLarge(_too_deep("its value, %MACROS replaced,"))
    if isinstance(value, Macro):
        definition = macros.get(value.name)
        if definition is None or value.name in resolving:
            return 0, 1
        if value.name not in measured:
            measured[value.name] = _measure(
                definition.value, macros, measured, level=level + 1, resolving=(*resolving, value.name)
            )
        depth, items = measured[value.name]
        depth += 1
    elif isinstance(value, list | tuple | dict):
        children = list(value.values()) if isinstance(value, dict) else list(value)
        sizes = [
            _measure(child, macros, measured, level=level + 1, resolving=resolving) for child in children
        ]
        depth = 1 + max((child_depth for child_depth, _ in sizes), default=0)
        items = 1 + sum(child_items for _, child_items in sizes)
    else:
        return 0, 1
    if level + depth > MAX_GIN_DEPTH:
        raise _TooLarge(_too_deep("its value, %MACROS replaced,"))
    if items > MAX_GIN_VALUE_ITEMS:
        msg = (
            f"its value, %MACROS replaced, expands to more than {MAX_GIN_VALUE_ITEMS:,} values (a macro that uses "
            "another several times, which uses another several times...); write the values out"
        )
        raise _TooLarge(msg)
    return depth, items


def resolve_macros(
    value: Any, macros: dict[str, GinStatement], seen: tuple[str, ...] = (), *, level: int = 0
) -> Any:
    """``value`` with every :class:`Macro` in it replaced by the value its definition gives (macros of macros too).

    Args:
        value: a binding's value.
        macros: the file's macro definitions by name (:attr:`GinStatement.target` of a statement without a
            parameter).
        seen: the macros being resolved around this one, to catch a macro that refers to itself.
        level: how deeply ``value`` sits in the binding's value (containers and macros followed); past
            :data:`MAX_GIN_DEPTH` it is refused (:func:`read_gin` refuses such files before anything resolves).

    Raises:
        ValueError: a macro refers to itself, is never defined, or is ``gin.REQUIRED``, or the value nests too
            deeply; the message is a phrase that follows the binding's name.
    """
    if level > MAX_GIN_DEPTH:
        raise ValueError(_too_deep("its value, %MACROS replaced,"))
    inner = level + 1
    if isinstance(value, Macro):
        if value.name in seen:
            msg = f"%{value.name} refers to itself"
            raise ValueError(msg)
        if value.name in ("gin.REQUIRED", "REQUIRED"):
            msg = "left as gin.REQUIRED (a value the script must give); amago has nothing to set"
            raise ValueError(msg)
        definition = macros.get(value.name)
        if definition is None:
            msg = f"uses %{value.name}, which the file never defines"
            raise ValueError(msg)
        return resolve_macros(definition.value, macros, (*seen, value.name), level=inner)
    if isinstance(value, list):
        return [resolve_macros(item, macros, seen, level=inner) for item in value]
    if isinstance(value, tuple):
        return tuple(resolve_macros(item, macros, seen, level=inner) for item in value)
    if isinstance(value, dict):
        return {key: resolve_macros(item, macros, seen, level=inner) for key, item in value.items()}
    return value
