"""`sys import dotbot CONFIG`: a `sys.lua` from a dotbot `install.conf.yaml` (or `.json`).

The repository is the config's directory, as dotbot's own `-d` default. The
directives are read in order, each with the `defaults` in force before it:

- `create`: a directory each, with the mode dotbot gives it (`mode`, else
  0777: dotbot chmods the new directory to exactly that, umask or not);
- `link`: a file's link is `link = true` beside `source`; a directory is one
  link (`ensure = "link"`, as dotbot made it), never a link tree; a glob is
  expanded now (a whole folder of plain files becomes one link tree); `if`
  conditions on the OS or host name become `if sys.facts.os == ... then`
  blocks, others leave the link out; a link whose source is missing (dotbot
  would fail it, or with `ignore-missing` leave it dangling) is left out;
- `shell`: an `exec` in the repository directory, guarded by `creates` when
  the command obviously makes one path, else run once (when the first link
  is made: on a new machine) with a note;
- `clean`: a note (syslua removes what it managed itself);
- anything else (a plugin's directive) is listed as not translated.

Every choice that changes what dotbot did is a comment in the text.
"""

from __future__ import annotations

import glob as globbing
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from syslua.importers import Imported, ImportError_, Options
from syslua.importers.lua import Raw, Writer, quote, relative, tilde
from syslua.paths import home

DIRECTIVES = ("defaults", "create", "link", "shell", "clean")


class _Lines(yaml.SafeLoader):
    """A YAML loader that remembers the line of every mapping key, for notes."""

    lines: dict[int, dict[Any, int]]


def _mapping(loader: _Lines, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    where: dict[Any, int] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        out[key] = loader.construct_object(value_node, deep=True)
        where[key] = key_node.start_mark.line + 1
    loader.lines[id(out)] = where
    return out


def _sequence(loader: _Lines, node: yaml.SequenceNode, deep: bool = False) -> list[Any]:
    out = [loader.construct_object(item, deep=True) for item in node.value]
    loader.lines[id(out)] = {i: item.start_mark.line + 1 for i, item in enumerate(node.value)}
    return out


_Lines.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Lines.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


@dataclass
class _State:
    """What the translation knows as it walks the directives."""

    config: Path
    repo: Path
    options: Options
    lines: dict[int, dict[Any, int]]
    w: Writer
    defaults: dict[str, Any] = field(default_factory=dict)
    untranslated: list[str] = field(default_factory=list)
    anchor: str | None = None  # the first link: what a run-once exec waits for
    execs: list[tuple[dict[str, object], str]] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    made: list[str] = field(default_factory=list)  # the declarations of the link at hand
    directories: list[str] = field(default_factory=list)  # from `create`

    def where(self, mapping: object, key: object) -> str:
        line = self.lines.get(id(mapping), {}).get(key)
        return f"{self.config.name}:{line}" if line else self.config.name

    def note(self, mapping: object, key: object, why: str) -> None:
        self.untranslated.append(f"{self.where(mapping, key)}: {why}")

    def src(self, path: str) -> str:
        """A repository path as the sys.lua names it (`vimrc`, `../dotfiles/vimrc`)."""
        rel = relative(path, self.options.base)
        return rel[2:] if rel.startswith("./") else rel


def translate(source: Path, options: Options) -> Imported:
    """The `sys.lua` for the dotbot config at `source`."""
    config = source / "install.conf.yaml" if source.is_dir() else source
    if not config.is_file():
        raise ImportError_(f"{source}: no install.conf.yaml here; name the config file")
    directives, lines = _read(config)
    header = [
        f"Imported from {config.name} by `sys import dotbot` (dotbot's directives, in order).",
        "Each link points where dotbot's points, so sys apply takes dotbot's home over as it is.",
    ]
    st = _State(config, config.parent, options, lines, Writer(header))
    for index, directive in enumerate(directives):
        if not isinstance(directive, dict):
            raise ImportError_(f"{config}: entry {index + 1} is not a map of directives")
        for name, data in directive.items():
            _directive(st, directive, name, data)
    _shell_execs(st)
    text = st.w.lines
    if st.untranslated:
        notes = ["", "Not translated:"] + [f"  {n}" for n in st.untranslated]
        text[len(header) : len(header)] = [f"-- {n}" if n else "--" for n in notes]
    return Imported(st.w.text(), st.w.declarations, st.untranslated)


def _read(config: Path) -> tuple[list[Any], dict[int, dict[Any, int]]]:
    text = config.read_text()
    lines: dict[int, dict[Any, int]] = {}
    try:
        if config.suffix == ".json":
            data = json.loads(text)
        else:
            loader = _Lines(text)
            loader.lines = lines
            try:
                data = loader.get_single_data()
            finally:
                loader.dispose()
    except (yaml.YAMLError, json.JSONDecodeError) as e:
        raise ImportError_(f"{config} is not a dotbot config: {e}") from None
    if data is None:
        data = []
    if not isinstance(data, list):
        raise ImportError_(
            f"{config} is not a dotbot config: it must be a list of directives "
            "(- link: ..., - shell: ...)"
        )
    return data, lines


def _directive(st: _State, directive: dict[str, Any], name: str, data: Any) -> None:
    where = st.where(directive, name)
    if name == "defaults":
        st.defaults = data if isinstance(data, dict) else {}
    elif name == "create":
        _create(st, where, data)
    elif name == "link":
        _links(st, where, data if isinstance(data, dict) else {})
    elif name == "shell":
        _shell(st, data if isinstance(data, list) else [])
    elif name == "clean":
        targets = list(data) if isinstance(data, dict | list) else [data]
        st.w.blank()
        st.w.comment(
            f"clean ({where}): {', '.join(str(t) for t in targets)}: dotbot removes dead links\n"
            "into the repository there; syslua removes what it made itself when a line goes."
        )
    else:
        st.note(directive, name, f"`{name}`: a plugin's directive, not translated")


def _home_path(st: _State, name: str) -> str:
    """A link's or directory's path as dotbot expands it, absolute."""
    path = os.path.expandvars(os.path.expanduser(str(name).rstrip("/") or "/"))
    return os.path.normpath(os.path.join(st.repo, path))


def _mode(value: Any) -> str:
    """dotbot's mode (an int, YAML's 0700 included, or a string) as "0755"."""
    if isinstance(value, str):
        value = int(value, 8)
    return f"{int(value):04o}"


def _create(st: _State, where: str, data: Any) -> None:
    default = st.defaults.get("create", {}).get("mode", 0o777)
    entries = data.items() if isinstance(data, dict) else ((p, None) for p in data or [])
    st.w.blank()
    st.w.comment(f"create ({where}): directories, with dotbot's mode (0777 unless told)")
    for path, opts in entries:
        mode = (opts or {}).get("mode", default) if isinstance(opts, dict) else default
        at = tilde(_home_path(st, path))
        st.w.declare("file", {"path": at, "ensure": "directory", "mode": _mode(mode)})
        st.directories.append(f"file#{at}")


# -- link ----------------------------------------------------------------------


@dataclass
class _Link:
    """One `link` entry with dotbot's defaults applied."""

    name: str  # the key, as written
    path: str  # where the link goes, absolute
    source: str  # the repository path (or pattern), absolute
    opts: dict[str, Any]
    where: str


def _links(st: _State, where: str, data: dict[str, Any]) -> None:
    st.w.blank()
    st.w.comment(f"link ({where}): a file is a link; a directory one link, as dotbot made it")
    defaults = st.defaults.get("link", {})
    for name, value in data.items():
        opts = {**defaults, **(value if isinstance(value, dict) else {})}
        target = value.get("path") if isinstance(value, dict) else value
        if target is None:  # dotbot's default: the name without its leading dot
            target = os.path.basename(str(name).rstrip("/")).removeprefix(".")
        source = os.path.normpath(os.path.join(st.repo, os.path.expanduser(str(target))))
        link = _Link(str(name), _home_path(st, name), source, opts, st.where(data, name))
        _link(st, link)


def _link(st: _State, link: _Link) -> None:
    body = Writer([])
    st.made = []
    if not _unsupported(st, link):
        if link.opts.get("glob") and any(c in link.source for c in "*?["):
            _glob(st, link, body)
        else:
            _one(st, link, link.path, link.source, body)
    test = link.opts.get("if")
    if not body.lines:
        return
    if test is None:
        st.w.raw("\n".join(body.lines), body.declarations)
        st.anchor = st.anchor or (st.made[0] if st.made else None)
        return
    condition = _condition(str(test))
    if condition is None:
        st.untranslated.append(
            f"{link.where}: {link.name}: `if: {test}` is a shell test with no fact to "
            "match; the link is left out (uncomment it where it holds)"
        )
        st.w.comment(f"{link.name}: left out: dotbot links it only `if: {test}`")
        for line in body.lines:
            st.w.comment(line)
        return
    inner = "\n".join("  " + line for line in body.lines)
    st.w.raw(f"if {condition} then  -- if: {test}\n{inner}\nend", body.declarations)


def _unsupported(st: _State, link: _Link) -> bool:
    """Options with no syslua meaning, noted; True when the link is left out for them."""
    if link.opts.get("type", "symlink") not in ("symlink", "hardlink"):
        st.untranslated.append(f"{link.where}: {link.name}: unknown link type, left out")
        return True
    return False


def _one(st: _State, link: _Link, path: str, source: str, w: Writer) -> None:
    """One link from `path` to `source` (a file or a directory of the repository)."""
    at = tilde(path)
    if not os.path.exists(source):
        why = (
            "with ignore-missing dotbot would leave a dangling link"
            if link.opts.get("ignore-missing")
            else "dotbot fails this link and makes nothing"
        )
        w.comment(f"{at}: left out: its source {st.src(source)} does not exist ({why})")
        return
    notes = []
    if link.opts.get("relative"):
        notes.append("dotbot made it relative; syslua's links are absolute")
    if link.opts.get("type") == "hardlink":
        notes.append("a hard link in dotbot: a copy here")
        w.declare("file", {"path": at, "source": st.src(source)}, "; ".join(notes))
    elif os.path.isdir(source):
        w.declare("file", {"path": at, "ensure": "link", "target": st.src(source)}, _j(notes))
    else:
        w.declare("file", {"path": at, "source": st.src(source), "link": True}, _j(notes))
    st.made.append(f"file#{at}")


def _j(notes: list[str]) -> str | None:
    return "; ".join(notes) or None


def _glob(st: _State, link: _Link, w: Writer) -> None:
    """A glob expanded now, as dotbot expands it on each install."""
    pattern = link.source
    found = {os.path.normpath(p) for p in globbing.glob(pattern, recursive=True)}
    if "**" in pattern and not pattern.endswith("/"):
        found = {p for p in found if os.path.isfile(p)}
    for exclude in link.opts.get("exclude", []) or []:
        pattern_x = os.path.join(st.repo, os.path.expanduser(str(exclude)))
        found -= {os.path.normpath(p) for p in globbing.glob(pattern_x, recursive=True)}
    label = f"{link.name} glob {st.src(pattern)}"
    if _whole_folder(pattern, found, link.opts):
        folder = os.path.dirname(pattern)
        w.declare(
            "file",
            {"path": tilde(link.path), "source": st.src(folder), "link": True},
            f"{label}: every file of {st.src(folder)}",
        )
        st.made.append(f"file#{tilde(link.path)}")
        return
    if not found:
        w.comment(f"{label}: matches nothing now")
        return
    w.comment(f"{label}: {len(found)} matches, expanded when imported (new ones: add a line)")
    prefix = str(link.opts.get("prefix", "") or "")
    for match in sorted(found):
        base = os.path.dirname(os.path.commonprefix([pattern, match]))
        item = match[len(base) + 1 :] if base else match
        _one(st, link, os.path.join(link.path, prefix + item), match, w)


def _whole_folder(pattern: str, found: set[str], opts: dict[str, Any]) -> bool:
    """Is `DIR/*` every entry of DIR, all plain files? Then one link tree says it."""
    if os.path.basename(pattern) != "*" or opts.get("prefix") or opts.get("exclude"):
        return False
    if opts.get("type") == "hardlink" or opts.get("relative"):
        return False
    folder = os.path.dirname(pattern)
    entries = [os.path.join(folder, e) for e in os.listdir(folder)] if found else []
    return bool(entries) and all(
        os.path.isfile(e) and not os.path.islink(e) and not os.path.basename(e).startswith(".")
        for e in entries
    )


# `[ `uname` = Darwin ]`, `[ "$(uname -s)" != Linux ]`, `[[ $OSTYPE == darwin* ]]`, hostname.
_TEST = re.compile(
    r"""^\s*(?:\[\[?|test)\s+"?(?P<what>`uname(?:\s+-s)?`|\$\(uname(?:\s+-s)?\)|\$OSTYPE|\$\{OSTYPE\}"""
    r"""|`hostname(?:\s+-s)?`|\$\(hostname(?:\s+-s)?\)|\$HOSTNAME)"?\s*(?P<op>==?|!=)\s*"""
    r"""["']?(?P<value>[A-Za-z0-9_.-]+)(?P<star>\*?)["']?\s*(?:\]\]?)?\s*$"""
)


def _condition(test: str) -> str | None:
    """A Lua condition on facts for dotbot's shell test, or None."""
    m = _TEST.match(test)
    if m is None:
        return None
    what, value = m["what"], m["value"]
    neg = m["op"] == "!="
    if "uname" in what or "OSTYPE" in what:
        if "OSTYPE" in what and not m["star"]:
            return None
        fact, value = "sys.facts.os", value.lower()
        if value.startswith("linux"):
            value = "linux"
    elif not m["star"]:
        fact = "sys.facts.hostname"
    else:
        return None
    return f"{fact} {'~=' if neg else '=='} {quote(value)}"


# -- shell ---------------------------------------------------------------------


def _shell(st: _State, data: list[Any]) -> None:
    defaults = st.defaults.get("shell", {})
    for index, entry in enumerate(data):
        where = st.where(data, index)
        opts: dict[str, Any]
        if isinstance(entry, str):
            command, desc, opts = entry, None, {}
        elif isinstance(entry, list) and entry:
            command, desc, opts = str(entry[0]), (entry[1] if len(entry) > 1 else None), {}
        elif isinstance(entry, dict) and "command" in entry:
            command, desc, opts = str(entry["command"]), entry.get("description"), entry
        else:
            st.untranslated.append(f"{where}: a shell entry with no command: {entry!r}")
            continue
        opts = {**defaults, **opts}
        name = str(desc or command)
        while name in st.names:
            name += " (again)"
        st.names.add(name)
        props: dict[str, object] = {"name": name}
        if desc:
            props["command"] = command
        props["provider"] = "shell"
        base = os.path.abspath(st.options.base)
        here = relative(st.repo, Path(base))
        props["cwd"] = Raw("sys.dir" if here == "." else f"sys.path({quote(here)})")
        if opts.get("stdout") or opts.get("stderr"):
            props["logoutput"] = True
        creates = _creates(command, st.repo)
        props["creates"] = tilde(creates) if creates else None
        st.execs.append((props, where))


def _shell_execs(st: _State) -> None:
    """The `shell` commands, after everything they may use."""
    if not st.execs:
        return
    st.w.blank()
    st.w.comment(
        "shell: dotbot runs these on every install, in the repository. With `creates` a\n"
        "command runs until its file exists; the others run once, when the first link is\n"
        "made (a new machine), not over a home dotbot installed: run them by hand after that."
    )
    anchor = st.anchor or (st.directories[0] if st.directories else None)
    for props, where in st.execs:
        if props.get("creates") is None:
            if anchor is None:
                st.untranslated.append(f"{where}: `{props['name']}` runs on every apply")
            else:
                props["refresh_only"] = True
                props["subscribe"] = [anchor]
        st.w.declare("exec", props, f"shell, {where}")


def _creates(command: str, repo: Path) -> str | None:
    """The one path a simple command obviously makes, absolute; else None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or any(w in ("&&", "||", ";", "|", ">", ">>") for w in words):
        return None
    if any(c in re.sub(r"\$HOME\b", "", command) for c in ";|&<>`$("):
        return None
    args = [w for w in words[1:] if not w.startswith("-")]
    made: str | None = None
    if words[0] == "git" and len(args) == 3 and args[0] == "clone":
        made = args[2]
    elif words[0] in ("touch", "mkdir") and len(args) == 1:
        made = args[0]
    elif words[0] in ("curl", "wget"):
        made = _output_of(words)
    elif words[0] == "ln" and len(args) == 2:
        made = args[1]
    if made is None:
        return None
    made = os.path.expanduser(made.replace("$HOME", home()))
    return os.path.normpath(os.path.join(repo, made))


def _output_of(words: list[str]) -> str | None:
    """curl's `-o FILE` (also `-fLo FILE`, `--output FILE`), wget's `-O FILE`."""
    for i, word in enumerate(words[:-1]):
        if word in ("--output", "-O" if words[0] == "wget" else "-o"):
            return words[i + 1]
        if words[0] == "curl" and re.fullmatch(r"-[a-zA-Z]*o", word):
            return words[i + 1]
    return None
