"""`sys status`: what drifted from the current snapshot (edited, deleted, mode changed)."""

from __future__ import annotations

from syslua.cli.commands.common import state
from syslua.cli.output import Terminal
from syslua.paths import Paths, abbreviate
from syslua.resources import get as get_type
from syslua.resources.base import Context
from syslua.resources.file_posix import ABSENT
from syslua.resources.placeholders import Resolver, Unresolved
from syslua.resources.process import Runner
from syslua.state.materialise import materialise
from syslua.state.snapshots import Snapshots
from syslua.state.store import Store


def drift(paths: Paths, notes: list[str] | None = None) -> tuple[str | None, list[dict[str, str]]]:
    snapshots = Snapshots(paths)
    snap, warning = snapshots.usable_current()
    if notes is not None:
        notes.extend(n for n in (snapshots.rebuilt, warning) if n)
    if snap is None:
        return None, []
    store = Store(paths.store)
    manifest = materialise(snap, store)
    resolver = Resolver(manifest, store, paths.state)
    ctx = Context(runner=Runner(), noop=True, manifest=manifest, store=store, paths=paths, resolver=resolver)
    ftype = get_type("file")
    out = []
    for item in manifest.of_type("bind"):
        st = get_type("bind").status(item, ctx)
        if st["outputs"] is None:
            out.append({"id": item.id, "path": item.key, "kind": "changed", "detail": "bind has no recorded outputs"})
        elif st["drift"]:
            out.append({"id": item.id, "path": item.key, "kind": "changed", "detail": f"check failed: {st['drift']}"})
    for item in manifest.of_type("package"):
        st = get_type("package").status(item, ctx)
        if not st["present"] or not st["linked"]:
            what = "not in the store" if not st["present"] else "not linked into the profile"
            out.append({"id": item.id, "path": item.key, "kind": "changed", "detail": f"package {what}"})
    for item in manifest.of_type("file"):
        try:
            item = resolver.resolve_item(item)
        except Unresolved:
            continue
        st = ftype.status(item, ctx)
        if st.error:
            out.append({"id": item.id, "path": item.key, "kind": "error", "detail": st.error})
            continue
        if not st.differences:
            continue
        ensure = item.get("ensure")
        if ensure != "absent" and st.state.ensure == ABSENT:
            kind, detail = "deleted", "deleted"
        elif ensure == "absent":
            kind, detail = "recreated", "exists again"
        elif "content changed" in st.differences:
            kind, detail = "edited", ", ".join(st.differences).replace("content changed", "content edited")
        elif any(d.startswith("mode") for d in st.differences) and len(st.differences) == 1:
            kind, detail = "mode", st.differences[0]
        else:
            kind, detail = "changed", ", ".join(st.differences)
        out.append({"id": item.id, "path": item.key, "kind": kind, "detail": detail})
    return snap.id, out


MARK = {"deleted": "D", "edited": "M", "mode": "~", "changed": "~", "recreated": "+", "error": "!"}


def run(term: Terminal) -> int:
    paths = Paths.from_env()
    notes: list[str] = []
    with state(paths, term, exclusive=False):
        snap_id, items = drift(paths, notes)
    for note in notes:
        term.warn(note)
    if term.json_mode:
        term.json({"snapshot": snap_id, "drift": items})
        return 0
    if snap_id is None:
        term.line("No current snapshot: nothing to compare with (run `sys apply`).")
        return 0
    if not items:
        term.line(f"No drift: the machine matches snapshot {snap_id}.")
        return 0
    term.line(f"Drift from snapshot {snap_id}:")
    for d in items:
        label = abbreviate(d["path"]) if d["id"].startswith("file#") else d["id"]
        term.line(f"  {MARK[d['kind']]} {label}: {d['detail']}")
    term.line("Run `sys apply` to converge again, or `sys rollback` to return to a snapshot.")
    return 0
