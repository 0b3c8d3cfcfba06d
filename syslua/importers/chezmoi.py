"""`sys import chezmoi SOURCE_DIR`: chezmoi's source state as a `sys.lua`.

chezmoi copies (it does not link): each target is a file made from a source
file whose name carries its attributes (`private_dot_ssh/config`,
`executable_dot_local/bin/x`, `symlink_dot_vimrc`, `run_once_before_x.sh`).
A directory whose every file below is a plain copy (no attribute, no
template, modes as chezmoi gives them) becomes one tree; everything else is
declared file by file. `.tmpl` files become `content` built in Lua from
facts and the repository's data (`.chezmoidata.*`, and `[data]` of the
chezmoi config in the home); what cannot be said is left out and listed.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syslua.importers import Imported, ImportError_, Options
from syslua.importers import chezmoi_template as tpl
from syslua.importers.lua import Raw, Writer, quote, relative, tilde

# The attribute prefixes each kind of entry may carry, in chezmoi's order.
_DIR_PREFIXES = ("remove_", "external_", "exact_", "private_", "readonly_", "dot_")
_FILE_PREFIXES = ("encrypted_", "private_", "readonly_", "empty_", "executable_", "dot_")
_CREATE_PREFIXES = ("create_", *_FILE_PREFIXES)
_MODIFY_PREFIXES = ("modify_", "encrypted_", "private_", "readonly_", "executable_", "dot_")
_SCRIPT_PREFIXES = ("run_", "once_", "onchange_", "before_", "after_")
_SYMLINK_PREFIXES = ("symlink_", "dot_")
_REMOVE_PREFIXES = ("remove_", "dot_")
# `[ -e "$HOME/x" ] && exit 0` at the top of a script: it is done once x exists.
_GUARD = re.compile(
    r"""^\s*(?:\[|test)\s+-[edfLhsx]\s+["']?(?P<path>[^"'\s\]]+)["']?\s*\]?\s*&&\s*exit(?:\s+0)?\s*;?\s*$"""
)


@dataclass
class Name:
    """A source name read: the target name, its attributes, whether a template."""

    target: str
    attrs: set[str] = field(default_factory=set)
    template: bool = False


def parse_name(name: str, is_dir: bool) -> Name:
    """chezmoi's reading of a source name (`private_dot_ssh` -> `.ssh`, {private})."""
    order: tuple[str, ...]
    if is_dir:
        order = _DIR_PREFIXES
    else:
        first = next(
            (
                p
                for p in ("run_", "create_", "modify_", "symlink_", "remove_")
                if name.startswith(p)
            ),
            None,
        )
        order = {
            "run_": _SCRIPT_PREFIXES,
            "create_": _CREATE_PREFIXES,
            "modify_": _MODIFY_PREFIXES,
            "symlink_": _SYMLINK_PREFIXES,
            "remove_": _REMOVE_PREFIXES,
        }.get(first or "", _FILE_PREFIXES)
    attrs: set[str] = set()
    rest = name
    for prefix in order:
        if rest.startswith("literal_"):
            rest = rest[len("literal_") :]
            break
        if rest.startswith(prefix):
            attrs.add(prefix[:-1])
            rest = rest[len(prefix) :]
            if prefix == "dot_":
                rest = "." + rest
    out = Name(rest, attrs)
    if not is_dir:
        if out.target.endswith(".literal"):
            out.target = out.target[: -len(".literal")]
        elif out.target.endswith(".tmpl"):
            out.target, out.template = out.target[: -len(".tmpl")], True
        if "encrypted" in attrs:
            for suffix in (".age", ".asc"):
                if out.target.endswith(suffix):
                    out.target = out.target[: -len(suffix)]
    return out


def file_mode(attrs: set[str]) -> int:
    """The mode chezmoi gives a file with `attrs` (umask 022)."""
    mode = 0o755 if "executable" in attrs else 0o644
    if "private" in attrs:
        mode &= 0o700
    if "readonly" in attrs:
        mode &= ~0o222
    return mode


def dir_mode(attrs: set[str]) -> int:
    mode = 0o755
    if "private" in attrs:
        mode &= 0o700
    if "readonly" in attrs:
        mode &= ~0o222
    return mode


# -- .chezmoiignore ------------------------------------------------------------


@dataclass
class Pattern:
    glob: str
    when: str | None  # Lua condition under which it applies (None: always)
    negated: bool = False
    regex: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        self.regex = re.compile(_glob_regex(self.glob.strip("/")))


def _glob_regex(glob: str) -> str:
    """A doublestar glob on target paths: `*` within a name, `**` across names."""
    out, i = [], 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c)))
        i += 1
    return "^" + "".join(out) + "$"


def read_ignore(path: Path, ctx: tpl.Context, notes: list[str], label: str) -> list[Pattern]:
    """`.chezmoiignore`'s patterns, each with the Lua condition it is under."""
    if not path.is_file():
        return []
    patterns: list[Pattern] = []
    stack: list[str] = []  # the conditions of the enclosing ifs
    for kind, text, line in tpl.pieces(path.read_text()):
        if kind == "action":
            word = text.split(None, 1)
            head = word[0] if word else ""
            try:
                if head == "if":
                    stack.append(tpl.condition(word[1], ctx, line))
                elif head == "else" and stack:
                    stack[-1] = f"not {stack[-1]}"
                elif head == "end" and stack:
                    stack.pop()
                elif not text.startswith("/*"):
                    raise tpl.Untranslatable(f"`{{{{ {text} }}}}`", line)
            except tpl.Untranslatable as e:
                notes.append(f"{label}:{e.line}: {e.why}; its patterns apply everywhere")
                if head == "if":
                    stack.append("true")
            continue
        for raw in text.split("\n"):
            glob = raw.split(" #")[0].strip()
            if not glob or glob.startswith("#"):
                continue
            when = " and ".join(stack) if stack else None
            negated = glob.startswith("!")
            patterns.append(Pattern(glob.lstrip("!"), when, negated))
    return patterns


def ignored(target: str, patterns: list[Pattern]) -> tuple[bool, list[str]]:
    """(always ignored, conditions under which it is ignored) for a target path."""
    parts = target.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    hits = [p for p in patterns if not p.negated and any(p.regex.match(x) for x in prefixes)]
    if any(p.negated and p.regex.match(target) for p in patterns):
        return False, []
    if any(p.when is None for p in hits):
        return True, []
    return False, [p.when for p in hits if p.when is not None]


# -- data ----------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text()
    if path.suffix == ".json":
        data = json.loads(text)
    elif path.suffix == ".toml":
        data = tomllib.loads(text)
    else:
        import yaml

        data = yaml.safe_load(text)
    return data if isinstance(data, dict) else {}


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def read_data(root: Path, target: Path) -> tuple[dict[str, Any], list[str]]:
    """`.chezmoidata.*` (and `.chezmoidata/`) merged, then the config's `[data]`."""
    data: dict[str, Any] = {}
    read: list[str] = []
    files = sorted(root.glob(".chezmoidata.*"))
    if (root / ".chezmoidata").is_dir():
        files += sorted((root / ".chezmoidata").rglob("*"))
    for path in files:
        if path.is_file() and path.suffix in (".json", ".toml", ".yaml", ".yml"):
            try:
                data = _merge(data, _load(path))
            except Exception as e:  # noqa: BLE001 (any parser's error is the user's file)
                raise ImportError_(f"cannot read {path}: {e}") from None
            read.append(str(path.relative_to(root)))
    for name in ("chezmoi.toml", "chezmoi.yaml", "chezmoi.json"):
        config = target / ".config" / "chezmoi" / name
        if config.is_file():
            try:
                section = _load(config).get("data", {})
            except Exception as e:  # noqa: BLE001
                raise ImportError_(f"cannot read {config}: {e}") from None
            if isinstance(section, dict) and section:
                data = _merge(data, section)
                read.append(f"[data] of {tilde(config)}")
    return data, read


def data_lua(data: dict[str, Any], indent: str = "  ") -> list[str]:
    """`local data = { ... }` with a fact of each top-level name winning."""
    lines = ["local data = {"]
    for key, value in data.items():
        name = key if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", key) else f"[{quote(key)}]"
        lit = _lua_value(value, indent)
        if isinstance(value, str | int | float | bool):
            fact = f"sys.facts.{key}" if not name.startswith("[") else f"sys.facts{name}"
            if isinstance(value, bool):
                lit = f"({fact} == nil and {lit} or {fact})" if value else f"{fact} or false"
            else:
                lit = f"{fact} or {lit}"
        lines.append(f"{indent}{name} = {lit},")
    lines.append("}")
    return lines


def _lua_value(value: Any, indent: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, list):
        return "{ " + ", ".join(_lua_value(v, indent) for v in value) + " }"
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            name = k if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", str(k)) else f"[{quote(str(k))}]"
            items.append(f"{name} = {_lua_value(v, indent)}")
        return "{ " + ", ".join(items) + " }"
    return quote(str(value))


# -- the walk ------------------------------------------------------------------


@dataclass
class Block:
    """Lines for one entry, declared only when `when` (Lua) holds."""

    lines: list[str]
    declarations: int
    when: str | None = None


@dataclass
class Walk:
    root: Path
    options: Options
    ctx: tpl.Context
    patterns: list[Pattern]
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    scripts: list[tuple[str, Block]] = field(default_factory=list)

    def src(self, path: Path) -> str:
        return relative(path, self.options.base)

    def dest(self, target: str) -> str:
        return tilde(self.options.target / target)

    def label(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def add(self, lines: list[str], n: int, when: list[str]) -> None:
        """Lines declared unless one of `when` (a `.chezmoiignore` condition) holds."""
        self.blocks.append(Block(lines, n, f"not ({' or '.join(when)})" if when else None))

    def decl(self, kind: str, props: dict[str, object], comment: str | None = None) -> list[str]:
        w = Writer([])
        w.declare(kind, props, comment)
        return w.lines


_SPECIAL = (".chezmoiignore", ".chezmoiroot", ".chezmoiversion", ".chezmoidata", ".chezmoiscripts")


def walk_dir(walk: Walk, src: Path, prefix: str, when: list[str]) -> None:
    """Declare the entries of source directory `src`, whose target is `prefix`."""
    for child in sorted(src.iterdir(), key=lambda p: p.name):
        if child.name.startswith("."):
            if src == walk.root:
                _dot_entry(walk, child)
            continue
        is_dir = child.is_dir() and not child.is_symlink()
        name = parse_name(child.name, is_dir)
        if "run" in name.attrs:
            _script(walk, child, name, prefix)
            continue
        target = prefix + name.target
        always, conds = ignored(target, walk.patterns)
        if always:
            continue
        conds = when + [c for c in conds if c not in when]
        if is_dir:
            _dir_entry(walk, child, name, target, conds)
        else:
            _file_entry(walk, child, name, target, conds)


def _dot_entry(walk: Walk, child: Path) -> None:
    """A name starting with `.` at the top: chezmoi's own files, or ignored."""
    if child.name == ".chezmoiscripts" and child.is_dir():
        for script in sorted(child.rglob("*")):
            if script.is_file():
                name = parse_name(script.name, False)
                if "run" in name.attrs:
                    _script(walk, script, name, "")
        return
    if child.name.startswith(_SPECIAL):
        return
    if child.name.startswith(".chezmoi"):
        walk.notes.append(f"{child.name}: chezmoi's {child.name} is not translated")


def tree_ok(walk: Walk, src: Path, target: str, when: list[str]) -> tuple[bool, list[str], bool]:
    """Whether `src` can be one tree: (ok, its `ignore` list, needs mode 0644)."""
    ignore: list[str] = []
    needs_mode = False
    files = 0
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src)
        if any(
            r == "/" + "/".join(rel.parts[: i + 1]) for i in range(len(rel.parts)) for r in ignore
        ):
            continue
        if p.name.startswith(".") or ignored(f"{target}/{rel}", walk.patterns)[0]:
            ignore.append("/" + str(rel))
            continue
        if set(ignored(f"{target}/{rel}", walk.patterns)[1]) - set(when) or p.is_symlink():
            return False, [], False
        name = parse_name(p.name, p.is_dir())
        if name.attrs or name.template or name.target != p.name:
            return False, [], False
        if p.is_file():
            mode = p.stat().st_mode & 0o777
            if mode & 0o111 or p.stat().st_size == 0:
                return False, [], False
            needs_mode = needs_mode or mode != 0o644
            files += 1
    return files > 0, ignore, needs_mode


def _dir_entry(walk: Walk, src: Path, name: Name, target: str, when: list[str]) -> None:
    label = walk.label(src)
    if "remove" in name.attrs:
        walk.add(walk.decl("file", {"path": walk.dest(target), "ensure": "absent"}, label), 1, when)
        return
    if "exact" in name.attrs:
        walk.notes.append(
            f"{label}: exact_: chezmoi removes what it does not list in {walk.dest(target)}; "
            "syslua leaves other files there"
        )
    plain = not (name.attrs - {"dot", "exact"})
    ok, ignore, needs_mode = tree_ok(walk, src, target, when) if plain else (False, [], False)
    if ok:
        props: dict[str, object] = {"path": walk.dest(target), "source": walk.src(src)}
        if needs_mode:
            props["mode"] = "0644"
        if ignore:
            props["ignore"] = ignore
        walk.add(walk.decl("file", props, f"{label}/ (every file a plain copy)"), 1, when)
        return
    mode = dir_mode(name.attrs)
    if mode != 0o755 or not any(src.iterdir()):
        props = {"path": walk.dest(target), "ensure": "directory"}
        if mode != 0o755:
            props["mode"] = f"{mode:04o}"
        walk.add(walk.decl("file", props, label), 1, when)
    walk_dir(walk, src, target + "/", when)


def _file_entry(walk: Walk, src: Path, name: Name, target: str, when: list[str]) -> None:
    label, dest = walk.label(src), walk.dest(target)
    if "modify" in name.attrs:
        walk.notes.append(f"{label}: modify_: a script that edits {dest} is not translated")
        return
    if "encrypted" in name.attrs:
        walk.notes.append(
            f"{label}: encrypted_: left out; decrypt it into the repository as an .age source "
            "for `decrypt = true`"
        )
        return
    if "remove" in name.attrs:
        walk.add(walk.decl("file", {"path": dest, "ensure": "absent"}, label), 1, when)
        return
    text: str | None = None
    if name.template:
        text = _render(walk, src, label)
        if text is None:
            return
    if "symlink" in name.attrs:
        _symlink(walk, src, name, target, text, when)
        return
    mode = file_mode(name.attrs)
    if "create" in name.attrs:
        _create(walk, src, name, dest, mode, text, when)
        return
    if text is None and src.stat().st_size == 0 and "empty" not in name.attrs:
        walk.notes.append(f"{label}: empty and without empty_: chezmoi makes no {dest}; left out")
        return
    props: dict[str, object] = {"path": dest}
    if text is not None:
        props["content"] = Raw(text)
        if mode != 0o644:
            props["mode"] = f"{mode:04o}"
        walk.add(_multiline(walk.decl("file", props, label)), 1, when)
        return
    props["source"] = walk.src(src)
    if mode != src.stat().st_mode & 0o777:
        props["mode"] = f"{mode:04o}"
    walk.add(walk.decl("file", props, label), 1, when)


def _multiline(lines: list[str]) -> list[str]:
    """A declaration whose content spans lines, its comment moved above it."""
    line = lines[0]
    text, _, comment = line.rpartition("  -- ")
    return [f"-- {comment}", *text.split("\n")] if text else lines


def _render(walk: Walk, src: Path, label: str) -> str | None:
    """The template's Lua expression, or None (noted) when it cannot be said."""
    try:
        return tpl.to_lua(src.read_text(), walk.ctx)
    except tpl.Untranslatable as e:
        walk.notes.append(f"{label}:{e.line}: {e.why}; left out")
    except UnicodeDecodeError:
        walk.notes.append(f"{label}: not text; left out")
    return None


def _symlink(
    walk: Walk, src: Path, name: Name, target: str, text: str | None, when: list[str]
) -> None:
    label, dest = walk.label(src), walk.dest(target)
    if text is not None:
        try:
            link: object = Raw(tpl.to_lua(src.read_text().strip(), walk.ctx))
        except tpl.Untranslatable as e:
            walk.notes.append(f"{label}:{e.line}: {e.why}; left out")
            return
        comment = label
    else:
        raw = src.read_text().strip()
        where = os.path.join(os.path.dirname(str(walk.options.target / target)), raw)
        link = tilde(os.path.normpath(where))
        comment = label if raw.startswith("/") else f"{label}: chezmoi's link reads {raw}"
    walk.add(walk.decl("file", {"path": dest, "ensure": "link", "target": link}, comment), 1, when)


def _create(
    walk: Walk, src: Path, name: Name, dest: str, mode: int, text: str | None, when: list[str]
) -> None:
    """create_: made once, when absent (an exec with `creates`), never updated."""
    label = walk.label(src)
    if text is not None:
        walk.notes.append(f"{label}: create_ with a template is not translated; left out")
        return
    command = Raw(
        f'"install -D -m {mode:04o} " .. sys.path({quote(walk.src(src))}) .. " " .. sys.path({quote(dest)})'
    )
    walk.add(
        walk.decl(
            "exec",
            {"name": f"create {dest}", "command": command, "creates": dest},
            f"{label}: only when absent",
        ),
        1,
        when,
    )


def _script(walk: Walk, src: Path, name: Name, prefix: str) -> None:
    """run_ scripts: an exec; run_once_/run_onchange_ only with a guard we can read."""
    label = walk.label(src)
    if name.template:
        walk.notes.append(f"{label}: a script template is not translated; left out")
        return
    try:
        text = src.read_text()
    except UnicodeDecodeError:
        walk.notes.append(f"{label}: not a text script; left out")
        return
    first = text.split("\n", 1)[0]
    interp = first[2:].strip() if first.startswith("#!") else "sh"
    command = Raw(f'"{interp} " .. sys.path({quote(walk.src(src))})')
    props: dict[str, object] = {"name": label, "command": command}
    props["cwd"] = walk.dest(prefix.rstrip("/")) if prefix else "~"
    guard = _guard(text)
    if guard:
        props["creates"] = guard
    when = (
        "before files" if "before" in name.attrs else "after files" if "after" in name.attrs else ""
    )
    once = "once" in name.attrs or "onchange" in name.attrs
    lines = walk.decl("exec", props, f"chezmoi runs it {when}".strip() if when else None)
    if once and not guard:
        walk.notes.append(
            f"{label}: {'run_once_' if 'once' in name.attrs else 'run_onchange_'}: syslua runs an "
            "exec on every apply unless it says when it is done; commented out: give it `creates`"
        )
        lines = ["-- " + line for line in lines]
        walk.scripts.append((label, Block(lines, 0)))
        return
    walk.scripts.append((label, Block(lines, 1)))


def _guard(text: str) -> str | None:
    """`creates` from a script's `[ -e "$HOME/x" ] && exit 0` near its top."""
    for line in text.split("\n")[1:15]:
        m = _GUARD.match(line)
        if m:
            path = m.group("path")
            for home in ("$HOME/", "${HOME}/", "~/"):
                if path.startswith(home):
                    return "~/" + path[len(home) :]
            return path if path.startswith("/") else None
    return None


# -- the sys.lua ---------------------------------------------------------------


def translate(source: Path, options: Options) -> Imported:
    """The `sys.lua` for the chezmoi source directory `source`."""
    if not source.is_dir():
        raise ImportError_(f"{source} is not a directory: chezmoi's source directory is")
    root = source
    if (source / ".chezmoiroot").is_file():
        root = source / (source / ".chezmoiroot").read_text().strip()
    data, data_from = read_data(root, options.target)
    ctx = tpl.Context(data, f"sys.path({quote(relative(root, options.base))})")
    notes: list[str] = []
    patterns = read_ignore(root / ".chezmoiignore", ctx, notes, ".chezmoiignore")
    walk = Walk(root, options, ctx, patterns, notes=notes)
    walk_dir(walk, root, "", [])
    return _write(walk, source, data, data_from)


def _write(walk: Walk, source: Path, data: dict[str, Any], data_from: list[str]) -> Imported:
    w = Writer(
        [
            f"Imported from chezmoi's source state in {tilde(source)} (sys import chezmoi).",
            "chezmoi copies files, so this config copies them too: a directory whose every",
            "file is a plain copy is one tree; prefixes (private_, executable_, ...) are modes.",
        ]
    )
    if walk.notes:
        w.comment("\nNot translated (left out, so that the rest applies):")
        for note in walk.notes:
            w.comment(f"  {note}")
    w.blank()
    if walk.ctx.uses_hostname:
        w.raw('local hostname = sys.hostname:match("^[^.]*")  -- chezmoi\'s .chezmoi.hostname')
    if data:
        w.comment(f"chezmoi's data ({', '.join(data_from)}); a fact of the same name wins.")
        w.raw("\n".join(data_lua(data)))
    w.blank()
    _blocks(w, walk.blocks)
    if walk.scripts:
        w.blank()
        w.comment(
            "Scripts (chezmoi runs run_before_ ones before the files, run_after_ ones after)."
        )
        _blocks(w, [b for _, b in walk.scripts])
    return Imported(w.text(), w.declarations, walk.notes)


def _blocks(w: Writer, blocks: list[Block]) -> None:
    """Blocks in order; neighbours under the same condition share one `if`."""
    i = 0
    while i < len(blocks):
        when = blocks[i].when
        j = i
        while j < len(blocks) and blocks[j].when == when:
            j += 1
        group = blocks[i:j]
        n = sum(b.declarations for b in group)
        if when is None:
            for b in group:
                w.raw("\n".join(b.lines), b.declarations)
        else:
            w.raw(f"if {when} then  -- .chezmoiignore")
            for b in group:
                # A long string's lines are its content: they are not indented.
                long = any("[[" in line or "[=" in line for line in b.lines)
                w.raw("\n".join(line if long else "  " + line for line in b.lines))
            w.raw("end", n)
        i = j
