"""What `sys rollback` returns to beyond its snapshot's manifest, and what it says after.

1. `returning(target, current, store)`: the item states of the snapshot rolled
   back to, which the rollback's own snapshot carries on (a state that keeps
   a hand edit says so, and so the edit stays one). When the current
   snapshot is a `sys add` (or a rollback that undid one, which is undone
   the same way), the rollback undoes it: the source files it
   overwrote are put back, each only while it still holds what `sys add`
   wrote (one changed since is left as it is, and said); the home files it
   took back keep their content, as a hand edit of what the target applied,
   which `sys plan` marks again (a home file the add replaced, a file that
   had replaced a managed link made a link again, is written back as it was
   while the link is still what the add made). This is the one case where a rollback
   writes into the configuration's files: `sys add` wrote there.
2. `after(paths, before, touched)`: once the rollback is recorded, whether the
   config still declares what was rolled back. When the config files are
   those of the snapshot rolled back from, that snapshot's manifest is what
   the config declares: planned now, it says which of the items the rollback
   changed the next `sys apply` will redo, and which hold a hand edit again
   (the next apply refuses to overwrite those).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from syslua.errors import SysluaError
from syslua.execute.run import Rollback
from syslua.fsutil import sha256_file
from syslua.paths import Paths, abbreviate
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.kind import Journaled, TakesBack
from syslua.state.journal import capture
from syslua.state.records import PathState
from syslua.state.snapshots import ADD, ItemStates, Snapshot
from syslua.state.store import Store


def returning(
    target: Snapshot, current: Snapshot | None, store: Store
) -> tuple[Snapshot, Rollback, list[str]]:
    """The snapshot to materialise, what else the rollback returns to, and notes
    for the user (see the module's docstring)."""
    states: dict[str, Any] = dict(target.items)
    restores: list[tuple[str, PathState]] = []
    kept: list[str] = []
    notes: list[str] = []
    # A `sys add`, or a rollback that undid one, says what it wrote.
    added = current.pre.get(ADD) if current is not None else None
    if current is None or not isinstance(added, dict):
        return target, Rollback(states), notes
    manifest = target.load_manifest()
    found = added.get("homes")
    homes: dict[str, Any] = found if isinstance(found, dict) else {}
    paths: dict[str, str] = {}
    for ident in dict.fromkeys([*added.get("items", ()), *homes]):
        item = manifest.get(ident)
        kind = get_type(item.type) if item is not None else None
        journaled = capability(kind, Journaled) if kind is not None else None
        takes_back = capability(kind, TakesBack) if kind is not None else None
        path = journaled.managed_path(item) if journaled is not None and item else None
        if path is None or takes_back is None or item is None:
            continue
        live = _home_before(capture(path, store), homes.get(ident))
        state = takes_back.adopt(item, target.items.get(ident) or {}, live, store)
        if state is not None:
            states[ident] = state
            kept.append(ident)
            paths[ident] = path
    wrote = added.get("wrote") or {}
    for record in current.pre_records():
        digest = wrote.get(record.path)
        if digest is None:
            continue
        if _holds(record.path, digest):
            restores.append((record.path, record.prev))
        else:
            notes.append(
                f"{abbreviate(record.path)} changed since `sys add` wrote it: left as it is"
            )
    rollback = Rollback(states, tuple(restores), tuple(kept), paths)
    return replace(target, items=ItemStates(states)), rollback, notes


def _home_before(live: PathState, home: Any) -> PathState:
    """What the home path keeps: what is there now, or, when the add (or
    rollback) replaced it and it is still what that made it (a file that had
    replaced a managed link made a link again), what it replaced."""
    if not isinstance(home, dict):
        return live
    try:
        if PathState.from_json(home["after"]) == live:
            return PathState.from_json(home["before"])
    except (KeyError, TypeError, ValueError):
        pass  # a record this syslua cannot read: what is there now
    return live


def _holds(path: str, digest: str) -> bool:
    try:
        return os.path.isfile(path) and sha256_file(path) == digest
    except OSError:
        return False


def after(paths: Paths, before: Snapshot | None, touched: Iterable[str]) -> list[str]:
    """What the config still declares of what the rollback changed (`touched`,
    item ids): the lines to print (see the module's docstring)."""
    touched = set(touched)
    if before is None or not before.config or not touched:
        return []
    name = Path(before.config).name
    if not _same_files(before.inputs):
        return [
            f"{name} changed since snapshot {before.id}: `sys plan` shows what the next "
            "sys apply would do."
        ]
    try:
        redo, edits = _next_apply(paths, before, touched)
    except (SysluaError, OSError):
        return []  # nothing sure to say
    lines = []
    if redo:
        lines.append(
            f"{name} still declares what was rolled back ({_shown(redo)}): "
            "the next sys apply will redo it."
        )
    if edits:
        one = len(edits) == 1
        lines.append(
            f"{_shown(edits)} {'holds an edit' if one else 'hold edits'} made by hand again: "
            f"the next sys apply refuses to overwrite {'it' if one else 'them'} "
            f"(sys add PATH keeps {'it' if one else 'them'}, "
            f"sys apply --overwrite PATH drops {'it' if one else 'them'})."
        )
    return lines


def _same_files(inputs: dict[str, str]) -> bool:
    """Are the config files those the snapshot recorded, byte for byte?"""
    try:
        return bool(inputs) and all(sha256_file(p) == blob for p, blob in inputs.items())
    except OSError:
        return False


def _next_apply(paths: Paths, before: Snapshot, touched: set[str]) -> tuple[list[str], list[str]]:
    """Of the items in `touched`, those the next apply of `before`'s
    declarations would change, and those it would refuse to (edited)."""
    from syslua.plan.inputs import PlanInputs
    from syslua.resources.process import Runner

    inputs = PlanInputs(paths, before.load_manifest())
    plan = inputs.plan(inputs.context(Runner()))
    redo: list[str] = []
    edits: list[str] = []
    for entry in plan.all_entries:
        if entry.id not in touched or not entry.decision.changes or entry.noop:
            continue
        (edits if entry.edited else redo).append(entry.label)
    return redo, edits


def _shown(labels: list[str]) -> str:
    shown = ", ".join(labels[:3])
    return shown + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
