"""`sys snapshot show|tag|delete`."""

from __future__ import annotations

import time

from syslua.cli.commands.common import state
from syslua.cli.machine import JSON_FORMAT
from syslua.cli.output import Terminal
from syslua.errors import UsageError
from syslua.paths import Paths
from syslua.state.snapshots import Snapshots


def show(term: Terminal, snapshot_id: str | None) -> int:
    paths = Paths.from_env()
    with state(paths, term, exclusive=False):
        snapshots = Snapshots(paths)
        ident = snapshots.resolve_id(snapshot_id) if snapshot_id else snapshots.current_id()
        if ident is None:
            raise UsageError("no current snapshot; give an id (see `sys history`)")
        snap = snapshots.load(ident)
        tags = snapshots.index().get("tags", {}).get(ident, [])
    if term.json_mode:
        term.json({"format": JSON_FORMAT, **snap.to_dict(), "tags": tags})
        return 0
    term.line(f"Snapshot {snap.id}{' [' + ', '.join(tags) + ']' if tags else ''}")
    term.line(f"  time:     {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(snap.time))}")
    term.line(f"  message:  {snap.message}")
    term.line(f"  kind:     {snap.kind}")
    term.line(f"  parent:   {snap.parent or '-'}")
    term.line(f"  config:   {snap.config or '-'}")
    term.line(f"  manifest: {snap.digest}")
    term.line(f"  items:    {len(snap.manifest.get('items', []))}")
    for item in snap.manifest.get("items", []):
        ident_ = f"{item['type']}#{item['key']}"
        state_ = snap.items.get(ident_, {})
        extra = f" (content {state_['blob'][:12]})" if state_.get("blob") else ""
        if ident_ in snap.originals:
            extra += " (original kept)"
        term.line(f"    {ident_}{extra}")
    if snap.inputs:
        term.line("  config files:")
        for path, blob in sorted(snap.inputs.items()):
            term.line(f"    {path} ({blob[:12]})")
    return 0


def tag(term: Terminal, snapshot_id: str, name: str) -> int:
    paths = Paths.from_env()
    with state(paths, term, exclusive=True):
        snapshots = Snapshots(paths)
        ident = snapshots.resolve_id(snapshot_id)
        snapshots.tag(ident, name)
    term.line(f"Tagged {ident} as {name}.")
    return 0


def delete(term: Terminal, snapshot_id: str) -> int:
    paths = Paths.from_env()
    with state(paths, term, exclusive=True):
        snapshots = Snapshots(paths)
        ident = snapshots.resolve_id(snapshot_id)
        snapshots.delete(ident)
    term.line(f"Deleted snapshot {ident}. Its store objects are freed by `sys gc`.")
    return 0
