"""Snapshots: what each successful apply left the machine as, and the index of them.

A snapshot (`state/snapshots/<id>.json`) holds the manifest, the content of
every config file read (as store blobs), the per-item state and outputs
(file content blobs, so a rollback never needs the config's source files),
originals of files syslua took over, the env scripts, and the pre-apply
record (what the apply's journal captured). `index.json` lists the
snapshots and the current pointer; it is written atomically, and when it is
missing or corrupt it is rebuilt from the snapshot files. Tags live apart,
in `tags.json`, so a rebuilt index keeps them.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from json.decoder import JSONDecoder
from pathlib import Path
from typing import Any, BinaryIO

from syslua.errors import StateError, UsageError
from syslua.fsutil import atomic_write, make_dir
from syslua.manifest.model import MANIFEST_VERSION, Item, Manifest, freeze_owned
from syslua.paths import Paths
from syslua.state.layout import PASSAGE, PRIVATE_DIR, PRIVATE_FILE

INDEX = "index.json"
TAGS = "tags.json"  # kept apart from the index, so rebuilding a corrupt index keeps them


def new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(2).hex()


@dataclass
class Snapshot:
    id: str
    time: float
    message: str
    kind: str  # apply | rollback | destroy | edits (kept before an apply overwrote them) | add
    manifest: dict[str, Any]
    digest: str
    config: str | None = None
    parent: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)  # config file -> blob
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # item id -> state
    originals: dict[str, dict[str, Any]] = field(default_factory=dict)  # item id -> prev record
    env: dict[str, str] = field(default_factory=dict)  # "sh"/"fish" -> blob
    counts: dict[str, int] = field(default_factory=dict)
    pre: dict[str, Any] = field(default_factory=dict)
    # The plan's waves, as positions in the manifest's items: an apply of the
    # same declarations plans in this order without building the graph.
    order: list[list[int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Snapshot:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)

    def amended(
        self, *, kind: str, message: str, items: dict[str, dict[str, Any]], records: list[Any]
    ) -> Snapshot:
        """A new snapshot of the same declarations whose item states are `items`:
        what `sys add` took back, or the edits an apply kept before overwriting
        them. It ran nothing, so it counts nothing; `records` are the undo
        records of what was changed to make it (the pre-apply records)."""
        return Snapshot(
            id=new_id(),
            time=time.time(),
            message=message,
            kind=kind,
            manifest=self.manifest,
            digest=self.digest,
            config=self.config,
            parent=self.id,
            inputs=self.inputs,
            items=items,
            originals=self.originals,
            env=self.env,
            counts={},
            pre={"previous": self.id, "records": records},
            order=self.order,
        )

    def load_manifest(self) -> Manifest:
        return Manifest.from_dict(self.manifest)

    def item_states(self) -> Mapping[str, dict[str, Any]]:
        """The item states, to look some up (`items`, which a lean snapshot
        decodes only when one is looked up)."""
        return self.items

    def blobs(self) -> set[str]:
        """Every store object this snapshot refers to."""
        out = set(self.inputs.values()) | set(self.env.values())
        for state in self.items.values():
            for key in ("blob",):
                if state.get(key):
                    out.add(state[key])
            # What a type recorded of paths it wrote (an archive's extracted files).
            for r in state.get("records", ()):
                if isinstance(r, dict) and r.get("blob"):
                    out.add(r["blob"])
        for rec in self.originals.values():
            for r in rec.get("records", [rec]):
                if r.get("blob"):
                    out.add(r["blob"])
        for rec in self.pre.get("records", ()):
            prev = rec.get("prev") or {}
            if prev.get("blob"):
                out.add(prev["blob"])
        return out

    def trees(self) -> set[str]:
        return {s["tree"] for s in self.items.values() if s.get("tree")}


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
    _states: dict[str, dict[str, Any]] | None  # None: not read yet
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
    def items(self) -> dict[str, dict[str, Any]]:
        if self._states is None:
            self._states = self._read_again("items", {})
        return self._states

    @items.setter
    def items(self, value: dict[str, dict[str, Any]]) -> None:
        self._states = value

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

    def item_states(self) -> Mapping[str, dict[str, Any]]:
        return self.items if self._states is not None else _States(self)


class _States(Mapping[str, dict[str, Any]]):
    """A lean snapshot's item states, read at the first look-up: an apply
    that changes nothing looks none up (the states of 10,000 files are
    5 MiB of dicts)."""

    def __init__(self, snap: LeanSnapshot) -> None:
        self.snap = snap

    def __getitem__(self, ident: str) -> dict[str, Any]:
        return self.snap.items[ident]

    def __iter__(self) -> Iterator[str]:
        return iter(self.snap.items)

    def __len__(self) -> int:
        return len(self.snap.items)


class Snapshots:
    def __init__(self, paths: Paths) -> None:
        self.dir = paths.snapshots
        self.index_file = self.dir / INDEX
        self.rebuilt: str | None = None  # set when the index had to be rebuilt, with why

    # -- index ---------------------------------------------------------------
    def _read_index(self) -> dict[str, Any]:
        index = self._read_order()
        index["tags"] = self._read_tags()
        return index

    def _read_order(self) -> dict[str, Any]:
        if not self.dir.exists():
            return {"current": None, "order": []}
        try:
            data = json.loads(self.index_file.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not isinstance(data.get("order"), list):
                raise ValueError("unexpected shape")
            return data
        except FileNotFoundError:
            if not any(f.name not in (INDEX, TAGS) for f in self.dir.glob("*.json")):
                return {"current": None, "order": []}
            why = "missing"
        except ValueError as e:
            why = f"corrupt ({e})"
        self.rebuilt = f"the snapshot index was {why}; rebuilt it from the snapshot files"
        return self._rebuild()

    def _read_tags(self) -> dict[str, list[str]]:
        try:
            data = json.loads((self.dir / TAGS).read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _write_tags(self, tags: dict[str, list[str]]) -> None:
        self._write(self.dir / TAGS, json.dumps({k: v for k, v in tags.items() if v}, indent=1))

    def _rebuild(self) -> dict[str, Any]:
        snaps = []
        for f in self.dir.glob("*.json"):
            if f.name in (INDEX, TAGS):
                continue
            try:
                d = json.loads(f.read_text(encoding="utf-8"))
                snaps.append((d["time"], d["id"]))
            except (OSError, ValueError, KeyError):
                continue
        snaps.sort()
        order = [i for _, i in snaps]
        index: dict[str, Any] = {"current": order[-1] if order else None, "order": order}
        self._write_index(index)
        return index

    def _write_index(self, index: dict[str, Any]) -> None:
        index = {k: v for k, v in index.items() if k != "tags"}
        self._write(self.index_file, json.dumps(index, indent=1))

    def _write(self, path: Path, text: str) -> None:
        """Snapshots hold secrets (declared content, exec environments): owner only."""
        make_dir(self.dir, PRIVATE_DIR, parents_mode=PASSAGE)
        atomic_write(path, text.encode(), PRIVATE_FILE)

    def index(self) -> dict[str, Any]:
        return self._read_index()

    def current_id(self) -> str | None:
        return self._read_index().get("current")

    def set_current(self, ident: str | None) -> None:
        index = self._read_index()
        index["current"] = ident
        self._write_index(index)

    def clear_current(self) -> None:
        """After a failed restore: the next apply converges everything (self-healing)."""
        self.set_current(None)

    # -- snapshots -----------------------------------------------------------
    def path(self, ident: str) -> Path:
        return self.dir / f"{ident}.json"

    def load(self, ident: str, *, like: Manifest | None = None) -> Snapshot:
        """The snapshot `ident`. With `like` (the manifest about to be
        applied), it is read in its lean form (`LeanSnapshot`): what an
        apply needs of the current snapshot, in less memory."""
        try:
            if like is not None:
                with self.path(ident).open("rb") as f:
                    lean = read_lean(f, like, self.path(ident))
                if lean is not None:
                    return lean
            data = json.loads(self.path(ident).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"no snapshot {ident} (see `sys history`)") from None
        except ValueError as e:
            raise StateError(
                f"snapshot {ident} is corrupt: {e}; it cannot be used (other snapshots are fine)"
            ) from None
        try:
            return Snapshot.from_dict(data)
        except TypeError as e:
            raise StateError(f"snapshot {ident} is corrupt: {e}") from None

    def resolve_id(self, prefix: str) -> str:
        order = self._read_index()["order"]
        if prefix in order:
            return prefix
        tags = self._read_index().get("tags", {})
        for ident, names in tags.items():
            if prefix in names:
                return ident
        matches = [i for i in order if i.startswith(prefix)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UsageError(f"no snapshot {prefix} (see `sys history`)")
        raise UsageError(f"snapshot id {prefix} is ambiguous: {', '.join(matches[:5])}")

    def current(self) -> Snapshot | None:
        ident = self.current_id()
        return self.load(ident) if ident else None

    def usable_current(self, *, like: Manifest | None = None) -> tuple[Snapshot | None, str | None]:
        """The current snapshot, or, when its file is corrupt, the newest readable
        one instead, with a warning saying so. `like`: see `load`."""
        ident = self.current_id()
        if ident is None:
            return None, None
        try:
            return self.load(ident, like=like), None
        except (StateError, UsageError) as e:
            order = self._read_index()["order"]
            for other in reversed(order[: order.index(ident)] if ident in order else order):
                try:
                    snap = self.load(other, like=like)
                except (StateError, UsageError):
                    continue
                return snap, (
                    f"{e.message} Using snapshot {other} as the current state instead "
                    f"(`sys snapshot delete {ident}` removes the corrupt one)."
                )
            return None, (
                f"{e.message} No other snapshot is readable: the next apply converges every item "
                f"(`sys snapshot delete {ident}` removes the corrupt one)."
            )

    def latest_readable(self) -> Snapshot | None:
        for ident in reversed(self._read_index()["order"]):
            try:
                return self.load(ident)
            except (StateError, UsageError):
                continue
        return None

    def save(self, snap: Snapshot, *, make_current: bool = True) -> None:
        # The index first: read after the new file exists, a missing index
        # (the first snapshot) would be rebuilt with the new one as current.
        index = self._read_index()
        self._write(self.path(snap.id), json.dumps(snap.to_dict(), separators=(",", ":")))
        if snap.id not in index["order"]:
            index["order"].append(snap.id)
        if make_current:
            index["current"] = snap.id
        self._write_index(index)

    def delete(self, ident: str) -> None:
        index = self._read_index()
        if index.get("current") == ident:
            try:
                self.load(ident)
            except StateError:
                index["current"] = None  # a corrupt current snapshot may go: nothing can use it
            else:
                raise UsageError(f"snapshot {ident} is the current one; it cannot be deleted")
        index["order"] = [i for i in index["order"] if i != ident]
        self._write_index(index)
        tags = self._read_tags()
        if tags.pop(ident, None) is not None:
            self._write_tags(tags)
        try:
            os.unlink(self.path(ident))
        except FileNotFoundError:
            pass

    def tag(self, ident: str, name: str) -> None:
        tags = self._read_tags()
        for other, names in tags.items():
            if name in names and other != ident:
                raise UsageError(f"tag {name} is already on snapshot {other}")
        names = tags.setdefault(ident, [])
        if name not in names:
            names.append(name)
        self._write_tags(tags)

    def all(self, problems: list[str] | None = None) -> list[Snapshot]:
        """Every readable snapshot, oldest first; unreadable ones are described in `problems`."""
        out = []
        for ident in self._read_index()["order"]:
            try:
                out.append(self.load(ident))
            except (StateError, UsageError) as e:
                if problems is not None:
                    problems.append(e.message)
        return out

    def rollback_target(self, wanted: str | None = None) -> str:
        """The snapshot `sys rollback` returns to: `wanted` (an id, a prefix of
        one, or a tag), else the one before the current snapshot (the newest
        when none is current)."""
        if wanted:
            return self.resolve_id(wanted)
        index = self.index()
        order, current = index["order"], index.get("current")
        if not order:
            raise UsageError("there are no snapshots yet: nothing to roll back to")
        if current is None:
            return order[-1]
        pos = order.index(current) if current in order else len(order)
        if pos == 0:
            raise UsageError(
                f"snapshot {current} is the oldest one: there is no previous snapshot to roll back to",
                hint="To remove everything syslua manages and restore the originals it took over, "
                "run `sys destroy` (`sys destroy --dry-run` shows what it would do).",
            )
        return order[pos - 1]


def current_manifest(paths: Paths) -> tuple[Manifest | None, list[str]]:
    """The manifest of the current snapshot (None before the first apply), and warnings."""
    snapshots = Snapshots(paths)
    snap, warning = snapshots.usable_current()
    notes = [n for n in (snapshots.rebuilt, warning) if n]
    return (snap.load_manifest() if snap else None), notes


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
    except TypeError:
        return None  # a field missing: the usual reading says so
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
