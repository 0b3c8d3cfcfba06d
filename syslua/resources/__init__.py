"""Resource kinds, known to the engine only through this registry.

Kinds are imported on first use, so a plan of dotfiles never loads the
package, build or user code. A new kind is one module and a line here; the
engine learns everything else through the kind's core (`kind.Kind`) and
the capabilities it opts into, which it asks for with `capability`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from syslua.resources.kind import Kind, TakesBack

_MODULES = {
    "file": ("syslua.resources.file", "FileType"),
    "exec": ("syslua.resources.exec", "ExecType"),
    "apply": ("syslua.resources.apply", "ApplyType"),
    "env": ("syslua.resources.env", "EnvType"),
    "package": ("syslua.resources.package", "PackageType"),
    "os_package": ("syslua.resources.os_package", "OsPackageType"),
    "user": ("syslua.resources.user", "UserType"),
    "archive": ("syslua.resources.archive", "ArchiveType"),
    "build": ("syslua.resources.build", "BuildType"),
    "bind": ("syslua.resources.bind", "BindType"),
}
# Kinds that write files from the whole manifest after every apply, present
# or not in it: the env scripts, and the profile (pruned once recorded).
_WITH_OUTPUTS = ("env", "package")
# The kind that declares a plain path copied from a source file: `sys add`
# asks it to take in a path nothing manages yet (`TakesBack.take_in`).
_PATHS = "file"
# Journal records written before records named their kind: the kind by `op`.
_LEGACY_OPS = {"exec": "exec", "user": "user", "bind": "bind", "profile": "package"}
_REGISTRY: dict[str, Kind[Any]] = {}
_CAPABILITIES: dict[tuple[type, type], bool] = {}

C = TypeVar("C")


def get(name: str) -> Kind[Any]:
    kind = _REGISTRY.get(name)
    if kind is None:
        module, cls = _MODULES[name]
        kind = _REGISTRY[name] = getattr(importlib.import_module(module), cls)()
    return kind


def has(name: str) -> bool:
    return name in _MODULES or name in _REGISTRY


def register(kind: Kind[Any]) -> None:
    """Make a kind known by its `name` (for kinds defined outside this package, such as tests')."""
    _REGISTRY[kind.name] = kind


def unregister(name: str) -> None:
    """Forget a kind added with `register`."""
    if name not in _MODULES:
        _REGISTRY.pop(name, None)


def capability(kind: Kind[Any], cap: type[C]) -> C | None:
    """`kind` as a `cap` (a capability protocol of `syslua.resources.kind`)
    when it opts into it, by subclassing it; else None."""
    key = (type(kind), cap)
    has_it = _CAPABILITIES.get(key)
    if has_it is None:
        has_it = _CAPABILITIES[key] = cap in key[0].__mro__
    return kind if has_it else None  # type: ignore[return-value]


def of(name: str, cap: type[C]) -> C | None:
    """The kind called `name` as a `cap`, when it opts into it."""
    return capability(get(name), cap)


def with_outputs() -> list[Kind[Any]]:
    """The kinds whose generated outputs every apply writes."""
    return [get(name) for name in _WITH_OUTPUTS]


def path_taker() -> TakesBack:
    """The kind that takes in a path nothing manages (`sys add`)."""
    from syslua.resources.kind import TakesBack

    taker = capability(get(_PATHS), TakesBack)
    assert taker is not None
    return taker


def owner_of(record: dict[str, Any]) -> Kind[Any] | None:
    """The kind that undoes a journal record other than a path's, if known."""
    name = record.get("type") or _LEGACY_OPS.get(record.get("op", ""))
    return get(name) if name and has(name) else None
