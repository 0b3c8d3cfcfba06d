"""The posix file provider: reads file state and does the real work on disk.

Writes are atomic (`fsutil.AtomicFile`): a temp file in the target's
directory is created with a restrictive mode, filled, given its owner and
mode, then renamed over the target (not fsynced one by one: the apply syncs
each filesystem it wrote to before it commits), so a reader never sees half a
file and a symlink at the destination is replaced, never written through.
Every mutation first calls `before_change`, which lets the journal store what
is about to be lost.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO

from syslua import safe_fs
from syslua.fsutil import CHUNK, AtomicFile, real_path
from syslua.resources.base import ResourceError
from syslua.state.stat_index import key

PRESENT, DIRECTORY, ABSENT, LINK, OTHER = "present", "directory", "absent", "link", "other"


@dataclass(frozen=True, slots=True)
class FileState:
    """What is at a path now (the seed's FileMetadata)."""

    path: str
    ensure: str  # present | directory | absent | link | other
    uid: int = -1
    gid: int = -1
    mode: str = ""  # "0644"
    size: int = 0
    link_target: str | None = None
    # What `lstat` gave, packed as the stat index packs it (`state/stat_index`):
    # a later `lstat` with the same answer finds the same entry, untouched
    # (`unchanged`: the planned status is reused when the item runs), and the
    # index compares it with what it recorded. Not compared: two states of
    # the same kind and attributes are equal.
    stat_key: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def exists(self) -> bool:
        return self.ensure != ABSENT


def unchanged(path: str, state: FileState) -> bool:
    """Is `path` still what `state` read: absent then and now, or the same
    `lstat` (`stat_key`)? One system call: the cheap check that a status read
    while planning still holds when the item runs."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return not state.exists
    except OSError:  # a parent is not a directory now (an earlier item made it a file)
        return False
    return state.stat_key is not None and key(st) == state.stat_key


def linked_parents(
    path: str, home: str, seen: dict[str, str | None] | None = None
) -> tuple[tuple[str, str], ...]:
    """The parent directories of `path` that are symlinks, with their targets,
    outermost first. Under `home`, only those below it count (a home reached
    through a symlink is the system's business); elsewhere every one but `/`.
    `seen` caches answers by directory across calls (one plan's worth)."""
    top = home if path.startswith(home.rstrip("/") + "/") else "/"
    out = []
    parent = parent_of(path)
    while parent and parent != top and parent != "/":
        target = seen.get(parent, "") if seen is not None else ""
        if target == "":
            try:
                target = os.readlink(parent)
            except OSError:  # not a link, or gone
                target = None
            if seen is not None:
                seen[parent] = target
        if target is not None:
            out.append((parent, target))
        parent = parent_of(parent)
    return tuple(reversed(out))


def parent_of(path: str) -> str:
    """`os.path.dirname(path)` of a str, without its generic overhead (a
    clean apply asks it a few times per file)."""
    head = path[: path.rfind("/") + 1]
    return head.rstrip("/") or head


def same_entry(a: str, b: str) -> bool:
    """Do `a` and `b` name the same directory entry once every directory on
    the way to it is resolved (`..` included, as the kernel does)? The last
    component is not followed: a link to a link is not the link it points to."""
    return _located(a) == _located(b)


def _located(path: str) -> str:
    head, name = os.path.split(path)
    if name in ("", ".", ".."):
        return real_path(path)
    return os.path.join(real_path(head or "."), name)


def points_to(path: str, link_target: str | None, target: str) -> bool:
    """Does the link at `path`, to `link_target`, point where a link to
    `target` would: the same text, or (either one relative, read from the
    link's directory) the same entry (`same_entry`)? stow's
    `../dotfiles/bash/.bashrc` points to the same file as the absolute path
    a config declares, and is kept as it is."""
    if link_target is None:
        return False
    if link_target == target:
        return True
    here = os.path.dirname(path)
    return same_entry(os.path.join(here, link_target), os.path.join(here, target))


def status(path: str, _again: int = 2) -> FileState:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return FileState(path, ABSENT)
    except NotADirectoryError:
        return FileState(path, ABSENT)
    except PermissionError as e:
        raise ResourceError(f"cannot read {path}: permission denied") from e
    mode = f"{stat.S_IMODE(st.st_mode):04o}"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            if not _again:
                raise
            return status(path, _again - 1)  # changed between the two calls: look again
        return FileState(path, LINK, st.st_uid, st.st_gid, mode, st.st_size, target, key(st))
    if stat.S_ISDIR(st.st_mode):
        kind = DIRECTORY
    elif stat.S_ISREG(st.st_mode):
        return FileState(path, PRESENT, st.st_uid, st.st_gid, mode, st.st_size, None, key(st))
    else:
        kind = OTHER
    return FileState(path, kind, st.st_uid, st.st_gid, mode, st.st_size, None, key(st))


def read_small(path: str, size: int) -> bytes:
    """The whole content of a small file, with the fewest system calls."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size + 1)
    finally:
        os.close(fd)


def same_content(a: str, b: str, size: int | None = None) -> bool:
    """Byte-for-byte equality of two files of the same size."""
    if size is not None and size <= CHUNK:
        return read_small(a, size) == read_small(b, size)
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            ca, cb = fa.read(CHUNK), fb.read(CHUNK)
            if ca != cb:
                return False
            if not ca:
                return True


Planned = Mapping[str, str] | None  # the item's linked parents when planned (`safe_fs`)


@contextmanager
def reach(path: str, planned: Planned) -> Iterator[tuple[int, str]]:
    """The directory holding `path`, reached safely (`safe_fs.at`), and the
    path's name in it; a link on the way that may not be followed fails the
    item."""
    try:
        with safe_fs.at(path, planned) as found:
            yield found
    except safe_fs.UnsafePath as e:
        raise ResourceError(str(e)) from None


def _set_attrs_at(dfd: int, name: str, uid: int, gid: int, mode: int) -> None:
    """Owner and mode of the directory or file `name` in `dfd`, never through
    a link: the inode is opened first (O_PATH, no read permission needed),
    then changed through /proc's name for that descriptor."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    try:
        st = os.fstat(fd)
        if stat.S_ISLNK(st.st_mode):
            raise ResourceError(f"{name} turned into a symlink while it was changed")
        proc = f"/proc/self/fd/{fd}"
        if st.st_uid != uid or st.st_gid != gid:
            try:
                os.chown(proc, uid, gid)
            except PermissionError as e:
                raise ResourceError(
                    f"cannot set owner {uid}:{gid}: operation not permitted "
                    "(run as root to change owners)"
                ) from e
        if stat.S_IMODE(st.st_mode) != mode:
            os.chmod(proc, mode)
    finally:
        os.close(fd)


def _set_attrs(fd: int, uid: int, gid: int, mode: int) -> None:
    st = os.fstat(fd)
    _set_owner(fd, uid, gid, st)
    if stat.S_IMODE(st.st_mode) != mode:
        os.fchmod(fd, mode)


def _set_owner(fd: int, uid: int, gid: int, st: os.stat_result) -> None:
    if st.st_uid != uid or st.st_gid != gid:
        try:
            os.fchown(fd, uid, gid)
        except PermissionError as e:
            raise ResourceError(
                f"cannot set owner {uid}:{gid}: operation not permitted (run as root to change owners)"
            ) from e


def _link_owner_at(dfd: int, name: str, uid: int, gid: int) -> None:
    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    if st.st_uid != uid or st.st_gid != gid:
        try:
            os.chown(name, uid, gid, dir_fd=dfd, follow_symlinks=False)
        except PermissionError as e:
            raise ResourceError(
                f"cannot set owner {uid}:{gid}: operation not permitted (run as root to change owners)"
            ) from e


def store(
    path: str,
    *,
    content: bytes | None,
    source: str | None,
    uid: int,
    gid: int,
    mode: int,
    before_change: Callable[[str], None],
    planned: Planned = None,
) -> None:
    """Create or replace the regular file at `path` atomically (its parent exists:
    `create_parents` made it): a temp file in the same directory, filled,
    given its owner and mode, renamed over the path, all relative to the
    directory's descriptor."""
    with reach(path, planned) as (dfd, name):
        if content is None and source is None:
            current = safe_fs.lstat_at(dfd, name)
            if current is not None and stat.S_ISDIR(current.st_mode):
                raise _a_directory(path)
            if current is not None and stat.S_ISREG(current.st_mode):
                # Attributes only: the content is not managed.
                before_change(path)
                _set_attrs_at(dfd, name, uid, gid, mode)
                return
        before_change(path)
        # Neither the file nor its directory is fsynced here (group commit): the
        # journal recorded the old file durably before this, and the apply syncs
        # every filesystem it wrote to once, before its commit record. A
        # directory at the path is not looked for first: the rename refuses
        # to replace one.
        try:
            with safe_fs.replacing(dfd, name) as temp:
                _write_temp(dfd, temp, path, content, source, uid, gid, mode)
        except IsADirectoryError:
            raise _a_directory(path) from None


def _a_directory(path: str) -> ResourceError:
    return ResourceError(f"a directory exists where a file is wanted: {path}")


def _write_temp(
    dfd: int,
    temp: str,
    path: str,
    content: bytes | None,
    source: str | None,
    uid: int,
    gid: int,
    mode: int,
) -> None:
    """Create `temp` in `dfd` and fill it with `content` (or `source`'s),
    owned by uid:gid with `mode`."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temp, flags, 0o600, dir_fd=dfd)
    except PermissionError as e:
        raise ResourceError(f"cannot write in {os.path.dirname(path)}: permission denied") from e
    try:
        if content is not None:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
        elif source is not None:
            with os.fdopen(os.dup(fd), "wb", buffering=CHUNK, closefd=True) as out:
                _copy_source(source, out)
        _set_owner(fd, uid, gid, os.fstat(fd))
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _copy_source(source: str, out: BinaryIO) -> None:
    try:
        with open(source, "rb") as src:
            while chunk := src.read(CHUNK):
                out.write(chunk)
    except FileNotFoundError as e:
        raise ResourceError(f"source file not found: {source}") from e
    except PermissionError as e:
        raise ResourceError(f"cannot read source file {source}: permission denied") from e


def missing_parents(path: str, seen: dict[str, bool] | None = None) -> list[str]:
    """The parent directories of `path` that do not exist, outermost first.
    `seen` (or, without it, the cache of `unchanging`) keeps whether each
    directory exists, for many paths asked while nothing changes."""
    if seen is None and _seen is not None and _seen[0] == threading.get_ident():
        seen = _seen[1]
    missing = []
    p = parent_of(path)
    while p and p != "/":
        there = seen.get(p) if seen is not None else None
        if there is None:
            there = os.path.lexists(p)
            if seen is not None:
                seen[p] = there
        if there:
            break
        missing.append(p)
        p = parent_of(p)
    missing.reverse()
    return missing


_seen: tuple[int, dict[str, bool]] | None = None


@contextmanager
def unchanging() -> Iterator[None]:
    """While nothing changes on disk (an apply recording what its plan
    touches, before it changes anything), `missing_parents` looks at each
    directory once, in this thread."""
    global _seen
    if _seen is not None:
        yield
        return
    _seen = (threading.get_ident(), {})
    try:
        yield
    finally:
        _seen = None


def create_parents(
    path: str,
    attrs: Callable[[str], tuple[int, int, int]],
    *,
    before_change: Callable[[str], None],
    planned: Planned = None,
) -> None:
    """Create the missing parents of `path`, outermost first, each with
    `attrs(directory)` = (uid, gid, mode). A directory another item created
    meanwhile is left as it is."""
    for d in missing_parents(path):
        uid, gid, mode = attrs(d)
        before_change(d)
        with reach(d, planned) as (dfd, name):
            try:
                os.mkdir(name, 0o700, dir_fd=dfd)  # the final mode once the owner is right
            except FileExistsError as e:
                st = safe_fs.lstat_at(dfd, name)
                if st is not None and stat.S_ISDIR(st.st_mode):
                    continue
                raise ResourceError(f"cannot create directory {d}: a file is in the way") from e
            except NotADirectoryError as e:
                raise ResourceError(
                    f"cannot create directory {d}: a parent is not a directory"
                ) from e
            except PermissionError as e:
                raise ResourceError(f"cannot create directory {d}: permission denied") from e
            _set_attrs_at(dfd, name, uid, gid, mode)


def create_directory(
    path: str,
    *,
    uid: int,
    gid: int,
    mode: int,
    before_change: Callable[[str], None],
    planned: Planned = None,
) -> None:
    """Create `path` (its parent exists) or fix its attributes."""
    with reach(path, planned) as (dfd, name):
        st = safe_fs.lstat_at(dfd, name)
        if st is not None and not stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode):
            raise ResourceError(
                f"a file exists where a directory is wanted: {path} (set force = true to replace it)"
            )
        before_change(path)
        if st is not None and stat.S_ISLNK(st.st_mode):
            os.unlink(name, dir_fd=dfd)
        try:
            os.mkdir(name, 0o700, dir_fd=dfd)
        except FileExistsError:
            pass  # already a directory (or made meanwhile): only its attributes change
        except PermissionError as e:
            raise ResourceError(f"cannot create directory {path}: permission denied") from e
        except (FileNotFoundError, NotADirectoryError) as e:
            raise ResourceError(
                f"cannot create directory {path}: a parent is not a directory"
            ) from e
        _set_attrs_at(dfd, name, uid, gid, mode)


def replace_link_with_directory(
    path: str,
    uid: int,
    gid: int,
    mode: int,
    *,
    before_change: Callable[[str], None],
    planned: Planned = None,
) -> None:
    """The symlink at `path` gives way to an empty directory (the journal keeps
    the link). Another item may be doing the same: `unlink` never removes a
    directory, and a directory found made is left as it is."""
    before_change(path)
    with _replacing, reach(path, planned) as (dfd, name):  # the members of one tree race to do it
        st = safe_fs.lstat_at(dfd, name)
        if st is not None and stat.S_ISLNK(st.st_mode):
            os.unlink(name, dir_fd=dfd)
        try:
            os.mkdir(name, 0o700, dir_fd=dfd)
        except FileExistsError:
            return
        except PermissionError as e:
            raise ResourceError(f"cannot create directory {path}: permission denied") from e
        _set_attrs_at(dfd, name, uid, gid, mode)


_replacing = threading.Lock()


def make_link(
    path: str,
    target: str,
    *,
    uid: int,
    gid: int,
    before_change: Callable[[str], None],
    planned: Planned = None,
) -> None:
    """Make `path` a symlink to `target`, replacing a file or link in one rename."""
    with reach(path, planned) as (dfd, name):
        st = safe_fs.lstat_at(dfd, name)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise ResourceError(f"a directory exists where a link is wanted: {path}")
        before_change(path)
        with safe_fs.replacing(dfd, name) as temp:
            try:
                os.symlink(target, temp, dir_fd=dfd)
            except PermissionError as e:
                raise ResourceError(
                    f"cannot write in {os.path.dirname(path)}: permission denied"
                ) from e
            _link_owner_at(dfd, temp, uid, gid)


def replace_with_directory(
    path: str, *, before_change: Callable[[str], None], planned: Planned = None
) -> None:
    """Remove a file in the way of a directory (force = true); the journal keeps it."""
    before_change(path)
    with reach(path, planned) as (dfd, name):
        os.unlink(name, dir_fd=dfd)


def remove_made(path: str, *, directory: bool) -> bool:
    """Remove what syslua made at `path` (a removal with no original to put
    back): a file or link, or a directory only when empty (False then).
    Reached safely (`safe_fs`): a link on the way fails it."""
    try:
        with reach(path, None) as (dfd, name):
            try:
                if directory:
                    os.rmdir(name, dir_fd=dfd)
                else:
                    os.unlink(name, dir_fd=dfd)
            except FileNotFoundError:
                pass
            except OSError as e:
                if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    return False
                raise
    except FileNotFoundError:
        pass  # its directory is gone too
    return True


def remove(
    path: str, *, force: bool, before_change: Callable[[str], None], planned: Planned = None
) -> None:
    if not os.path.lexists(os.path.dirname(path)):
        return  # its directory is gone: nothing to remove
    with reach(path, planned) as (dfd, name):
        st = safe_fs.lstat_at(dfd, name)
        if st is None:
            return
        if not stat.S_ISDIR(st.st_mode):
            before_change(path)
            os.unlink(name, dir_fd=dfd)
            return
        entries = _entries_below(dfd, name)
        if entries and not force:
            raise ResourceError(
                f"directory is not empty: {path} (set force = true to remove it with its contents)"
            )
        # Record the directory before its contents, so whatever is lost can be
        # put back, parents first.
        for root, dirs, files in os.walk(path, topdown=True):
            before_change(root)
            for f in files:
                before_change(os.path.join(root, f))
            for d in dirs:
                if os.path.islink(os.path.join(root, d)):
                    before_change(os.path.join(root, d))
        try:
            if entries:
                shutil.rmtree(name, dir_fd=dfd)  # never follows a link (it checks each)
            else:
                os.rmdir(name, dir_fd=dfd)
        except OSError as e:
            if e.errno == errno.ENOTEMPTY:
                raise ResourceError(f"directory is not empty: {path}") from e
            raise


def _entries_below(dfd: int, name: str) -> list[str]:
    """The entries of directory `name` in `dfd`, not through a link."""
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)


def copy_content(live: str, dest: str, *, mode: int, owner: tuple[int, int] | None) -> None:
    """Write the content of the file `live` to `dest` atomically, with `mode`
    (and `owner`, where this process may): `sys add` taking an edit back."""
    try:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with AtomicFile(dest, mode) as out, open(live, "rb") as src:
            while chunk := src.read(CHUNK):
                out.write(chunk)
            if owner is not None:
                st = os.fstat(out.fileno())
                if (st.st_uid, st.st_gid) != owner:
                    try:
                        os.fchown(out.fileno(), *owner)
                    except PermissionError:
                        pass  # not root: the file is ours, as it was
    except PermissionError as e:
        raise ResourceError(f"cannot write {e.filename or dest}: permission denied") from e
