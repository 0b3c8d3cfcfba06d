"""How inputs are resolved: the options alone, in a module of their own.

Every evaluation makes one `InputOptions`, and only a config in the
original's entry form needs `eval/inputs.py` itself (git, the lock, the
cache), which this keeps out of every other start.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syslua.eval.inputs import GitFetcher


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
    ) -> None:
        self.cache = cache
        self.git = git
        self.update = update
        self.only_inputs = only_inputs
        self.write_lock = write_lock
