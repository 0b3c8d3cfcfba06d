"""Ctrl-C and SIGTERM during a run: what a request to stop may do, and when.

The CLI's signal handler calls `Stop.request` and does what it answers. What
a signal may do depends on what the run is doing, which the apply says here:

1. Nothing changed yet (evaluation, waiting for the lock, planning): the
   handler raises `errors.Interrupted` at once; there is nothing to undo.
2. Changing the machine (`changing()`, from just before the journal is
   begun): a signal only sets the flag. The scheduler starts no new item,
   the callbacks registered with `on_request` run at once (a Runner kills
   the process groups of running commands), and the apply then undoes
   everything it did.
3. Rolling back (`rolling_back()`, also during crash recovery): a signal
   changes nothing; the handler tells the user the rollback is finishing.
4. A short change that must not stop half-way (`critical()`: `sys add`
   copying files, `sys gc`, `sys snapshot delete`): a signal only sets the
   flag, the handler says the change is finishing, and the command ends
   right after it (exit 130; `syslua.cli.signals.stopped_after`). Also
   `sys update` writing `syslua.lock` and `sys pull` fast-forwarding.

Everything here runs in the main thread (Python runs signal handlers
there), and the flag is a plain attribute, so worker threads can read it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ABORT = "abort"  # raise Interrupted now
DEFER = "defer"  # set the flag; the apply stops and rolls back
FINISH = "finish"  # rolling back: say it is finishing
HOLD = "hold"  # in a critical section: say it finishes first
FINISHING = "Finishing what cannot stop half-way; it stops right after."

STILL_ROLLING_BACK = "Still rolling back; it will finish shortly."


class Stop:
    """Whether Ctrl-C or SIGTERM asked this run to stop."""

    def __init__(self) -> None:
        self.signum: int | None = None  # the first signal received
        self.count = 0
        self.mode = ABORT
        self._callbacks: list[Callable[[], None]] = []

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def request(self, signum: int) -> str:
        """A signal arrived: record it, run the callbacks, and say what the
        handler must do: `ABORT` (raise), `DEFER` (nothing more) or `FINISH`
        (tell the user the rollback is finishing)."""
        if self.signum is None:
            self.signum = signum
        self.count += 1
        for callback in list(self._callbacks):
            callback()
        if self.mode == DEFER and self.count > 1:
            return FINISH  # the rollback is about to start
        return self.mode

    def on_request(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run `callback` on every signal (and at once if one already came);
        returns the function that unregisters it."""
        self._callbacks.append(callback)
        if self.requested:
            callback()

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    def changing(self) -> None:
        """From now on the machine may change: a signal stops the run in order."""
        if self.mode == ABORT:
            self.mode = DEFER

    @contextmanager
    def critical(self) -> Iterator[None]:
        """A short change that a signal must not stop half-way: one that comes
        during it waits for its end (`requested` then says so)."""
        pause_point("before-critical")  # a signal here still stops at once
        previous = self.mode
        if previous == ABORT:
            self.mode = HOLD
        try:
            pause_point("critical")
            yield
        finally:
            self.mode = previous

    @contextmanager
    def rolling_back(self) -> Iterator[None]:
        """A rollback (or crash recovery) that a signal must not stop."""
        previous = self.mode
        self.mode = FINISH
        try:
            yield
        finally:
            self.mode = previous if previous != DEFER else FINISH


PAUSE_AT = "SYSLUA_PAUSE_AT"


def pause_point(name: str) -> None:
    """For the signal tests: when SYSLUA_PAUSE_AT is `NAME:DIR` and names this
    point, create DIR/paused and wait (at most 60 s) until DIR/release exists,
    so that a test can send a real signal at this exact point. It costs one
    environment lookup."""
    spec = os.environ.get(PAUSE_AT)
    if not spec or spec.partition(":")[0] != name:
        return
    where = Path(spec.partition(":")[2])
    (where / "paused").touch()
    deadline = time.monotonic() + 60
    while not (where / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
