"""How inputs are resolved: the options alone, in a module of their own.

Every evaluation makes one `InputOptions`, and only a config in the
original's entry form needs `eval/inputs.py` itself (git, the lock, the
cache), which this keeps out of every other start.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    from syslua.eval.inputs import GitFetcher

    # around the write of `syslua.lock`: `sys update` makes it a critical
    # section (a signal waits for the rename; syslua/execute/stop.py)
    Guard = Callable[[], AbstractContextManager[None]]


class InputOptions:
    """How to resolve inputs: the cache, git, and what `sys update` asks for.

    A plain class, not a dataclass: that would cost every start half a
    millisecond to generate methods nothing uses."""

    def __init__(
        self,
        cache: Path,
        git: GitFetcher | None = None,
        update: frozenset[str] | None = None,  # names to resolve again; empty set: all
        only_inputs: bool = False,  # `sys update`: resolve and lock, do not run `setup`
        write_lock: bool = True,  # False: `sys update --dry-run`
        guard: Guard | None = None,
    ) -> None:
        self.cache = cache
        self.git = git
        self.update = update
        self.only_inputs = only_inputs
        self.write_lock = write_lock
        self.guard = guard
