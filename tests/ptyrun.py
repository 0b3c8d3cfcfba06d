"""One way for tests to run a real process on a pseudo-terminal.

`run_in_pty` gives the process a terminal `columns` wide (its stdin, stdout
and stderr), reads everything it shows until it ends, and returns the exit
code and the bytes. A test that must act while the process runs (type an
answer, press Ctrl-C, note when the display started) passes `each`, called
with every chunk read, and with `b""` while nothing comes.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence
from pathlib import Path


class Pty:
    """The running process and its terminal's master side, for `each`."""

    def __init__(self, proc: subprocess.Popen[bytes], master: int) -> None:
        self.proc = proc
        self.master = master
        self.seen = b""  # everything read so far

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())


def run_in_pty(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    cwd: Path,
    columns: int = 100,
    rows: int = 40,
    timeout: float = 60,
    poll: float = 0.05,
    each: Callable[[Pty, bytes], None] | None = None,
) -> tuple[int, bytes, bool]:
    """(exit code, what the terminal got, whether it ended before `timeout`)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    pty = Pty(proc, master)
    deadline = time.monotonic() + timeout
    ended = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], poll)
            if not ready:
                if proc.poll() is not None:
                    ended = True
                    break
                if each is not None:
                    each(pty, b"")
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the process closed its side
                ended = True
                break
            if not data:
                ended = True
                break
            pty.seen += data
            if each is not None:
                each(pty, data)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, pty.seen, ended
