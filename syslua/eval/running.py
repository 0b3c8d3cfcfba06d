"""Whether Lua code is running now, since when, and under which time limit.

The prelude's watchdog stops a config only between VM instructions; one C
call (`string.find` with a pattern that backtracks for ever) runs on
without any, and Python's signal handlers wait for it too. `run_config`
marks each call into Lua with `lua()`; a watchdog thread outside the
evaluation (the CLI's, `syslua/cli/watchdog.py`) reads `snapshot()` and
ends the process when a call outlives its limit or a Ctrl-C. Evaluation
has no side effects, so ending it there loses nothing; `held()` keeps Lua
from returning while the watchdog decides.

`watcher`, when set, is called each time Lua starts running (the CLI
starts its watchdog there, on the first call only).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syslua.eval.lua import TimeLimit


class Running:
    """The outermost call into Lua in progress (depth 0: none)."""

    __slots__ = ("depth", "since", "limit", "path")

    def __init__(self) -> None:
        self.depth = 0
        self.since = 0.0
        self.limit: TimeLimit | None = None
        self.path = ""


_state = Running()
_lock = threading.Lock()
watcher: Callable[[], None] | None = None


@contextmanager
def lua(limit: TimeLimit | None, path: str) -> Iterator[None]:
    """Lua runs inside: `path` is the file being evaluated."""
    if watcher is not None:
        watcher()
    with _lock:
        _state.depth += 1
        if _state.depth == 1:
            _state.since = time.monotonic()
            _state.limit = limit
            _state.path = path
    try:
        yield
    finally:
        with _lock:
            _state.depth -= 1


@contextmanager
def held() -> Iterator[Running]:
    """The state, with Lua kept from returning until the block ends."""
    with _lock:
        yield _state
