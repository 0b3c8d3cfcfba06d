"""Small filesystem helpers shared by the store, the state files and providers.

`AtomicFile` is the one way syslua writes a file that others may read: a temp
file, written (and fsynced when it must be durable), given its mode, then
renamed over the target, so a reader sees the old file or the new one, never
half of one, and a symlink at the target is replaced, never written through.
`atomic_write` is its shortcut for bytes known up front; `atomic_symlink`
swaps a symlink the same way. A process killed mid-write leaves its temp
file behind; `remove_temp_leftovers` takes such files away.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

CHUNK = 1 << 20
WRITE_BUFFER = 128 << 10  # AtomicFile's buffer


def sha256_file(path: str | os.PathLike[str]) -> str:
    import hashlib  # imported on first use: loading OpenSSL costs a run that hashes nothing

    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        # A small file is read whole, with no buffered file object (three
        # system calls fewer) and no chunk-sized buffer for a few bytes.
        want = min(os.fstat(fd).st_size + 1, CHUNK)
        while chunk := os.read(fd, want):
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_filesystems(directories: Iterable[str | os.PathLike[str]]) -> None:
    """Make everything written on the filesystems holding `directories` durable.

    One `syncfs(2)` per filesystem (directories that no longer exist are
    skipped); where syncfs is not available, one system-wide `sync()`.
    """
    seen: dict[int, str] = {}
    for d in directories:
        try:
            dev = os.stat(d).st_dev
        except OSError:
            continue
        seen.setdefault(dev, os.fspath(d))
    syncfs = _syncfs()
    if syncfs is None:
        os.sync()
        return
    for d in seen.values():
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if syncfs(fd) != 0:
                import ctypes

                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), d)
        finally:
            os.close(fd)


def _syncfs() -> Callable[[int], int] | None:
    """libc's syncfs, or None where the C library has none."""
    global _SYNCFS
    if _SYNCFS is False:
        import ctypes  # only an apply that changed something gets here

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _SYNCFS = getattr(libc, "syncfs", None)
        except OSError:
            _SYNCFS = None
    return _SYNCFS  # type: ignore[return-value]


_SYNCFS: Any = False  # not looked up yet


def give_back_memory() -> None:
    """glibc: give the free memory in the heap back to the system. Freed
    blocks stay in the heap otherwise (glibc trims only its top, and only
    past a limit it raises to the largest block freed so far: the
    evaluation's text of every declaration, megabytes), and an apply of
    10,000 files would hold what its evaluation and its waiting blobs no
    longer need at its peak. Where the C library is another, nothing."""
    import ctypes  # an apply that changes something loads it anyway (`_syncfs`)

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def make_dir(
    path: str | os.PathLike[str], mode: int = 0o700, *, parents_mode: int | None = None
) -> Path:
    """Create `path` (and its missing parents) with exactly `mode`, whatever the umask.

    Missing parents get `parents_mode` (default: `mode`). A directory that
    already exists keeps its mode: tightening an existing state dir is
    `state/layout.py`'s job, which says so to the user.
    """
    target = Path(path)
    if target.is_dir():
        return target
    missing = []
    p = target
    while not p.is_dir():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for i, d in enumerate(reversed(missing)):
        want = mode if i == len(missing) - 1 else (mode if parents_mode is None else parents_mode)
        try:
            os.mkdir(d, want)
        except FileExistsError:
            if not d.is_dir():
                raise
            continue  # made by another process meanwhile: its mode is its creator's
        os.chmod(d, want)  # mkdir's mode is filtered by the umask
    return target


def unusable_dir(path: Path, *, writing: bool) -> str | None:
    """Why this process cannot use the directory `path` (None: it can): a
    path on the way that is not a directory, one it cannot search, or, when
    `writing`, the deepest existing directory of `path` (where it would
    create the rest) is one it cannot write. Not there yet is fine for
    reading: there is nothing to read."""
    deepest: Path | None = None  # the deepest directory of `path` that exists
    for p in (*reversed(path.parents), path):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            break
        except PermissionError:
            return f"{p.parent} cannot be searched by {_user()}"
        except OSError as e:
            return f"{p}: {e.strerror}"
        if not stat.S_ISDIR(st.st_mode):
            return f"{p} is not a directory"
        deepest = p
    if deepest is None:
        return None
    if deepest != path and not writing:
        return None  # nothing there to read yet
    need = os.W_OK | os.X_OK if writing else 0
    if deepest == path:
        need |= os.R_OK | os.X_OK
    if _access(deepest, need):
        return None
    owner = os.stat(deepest).st_uid
    whose = f" (owned by {_user(owner)})" if owner != os.geteuid() else ""
    if not _access(deepest, os.R_OK | os.X_OK) and deepest == path:
        return f"{deepest} is not readable by {_user()}{whose}"
    if _read_only_fs(deepest):
        return f"{deepest} is on a read-only file system"
    return f"{deepest} is not writable by {_user()}{whose}"


def _access(path: Path, mode: int) -> bool:
    """Whether this process (its effective ids, where the OS can ask so) may."""
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _user(uid: int | None = None) -> str:
    """The name of user `uid` (default: this process's effective user)."""
    import pwd

    uid = os.geteuid() if uid is None else uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def real_path(path: str) -> str:
    """`os.path.realpath`, for a path someone may be changing as it is read.

    Python's non-strict realpath still raises when a link it has just seen
    is gone before it reads it (another process swapping a directory for a
    link and back): it is asked again, and after that the path is taken as
    it is written, as for a link that does not resolve."""
    for _ in range(3):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    return os.path.abspath(path)


def temp_name(name: str) -> str:
    """A fresh name for a temp file beside `name` (unique per process and
    call, so threads never share one; `remove_temp_leftovers` finds them):
    the pid, then a per-process random start plus a count (no system call
    per name: a clean apply makes one per file)."""
    pid, start, count = _names
    return f".{name}.syslua-{pid}-{(start + next(count)) & 0xFFFFFFFF:08x}"


def _fresh_names() -> tuple[int, int, Iterator[int]]:
    return os.getpid(), int.from_bytes(os.urandom(4), "big"), itertools.count()


def _forked() -> None:
    global _names
    _names = _fresh_names()


_names = _fresh_names()
os.register_at_fork(after_in_child=_forked)  # a child names its temp files with its own pid


def _temp_path(directory: Path, name: str) -> Path:
    return directory / temp_name(name)


# `_temp_path`'s names, and `.<name>.syslua-restore-<pid>` of older versions.
# Compiled by `re` on first use (and cached there), not at every start.
_TEMP_SUFFIX = r"\.syslua-(?:(?P<pid>\d+)-[0-9a-f]{8}|restore-(?P<old>\d+))"


def remove_temp_leftovers(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Remove the temp files a killed or failed writer left beside `paths`.

    Only names that `AtomicFile` and `atomic_symlink` give a temp file of one
    of these paths are considered (`.<name>.syslua-<pid>-<8 hex>`, and
    `.<name>.syslua-restore-<pid>` of older versions), and only when the
    process that made it is this one or no longer runs: another live
    process may be writing it now. Returns the paths removed.
    """
    removed = []
    by_dir: dict[str, set[str]] = {}
    for path in paths:
        directory, name = os.path.split(os.fspath(path))
        if name:
            by_dir.setdefault(directory or ".", set()).add(name)
    for directory, names in by_dir.items():
        try:
            entries = os.listdir(directory)
        except OSError:
            continue  # gone, or not a directory: nothing can be left in it
        for entry in entries:
            owner = _temp_owner(entry, names)
            if owner is None or (owner != os.getpid() and _alive(owner)):
                continue
            leftover = os.path.join(directory, entry)
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                continue
            except OSError:
                continue  # a directory, or not ours to remove: left alone
            removed.append(leftover)
    return removed


def _temp_owner(entry: str, names: set[str]) -> int | None:
    """The pid in `entry` when it is the temp file name of one of `names`."""
    if not entry.startswith("."):
        return None
    marker = entry.rfind(".syslua-")
    if marker <= 1 or entry[1:marker] not in names:
        return None
    m = re.compile(_TEMP_SUFFIX).fullmatch(entry, marker)
    if m is None:
        return None
    return int(m.group("pid") or m.group("old"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


class AtomicFile:
    """A temp file that replaces `target` in one rename when its `with` block ends cleanly.

    The temp file is created with O_EXCL | O_NOFOLLOW and mode 0600 (nobody
    reads it before it is whole and has its final mode), next to the target or
    in `temp_dir` (which must be on the same filesystem). When the block ends
    cleanly it is flushed, fsynced if `durable`, chmodded to `mode`, renamed
    over `target`, and the directory is fsynced if `durable` and `sync_dir`.
    When the block raises, or after `discard()`, the temp file is removed and
    the target is untouched. A caller can set the owner on `fileno()` inside
    the block, and can set `target` there too (content named by its hash).
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | None,
        mode: int = 0o644,
        *,
        durable: bool = True,
        sync_dir: bool = True,
        temp_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.target = Path(target) if target is not None else None
        self.mode = mode
        self.durable = durable
        self.sync_dir = sync_dir
        self.temp_dir = Path(temp_dir) if temp_dir is not None else None
        self.temp: Path | None = None
        self.committed = False
        self._discarded = False
        self._file: BinaryIO | None = None

    def open(self) -> AtomicFile:
        """Create the temp file (the `with` statement does this when the caller did not)."""
        if self._file is None:
            directory = self.temp_dir if self.temp_dir is not None else self._target().parent
            self.temp = _temp_path(
                directory, self.target.name if self.target is not None else "new"
            )
            fd = os.open(
                self.temp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
            )
            # An explicit buffer size: the default asks whether the file is
            # a terminal first (one more system call per file written).
            self._file = os.fdopen(fd, "wb", buffering=WRITE_BUFFER)
        return self

    def write(self, data: bytes) -> int:
        assert self._file is not None, "AtomicFile used outside its with block"
        return self._file.write(data)

    def fileno(self) -> int:
        assert self._file is not None, "AtomicFile used outside its with block"
        return self._file.fileno()

    def discard(self) -> None:
        """Leave the target as it is: the temp file goes when the block ends."""
        self._discarded = True

    def __enter__(self) -> AtomicFile:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None and not self._discarded:
                self._commit()
        finally:
            if not self.committed:
                self._abandon()

    def _abandon(self) -> None:
        """Close and remove the temp file; what it held is thrown away."""
        try:
            if self._file is not None and not self._file.closed:
                self._file.close()  # flushes, and may fail again (a full disk): ignored, the data is dropped
        except OSError:
            pass
        finally:
            if self.temp is not None:
                try:
                    os.unlink(self.temp)
                except FileNotFoundError:
                    pass

    def _target(self) -> Path:
        if self.target is None:
            raise ValueError("AtomicFile: no target to write to")
        return self.target

    def _commit(self) -> None:
        assert self._file is not None and self.temp is not None
        target = self._target()
        f = self._file
        f.flush()
        if self.durable:
            os.fsync(f.fileno())
        os.fchmod(
            f.fileno(), self.mode
        )  # after any chown by the caller, which would clear setuid bits
        f.close()
        os.replace(self.temp, target)
        self.committed = True
        if self.durable and self.sync_dir:
            fsync_dir(target.parent)


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes,
    mode: int = 0o644,
    *,
    durable: bool = True,
) -> None:
    """Replace `path` with `data` atomically, creating its directory if needed (see `AtomicFile`)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with AtomicFile(target, mode, durable=durable) as f:
        f.write(data)


def atomic_symlink(
    path: str | os.PathLike[str], target: str, *, owner: tuple[int, int] | None = None
) -> None:
    """Make `path` a symlink to `target` in one rename: a reader sees the old link or the new one.
    `owner` (uid, gid) is given to the link itself, where this process may."""
    link = Path(path)
    temp = _temp_path(link.parent, link.name)
    os.symlink(target, temp)
    try:
        if owner is not None:
            st = os.lstat(temp)
            if (st.st_uid, st.st_gid) != owner:
                try:
                    os.chown(temp, *owner, follow_symlinks=False)
                except PermissionError:
                    pass  # not root: the owner was ours anyway
        os.replace(temp, link)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


def write_back_soon(fd: int) -> None:
    """Start writing a new file's data to disk now, without waiting for it.

    For bulk data (downloads, unpacked package files) that an apply's commit
    will make durable anyway with `syncfs`: written back while the apply
    goes on, the commit then has less to wait for. On Linux,
    POSIX_FADV_DONTNEED starts writeback of the dirty pages (without waiting)
    and drops from the cache those already clean, so call it once the data
    is no longer about to be read; elsewhere it is a hint at most.
    """
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except (AttributeError, OSError):
        pass
