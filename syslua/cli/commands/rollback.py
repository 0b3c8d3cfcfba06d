"""`sys rollback [ID]`: converge to an earlier snapshot, atomically, and record it."""

from __future__ import annotations

import time

from syslua.cli.commands.apply import report, reporter_for
from syslua.cli.commands.common import state
from syslua.cli.output import Terminal
from syslua.errors import UsageError
from syslua.execute.apply import ApplyOptions, apply_manifest
from syslua.execute.materialise import materialise
from syslua.paths import Paths
from syslua.state.snapshots import Snapshots
from syslua.state.store import Store


def run(
    term: Terminal, snapshot_id: str | None, *, noop: bool, jobs: int | None, wait: bool
) -> int:
    started = time.monotonic()
    paths = Paths.from_env()
    with state(paths, term, exclusive=not noop, wait=wait):
        snapshots = Snapshots(paths)
        target_id = _target(snapshots, snapshot_id)
        target = snapshots.load(target_id)
        manifest = materialise(target, Store(paths.store))
        term.log(f"Rolling back to snapshot {target_id} ({target.message})...")
        # Edits made by hand since the last apply are kept in a snapshot first
        # (the one a second `sys rollback` returns to), not refused.
        options = ApplyOptions(
            noop=noop,
            jobs=jobs,
            kind="rollback",
            message=f"rollback to {target_id}",
            keep_edits=True,
        )
        reporter = reporter_for(term, options)
        try:
            outcome = apply_manifest(
                manifest,
                paths,
                options,
                reporter,
                config=target.config,
                record_manifest=target.load_manifest(),
                inputs=target.inputs,
            )
        finally:
            reporter.close()
    return report(term, outcome, time.monotonic() - started, noop=noop, verb="Rollback")


def _target(snapshots: Snapshots, snapshot_id: str | None) -> str:
    if snapshot_id:
        return snapshots.resolve_id(snapshot_id)
    index = snapshots.index()
    order, current = index["order"], index.get("current")
    if not order:
        raise UsageError("there are no snapshots yet: nothing to roll back to")
    if current is None:
        return order[-1]
    pos = order.index(current) if current in order else len(order)
    if pos == 0:
        raise UsageError(
            f"snapshot {current} is the oldest one: there is no previous snapshot to roll back to",
            hint="To remove everything syslua manages and restore the originals it took over, "
            "run `sys destroy` (`sys destroy --dry-run` shows what it would do).",
        )
    return order[pos - 1]
