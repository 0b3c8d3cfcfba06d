"""The profile: a tree of symlinks into package trees, swapped in atomically.

`state/profile` is a symlink to `state/profiles/<id>/`, which holds `bin/`
(one link per declared `bin`, named by its base name) and, when packages
ship them, `share/` and `man/` (links to their files). A new profile is
built in a fresh directory and swapped in by renaming a new symlink over
the old one, so a shell never sees a half-built PATH. Each swap is recorded
in the journal, so rollback points the profile back where it was; package
trees stay in the store until `sys gc`. Within one apply, a profile that
apply swapped in itself grows in place when packages only add links
(`update`): the profile from before the apply is never changed.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from syslua.fsutil import atomic_symlink, make_dir
from syslua.paths import Paths
from syslua.state.layout import PASSAGE, PUBLIC_DIR

lock = threading.RLock()  # held while a profile is rebuilt and swapped


def current_target(paths: Paths) -> str | None:
    try:
        return os.readlink(paths.profile)
    except (FileNotFoundError, OSError):
        return None


def links_of(tree: Path, bins: Iterable[str]) -> dict[str, Path]:
    return {os.path.basename(b): tree / b for b in bins}


def points_at(link: Path, target: Path) -> bool:
    """Does `link` lead to `target`? One readlink when it is the link `build`
    made (its text is the target's path); otherwise both paths resolved."""
    try:
        if os.readlink(link) == str(target):
            return True
    except OSError:
        pass
    return os.path.realpath(link) == os.path.realpath(target)


def _make(paths: Paths, dirs: list[str], links: dict[str, str]) -> Path:
    """A new profile directory with `dirs` and `links`, not yet in use (under `lock`).

    Each link the profile in use already has, with the same target, is
    hard-linked from it rather than made again: a new inode costs far more
    than a new name on a busy filesystem."""
    current = _current_dir(paths)
    make_dir(paths.profiles, PASSAGE, parents_mode=PASSAGE)
    root = paths.profiles / f"p-{os.urandom(6).hex()}"
    # Readable by everyone, like the trees it links to: other users' shells use it.
    make_dir(root, PUBLIC_DIR)
    new, old = str(root), None if current is None else str(current)
    for rel in dirs:
        os.mkdir(f"{new}/{rel}")
        os.chmod(f"{new}/{rel}", PUBLIC_DIR)  # mkdir's mode is filtered by the umask
    for rel, target in links.items():
        if old is not None and _same_link(f"{old}/{rel}", target):
            try:
                os.link(f"{old}/{rel}", f"{new}/{rel}", follow_symlinks=False)
                continue
            except OSError:
                pass  # a filesystem without hard links to symlinks: a new one
        os.symlink(target, f"{new}/{rel}")
    return root


# The profile directory the running apply built and swapped in last: the
# apply (a token living as long as it: its store), the directory, and its
# directories and links.
_grown: tuple[object, str, list[str], dict[str, str]] | None = None


def update(
    paths: Paths,
    packages: list[tuple[Path, list[str]]],
    note: Callable[[dict[str, Any]], None] | None,
    apply: object | None = None,
) -> None:
    """Make the profile link exactly `packages`, recording the old one with `note`.

    A new directory is built and swapped in, except where it would only add
    to a profile that this same apply (`apply`, an object that lives as long
    as it) built and swapped in itself: then the links are added to it in
    place. Each addition is atomic, so a shell sees the packages before or
    after it, and nothing before this apply is changed: undoing the apply's
    swap still returns the profile to what it was. Packages installed in
    parallel take one directory and one swap instead of one per wave of
    installs (and as many directories to delete after the commit).
    """
    global _grown
    dirs, links = _plan(packages)
    with lock:
        grown = _grown
        current = _current_dir(paths)
        if (
            apply is not None
            and grown is not None
            and grown[0] is apply
            and current is not None
            and os.path.normpath(current) == grown[1]
            and _only_adds(grown[2], grown[3], dirs, links)
        ):
            have_dirs, have_links = set(grown[2]), grown[3]
            for rel in dirs:
                if rel not in have_dirs:
                    os.mkdir(f"{grown[1]}/{rel}")
                    os.chmod(f"{grown[1]}/{rel}", PUBLIC_DIR)
            for rel, target in links.items():
                if rel not in have_links:
                    os.symlink(target, f"{grown[1]}/{rel}")
            _grown = (apply, grown[1], dirs, links)
            return
        root = _make(paths, dirs, links)
        swap(paths, root, note)
        _grown = None if apply is None else (apply, os.path.normpath(root), dirs, links)


def _only_adds(
    old_dirs: list[str], old_links: dict[str, str], dirs: list[str], links: dict[str, str]
) -> bool:
    """Does the profile (`dirs`, `links`) keep every directory and link of the old one?"""
    return set(old_dirs) <= set(dirs) and all(links.get(k) == v for k, v in old_links.items())


def _plan(packages: list[tuple[Path, list[str]]]) -> tuple[list[str], dict[str, str]]:
    """The directories (parents first) and links (path -> target) of a profile for `packages`."""
    dirs = ["bin"]
    links: dict[str, str] = {}
    for tree, bins in sorted(packages, key=lambda p: str(p[0])):
        for name, target in links_of(tree, bins).items():
            links.setdefault(
                f"bin/{name}", str(target)
            )  # the first package providing a name keeps it
        where = str(tree)
        for sub in ("share", "man"):
            for rel, files in _listing(tree, sub):
                if rel not in dirs:
                    dirs.append(rel)
                for f in files:
                    links.setdefault(f"{rel}/{f}", f"{where}/{rel}/{f}")
    return dirs, links


def _current_dir(paths: Paths) -> Path | None:
    target = current_target(paths)
    return None if target is None else paths.profile.parent / target


def _same_link(path: str, target: str) -> bool:
    try:
        return os.readlink(path) == target
    except OSError:
        return False


# A store tree never changes once it is in the store, so its listing is read once.
_LISTINGS: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}


def _listing(tree: Path, sub: str) -> list[tuple[str, list[str]]]:
    """(directory relative to the tree, its files) for `sub` of `tree`, parents first."""
    key = (str(tree), sub)
    known = _LISTINGS.get(key)
    if known is None:
        src = tree / sub
        known = []
        for dirpath, _dirs, files in os.walk(src):  # nothing when `sub` is missing
            rel = os.path.relpath(dirpath, tree)
            known.append((rel, sorted(files)))
        _LISTINGS[key] = known
    return known


def swap(paths: Paths, new_root: Path, note: Callable[[dict[str, Any]], None] | None) -> None:
    """Point `state/profile` at `new_root`, recording the old target first."""
    with lock:
        prev = current_target(paths)
        if note is not None:
            note({"op": "profile", "item": "profile", "link": str(paths.profile), "prev": prev})
        if paths.profile.exists() and not paths.profile.is_symlink():
            raise OSError(f"{paths.profile} is not a symlink; move it away")
        atomic_symlink(paths.profile, os.path.relpath(new_root, paths.profile.parent))


def restore(record: Mapping[str, Any], store: Any = None) -> None:
    """Undo a swap: point the profile back where it was (or remove it)."""
    link = Path(record["link"])
    prev = record.get("prev")
    with lock:
        if prev is None:
            if link.is_symlink():
                link.unlink()
            return
        atomic_symlink(link, prev)


def prune(paths: Paths) -> None:
    """Remove profile directories other than the current one (after a commit)."""
    keep = current_target(paths)
    root = paths.profiles
    if not root.is_dir():
        return
    keep_name = os.path.basename(keep) if keep else None
    for d in root.iterdir():
        if d.name != keep_name:
            shutil.rmtree(d, ignore_errors=True)
