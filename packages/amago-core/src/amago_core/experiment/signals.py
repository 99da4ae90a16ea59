"""Clean stops: the first SIGINT/SIGTERM asks the run to stop after the current step; a second Ctrl-C aborts."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals(on_first: Callable[[str], None], *, announce: bool = True) -> Iterator[None]:
    """While inside, the first SIGINT or SIGTERM calls ``on_first(name)``; the next SIGINT aborts at once.

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
            # Asked twice: stop waiting for the step to end.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt(name)
        received.append(name)
        if announce:
            sys.stderr.write(
                f"amago: {name} received: stopping after the current step, then saving a checkpoint "
                "(Ctrl-C again aborts at once)\n"
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
