"""`sys status`: what drifted from the current snapshot (edited, deleted, mode changed)."""

from __future__ import annotations

from typing import Any

from syslua.cli.commands.common import state
from syslua.cli.output import Terminal
from syslua.execute.materialise import materialise
from syslua.paths import Paths, abbreviate
from syslua.resources import get as get_type
from syslua.resources.base import Context
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
    manifest = materialise(snap, store)
    resolver = Resolver(manifest, store, paths.state)
    ctx = Context(
        runner=Runner(), noop=True, manifest=manifest, store=store, paths=paths, resolver=resolver
    )
    out = []
    for item in manifest:
        rtype = get_type(item.type)
        found = rtype.drift(item, ctx)
        if found is not None:
            kind, detail = found
            # Managed paths are shown as paths, anything else by its id.
            label = rtype.key_label(item.key) if rtype.managed_path(item) else item.id
            out.append(
                {"id": item.id, "path": item.key, "kind": kind, "detail": detail, "label": label}
            )
    return snap.id, out


MARK = {"deleted": "D", "edited": "M", "mode": "~", "changed": "~", "recreated": "+", "error": "!"}


def run(term: Terminal) -> int:
    paths = Paths.from_env()
    notes: list[str] = []
    with state(paths, term, exclusive=False):
        snap_id, items = drift(paths, notes)
        unrestored = load_unrestored(paths.state)
    for note in notes:
        term.warn(note)
    store = Store(paths.store)
    kept = [_unrestored(r, store) for r in unrestored]
    if term.json_mode:
        term.json(
            {
                "snapshot": snap_id,
                "drift": [{k: v for k, v in d.items() if k != "label"} for d in items],
                "unrestored": kept,
            }
        )
        return 0
    if kept:
        term.line("A failed rollback could not put these paths back:")
        for k in kept:
            term.line(f"  ! {abbreviate(k['path'])}: {k['before']}")
        term.line("Fix what stopped it (the reason is on each line), then run `sys apply`.")
        term.line()
    if snap_id is None:
        term.line("No current snapshot: nothing to compare with (run `sys apply`).")
        return 0
    if not items:
        term.line(f"No drift: the machine matches snapshot {snap_id}.")
        return 0
    term.line(f"Drift from snapshot {snap_id}:")
    for d in items:
        term.line(f"  {MARK[d['kind']]} {d['label']}: {d['detail']}")
    term.line("Run `sys apply` to converge again, or `sys rollback` to return to a snapshot.")
    return 0


def _unrestored(record: dict[str, Any], store: Store) -> dict[str, str]:
    """A path a failed undo left, with what it was and where that is kept."""
    prev, path = record["prev"], record["path"]
    kind = prev.get("kind")
    if kind == "file":
        before = f"its previous content is kept in {store.path(prev['blob'])}"
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
