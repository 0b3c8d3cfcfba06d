"""Resource types, known to the engine only through this registry.

Types are imported on first use, so a plan of dotfiles never loads the
package, build or user code. A new kind is one module, a line here, its
schema entry, its docs page and its tests; the engine learns everything
else through the hooks of `syslua.resources.base.ResourceType`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from syslua.resources.base import ResourceType

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
# Types that write files from the whole manifest after every apply, present
# or not in it: the env scripts, and the profile (pruned once recorded).
_WITH_OUTPUTS = ("env", "package")
# The type that declares a plain path copied from a source file: `sys add`
# asks it to take in a path nothing manages yet (`ResourceType.take_in`).
_PATHS = "file"
# Journal records written before records named their type: the type by `op`.
_LEGACY_OPS = {"exec": "exec", "user": "user", "bind": "bind", "profile": "package"}
_REGISTRY: dict[str, ResourceType] = {}


def get(type_: str) -> ResourceType:
    rtype = _REGISTRY.get(type_)
    if rtype is None:
        module, cls = _MODULES[type_]
        rtype = _REGISTRY[type_] = getattr(importlib.import_module(module), cls)()
    return rtype


def has(type_: str) -> bool:
    return type_ in _MODULES or type_ in _REGISTRY


def register(rtype: ResourceType) -> None:
    """Make a type known by its `name` (for types defined outside this package, such as tests')."""
    _REGISTRY[rtype.name] = rtype


def unregister(name: str) -> None:
    """Forget a type added with `register`."""
    if name not in _MODULES:
        _REGISTRY.pop(name, None)


def with_outputs() -> list[ResourceType]:
    """The types whose generated outputs every apply writes."""
    return [get(name) for name in _WITH_OUTPUTS]


def path_type() -> ResourceType:
    """The type that takes in a path nothing manages (`sys add`)."""
    return get(_PATHS)


def owner_of(record: dict[str, Any]) -> ResourceType | None:
    """The type that undoes a journal record other than a path's, if known."""
    name = record.get("type") or _LEGACY_OPS.get(record.get("op", ""))
    return get(name) if name and has(name) else None
