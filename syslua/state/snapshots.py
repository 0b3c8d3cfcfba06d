"""Snapshots: what each successful apply left the machine as, and the index of them.

A snapshot (`state/snapshots/<id>.json`) holds the manifest, the content of
every config file read (as store blobs), the per-item state and outputs
(file content blobs, so a rollback never needs the config's source files),
originals of files syslua took over, the env scripts, and the pre-apply
record (what the apply's journal captured). `index.json` lists the
snapshots and the current pointer; it is written atomically, and when it is
missing or corrupt it is rebuilt from the snapshot files. Tags live apart,
in `tags.json`, so a rebuilt index keeps them.

Each snapshot has a generation number (`#12`): its place in history, 1 for
the first ever, given when it is saved and kept in its file and in the
index, never given again (deleting a snapshot renumbers nothing). Snapshots
made before the numbers existed get theirs from their place in the index.
`resolve_id` is how every command reads a snapshot argument.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from syslua import secrets
from syslua.errors import StateConflictError, StateError, UsageError
from syslua.fsutil import AtomicFile, atomic_write, make_dir
from syslua.manifest.model import Manifest
from syslua.paths import Paths
from syslua.state.layout import PASSAGE, PRIVATE_DIR, PRIVATE_FILE
from syslua.state.records import (
    ItemState,
    Original,
    PathRecord,
    PathState,
    TreeOriginal,
    original_from_json,
    record_from_json,
)

INDEX = "index.json"
TAGS = "tags.json"  # kept apart from the index, so rebuilding a corrupt index keeps them
# In the pre-apply record of a `sys add` snapshot: the items it took back, and
# what it wrote over each source file (path -> sha256), so a rollback undoes it.
ADD = "add"
CONFIG_NOTE = "current_config"  # in the index: {"id", "config"} of the snapshot save made current
GENERATIONS = "generations"  # in the index: snapshot id -> its generation number
LAST_GENERATION = "last_generation"  # in the index: the highest number ever given


def new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(2).hex()


class ItemStates(Mapping[str, ItemState]):
    """A snapshot's item states, by item id; each is decoded from its JSON
    when first looked up (a snapshot of 10,000 files holds 10,000 states,
    and most uses look up a few)."""

    def __init__(self, states: Mapping[str, ItemState | Mapping[str, Any]]) -> None:
        self._states: dict[str, ItemState | Mapping[str, Any]] = dict(states)

    def __getitem__(self, ident: str) -> ItemState:
        state = self._states[ident]
        if not isinstance(state, ItemState):
            state = self._states[ident] = ItemState.from_json(state)
        return state

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)

    def to_json(self) -> dict[str, Any]:
        return {k: _state_json(v) for k, v in self._states.items()}

    def encoded(self) -> Encoded:
        """As `to_json`, made a batch of states at a time as the file is written."""
        return Encoded(self._states, _state_json)


def _state_json(state: ItemState | Mapping[str, Any]) -> Any:
    return state.to_json() if isinstance(state, ItemState) else state


class Encoded:
    """JSON data turned into plain dicts and lists only as a snapshot file is
    written (`_json_parts`), `_BATCH` members at a time: a list of `members`
    (a sequence), or an object (a mapping of str keys), each member or value
    passed through `encode` first. A 10,000-item snapshot's manifest, item
    states and journal records are never held as plain data whole: the
    records they are made from are held anyway. Read as JSON data it is
    iterable, as the list or the object's keys it stands for (`plain`)."""

    __slots__ = ("members", "encode")

    def __init__(
        self, members: Sequence[Any] | Mapping[str, Any], encode: Callable[[Any], Any]
    ) -> None:
        self.members = members
        self.encode = encode

    def __len__(self) -> int:
        return len(self.members)

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self.members, Mapping):
            return iter(self.members)
        return map(self.encode, self.members)

    def plain(self) -> Any:
        """What it stands for, whole (`json.dumps`'s fallback)."""
        if isinstance(self.members, Mapping):
            return {k: self.encode(v) for k, v in self.members.items()}
        return [self.encode(m) for m in self.members]

    def parts(self) -> Iterator[str]:
        """Its compact JSON, as `json.dumps(self.plain())` writes it, in parts."""
        mapping = isinstance(self.members, Mapping)
        opening, closing = ("{", "}") if mapping else ("[", "]")
        members = (
            iter(self.members.items()) if isinstance(self.members, Mapping) else iter(self.members)
        )
        encode, sep = self.encode, opening
        while batch := list(islice(members, _BATCH)):
            data = {k: encode(v) for k, v in batch} if mapping else [encode(m) for m in batch]
            yield sep + json.dumps(data, separators=(",", ":"))[1:-1]
            sep = ","
        yield closing if sep == "," else opening + closing


def _plain_json(value: Any) -> Any:
    """json.dumps fallback: an `Encoded` is written as what it stands for."""
    if isinstance(value, Encoded):
        return value.plain()
    raise TypeError(f"{type(value).__name__} is not JSON data")


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
    items: Mapping[str, ItemState] = field(default_factory=dict)  # item id -> state
    originals: dict[str, Original] = field(default_factory=dict)  # item id -> what was there
    env: dict[str, str] = field(default_factory=dict)  # "sh"/"fish" -> blob
    counts: dict[str, int] = field(default_factory=dict)
    # The pre-apply record: the snapshot current before (`previous`) and what
    # the apply's journal recorded of every path (`records`, PathRecords);
    # for a `sys add`, what it did (`ADD`).
    pre: dict[str, Any] = field(default_factory=dict)
    # The plan's waves, as positions in the manifest's items: an apply of the
    # same declarations plans in this order without building the graph.
    order: list[list[int]] | None = None
    # Its place in history (`#12`), given by `Snapshots.save`; None in a
    # snapshot made before the numbers existed (the index numbers it).
    generation: int | None = None

    def __post_init__(self) -> None:
        # Item states and originals given as their JSON are read as records.
        if not isinstance(self.items, ItemStates):
            self.items = ItemStates(self.items)
        self.originals = {
            k: v if isinstance(v, PathState | TreeOriginal) else original_from_json(v)
            for k, v in self.originals.items()
        }

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as its file holds it (one codec: `from_dict` reads it)."""
        out = self._file_value()
        for name in ("manifest", "pre", "items"):  # `Encoded` a level down, as `record` gives
            value = out[name]
            if isinstance(value, Encoded):
                out[name] = value.plain()
            elif isinstance(value, dict):
                out[name] = {
                    k: v.plain() if isinstance(v, Encoded) else v for k, v in value.items()
                }
        return out

    def _file_value(self) -> dict[str, Any]:
        """`to_dict`, with the item states `Encoded` as the file is written."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        items = self.items
        assert isinstance(items, ItemStates)
        out["items"] = items.encoded()
        out["originals"] = {k: v.to_json() for k, v in self.originals.items()}
        if self.generation is None:  # a snapshot from before the numbers reads back as it was
            del out["generation"]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Snapshot:
        """Raises TypeError (or KeyError, ValueError) when `d` is not one."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})

    def amended(
        self,
        *,
        kind: str,
        message: str,
        items: Mapping[str, ItemState | Mapping[str, Any]],
        records: list[PathRecord],
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
            items=ItemStates(items),
            originals=self.originals,
            env=self.env,
            counts={},
            pre={"previous": self.id, "records": [r.to_json() for r in records]},
            order=self.order,
        )

    def load_manifest(self) -> Manifest:
        return Manifest.from_dict(self.manifest)

    def item_states(self) -> Mapping[str, ItemState]:
        """The item states, to look some up (`items`, which a lean snapshot
        decodes only when one is looked up)."""
        return self.items

    def pre_records(self) -> list[PathRecord]:
        """What the apply's journal recorded of every path before it changed it."""
        out = []
        for raw in self.pre.get("records", ()):
            record = record_from_json(raw)
            if isinstance(record, PathRecord):
                out.append(record)
        return out


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

    def _read_order(self, *, rebuild: bool = True) -> dict[str, Any]:
        """The index; one missing or corrupt is rebuilt from the snapshot
        files, and written again unless `rebuild` is False (a reader that
        holds no lock)."""
        if not self.dir.exists():
            return _numbered({"current": None, "order": []})
        try:
            data = json.loads(self.index_file.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not isinstance(data.get("order"), list):
                raise ValueError("unexpected shape")
            return _numbered(data)
        except FileNotFoundError:
            if not any(f.name not in (INDEX, TAGS) for f in self.dir.glob("*.json")):
                return _numbered({"current": None, "order": []})
            why = "missing"
        except ValueError as e:
            why = f"corrupt ({e})"
        except IsADirectoryError:
            raise StateConflictError(
                f"{self.index_file} is a directory, where syslua keeps its snapshot index",
                hint="It is not syslua's to remove: move it away, and the next command "
                "rebuilds the index from the snapshot files.",
            ) from None
        except OSError as e:
            raise StateError(
                f"cannot read the snapshot index {self.index_file}: {e.strerror or e}",
                hint="Run syslua as the user who owns its state, or make the state readable.",
            ) from None
        if not rebuild:
            return _numbered(self._rebuilt())
        self.rebuilt = f"the snapshot index was {why}; rebuilt it from the snapshot files"
        index = _numbered(self._rebuilt())
        self._write_index(index)
        return index

    def _read_tags(self) -> dict[str, list[str]]:
        try:
            data = json.loads((self.dir / TAGS).read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _write_tags(self, tags: dict[str, list[str]]) -> None:
        self._write(self.dir / TAGS, json.dumps({k: v for k, v in tags.items() if v}, indent=1))

    def _rebuilt(self) -> dict[str, Any]:
        """The index as the snapshot files give it: the newest one is current;
        each keeps the generation number its file holds."""
        snaps = []
        generations: dict[str, int] = {}
        for f in self.dir.glob("*.json"):
            if f.name in (INDEX, TAGS):
                continue
            try:
                d = json.loads(f.read_text(encoding="utf-8"))
                snaps.append((d["time"], d["id"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(d.get("generation"), int):
                generations[d["id"]] = d["generation"]
        snaps.sort()
        order = [i for _, i in snaps]
        return {"current": order[-1] if order else None, "order": order, GENERATIONS: generations}

    def _write_index(self, index: dict[str, Any]) -> None:
        index = {k: v for k, v in index.items() if k != "tags"}
        self._write(self.index_file, json.dumps(index, indent=1))

    def _write(self, path: Path, text: str) -> None:
        """Snapshots hold secrets (declared content, exec environments): owner only."""
        make_dir(self.dir, PRIVATE_DIR, parents_mode=PASSAGE)
        atomic_write(path, secrets.scrub(text).encode(), PRIVATE_FILE)

    def _write_streamed(self, path: Path, value: dict[str, Any]) -> None:
        """`value` as compact JSON, written a part at a time (`_json_parts`):
        the text of a 10,000-item snapshot is never held whole. With a
        secret known, the whole text is scrubbed at once (a value is never
        split between two parts it is looked for in)."""
        if secrets.any_known():
            self._write(path, json.dumps(value, separators=(",", ":"), default=_plain_json))
            return
        make_dir(self.dir, PRIVATE_DIR, parents_mode=PASSAGE)
        with AtomicFile(path, PRIVATE_FILE) as f:
            waiting: list[str] = []
            size = 0
            for part in _json_parts(value, 3):
                waiting.append(part)
                size += len(part)
                if size >= 1 << 16:
                    f.write("".join(waiting).encode())
                    waiting, size = [], 0
            f.write("".join(waiting).encode())

    def index(self) -> dict[str, Any]:
        return self._read_index()

    def current_id(self) -> str | None:
        return self._read_index().get("current")

    def generations(self) -> dict[str, int]:
        """Each snapshot's generation number (`#12`), by id."""
        return dict(self._read_index()[GENERATIONS])

    def set_current(self, ident: str | None, snap: Snapshot | None = None) -> None:
        """Make `ident` current; `snap`, that snapshot, lets the index note
        its config (`current_config`)."""
        index = self._read_index()
        index["current"] = ident
        _note_config(index, snap if snap is not None and snap.id == ident else None)
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
        # Imported here: the reader's LeanSnapshot is a Snapshot of this module.
        from syslua.state.snapshot_reader import read_lean

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
        except (TypeError, KeyError, ValueError, AttributeError) as e:
            raise StateError(f"snapshot {ident} is corrupt: {e}") from None

    def resolve_id(self, wanted: str) -> str:
        """The id of the snapshot `wanted` names, as every command taking a
        snapshot reads it: an id; a tag; a generation number (`12`, `#12`);
        `-N`, the Nth snapshot before the current one in history order (the
        newest counts as `-1` when none is current); a prefix or a suffix of
        one id (`3ee6`). Several ids matching is an error that lists them."""
        index = self._read_index()
        order: list[str] = index["order"]
        if wanted in order:
            return wanted
        for ident, names in index.get("tags", {}).items():
            if wanted in names:
                return ident
        number = re.fullmatch(r"(#?)(\d+)", wanted)
        if number:
            by_number = {n: i for i, n in index[GENERATIONS].items()}
            if int(number.group(2)) in by_number:
                return by_number[int(number.group(2))]
            if number.group(1):
                raise UsageError(
                    f"no snapshot {wanted}" + _numbers_hint(by_number),
                    hint="`sys history` lists the snapshots with their numbers.",
                )
        back = re.fullmatch(r"-(\d+)", wanted)
        if back:
            return self._back(int(back.group(1)), index)
        if wanted.startswith("-") or not wanted:
            raise UsageError(
                f"no such option or snapshot: {wanted!r}",
                hint="A snapshot is an id, a tag, a number (`12`, `#12`) or `-1` (the one before "
                "the current one); `sys history` lists them.",
            )
        matches = [i for i in order if i.startswith(wanted) or i.endswith(wanted)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UsageError(
                f"no snapshot {wanted}",
                hint="`sys history` lists the snapshots with their numbers, ids and tags.",
            )
        numbers = index[GENERATIONS]
        listed = "\n".join(f"  #{numbers[i]}  {i}" for i in reversed(matches))
        raise UsageError(
            f"snapshot {wanted} is ambiguous: it matches {len(matches)} snapshots:\n{listed}",
            hint="Give more of the id, or the snapshot's number (`#12`).",
        )

    def _back(self, steps: int, index: dict[str, Any]) -> str:
        """The snapshot `steps` before the current one in history order (`-1`)."""
        order, current = index["order"], index.get("current")
        if not order:
            raise UsageError("there are no snapshots yet: nothing to roll back to")
        if steps < 1:
            raise UsageError(
                f"-{steps} names no snapshot: -1 is the one before the current one, -2 the one "
                "before it"
            )
        pos = order.index(current) if current in order else len(order)
        if pos - steps >= 0:
            return order[pos - steps]
        if pos == 0:
            raise UsageError(
                f"snapshot {current} is the oldest one: there is no previous snapshot to roll back to",
                hint="To remove everything syslua manages and restore the originals it took over, "
                "run `sys destroy` (`sys destroy --dry-run` shows what it would do).",
            )
        raise UsageError(
            f"there are only {pos} snapshots before the current one: -{steps} names none",
            hint="`sys history` lists them.",
        )

    def current(self) -> Snapshot | None:
        ident = self.current_id()
        return self.load(ident) if ident else None

    def current_config(self) -> str | None:
        """The config file the current snapshot was made from (None: none is
        current, or it was made from no config, as a destroy is). The index
        notes it beside the id of the snapshot `save` made current, so that
        finding a config does not read a snapshot of 10,000 items; an index
        without that note (older, rebuilt, or current set by id) reads the
        snapshot."""
        index = self._read_order(rebuild=False)
        ident = index.get("current")
        if not ident:
            return None
        noted = index.get(CONFIG_NOTE)
        if isinstance(noted, dict) and noted.get("id") == ident:
            config = noted.get("config")
            return config if isinstance(config, str) else None
        return self.load(ident).config

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

    def damaged_current(self) -> tuple[str, str] | None:
        """(id, why) when the current snapshot's file is corrupt or missing;
        None when it is readable or none is current."""
        ident = self.current_id()
        if ident is None:
            return None
        try:
            self.load(ident)
        except (StateError, UsageError) as e:
            if isinstance(e, UsageError):
                return ident, f"The current snapshot {ident} is missing (its file is gone)."
            return ident, f"The current {e.message.rstrip('.')}."
        return None

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
        generations = index[GENERATIONS]
        if snap.id in generations:
            snap.generation = generations[snap.id]
        else:
            snap.generation = generations[snap.id] = index[LAST_GENERATION] + 1
            index[LAST_GENERATION] = snap.generation
        self._write_streamed(self.path(snap.id), snap._file_value())
        if snap.id not in index["order"]:
            index["order"].append(snap.id)
        if make_current:
            index["current"] = snap.id
            _note_config(index, snap)
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
        index[GENERATIONS].pop(ident, None)  # LAST_GENERATION stays: no number is given again
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
        """The snapshot `sys rollback` returns to: `wanted` (see `resolve_id`),
        else the one before the current snapshot (`-1`)."""
        return self.resolve_id(wanted or "-1")


def _numbered(index: dict[str, Any]) -> dict[str, Any]:
    """`index` with a generation number for every snapshot in its order: the
    one it holds, else (a snapshot made before the numbers existed, which
    comes before every numbered one) the next free number in history order."""
    held = index.get(GENERATIONS)
    held = held if isinstance(held, dict) else {}
    generations = {
        i: n
        for i, n in held.items()
        if i in index["order"] and isinstance(n, int) and not isinstance(n, bool) and n > 0
    }
    used = set(generations.values())
    last = 0
    for ident in index["order"]:
        if ident not in generations:
            n = last + 1
            while n in used:
                n += 1
            generations[ident] = n
            used.add(n)
        last = max(last, generations[ident])
    top = index.get(LAST_GENERATION)
    top = top if isinstance(top, int) and not isinstance(top, bool) else 0
    index[GENERATIONS] = generations
    index[LAST_GENERATION] = max([top, *used])
    return index


def _numbers_hint(by_number: dict[int, str]) -> str:
    """What numbers there are, for a number that names no snapshot."""
    if not by_number:
        return " (there are no snapshots yet)"
    return f" (the numbers go from #{min(by_number)} to #{max(by_number)})"


def _note_config(index: dict[str, Any], snap: Snapshot | None) -> None:
    """Note in the index the config `snap`, made current, was made from (none
    known: no note, and `current_config` reads the snapshot)."""
    if snap is None:
        index.pop(CONFIG_NOTE, None)
    else:
        index[CONFIG_NOTE] = {"id": snap.id, "config": snap.config}


_BATCH = 512  # members of a large dict or list encoded together: C speed, bounded memory


def _json_parts(value: Any, depth: int) -> Iterator[str]:
    """The compact JSON text of `value` (as `json.dumps` with separators
    `,` and `:` writes it), in parts: a dict or list of more than `_BATCH`
    members is encoded `_BATCH` members at a time, and a smaller one member
    by member down to `depth` levels, each part by the C encoder."""
    if isinstance(value, Encoded):
        yield from value.parts()
        return
    dict_ = isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if not depth or not value or not (dict_ or isinstance(value, list)):
        yield json.dumps(value, separators=(",", ":"), default=_plain_json)
        return
    opening, closing = ("{", "}") if dict_ else ("[", "]")
    if len(value) > _BATCH:
        members = iter(value.items()) if dict_ else iter(value)
        sep = opening
        while batch := list(islice(members, _BATCH)):
            whole = json.dumps(
                dict(batch) if dict_ else batch, separators=(",", ":"), default=_plain_json
            )
            yield sep + whole[1:-1]
            sep = ","
        yield closing
        return
    sep = opening
    for member in value.items() if dict_ else value:
        if dict_:
            k, v = member
            yield sep + json.dumps(k) + ":"
        else:
            v = member
            yield sep
        yield from _json_parts(v, depth - 1)
        sep = ","
    yield closing
