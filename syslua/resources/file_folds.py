"""Folds: links into the repository on the way to a declared path.

GNU stow links a directory that one package owns as a whole, in one link
(`~/.config/git -> ../../dotfiles/git/.config/git`): a fold. A declared path
below a fold would be written through it, into the repository. It never is:

- A parent directory that is a link whose real path lies inside a declared
  source, the config's directory, or the git work tree either is in, is a
  fold. Before the item writes, the
  fold becomes a real directory whose entries are links to where the fold
  pointed, so everything it showed is still there; each directory on the
  way down to the item's path is unfolded the same way. The entries the
  config declares are then managed as declared.
- Every change is journaled (the link, then each entry made), so an
  interrupted or failed apply puts the fold back; the snapshot records the
  folds an item unfolded, and removing the item (a dropped declaration,
  `sys rollback`, `sys destroy`) folds the directory again once it holds
  nothing but the links the unfolding made.
- A write that would reach the repository through a link that is not a fold
  (the link points above the repository) is refused.
- A fold that already shows what a link tree declares there (each file the
  source file itself, each directory the tree's source directory) needs no
  write: it is kept as the tool made it, its members unchanged through it
  (`file._kept_fold`), and what is seen through it is never an original.

The journal's order matters: the link is recorded before it is replaced and
each entry after the directory exists, so an undo (in reverse) removes the
entries first and then puts the link back; a refold records the entries
first, so undoing it makes the directory before the entries go back in.
"""

from __future__ import annotations

import bisect
import os
import stat
import threading
from collections.abc import Callable, Iterable, Mapping

from syslua import safe_fs
from syslua.fsutil import real_path
from syslua.manifest import tree
from syslua.manifest.model import Manifest
from syslua.paths import abbreviate, home
from syslua.resources.base import ResourceError
from syslua.resources.file_posix import ABSENT, LINK, FileState

DIR_MODE = 0o755
Fold = tuple[str, str]  # a directory that is (or will be) a link, and that link's target

_unfolding = threading.Lock()


class Protected:
    """The real paths that writes never reach through a link: the config's
    directory, every declared source, and the git work trees they are in."""

    def __init__(self, *manifests: Manifest | None) -> None:
        roots: set[str] = set()
        for manifest in manifests:
            if manifest is None:
                continue
            if manifest.config:
                roots.add(os.path.realpath(os.path.dirname(manifest.config)))
            for item in manifest.of_type("file"):
                if item.parent is not None and manifest.get(item.parent) is not None:
                    if manifest.get(item.parent).get("tree"):  # type: ignore[union-attr]
                        continue  # inside its tree's source, which is a root
                if item.get("tree"):  # its source, or each source of joined trees
                    roots.update(os.path.realpath(s) for s in tree.sources(item))
                    continue
                source = item.get("source") or (item.get("target") if item.get("link") else None)
                if source:
                    roots.add(os.path.realpath(source))
        # The repositories they are in (a config kept outside its dotfiles).
        repos: dict[str, str | None] = {}
        for root in list(roots):
            repo = _repository(os.path.dirname(root), repos)
            if repo is not None:
                roots.add(repo)
        self._set(roots)

    @classmethod
    def of(cls, roots: set[str]) -> Protected:
        """Protected exactly `roots` (real paths), and nothing found from a manifest."""
        protected = cls()
        protected._set(roots)
        return protected

    def _set(self, roots: set[str]) -> None:
        self.roots = frozenset(roots)
        self._sorted = sorted(roots)

    def holds(self, real: str) -> bool:
        """Does `real` lie in a protected root, or hold one below it? A link
        whose real path does either shows the repository: nothing is removed
        through it (a stow fold of `~/.local/share` shows the folder above a
        declared source, with the source inside)."""
        if self.covers(real):
            return True
        below = real.rstrip("/") + "/"
        # The first root at or after `below` in sorted order is the one that
        # starts with it, if any does (thousands of sources: no scan).
        at = bisect.bisect_left(self._sorted, below)
        return at < len(self._sorted) and self._sorted[at].startswith(below)

    def covers(self, real: str) -> bool:
        path = real
        while True:
            if path in self.roots:
                return True
            up = os.path.dirname(path)
            if up == path:
                return False
            path = up


def _repository(path: str, seen: dict[str, str | None]) -> str | None:
    """The top of the git work tree `path` is in (a directory holding
    `.git`), neither the home itself nor `/`; None when there is none."""
    top = home()
    walked = []
    found: str | None = None
    while path not in ("/", "") and path != top:
        if path in seen:
            found = seen[path]
            break
        walked.append(path)
        if os.path.lexists(os.path.join(path, ".git")):
            found = path
            break
        path = os.path.dirname(path)
    for p in walked:
        seen[p] = found
    return found


def entry_target(target: str, name: str) -> str:
    """The target of the link that shows entry `name` of a fold linking to
    `target`, made one directory deeper than the fold's own link."""
    return os.path.join(target, name) if os.path.isabs(target) else os.path.join("..", target, name)


def chain(path: str, linked: Iterable[Fold], protected: Protected) -> tuple[Fold, ...]:
    """The folds to unfold, outermost first, before `path` is written: the
    first linked parent that is a fold, then every directory below it on the
    way to `path` (each a link once its parent is unfolded). Raises when the
    write would reach a protected path through a link that is no fold."""
    linked = tuple(linked)
    if not linked:
        return ()
    parent = os.path.dirname(path)
    for link, target in linked:
        if not protected.holds(real_path(link)):
            continue
        out = [(link, target)]
        here, here_target = link, target
        for name in os.path.relpath(parent, link).split(os.sep):
            if name == ".":
                break
            down = os.path.join(here, name)
            if not os.path.isdir(down):  # through the fold: it is in the repository
                break
            here_target = entry_target(here_target, name)
            here = down
            out.append((here, here_target))
        return tuple(out)
    if protected.covers(os.path.join(real_path(parent), os.path.basename(path))):
        link = linked[-1][0]
        raise ResourceError(
            f"it would be written into {abbreviate(real_path(path))} through the link "
            f"{abbreviate(link)}; syslua never writes into the repository through a link"
        )
    return ()


def state_after(path: str, folds: tuple[Fold, ...]) -> FileState:
    """What `path` will be once its folds are unfolded: a link to what the
    fold showed there, or nothing."""
    inner, target = folds[-1]
    name = os.path.relpath(path, inner)
    if os.sep in name or not os.path.lexists(path):
        return FileState(path, ABSENT)
    st = os.lstat(inner)  # the fold's own link (or the directory it became)
    return FileState(
        path, LINK, link_target=entry_target(target, name), uid=st.st_uid, gid=st.st_gid
    )


def notes(folds: tuple[Fold, ...]) -> list[str]:
    return (
        [f"{abbreviate(folds[0][0])}: a link into the repository (stow?); will become a directory"]
        if folds
        else []
    )


def unfold(
    folds: tuple[Fold, ...],
    before_change: Callable[[str], None],
    before_changes: Callable[[list[str]], None],
) -> None:
    """Replace each fold, outermost first, with a directory of links to what
    it showed (the directory's mode is what the fold showed, its owner the
    link's). One another item unfolded already is left as it is; one that
    now links elsewhere fails the item. Every change is made relative to the
    fold's directory, reached safely (`safe_fs`)."""
    with _unfolding:
        for link, target in folds:
            try:
                with safe_fs.at(link) as (dfd, name):
                    if not _unfold_at(dfd, name, link, target, before_change, before_changes):
                        return
            except safe_fs.UnsafePath as e:
                raise ResourceError(str(e)) from None


def _unfold_at(
    dfd: int,
    name: str,
    link: str,
    target: str,
    before_change: Callable[[str], None],
    before_changes: Callable[[list[str]], None],
) -> bool:
    """Unfold the fold `name` in `dfd`; False when it is gone (the rest is
    made as missing parents are)."""
    try:
        now = os.readlink(name, dir_fd=dfd)
    except OSError:
        st = safe_fs.lstat_at(dfd, name)
        return st is not None and stat.S_ISDIR(st.st_mode)  # unfolded already, or gone
    if now != target:
        raise ResourceError(
            f"{abbreviate(link)} links to {now} now, not to {target} as when planned"
        )
    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    try:  # what the fold shows: read through it, never written through
        names, mode = sorted(os.listdir(link)), stat.S_IMODE(os.stat(link).st_mode)
    except FileNotFoundError:  # a dangling fold (its package is gone): nothing to show
        names, mode = [], DIR_MODE
    before_change(link)
    os.unlink(name, dir_fd=dfd)
    os.mkdir(name, 0o700, dir_fd=dfd)
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    try:
        os.fchmod(fd, mode)
        safe_fs.give_owner(fd, st.st_uid, st.st_gid)
        entries = [os.path.join(link, n) for n in names]
        before_changes(entries)
        for entry in names:
            os.symlink(entry_target(target, entry), entry, dir_fd=fd)
            safe_fs.give_owner_at(fd, entry, st.st_uid, st.st_gid)
    finally:
        os.close(fd)
    return True


def refold(link: str, target: str, before_change: Callable[[str], None]) -> str | None:
    """Put the fold at `link` back when its directory holds nothing but links
    the unfolding made (one it lacks, the fold shows again). Otherwise it
    stays a directory, with a link made for each entry of the fold it lacks
    (nothing the fold showed disappears), and a note says why. Every change
    is made relative to the directory, reached safely (`safe_fs`)."""
    try:
        with safe_fs.at(link) as (dfd, name):
            return _refold_at(dfd, name, link, target, before_change)
    except safe_fs.UnsafePath as e:
        return f"{abbreviate(link)} stays a directory: {e}"


def _refold_at(
    dfd: int, name: str, link: str, target: str, before_change: Callable[[str], None]
) -> str | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return None  # a link already, or gone
    try:
        names = os.listdir(fd)
        real = os.path.join(os.path.dirname(link), target)
        if not os.path.isdir(real) and names:
            return (
                f"{abbreviate(link)} stays a directory: the link it was pointed to {target}, "
                "which is gone"
            )
        for entry in names:
            try:
                ours = os.readlink(entry, dir_fd=fd) == entry_target(target, entry)
            except OSError:
                ours = False
            if not ours:
                _relink_missing(fd, link, target, real, names, before_change)
                return (
                    f"{abbreviate(link)} stays a directory: it holds {entry}, "
                    "which syslua does not manage"
                )
        for entry in names:
            before_change(os.path.join(link, entry))
        before_change(link)
        for entry in names:
            os.unlink(entry, dir_fd=fd)
        st = os.fstat(fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dfd)
    os.symlink(target, name, dir_fd=dfd)
    safe_fs.give_owner_at(dfd, name, st.st_uid, st.st_gid)
    return None


def _relink_missing(
    fd: int,
    link: str,
    target: str,
    real: str,
    names: list[str],
    before_change: Callable[[str], None],
) -> None:
    st = os.fstat(fd)
    for entry in sorted(set(os.listdir(real)) - set(names)):
        before_change(os.path.join(link, entry))
        os.symlink(entry_target(target, entry), entry, dir_fd=fd)
        safe_fs.give_owner_at(fd, entry, st.st_uid, st.st_gid)


def unfolded(path: str, was_link: Callable[[str], str | None]) -> list[Fold]:
    """The folds above `path` this apply unfolded, outermost first: the
    outermost directory whose journal record (`was_link`) says it was a
    link, then each directory below it that the fold showed (a directory of
    the repository, unfolded in turn; one it did not show was created)."""
    parents = []
    parent = os.path.dirname(path)
    while parent not in ("/", ""):
        parents.append(parent)
        parent = os.path.dirname(parent)
    out: list[Fold] = []
    for parent in reversed(parents):
        if not out:
            target = was_link(parent)
            if target is not None:
                out.append((parent, target))
            continue
        outer, outer_target = out[-1]
        name = os.path.basename(parent)
        if os.path.islink(parent) or not os.path.isdir(
            os.path.join(os.path.dirname(outer), outer_target, name)
        ):
            break
        out.append((parent, entry_target(outer_target, name)))
    return out


def known_above(path: str, known: Mapping[str, str]) -> list[Fold]:
    """The folds of `known` (directory -> its link's target) above `path`,
    outermost first, that are directories now (unfolded)."""
    out = []
    parent = os.path.dirname(path)
    while parent not in ("/", ""):
        target = known.get(parent)
        if target is not None and os.path.isdir(parent) and not os.path.islink(parent):
            out.append((parent, target))
        parent = os.path.dirname(parent)
    return list(reversed(out))
