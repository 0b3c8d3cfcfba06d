"""Reach a path's directory without following a link that someone else could have put there.

Every change syslua makes to a managed path (write, rename, chmod, chown,
unlink, and every restore and removal of a rollback or a recovery) is made
through `at(path)`: the directory holding the path, opened component by
component from a trusted top (the home for a path under it, `/` otherwise)
with `O_NOFOLLOW`, so that the change is made with `*at` calls relative to
that directory's descriptor. A directory swapped for a link after it was
looked at cannot redirect the change: the walk holds the directory it
opened, not its name.

A component that is a symlink is followed only when it is trusted:

- it and the directory holding it belong to root or to the user running
  syslua, and no one else may change that directory (no write bit for the
  group or others, or the sticky bit): no one else can have put it there;
- and, while applying, it is a link that planning saw, to the same target
  (`planned`, the item's linked parents when it was planned).

Any other link fails the change (`UnsafePath`): planning saw a directory
there, or another user could have swapped it in.

While an apply runs its items (`cached()`), a directory reached by a walk
that followed no link, through directories no other user may change (owned
by root or this user, no write bit for the group or others), is kept open
for the next change in it: a thousand files in fifty directories are fifty
walks, not a thousand. Before it is used again, an `lstat` of each
component below the top must find a directory, not a link, and the last
one that very directory (the same device and inode: the descriptor holds
it, so its number cannot be reused); a directory replaced, removed or
swapped for a link since, or one above it folded into a repository and
linked back (which leads to the same inode), is walked again, as above.
Only the thread that began the cache uses it.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from syslua.errors import ResourceError
from syslua.fsutil import temp_name
from syslua.paths import abbreviate, home

_WALK = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(ResourceError):
    """A link (or a file) on the way to a path, where none may be: the item
    that wanted the change fails (a ResourceError), nothing else."""


@contextmanager
def at(path: str, planned: Mapping[str, str] | None = None) -> Iterator[tuple[int, str]]:
    """(descriptor of the directory holding `path`, the path's name in it),
    closed afterwards (or kept in the apply's cache, see `cached`)."""
    cut = path.rfind("/") + 1  # os.path.split, without its generic overhead
    directory, name = path[:cut].rstrip("/") or path[:cut], path[cut:]
    cache = _cache
    if cache is not None and cache.owner == threading.get_ident():
        fd, kept = cache.borrow(directory, planned)
        try:
            yield fd, name
        finally:
            if kept is None:
                os.close(fd)
            else:
                cache.give_back(kept)
        return
    fd = open_dir(directory, planned)
    try:
        yield fd, name
    finally:
        os.close(fd)


def open_dir(directory: str, planned: Mapping[str, str] | None = None) -> int:
    """A descriptor (O_PATH) of `directory`, reached without following an
    untrusted link (see the module's docstring)."""
    return _walk(directory, planned)[0]


def _walk(directory: str, planned: Mapping[str, str] | None) -> tuple[int, bool]:
    """`open_dir`, and whether the walk may be kept (`DirCache`): it followed
    no link, and only root or this user may change the directories it
    crossed (an `fstat` each)."""
    top = _top(directory)
    fd = os.open(top, _WALK & ~os.O_NOFOLLOW)  # the home itself: the system's business
    here = top
    keep = True
    try:
        for name in _components(directory, top):
            here = os.path.join(here, name)
            if keep:
                keep = _private(fd)
            try:
                nfd = os.open(name, _WALK, dir_fd=fd)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                nfd = _through_link(fd, name, here, planned)
                keep = False
            os.close(fd)
            fd = nfd
        return fd, keep
    except BaseException:
        os.close(fd)
        raise


def _private(fd: int) -> bool:
    """May only root or this user rename or replace what the directory `fd` holds?"""
    st = os.fstat(fd)
    return st.st_uid in (0, os.geteuid()) and not st.st_mode & 0o022


class _Kept:
    """A directory kept open: its descriptor and identity, and how many
    changes hold it now (a kept directory is closed only when none does)."""

    __slots__ = ("borrows", "dev", "fd", "ino", "retired")

    def __init__(self, fd: int, st: os.stat_result) -> None:
        self.fd, self.dev, self.ino = fd, st.st_dev, st.st_ino
        self.borrows = 0
        self.retired = False


def _still(directory: str, kept: _Kept) -> bool:
    """Is `directory` still the one `kept` holds, reached as the walk reached
    it: every component below the top a directory, not a link (an `lstat`
    each: a directory above it folded into a repository and linked back
    would otherwise lead to the same inode), and the last one that very
    directory (the same device and inode)?"""
    top = _top(directory)
    here = top
    try:
        st = os.stat(top)  # the top itself is followed, as the walk follows it
        for name in _components(directory, top):
            here = os.path.join(here, name)
            st = os.lstat(here)
            if not stat.S_ISDIR(st.st_mode):
                return False
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (kept.dev, kept.ino)


class DirCache:
    """The directories an apply's changes were made in, kept open (see the
    module's docstring). A change may reach another path while it holds
    one (the journal reads what it is about to replace): a directory
    dropped meanwhile (the oldest past `LIMIT`, or one found replaced) is
    closed once nothing holds it, never under a change that uses it."""

    LIMIT = 256  # directories kept at most; the oldest is dropped first

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.kept: dict[str, _Kept] = {}

    def borrow(self, directory: str, planned: Mapping[str, str] | None) -> tuple[int, _Kept | None]:
        """`open_dir(directory)`, and its entry when the cache keeps it: then
        the caller gives it back (`give_back`) instead of closing it."""
        kept = self.kept.get(directory)
        if kept is not None:
            if _still(directory, kept):
                kept.borrows += 1
                return kept.fd, kept
            self._drop(directory)  # replaced, removed or a link now: walked again
        fd, keep = _walk(directory, planned)
        if not keep:
            return fd, None  # through a link, or another user's directory: walked each time
        if len(self.kept) >= self.LIMIT:
            self._drop(next(iter(self.kept)))
        kept = self.kept[directory] = _Kept(fd, os.fstat(fd))
        kept.borrows = 1
        return fd, kept

    def give_back(self, kept: _Kept) -> None:
        kept.borrows -= 1
        if kept.retired and not kept.borrows:
            os.close(kept.fd)

    def _drop(self, directory: str) -> None:
        kept = self.kept.pop(directory)
        kept.retired = True
        if not kept.borrows:
            os.close(kept.fd)

    def close(self) -> None:
        for directory in list(self.kept):
            self._drop(directory)


_cache: DirCache | None = None


@contextmanager
def cached() -> Iterator[None]:
    """Keep the directories reached in this block open for the next change
    in them, in this thread (an apply's run; see the module's docstring)."""
    global _cache
    if _cache is not None:  # nested: the outer block's cache serves
        yield
        return
    _cache = DirCache()
    try:
        yield
    finally:
        cache, _cache = _cache, None
        cache.close()


def _top(directory: str) -> str:
    h = home().rstrip("/")
    if h and (directory == h or directory.startswith(h + "/")):
        return h
    return "/"


def _components(directory: str, top: str) -> list[str]:
    if directory == top:
        return []
    # An absolute path below `top` with nothing to normalise (most): its tail, as
    # `relpath` gives it at a tenth of the cost; anything else through `relpath`.
    start = len(top) if top == "/" else len(top) + 1
    if directory.startswith(top) and directory[start - 1] == "/":
        parts = directory[start:].split("/")
        if "" not in parts and "." not in parts and ".." not in parts:
            return parts
    rel = os.path.relpath(directory, top)
    return [] if rel == "." else rel.split("/")


def _through_link(fd: int, name: str, here: str, planned: Mapping[str, str] | None) -> int:
    """Open the link `name` in `fd` (at `here`) when it is trusted; raise otherwise."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        raise UnsafePath(f"{abbreviate(here)} went away") from None
    if not stat.S_ISLNK(st.st_mode):
        raise UnsafePath(f"{abbreviate(here)} is not a directory")
    target = os.readlink(name, dir_fd=fd)
    if planned is not None and planned.get(here) != target:
        raise UnsafePath(
            f"parent directory {abbreviate(here)} changed into a symlink since planning"
            if here not in planned
            else f"parent directory {abbreviate(here)} is a symlink to {target} now, "
            f"not to {planned[here]} as when planned"
        )
    if not _trusted(fd, st):
        raise UnsafePath(
            f"{abbreviate(here)} is a symlink another user could have made; "
            "syslua does not write through it"
        )
    return os.open(name, _WALK & ~os.O_NOFOLLOW, dir_fd=fd)


@contextmanager
def replacing(dfd: int, name: str) -> Iterator[str]:
    """A fresh temp name beside `name` in the directory `dfd`: what the block
    makes there replaces `name` in one rename when the block ends cleanly,
    and is removed when it raises."""
    temp = temp_name(name)
    try:
        yield temp
        os.rename(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=dfd)
        except FileNotFoundError:
            pass
        raise


def lstat_at(dfd: int, name: str) -> os.stat_result | None:
    """What `name` in `dfd` is (a link itself, not followed); None when nothing is there."""
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def give_owner(fd: int, uid: int, gid: int) -> None:
    """Give the file open as `fd` to uid:gid where this process may (not
    root: it is ours already, as what it replaces was)."""
    try:
        st = os.fstat(fd)
        if st.st_uid != uid or st.st_gid != gid:
            os.fchown(fd, uid, gid)
    except PermissionError:
        pass


def give_owner_at(dfd: int, name: str, uid: int, gid: int) -> None:
    """`give_owner` of `name` in `dfd` itself (a link is not followed)."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if st.st_uid != uid or st.st_gid != gid:
            os.chown(name, uid, gid, dir_fd=dfd, follow_symlinks=False)
    except PermissionError:
        pass


def _trusted(fd: int, link: os.stat_result) -> bool:
    """Could only root or this user have put the link `link` in directory `fd`?"""
    me = os.geteuid()
    holder = os.fstat(fd)
    if link.st_uid not in (0, me) or holder.st_uid not in (0, me):
        return False
    return not holder.st_mode & 0o022 or bool(holder.st_mode & stat.S_ISVTX)
