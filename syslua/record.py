"""Read-only records: what `@dataclass(frozen=True)` would generate, written once.

Generating a dataclass's methods compiles them from source text, about half a
millisecond per class at every start. The records on the start-up path
(`Paths`, `Item`, `Manifest`, `Decision`) inherit them from `Frozen` instead:
set once in `__init__` (with `object.__setattr__`), then read-only; equal,
hashed and shown by their fields.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

_R = TypeVar("_R", bound="Frozen")


class Frozen:
    # The compared fields, in the order `__init__` takes them; `_shown`: the
    # fields the repr shows (default: the compared ones).
    _names: ClassVar[tuple[str, ...]] = ()
    _shown: ClassVar[tuple[str, ...] | None] = None
    __slots__ = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._names)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        names = self._names if self._shown is None else self._shown
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__qualname__}({shown})"

    def replace(self: _R, **changes: Any) -> _R:
        """A copy with `changes` made, of the same class (what `dataclasses.replace` does)."""
        return type(self)(**{**dict(zip(self._names, self._fields(), strict=True)), **changes})
