"""Resource types, known to the engine only through this registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syslua.resources.base import ResourceType

_REGISTRY: dict[str, ResourceType] = {}


def _load() -> None:
    from syslua.resources.apply import ApplyType
    from syslua.resources.bind import BindType
    from syslua.resources.build import BuildType
    from syslua.resources.exec import ExecType
    from syslua.resources.file import FileType
    from syslua.resources.package import PackageType
    from syslua.resources.user import UserType

    for t in (FileType(), ExecType(), ApplyType(), PackageType(), UserType(), BuildType(), BindType()):
        _REGISTRY[t.name] = t


def get(type_: str) -> ResourceType:
    if not _REGISTRY:
        _load()
    return _REGISTRY[type_]


def has(type_: str) -> bool:
    if not _REGISTRY:
        _load()
    return type_ in _REGISTRY
