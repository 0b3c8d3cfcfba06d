"""Frozen manifest model with canonical JSON and a SHA-256 digest.

The digest covers what the machine should be (items and their effective
properties), not where things were declared: editing a comment in sys.lua
does not change it, and neither does reordering declarations.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from syslua.errors import Source
from syslua.record import Frozen

MANIFEST_VERSION = 1
# Items per piece of canonical JSON while hashing (see `Manifest._canonical_parts`).
CANONICAL_BATCH = 256


# Values kept as they are: JSON's scalars, by exact type. A dict lookup of the
# type is several times faster than isinstance against a union, and this runs
# for every property of every item (10,000 items in a snapshot's manifest).
# Anything else (a subclass, say) goes through `freeze`, which returns it as is.
_SCALARS = frozenset((str, bool, int, float, type(None)))


def freeze(value: Any) -> Any:
    """Deep-freeze JSON-like data: dicts become read-only mappings, lists tuples."""
    if isinstance(value, dict | MappingProxyType):
        out = dict(value)
        for k, v in out.items():
            if type(v) not in _SCALARS:
                out[k] = freeze(v)  # the same keys: safe while iterating
        return MappingProxyType(out)
    if isinstance(value, list | tuple):
        return tuple(v if type(v) is str else freeze(v) for v in value)
    return value


def freeze_owned(props: dict[str, Any]) -> Mapping[str, Any]:
    """Freeze a dict nobody else holds: nested values are frozen in place, no copy."""
    for k, v in props.items():
        if type(v) not in _SCALARS:
            props[k] = freeze(v)
    return MappingProxyType(props)


def thaw(value: Any) -> Any:
    """The inverse of `freeze`: plain dicts and lists, ready for json."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    """json.dumps fallback: frozen mappings are written as objects (no deep copy first)."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON data")


def canonical_json(data: Any) -> str:
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
    )


class Item(Frozen):
    """One resource the machine should have, with its merged properties."""

    __slots__ = ("type", "key", "props", "parent", "noop", "health_check_only", "id")
    _names = ("type", "key", "props", "parent", "noop", "health_check_only")
    type: str
    key: str
    props: Mapping[str, Any]
    parent: str | None  # id of the `apply` item that brought it in
    noop: bool  # forced by an apply parent (strengthened)
    health_check_only: bool
    id: str  # `type#key`: not compared, not shown

    def __init__(
        self,
        type: str,
        key: str,
        props: Mapping[str, Any],
        parent: str | None = None,
        noop: bool = False,
        health_check_only: bool = False,
    ) -> None:
        _set = object.__setattr__
        _set(self, "type", type)
        _set(self, "key", key)
        _set(self, "props", props)
        _set(self, "parent", parent)
        _set(self, "noop", noop)
        _set(self, "health_check_only", health_check_only)
        _set(self, "id", f"{type}#{key}")

    def _fields(self) -> tuple[Any, ...]:
        # Written out: comparing ten thousand items is how an apply tells
        # nothing changed. (Hashing raises TypeError: `props` is a mapping.)
        return (self.type, self.key, self.props, self.parent, self.noop, self.health_check_only)

    def get(self, name: str, default: Any = None) -> Any:
        return self.props.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "key": self.key,
            "props": thaw(self.props),
            "parent": self.parent,
            "noop": self.noop,
            "health_check_only": self.health_check_only,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Item:
        return cls(
            type=d["type"],
            key=d["key"],
            props=freeze(d["props"]),
            parent=d.get("parent"),
            noop=bool(d.get("noop", False)),
            health_check_only=bool(d.get("health_check_only", False)),
        )


class Manifest(Frozen):
    """All items, sorted by id. `sources` and `inputs` are not part of the digest
    (nor of equality: two manifests are equal when their items are)."""

    _names = ("items",)
    _shown = (
        "items",
        "sources",
        "inputs",
        "config",
        "warnings",
        "messages",
        "skipped",
        "placeholders",
    )

    items: tuple[Item, ...]
    sources: Mapping[str, tuple[Source, ...]]
    inputs: tuple[str, ...]
    config: str | None
    warnings: tuple[str, ...]
    messages: tuple[tuple[str, str], ...]
    # Resources of CCM manifests that their `control` leaves unmanaged:
    # (subject, reason, where), for the plan; not items.
    skipped: tuple[tuple[str, str, str], ...]
    # Whether any property may hold a `$${...}` placeholder (None: unknown, look).
    placeholders: bool | None
    # The evaluation cache entry that holds this manifest (the digest of its
    # cached form, `manifest/evalcache.py`); None: not cached. Not carried by
    # `replace`: a changed manifest is another evaluation.
    evaluation: str | None
    _index: dict[str, Item]

    def __init__(
        self,
        items: tuple[Item, ...],
        sources: Mapping[str, tuple[Source, ...]] | None = None,
        inputs: tuple[str, ...] = (),
        config: str | None = None,
        warnings: tuple[str, ...] = (),
        messages: tuple[tuple[str, str], ...] = (),
        skipped: tuple[tuple[str, str, str], ...] = (),
        placeholders: bool | None = None,
        _index: dict[str, Item] | None = None,
        evaluation: str | None = None,
    ) -> None:
        index = {} if _index is None else _index
        index.update((i.id, i) for i in items)
        self.__dict__.update(
            items=items,
            sources={} if sources is None else sources,
            inputs=inputs,
            config=config,
            warnings=warnings,
            messages=messages,
            skipped=skipped,
            placeholders=placeholders,
            _index=index,
            evaluation=evaluation,
        )

    def cached_as(self, evaluation: str) -> None:
        """Note the evaluation cache entry just written with this manifest."""
        object.__setattr__(self, "evaluation", evaluation)

    def replace(self, **changes: Any) -> Manifest:
        """A copy with `changes` made (every field `__init__` takes, not only `items`)."""
        assert self._shown is not None
        return type(self)(**{**{n: getattr(self, n) for n in self._shown}, **changes})

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, ident: object) -> bool:
        return ident in self._index

    def get(self, ident: str) -> Item | None:
        return self._index.get(ident)

    def of_type(self, type_: str) -> list[Item]:
        return [i for i in self.items if i.type == type_]

    def members(self, ident: str) -> tuple[Item, ...]:
        """The items whose `parent` is `ident` (a tree's files, an apply's
        children), in id order. The index is built on the first call."""
        index = self.__dict__.get("_members")
        if index is None:
            grouped: dict[str, list[Item]] = {}
            for item in self.items:
                if item.parent is not None:
                    grouped.setdefault(item.parent, []).append(item)
            index = {parent: tuple(items) for parent, items in grouped.items()}
            object.__setattr__(self, "_members", index)
        return index.get(ident, ())  # type: ignore[no-any-return]

    def source_of(self, ident: str) -> str:
        """`sys.lua:12` (or several, comma-separated) for messages."""
        return ", ".join(str(s) for s in self.sources.get(ident, ()))

    def to_dict(self) -> dict[str, Any]:
        return {"version": MANIFEST_VERSION, "items": [i.to_dict() for i in self.items]}

    def canonical(self) -> str:
        return "".join(self._canonical_parts())

    def _canonical_parts(self) -> Iterator[str]:
        """The canonical JSON in pieces of CANONICAL_BATCH items: taking the
        digest of 10,000 items no longer builds the whole text (and a plain
        dict of every item) at once, the peak of a no-change apply."""
        yield '{"items":['
        for start in range(0, len(self.items), CANONICAL_BATCH):
            # dict(props): json's C encoder writes a dict itself, while a frozen
            # mapping goes through the Python `default` hook (a third of the time).
            batch = [
                {
                    "type": i.type,
                    "key": i.key,
                    "props": dict(i.props),
                    "parent": i.parent,
                    "noop": i.noop,
                    "health_check_only": i.health_check_only,
                }
                for i in self.items[start : start + CANONICAL_BATCH]
            ]
            text = canonical_json(batch)[1:-1]  # without the list's brackets
            yield text if start == 0 else "," + text
        yield f'],"version":{MANIFEST_VERSION}}}'

    @property
    def digest(self) -> str:
        cached = self.__dict__.get("_digest")
        if cached is None:
            import hashlib  # here, not at the top: loading OpenSSL costs a run that hashes nothing

            h = hashlib.sha256()
            for part in self._canonical_parts():
                h.update(part.encode("utf-8", "surrogateescape"))
            cached = h.hexdigest()
            object.__setattr__(self, "_digest", cached)
        return cached

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Manifest:
        items = tuple(sorted((Item.from_dict(x) for x in d.get("items", ())), key=lambda i: i.id))
        return cls(items=items)
