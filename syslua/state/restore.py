"""Put a path back the way a journal record says it was.

Used by rollback and crash recovery (through `syslua.execute.undo`) and by
kinds that restore an original they took over. Restoring never deletes
content that is not recorded somewhere: a directory that is not empty is
left in place and reported, not removed.
"""

from __future__ import annotations

import errno
import os
import stat

from syslua.fsutil import AtomicFile, atomic_symlink
from syslua.state.records import ABSENT, DIR, FILE, LINK, OTHER, PathState
from syslua.state.store import Store


def _matches(path: str, prev: PathState, store: Store) -> bool:
    """Is `path` already as recorded? (then restoring is skipped)"""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return prev.kind == ABSENT
    kind = prev.kind
    if kind == ABSENT:
        return False
    if kind == LINK:
        return stat.S_ISLNK(st.st_mode) and os.readlink(path) == prev.target
    same_attrs = (
        stat.S_IMODE(st.st_mode) == prev.mode and st.st_uid == prev.uid and st.st_gid == prev.gid
    )
    if kind == DIR:
        return stat.S_ISDIR(st.st_mode) and same_attrs
    if kind == FILE:
        if not stat.S_ISREG(st.st_mode) or not same_attrs:
            return False
        from syslua.fsutil import sha256_file

        assert prev.blob is not None
        return st.st_size == store.size(prev.blob) and sha256_file(path) == prev.blob
    return True


def _clear(path: str) -> None:
    """Remove whatever is at path so something else can be put there (never a non-empty dir)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISDIR(st.st_mode):
        os.rmdir(path)  # raises when not empty: callers report it
    else:
        os.unlink(path)


def _chown(path: str, uid: int, gid: int) -> None:
    try:
        st = os.lstat(path)
        if st.st_uid != uid or st.st_gid != gid:
            os.chown(path, uid, gid, follow_symlinks=False)
    except PermissionError:
        pass  # not root: the owner was ours anyway


def restore_path(path: str, prev: PathState, store: Store) -> str | None:
    """Restore one path; returns a note when something was left in place."""
    if _matches(path, prev, store):
        return None
    kind = prev.kind
    parent = os.path.dirname(path)
    if kind == ABSENT:
        try:
            _clear(path)
        except OSError as e:
            if e.errno == errno.ENOTEMPTY:
                return f"{path}: left in place, the directory is not empty"
            raise
        return None
    if kind == OTHER:
        return f"{path}: a special file cannot be restored"
    os.makedirs(parent, exist_ok=True)
    uid, gid = prev.uid, prev.gid
    assert uid is not None and gid is not None
    if kind == DIR:
        assert prev.mode is not None
        if os.path.lexists(path) and not os.path.isdir(path) or os.path.islink(path):
            os.unlink(path)
        os.makedirs(path, exist_ok=True)
        os.chmod(path, prev.mode)
        _chown(path, uid, gid)
        return None
    if os.path.isdir(path) and not os.path.islink(path):
        try:
            os.rmdir(path)
        except OSError:
            return f"{path}: left in place, a non-empty directory is where the file was"
    if kind == LINK:
        assert prev.target is not None
        atomic_symlink(path, prev.target, owner=(uid, gid))
        return None
    assert prev.blob is not None and prev.mode is not None
    data = store.read(prev.blob)
    with AtomicFile(path, prev.mode, sync_dir=False) as f:
        f.write(data)
        _chown_fd(f.fileno(), uid, gid)
    return None


def _chown_fd(fd: int, uid: int, gid: int) -> None:
    try:
        st = os.fstat(fd)
        if st.st_uid != uid or st.st_gid != gid:
            os.fchown(fd, uid, gid)
    except PermissionError:
        pass  # not root: the owner was ours anyway
