"""`-vv`: how long each phase of a command took, on stderr.

The phases are evaluate, merge, plan, run and record (those a command
goes through): `mark(name)` ends the phase running and starts `name`;
`finish` ends the last one. `cli.terminal` starts the command's timer;
below the CLI, a phase is marked through a plain callable
(`manifest.resolve.Options.phase`, `execute.outcome.ApplyOptions.phase`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syslua.cli.output import Terminal

_term: Terminal | None = None  # the command's, when it asked for -vv
_phase: tuple[str, float] | None = None


def start(term: Terminal) -> None:
    """A new command: time its phases when its verbosity is 2 or more."""
    global _term, _phase
    _term = term if term.verbosity >= 2 else None
    _phase = None


def mark(name: str) -> None:
    """The phase `name` starts (and the one running ends)."""
    global _phase
    if _term is None:
        return
    now = time.monotonic()
    _end(now)
    _phase = (name, now)


def finish() -> None:
    """The command ends: so does its last phase."""
    global _phase, _term
    if _term is not None:
        _end(time.monotonic())
    _phase, _term = None, None


def _end(now: float) -> None:
    if _term is not None and _phase is not None:
        name, since = _phase
        _term.log(f"Phase {name}: {now - since:.3f}s")


def show_inputs(term: Terminal, inputs: tuple[str, ...]) -> None:
    """`-vv`: the files the evaluation read, one a line."""
    if term.verbosity < 2:
        return
    from syslua.paths import abbreviate

    term.log(f"Evaluation read {len(inputs)} file(s):")
    for path in inputs:
        term.log(f"  {abbreviate(path)}")
