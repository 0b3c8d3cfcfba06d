"""Who may read what syslua keeps: the modes of the store, state and cache (SPEC section 7).

Nothing syslua writes outside the managed paths can be read by another user,
except what installed tools and shells need: package and build trees
(`store/trees/<name>`), the profile (`state/profiles/<id>`, which
`state/profile` points to) and the live env scripts (`state/env.sh`,
`state/env.fish`). Hence:

| what                                                              | mode |
|-------------------------------------------------------------------|------|
| `store/`, `store/trees/`, `state/`, `state/profiles/`             | 0711 (on the way to the exceptions: traversable, not listable) |
| every other directory                                             | 0700 |
| store blobs (`store/objects/<2 hex>/<62 hex>`, `store/packs/*`)   | 0400 |
| snapshots, index, tags, journals, failed journals, bind outputs, the lock, downloads | 0600 |
| trees (the exception)                                             | dirs 0555, files 0444 or 0555 |
| profiles (the exception)                                          | 0755 |
| `env.sh`, `env.fish` (the exception)                              | 0644 |

Every writer creates its files and directories with these modes explicitly
(`fsutil.make_dir`, `AtomicFile(mode=...)`, `os.open(..., mode)` then a
chmod), so the umask never loosens them. `tighten` brings a store, state or
cache dir left readable by an older version (0755 directories, 0644 files,
0444 blobs) to the rule, once: it looks at the directories of the layout on
every command (a few `stat`s), and walks everything only when one of them is
too open.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from syslua.errors import StateError
from syslua.fsutil import make_dir, unusable_dir
from syslua.paths import Paths, root_hint

PASSAGE = 0o711  # a directory on the way to what other users must reach
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600  # snapshots, journals, the lock, bind outputs, downloads
BLOB = 0o400  # store objects: read-only, owner only
PUBLIC_DIR = 0o755  # a profile

OTHERS = 0o077  # group and other bits
OTHERS_X = 0o011  # what a passage may keep of them


def passages(paths: Paths) -> set[Path]:
    return {paths.store, paths.store / "trees", paths.state, paths.profiles}


def _public_parents(paths: Paths) -> set[Path]:
    """Directories whose entries are the exceptions (left as they are)."""
    return {paths.store / "trees", paths.profiles}


def _public_files(paths: Paths) -> set[Path]:
    return {paths.env_sh, paths.env_fish, paths.profile}


JOURNAL_FILE = "journal.jsonl"  # in `Paths.journal` (`state.journal.JOURNAL`)


def journal_left(directory: Path) -> bool:
    """Is a journal left behind in `directory` (or something where it, or the
    directory, should be)? Here, light to import, for the no-change answer
    (`syslua/quick.py`) as for the journal itself (`state.journal.exists`)."""
    return os.path.lexists(directory / JOURNAL_FILE) or (
        os.path.lexists(directory) and (directory.is_symlink() or not directory.is_dir())
    )


def ensure(paths: Paths) -> None:
    """Create the store and state dirs (with their modes) before a command
    writes; a StateError names the path that stops it (`unusable` looked first)."""
    for path in (paths.store, paths.state):
        try:
            make_dir(path, PASSAGE, parents_mode=PASSAGE)
        except OSError as e:
            raise StateError(
                f"cannot create {path}: {e.strerror} ({e.filename})", hint=root_hint()
            ) from e


def unusable(paths: Paths, *, writing: bool) -> str | None:
    """Why syslua cannot use its store, state or cache directory (None: it can),
    looked at before anything is read or written: a path on the way that
    is not a directory (SYSLUA_ROOT under a regular file, or one itself),
    or, when `writing`, a directory it would write in that the user
    cannot write (owned by another user, a read-only file system). A
    directory that is not there yet is fine for reading: there is nothing
    to read."""
    dirs = (("store", paths.store), ("state directory", paths.state), ("cache", paths.cache))
    for what, path in dirs:
        why = unusable_dir(path, writing=writing)
        if why is not None:
            return f"cannot use syslua's {what} {path}: {why}"
    return None


def _watched(paths: Paths) -> list[Path]:
    """What is checked on every command: the directories of the layout, and the lock."""
    return [
        paths.store,
        paths.store / "objects",
        paths.store / "packs",
        paths.store / "trees",
        paths.store / "tmp",
        paths.state,
        paths.snapshots,
        paths.journal,
        paths.failed_journals,
        paths.binds,
        paths.profiles,
        paths.lock,
        paths.cache,
        paths.cache / "downloads",
        paths.cache / "eval",  # the evaluation cache (manifest/evalcache.py)
    ]


def _loose(path: Path, mode: int, is_dir: bool, pass_: set[Path]) -> int | None:
    """The tightened mode of `path`, or None when it is already as tight as the rule."""
    allowed = OTHERS_X if is_dir and path in pass_ else 0
    extra = mode & OTHERS & ~allowed
    return mode & ~extra if extra else None


def too_open(paths: Paths) -> bool:
    """Is any directory of the layout (or the lock) readable by other users?"""
    pass_ = passages(paths)
    for p in _watched(paths):
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        if _loose(p, stat.S_IMODE(st.st_mode), stat.S_ISDIR(st.st_mode), pass_) is not None:
            return True
    return False


def tighten(paths: Paths) -> list[Path]:
    """Bring everything under the store, state and cache dirs to the rule.

    Returns the top directories in which something was too open (empty when
    nothing was, which `too_open` finds without walking).
    """
    if not too_open(paths):
        return []
    return [root for root in (paths.store, paths.state, paths.cache) if _tighten_tree(root, paths)]


def _tighten_tree(root: Path, paths: Paths) -> bool:
    pass_ = passages(paths)
    changed = False
    for path, st in entries(root, paths):
        new = _loose(path, stat.S_IMODE(st.st_mode), stat.S_ISDIR(st.st_mode), pass_)
        if new is not None:
            try:
                os.chmod(path, new)
            except OSError:
                continue  # not ours, or a read-only filesystem: nothing we can do here
            changed = True
    return changed


def entries(root: Path, paths: Paths) -> Iterator[tuple[Path, os.stat_result]]:
    """`root` and everything under it that the rule covers, with its `lstat`:
    not symlinks, not the public exceptions (package and build trees,
    profiles, the env scripts). Nothing when `root` is missing or a link."""
    if not root.is_dir() or root.is_symlink():
        return
    public_parents = _public_parents(paths)
    public_files = _public_files(paths)

    def stat_of(path: Path) -> os.stat_result | None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return None if stat.S_ISLNK(st.st_mode) else st

    found = stat_of(root)
    if found is not None:
        yield root, found
    for dirpath, dirs, files in os.walk(root):
        here = Path(dirpath)
        if here in public_parents:
            dirs[:] = []  # trees and profiles are the exception: readable by all
            continue
        for name in dirs:
            p = here / name
            if (found := stat_of(p)) is not None:
                yield p, found
        for name in files:
            p = here / name
            if p not in public_files and (found := stat_of(p)) is not None:
                yield p, found


def wanted(path: Path, st: os.stat_result, paths: Paths) -> int | None:
    """The mode the rule asks of `path` when it is more open than that, else None."""
    return _loose(path, stat.S_IMODE(st.st_mode), stat.S_ISDIR(st.st_mode), passages(paths))


def watched(paths: Paths) -> list[Path]:
    """The directories of the layout and the lock, as `too_open` looks at them."""
    return _watched(paths)
