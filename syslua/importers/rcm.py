"""rcm: what `rcup` links, read from the repository and its `rcrc`.

`rcup` (with the repository's `rcrc` as RCRC) links every top-level entry
NAME of the repository as `~/.NAME`: a file as one link, a directory as real
directories holding a link per file (a link tree here). `tag-T/` folders
count when T is in TAGS, `host-H/` folders on the machine called H (here a
condition on the `hostname` fact, so one config serves every host), `hooks/`
is run, not linked. Hidden names are never linked (rcm lists with `*`);
EXCLUDES and INCLUDES filter by path or base name, UNDOTTED names lose the
dot, SYMLINK_DIRS directories are linked whole, COPY_ALWAYS files copied.
When two folders give the same path, the host's wins, then the first tag's,
then the top level's, as in rcup.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from syslua.importers import Imported, ImportError_, Options
from syslua.importers.lua import Writer, quote, relative

# The names `sys import` writes into the repository: never linked.
OWN = ("sys.lua", "sys.lua.orig")
SETTINGS = (
    "DOTFILES_DIRS",
    "EXCLUDES",
    "INCLUDES",
    "TAGS",
    "UNDOTTED",
    "NEVER_UNDOTTED",
    "SYMLINK_DIRS",
    "MK_DIRS",
    "COPY_ALWAYS",
)


@dataclass
class Rc:
    """The repository and the rcrc settings that concern it."""

    top: Path
    settings: dict[str, list[str]]
    line: dict[str, int]  # setting -> its line in rcrc

    def globs(self, name: str) -> list[str]:
        """A setting's globs for this repository (`DIR:glob` entries for other dirs left out)."""
        out = []
        for g in self.settings.get(name, []):
            if ":" in g:
                d, _, g = g.partition(":")
                if d != "*" and Path(os.path.expanduser(d)).absolute() != self.top:
                    continue
            out.append(g)
        return out

    def matches(self, rel: str, name: str, unless: str) -> bool:
        """rcm's is_excluded: `./rel` or the base name matches a glob of `name`, and none of `unless`."""
        for cand in (f"./{rel}", rel.rsplit("/", 1)[-1]):
            for g in self.globs(name):
                if fnmatch.fnmatchcase(cand, g):
                    return not any(fnmatch.fnmatchcase(cand, i) for i in self.globs(unless))
        return False

    def excluded(self, rel: str) -> bool:
        return self.matches(rel, "EXCLUDES", "INCLUDES")


@dataclass
class Entry:
    """One declaration: `~/DEST` from SOURCE (relative to the repository)."""

    dest: str  # relative to the home
    src: str  # relative to the repository
    how: str  # "link" (a file or a link tree), "copy", or "dirlink" (the directory as one link)
    ignore: list[str] = field(default_factory=list)


def translate(source: Path, options: Options) -> Imported:
    if not source.is_dir():
        raise ImportError_(f"{source} is not a directory: rcm reads a dotfiles repository")
    rc, untranslated = _read_rcrc(source)
    folders = _folders(rc, untranslated)
    w = Writer(
        [
            f"rcm's repository {source.name}/, as `rcup` links it (RCRC={source.name}/rcrc):",
            "NAME is ~/.NAME, a file as one link, a directory as real directories of links.",
            "Written by `sys import rcm`; see docs/import.md#rcm.",
        ]
    )
    for why in untranslated:
        w.comment(f"not translated: {why}")
    prefix = relative(source, options.base).rstrip("/") + "/"
    by_dest: dict[str, list[str]] = {}
    listed = [(label, kind, _entries(rc, d)) for label, d, kind in folders]
    for _, kind, entries in listed:
        for e in entries:
            by_dest.setdefault(e.dest, []).append(kind)
    taken: set[str] = set()
    for label, kind, entries in listed:
        if kind == "host":
            w.blank()
            w.comment(label)
            w.lines.append(f"if sys.facts.hostname == {quote(hosts_name(label))} then")
            _emit(w, entries, prefix, indent="  ")
            w.lines.append("end")
            continue
        keep = [e for e in entries if e.dest not in taken]
        for e in entries:
            if e.dest in taken:
                w.comment(f"{e.src}: not linked, ~/{e.dest} comes from a tag folder (as in rcup)")
        taken.update(e.dest for e in keep)
        shadowed = [e for e in keep if "host" in by_dest.get(e.dest, [])]
        plain = [e for e in keep if e not in shadowed]
        w.blank()
        w.comment(label)
        _emit(w, plain, prefix, indent="")
        for e in shadowed:
            names = [
                hosts_name(lbl)
                for lbl, k, ents in listed
                if k == "host" and e.dest in {x.dest for x in ents}
            ]
            cond = " and ".join(f"sys.facts.hostname ~= {quote(h)}" for h in names)
            w.lines.append(f"if {cond} then")
            _emit(w, [e], prefix, indent="  ")
            w.lines.append("end")
    return Imported(w.text(), w.declarations, untranslated)


def hosts_name(label: str) -> str:
    """The host of a `host-NAME/ ...` label."""
    return label.split("/", 1)[0][len("host-") :]


def _read_rcrc(top: Path) -> tuple[Rc, list[str]]:
    """The settings of `top/rcrc` (shell assignments; the last one of a name wins)."""
    settings: dict[str, list[str]] = {}
    line: dict[str, int] = {}
    untranslated: list[str] = []
    rcrc = top / "rcrc"
    if rcrc.is_file():
        for n, text in enumerate(rcrc.read_text(errors="replace").splitlines(), 1):
            m = re.match(r"\s*(?:export\s+)?([A-Z_]+)=(.*)$", text)
            if not m:
                continue
            name, value = m.groups()
            try:
                words = shlex.split(value, comments=True)
            except ValueError:
                words = []
            raw = words[0] if len(words) == 1 else " ".join(words)
            if "$(" in raw or "`" in raw:
                untranslated.append(f"rcrc:{n}: {name} is computed by the shell; not read")
                continue
            settings[name] = raw.split()
            line[name] = n
    rc = Rc(top.absolute(), settings, line)
    for d in settings.get("DOTFILES_DIRS", []):
        path = Path(os.path.expanduser(os.path.expandvars(d))).absolute()
        if path != rc.top and path.is_dir():  # rcup skips a directory that is not there
            untranslated.append(
                f"rcrc:{line['DOTFILES_DIRS']}: DOTFILES_DIRS also names {d}:"
                " import it on its own (`sys import rcm DIR --to ...`)"
            )
    for name in ("HOSTNAME",):
        if name in settings:
            untranslated.append(
                f"rcrc:{line[name]}: {name} is set: host- folders follow the hostname fact"
            )
    return rc, untranslated


def _folders(rc: Rc, untranslated: list[str]) -> list[tuple[str, Path, str]]:
    """(label, directory, kind) in rcup's order of precedence: hosts, tags (TAGS order), the top."""
    out: list[tuple[str, Path, str]] = []
    names = sorted(p.name for p in rc.top.iterdir() if not p.name.startswith("."))
    for name in names:
        if name.startswith("host-") and (rc.top / name).is_dir():
            out.append((f"{name}/ only on the machine called {name[5:]}", rc.top / name, "host"))
    tags = rc.settings.get("TAGS", [])
    for tag in tags:
        if (rc.top / f"tag-{tag}").is_dir():
            out.append((f"tag-{tag}/ (TAGS in rcrc names {tag})", rc.top / f"tag-{tag}", "tag"))
    out.append(("the top level", rc.top, "top"))
    left = [n for n in names if n.startswith("tag-") and n[4:] not in tags]
    if left:
        out[-1] = (
            "the top level; not linked: "
            + ", ".join(f"{n}/" for n in left)
            + " (not in rcrc's TAGS)",
            rc.top,
            "top",
        )
    hooks = rc.top / "hooks"
    if hooks.is_dir():
        for h in sorted(hooks.iterdir()):
            if not h.name.startswith("."):
                untranslated.append(
                    f"hooks/{h.name}: rcup runs it; not translated (an `exec` can run it)"
                )
    return out


def _entries(rc: Rc, folder: Path) -> list[Entry]:
    """The declarations rcup's walk of `folder` (the top, a tag or a host folder) amounts to."""
    top_level = folder == rc.top
    out: list[Entry] = []
    for p in sorted(folder.iterdir()):
        name = p.name
        if name.startswith("."):
            continue
        if top_level and (name == "hooks" or name.startswith(("host-", "tag-")) or name in OWN):
            continue
        rel = str(p.relative_to(rc.top))
        if rc.excluded(name):
            continue
        dotted = not rc.matches(name, "UNDOTTED", "NEVER_UNDOTTED")
        dest = ("." if dotted else "") + name
        out.extend(_walk(rc, p, rel, dest))
    return out


def _walk(rc: Rc, p: Path, rel: str, dest: str) -> list[Entry]:
    if not p.is_dir():
        copy = any(fnmatch.fnmatchcase(rel, g) for g in rc.settings.get("COPY_ALWAYS", []))
        return [Entry(dest, rel, "copy" if copy else "link")]
    if rc.matches(rel, "SYMLINK_DIRS", "MK_DIRS"):
        return [Entry(dest, rel, "dirlink")]
    kids = [c for c in sorted(p.iterdir()) if not rc.excluded(f"{rel}/{c.name}")]
    if kids and all(c.is_dir() and not c.name.startswith(".") for c in kids):
        # a directory of directories only (`config/`): one tree per directory,
        # so that ~/.config itself is not managed
        out: list[Entry] = []
        for c in kids:
            out.extend(_walk(rc, c, f"{rel}/{c.name}", f"{dest}/{c.name}"))
        return out
    return [Entry(dest, rel, "link", _ignores(rc, p, rel))]


def _ignores(rc: Rc, p: Path, rel: str) -> list[str]:
    """`ignore` patterns for what rcup leaves out of the directory `rel`: hidden names and EXCLUDES."""
    out: list[str] = []
    for top, dirs, files in os.walk(p):
        for name in sorted(dirs + files):
            r = str(Path(top, name).relative_to(rc.top))
            if name.startswith(".") and name != ".git":
                pat = ".*"
            elif rc.excluded(r):
                pat = next(
                    (g for g in rc.globs("EXCLUDES") if fnmatch.fnmatchcase(name, g)),
                    "/" + r[len(rel) + 1 :],
                )
            else:
                continue
            if pat not in out:
                out.append(pat)
        here = Path(top).relative_to(rc.top)
        dirs[:] = [d for d in dirs if not d.startswith(".") and not rc.excluded(f"{here}/{d}")]
    return out


def _emit(w: Writer, entries: list[Entry], prefix: str, indent: str) -> None:
    """Top-level files linked the same way as one loop; the rest a line each."""
    loop = [e for e in entries if e.how == "link" and not e.ignore and "/" not in e.src]
    loop = [e for e in loop if e.dest == "." + e.src]
    if len(loop) > 1:
        names = ", ".join(quote(e.src) for e in loop)
        w.raw(
            f"{indent}for _, name in ipairs {{ {names} }} do\n"
            f'{indent}  file {{ path = "~/." .. name, source = {quote(prefix)} .. name, link = true }}\n'
            f"{indent}end",
            declarations=len(loop),
        )
    else:
        loop = []
    for e in entries:
        if e in loop:
            continue
        src = prefix + e.src
        props: dict[str, object]
        if e.how == "dirlink":
            props = {"path": f"~/{e.dest}", "ensure": "link", "target": src}
        else:
            props = {"path": f"~/{e.dest}", "source": src}
            if e.how == "link":
                props["link"] = True
            if e.ignore:
                props["ignore"] = e.ignore
        before = len(w.lines)
        w.declare("file", props)
        w.lines[before] = indent + w.lines[before]
