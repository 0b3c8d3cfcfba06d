"""Long human output through a pager on a terminal, as git does.

`paging(term, enabled)` wraps a command whose output can be long (`sys plan
--diff`, `plan -v`, `history`, `snapshot show`, `status -v`, `diff`). When
stdout is a terminal (and not `--json`), the pager is `$SYS_PAGER`, then
`$PAGER`, then `less -FRX` (as a shell command, as git runs its pager); an
empty value or `cat` means none, and so does `--no-pager`. Only stdout goes
to the pager: warnings and errors stay on stderr.

The pager starts at the command's first line of stdout, not before: what
the command prints on stderr while it works (a lock to wait for, a
warning), and a command that prints nothing, never meet it. When the command
ends (normally, with an error or with Ctrl-C) its output is closed and the
pager waited for, Ctrl-C ignored meanwhile (it is the pager's then), so the
terminal is the pager's until it quits, and the command's exit code and
error message come after, as they would without a pager. A pager quit early
(`q` in less) drops the rest of the output; the command goes on to its end.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, TextIO, cast

if TYPE_CHECKING:
    from syslua.cli.output import Terminal

DEFAULT = "less -FRX"
# less and lv read their options from these when the pager is theirs; a
# user's own settings win (git sets the same).
PAGER_ENV = {"LESS": "FRX", "LV": "-c"}


def pager_command() -> str | None:
    """The pager to run, or None: $SYS_PAGER, then $PAGER, then `less -FRX`
    (when less is installed); an empty value or `cat` is no pager."""
    for name in ("SYS_PAGER", "PAGER"):
        value = os.environ.get(name)
        if value is not None:
            break
    else:
        value = DEFAULT if shutil.which("less") else ""
    value = value.strip()
    return None if value in ("", "cat") else value


@contextmanager
def paging(term: Terminal, enabled: bool = True) -> Iterator[None]:
    """Inside, `term`'s stdout goes to the pager, when there is one to use."""
    command = pager_command() if enabled and term.is_tty else None
    if command is None:
        yield
        return
    pipe = _PagerStream(command, term.out)
    previous = term.divert(cast(TextIO, pipe))
    try:
        yield
    finally:
        term.divert(previous)
        pipe.finish()


class _PagerStream(io.TextIOBase):
    """A text stream that starts the pager at its first write and feeds it;
    once the pager has quit, what is written is dropped."""

    def __init__(self, command: str, terminal: IO[str]) -> None:
        super().__init__()
        self.command = command
        self.terminal = terminal  # where output goes if the pager cannot start
        self._encoding = getattr(terminal, "encoding", None) or "utf-8"
        self.proc: subprocess.Popen[bytes] | None = None
        self.broken = False  # the pager quit: the rest is dropped
        self.failed = False  # the pager could not start: output goes to the terminal

    @property
    def encoding(self) -> str:  # type: ignore[override]  # read-only in io, as here
        return self._encoding

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        if self.proc is None and (self.failed or not self._start()):
            return self.terminal.write(text)
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(text.encode(self._encoding, "replace"))
        except (BrokenPipeError, ValueError):
            self.broken = True
        return len(text)

    def flush(self) -> None:
        if self.proc is None or self.broken:
            self.terminal.flush()
            return
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            self.broken = True

    def _start(self) -> bool:
        self.terminal.flush()
        env = {**os.environ, **{k: v for k, v in PAGER_ENV.items() if k not in os.environ}}
        try:
            self.proc = subprocess.Popen(self.command, shell=True, stdin=subprocess.PIPE, env=env)
        except OSError:
            self.failed = True
            return False
        return True

    def finish(self) -> None:
        """Close the pager's input and wait until it quits, Ctrl-C ignored meanwhile."""
        proc = self.proc
        if proc is None:
            return
        assert proc.stdin is not None
        try:
            proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        with _ignoring_interrupts():
            proc.wait()


@contextmanager
def _ignoring_interrupts() -> Iterator[None]:
    """SIGINT ignored inside (it stops the pager's current search, not syslua)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
