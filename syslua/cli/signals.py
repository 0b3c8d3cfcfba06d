"""SIGINT (Ctrl-C) and SIGTERM while a command runs.

`handling()` installs one handler for both signals around the whole command
(in `main`) and restores the previous handlers afterwards. The handler asks
the command's `Stop` (`syslua.execute.stop`) what a signal may do now:
raise `errors.Interrupted` while nothing has changed yet (exit 130), only
set the flag while an apply changes the machine (it then stops and rolls
back), or, during a rollback or a critical section, say that it is
finishing. Commands reach the `Stop` with `current()`; one that ran a
critical section ends with `stopped_after` (exit 130 when a signal came).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from syslua.errors import Interrupted
from syslua.execute.stop import ABORT, FINISH, FINISHING, HOLD, STILL_ROLLING_BACK, Stop

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_current: Stop | None = None
# What the command says when Ctrl-C stops it before anything changed, where
# that is more than "Interrupted." (`sys apply`: "Apply interrupted. System
# unchanged."); for the watchdog, which ends an evaluation from its thread.
_farewell: Callable[[], int] | None = None


def current() -> Stop:
    """The running command's Stop (a fresh one when no handler is installed)."""
    global _current
    if _current is None:
        _current = Stop()
    return _current


@contextmanager
def handling() -> Iterator[Stop]:
    global _current
    stop = _current = Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop  # signals are delivered to the main thread only
        return

    def handler(signum: int, frame: object) -> None:
        action = stop.request(signum)
        if action == ABORT:
            raise Interrupted()
        if action == FINISH:
            _say(STILL_ROLLING_BACK)
        elif action == HOLD:
            _say(FINISHING)

    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, handler)
    try:
        yield stop
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        _current = None


INTERRUPTED_AFTER = "Interrupted after the change was made: it is kept, not undone."


def stopped_after(code: int) -> int:
    """The exit code of a command whose critical section a signal waited for:
    130, after saying that what it did is kept; otherwise `code`."""
    if _current is None or not _current.requested:
        return code
    _say(INTERRUPTED_AFTER)
    return Interrupted.exit_code


@contextmanager
def farewell(say: Callable[[], int]) -> Iterator[None]:
    """Inside: `say()` prints the command's words for an early interruption
    and returns its exit code."""
    global _farewell
    previous, _farewell = _farewell, say
    try:
        yield
    finally:
        _farewell = previous


def say_interrupted() -> int | None:
    """The command's words for an early interruption, if it has its own: the exit code."""
    return _farewell() if _farewell is not None else None


def _say(text: str) -> None:
    """Write a line at once, past any buffer: the handler may have interrupted
    a write to the same stream, which a buffered write would refuse."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        fd = 2
    try:
        os.write(fd, (text + "\n").encode())
    except OSError:
        pass
