"""Evaluation always stops (issue 22, point 7).

`--eval-timeout` and Ctrl-C stop a config between Lua VM instructions (the
prelude's watchdog, and Python's signal handlers it lets run). One C call
that never returns (`string.find` with a pattern that backtracks for ever)
is out of their reach; so is a signal's Python handler, which waits for the
main thread. Evaluation has no side effects, holds no journal, and runs
before the state lock is taken (a lock is an `flock`, which the kernel
drops with the process anyway), so the process may end there at once.

A thread started when Lua first runs (`eval/running.py` calls `start`)
sees signals through `signal.set_wakeup_fd` (the C-level handler writes
there even while the main thread is busy) and, while Lua is running:

1. past the time limit plus `GRACE` (the prelude's own stop had its
   chance), prints the usual "evaluation did not finish" error and exits 2;
2. on a second Ctrl-C or SIGTERM, or `GRACE` after the first one that
   the handler could not act on, prints what the command says when
   interrupted (`signals.farewell`) and exits 130.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from syslua.errors import ConfigError, Interrupted, display_path
from syslua.eval import running

if TYPE_CHECKING:
    import socket

GRACE = 1.0  # seconds: what the prelude's or the handler's own stop gets first
POLL = 0.1
SIGNALS = frozenset((signal.SIGINT, signal.SIGTERM))

Fatal = Callable[[BaseException], int]  # prints the error as `main` does; the exit code


class Watchdog:
    """The thread, the wakeup socket, and what it saw."""

    def __init__(self, fatal: Fatal) -> None:
        self.fatal = fatal
        self.thread: threading.Thread | None = None
        self.closing = threading.Event()
        self.sockets: tuple[socket.socket, socket.socket] | None = None
        self.previous_fd = -1
        self.signals = 0
        self.first_signal = 0.0

    def start(self) -> None:
        """Start watching (once; signals only from the main thread, where they arrive)."""
        if self.thread is not None:
            return
        if threading.current_thread() is threading.main_thread():
            import socket  # here: most commands never run Lua

            read, write = socket.socketpair()
            read.setblocking(False)
            write.setblocking(False)
            try:
                self.previous_fd = signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
            except ValueError:
                read.close()
                write.close()
            else:
                self.sockets = (read, write)
        self.thread = threading.Thread(target=self._watch, name="syslua-eval-watchdog", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.closing.set()
        if self.sockets is not None:
            signal.set_wakeup_fd(self.previous_fd)
            try:
                self.sockets[1].send(b"\0")  # wakes the select now, not at its next poll
            except OSError:
                pass
        if self.thread is not None:
            self.thread.join(timeout=2 * POLL + 1)
        if self.sockets is not None:
            for s in self.sockets:
                s.close()

    def _watch(self) -> None:
        import select

        while not self.closing.is_set():
            if self.sockets is not None:
                ready, _, _ = select.select([self.sockets[0]], [], [], POLL)
                received = self._drain() if ready else b""
            else:
                self.closing.wait(POLL)
                received = b""
            with running.held() as now:
                if now.depth == 0:
                    self.signals = 0  # Lua returned: the handler acts on a signal itself
                    continue
                self._count(received)
                error = self._verdict(now)
                if error is not None:
                    self._end(error)

    def _drain(self) -> bytes:
        assert self.sockets is not None
        try:
            return self.sockets[0].recv(64)
        except OSError:
            return b""

    def _count(self, received: bytes) -> None:
        for signum in received:
            if signum in SIGNALS:
                self.signals += 1
                if self.signals == 1:
                    self.first_signal = time.monotonic()

    def _verdict(self, now: running.Running) -> BaseException | None:
        """What ends the evaluation now, if anything."""
        clock = time.monotonic()
        if self.signals >= 2 or (self.signals == 1 and clock - self.first_signal >= GRACE):
            return Interrupted()
        limit = now.limit
        if limit is not None:
            deadline = max(limit.start + limit.seconds, now.since) + GRACE
            if clock >= deadline:
                return _exceeded(limit.seconds, now.path)
        return None

    def _end(self, error: BaseException) -> None:
        """Say why, then end the process (Lua cannot return meanwhile: `held`)."""
        try:
            code = self.fatal(error)
        except BaseException:
            code = error.exit_code if isinstance(error, (ConfigError, Interrupted)) else 2
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def _exceeded(seconds: float, path: str) -> ConfigError:
    """The time limit's error, for a call that gave no line to name."""
    return ConfigError(
        f"evaluation did not finish within {seconds:g} s (in {display_path(path)}, "
        "inside one call that could not be stopped sooner)",
        hint="Is there an endless loop, or a string pattern that backtracks "
        "(string.find, string.match, string.gsub)? If the config really needs "
        "longer, raise the limit with --eval-timeout SECONDS.",
    )


@contextmanager
def watching(fatal: Fatal) -> Iterator[None]:
    """Around a command: a watchdog starts when Lua first runs, and stops here."""
    dog = Watchdog(fatal)
    previous = running.watcher
    running.watcher = dog.start
    try:
        yield
    finally:
        running.watcher = previous
        dog.close()
