"""One exclusive lock per state dir, for apply, rollback, gc and recovery.

`flock` on `state/lock`: the kernel releases it when the holder dies, so a
lock whose holder is gone is simply free. The holder writes its pid and
command into the file, so a second process can name it: it fails at once
(exit code 3) or, with `--wait`, blocks until the lock is free.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
from pathlib import Path

from syslua.errors import LockHeldError, StateConflictError
from syslua.fsutil import make_dir
from syslua.state.layout import PASSAGE, PRIVATE_FILE


class StateLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def holder(self) -> str:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return "unknown"
        return text or "unknown"

    def acquire(self, *, wait: bool = False, command: str | None = None) -> StateLock:
        make_dir(self.path.parent, PASSAGE, parents_mode=PASSAGE)
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            raise LockHeldError(
                f"another syslua process holds the state lock: {self.holder()}",
                hint="Wait for it to finish, or run again with --wait.",
            ) from None
        cmd = command or " ".join(["sys", *sys.argv[1:]])
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} ({cmd})\n".encode(), 0)
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
