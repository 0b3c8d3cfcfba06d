"""The registry of resource kinds: the one place that lists them.

Every list of kinds is derived from here: the declarations a Lua config can
call (the prelude's globals), the property that names each kind's items,
the kinds a `"type#key"` reference may name, the types a CCM manifest may
declare, the editor stubs, and the kinds the engine runs. An entry is light
data, known without importing anything; the kind itself (its schema, its
core and capabilities: `syslua.resources.kind`) lives in its own module,
imported by name the first time it is asked for, so that a plan of
dotfiles never loads the package, build or user code.

This module is at the bottom of the layers so that every layer may ask it;
it is the one place in syslua that imports a module by a computed name.
`syslua.resources.get` is the typed way to the kind's behaviour,
`syslua.manifest.schema.of` to its schema.
"""

from __future__ import annotations

import importlib
from typing import Any

# How a Lua config declares a kind: a global called like it (`file { ... }`);
# the variables of `env { NAME = value }`; or not as a global at all (the
# primitives, `sys.build` and `sys.bind`).
GLOBAL, VARIABLES, PRIMITIVE = "global", "variables", "primitive"


class Entry:
    """What is known of a kind without importing it. Read-only."""

    __slots__ = ("name", "key", "module", "attr", "lua", "ccm", "outputs", "shell")

    def __init__(
        self,
        name: str,
        key: str,  # the property naming an item: `file { path = ... }` is `file#<path>`
        module: str | None,  # where the kind lives (None: registered as an object)
        attr: str = "",  # the kind's class in that module
        *,
        lua: str = GLOBAL,  # how a Lua config declares it (GLOBAL, VARIABLES, PRIMITIVE)
        ccm: str | None = None,  # its type in CCM manifests, when they may declare it
        outputs: bool = False,  # writes files from the whole manifest after every apply
        shell: bool = False,  # its items reach a shell through the env script only
    ) -> None:
        self.name = name
        self.key = key
        self.module = module
        self.attr = attr
        self.lua = lua
        self.ccm = ccm
        self.outputs = outputs
        self.shell = shell

    def __repr__(self) -> str:
        return f"Entry({self.name!r}, key={self.key!r}, module={self.module!r})"


_R = "syslua.resources."
SHIPPED = (
    Entry("file", "path", _R + "file", "FileType", ccm="file"),
    Entry("exec", "name", _R + "exec", "ExecType", ccm="exec"),
    Entry("apply", "name", _R + "apply", "ApplyType", ccm="apply"),
    # A store package is not CCM's `package` (an OS package: os_package's).
    Entry("package", "name", _R + "package", "PackageType", outputs=True, shell=True),
    Entry("os_package", "name", _R + "os_package", "OsPackageType", ccm="package"),
    Entry("user", "name", _R + "user", "UserType", ccm="user"),
    Entry("archive", "name", _R + "archive", "ArchiveType", ccm="archive"),
    Entry("service", "name", _R + "service", "ServiceType", ccm="service"),
    Entry("env", "name", _R + "env", "EnvType", lua=VARIABLES, outputs=True, shell=True),
    Entry("build", "id", _R + "build", "BuildType", lua=PRIMITIVE),
    Entry("bind", "id", _R + "bind", "BindType", lua=PRIMITIVE),
)
# The kind that declares a plain path copied from a source file: `sys add`
# asks it to take in a path nothing manages yet.
PATHS = "file"

_ENTRIES: dict[str, Entry] = {e.name: e for e in SHIPPED}
_KINDS: dict[str, Any] = {}  # name -> the kind object, once loaded or registered


def entries() -> tuple[Entry, ...]:
    """Every kind known now, shipped first, in the order registered."""
    return tuple(_ENTRIES.values())


def entry(name: str) -> Entry | None:
    return _ENTRIES.get(name)


def has(name: str) -> bool:
    return name in _ENTRIES


def load(name: str) -> Any:
    """The kind called `name` (imported on first use); KeyError when unknown."""
    kind = _KINDS.get(name)
    if kind is None:
        e = _ENTRIES[name]
        assert e.module is not None
        kind = _KINDS[name] = getattr(importlib.import_module(e.module), e.attr)()
    return kind


def register(entry: Entry, kind: Any) -> None:
    """Make a kind defined outside syslua known (a plugin's, a test's); see
    `syslua.resources.register`."""
    _ENTRIES[entry.name] = entry
    _KINDS[entry.name] = kind


def unregister(name: str) -> None:
    """Forget a kind added with `register` (a shipped kind stays)."""
    if name in _ENTRIES and _ENTRIES[name].module is None:
        del _ENTRIES[name]
        _KINDS.pop(name, None)


# -- the lists derived from it ---------------------------------------------------


def keys() -> dict[str, str]:
    """kind -> the property naming its items."""
    return {e.name: e.key for e in _ENTRIES.values()}


def lua_declarations() -> dict[str, str]:
    """The kinds a Lua config declares, and how (GLOBAL or VARIABLES)."""
    return {e.name: e.lua for e in _ENTRIES.values() if e.lua != PRIMITIVE}


def primitives() -> tuple[str, ...]:
    """The kinds a config declares through `sys.<name>`, not as a global."""
    return tuple(e.name for e in _ENTRIES.values() if e.lua == PRIMITIVE)


def ccm_types() -> dict[str, str]:
    """CCM's type name -> the kind it declares."""
    return {e.ccm: e.name for e in _ENTRIES.values() if e.ccm is not None}


def with_outputs() -> tuple[str, ...]:
    """The kinds whose outputs every apply writes, present or not in its manifest."""
    return tuple(e.name for e in _ENTRIES.values() if e.outputs)


def for_the_shell() -> frozenset[str]:
    """The kinds whose items a shell sees only once it loads the env script
    (variables; packages, on PATH through the profile)."""
    return frozenset(e.name for e in _ENTRIES.values() if e.shell)
