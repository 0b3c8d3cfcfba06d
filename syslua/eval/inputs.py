"""Inputs of a config in the original sys.lua's entry form, and their lock file.

A config may return `{ inputs = { name = "git:URL#ref" | "github:owner/repo/ref"
| "path:DIR" | { url = ..., inputs = { dep = { follows = "name" } } } },
setup = function(inputs) ... end }`. Before `setup` runs, each input is
resolved to a directory:

- `path:DIR` is the directory itself (relative to the config's directory,
  `~` for the home); its revision is `local`.
- `git:URL` and `github:owner/repo` are checked out at an exact commit into
  the cache (`<cache>/inputs/store/<name>-<hash>`). The commit is the one
  `syslua.lock` beside the config records; without a lock entry (first use,
  or the declaration changed) it is the commit the ref (or the remote's HEAD)
  points at now, and the lock records it. A locked input whose checkout is in
  the cache needs no network at all. `sys update [NAME...]` resolves the
  named inputs (all without names) again.

An input with an `init.lua` at its top may declare inputs of its own in the
same form: they are resolved the same way (and locked in the same file, under
the input's node), and its `setup` runs before the setup of what uses it.
Such an input of an input gets what a `follows` names, else what the
config's lock pins, else what the input's own `syslua.lock` pins, else the
latest.
Every input's `lua/` directory joins the `require` path; a top-level name
under `lua/` (a namespace) that two different inputs provide is an error
naming both.

The lock file has the original's format, so a lock written by either reads
in the other: `{"version": 1, "root": "root", "nodes": {"root": {"inputs":
{name: node}}, node: {"type", "url", "rev", "inputs": {dep: node}}}}`.

The network side (git) is not this module's: the caller hands in a
`GitFetcher` (the CLI gives one that runs the system git through the process
runner), so evaluation itself stays below the resource layer.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from syslua.errors import ConfigError, Source, StateError, UsageError
from syslua.eval.input_options import InputOptions
from syslua.fsutil import atomic_write, make_dir, remove_temp_leftovers, unusable_dir
from syslua.paths import home, root_hint

LOCK_NAME = "syslua.lock"
LOCK_VERSION = 1
ROOT = "root"
LOCAL_REV = "local"  # the revision of a path input


class GitFetcher(Protocol):
    """What resolving needs of git (the network side)."""

    def latest(self, url: str, ref: str | None) -> str:
        """The commit `ref` (a branch, tag or commit; None for HEAD) of `url` names now."""
        ...

    def checkout(self, url: str, rev: str, dest: Path) -> None:
        """The tree of commit `rev` of `url`, written into the new directory `dest`."""
        ...


@dataclass(frozen=True, slots=True)
class InputSource:
    """A parsed input declaration."""

    kind: str  # "git" or "path"
    url: str  # as declared, e.g. "git:https://host/repo.git#v1", "path:./libs/a"
    location: str  # the URL git clones, or the path as written
    ref: str | None = None  # branch, tag or commit to check out (git)


def parse(name: str, url: str) -> InputSource:
    """`git:URL[#ref]`, `github:owner/repo[/ref]` (or `#ref`) or `path:DIR`."""
    if url.startswith("git:"):
        rest = url[4:]
        location, sep, ref = rest.rpartition("#") if "#" in rest else (rest, "", "")
        if not location:
            raise ValueError(f"input {name}: missing URL after 'git:' in {url!r}")
        if sep and not ref:
            raise ValueError(f"input {name}: empty ref after '#' in {url!r}")
        return InputSource("git", url, location, ref or None)
    if url.startswith("github:"):
        rest = url[7:]
        rest, sep, hash_ref = rest.partition("#")
        parts = rest.split("/", 2)
        if len(parts) < 2 or not parts[0] or not parts[1]:
            raise ValueError(f"input {name}: expected github:owner/repo[/ref], got {url!r}")
        owner, repo = parts[0], parts[1].removesuffix(".git")
        ref = hash_ref if sep else (parts[2] if len(parts) == 3 else "")
        if (sep or len(parts) == 3) and not ref:
            raise ValueError(f"input {name}: empty ref in {url!r}")
        return InputSource("git", url, f"https://github.com/{owner}/{repo}.git", ref or None)
    if url.startswith("path:"):
        if not url[5:]:
            raise ValueError(f"input {name}: missing path after 'path:'")
        return InputSource("path", url, url[5:])
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise ValueError(
        f"input {name}: unknown input scheme {scheme!r} in {url!r}: "
        "expected git:URL[#ref], github:owner/repo[/ref] or path:DIR"
    )


@dataclass(slots=True)
class Decl:
    """One entry of an `inputs` table: its URL and overrides for its own inputs."""

    url: str | None
    overrides: dict[str, Decl | str] = field(default_factory=dict)  # str: follows NAME


def declaration(name: str, value: Any) -> Decl:
    """An `inputs` entry as the config wrote it: a URL string, `{ url = ..., inputs = ... }`
    or `{ git = URL, ref = REF }`; an override may also be `{ follows = "name" }`."""
    if isinstance(value, str):
        return Decl(value)
    if not isinstance(value, dict):
        raise ValueError(f"input {name} must be a URL string or a table, got {_kind(value)}")
    unknown = sorted(set(value) - {"url", "inputs", "git", "ref", "follows"})
    if unknown:
        raise ValueError(
            f"input {name}: unknown field {unknown[0]!r} (fields: url, inputs, git, ref, follows)"
        )
    url = value.get("url")
    if "git" in value:
        if url is not None:
            raise ValueError(f"input {name}: give either `url` or `git`, not both")
        if not isinstance(value["git"], str):
            raise ValueError(f"input {name}: `git` must be a URL string")
        url = "git:" + value["git"] + (f"#{value['ref']}" if value.get("ref") else "")
    elif "ref" in value:
        raise ValueError(f"input {name}: `ref` goes with `git = URL`")
    if url is not None and not isinstance(url, str):
        raise ValueError(f"input {name}: `url` must be a string")
    overrides: dict[str, Decl | str] = {}
    raw = value.get("inputs") or {}
    if not isinstance(raw, dict):
        raise ValueError(f"input {name}: `inputs` must be a table of overrides")
    for dep, over in sorted(raw.items()):
        if isinstance(over, dict) and "follows" in over:
            if not isinstance(over["follows"], str):
                raise ValueError(f"input {name}.{dep}: `follows` must name an input")
            overrides[dep] = over["follows"]
        else:
            overrides[dep] = declaration(f"{name}.{dep}", over)
    if url is None and "follows" not in value:
        raise ValueError(f"input {name}: a table needs `url` (or `git`)")
    return Decl(url, overrides)


def _kind(value: Any) -> str:
    return {list: "a list", dict: "a table", bool: "a boolean"}.get(type(value), "a number")


@dataclass(slots=True)
class Resolved:
    """An input resolved to a directory."""

    name: str
    source: InputSource
    path: Path
    rev: str
    node: str  # its node id in the lock file
    inputs: dict[str, Resolved] = field(default_factory=dict)
    init: Path | None = None  # its init.lua, when it returned an entry table

    def lua_table(self) -> dict[str, Any]:
        """What `setup` sees as `inputs.NAME`."""
        return {
            "path": str(self.path),
            "rev": self.rev,
            "url": self.source.url,
            "inputs": {n: r.lua_table() for n, r in self.inputs.items()},
        }


@dataclass(slots=True)
class Lock:
    """`syslua.lock`: the original's graph format."""

    path: Path
    root: dict[str, str] = field(default_factory=dict)  # input name -> node id
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Lock:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path)
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e.strerror}") from e
        try:
            doc = json.loads(text)
            root = doc["nodes"][doc.get("root", ROOT)].get("inputs", {})
            nodes = {k: v for k, v in doc["nodes"].items() if k != doc.get("root", ROOT)}
            if not isinstance(root, dict) or not all(isinstance(v, dict) for v in nodes.values()):
                raise TypeError("nodes must be tables")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ConfigError(
                f"{path} is not a syslua lock file ({e})",
                hint="Fix it, or delete it to resolve every input again.",
            ) from e
        return cls(path, dict(root), nodes)

    def text(self) -> str:
        nodes = {ROOT: {"inputs": dict(sorted(self.root.items()))}, **self.nodes}
        doc = {"version": LOCK_VERSION, "root": ROOT, "nodes": dict(sorted(nodes.items()))}
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"

    def node(self, node_id: str | None) -> dict[str, Any] | None:
        return self.nodes.get(node_id) if node_id else None


# What a lock node pins; other fields (the original's `lastModified`) are kept
# as they are while the pins do not change.
_PIN_FIELDS = ("type", "url", "rev", "ref", "inputs")


def _pins(text: str | None) -> Any:
    """What a lock's text pins, apart from its layout and extra fields: a lock
    that pins the same (one written by the original, or formatted by hand) is
    not rewritten. None when it cannot be read."""
    if text is None:
        return None
    try:
        doc = json.loads(text)
        root = doc.get("root", ROOT)
        return (
            doc.get("version"),
            doc["nodes"][root].get("inputs", {}),
            {k: {f: v.get(f) for f in _PIN_FIELDS} for k, v in doc["nodes"].items() if k != root},
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass(slots=True)
class Change:
    """What `sys update` did to one input: added, updated or unchanged."""

    name: str
    old: str | None
    new: str


@dataclass(slots=True)
class Resolution:
    """The inputs of a config, resolved."""

    inputs: dict[str, Resolved]
    lua_dirs: list[str]
    setups: list[tuple[str, dict[str, Any]]]  # (init.lua path, its inputs table), deps first
    changes: list[Change]
    lock: Path
    lock_written: bool
    removed: list[str] = field(default_factory=list)  # locked, no longer declared


# Reads an input's init.lua in the config's own Lua state: its declared
# inputs (the `inputs` table as plain data) when it returned an entry table.
ReadEntry = Callable[[Path], "dict[str, Any] | None"]


class _Resolver:
    def __init__(
        self, options: InputOptions, config: Path, line: int, read_entry: ReadEntry
    ) -> None:
        self.options = options
        self.config = config
        self.where = Source(str(config), line) if line else None
        self.read_entry = read_entry
        self.lock = Lock.load(config.parent / LOCK_NAME)
        self.nodes: dict[str, dict[str, Any]] = {}
        self.by_source: dict[tuple[str, str], Resolved] = {}  # (url, rev) -> resolved
        self.root: dict[str, Resolved] = {}
        self.root_decls: dict[str, Decl] = {}
        self.resolving: set[str] = set()  # root inputs being resolved (follows cycles)

    def error(self, message: str, hint: str | None = None) -> ConfigError:
        return ConfigError(message, self.where, hint=hint)

    def renew(self, top: str) -> bool:
        update = self.options.update
        return update is not None and (not update or top in update)

    def resolve_root(self, decls: dict[str, Decl]) -> dict[str, Resolved]:
        self.root_decls = decls
        for name in sorted(decls):
            if name not in self.root:
                self.root[name] = self.resolve_top(name)
        return self.root

    def resolve_top(self, name: str) -> Resolved:
        if name in self.resolving:
            raise self.error(
                f"input {name} follows itself (through the inputs of its inputs)",
                hint="A `follows` must name an input that does not depend on the follower.",
            )
        self.resolving.add(name)
        try:
            locked = self.lock.node(self.lock.root.get(name))
            return self.resolve(
                name, self.root_decls[name], self.config.parent, locked, self.lock, (), name
            )
        finally:
            self.resolving.discard(name)

    def follow(self, target: str) -> Resolved:
        if target not in self.root_decls:
            raise self.error(
                f"input follows {target!r}, which is not an input of {self.config.name}",
                hint="`follows` names an input of the config's own inputs table.",
            )
        if target not in self.root:
            self.root[target] = self.resolve_top(target)
        return self.root[target]

    def resolve(
        self,
        name: str,
        decl: Decl,
        base: Path,
        locked: dict[str, Any] | None,
        lock: Lock,
        chain: tuple[str, ...],
        top: str,
    ) -> Resolved:
        """Resolve one input. `locked` is its node in `lock`: the config's
        lock, or (for an input of an input the config's lock does not pin)
        that input's own `syslua.lock`."""
        if decl.url is None:
            raise self.error(f"input {name}: a table needs `url` (or `git`)")
        try:
            source = parse(name, decl.url)
        except ValueError as e:
            raise self.error(str(e)) from None
        pinned = locked if self.pins(locked, source, lock, top) else None
        path, rev = self.fetch(name, source, base, pinned)
        node_id = f"{name}-{_digest(source.url, rev)[:8]}"
        key = (source.url, rev)
        resolved = Resolved(name, source, path, rev, node_id)
        node: dict[str, Any] = {"type": source.kind, "url": source.url, "rev": rev, "inputs": {}}
        if source.ref:
            node["ref"] = source.ref
        seen = self.by_source.get(key)
        self.by_source[key] = resolved
        if seen is not None:
            resolved.inputs, resolved.init = seen.inputs, seen.init
            self.nodes[node_id] = self.nodes.get(seen.node, node)
            return resolved
        self.nodes[node_id] = node
        init = path / "init.lua"
        if source.url in chain or not init.is_file():
            return resolved
        declared = self.read_entry(init)
        if declared is None:
            return resolved
        resolved.init = init
        # The inputs of this input: as the config's lock pins them, else as
        # the input's own syslua.lock does, else the latest.
        dep_lock = lock
        locked_deps = (pinned or {}).get("inputs") or {}
        if not locked_deps and (path / LOCK_NAME).is_file():
            dep_lock = Lock.load(path / LOCK_NAME)
            locked_deps = dep_lock.root
        for dep in sorted(declared):
            override = decl.overrides.get(dep)
            if isinstance(override, str):
                child = self.follow(override)
            else:
                child = self.resolve(
                    dep,
                    _declaration_in(init, dep, override, declared[dep]),
                    path,
                    dep_lock.node(locked_deps.get(dep)),
                    dep_lock,
                    (*chain, source.url),
                    top,
                )
            resolved.inputs[dep] = child
            node["inputs"][dep] = child.node
        return resolved

    def pins(
        self, locked: dict[str, Any] | None, source: InputSource, lock: Lock, top: str
    ) -> bool:
        """Whether `locked` (the input's node in `lock`) still says which
        revision to take: it is for the same URL, and not being updated."""
        return (
            locked is not None
            and locked.get("url") == source.url
            and isinstance(locked.get("rev"), str)
            and bool(locked["rev"])
            and not (lock is self.lock and self.renew(top))
        )

    def fetch(
        self, name: str, source: InputSource, base: Path, pinned: dict[str, Any] | None
    ) -> tuple[Path, str]:
        """The input's directory and revision: a path input's own directory,
        or the checkout of the revision `pinned` names (else of the latest)."""
        if source.kind == "path":
            path = Path(os.path.normpath(base / _expand_home(source.location)))
            if not path.is_dir():
                raise self.error(f"input {name}: {source.url}: {path} is not a directory")
            return path, LOCAL_REV
        rev = str(pinned["rev"]) if pinned is not None else self.latest(name, source)
        return self.checkout(name, source, rev), rev

    def latest(self, name: str, source: InputSource) -> str:
        git = self.need_git(name, source)
        try:
            return git.latest(source.location, source.ref)
        except ConfigError as e:
            raise self.error(f"input {name}: {e.message}") from None

    def checkout(self, name: str, source: InputSource, rev: str) -> Path:
        store = self.options.cache / "inputs" / "store"
        dest = store / f"{name}-{_digest(source.location, rev)[:16]}"
        if dest.is_dir():
            return dest
        git = self.need_git(name, source)
        try:
            make_dir(store)  # private, as the rest of the cache (state/layout.py)
        except OSError as e:
            why = unusable_dir(store, writing=True) or f"{e.strerror} ({e.filename})"
            raise StateError(f"cannot use syslua's cache {store}: {why}", hint=root_hint()) from e
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=store))
        try:
            git.checkout(source.location, rev, tmp / "tree")
            os.replace(tmp / "tree", dest)
        except ConfigError as e:
            raise self.error(f"input {name}: {e.message}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return dest

    def need_git(self, name: str, source: InputSource) -> GitFetcher:
        if self.options.git is None:
            raise self.error(
                f"input {name}: {source.url} is not in the cache, and this command does not fetch",
                hint="Run `sys plan` or `sys apply` to fetch it.",
            )
        return self.options.git


def _declaration_in(init: Path, dep: str, override: Decl | None, value: Any) -> Decl:
    """The declaration of `dep`, an input that `init` declares as `value`,
    unless the input that uses it overrides it."""
    try:
        return override if isinstance(override, Decl) else declaration(dep, value)
    except ValueError as e:
        raise ConfigError(f"{init}: {e}") from None


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _expand_home(path: str) -> str:
    if path == "~" or path.startswith("~/"):
        return home() + path[1:]
    return path


def namespaces(
    inputs: Iterable[Resolved], config_dir: Path, where: Source | None = None
) -> list[str]:
    """The `lua/` directories to search, after checking that no two different
    inputs provide the same namespace (a directory or `name.lua` under `lua/`)."""
    owners: dict[str, tuple[str, str]] = {}  # namespace -> (provider, "url@rev")
    dirs: list[str] = []

    def scan(lua: Path, provider: str, origin: str) -> None:
        try:
            entries = sorted(os.scandir(lua), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.is_dir():
                ns = entry.name
            elif entry.name.endswith(".lua"):
                ns = entry.name[:-4]
            else:
                continue
            if ns == "init":
                continue
            seen = owners.get(ns)
            if seen is not None and seen[1] != origin:
                raise ConfigError(
                    f"namespace conflict: {ns!r} is provided by two inputs:\n"
                    f"  - {seen[0]} ({seen[1]})\n  - {provider} ({origin})",
                    hint="Make one input follow the other (inputs = { dep = { follows = "
                    '"name" } }), or rename one of the directories.',
                    source=where,
                )
            owners[ns] = (provider, origin)

    scan(config_dir / "lua", "the config's lua/", f"path:{config_dir}@{LOCAL_REV}")
    seen_dirs: set[str] = set()
    for r in _walk(inputs):
        lua = r.path / "lua"
        if str(lua) in seen_dirs or not lua.is_dir():
            continue
        seen_dirs.add(str(lua))
        origin = r.source.location if r.source.kind == "git" else str(r.path)
        scan(lua, f"input {r.name}", f"{r.source.kind}:{origin}@{r.rev}")
        dirs.append(str(lua))
    return dirs


def _walk(inputs: Iterable[Resolved]) -> list[Resolved]:
    """Every input, each once, dependencies before what uses them, in name order."""
    out: list[Resolved] = []
    seen: set[int] = set()

    def visit(r: Resolved) -> None:
        if id(r) in seen:
            return
        seen.add(id(r))
        for dep in sorted(r.inputs):
            visit(r.inputs[dep])
        out.append(r)

    for r in sorted(inputs, key=lambda r: r.name):
        visit(r)
    return out


def resolve(
    options: InputOptions,
    config: Path,
    line: int,
    declared: dict[str, Any],
    read_entry: ReadEntry,
) -> Resolution:
    """Resolve the `inputs` table of `config` (returned at `line`), write the
    lock when it changed, and say what `setup` needs."""
    where = Source(str(config), line) if line else None
    decls = _declarations(declared, where)
    if options.update:
        _check_update(options.update, decls, config)
    resolver = _Resolver(options, config, line, read_entry)
    inputs = resolver.resolve_root(decls)
    new = Lock(resolver.lock.path, {n: r.node for n, r in inputs.items()}, {})
    new.nodes = _reached(new.root.values(), resolver.nodes)
    changes = []
    for name, r in sorted(inputs.items()):
        old = resolver.lock.node(resolver.lock.root.get(name))
        changes.append(Change(name, old.get("rev") if old else None, r.rev))
    lua_dirs = namespaces(inputs.values(), config.parent, where)
    if options.write_lock:
        # the temp file of a writer killed before its rename (`sys update`
        # SIGKILLed), when that process is gone
        remove_temp_leftovers([new.path])
    # no lock file for a config without inputs, unless there is one to update
    written = bool(decls or new.path.exists()) and _write_lock(new, options)
    setups = [
        (str(r.init), {n: d.lua_table() for n, d in r.inputs.items()})
        for r in _walk(inputs.values())
        if r.init is not None
    ]
    removed = sorted(set(resolver.lock.root) - set(inputs))
    return Resolution(inputs, lua_dirs, setups, changes, new.path, written, removed)


def _declarations(declared: dict[str, Any], where: Source | None) -> dict[str, Decl]:
    """The config's `inputs` table, read."""
    decls: dict[str, Decl] = {}
    for name in sorted(declared):
        try:
            decls[name] = declaration(name, declared[name])
        except ValueError as e:
            raise ConfigError(str(e), where) from None
    return decls


def _check_update(update: frozenset[str], decls: dict[str, Decl], config: Path) -> None:
    """`sys update NAME...` names inputs the config declares."""
    unknown = sorted(update - set(decls))
    if not unknown:
        return
    known = ", ".join(sorted(decls))
    what = (
        f"unknown input {unknown[0]!r}"
        if len(unknown) == 1
        else f"unknown inputs {', '.join(map(repr, unknown))}"
    )
    raise UsageError(
        f"{what}: the inputs of {config.name} are {known}"
        if decls
        else f"{what}: {config.name} declares no inputs"
    )


def _reached(roots: Iterable[str], nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The nodes that the `roots` node ids reach: what the new lock keeps."""
    kept: dict[str, dict[str, Any]] = {}
    todo = list(roots)
    while todo:
        node_id = todo.pop()
        if node_id in kept or node_id not in nodes:
            continue
        kept[node_id] = nodes[node_id]
        todo.extend(nodes[node_id].get("inputs", {}).values())
    return kept


def _write_lock(new: Lock, options: InputOptions) -> bool:
    """Write `new` when it pins other revisions than the lock file does (and
    writing is allowed), inside `options.guard`; whether it was written."""
    text = new.text()
    try:
        current = new.path.read_text(encoding="utf-8")
    except OSError:
        current = None
    if current != text and options.write_lock and _pins(current) != _pins(text):
        with options.guard() if options.guard is not None else nullcontext():
            atomic_write(new.path, text.encode("utf-8"))
        return True
    return False
