"""Run one Lua config file in a fresh, sandboxed LuaJIT state.

Each manifest file (the root config, each `.lua` child) gets its own runtime,
so globals, `sys.data` and `sys.dir` of one never leak into another. The
sandbox is built by `lua/prelude.lua`; this module only loads it, runs the
config, and turns the JSON the prelude exports into `RawDeclaration`s, or a
Lua error into a `ConfigError` located at the user's line.

Evaluation can be stopped: the prelude's watchdog asks `TimeLimit.check`
every few thousand VM instructions whether the time limit has passed, and
stops the config with the line it was running. Calling into Python there
also lets Python run its signal handlers, so Ctrl-C stops even an endless
loop; the exception a handler raised is raised again here.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syslua import registry
from syslua.errors import ConfigError, Source
from syslua.eval import reads as eval_reads
from syslua.eval import running
from syslua.eval.constants import lua_constants
from syslua.paths import Paths, home, shipped_dirs

if TYPE_CHECKING:
    from syslua.eval.inputs import InputOptions, Resolution


# Plain classes, not dataclasses: a dataclass costs every start half a
# millisecond to generate its methods, and nothing compares or prints these.


class RawDeclaration:
    """One declaration as the config made it: not yet validated or merged."""

    __slots__ = ("type", "props", "source", "seq", "prio")

    def __init__(
        self,
        type: str,
        props: dict[str, Any],
        source: Source,
        seq: int,
        prio: int | None,  # whole-declaration priority, None for plain
    ) -> None:
        self.type = type
        self.props = props
        self.source = source
        self.seq = seq
        self.prio = prio


class LuaResult:
    """What evaluating one Lua manifest gave: its declarations and the files it read."""

    __slots__ = (
        "declarations",
        "inputs",
        "placeholders",
        "resolution",
        "env",
        "absent",
        "uncacheable",
    )

    def __init__(
        self,
        declarations: list[RawDeclaration],
        inputs: list[str],
        placeholders: bool = False,  # some value contains `$${`
        resolution: Resolution | None = None,  # the inputs, for a config in the entry form
    ) -> None:
        self.declarations = declarations
        self.inputs = inputs
        self.placeholders = placeholders
        self.resolution = resolution
        # For the evaluation cache (manifest/evalcache.py): the environment
        # variables read, the paths looked for and not found, and what the
        # cache cannot see that the config called (`os.time()`).
        self.env: list[str] = []
        self.absent: list[str] = []
        self.uncacheable: list[str] = []


DEFAULT_EVAL_TIMEOUT = 60.0  # seconds, for the whole evaluation (`--eval-timeout`)


class TimeLimit:
    """How long a whole evaluation (root config and every child) may take."""

    __slots__ = ("seconds", "start")

    def __init__(self, seconds: float, start: float | None = None) -> None:
        self.seconds = seconds
        self.start = time.monotonic() if start is None else start

    def check(self) -> bool:
        """Called by the prelude's watchdog: has the limit passed?"""
        return time.monotonic() - self.start > self.seconds

    def exceeded(self, where: str) -> ConfigError:
        """The error for a config stopped at `where` ("path:line")."""
        file, _, line = where.rpartition(":")
        source = Source(file, int(line)) if file and line.isdigit() else None
        message = f"evaluation did not finish within {self.seconds:g} s ({source or where})"
        text = source.source_line() if source is not None else None
        if source is not None and text is not None and text.strip():
            message += f"\n  {source.line} | {text}"
        return ConfigError(
            message,
            hint="Is there an endless loop? If the config really needs longer, "
            "raise the limit with --eval-timeout SECONDS.",
        )


@cache
def _prelude() -> bytes:
    lua_dir, _ = shipped_dirs()
    return Path(lua_dir, "prelude.lua").read_bytes()


def _b(value: Any) -> Any:
    """Python data -> bytes-keyed data for a runtime created with encoding=None."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, dict):
        return {_b(k): _b(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_b(v) for v in value]
    return value


def _deny_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    # No Python object is ever handed to Lua, but if one were, Lua could not
    # reach its attributes.
    raise AttributeError("Python objects are not accessible from Lua")


# Compiled by `re` when an error needs them (and cached there), not at import.
_LOCATED = r"(?s)^(?P<file>[^\n]+?):(?P<line>\d+): (?P<msg>.*)$"

_IMPURE_HINTS = {
    "'execute'": "os.execute is not available: evaluation is pure (run with --impure to allow it)",
    "'popen'": "io.popen is not available: evaluation is pure (run with --impure to allow it)",
    "'write'": "writing files is not available: evaluation is pure (run with --impure to allow it)",
    "'output'": "writing files is not available: evaluation is pure (run with --impure to allow it)",
    "'remove'": "os.remove is not available: evaluation is pure (run with --impure to allow it)",
    "'rename'": "os.rename is not available: evaluation is pure (run with --impure to allow it)",
    "'exit'": "os.exit is not available while evaluating a config",
}


def declarations() -> list[str]:
    """The declarations a config calls: globals, and the primitives under `sys`."""
    return [
        *registry.lua_declarations(),
        "defaults",
        *(f"sys.{name}" for name in registry.primitives()),
    ]


_UNDEFINED = r"^attempt to call global '(?P<name>[^']+)' \(a nil value\)$"
_LINK = (
    'A symlink is a file: file { path = "~/.vimrc", ensure = "link", target = "~/dotfiles/vimrc" }'
)
_DIRECTORY = 'A directory is a file: file { path = "~/.config/app", ensure = "directory" }'
# Names that people coming from other tools reach for: the declaration, and
# an example when the declaration alone would not say how.
_SYNONYMS: dict[str, tuple[str, str | None]] = {
    **dict.fromkeys(("symlink", "link", "ln"), ("file", _LINK)),
    **dict.fromkeys(("dir", "directory", "mkdir", "folder"), ("file", _DIRECTORY)),
    **dict.fromkeys(("files", "dotfile", "dotfiles", "template", "copy"), ("file", None)),
    **dict.fromkeys(("run", "cmd", "command", "shell", "execute", "script"), ("exec", None)),
    **dict.fromkeys(("pkg", "packages", "install", "brew"), ("package", None)),
    **dict.fromkeys(("apt", "dnf", "yum", "ospackage", "os_packages"), ("os_package", None)),
    **dict.fromkeys(("setenv", "environment", "export"), ("env", None)),
    **dict.fromkeys(("account", "users", "useradd"), ("user", None)),
    **dict.fromkeys(("include", "import", "child", "manifest"), ("apply", None)),
    "build": ("sys.build", None),
    "bind": ("sys.bind", None),
}


def _undefined(name: str) -> tuple[str, str]:
    """The message and hint for a call of an undefined global (`symlink {}`, `File {}`)."""
    import difflib

    lower = name.lower()
    known = declarations()
    best, example = _SYNONYMS.get(lower, (None, None))
    if best is None:
        if lower in known:
            best = lower
        else:
            close = difflib.get_close_matches(lower, known, n=1, cutoff=0.6)
            best = close[0] if close else None
    message = f"`{name}` is not defined" + (f"; did you mean `{best}`?" if best else "")
    names = ", ".join(known[:-1]) + " and " + known[-1]
    hint = f"The declarations are {names}."
    return message, (example + "\n" + hint if example else hint)


def _lua_error(message: str, traceback: str, impure: bool) -> ConfigError:
    """Turn `path:line: msg` from Lua into a located ConfigError."""
    message = message.strip()
    hint = None
    if not impure and "(a nil value)" in message:
        for needle, text in _IMPURE_HINTS.items():
            if needle in message:
                hint = text
    m = re.match(_LOCATED, message)
    if m and m.group("file") != "[string]":
        msg = m.group("msg")
        # A nested location (error raised with level 0 by the prelude) wins.
        inner = re.match(_LOCATED, msg)
        while inner and os.path.isabs(inner.group("file")):
            m, msg = inner, inner.group("msg")
            inner = re.match(_LOCATED, msg)
        undefined = re.match(_UNDEFINED, msg)
        if undefined is not None:
            msg, hint = _undefined(undefined.group("name"))
        return ConfigError(msg, Source(m.group("file"), int(m.group("line"))), hint=hint)
    return ConfigError(message, hint=hint)


def _entry_type(entry: os.DirEntry[bytes]) -> bytes:
    if entry.is_symlink():
        return b"link"
    if entry.is_dir(follow_symlinks=False):
        return b"directory"
    if entry.is_file(follow_symlinks=False):
        return b"file"
    return b"other"


def _secret(spec: bytes, base_dir: bytes) -> tuple[bool, bytes]:
    """`sys.secret`: (True, the value's placeholder) or (False, why not).
    Each source is read once per evaluation (`secrets.remember_read`)."""
    from syslua import secrets
    from syslua.eval import secret_sources

    try:
        wanted = secret_sources.validate(json.loads(spec))
        program = secret_sources.program(wanted)
        if program is not None:
            secrets.note_program(program)
        base = base_dir.decode("utf-8", "surrogateescape")
        memo = json.dumps([wanted, base], sort_keys=True)
        placeholder = secrets.remember_read(
            memo, lambda: secret_sources.read(wanted, base_dir=base)
        )
    except secret_sources.SecretSourceError as e:
        return False, str(e).encode("utf-8", "surrogateescape")
    return True, placeholder.encode()


def _read_dir(path: bytes) -> tuple[bool, bytes]:
    """`sys.readDir`: (True, "name\0type\0...") sorted by name, or (False, why).
    Bytes both ways, so names that are not UTF-8 survive."""
    if eval_reads.active() is not None:
        # Noted whether it can be read or not: a config may catch the failure,
        # and the directory appearing is then a change.
        eval_reads.note("list", os.fsdecode(path), eval_reads.listing(os.fsdecode(path)))
    try:
        with os.scandir(path) as it:
            entries = sorted((e.name, _entry_type(e)) for e in it)
    except OSError as e:
        return False, (e.strerror or str(e)).encode("utf-8", "replace")
    return True, b"\0".join(part for entry in entries for part in entry)


_MAGIC = rb"[*?[]"  # compiled by `re` on first use (and cached there), not at every start


def _glob(pattern: bytes, root: bytes) -> tuple[bool, bytes, bytes]:
    """`sys.glob`: (True, matches joined by NUL, the directory listed first),
    sorted; a relative pattern matches below `root` and gives relative paths
    (`eval/globbing.py`: `**` looks inside dot folders)."""
    from syslua.eval import globbing

    try:
        found = globbing.match(pattern, root)
    except (OSError, ValueError) as e:
        return False, str(e).encode("utf-8", "replace"), b""
    if eval_reads.active() is not None:
        eval_reads.note(
            "glob", os.fsdecode(pattern), os.fsdecode(root), eval_reads.glob_digest(found)
        )
    parts = pattern.split(b"/")
    fixed = []
    for part in parts[:-1]:
        if re.search(_MAGIC, part):
            break
        fixed.append(part)
    base = b"/".join(fixed) if fixed else b""
    if not base.startswith(b"/"):
        base = os.path.normpath(os.path.join(root, base)) if base else root
    return True, b"\0".join(found), base


def _dirname(path: bytes) -> bytes:
    trimmed = path.rstrip(b"/")
    if not trimmed:
        return b""  # "/" has no parent
    return os.path.dirname(trimmed).rstrip(b"/") or (b"/" if trimmed.startswith(b"/") else b"")


def _basename(path: bytes) -> bytes:
    name = os.path.basename(path.rstrip(b"/"))
    return b"" if name in (b".", b"..") else name


def _split(path: bytes) -> bytes:
    parts = [p for p in path.split(b"/") if p and p != b"."]
    if path.startswith(b"/"):
        parts.insert(0, b"/")
    return b"\0".join(parts)


def _resolve(base: bytes, *parts: bytes) -> bytes:
    return os.path.normpath(os.path.join(base, *parts))


def _canonicalize(path: bytes) -> tuple[bool, bytes]:
    try:
        real = os.path.realpath(path, strict=True)
        eval_reads.realpath_note(path, real)
        return True, real
    except OSError as e:
        eval_reads.realpath_note(path, None)
        why = (e.strerror or str(e)).encode("utf-8", "replace")
        return False, b"cannot canonicalize " + path + b": " + why


# `sys.path.*` (the original sys.lua's path helpers), bytes in and out.
_PATH_OPS = {
    "dirname": _dirname,
    "basename": _basename,
    "extname": lambda p: os.path.splitext(_basename(p))[1],
    "normalize": lambda p: os.path.normpath(p) if p else b"",
    "join": lambda *parts: os.path.join(*parts) if parts else b"",
    "resolve": _resolve,
    "relative": lambda a, b: os.path.relpath(b, a),
    "split": _split,
    "canonicalize": _canonicalize,
}


def luajit_version() -> str:
    """The Lua runtime configs run in, as it names itself (`LuaJIT 2.1.1774896198`)."""
    import lupa.luajit21 as lupa

    return str(lupa.LuaRuntime(register_eval=False, register_builtins=False).lua_implementation)


def run_config(
    path: Path,
    *,
    core: dict[str, Any],
    facts: dict[str, Any],
    data: dict[str, Any],
    root_dir: str,
    impure: bool = False,
    limit: TimeLimit | None = None,
    inputs: InputOptions | None = None,
) -> LuaResult:
    """Evaluate `path` and return what it declared and which files it read.

    Past `limit`, the config is stopped with a `ConfigError` naming the line
    it was running; an exception raised by a signal handler while it ran
    (Ctrl-C) is raised again."""
    import lupa.luajit21 as lupa

    try:
        code = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from e
    runtime = lupa.LuaRuntime(
        encoding=None,
        register_eval=False,
        register_builtins=False,
        unpack_returned_tuples=True,
        attribute_filter=_deny_attributes,
    )
    lua_dir, pkgs_dir = shipped_dirs()
    cfg = runtime.table_from(
        _b(
            {
                "core": core,
                # priorities, declarations and key names: see eval/constants.py
                "constants": lua_constants(),
                "facts": facts,
                "data": data,
                "impure": impure,
                "home": home(),
                "read_dir": _read_dir,  # held by the prelude, never reachable from a config
                "glob": _glob,
                "secret": _secret,
                "manifest_dir": str(path.parent),
                "root_dir": root_dir,
                "lua_dir": lua_dir,
                "pkgs_parent": str(Path(pkgs_dir).parent)
                if Path(pkgs_dir).name == "pkgs"
                else pkgs_dir,
                "check": limit.check if limit is not None else _never,
                "is_elevated": os.geteuid() == 0,
                "digest": _digest,
                "profile_dir": str(Paths.from_env().profile),
            }
        ),
        recursive=True,
    )
    cfg[b"path_ops"] = runtime.table_from({k.encode(): v for k, v in _PATH_OPS.items()})
    shown = str(path)
    with running.lua(limit, shown):
        prelude = runtime.execute(_prelude(), cfg)

    def call(name: bytes, *args: Any) -> Any:
        """Call the prelude's `name`, marked as Lua running (`eval/running.py`)."""
        with running.lua(limit, shown):
            return prelude[name](*args)

    def check(result: Any) -> Any:
        """Raise what a guarded run in the prelude reported; else return its result."""
        if isinstance(result, tuple) and result[0] == b"stopped":
            where, raised = (list(result[1:]) + [None, None])[:2]
            if isinstance(raised, BaseException):
                raise raised
            if limit is not None and limit.check():
                raise limit.exceeded(_s(where))
            raise ConfigError(f"evaluation stopped at {_s(where)}: {_s(raised)}")
        if isinstance(result, tuple) and result[0] is False:
            _, message, traceback = result
            chunks = json.loads(call(b"chunks").decode("utf-8", "surrogateescape"))
            raise _lua_error(_unchunk(_s(message), chunks), _s(traceback), impure)
        return result

    result = check(call(b"run", code, shown.encode("utf-8", "surrogateescape")))
    resolution = None
    if isinstance(result, tuple) and result[0] == b"entry":
        resolution = _run_entry(runtime, call, check, path, result, inputs)
    exported = call(b"export")
    # The Lua state is no longer needed: close it before the declarations are
    # decoded, so that its memory and theirs are not held at the same time.
    del check, result, cfg, runtime
    prelude = None  # the last reference (rebound, not deleted: `call` named it)
    return _decoded(exported, resolution)


def _decoded(exported: bytes, resolution: Resolution | None) -> LuaResult:
    """The declarations and inputs the prelude exported (JSON)."""
    doc = json.loads(exported.decode("utf-8", "surrogateescape"))
    placeholders = b"$${" in exported
    # JSON's decoder makes a string per value: one type name and one file
    # name shared by all the declarations that say it (10,000 of each, held
    # as long as the manifest is).
    same: dict[str, str] = {}
    decls = [
        RawDeclaration(
            same.setdefault(d["t"], d["t"]),
            d["p"],
            Source(same.setdefault(d["s"], d["s"]), d["l"]),
            d["q"],
            d["w"],
        )
        for d in doc["decls"]
    ]
    result = LuaResult(decls, doc["inputs"], placeholders, resolution)
    result.env = doc.get("env", [])
    result.absent = doc.get("absent", [])
    result.uncacheable = doc.get("uncacheable", [])
    return result


def _run_entry(
    runtime: Any,
    call: Callable[..., Any],
    check: Callable[[Any], Any],
    path: Path,
    result: tuple[Any, ...],
    options: InputOptions | None,
) -> Resolution:
    """The config returned `{ inputs = ..., setup = ... }`: resolve its inputs,
    then call the inputs' `setup` functions and its own."""
    from syslua.eval import inputs as inputlib

    _, inputs_json, line = result
    declared = json.loads(_s(inputs_json))

    def read_entry(init: Path) -> dict[str, Any] | None:
        found = check(call(b"entry", str(init).encode("utf-8", "surrogateescape")))
        if not isinstance(found, tuple) or found[0] != b"entry":
            return None
        value = json.loads(_s(found[1]))
        return value if isinstance(value, dict) else {}

    if options is None:
        options = inputlib.InputOptions(cache=Paths.from_env().cache)
    resolution = inputlib.resolve(options, path, int(line or 0), declared, read_entry)
    if options.only_inputs:
        return resolution
    root = {name: r.lua_table() for name, r in resolution.inputs.items()}
    setups = [{"path": p, "inputs": ins} for p, ins in resolution.setups]
    setups.append({"path": str(path), "inputs": root})
    plan = runtime.table_from(
        _b({"lua_dirs": resolution.lua_dirs, "setups": setups}), recursive=True
    )
    check(call(b"setup", plan))
    return resolution


def _digest(data: bytes) -> bytes:
    """A short content digest naming a `sys.build`/`sys.bind` declared without an id."""
    import hashlib

    return hashlib.sha256(data).hexdigest()[:16].encode()


def _never() -> bool:
    return False


_CHUNK = r"#\d+(?=:\d+\b)"  # "#2:12: msg", and "File: #2:12" (syslua.priority)


def _unchunk(message: str, chunks: dict[str, str]) -> str:
    """Replace short chunk names ("#2:12:") with their file paths."""
    return re.sub(_CHUNK, lambda m: chunks.get(m.group(0), m.group(0)), message)


def _s(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)
