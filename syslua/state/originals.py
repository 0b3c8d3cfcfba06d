"""The record of originals: what was at each path before syslua first took it over.

It is kept apart from snapshots, in `state/originals.json`, so that it
survives what snapshots do not: a current pointer cleared by self-healing, a
failed journal moved aside, an apply whose undo failed half-way. An entry
(item id -> what the path was: absent, or a file's blob in the store with
its mode and owner, a directory, a symlink, a whole tree) is written once,
durably and before the first change, when syslua first takes the path
over, and is never replaced by content syslua wrote. It goes away only when
it has done its job:

- the declaration was removed and the original restored, in an apply that
  committed;
- the apply that took the path over was rolled back cleanly, so the path is
  as it was and syslua never managed it.

An apply that took a path over and whose undo then failed keeps the entry:
the next apply finds it and does not take the path over a second time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from syslua.errors import StateError
from syslua.fsutil import atomic_write
from syslua.state.records import Original, Unrestored, original_blobs, original_from_json

FILE = "originals.json"


class Originals:
    """The entries, by item id, loaded from and saved to the state directory."""

    def __init__(self, state_dir: Path, entries: dict[str, Original], *, exists: bool) -> None:
        self.file = state_dir / FILE
        self.entries = entries
        self.exists = exists

    @classmethod
    def load(cls, state_dir: Path) -> Originals:
        path = state_dir / FILE
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return cls(state_dir, {}, exists=False)
        except (OSError, ValueError) as e:
            raise StateError(f"cannot read the record of originals {path}: {e}") from e
        entries = data.get("originals") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            raise StateError(f"the record of originals {path} is damaged (no `originals` table)")
        try:
            decoded = {ident: original_from_json(rec) for ident, rec in entries.items()}
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise StateError(f"the record of originals {path} is damaged ({e})") from None
        return cls(state_dir, decoded, exists=True)

    def get(self, ident: str) -> Original | None:
        return self.entries.get(ident)

    def __contains__(self, ident: object) -> bool:
        return ident in self.entries

    def add(self, found: Mapping[str, Original]) -> list[str]:
        """Record originals not recorded yet (an existing entry always wins); returns the ids added."""
        added = [ident for ident in found if ident not in self.entries]
        for ident in added:
            self.entries[ident] = found[ident]
        return added

    def drop(self, idents: Iterable[str]) -> None:
        for ident in idents:
            self.entries.pop(ident, None)

    def save(self) -> None:
        """Write the record durably (its blobs must already be durable in the store)."""
        entries = {ident: rec.to_json() for ident, rec in self.entries.items()}
        data = json.dumps(
            {"version": 1, "originals": entries}, sort_keys=True, separators=(",", ":")
        )
        atomic_write(self.file, data.encode(), 0o600)
        self.exists = True

    def blobs(self) -> set[str]:
        """Store objects the entries need (kept by `sys gc`)."""
        return set().union(*(original_blobs(rec) for rec in self.entries.values()))


UNRESTORED = "unrestored.json"


def note_unrestored(state_dir: Path, records: list[Unrestored]) -> None:
    """Remember paths a failed undo could not put back, with what they were
    (`sys status` lists them until an apply converges the machine again)."""
    if not records:
        return
    known = {r.path: r for r in load_unrestored(state_dir)}
    for r in records:
        known.setdefault(r.path, r)  # the first failure holds the oldest content
    entries = [r.to_json() for r in sorted(known.values(), key=lambda r: r.path)]
    data = json.dumps({"version": 1, "unrestored": entries})
    atomic_write(state_dir / UNRESTORED, data.encode(), 0o600)


def load_unrestored(state_dir: Path) -> list[Unrestored]:
    try:
        data = json.loads((state_dir / UNRESTORED).read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise StateError(f"cannot read {state_dir / UNRESTORED}: {e}") from e
    entries = data.get("unrestored", ()) if isinstance(data, dict) else ()
    try:
        return [Unrestored.from_json(r) for r in entries]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise StateError(f"cannot read {state_dir / UNRESTORED}: damaged ({e})") from None


def clear_unrestored(state_dir: Path) -> None:
    (state_dir / UNRESTORED).unlink(missing_ok=True)


def known(state_dir: Path, fallback: Mapping[str, Original] | None) -> dict[str, Original]:
    """The originals as a plan may name them (read-only): the record's, or
    `fallback` (the current snapshot's) when there is no record yet; none
    when the record cannot be read (the apply itself reports that)."""
    try:
        registry = Originals.load(state_dir)
    except StateError:
        return {}
    if not registry.exists:
        return dict(fallback or {})
    return registry.entries
