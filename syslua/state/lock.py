"""One exclusive lock per state dir, for apply, rollback, gc and recovery.

`flock` on `state/lock`: the kernel releases it when the holder dies, so a
lock whose holder is gone is simply free. The holder writes who it is into
the file (one JSON line: pid, command, whole command line, start time), so a
second process can name it: it fails at once (exit code 3) or, with
`--wait`, says whom it waits for and blocks until the lock is free. The file
is emptied on release; one still naming a process after a crash means
nothing (`sys doctor` says so).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from syslua.errors import LockHeldError, StateConflictError
from syslua.fsutil import make_dir
from syslua.state.layout import PASSAGE, PRIVATE_FILE


class Holder(NamedTuple):
    """Who took the lock, as its file records it."""

    pid: int
    command: str  # `sys apply`
    line: str  # the whole command line: `sys apply laptop.lua`
    started: float | None  # when the command started (epoch seconds)

    def describe(self, *, whole: bool = False) -> str:
        """`pid 123 (sys apply, started 14:02:11)`; `whole`: with the whole command line."""
        what = self.line if whole else self.command
        if self.started is not None:
            what += f", started {time.strftime('%H:%M:%S', time.localtime(self.started))}"
        return f"pid {self.pid} ({what})"


_OLD_FORMAT = re.compile(r"pid (\d+) \((.*)\)")  # written by older versions


def parse_holder(text: str) -> Holder | None:
    text = text.strip()
    if not text:
        return None
    try:
        data = json.loads(text)
        return Holder(
            int(data["pid"]),
            str(data["command"]),
            str(data.get("line") or data["command"]),
            float(data["started"]) if data.get("started") is not None else None,
        )
    except (ValueError, KeyError, TypeError):
        pass
    m = _OLD_FORMAT.fullmatch(text)
    return Holder(int(m.group(1)), m.group(2), m.group(2), None) if m else None


class StateLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def holder_info(self) -> Holder | None:
        """Who the lock file names (the live holder, or the last one, if it died holding it)."""
        try:
            return parse_holder(self.path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return None

    def holder(self) -> str:
        info = self.holder_info()
        if info is not None:
            return info.describe(whole=True)
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return "unknown"
        return text or "unknown"

    def acquire(
        self,
        *,
        wait: bool = False,
        command: str | None = None,
        started: float | None = None,
        on_wait: Callable[[Holder | None], None] | None = None,
    ) -> StateLock:
        """Take the lock, recording `command` (`sys apply`) and when it `started`.
        Held by another process: fail (LockHeldError), or with `wait`, call
        `on_wait` with the holder and block until it is free."""
        make_dir(self.path.parent, PASSAGE, parents_mode=PASSAGE)
        fd = self._open()
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    raise LockHeldError(
                        f"another syslua process holds the state lock: {self.holder()}",
                        hint="Wait for it to finish, or run again with --wait.",
                    ) from None
                if on_wait is not None:
                    on_wait(self.holder_info())
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        line = " ".join(["sys", *sys.argv[1:]])
        record = {
            "pid": os.getpid(),
            "command": command or line,
            "line": line,
            "started": started if started is not None else time.time(),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        self._fd = fd
        return self

    def _open(self) -> int:
        """The lock file, owner-only (it names the commands run), never through a symlink."""
        try:
            fd = os.open(
                self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE
            )
        except OSError as e:
            if e.errno == errno.EISDIR:
                what = "is a directory"
            elif e.errno == errno.ELOOP:
                what = "is a symlink"
            else:
                what = f"cannot be opened ({e.strerror})"
            raise StateConflictError(
                f"the state lock {self.path} {what}; syslua keeps a plain file there",
                hint=f"Move {self.path} out of the way (syslua does not remove it for you) and run again.",
            ) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise StateConflictError(
                f"the state lock {self.path} is not a regular file; syslua keeps a plain file there",
                hint=f"Move {self.path} out of the way (syslua does not remove it for you) and run again.",
            )
        if stat.S_IMODE(st.st_mode) != PRIVATE_FILE:
            os.fchmod(fd, PRIVATE_FILE)  # written by an older version, or another umask
        return fd

    def is_held_by_other(self) -> bool:
        """True when a live process other than us holds the lock."""
        if self._fd is not None:
            return False
        if not self.path.exists():
            return False
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StateLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
