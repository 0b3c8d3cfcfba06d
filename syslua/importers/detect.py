"""What another dotfiles manager's file or directory looks like, for the
pointer `sys plan CONFIG` gives when CONFIG is not a syslua config.

A dotbot `install.conf.yaml` given as CONFIG would otherwise be read as a
CCM manifest (and refused as one), and a stow directory, a chezmoi source
directory, an rcm directory or a yadm work tree simply has no `sys.lua`.
`foreign_file` and `foreign_dir` recognise them from their shapes and say
which `sys import` command writes a `sys.lua` from them; they only read
(a bounded number of names, one small file), never change anything, and
answer None when unsure: a real config is never mistaken for a foreign one.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from syslua.paths import abbreviate, home

# dotbot's own directives: a config is a list of tasks, each a map of these
# (plugins add others, but a config without any of these is not dotbot's).
DOTBOT_DIRECTIVES = frozenset({"defaults", "link", "create", "shell", "clean"})
DOTBOT_NAMES = ("install.conf.yaml", "install.conf.yml", "install.conf.json")
DOTBOT_SUFFIXES = (".yaml", ".yml", ".json")
_DOTBOT_MAX_BYTES = 1 << 20

# chezmoi source-state attribute prefixes, in the order chezmoi allows them;
# a target name under them starts with `dot_` (`private_dot_ssh`).
_CHEZMOI_PREFIXES = (
    "remove_",
    "create_",
    "modify_",
    "symlink_",
    "encrypted_",
    "private_",
    "readonly_",
    "empty_",
    "executable_",
    "exact_",
    "external_",
    "literal_",
)
# yadm alternate files: `NAME##CONDITION[,CONDITION]` (`.bashrc##os.Linux`, `##default`).
_YADM_ALT = re.compile(
    r"##(default|template|t|extension|e"
    r"|(os|o|class|c|hostname|h|user|u|distro|d|distro_family|f|arch|a)\.)"
)
# Names that, at the top of a directory, mean it mirrors a home.
_HOME_NAMES = frozenset(
    {
        ".bashrc",
        ".bash_profile",
        ".bash_aliases",
        ".profile",
        ".zshrc",
        ".zprofile",
        ".zshenv",
        ".vimrc",
        ".vim",
        ".gitconfig",
        ".tmux.conf",
        ".inputrc",
        ".config",
        ".local",
    }
)
_WALK_LIMIT = 2000  # names looked at, at most, in one directory tree


class Foreign(NamedTuple):
    """Another manager's config: what it is, and the `sys import` that reads it."""

    fmt: str  # a FORMAT of `sys import`
    what: str  # "a dotbot config", for "X looks like ..."
    source: Path  # the SOURCE to give `sys import`
    options: tuple[str, ...] = ()  # `--dotfiles`, `--suffix .symlink`

    def command(self) -> str:
        """The `sys import` command, as it runs from any directory (`~/...` left to the shell)."""
        shown = abbreviate(os.path.abspath(self.source))
        words = ["sys", "import", self.fmt, _word(shown), *map(shlex.quote, self.options)]
        return " ".join(words)


def _word(text: str) -> str:
    if text == "~":
        return text
    if text.startswith("~/") and len(text) > 2:
        return "~/" + shlex.quote(text[2:])
    return shlex.quote(text)


def foreign_file(path: Path) -> Foreign | None:
    """A dotbot config (a YAML or JSON list of tasks), or None."""
    if path.suffix not in DOTBOT_SUFFIXES or not _is_dotbot(path):
        return None
    return Foreign("dotbot", "a dotbot config", path)


def foreign_dir(directory: Path) -> Foreign | None:
    """What a directory without a syslua config is for another manager, or
    None. Its own home is looked at only as a yadm work tree: every home
    has dotfiles at the top, and packages of them here and there."""
    if os.path.abspath(directory) == os.path.abspath(home()):
        return _yadm(directory)
    for look in (_dotbot, _chezmoi, _yadm, _rcm, _stow, _mirror):
        found = look(directory)
        if found is not None:
            return found
    return None


def _is_dotbot(path: Path) -> bool:
    """Whether `path` is a list of tasks with at least one of dotbot's
    directives. A CCM manifest is a map, so this never takes one: a file
    whose first line of content does not open a list is not even parsed."""
    try:
        if path.stat().st_size > _DOTBOT_MAX_BYTES:
            return False
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    first = next(
        (s for s in (line.strip() for line in text.splitlines()) if s and not s.startswith("#")),
        "",
    )
    if not first.startswith(("-", "[")):
        return False
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    if not isinstance(doc, list) or not doc or not all(isinstance(t, dict) for t in doc):
        return False
    return any(key in DOTBOT_DIRECTIVES for task in doc for key in task)


def _is(path: Path, kind: str) -> bool:
    """`path.is_dir()`, `is_file()` or `is_symlink()`; False where it cannot be looked at."""
    try:
        return bool(getattr(path, kind)())
    except OSError:
        return False


def _names(directory: Path) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def _dotbot(directory: Path) -> Foreign | None:
    """A repository with a dotbot config at its top: `install.conf.yaml`
    first, then any other YAML or JSON file there that is one."""
    names = _names(directory)
    ordered = [n for n in DOTBOT_NAMES if n in names] + [
        n for n in names if n not in DOTBOT_NAMES and n.endswith(DOTBOT_SUFFIXES)
    ]
    for name in ordered:
        path = directory / name
        if _is(path, "is_file") and _is_dotbot(path):
            return Foreign("dotbot", f"a dotbot repository ({name})", path)
    return None


def _chezmoi_target(name: str) -> str:
    """A source-state name without its attribute prefixes."""
    stripped = True
    while stripped:
        stripped = False
        for prefix in _CHEZMOI_PREFIXES:
            if name.startswith(prefix):
                name, stripped = name[len(prefix) :], True
    return name


def _chezmoi(directory: Path) -> Foreign | None:
    """A chezmoi source directory: its `.chezmoi*` files, or `dot_` names."""
    names = _names(directory)
    if any(n.startswith(".chezmoi") for n in names) or any(
        _chezmoi_target(n).startswith("dot_") for n in names
    ):
        return Foreign("chezmoi", "a chezmoi source directory", directory)
    return None


def _walk(directory: Path, depth: int) -> Iterator[tuple[str, str]]:
    """(relative directory, name) of the entries down to `depth` levels,
    `.git` left out, at most `_WALK_LIMIT` of them."""
    seen = 0
    todo = [("", directory, 1)]
    while todo:
        rel, path, level = todo.pop()
        for name in _names(path):
            if name == ".git":
                continue
            seen += 1
            if seen > _WALK_LIMIT:
                return
            yield rel, name
            child = path / name
            if level < depth and not _is(child, "is_symlink") and _is(child, "is_dir"):
                todo.append((f"{rel}{name}/", child, level + 1))


def _yadm(directory: Path) -> Foreign | None:
    """A yadm work tree: alternate files (`.bashrc##os.Linux`), yadm's own
    directory (`.config/yadm`), or, for a home, yadm's repository."""
    markers = (".config/yadm", ".yadm", ".local/share/yadm/repo.git")
    if any(_is(directory / m, "is_dir") for m in markers) or any(
        _YADM_ALT.search(name) for _, name in _walk(directory, 3)
    ):
        return Foreign("yadm", "a yadm work tree", directory)
    return None


def _rcm(directory: Path) -> Foreign | None:
    """An rcm directory: its `rcrc`, or `tag-*` and `host-*` folders."""
    names = _names(directory)
    if _is(directory / "rcrc", "is_file") or any(
        n.startswith(("tag-", "host-")) and _is(directory / n, "is_dir") for n in names
    ):
        return Foreign("rcm", "an rcm dotfiles directory", directory)
    return None


def _is_package(path: Path, dotfiles: list[bool]) -> bool:
    """Whether `path` holds only dotfiles (`.x`, or stow --dotfiles' `dot-x`);
    appends whether it used `dot-` names to `dotfiles`."""
    names = [n for n in _names(path) if n not in (".git", ".DS_Store")]
    if not names or not all(n.startswith((".", "dot-")) for n in names):
        return False
    dotfiles.append(any(n.startswith("dot-") for n in names))
    return True


def _stow(directory: Path) -> Foreign | None:
    """A stow directory: packages (folders of dotfiles) at the top, or
    stow's own `.stowrc` / `.stow-local-ignore`, and no dotfiles of its own."""
    names = _names(directory)
    if any(n in _HOME_NAMES for n in names):
        return None
    folders = [n for n in names if not n.startswith(".") and _is(directory / n, "is_dir")]
    dotfiles: list[bool] = []
    packages = [n for n in folders if _is_package(directory / n, dotfiles)]
    marked = ".stowrc" in names or ".stow-local-ignore" in names
    if not marked and (not packages or 2 * len(packages) < len(folders)):
        return None
    options = ("--dotfiles",) if any(dotfiles) else ()
    return Foreign("stow", "a GNU stow directory", directory, options)


def _mirror(directory: Path) -> Foreign | None:
    """A repository of `*.symlink` files (holman's layout), or one whose top
    level mirrors a home (`.bashrc`, `.config`)."""
    if any(name.endswith(".symlink") for _, name in _walk(directory, 2)):
        what = "a dotfiles repository of *.symlink files"
        return Foreign("mirror", what, directory, ("--suffix", ".symlink"))
    if any(n in _HOME_NAMES for n in _names(directory)):
        return Foreign("mirror", "a dotfiles repository mirroring ~", directory)
    return None
