"""`sys diff [A B]`: what changed between two snapshots (default: previous and
current), as `syslua/execute/snapshot_diff.py` compares them."""

from __future__ import annotations

from syslua.cli.commands.common import state
from syslua.cli.machine import JSON_FORMAT
from syslua.cli.output import Terminal
from syslua.execute.snapshot_diff import compare, pair
from syslua.paths import Paths
from syslua.state.snapshots import Snapshots
from syslua.state.store import Store


def run(term: Terminal, a: str | None, b: str | None) -> int:
    paths = Paths.from_env()
    with state(paths, term, exclusive=False):
        snapshots = Snapshots(paths)
        a, b = pair(snapshots, a, b)
        sa, sb = snapshots.load(a), snapshots.load(b)
        changes = compare(sa, sb, Store(paths.store))
    if term.json_mode:
        term.json({"format": JSON_FORMAT, "from": a, "to": b, "changes": changes})
        return 0
    term.line(f"From {a} to {b}:")
    if not changes:
        term.line("  no differences")
    for c in changes:
        term.line(f"  {c['symbol']} {c['label']}: {c['detail']}")
        for ln in (c.get("diff") or "").rstrip("\n").splitlines():
            term.line("      " + ln)
    return 0
