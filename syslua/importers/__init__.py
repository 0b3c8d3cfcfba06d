"""`sys import`: a `sys.lua` written from another dotfiles manager's repository.

Each format is a module of this package with one function,

    translate(source: Path, options: Options) -> Imported

that reads the repository (never changes it) and returns the text of an
idiomatic `sys.lua` (see `lua.Writer`), how many declarations it holds, and
what it could not translate. Paths in the text are relative to
`options.base`, the directory the `sys.lua` is written to, so the same
translation works beside the repository or in `--to DIR`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

# FORMAT -> module (syslua.importers.<module>) with `translate`.
FORMATS: dict[str, str] = {
    "stow": "stow",
    "dotbot": "dotbot",
    "chezmoi": "chezmoi",
    "rcm": "rcm",
    "yadm": "yadm",
    "mirror": "mirror",
}


# Plain classes, not dataclasses: finding a config imports this package
# (`importers.detect`), and the no-change answer (`syslua/quick.py`) finds
# one before anything else; generating a dataclass costs that start.


class Options:
    """What the command line says, beyond FORMAT and SOURCE."""

    __slots__ = ("base", "target", "packages", "dotfiles", "suffix")

    def __init__(
        self,
        base: Path,  # where the sys.lua goes: sources are written relative to it
        target: Path,  # the home (stow's -t; `~` in the text when it is the home)
        packages: list[str] | None = None,  # stow PKG...
        dotfiles: bool = False,  # stow --dotfiles: `dot-` is `.`
        suffix: str | None = None,  # mirror --suffix .symlink: only those, without it
    ) -> None:
        self.base = base
        self.target = target
        self.packages: list[str] = [] if packages is None else packages
        self.dotfiles = dotfiles
        self.suffix = suffix

    def replace(self, base: Path) -> Options:
        """The same options, writing the `sys.lua` under `base`."""
        return Options(base, self.target, self.packages, self.dotfiles, self.suffix)


class Imported:
    """A translation: the `sys.lua` text and what it could not say."""

    __slots__ = ("lua", "declarations", "untranslated")

    def __init__(self, lua: str, declarations: int, untranslated: list[str] | None = None) -> None:
        self.lua = lua
        # how many declarations (`file {...}`, `exec {...}`, ...) it holds
        self.declarations = declarations
        # What was not translated, each "path:line: why" (or "path: why"):
        # printed after the plan, and written as comments at the top of the text.
        self.untranslated: list[str] = [] if untranslated is None else untranslated


class ImportError_(Exception):
    """The repository is not what FORMAT reads (a message for the user)."""


def translate(fmt: str, source: Path, options: Options) -> Imported:
    """`fmt`'s translation of the repository at `source`."""
    if fmt not in FORMATS:
        raise ImportError_(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    module = importlib.import_module(f"syslua.importers.{FORMATS[fmt]}")
    result: Imported = module.translate(source, options)
    return result
