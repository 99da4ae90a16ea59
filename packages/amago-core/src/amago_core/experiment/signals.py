"""Clean stops: the first SIGINT/SIGTERM asks the run to stop after the current step; a second one aborts.

A second signal raises :class:`StopSignalAbort` (a ``KeyboardInterrupt``) that carries the signal's name and the
exit status a shell reports for it (128 + its number: 130 for SIGINT, 143 for SIGTERM), so the CLI exits as a
job scheduler expects and says which signal it was.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

TIME_LIMIT = "max_minutes"
"""``Experiment.stopped_by`` when ``schedule.max_minutes`` ended the run (signals give their names, ``SIGINT``)."""


class StopSignalAbort(KeyboardInterrupt):
    """A second stop signal: abort at once.

    Attributes:
        signal_name: the second signal's name (``SIGTERM``).
        first: the first signal's name.
        exit_code: 128 + the second signal's number (143 for SIGTERM), as shells report a death by it.
    """

    def __init__(self, signal_name: str, first: str):
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.first = first
        self.exit_code = 128 + int(signal.Signals[signal_name])

    def describe(self) -> str:
        """``aborted (Ctrl-C twice).`` or ``aborted (SIGTERM after SIGTERM).``, for the CLI's last line."""
        if self.signal_name == self.first == "SIGINT":
            return "aborted (Ctrl-C twice)."
        return f"aborted ({self.signal_name} after {self.first})."


@contextmanager
def stop_on_signals(on_first: Callable[[str], None], *, announce: bool = True) -> Iterator[None]:
    """While inside, the first SIGINT or SIGTERM calls ``on_first(name)``; the next one aborts at once.

    Only the main thread can own signal handlers; elsewhere (a notebook's worker thread, say) this does nothing
    and signals keep their usual effect. The previous handlers come back on exit.

    Args:
        on_first: called with the signal's name (``"SIGINT"``) the first time one arrives.
        announce: write one line to stderr saying what happens next.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[str] = []

    def handle(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if received:
            # Asked twice: stop waiting for the step to end. A third signal keeps its usual effect.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            raise StopSignalAbort(name, received[0])
        received.append(name)
        if announce:
            sys.stderr.write(
                f"amago: {name} received: stopping after the current step, then saving a checkpoint "
                "(a second Ctrl-C or SIGTERM aborts at once)\n"
            )
        on_first(name)

    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        signal.signal(sig, handle)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class StopState:
    """Whether ``learn()`` should end early, and why: ``request_stop()``, a stop signal, or the time limit.

    Args:
        learn_seconds: seconds the current ``learn()`` has run (None outside it).
        limit_minutes: ``schedule.max_minutes`` (None: no limit), read when checked.
    """

    def __init__(
        self, learn_seconds: Callable[[], float | None], limit_minutes: Callable[[], float | None]
    ) -> None:
        self._learn_seconds, self._limit_minutes = learn_seconds, limit_minutes
        self._requested = False
        self._stopped_by: str | None = None

    @property
    def requested(self) -> bool:
        """Whether the loop ends after the current epoch (a request, or every process agreed on a signal)."""
        return self._requested

    @property
    def stopped_by(self) -> str | None:
        """The signal (``SIGINT``/``SIGTERM``) or :data:`TIME_LIMIT` that ended the run early, if any."""
        return self._stopped_by

    def request(self) -> None:
        """Ends the loop after the current epoch."""
        self._requested = True

    def on_signal(self, name: str) -> None:
        """The first stop signal arrived (the handler :func:`stop_on_signals` is given)."""
        self._stopped_by = name

    def check_time_limit(self) -> None:
        """Stops the run like a signal once ``max_minutes`` of the current ``learn()`` have passed."""
        limit, seconds = self._limit_minutes(), self._learn_seconds()
        if limit is not None and self._stopped_by is None and seconds is not None and seconds >= 60 * limit:
            self._stopped_by = TIME_LIMIT

    def stop_now(self, processes: int) -> bool:
        """True when a stop signal asks the current step to be the last (one process; several processes finish
        the epoch, so that none waits at a barrier for the others). The time limit ends the training loop only:
        the test pass after it runs whole."""
        self.check_time_limit()
        if self._stopped_by == TIME_LIMIT and self._learn_seconds() is None:
            return False
        return self._stopped_by is not None and processes == 1
