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
"""

from __future__ import annotations

import errno
import os
import stat
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
    closed afterwards."""
    fd = open_dir(os.path.dirname(path), planned)
    try:
        yield fd, os.path.basename(path)
    finally:
        os.close(fd)


def open_dir(directory: str, planned: Mapping[str, str] | None = None) -> int:
    """A descriptor (O_PATH) of `directory`, reached without following an
    untrusted link (see the module's docstring)."""
    top = _top(directory)
    fd = os.open(top, _WALK & ~os.O_NOFOLLOW)  # the home itself: the system's business
    here = top
    try:
        for name in _components(directory, top):
            here = os.path.join(here, name)
            try:
                nfd = os.open(name, _WALK, dir_fd=fd)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                nfd = _through_link(fd, name, here, planned)
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


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
