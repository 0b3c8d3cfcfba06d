"""How inputs are resolved: the options alone, in a module of their own.

Every evaluation makes one `InputOptions`, and only a config in the
original's entry form needs `eval/inputs.py` itself (git, the lock, the
cache), which this keeps out of every other start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syslua.eval.inputs import GitFetcher


@dataclass
class InputOptions:
    """How to resolve inputs: the cache, git, and what `sys update` asks for."""

    cache: Path
    git: GitFetcher | None = None
    update: frozenset[str] | None = None  # names to resolve again; empty set: all
    only_inputs: bool = False  # `sys update`: resolve and lock, do not run `setup`
    write_lock: bool = True  # False: `sys update --dry-run`
