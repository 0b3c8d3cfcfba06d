"""Resource kinds as the engine sees them: typed access to the registry of kinds.

The registry (`syslua/registry.py`) lists the kinds and imports each one's
module on first use, so a plan of dotfiles never loads the package, build
or user code. A new kind is one module (its schema, its core and the
capabilities it opts into: `resources/kind.py`) and an entry in the
registry; the engine asks a kind for a capability with `capability`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from syslua import registry

if TYPE_CHECKING:
    from syslua.resources.kind import Kind, TakesBack
    from syslua.state.records import KindRecord

# Journal records written before records named their kind: the kind by `op`.
_LEGACY_OPS = {"exec": "exec", "user": "user", "bind": "bind", "profile": "package"}
_CAPABILITIES: dict[type, dict[type, bool]] = {}  # capability -> kind class -> has it

C = TypeVar("C")


# The kind called `name` (KeyError when there is none): the registry's lookup
# itself, not a wrapper around it, as the engine asks for a kind several times
# for each item of a plan.
get: Callable[[str], Kind[Any]] = registry.load


def has(name: str) -> bool:
    return registry.has(name)


def register(kind: Kind[Any], *, ccm: str | None = None) -> None:
    """Make a kind defined outside syslua known by its `name` and its schema's
    key: a Lua config declares it as a global of that name; with `ccm`, a
    CCM manifest may declare it as that type. The seam for kinds that do not
    ship with syslua: a plugin's, and tests/stamp_kind.py, which proves the
    engine reaches a kind only through its core and capabilities."""
    registry.register(registry.Entry(kind.name, kind.schema.key, None, ccm=ccm), kind)


def unregister(name: str) -> None:
    """Forget a kind added with `register`."""
    registry.unregister(name)


def capability(kind: Kind[Any], cap: type[C]) -> C | None:
    """`kind` as a `cap` (a capability protocol of `syslua.resources.kind`)
    when it opts into it, by subclassing it; else None."""
    try:
        has_it = _CAPABILITIES[cap][type(kind)]
    except KeyError:
        has_it = _CAPABILITIES.setdefault(cap, {})[type(kind)] = cap in type(kind).__mro__
    return kind if has_it else None  # type: ignore[return-value]


def with_outputs() -> list[Kind[Any]]:
    """The kinds whose generated outputs every apply writes."""
    return [get(name) for name in registry.with_outputs()]


def path_taker() -> TakesBack:
    """The kind that takes in a path nothing manages (`sys add`)."""
    from syslua.resources.kind import TakesBack

    taker = capability(get(registry.PATHS), TakesBack)
    assert taker is not None
    return taker


def owner_of(record: KindRecord) -> Kind[Any] | None:
    """The kind that wrote a journal record of its own, and undoes it, if known."""
    name = record.kind or _LEGACY_OPS.get(record.op)
    return get(name) if name and has(name) else None
