"""`sys status`: what drifted from the current snapshot (edited, deleted, mode changed),
and whether the store still holds what the snapshot refers to."""

from __future__ import annotations

from typing import Any

from syslua.cli.commands.common import state
from syslua.cli.machine import JSON_FORMAT
from syslua.cli.output import Terminal
from syslua.execute.materialise import materialise
from syslua.paths import Paths, abbreviate
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.base import Context
from syslua.resources.kind import Drifts, Journaled
from syslua.resources.placeholders import Resolver
from syslua.resources.process import Runner
from syslua.state.originals import load_unrestored
from syslua.state.snapshots import Snapshots
from syslua.state.store import Store


def drift(paths: Paths, notes: list[str] | None = None) -> tuple[str | None, list[dict[str, str]]]:
    """What no longer matches the current snapshot: one entry per item, with
    the `kind` of drift and its detail, and the `label` it is shown by."""
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
        runner=Runner(), noop=True, manifest=manifest, store=store, paths=paths, resolver=resolver
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
    blobs, trees = snap.blobs(), snap.trees()
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


MARK = {"deleted": "D", "edited": "M", "mode": "~", "changed": "~", "recreated": "+", "error": "!"}


DRIFT = 4  # `--exit-code`, as `sys plan --exit-code` exits when changes are pending
BROKEN = 1  # the store lacks what the current snapshot refers to


def run(term: Terminal, *, exit_code: bool = False) -> int:
    """Exit code: 1 when the store is not whole; else, with `exit_code`, 4 when
    something drifted (or a failed rollback left paths it could not put back)."""
    paths = Paths.from_env()
    notes: list[str] = []
    with state(paths, term, exclusive=False):
        snap_id, items = drift(paths, notes)
        unrestored = load_unrestored(paths.state)
        store = store_check(paths)
    for note in notes:
        term.warn(note)
    kept = [_unrestored(r, Store(paths.store)) for r in unrestored]
    if term.json_mode:
        term.json(
            {
                "format": JSON_FORMAT,
                "snapshot": snap_id,
                "drift": [{k: v for k, v in d.items() if k != "label"} for d in items],
                "unrestored": kept,
                "store": store,
            }
        )
        return _code(store, bool(items or kept), exit_code)
    if kept:
        term.line("A failed rollback could not put these paths back:")
        for k in kept:
            term.line(f"  ! {abbreviate(k['path'])}: {k['before']}")
        term.line("Fix what stopped it (the reason is on each line), then run `sys apply`.")
        term.line()
    if snap_id is None:
        term.line("No current snapshot: nothing to compare with (run `sys apply`).")
        return _code(None, bool(kept), exit_code)
    if store is not None:
        _store_lines(term, snap_id, store)
    if not items:
        if store is None:
            term.line(f"No drift: the machine matches snapshot {snap_id}.")
        else:
            term.line(
                f"The managed paths match snapshot {snap_id}; its store is not whole (above)."
            )
        return _code(store, bool(items or kept), exit_code)
    term.line(f"Drift from snapshot {snap_id}:")
    for d in items:
        term.line(f"  {MARK[d['kind']]} {d['label']}: {d['detail']}")
    term.line("Run `sys apply` to converge again, or `sys rollback` to return to a snapshot.")
    return _code(store, bool(items or kept), exit_code)


def _code(store: dict[str, Any] | None, drifted: bool, exit_code: bool) -> int:
    """Paths a failed rollback could not put back count as drift too."""
    if store:
        return BROKEN
    return DRIFT if exit_code and drifted else 0


def _store_lines(term: Terminal, snap_id: str, store: dict[str, Any]) -> None:
    what = (
        "(file contents, originals of files syslua took over, config sources, package trees); "
        "`sys rollback` and putting originals back need them."
    )
    if not store["exists"]:
        term.line(f"The store is missing: {store['path']} does not exist.", "bold red", always=True)
        term.line(
            f"  Snapshot {snap_id} refers to {store['objects']} object(s) and {store['trees']} "
            f"tree(s) that were kept there {what}",
            always=True,
        )
        return
    term.line(
        f"The store is incomplete: {store['missing_objects']} of {store['objects']} object(s) "
        f"and {store['missing_trees']} of {store['trees']} tree(s) that snapshot {snap_id} "
        f"refers to are missing from {store['path']}.",
        "bold red",
        always=True,
    )
    term.line(f"  They were kept there {what}", always=True)


def _unrestored(record: dict[str, Any], store: Store) -> dict[str, str]:
    """A path a failed undo left, with what it was and where that is kept."""
    prev, path = record["prev"], record["path"]
    kind = prev.get("kind")
    if kind == "file":
        blob = prev["blob"]
        before = f"its previous content is kept in {store.loose(blob) or store.location(blob)}"
    elif kind == "absent":
        before = "it did not exist before"
    elif kind == "link":
        before = f"it was a symlink to {prev['target']}"
    else:
        before = f"it was a {'directory' if kind == 'dir' else kind}"
    why = record.get("why")
    return {
        "path": path,
        "before": before + (f" ({why})" if why else ""),
        "blob": prev.get("blob") or "",
    }
