"""Resource types, known to the engine only through this registry.

Types are imported on first use, so a plan of dotfiles never loads the
package, build or user code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syslua.resources.base import ResourceType

_MODULES = {
    "file": ("syslua.resources.file", "FileType"),
    "exec": ("syslua.resources.exec", "ExecType"),
    "apply": ("syslua.resources.apply", "ApplyType"),
    "package": ("syslua.resources.package", "PackageType"),
    "user": ("syslua.resources.user", "UserType"),
    "build": ("syslua.resources.build", "BuildType"),
    "bind": ("syslua.resources.bind", "BindType"),
}
_REGISTRY: dict[str, ResourceType] = {}


def get(type_: str) -> ResourceType:
    rtype = _REGISTRY.get(type_)
    if rtype is None:
        module, cls = _MODULES[type_]
        rtype = _REGISTRY[type_] = getattr(importlib.import_module(module), cls)()
    return rtype


def has(type_: str) -> bool:
    return type_ in _MODULES
