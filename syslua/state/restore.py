"""Put a path back the way a journal record says it was.

Used by rollback and crash recovery (through `syslua.execute.undo`) and by
kinds that restore an original they took over. Restoring never deletes
content that is not recorded somewhere: a directory that is not empty is
left in place and reported, not removed.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat

from syslua import safe_fs
from syslua.fsutil import CHUNK
from syslua.state.records import ABSENT, DIR, FILE, LINK, OTHER, PathState
from syslua.state.store import Store


def restore_path(path: str, prev: PathState, store: Store, *, durable: bool = True) -> str | None:
    """Restore one path; returns a note when something was left in place.
    `durable`: a file put back is fsynced; an apply that syncs every
    filesystem it wrote to before its commit record (group commit) says False.

    The path's directory is reached without following a link someone else
    could have put there (`safe_fs`): a rollback never writes through a
    directory swapped for a link. Such a path is left as it is, and said so.
    Missing parents of a path that existed are made again first."""
    if prev.kind not in (ABSENT, OTHER):
        _make_parents(os.path.dirname(path))
    try:
        with safe_fs.at(path) as (dfd, name):
            return _restore_at(dfd, name, path, prev, store, durable)
    except safe_fs.UnsafePath as e:
        return f"{path}: left as it is: {e}"
    except FileNotFoundError:
        if prev.kind == ABSENT:
            return None  # its directory is gone too
        raise


def _make_parents(directory: str) -> None:
    """The missing parents of `directory` (each reached safely), as `makedirs` would."""
    missing = []
    d = directory
    while d not in ("/", "") and not os.path.lexists(d):
        missing.append(d)
        d = os.path.dirname(d)
    for d in reversed(missing):
        try:
            with safe_fs.at(d) as (dfd, name):
                os.mkdir(name, 0o755, dir_fd=dfd)
        except (FileExistsError, safe_fs.UnsafePath):
            pass  # made meanwhile, or refused: the restore below says so


def _matches(dfd: int, name: str, prev: PathState, store: Store) -> bool:
    """Is the path already as recorded? (then restoring is skipped)"""
    st = safe_fs.lstat_at(dfd, name)
    if st is None:
        return prev.kind == ABSENT
    kind = prev.kind
    if kind == ABSENT:
        return False
    if kind == LINK:
        return stat.S_ISLNK(st.st_mode) and os.readlink(name, dir_fd=dfd) == prev.target
    same_attrs = (
        stat.S_IMODE(st.st_mode) == prev.mode and st.st_uid == prev.uid and st.st_gid == prev.gid
    )
    if kind == DIR:
        return stat.S_ISDIR(st.st_mode) and same_attrs
    if kind == FILE:
        if not stat.S_ISREG(st.st_mode) or not same_attrs:
            return False
        assert prev.blob is not None
        if st.st_size != store.size(prev.blob):
            return False
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        with os.fdopen(fd, "rb") as f:
            digest = hashlib.sha256()
            while chunk := f.read(CHUNK):
                digest.update(chunk)
        return digest.hexdigest() == prev.blob
    return True


def _clear(dfd: int, name: str) -> None:
    """Remove whatever is there so something else can be put there (never a non-empty dir)."""
    st = safe_fs.lstat_at(dfd, name)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        os.rmdir(name, dir_fd=dfd)  # raises when not empty: callers report it
    else:
        os.unlink(name, dir_fd=dfd)


def _restore_at(
    dfd: int, name: str, path: str, prev: PathState, store: Store, durable: bool = True
) -> str | None:
    if _matches(dfd, name, prev, store):
        return None
    kind = prev.kind
    if kind == ABSENT:
        try:
            _clear(dfd, name)
        except OSError as e:
            if e.errno == errno.ENOTEMPTY:
                return f"{path}: left in place, the directory is not empty"
            raise
        return None
    if kind == OTHER:
        return f"{path}: a special file cannot be restored"
    uid, gid = prev.uid, prev.gid
    assert uid is not None and gid is not None
    st = safe_fs.lstat_at(dfd, name)
    if kind == DIR:
        assert prev.mode is not None
        if st is not None and not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=dfd)
        try:
            os.mkdir(name, 0o700, dir_fd=dfd)
        except FileExistsError:
            pass
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        try:
            os.fchmod(fd, prev.mode)
            safe_fs.give_owner(fd, uid, gid)
        finally:
            os.close(fd)
        return None
    if st is not None and stat.S_ISDIR(st.st_mode):
        try:
            os.rmdir(name, dir_fd=dfd)
        except OSError:
            return f"{path}: left in place, a non-empty directory is where the file was"
    with safe_fs.replacing(dfd, name) as temp:
        if kind == LINK:
            assert prev.target is not None
            os.symlink(prev.target, temp, dir_fd=dfd)
            safe_fs.give_owner_at(dfd, temp, uid, gid)
        else:
            assert prev.blob is not None and prev.mode is not None
            data = store.read(prev.blob)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temp, flags, 0o600, dir_fd=dfd)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                safe_fs.give_owner(fd, uid, gid)
                os.fchmod(fd, prev.mode)
                if durable:
                    os.fsync(fd)  # durable before the journal that recorded it can go
    return None
