"""What no longer matches the current snapshot, read without changing anything.

- `drift`: each item's kind says whether the machine still matches what the
  current snapshot recorded for it (edited, deleted, mode changed);
- `store_check`: which store objects and trees the current snapshot refers
  to are gone (`sys status` and `sys doctor` both report it);
- `describe_unrestored`: a path a failed rollback could not put back, with
  what it was and where its previous content is kept.
"""

from __future__ import annotations

from typing import Any

from syslua.execute.materialise import materialise
from syslua.execute.objects import needed
from syslua.paths import Paths
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.base import Context
from syslua.resources.kind import Drifts, Journaled
from syslua.resources.placeholders import Resolver
from syslua.resources.process import Runner
from syslua.state.records import ABSENT, DIR, FILE, LINK, Unrestored
from syslua.state.snapshots import Snapshots
from syslua.state.stat_index import StatIndex
from syslua.state.store import Store


def drift(paths: Paths, notes: list[str] | None = None) -> tuple[str | None, list[dict[str, str]]]:
    """What no longer matches the current snapshot: one entry per item, with
    the `kind` of drift and its detail, and the `label` it is shown by.
    `notes` receives the warnings of reading the snapshot (a rebuilt index,
    a corrupt current snapshot)."""
    snapshots = Snapshots(paths)
    snap, warning = snapshots.usable_current()
    if notes is not None:
        notes.extend(n for n in (snapshots.rebuilt, warning) if n)
    if snap is None:
        return None, []
    store = Store(paths.store)
    unreadable: dict[str, str] = {}  # items whose stored copy is gone: not checkable
    manifest = materialise(snap, store, unreadable)
    resolver = Resolver(manifest, store, paths.state)
    ctx = Context(
        runner=Runner(),
        noop=True,
        manifest=manifest,
        store=store,
        paths=paths,
        resolver=resolver,
        # what the snapshot recorded: a kind finds there the hand edits it keeps
        last_applied=snap.item_states(),
        # a file whose `lstat` is as the index recorded is not read (not a stand-in's)
        stat_index=None if warning else StatIndex.load(paths.state, snap.id),
    )
    out = []
    for item in manifest:
        kind = get_type(item.type)
        drifts = capability(kind, Drifts)
        found = (
            ("error", unreadable[item.id])
            if item.id in unreadable
            else drifts.drift(item, ctx)
            if drifts is not None
            else None
        )
        if found is not None:
            what, detail = found
            # Managed paths are shown as paths, anything else by its id.
            journaled = capability(kind, Journaled)
            managed = journaled is not None and journaled.managed_path(item)
            label = journaled.key_label(item.key) if journaled and managed else item.id
            out.append(
                {"id": item.id, "path": item.key, "kind": what, "detail": detail, "label": label}
            )
    return snap.id, out


def store_check(paths: Paths) -> dict[str, Any] | None:
    """What the current snapshot needs from the store and is not there: the
    store dir itself, or some of its objects (file contents, originals,
    config sources) and trees. None when all is there (or nothing is current)."""
    snap, _ = Snapshots(paths).usable_current()
    if snap is None:
        return None
    store = Store(paths.store)
    blobs, trees = needed(snap)
    exists = paths.store.is_dir()
    gone_blobs = [b for b in blobs if not store.has(b)]
    gone_trees = [t for t in trees if not store.tree_path(t).is_dir()]
    if exists and not gone_blobs and not gone_trees:
        return None
    return {
        "path": str(paths.store),
        "exists": exists,
        "objects": len(blobs),
        "missing_objects": len(gone_blobs),
        "trees": len(trees),
        "missing_trees": len(gone_trees),
    }


def describe_unrestored(record: Unrestored, store: Store) -> dict[str, str]:
    """A path a failed undo left (a record of `state.originals.load_unrestored`),
    with what it was and where that is kept."""
    prev = record.prev
    kind = prev.kind
    if kind == FILE and prev.blob:
        blob = prev.blob
        before = f"its previous content is kept in {store.loose(blob) or store.location(blob)}"
    elif kind == ABSENT:
        before = "it did not exist before"
    elif kind == LINK:
        before = f"it was a symlink to {prev.target}"
    else:
        before = f"it was a {'directory' if kind == DIR else kind}"
    why = record.why
    return {
        "path": record.path,
        "before": before + (f" ({why})" if why else ""),
        "blob": prev.blob or "",
    }
