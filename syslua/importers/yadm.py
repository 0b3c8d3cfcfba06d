"""yadm: the home as yadm checks it out, from a clone of the yadm repository.

yadm keeps the home itself as the work tree of a bare repository, so every
tracked file is a plain file in `~`. The translation reads a clone of that
repository (SOURCE) and declares each tracked file as a copy from the clone
(the content and mode git checks out, so a yadm home is already converged).
An alternate, `NAME##os.Linux` (also `##hostname.H`, `##user.U`, `##class.C`,
`##distro.D`, `##distro_family.F`, `##arch.A`, several joined by commas,
`##default`), is a tracked file like the others, and `~/NAME` is the link
yadm makes to the one that fits the machine: here an `if` on facts, most
specific first, as yadm scores them. Templates, the encrypt list and its
archive, and the bootstrap script are listed as not translated.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from syslua.importers import Imported, ImportError_, Options
from syslua.importers.lua import Writer, quote, relative

OWN = ("sys.lua", "sys.lua.orig")
ALT_DIR = ".config/yadm/alt/"  # yadm 3: alternates kept here stand for ~/NAME
# label (and its short form) -> (weight in yadm's score, Lua for `value`)
CONDITIONS: dict[str, tuple[int, str]] = {
    "default": (0, ""),
    "arch": (1, "sys.facts.arch == {v}"),
    "os": (2, "sys.facts.os == {lv}"),
    "distro": (4, "sys.facts.host.info.platform == {lv}"),
    "distro_family": (8, "sys.facts.host.info.platformFamily == {lv}"),
    "class": (16, "sys.facts.class == {v}"),
    "hostname": (32, "sys.facts.hostname == {v}"),
    "user": (64, "sys.user.name == {v}"),
}
SHORT = {"a": "arch", "o": "os", "d": "distro", "f": "distro_family", "c": "class"}
SHORT |= {"h": "hostname", "u": "user"}
TEMPLATE = ("t", "template", "yadm")
ENCRYPT = (".config/yadm/encrypt", ".yadm/encrypt")
ARCHIVES = (".local/share/yadm/archive", ".config/yadm/files.gpg", ".yadm/files.gpg")
BOOTSTRAP = (".config/yadm/bootstrap", ".yadm/bootstrap")


@dataclass
class Alt:
    """One alternate of `~/target`: its source (relative to the repository) and condition."""

    src: str
    score: int  # yadm's score when every condition holds
    cond: str  # Lua; "" for ##default


def translate(source: Path, options: Options) -> Imported:
    if not source.is_dir():
        raise ImportError_(f"{source} is not a directory: yadm reads a clone of the repository")
    if (source / "HEAD").is_file() and (source / "objects").is_dir():
        raise ImportError_(
            f"{source} is a bare repository: import a clone of it"
            f" (git clone {source} ~/dotfiles-yadm; sys import yadm ~/dotfiles-yadm)"
        )
    files = _tracked(source)
    untranslated: list[str] = []
    alts: dict[str, list[Alt]] = {}
    for rel in files:
        _classify(rel, alts, untranslated)
    _notes(source, files, untranslated)
    w = Writer(
        [
            f"yadm's repository, cloned at {source.name}/: the home as yadm checks it out.",
            "Each tracked file is a copy in ~; ~/NAME links to the alternate NAME##... that",
            "fits this machine, as yadm links it. Written by `sys import yadm`; see docs/import.md#yadm.",
        ]
    )
    for why in untranslated:
        w.comment(f"not translated: {why}")
    prefix = relative(source, options.base).rstrip("/") + "/"
    w.blank()
    w.comment("the tracked files, each copied to ~/NAME")
    if len(files) == 1:
        w.declare("file", {"path": f"~/{files[0]}", "source": prefix + files[0]})
    elif files:
        names = "".join(f"  {quote(f)},\n" for f in files)
        w.raw(
            f"for _, name in ipairs {{\n{names}}} do\n"
            f'  file {{ path = "~/" .. name, source = {quote(prefix)} .. name }}\n'
            "end",
            declarations=len(files),
        )
    for target in sorted(alts):
        _emit_alt(w, target, alts[target])
    return Imported(w.text(), w.declarations, untranslated)


def _tracked(source: Path) -> list[str]:
    """The repository's files: git's list in a clone, else every file but .git's."""
    if (source / ".git").exists():
        p = subprocess.run(
            ["git", "-C", str(source), "ls-files", "-z"], capture_output=True, check=False
        )
        if p.returncode != 0:
            raise ImportError_(f"git ls-files in {source}: {p.stderr.decode(errors='replace')}")
        names = [n for n in p.stdout.decode(errors="surrogateescape").split("\0") if n]
    else:
        names = []
        for top, dirs, fs in os.walk(source):
            dirs[:] = [d for d in dirs if d != ".git"]
            names += [str(Path(top, f).relative_to(source)) for f in fs]
    return sorted(n for n in names if n not in OWN)


def _alt_part(rel: str) -> tuple[str, str, str] | None:
    """(target, source, conditions) when a component of `rel` is an alternate `NAME##...`."""
    parts = rel.split("/")
    for i, part in enumerate(parts):
        base, sep, conds = part.partition("##")
        if sep and base and conds:
            target = "/".join([*parts[:i], base])
            if target.startswith(ALT_DIR):
                target = target[len(ALT_DIR) :]
            return target, "/".join(parts[: i + 1]), conds
    return None


def _classify(rel: str, alts: dict[str, list[Alt]], untranslated: list[str]) -> None:
    found = _alt_part(rel)
    if found is None:
        return
    target, src, conds = found
    if any(a.src == src for a in alts.get(target, [])):
        return  # a directory alternate, seen through another of its files
    score, tests = 0, []
    for field in conds.split(","):
        label, _, value = field.partition(".")
        label = SHORT.get(label, label)
        if label in ("e", "extension"):
            continue
        if label in TEMPLATE:
            untranslated.append(
                f"{src}: a yadm template; ~/{target} is left as it is"
                " (a `template = true` file can replace it)"
            )
            return
        if label not in CONDITIONS:
            untranslated.append(f"{src}: ##{field} is no condition yadm knows; left out")
            return
        weight, lua = CONDITIONS[label]
        score += 1000 + weight
        if lua:
            tests.append(lua.format(v=quote(value), lv=quote(value.lower())))
        if label == "class":
            untranslated.append(
                f"{src}: yadm's class is its own setting (yadm config local.class):"
                f' set "class" in ~/.config/syslua/facts.json'
            )
    alts.setdefault(target, []).append(Alt(src, score, " and ".join(tests)))


def _notes(source: Path, files: list[str], untranslated: list[str]) -> None:
    for rel in files:
        if rel in ENCRYPT:
            pats = [
                ln.strip()
                for ln in (source / rel).read_text(errors="replace").splitlines()
                if ln.strip() and not ln.lstrip().startswith("#")
            ]
            untranslated.append(
                f"{rel}: yadm encrypts {', '.join(pats) or 'nothing'}; those files are not"
                " managed (keep them as .age sources)"
            )
        elif rel in ARCHIVES:
            untranslated.append(f"{rel}: yadm's encrypted archive, copied as it is, not decrypted")
        elif rel in BOOTSTRAP:
            untranslated.append(f"{rel}: yadm's bootstrap script; not run (an `exec` can run it)")


def _emit_alt(w: Writer, target: str, alts: list[Alt]) -> None:
    """`~/target` a link to the best alternate whose conditions hold, as yadm scores them."""
    ranked = sorted(alts, key=lambda a: (-a.score, a.src))  # ties: yadm keeps the first in C order
    w.blank()
    w.comment(f"~/{target}: a link to its alternate for this machine, as yadm makes it")
    branches = []
    for a in ranked:
        branches.append(a)
        if not a.cond:  # ##default (or only ##e.x): always holds; nothing after it counts
            break
    for i, a in enumerate(branches):
        line = f'file {{ path = {quote("~/" + target)}, ensure = "link", target = {quote("~/" + a.src)} }}'
        if len(branches) == 1 and not a.cond:
            w.raw(line, declarations=1)
            break
        keyword = "if" if i == 0 else "elseif"
        w.raw(f"{keyword} {a.cond} then" if a.cond else "else")
        w.raw("  " + line, declarations=1)
    if branches and (len(branches) > 1 or branches[0].cond):
        w.raw("end")
