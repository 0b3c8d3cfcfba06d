"""A live display drawn at most `RATE` times a second, each frame at once.

Rich's own `Live` draws its display again for every line printed above it:
an apply of 500 quick items would draw it 500 times, and a terminal shows
the frames half drawn. `Frames` keeps the lines to print until the next
tick, then writes them and the display in one frame, between the
terminal's synchronized-output marks (DEC private mode 2026: `BEGIN` ...
`END`), which a terminal that knows them uses to show the frame whole and
one that does not ignores. Only ever on a terminal: the reporters that use
it are the terminal's.
"""

from __future__ import annotations

import threading
from typing import Any

RATE = 10  # frames a second, at most
BEGIN, END = "\x1b[?2026h", "\x1b[?2026l"  # synchronized output (DEC mode 2026)


class Frames:
    """`renderable` drawn live on `console`, and lines printed above it
    (`print`), all written on the next tick, `RATE` times a second."""

    def __init__(self, console: Any, renderable: Any) -> None:
        from rich.live import Live

        self.console = console
        self.live = Live(
            renderable,
            console=console,
            transient=True,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.lock = threading.Lock()  # guards `pending` and each frame
        self.pending: list[Any] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._tick, name="syslua-frames", daemon=True)

    def start(self) -> None:
        with self._frame():
            self.live.start(refresh=True)
        self.thread.start()

    def print(self, renderable: Any) -> None:
        """Print above the display, on the next frame."""
        with self.lock:
            self.pending.append(renderable)

    def _tick(self) -> None:
        while not self.done.wait(1 / RATE):
            self.draw()

    def draw(self) -> None:
        """One frame: the lines waiting to be printed, and the display."""
        from rich.console import Group

        with self.lock:
            lines, self.pending = self.pending, []
            with self._frame():
                if lines:
                    self.console.print(Group(*lines))  # the display is drawn again below them
                else:
                    self.live.refresh()

    def stop(self) -> None:
        """The last frame, then the display is gone (what was printed stays)."""
        self.done.set()
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join()
        self.draw()
        with self.lock, self._frame():
            self.live.stop()

    def _frame(self) -> _Synchronized:
        return _Synchronized(self.console)


class _Synchronized:
    """BEGIN before the frame and END after it, both written straight to the
    terminal (rich writes the frame itself when its print returns)."""

    def __init__(self, console: Any) -> None:
        self.file = console.file

    def __enter__(self) -> None:
        self.file.write(BEGIN)

    def __exit__(self, *exc: object) -> None:
        self.file.write(END)
        self.file.flush()
