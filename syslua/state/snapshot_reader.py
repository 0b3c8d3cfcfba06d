"""The current snapshot read lean, for an apply (`Snapshots.load(ident, like=manifest)`).

A streaming reader of the JSON `Snapshots.save` writes: the manifest is
decoded straight into Items (an item declared as in the manifest about to be
applied being that manifest's own Item), the item states and the pre-apply
records are read through, a chunk of the file at a time, and read again from
the file only when used (`LeanSnapshot`). A file not in that form is left to
the usual reading (`read_lean` returns None), which says what is wrong with it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator, Mapping
from json.decoder import JSONDecoder
from pathlib import Path
from typing import Any, BinaryIO

from syslua.errors import StateError
from syslua.manifest.model import MANIFEST_VERSION, Item, Manifest, freeze_owned
from syslua.state.records import ItemState
from syslua.state.snapshots import ItemStates, Snapshot


class LeanSnapshot(Snapshot):
    """A snapshot read for an apply (`Snapshots.load(ident, like=manifest)`).

    Decoded whole, the current snapshot of a 10,000-file config is about
    22 MiB of dicts: its manifest, which the apply then copies into Items,
    and the pre-apply records, which it never reads. Read lean, the manifest
    is decoded straight into Items, an item declared as in `like` being
    `like`'s own Item, and the pre-apply records are read through (a
    truncated file is still found corrupt) without being kept. Both come
    back when asked for: `manifest` as the items' plain form (the same JSON
    data), `pre` read again from the file. The item states are read through
    too, and read again from the file when first used (an apply that
    changes nothing never uses them: `item_states`). `pre` and `items` may
    raise a StateError when the file is gone since."""

    _loaded: Manifest
    _file: Path | None
    _pre: dict[str, Any] | None
    _states: ItemStates | None  # None: not read yet
    _at: dict[str, int]  # where each field not kept starts in the file, in bytes

    @property  # type: ignore[override]
    def manifest(self) -> dict[str, Any]:
        return self._loaded.to_dict()

    @manifest.setter
    def manifest(self, value: dict[str, Any]) -> None:
        self._loaded = Manifest.from_dict(value)

    @property  # type: ignore[override]
    def pre(self) -> dict[str, Any]:
        if self._pre is None:
            self._pre = self._read_again("pre", {})
        return self._pre

    @pre.setter
    def pre(self, value: dict[str, Any]) -> None:
        self._pre = value

    def load_manifest(self) -> Manifest:
        return self._loaded

    @property  # type: ignore[override]
    def items(self) -> ItemStates:
        if self._states is None:
            self._states = ItemStates(self._read_again("items", {}))
        return self._states

    @items.setter
    def items(self, value: Mapping[str, Any]) -> None:
        self._states = value if isinstance(value, ItemStates) else ItemStates(value)

    def _read_again(self, name: str, default: Any) -> Any:
        """The field `name`, read again from where it starts in the file
        (which was whole when it was read lean: only the file gone or
        changed since stops it); `default` when the file has no such field."""
        at = self._at.get(name)
        if at is None:
            return default
        assert self._file is not None
        try:
            with self._file.open("rb") as f:
                f.seek(at)
                # In bigger chunks: the field is decoded whole, and scanned
                # again each time a chunk cuts it short.
                reader = _LeanReader(self._loaded, stream=f, chunk=_CHUNK * 8)
                return reader.value(reader.ws(0))[0]
        except (OSError, _NotLean, StopIteration, ValueError, RecursionError) as e:
            raise StateError(f"snapshot {self.id} could not be read again: {e}") from None

    def item_states(self) -> Mapping[str, ItemState]:
        return self.items if self._states is not None else _States(self)


class _States(Mapping[str, ItemState]):
    """A lean snapshot's item states, read at the first look-up: an apply
    that changes nothing looks none up (the states of 10,000 files are
    5 MiB of dicts)."""

    def __init__(self, snap: LeanSnapshot) -> None:
        self.snap = snap

    def __getitem__(self, ident: str) -> ItemState:
        return self.snap.items[ident]

    def __iter__(self) -> Iterator[str]:
        return iter(self.snap.items)

    def __len__(self) -> int:
        return len(self.snap.items)


class _NotLean(Exception):
    """Not in the form `Snapshots.save` writes: read the usual way instead."""


_ITEM_KEYS = frozenset(("type", "key", "props", "parent", "noop", "health_check_only"))
_WS = re.compile(r"[ \t\n\r]*")  # what JSON allows between tokens
_CHUNK = 1 << 18  # bytes read at a time
_NUMBER_GOES_ON = re.compile(r"[0-9.eE+-]*")


def read_lean(
    source: str | BinaryIO, like: Manifest, file: Path | None = None
) -> LeanSnapshot | None:
    """The snapshot in `source` (its text, or a file open for reading its
    bytes) as a `LeanSnapshot`, sharing the Items of `like` that are
    declared the same; None when it is not in the form `save` writes (or
    not JSON, or not UTF-8): the caller then decodes it whole, which says
    what is wrong with a corrupt file as it always did. `file`: the file
    `source` reads, where the pre-apply records and the item states are
    read again from when asked for (without it, the item states are kept)."""
    lazy = file is not None and not isinstance(source, str)
    if isinstance(source, str):
        reader = _LeanReader(like, text=source)
    else:
        reader = _LeanReader(like, stream=source)
    try:
        fields = reader.read(states=not lazy)
    except (_NotLean, StopIteration, ValueError, RecursionError):
        return None
    loaded = fields.pop("manifest", None)
    if not isinstance(loaded, Manifest):
        return None
    if lazy:
        fields.pop("items", None)
    known = {k: fields[k] for k in Snapshot.__dataclass_fields__ if k in fields and k != "pre"}
    try:
        snap = LeanSnapshot(manifest={}, **known)
    except (TypeError, KeyError, ValueError, AttributeError):
        return None  # a field missing or damaged: the usual reading says so
    snap._loaded, snap._file, snap._pre, snap._at = loaded, file, None, reader.at
    if lazy:
        snap._states = None
    return snap


class _LeanReader:
    """Walks a snapshot's JSON with the json module's own scanner, one value
    at a time, reading the file a chunk at a time as it goes: neither the
    whole text nor its big parts are ever held at once.

    Positions are into `self.text`, which holds what is not read through
    yet; reading on (`_more`) moves them, so every step returns the position
    it ended at. `dropped` counts the bytes of the file before `self.text`,
    so that `at` can say where a field read through starts."""

    def __init__(
        self, like: Manifest, text: str = "", stream: BinaryIO | None = None, chunk: int = 0
    ) -> None:
        self.like = like
        self.text = text
        self.stream = stream
        self.chunk = chunk or _CHUNK  # bytes read at a time
        self.eof = stream is None
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.dropped = stream.tell() if stream is not None else 0
        self.at: dict[str, int] = {}  # field read through -> where its value starts (bytes)
        self.same: dict[str, str] = {}  # one string for each name said by many items
        # The json module's own scanner (C): the value at a position, and where it ends.
        self.scanner: Callable[[str, int], tuple[Any, int]] = JSONDecoder().scan_once  # type: ignore[attr-defined]

    def read(self, *, states: bool = True) -> dict[str, Any]:
        """The top-level fields: the manifest as a Manifest, the item states
        (or, without `states`, None: read through), the pre-apply records
        read through (None)."""
        fields: dict[str, Any] = {}

        def member(key: str, pos: int) -> int:
            if key == "manifest":
                fields[key], pos = self._manifest(pos)
            elif key == "pre" or (key == "items" and not states):
                self.at[key] = self.dropped + len(self.text[:pos].encode("utf-8"))
                # One record, or one item's state, at a time.
                fields[key], pos = None, self._skip(pos, 2 if key == "pre" else 1)
            else:
                fields[key], pos = self.value(pos)
            return pos

        end = self.ws(self._object(self.ws(0), member))
        if end != len(self.text) or not self.eof:
            raise _NotLean("extra data")
        return fields

    def _more(self, pos: int) -> int:
        """Read on: drop what is read through before `pos` and add a chunk,
        or as many bytes as characters are held (a long value doubles it).
        Returns where `pos` is now: 0."""
        assert self.stream is not None and not self.eof
        data = self.stream.read(max(self.chunk, len(self.text) - pos))
        self.eof = not data
        self.dropped += len(self.text[:pos].encode("utf-8"))
        self.text = self.text[pos:] + self.decoder.decode(data, final=self.eof)
        return 0

    def value(self, pos: int) -> tuple[Any, int]:
        """The value at `pos` and where it ends, reading on while the text
        read so far cuts it short (a value that ends the text may go on)."""
        while True:
            try:
                value, end = self.scanner(self.text, pos)
            except (StopIteration, ValueError):
                if self.eof:
                    raise
                pos = self._more(pos)
                continue
            if self.eof or not self._cut_short(value, end):
                return value, end
            pos = self._more(pos)

    def _cut_short(self, value: Any, end: int) -> bool:
        """Whether a scanned value may go on past the text read so far: it
        ends the text, or it is a number followed only by what could go on
        it (cut after "1.", the scanner reads 1)."""
        if end >= len(self.text):
            return True
        if type(value) not in (int, float):
            return False
        match = _NUMBER_GOES_ON.match(self.text, end)
        return match is not None and match.end() == len(self.text)

    def ws(self, pos: int) -> int:
        """Past the whitespace at `pos`: at a character, or at the end of the file."""
        while True:
            match = _WS.match(self.text, pos)
            assert match is not None  # it matches the empty string
            end = match.end()
            if end < len(self.text) or self.eof:
                return end
            pos = self._more(end)

    def _at(self, pos: int) -> str:
        return self.text[pos : pos + 1]  # after _ws: there is a character, but at the end

    def _object(self, pos: int, member: Callable[[str, int], int]) -> int:
        """Read the object at `pos` (past whitespace); `member(key, pos)`
        reads each value and returns where it ends. Returns where the object
        ends."""
        if self._at(pos) != "{":
            raise _NotLean("not an object")
        pos = self.ws(pos + 1)
        if self._at(pos) == "}":
            return pos + 1
        while True:
            if self._at(pos) != '"':
                raise _NotLean("not a key")
            key, pos = self.value(pos)
            pos = self.ws(pos)
            if self._at(pos) != ":":
                raise _NotLean("no colon")
            pos = self.ws(member(key, self.ws(pos + 1)))
            if self._at(pos) == "}":
                return pos + 1
            if self._at(pos) != ",":
                raise _NotLean("no comma")
            pos = self.ws(pos + 1)

    def _array(self, pos: int, element: Callable[[int], int]) -> int:
        if self._at(pos) != "[":
            raise _NotLean("not an array")
        pos = self.ws(pos + 1)
        if self._at(pos) == "]":
            return pos + 1
        while True:
            pos = self.ws(element(pos))
            if self._at(pos) == "]":
                return pos + 1
            if self._at(pos) != ",":
                raise _NotLean("no comma")
            pos = self.ws(pos + 1)

    def _skip(self, pos: int, depth: int) -> int:
        """Read through the value at `pos`, keeping nothing: containers
        `depth` levels down are decoded one member at a time."""
        if depth and self._at(pos) == "{":
            return self._object(pos, lambda _key, p: self._skip(p, depth - 1))
        if depth and self._at(pos) == "[":
            return self._array(pos, lambda p: self._skip(p, depth - 1))
        return self.value(pos)[1]

    def _manifest(self, pos: int) -> tuple[Manifest, int]:
        """{"version": 1, "items": [...]}, each item decoded and turned into
        an Item on its own: no more than one is ever held as JSON."""
        seen: dict[str, Any] = {}
        items: list[Item] = []

        def member(key: str, pos: int) -> int:
            if key == "items":
                seen[key] = True
                items.clear()
                return self._array(pos, item)
            seen[key], pos = self.value(pos)
            return pos

        def item(pos: int) -> int:
            d, pos = self.value(pos)
            items.append(self._item(d))
            return pos

        pos = self._object(pos, member)
        if seen.keys() != {"version", "items"} or seen["version"] != MANIFEST_VERSION:
            raise _NotLean("not a manifest")
        items.sort(key=lambda i: i.id)
        return Manifest(items=tuple(items)), pos

    def _item(self, d: Any) -> Item:
        if type(d) is not dict or d.keys() != _ITEM_KEYS:
            raise _NotLean("not an item")
        type_, key, props = d["type"], d["key"], d["props"]
        parent, noop, checks = d["parent"], d["noop"], d["health_check_only"]
        if (
            type(type_) is not str
            or type(key) is not str
            or type(props) is not dict
            or not (parent is None or type(parent) is str)
            or type(noop) is not bool
            or type(checks) is not bool
        ):
            raise _NotLean("not an item")
        like = self.like.get(f"{type_}#{key}")
        if (
            like is not None
            and like.type == type_
            and like.key == key
            and like.parent == parent
            and like.noop is noop
            and like.health_check_only is checks
            and like.props == props
        ):
            return like
        # Decoded on its own, an item shares no key strings with the others:
        # its props get the ones said before.
        same = self.same
        props = {same.setdefault(k, k): v for k, v in props.items()}
        return Item(same.setdefault(type_, type_), key, freeze_owned(props), parent, noop, checks)
