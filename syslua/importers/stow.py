"""`sys import stow DIR [PKG...]`: GNU stow packages as link trees.

A stow package is a folder laid out as its files sit in the target. stow
links it in with as few links as it can (a directory only this package
fills becomes one link, a *fold*); syslua's link tree makes the directories
real and links each file, which is the same set of files whatever stow
folded. The layout written, per package:

1. a file at the package's top is one link (`~/.bashrc`);
2. a folder that holds only folders (`.config`, `.local`) is walked through,
   since other packages and programs share it;
3. a folder holding a file is one link tree (`~/.config/nvim`); two packages
   that reach the same folder give two trees of one path, which merge.

stow's ignore rules are Perl regexes (`.stow-local-ignore`, else
`~/.stow-global-ignore`, else its built-in list), a regex with a `/`
matched against the path in the package, one without against each name.
They are translated into gitignore patterns on each tree; the patterns are
then checked against the package's files as they are, and a file that
would come out differently is named on its own (or reported).

With `--dotfiles`, `dot-x` in the package is `.x` in the target. A tree
cannot rename what is inside it, so a folder with a `dot-` name anywhere
below is walked through instead, its files declared one by one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from syslua.importers import Imported, ImportError_, Options
from syslua.importers.lua import Raw, Writer, lua_list, relative, tilde
from syslua.paths import home

# stow 2.3's built-in ignore list (used for a package without its own list).
DEFAULT_IGNORE = [
    "RCS",
    ".+,v",
    "CVS",
    r"\.\#.+",
    r"\.cvsignore",
    r"\.svn",
    "_darcs",
    r"\.hg",
    r"\.git",
    r"\.gitignore",
    ".+~",
    r"\#.*\#",
    "^/README.*",
    "^/LICENSE.*",
    "^/COPYING",
]
LOCAL = ".stow-local-ignore"
GLOBAL = ".stow-global-ignore"
DEFAULT_NAME = "stow_ignore"  # the Lua local holding the built-in list


@dataclass
class Rules:
    """One package's ignore list: its regexes and where they came from."""

    origin: str  # "built-in", or the file they were read from
    regexes: list[str]
    # regex -> its gitignore pattern(s); None: no translation
    globs: dict[str, list[str] | None] = field(default_factory=dict)
    segment: re.Pattern[str] | None = None
    path: re.Pattern[str] | None = None
    broken: list[str] = field(default_factory=list)  # regexes Python cannot read

    def ignores(self, rel: str) -> bool:
        """stow's test for the package path `rel` (no leading slash)."""
        if self.path is not None and self.path.search("/" + rel):
            return True
        name = rel.rsplit("/", 1)[-1]
        return self.segment is not None and self.segment.match(name) is not None


def translate(source: Path, options: Options) -> Imported:
    """The packages of the stow directory `source`, linked into `options.target`."""
    if not source.is_dir():
        raise ImportError_(f"{source} is not a directory: stow reads a directory of packages")
    packages = options.packages or sorted(
        e.name for e in os.scandir(source) if e.is_dir() and not e.name.startswith(".")
    )
    for pkg in packages:
        if "/" in pkg or not (source / pkg).is_dir():
            raise ImportError_(f"{pkg!r} is not a package of {source} (a folder at its top)")
    if not packages:
        raise ImportError_(f"{source} has no packages (folders at its top)")
    where = tilde(options.target)
    cmd = "stow" + (" --dotfiles" if options.dotfiles else "")
    if options.target != Path(home()):
        cmd += f" -t {where}"
    w = Writer(
        [
            f"Written by `sys import stow` from {tilde(source)}: `{cmd} {' '.join(packages)}`.",
            "A file at a package's top is one link; a folder of a package is a link tree",
            "(real directories, a link per file: the files stow links, whatever it folded).",
            "Packages that share a folder are trees into the same path: their files merge.",
        ]
    )
    untranslated: list[str] = []
    body = Writer([])
    uses_default = False
    for pkg in packages:
        rules = read_rules(source / pkg)
        untranslated += [f"{rules.origin}: {why}" for why in _rule_notes(rules)]
        body.blank()
        body.comment(f"package {pkg}" + ("" if rules.origin == "built-in" else f" ({LOCAL})"))
        walker = _Package(source / pkg, pkg, rules, options)
        walker.walk("")
        if not walker.declared:
            body.comment("(nothing to link: every entry is ignored)")
        for path, src, tree, ignore, comment in walker.declared:
            props: dict[str, object] = {"path": path, "source": src, "link": True}
            if tree and ignore is not None:
                if ignore == _globs_of(read_rules(None)):
                    props["ignore"] = Raw(DEFAULT_NAME)
                    uses_default = True
                elif ignore:
                    props["ignore"] = ignore
            body.declare("file", props, comment)
        untranslated += walker.notes
    if untranslated:
        w.blank()
        w.comment("Not translated:")
        for why in untranslated:
            w.comment(f"  {why}")
    if uses_default:
        w.blank()
        w.comment("stow's built-in ignore list, for the packages without a .stow-local-ignore")
        w.raw(f"local {DEFAULT_NAME} = {lua_list(_globs_of(read_rules(None)))}")
    w.blank()
    w.raw("\n".join(body.lines), body.declarations)
    return Imported(w.text(), w.declarations, untranslated)


# -- the ignore rules ----------------------------------------------------------------
def read_rules(package: Path | None) -> Rules:
    """The list stow uses for `package` (None: the built-in one)."""
    if package is not None:
        for f in (package / LOCAL, Path(home()) / GLOBAL):
            if f.is_file():
                lines = _regex_lines(f.read_text(errors="replace"))
                return _compile(Rules(tilde(f), lines))
    return _compile(Rules("built-in", list(DEFAULT_IGNORE)))


def _regex_lines(text: str) -> list[str]:
    """The regexes of an ignore file, as stow reads them (comments, blanks and `\\#`)."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = re.sub(r"\s+#.+", "", line).replace("\\#", "#")
        if line not in out:
            out.append(line)
    return out


def _compile(rules: Rules) -> Rules:
    # stow always keeps a package's own list out of the target
    regexes = [*rules.regexes, r"^/\.stow-local-ignore$"]
    good: list[str] = []
    for rx in regexes:
        try:
            re.compile(rx)
            good.append(rx)
        except re.error:
            rules.broken.append(rx)
    segment = [rx for rx in good if "/" not in rx]
    path = [rx for rx in good if "/" in rx]
    if segment:
        rules.segment = re.compile("^(" + "|".join(segment) + ")$")
    if path:
        rules.path = re.compile("(^|/)(" + "|".join(path) + ")(/|$)")
    for rx in good:
        rules.globs[rx] = to_globs(rx)
    return rules


def _rule_notes(rules: Rules) -> list[str]:
    notes = [f"the regex {rx!r} is not one Python reads: left out" for rx in rules.broken]
    notes += [
        f"the regex {rx!r} has no gitignore pattern: the files it ignores now are named instead"
        for rx, globs in rules.globs.items()
        if globs is None
    ]
    return notes


def _globs_of(rules: Rules) -> list[str]:
    """The name patterns of `rules` (those that hold in any folder)."""
    out: list[str] = []
    for rx, globs in rules.globs.items():
        if "/" not in rx and globs:
            out += [g for g in globs if g not in out]
    return out


_CLASS = re.compile(r"\[\^?\]?[^\]]*\]")


def to_globs(regex: str) -> list[str] | None:
    """gitignore patterns matching what stow's `regex` matches, or None.

    Literals, `.`, `.*`, `.+`, `[...]`, escapes, `^`/`$` at the ends and
    one level of `(a|b)` or `a|b` are translated; anything else (`?`, `+`
    or `*` after another atom, `{n}`, `\\d`...) is not.
    """
    out: list[str] = []
    for alt in _alternatives(regex):
        glob = None if alt is None else _one_glob(alt)
        if glob is None:
            return None
        if "/" in regex and not glob.startswith("/"):
            glob = "**/" + glob  # a path regex matches from any folder down
        out.append(glob)
    return out


def _alternatives(regex: str) -> list[str | None]:
    """`a|b` and `x(a|b)y` spelled out (one level); [None] when nested."""
    depth = 0
    tops, start = [], 0
    for i, ch in enumerate(regex):
        if ch == "\\":
            continue
        if i and regex[i - 1] == "\\":
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            tops.append(regex[start:i])
            start = i + 1
    tops.append(regex[start:])
    out: list[str | None] = []
    for t in tops:
        m = re.fullmatch(r"([^()]*)\((?:\?:)?([^()]*)\)([^()]*)", t)
        if m:
            out += [m.group(1) + a + m.group(3) for a in m.group(2).split("|")]
        elif "(" in t.replace("\\(", "") or ")" in t.replace("\\)", ""):
            out.append(None)
        else:
            out.append(t)
    return out


def _one_glob(rx: str) -> str | None:
    if rx.startswith("^"):
        rx = rx[1:]
        if not rx.startswith("/"):
            rx = "/" + rx if "/" in rx else rx
    if rx.endswith("$") and not rx.endswith("\\$"):
        rx = rx[:-1]
    out, i = [], 0
    while i < len(rx):
        ch = rx[i]
        nxt = rx[i + 1] if i + 1 < len(rx) else ""
        if ch == "\\" and nxt:
            if nxt.isalnum():
                return None  # \d, \w, \b...
            out.append(_literal(nxt))
            i += 2
        elif ch == ".":
            if nxt in "*+":
                out.append("*")
                i += 2
            else:
                out.append("?")
                i += 1
        elif ch == "[":
            m = _CLASS.match(rx, i)
            if m is None:
                return None
            cls = m.group(0)
            out.append("[!" + cls[2:] if cls.startswith("[^") else cls)
            i = m.end()
        elif ch in "?*+{}()|^$":
            return None
        else:
            out.append(_literal(ch))
            i += 1
        if i < len(rx) and rx[i] in "?*+{":
            return None  # a quantifier after a literal or a class
    glob = "".join(out)
    if glob.startswith(("#", "!")):
        glob = "\\" + glob
    return glob


def _literal(ch: str) -> str:
    return "\\" + ch if ch in "*?[]\\" else ch


# -- the walk of a package ---------------------------------------------------------
Declared = tuple[str, str, bool, list[str] | None, str | None]


class _Package:
    """The declarations for one package: walk it, deciding link, tree or walk through."""

    def __init__(self, root: Path, name: str, rules: Rules, options: Options) -> None:
        self.root, self.name, self.rules, self.options = root, name, rules, options
        self.declared: list[Declared] = []
        self.notes: list[str] = []

    def target(self, rel: str) -> str:
        parts = rel.split("/")
        if self.options.dotfiles:
            parts = ["." + p[4:] if p.startswith("dot-") and len(p) > 4 else p for p in parts]
        return tilde(self.options.target / "/".join(parts))

    def source(self, rel: str) -> str:
        return relative(self.root / rel, self.options.base)

    def entries(self, rel: str) -> list[os.DirEntry[str]]:
        """What stow sees in the package folder `rel` (not ignored), by name."""
        found = sorted(os.scandir(self.root / rel), key=lambda e: e.name)
        return [e for e in found if not self.rules.ignores(rel + e.name)]

    def walk(self, rel: str) -> None:
        """Declare the package folder `rel` ("" for the top, else ending in "/")."""
        entries = self.entries(rel)
        for e in entries:
            if not _is_dir(e):
                self.declared.append(
                    (self.target(rel + e.name), self.source(rel + e.name), False, None, None)
                )
        for e in entries:
            if not _is_dir(e):
                continue
            sub = rel + e.name + "/"
            kids = self.entries(sub)
            if not kids:
                self.notes.append(
                    f"{self.name}/{sub}: an empty folder (stow would link it): left out"
                )
            elif any(not _is_dir(k) for k in kids) and not self.renames(sub):
                self.tree(sub)
            else:
                self.walk(sub)

    def renames(self, rel: str) -> bool:
        """With --dotfiles: does a name below the folder `rel` start with `dot-`?"""
        if not self.options.dotfiles:
            return False
        for _top, dirs, files in os.walk(self.root / rel):
            if any(n.startswith("dot-") for n in dirs + files):
                return True
        return False

    def tree(self, rel: str) -> None:
        """The folder `rel` as one link tree, with the ignore patterns that reproduce stow's."""
        where = rel.rstrip("/")
        patterns = self.patterns(where)
        stow_files = self.files_stow_links(where)
        syslua_files = _files_syslua_links(self.root / where, patterns)
        for f in sorted(syslua_files - stow_files):
            patterns.append("/" + _escape_path(f))
        back = sorted(stow_files - _files_syslua_links(self.root / where, patterns))
        for f in back:
            patterns.append("!/" + _escape_path(f))
            self.notes.append(
                f"{self.name}/{where}/{f}: stow links it, but an ignored folder holds it:"
                " `!` cannot bring it back (check it)"
            )
        self.declared.append((self.target(where), self.source(where), True, patterns, None))

    def patterns(self, where: str) -> list[str]:
        """The rules' patterns that can match inside the package folder `where`."""
        out: list[str] = []
        prefix = "/" + where + "/"
        for globs in self.rules.globs.values():
            for g in globs or []:
                if not g.startswith("/"):
                    keep: str | None = g
                elif g.startswith(prefix):
                    keep = "/" + g[len(prefix) :]
                else:
                    keep = None
                if keep is not None and keep not in out:
                    out.append(keep)
        return out

    def files_stow_links(self, where: str) -> set[str]:
        """The files below the package folder `where` that stow would link, relative to it."""
        out: set[str] = set()
        for top, dirs, files in os.walk(self.root / where):
            rel_top = os.path.relpath(top, self.root)
            dirs[:] = [d for d in dirs if d != ".git" and not self.rules.ignores(f"{rel_top}/{d}")]
            for f in files:
                if not self.rules.ignores(f"{rel_top}/{f}"):
                    out.add(os.path.relpath(os.path.join(top, f), self.root / where))
        return out


def _is_dir(e: os.DirEntry[str]) -> bool:
    return e.is_dir(follow_symlinks=False)


def _escape_path(rel: str) -> str:
    return "".join(_literal(c) for c in rel)


def _files_syslua_links(source: Path, patterns: list[str]) -> set[str]:
    """The files syslua's tree of `source` holds with `ignore = patterns`."""
    from syslua.manifest import tree

    files, _ = tree._walk(str(source), tree._spec(patterns))
    return {rel for rel, _mode in files}
