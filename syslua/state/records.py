"""The records syslua keeps in its state, typed, each with one codec.

| record | what it is | kept in |
|---|---|---|
| `PathState` | what was at a path: absent, a file (its content's blob, mode, owner), a directory, a symlink, something else | journal path records, originals, unrestored paths, a snapshot's pre-apply records, an archive's records |
| `TreeOriginal` | a whole directory syslua removed, entry by entry (`PathAt`) | originals |
| `Begin`, `PathRecord`, `KindRecord`, `OriginalsAdded`, `SnapshotNamed`, `Commit`, `Started`, `Ended` | the journal's records; `Damaged`, one that cannot be read | `state/journal/journal.jsonl` |
| `Unrestored` | a path a failed undo could not put back | `state/unrestored.json` |
| `ItemState` | what a snapshot keeps of an item: its kind's own state, and how it ran | snapshots |

Each `to_json` writes what syslua wrote before these records were typed,
and each `from_json` reads it (tests/data/state-v1 holds files written
then). A kind's own journal records (`KindRecord`) and its own part of an
item's state (`ItemState.own`) are the kind's to read: the record names
the kind, and the kind's `Undoes`/`Recorded` capability says what its data
means.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from syslua.record import Frozen

# What was at a path.
ABSENT, FILE, DIR, LINK, OTHER = "absent", "file", "dir", "link", "other"


class PathState(Frozen):
    """What was at a path (`journal.capture` reads it; `restore.restore_path` puts it back)."""

    __slots__ = ("kind", "blob", "mode", "uid", "gid", "target")
    _names: ClassVar[tuple[str, ...]] = __slots__
    kind: str  # ABSENT, FILE, DIR, LINK or OTHER
    blob: str | None  # a file's content, in the store
    mode: int | None  # permission bits (not for a link)
    uid: int | None
    gid: int | None
    target: str | None  # a link's

    def __init__(
        self,
        kind: str,
        blob: str | None = None,
        mode: int | None = None,
        uid: int | None = None,
        gid: int | None = None,
        target: str | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "kind", kind)
        _set(self, "blob", blob)
        _set(self, "mode", mode)
        _set(self, "uid", uid)
        _set(self, "gid", gid)
        _set(self, "target", target)

    @property
    def exists(self) -> bool:
        return self.kind != ABSENT

    def to_json(self) -> dict[str, Any]:
        if self.kind == ABSENT:
            return {"kind": ABSENT}
        if self.kind == LINK:
            return {"kind": LINK, "target": self.target, "uid": self.uid, "gid": self.gid}
        if self.kind == FILE:
            return {
                "kind": FILE,
                "blob": self.blob,
                "mode": self.mode,
                "uid": self.uid,
                "gid": self.gid,
            }
        return {"kind": self.kind, "mode": self.mode, "uid": self.uid, "gid": self.gid}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PathState:
        """Raises KeyError, TypeError or ValueError when `d` is not one."""
        kind = d["kind"]
        if kind == ABSENT:
            return _ABSENT
        if kind == LINK:
            return cls(LINK, uid=d["uid"], gid=d["gid"], target=_text(d["target"]))
        if kind == FILE:
            return cls(FILE, _text(d["blob"]), _int(d["mode"]), _int(d["uid"]), _int(d["gid"]))
        if kind in (DIR, OTHER):
            return cls(kind, mode=_int(d["mode"]), uid=_int(d["uid"]), gid=_int(d["gid"]))
        raise ValueError(f"no such kind of path: {kind!r}")


_ABSENT = PathState(ABSENT)


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"expected a string, got {type(v).__name__}")
    return v


def _int(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"expected an integer, got {type(v).__name__}")
    return v


def _opt_int(v: Any) -> int | None:
    return None if v is None else _int(v)


def _opt_text(v: Any) -> str | None:
    return None if v is None else _text(v)


class PathAt(Frozen):
    """A path and what was there."""

    __slots__ = ("path", "prev")
    _names: ClassVar[tuple[str, ...]] = __slots__
    path: str
    prev: PathState

    def __init__(self, path: str, prev: PathState) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "prev", prev)

    def to_json(self) -> dict[str, Any]:
        """One flat object, as an archive's records and a tree original keep it."""
        return {"path": self.path, **self.prev.to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PathAt:
        return cls(_text(d["path"]), PathState.from_json(d))


class TreeOriginal(Frozen):
    """A whole directory syslua took over to remove it, entry by entry, parents first."""

    __slots__ = ("records",)
    _names: ClassVar[tuple[str, ...]] = __slots__
    kind: ClassVar[str] = "tree"
    records: tuple[PathAt, ...]

    def __init__(self, records: tuple[PathAt, ...]) -> None:
        object.__setattr__(self, "records", records)

    @property
    def exists(self) -> bool:
        return True

    def to_json(self) -> dict[str, Any]:
        return {"kind": "tree", "records": [r.to_json() for r in self.records]}


Original = PathState | TreeOriginal


def original_from_json(d: Mapping[str, Any]) -> Original:
    if d.get("kind") == "tree":
        return TreeOriginal(tuple(PathAt.from_json(r) for r in d["records"]))
    return PathState.from_json(d)


def original_blobs(original: Original) -> set[str]:
    """The store objects an original needs."""
    states = (
        [r.prev for r in original.records] if isinstance(original, TreeOriginal) else [original]
    )
    return {s.blob for s in states if s.blob}


# -- the journal ------------------------------------------------------------------


class Begin(Frozen):
    """The first record: who began, what kind of run, from which snapshot."""

    __slots__ = ("pid", "time", "kind", "previous", "digest")
    _names: ClassVar[tuple[str, ...]] = __slots__
    op: ClassVar[str] = "begin"
    pid: int | None
    time: float | None
    kind: str  # apply, rollback, destroy
    previous: str | None  # the current snapshot when it began
    digest: str | None  # of the manifest it records

    def __init__(
        self,
        pid: int | None,
        time: float | None,
        kind: str,
        previous: str | None,
        digest: str | None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "pid", pid)
        _set(self, "time", time)
        _set(self, "kind", kind)
        _set(self, "previous", previous)
        _set(self, "digest", digest)

    item = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "pid": self.pid,
            "time": self.time,
            "kind": self.kind,
            "previous": self.previous,
            "digest": self.digest,
        }


class PathRecord(Frozen):
    """What a path was before an item changed it."""

    __slots__ = ("item", "path", "prev")
    _names: ClassVar[tuple[str, ...]] = __slots__
    op: ClassVar[str] = "path"
    item: str  # the item that recorded it ("" for sys add's)
    path: str
    prev: PathState

    def __init__(self, item: str, path: str, prev: PathState) -> None:
        _set = object.__setattr__
        _set(self, "item", item)
        _set(self, "path", path)
        _set(self, "prev", prev)

    def to_json(self) -> dict[str, Any]:
        if not self.item:
            return {"op": self.op, "path": self.path, "prev": self.prev.to_json()}
        return {"op": self.op, "item": self.item, "path": self.path, "prev": self.prev.to_json()}


class KindRecord(Frozen):
    """A record of a kind's own (an exec's undo command, an account as it
    was): the kind named `kind` wrote it and undoes it (`Undoes.undo`)."""

    __slots__ = ("op", "item", "kind", "data")
    _names: ClassVar[tuple[str, ...]] = __slots__
    op: str
    item: str
    kind: str | None  # None: a record written before records named their kind
    data: Mapping[str, Any]  # the rest of the record: the kind's to read

    def __init__(self, op: str, item: str, kind: str | None, data: Mapping[str, Any]) -> None:
        _set = object.__setattr__
        _set(self, "op", op)
        _set(self, "item", item)
        _set(self, "kind", kind)
        _set(self, "data", data)

    def __getitem__(self, name: str) -> Any:
        return self.data[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.data.get(name, default)

    def to_json(self) -> dict[str, Any]:
        out = {"op": self.op, **self.data}
        if self.item:
            out["item"] = self.item
        if self.kind is not None:
            out["type"] = self.kind
        return out


class OriginalsAdded(Frozen):
    """Items whose originals this run added to the record of originals."""

    __slots__ = ("added",)
    _names: ClassVar[tuple[str, ...]] = __slots__
    op: ClassVar[str] = "originals"
    item = ""
    added: tuple[str, ...]

    def __init__(self, added: tuple[str, ...]) -> None:
        object.__setattr__(self, "added", added)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "added": list(self.added)}


class SnapshotNamed(Frozen):
    """A snapshot this run saves (recovery deletes it if the run did not commit)."""

    __slots__ = ("snapshot",)
    _names: ClassVar[tuple[str, ...]] = __slots__
    op: ClassVar[str] = "snapshot"
    item = ""
    snapshot: str

    def __init__(self, snapshot: str) -> None:
        object.__setattr__(self, "snapshot", snapshot)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "snapshot": self.snapshot}


class Commit(Frozen):
    """The run is recorded: recovery finishes it instead of undoing it."""

    __slots__ = ("snapshot", "removed")
    _names: ClassVar[tuple[str, ...]] = __slots__
    op: ClassVar[str] = "commit"
    item = ""
    snapshot: str
    removed: tuple[str, ...]  # items it removed: their originals go from the record

    def __init__(self, snapshot: str, removed: tuple[str, ...]) -> None:
        object.__setattr__(self, "snapshot", snapshot)
        object.__setattr__(self, "removed", removed)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "snapshot": self.snapshot, "removed": list(self.removed)}


class Started(Frozen):
    """A command the run starts, recorded before it runs: its process group,
    the start time of the group's leader (`/proc/<pid>/stat` field 22, in
    clock ticks since boot) and the boot it ran in. Recovery stops the group
    if it is still alive and is the same one (`resources.groups`)."""

    __slots__ = ("pgid", "start", "boot")
    _names: ClassVar[tuple[str, ...]] = __slots__
    op: ClassVar[str] = "started"
    item = ""
    pgid: int
    start: int | None  # None: the system has no /proc to read it from
    boot: str | None

    def __init__(self, pgid: int, start: int | None, boot: str | None) -> None:
        _set = object.__setattr__
        _set(self, "pgid", pgid)
        _set(self, "start", start)
        _set(self, "boot", boot)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "pgid": self.pgid, "start": self.start, "boot": self.boot}


class Ended(Frozen):
    """The process group of a `Started` command is gone: nothing to stop."""

    __slots__ = ("pgid",)
    _names: ClassVar[tuple[str, ...]] = __slots__
    op: ClassVar[str] = "ended"
    item = ""
    pgid: int

    def __init__(self, pgid: int) -> None:
        object.__setattr__(self, "pgid", pgid)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "pgid": self.pgid}


class Damaged(Frozen):
    """A record that is JSON but not one a journal holds: undoing reports it."""

    __slots__ = ("raw", "why")
    _names: ClassVar[tuple[str, ...]] = __slots__
    raw: Mapping[str, Any]
    why: str  # `KeyError: 'path'`

    def __init__(self, raw: Mapping[str, Any], why: str) -> None:
        object.__setattr__(self, "raw", raw)
        object.__setattr__(self, "why", why)

    @property
    def item(self) -> str:
        item = self.raw.get("item")
        return item if isinstance(item, str) else ""

    @property
    def op(self) -> Any:
        return self.raw.get("op")

    @property
    def what(self) -> str:
        """How the report names it: its path, its item, or its op."""
        return str(self.raw.get("path") or self.raw.get("item") or self.raw.get("op"))

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


Record = (
    Begin
    | PathRecord
    | KindRecord
    | OriginalsAdded
    | SnapshotNamed
    | Commit
    | Started
    | Ended
    | Damaged
)


def record_from_json(d: Mapping[str, Any]) -> Record:
    """The record a journal line holds (`Damaged` when it holds none)."""
    try:
        return _decode(d)
    except (KeyError, TypeError, ValueError) as e:
        return Damaged(d, f"{type(e).__name__}: {e}")


def _decode(d: Mapping[str, Any]) -> Record:
    op = d["op"]
    if op == "path":
        return PathRecord(d.get("item", ""), _text(d["path"]), PathState.from_json(d["prev"]))
    if op == "begin":
        return Begin(
            d.get("pid"), d.get("time"), d.get("kind", "apply"), d.get("previous"), d.get("digest")
        )
    if op == "originals":
        return OriginalsAdded(tuple(d.get("added", ())))
    if op == "snapshot":
        return SnapshotNamed(_text(d["snapshot"]))
    if op == "commit":
        return Commit(_text(d["snapshot"]), tuple(d.get("removed", ())))
    if op == "started":
        return Started(_int(d["pgid"]), _opt_int(d.get("start")), _opt_text(d.get("boot")))
    if op == "ended":
        return Ended(_int(d["pgid"]))
    if not isinstance(op, str):
        raise TypeError(f"an op is a string, got {type(op).__name__}")
    data = {k: v for k, v in d.items() if k not in ("op", "item", "type")}
    item = d.get("item", "")
    return KindRecord(op, item if isinstance(item, str) else "", d.get("type"), data)


# -- unrestored paths -------------------------------------------------------------


class Unrestored(Frozen):
    """A path a failed undo could not put back, what it was, and why."""

    __slots__ = ("path", "prev", "why")
    _names: ClassVar[tuple[str, ...]] = __slots__
    path: str
    prev: PathState
    why: str

    def __init__(self, path: str, prev: PathState, why: str = "") -> None:
        _set = object.__setattr__
        _set(self, "path", path)
        _set(self, "prev", prev)
        _set(self, "why", why)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "prev": self.prev.to_json(), "why": self.why}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Unrestored:
        return cls(_text(d["path"]), PathState.from_json(d["prev"]), str(d.get("why", "")))


# -- snapshots --------------------------------------------------------------------

# The fields of an item's state that say how it ran in the apply that recorded it.
_RUN_FIELDS = ("exit_code", "stdout", "stderr", "status")


class ItemState(Mapping[str, Any]):
    """What a snapshot keeps of an item: its kind's own state (`own`, what
    `Recorded.snapshot_state` gave), and how the item ran in the apply that
    recorded it (`status`, and a command's exit code and output tails).

    Kept as one flat object, as before these records were typed; it reads
    as that mapping too (`state["blob"]`), for the kind that wrote it."""

    __slots__ = ("own", "status", "exit_code", "stdout", "stderr")

    def __init__(
        self,
        own: Mapping[str, Any],
        status: str | None = None,
        exit_code: int | None = None,
        stdout: str | None = None,
        stderr: str | None = None,
    ) -> None:
        self.own = own
        self.status = status
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr

    def to_json(self) -> dict[str, Any]:
        out = dict(self.own)
        if self.exit_code is not None:
            out["exit_code"] = self.exit_code
            out["stdout"] = self.stdout
            out["stderr"] = self.stderr
        if self.status is not None:
            out["status"] = self.status
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ItemState:
        own = {k: v for k, v in d.items() if k not in _RUN_FIELDS}
        return cls(own, d.get("status"), d.get("exit_code"), d.get("stdout"), d.get("stderr"))

    # As a mapping: the flat object it is kept as.
    def __getitem__(self, name: str) -> Any:
        return self.to_json()[name] if name in _RUN_FIELDS else self.own[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ItemState):
            return self.to_json() == other.to_json()
        if isinstance(other, Mapping):
            return self.to_json() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ItemState({self.to_json()!r})"
