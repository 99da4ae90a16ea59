"""One line per error on the command line: what went wrong and what to do; the traceback only when asked for.

`--debug` or ``AMAGO_DEBUG=1`` re-raises instead, with the full traceback. Torch-free at import.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, NoReturn

import typer

from amago_core.cli.output import USAGE_ERROR, fail

DEBUG_ENV = "AMAGO_DEBUG"
RUNTIME_ERROR = 1
"""Exit code of a run that failed after it started (a usage error exits 2)."""
ABORTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as shells report it."""
WRITE_FAILED = 74
"""Exit code of a run stopped because the run folder could not be written (disk full, quota, read-only):
sysexits' EX_IOERR, so a job script can tell "free space and resume" from a failed run (1)."""


DebugFlag = Annotated[bool, typer.Option("--debug", help="Full tracebacks instead of one-line errors.")]
"""Every command's ``--debug`` option."""


def debugging(flag: bool = False) -> bool:
    """True when tracebacks were asked for (``--debug`` or ``AMAGO_DEBUG=1``)."""
    return flag or os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def error_lines(exc: BaseException) -> list[str]:
    """What to print for ``exc``: one line per problem of a config error, else its first line.

    An exception that is not amago's own (a bug, or a library failing) also names its type and how to see more.
    """
    from pydantic import ValidationError

    from amago_core.config.errors import describe_validation_error

    if isinstance(exc, ValidationError):
        return describe_validation_error(exc)
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if _raised_by_amago(exc):
        return [first]
    return [
        f"{type(exc).__name__}: {first} (unexpected{_precision_hint(first)}; rerun with --debug or {DEBUG_ENV}=1 "
        "for the traceback)"
    ]


REDUCED_PRECISION_DTYPES = ("BFloat16", "bfloat16", "Half", "float16")
"""How torch's messages name the reduced-precision dtypes (a kernel missing for one says ``for 'BFloat16'``)."""


def _precision_hint(message: str) -> str:
    """A clause pointing to fp32 when a library's error names a reduced-precision dtype (else nothing)."""
    if any(name in message for name in REDUCED_PRECISION_DTYPES):
        return "; it names a reduced-precision dtype: -o optim.mixed_precision=no trains in fp32"
    return ""


def fail_on_config_error(exc: Exception) -> NoReturn:
    """Exits 2 with one line per problem of a config that could not be loaded or resolved."""
    from pydantic import ValidationError

    from amago_core.config.errors import describe_validation_error

    if isinstance(exc, ValidationError):
        lines = describe_validation_error(exc)
        for line in lines[:-1]:
            sys.stderr.write(f"amago: error: {line}\n")
        fail(lines[-1])
    fail(str(exc))


def _raised_by_amago(exc: BaseException) -> bool:
    """Whether amago's own code raised it: a checked condition whose message already says what to do.

    The exception's type does not tell (amago raises ``FileNotFoundError``, ``ValueError``... with such
    messages); the frame that raised it does: the innermost one of its traceback.
    """
    if type(exc).__module__.startswith("amago"):
        return True
    tb = exc.__traceback__
    module = ""
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        tb = tb.tb_next
    return module.startswith("amago")


@contextmanager
def one_line_errors(
    debug: bool, *, after: Callable[[], str] | None = None, usage: bool = False
) -> Iterator[None]:
    """Turns any exception into ``amago: error: ...`` lines and an exit code (unless debugging).

    Args:
        debug: re-raise instead (the full traceback).
        after: a sentence appended to the last line (e.g. which checkpoint exists); asked for lazily.
        usage: the errors are the user's input (exit 2) rather than a failed run (exit 1).
    """
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt as exc:
        if debug:
            raise
        # A second stop signal (experiment.signals.StopSignalAbort, read by duck typing: importing the
        # experiment package would import torch) says which signal it was and exits 128 + its number.
        describe = getattr(exc, "describe", None)
        message = describe() if callable(describe) else "aborted (Ctrl-C twice)."
        fail(message + _sentence_after(after), code=int(getattr(exc, "exit_code", ABORTED)))
    except Exception as exc:
        if debug:
            raise
        lines = error_lines(exc)
        for line in lines[:-1]:
            sys.stderr.write(f"amago: error: {line}\n")
        fail(lines[-1] + _sentence_after(after), code=USAGE_ERROR if usage else RUNTIME_ERROR)


def _sentence_after(after: Callable[[], str] | None) -> str:
    """``after()``'s sentence with its leading space, or nothing when there is none to add."""
    sentence = after() if after else ""
    return f" {sentence}" if sentence else ""
