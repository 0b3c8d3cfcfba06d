"""`sys import mirror DIR [--suffix S]`: a repository laid out as the home.

Without `--suffix`, DIR's top level is a copy of `~` (installed with `cp -a`
or `rsync -a`), and so is the config: a copy, not a link, of every entry
but the repository's own furniture (`.git`, README, LICENSE, `sys.lua`).
The layout is the one `sys import stow` writes: a file at the top is one
declaration; a folder holding only folders (`.config`) is walked through,
since the home shares it; a folder holding a file is one copied tree, its
directories' mode (`.ssh`'s 0700) kept as `dir_mode` the way `cp -a` does.

With `--suffix S` (the holman layout: topic folders of `*.symlink`), only
what is named `NAME` + S, at any depth, is managed: a link `~/.NAME` to it.
A file is `file { ..., link = true }`; a folder is one link to the folder,
as the bootstrap's `ln -s` makes it, not a tree.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from syslua.importers import Imported, ImportError_, Options
from syslua.importers.lua import Writer, relative, tilde

# Not part of the home: the repository's own files.
FURNITURE_NAMES = {".git", ".github", ".gitignore", ".gitmodules", "sys.lua", "sys.lua.orig"}
FURNITURE_PREFIXES = ("README", "LICENSE", "LICENCE", "COPYING")


def furniture(name: str) -> bool:
    return name in FURNITURE_NAMES or name.upper().startswith(FURNITURE_PREFIXES)


def translate(source: Path, options: Options) -> Imported:
    """Copies of `source`'s top level into the target, or with a suffix links of what ends in it."""
    if not source.is_dir():
        raise ImportError_(f"{source} is not a directory: mirror reads a repository")
    if options.suffix is not None:
        return _suffixed(source, options, options.suffix)
    return _copies(source, options)


# -- copies --------------------------------------------------------------------------
def _copies(source: Path, options: Options) -> Imported:
    where = tilde(options.target)
    w = Writer(
        [
            f"Written by `sys import mirror` from {tilde(source)}, which mirrors {where}",
            f"(`cp -a {tilde(source)}/. {where}` or `rsync -a`): a copy of each entry.",
            "A file is a copy; a folder holding files is a copied tree.",
        ]
    )
    mirror = _Mirror(source, options)
    mirror.walk(source)
    left = sorted(mirror.furniture)
    if left:
        w.comment("Left out as the repository's own: " + ", ".join(left) + ".")
    if mirror.notes:
        w.blank()
        w.comment("Not translated:")
        for why in mirror.notes:
            w.comment(f"  {why}")
    w.blank()
    for props in mirror.declared:
        w.declare("file", props)
    if not mirror.declared:
        w.comment("(nothing to copy)")
    return Imported(w.text(), w.declarations, mirror.notes)


class _Mirror:
    def __init__(self, source: Path, options: Options) -> None:
        self.source, self.options = source, options
        self.declared: list[dict[str, object]] = []
        self.furniture: list[str] = []
        self.notes: list[str] = []

    def rel(self, path: Path) -> str:
        return str(path.relative_to(self.source))

    def decl(self, path: Path, **more: object) -> None:
        props: dict[str, object] = {
            "path": tilde(self.options.target / self.rel(path)),
            "source": relative(path, self.options.base),
        }
        self.declared.append({**props, **more})

    def entries(self, folder: Path) -> list[os.DirEntry[str]]:
        found = sorted(os.scandir(folder), key=lambda e: e.name)
        out = []
        for e in found:
            if folder == self.source and furniture(e.name):
                self.furniture.append(e.name)
            elif Path(e.path) == self.options.base:
                continue  # the folder the sys.lua goes to (--to inside the mirror)
            elif e.name == ".git":
                continue
            else:
                out.append(e)
        return out

    def walk(self, folder: Path) -> None:
        entries = self.entries(folder)
        for e in entries:
            if e.is_symlink():
                self.notes.append(
                    f"{self.rel(Path(e.path))}: a link in the repository "
                    f"(to {os.readlink(e.path)}): left out"
                )
            elif e.is_file():
                self.decl(Path(e.path))
        for e in entries:
            if e.is_symlink() or not e.is_dir():
                continue
            kids = self.entries(Path(e.path))
            if not kids:
                self.notes.append(f"{self.rel(Path(e.path))}/: an empty folder: left out")
            elif any(k.is_file(follow_symlinks=False) for k in kids):
                self.tree(Path(e.path))
            else:
                self.walk(Path(e.path))

    def tree(self, folder: Path) -> None:
        """A copied tree; its directories' mode as `dir_mode` when it is not 0755."""
        modes = {stat.S_IMODE(os.lstat(folder).st_mode)}
        for top, dirs, _files in os.walk(folder):
            dirs[:] = [d for d in dirs if d != ".git"]
            modes |= {stat.S_IMODE(os.lstat(os.path.join(top, d)).st_mode) for d in dirs}
        mode = stat.S_IMODE(os.lstat(folder).st_mode)
        if len(modes) > 1:
            self.notes.append(
                f"{self.rel(folder)}/: its folders have different modes"
                f" ({', '.join(f'{m:04o}' for m in sorted(modes))}): all get {mode:04o}"
            )
        self.decl(folder, **({"dir_mode": f"{mode:04o}"} if mode != 0o755 else {}))


# -- links of what ends in the suffix ------------------------------------------------
def _suffixed(source: Path, options: Options, suffix: str) -> Imported:
    where = tilde(options.target)
    w = Writer(
        [
            f"Written by `sys import mirror --suffix {suffix}` from {tilde(source)}:",
            f"each NAME{suffix} (a file or a folder) is a link {where}/.NAME;",
            "nothing else of the repository is managed.",
        ]
    )
    found: dict[str, Path] = {}
    notes: list[str] = []
    for top, dirs, files in os.walk(source):
        dirs.sort()
        names = sorted(n for n in dirs + files if n.endswith(suffix) and len(n) > len(suffix))
        dirs[:] = [d for d in dirs if not d.startswith(".") and not d.endswith(suffix)]
        for n in names:
            dot = "." + n[: -len(suffix)]
            path = Path(top, n)
            if dot in found:
                notes.append(
                    f"{path.relative_to(source)}: ~/{dot} is already "
                    f"{found[dot].relative_to(source)}: left out"
                )
            else:
                found[dot] = path
    if notes:
        w.blank()
        w.comment("Not translated:")
        for why in notes:
            w.comment(f"  {why}")
    w.blank()
    for dot in sorted(found, key=lambda d: str(found[d])):
        path = found[dot]
        src = relative(path, options.base)
        home_path = tilde(options.target / dot)
        if path.is_dir() and not path.is_symlink():
            w.declare(
                "file", {"path": home_path, "ensure": "link", "target": src}, "a folder: one link"
            )
        else:
            w.declare("file", {"path": home_path, "source": src, "link": True})
    if not found:
        w.comment(f"(nothing ends in {suffix})")
    return Imported(w.text(), w.declarations, notes)
