"""The archive provider: download, verify, extract and clean up, journaled.

`converge` runs CCM's steps for a present archive:
1. download into the cache (with a checksum: verified, and never fetched
   again) or a staging directory (without one), with basic auth and the
   declared headers;
2. put it at `name` (missing parents created), owned as declared;
3. unpack the verified download with `syslua.unpack` into a fresh staging
   directory: names that escape, links out of the tree, devices and bombs
   are refused there, before anything reaches `extract_parent`;
4. copy the staged tree into `extract_parent`: every conflict is found
   first, then every path is recorded in the journal (a file it replaces is
   kept in the store first; one sync for them all), then written, never
   through a symlink found on the way;
5. remove the archive file when `cleanup` says so.
The staging directory goes whatever happens.
"""

from __future__ import annotations

import base64
import os
import shutil
import stat
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from syslua import fetch, safe_fs, unpack
from syslua.fsutil import sha256_file
from syslua.manifest.checks import archive_kind
from syslua.manifest.model import Item, thaw
from syslua.resources import file_posix
from syslua.resources.archive import Steps
from syslua.resources.base import Context, ResourceError
from syslua.resources.file_posix import missing_parents
from syslua.state.records import ABSENT, Original, PathAt, PathState
from syslua.state.restore import restore_path

NOTHING = "Nothing was downloaded or extracted."


def request(item: Item) -> tuple[str, dict[str, str]]:
    """The URL to fetch (credentials taken out of it) and the request headers."""
    url = item.get("url")
    headers = dict(thaw(item.get("headers")) or {})
    parts = urllib.parse.urlsplit(url)
    user, password = item.get("username"), item.get("password")
    if parts.username is not None:  # http://user:secret@host/...: basic auth too
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        if user is None:
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
    if user is not None:
        token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
        headers.setdefault("Authorization", f"Basic {token}")
    return url, headers


def _download(item: Item, staging: Path, ctx: Context) -> Path:
    url, headers = request(item)
    progress = ctx.progress(item.key) if ctx.progress else None
    checksum = item.get("checksum")
    if checksum:
        assert ctx.paths is not None
        source = {"fetch": "url", "url": url, "sha256": checksum}
        return fetch.download(
            source, ctx.paths.cache, progress=progress, headers=headers, nothing=NOTHING
        )
    target = staging / "download"
    fetch.download_to(url, target, progress=progress, headers=headers)
    return target


def _chown_fd(fd: int, uid: int, gid: int) -> None:
    st = os.fstat(fd)
    if st.st_uid == uid and st.st_gid == gid:
        return
    try:
        os.fchown(fd, uid, gid)
    except PermissionError:
        raise ResourceError(
            f"cannot set owner {uid}:{gid}: operation not permitted (run as root to change owners)"
        ) from None


def _make_dir(path: str, mode: int, owner: tuple[int, int] | None, ctx: Context) -> None:
    """Make the directory `path` (its parent exists), reached through
    `file_posix.reach`: a link swapped in on the way fails the item."""
    with file_posix.reach(path, None) as (dfd, name):
        ctx.before_change(path)
        try:
            os.mkdir(name, 0o700, dir_fd=dfd)
        except FileExistsError:
            st = safe_fs.lstat_at(dfd, name)
            if st is not None and stat.S_ISDIR(st.st_mode):
                return  # another item running beside this one made it just now
            raise
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        try:
            os.fchmod(fd, mode)
            if owner is not None:
                _chown_fd(fd, *owner)
        finally:
            os.close(fd)


def _copy_file(source: Path, target: str, mode: int, owner: tuple[int, int], ctx: Context) -> None:
    """Write `source`'s content at `target` in one rename, recorded first,
    relative to the descriptor of its directory (`file_posix.store`). Not
    fsynced one by one: the apply syncs the filesystems it wrote on before
    it commits (journal.sync_touched)."""
    file_posix.store(
        target,
        content=None,
        source=str(source),
        uid=owner[0],
        gid=owner[1],
        mode=mode,
        before_change=ctx.before_change,  # a no-op when `before_changes` recorded it
    )


def _place(download: Path, name: str, owner: tuple[int, int], ctx: Context) -> None:
    for parent in missing_parents(name):
        _make_dir(parent, 0o755, None, ctx)
    _copy_file(download, name, 0o644, owner, ctx)


def remove_file(name: str, ctx: Context) -> None:
    if not os.path.lexists(os.path.dirname(name)):
        return  # its directory is gone: nothing to remove
    with file_posix.reach(name, None) as (dfd, base):
        st = safe_fs.lstat_at(dfd, base)
        if st is None:
            return
        if stat.S_ISDIR(st.st_mode):
            raise ResourceError(f"{name} is a directory, not an archive file; left as it is")
        ctx.before_change(name)
        os.unlink(base, dir_fd=dfd)


def _give_owner(name: str, uid: int, gid: int, ctx: Context) -> None:
    """The declared owner for the archive file already at `name`."""
    with file_posix.reach(name, None) as (dfd, base):
        st = safe_fs.lstat_at(dfd, base)
        if st is None or not stat.S_ISREG(st.st_mode) or (st.st_uid, st.st_gid) == (uid, gid):
            return
        ctx.before_change(name)
        fd = os.open(base, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        try:
            _chown_fd(fd, uid, gid)
        finally:
            os.close(fd)


def converge(item: Item, todo: Steps, uid: int, gid: int, ctx: Context) -> None:
    name = item.key
    assert ctx.store is not None
    staging = ctx.store.staging_dir("archive-")
    try:
        source = Path(name)
        if todo.download:
            source = _download(item, staging, ctx)
            _place(source, name, (uid, gid), ctx)
        elif todo.owner and os.path.lexists(os.path.dirname(name)):
            _give_owner(name, uid, gid, ctx)
        if todo.extract:
            tree = staging / "tree"
            tree.mkdir()
            kind = archive_kind(name) or "tar.gz"
            limit = unpack.DEFAULT_MAX_UNPACK if ctx.max_unpack is None else ctx.max_unpack
            try:
                unpack.unpack(source, tree, kind, max_unpack=limit)
            except unpack.UnpackError as e:
                raise ResourceError(f"{e}; nothing was extracted") from None
            _install(tree, item.get("extract_parent"), (uid, gid), ctx)
        if todo.cleanup:
            remove_file(name, ctx)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _install(tree: Path, dest: str, owner: tuple[int, int], ctx: Context) -> None:
    """Copy the staged tree into `dest`: every conflict is found first, then
    every path is recorded (one sync for all), then written, parents first."""
    parents = missing_parents(dest + "/x")
    if not parents and not os.path.isdir(dest):  # a symlink to a directory is the user's choice
        raise ResourceError(f"extract_parent {dest} is not a directory")
    todo = _layout(tree, dest)
    # A link on the way that may not be followed fails the item now, before
    # anything is recorded as about to change.
    with file_posix.reach(parents[0] if parents else os.path.join(dest, "x"), None):
        pass
    ctx.before_changes([*parents, *(target for _, _, target in todo)])
    for parent in parents:
        _make_dir(parent, 0o755, owner if parent == dest else None, ctx)
    for kind, staged, target in todo:
        if kind == "link":
            file_posix.make_link(
                target,
                os.readlink(staged),
                uid=owner[0],
                gid=owner[1],
                before_change=ctx.before_change,
            )
        elif kind == "dir":
            _make_dir(target, stat.S_IMODE(os.lstat(staged).st_mode) | 0o700, owner, ctx)
        else:
            mode = stat.S_IMODE(os.lstat(staged).st_mode)
            _copy_file(Path(staged), target, mode, owner, ctx)


def _layout(tree: Path, dest: str) -> list[tuple[str, str, str]]:
    """(kind, staged path, target) for what the staged tree adds to `dest`,
    parents first; a directory already there is left out. Refuses, before
    anything is written, a symlink where the archive has a directory (writing
    through it could land anywhere) and a directory in the way of a file."""
    out = []
    for root, dirs, files in os.walk(tree):
        dirs.sort()
        rel_root = os.path.relpath(root, tree)
        out_root = dest if rel_root == "." else os.path.join(dest, rel_root)
        for entry in sorted(dirs + files):
            staged = os.path.join(root, entry)
            target = os.path.join(out_root, entry)
            mode = os.lstat(staged).st_mode
            real_dir = os.path.isdir(target) and not os.path.islink(target)
            if stat.S_ISDIR(mode):
                if os.path.islink(target):
                    raise ResourceError(
                        f"{target} is a symlink where the archive has a directory; "
                        "extracting through it could write outside extract_parent; "
                        "nothing was extracted"
                    )
                if os.path.lexists(target) and not real_dir:
                    raise ResourceError(
                        f"{target} is a file where the archive has a directory; "
                        "nothing was extracted"
                    )
                if not real_dir:
                    out.append(("dir", staged, target))
            elif real_dir:
                what = "a link" if stat.S_ISLNK(mode) else "a file"
                raise ResourceError(
                    f"{target} is a directory where the archive has {what}; nothing was extracted"
                )
            else:
                out.append(("link" if stat.S_ISLNK(mode) else "file", staged, target))
        # Symlinks to directories are listed in `dirs`: never descend into them.
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return out


def fingerprint(path: str) -> str:
    """What is at `path` now, in one word: `absent`, `dir`, `link:<target>`, `file:<sha256>`."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    if stat.S_ISLNK(st.st_mode):
        return f"link:{os.readlink(path)}"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISREG(st.st_mode):
        return f"file:{sha256_file(path)}"
    return "other"


def put_back(item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]) -> str:
    """Undo what the archive did, for a declaration that is gone: each path it
    wrote that still holds what it wrote gets back what was there before
    (deepest first); a path changed since is left, and said so. Returns
    what was done, for the report."""
    records = {r.path: r.prev for r in map(PathAt.from_json, state.get("records", ()))}
    wrote = dict(state.get("wrote", {}))
    name = item.key
    first = original if isinstance(original, PathState) else PathState(ABSENT)
    if name not in records:  # recorded before the snapshot kept records
        records[name] = first
        wrote[name] = fingerprint(name)
    removed = restored = 0
    notes = []
    store = ctx.store
    assert store is not None
    ctx.before_changes(sorted(records, reverse=True))
    for path in sorted(records, reverse=True):
        prev = first if path == name and first.exists else records[path]
        now = fingerprint(path)
        if path in wrote and now != wrote[path] and not (now == "dir" == wrote[path]):
            notes.append(f"{path}: changed since it was extracted; left in place")
            continue
        if now == "absent" and not prev.exists:
            continue
        note = restore_path(path, prev, store)
        if note:
            notes.append(note)
        elif not prev.exists:
            removed += 1
        else:
            restored += 1
    done = [f"removed {removed} path(s) it wrote"]
    if restored:
        done.append(f"restored {restored} that were there before")
    return "; ".join(done + notes)
