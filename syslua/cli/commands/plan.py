"""`sys plan`: evaluate, merge, and compare with the machine; never changes anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from syslua.cli.commands.common import load_manifest, show_skipped, state
from syslua.cli.machine import JSON_FORMAT
from syslua.cli.output import Terminal, count_paths
from syslua.paths import Paths
from syslua.plan.planner import make_plan
from syslua.resources.base import Context
from syslua.resources.placeholders import Resolver
from syslua.resources.process import Runner
from syslua.state.originals import known as known_originals
from syslua.state.snapshots import Snapshots
from syslua.state.store import Store

PENDING = 4


def run(
    term: Terminal,
    config: Path | None,
    *,
    diff: bool,
    exit_code: bool,
    facts: list[str],
    impure: bool,
    max_depth: int,
    eval_timeout: float | None = None,
) -> int:
    paths = Paths.from_env()
    manifest = load_manifest(
        term,
        config,
        facts=facts,
        impure=impure,
        max_depth=max_depth,
        paths=paths,
        eval_timeout=eval_timeout,
    )
    with state(paths, term, exclusive=False):
        snapshots = Snapshots(paths)
        current, warning = snapshots.usable_current(like=manifest)
        originals = known_originals(paths.state, current.originals if current else None)
    notes = [n for n in (snapshots.rebuilt, warning) if n]
    previous = current.load_manifest() if current else None
    for note in notes:
        term.warn(note)
    term.log("Building execution plan...")
    store = Store(paths.store)
    ctx = Context(
        runner=Runner(),
        noop=True,
        store=store,
        paths=paths,
        previous=previous,
        # A corrupt current snapshot's stand-in did not leave the machine as it
        # is: what differs from it is not an edit.
        last_applied=current.item_states() if current and not warning else None,
        resolver=Resolver(manifest, store, paths.state),
        originals=originals,
    )
    known = None
    if previous is None:
        baseline = Snapshots(paths).latest_readable()
        known = baseline.load_manifest() if baseline is not None else None
    plan = make_plan(
        manifest,
        ctx,
        previous,
        with_diff=diff or term.json_mode,
        known=known,
        order=current.order if current is not None and not warning else None,
    )
    if term.json_mode:
        out: dict[str, Any] = {
            "format": JSON_FORMAT,
            "manifest": {**manifest.to_dict(), "digest": manifest.digest},
            "plan": plan.to_dict(),
            "waves": plan.waves,
        }
        if manifest.skipped:
            out["skipped_by_control"] = [
                {"subject": subject, "reason": reason, "declared_at": where}
                for subject, reason, where in manifest.skipped
            ]
        term.json(out)
    else:
        term.line()
        term.plan(plan, show_diff=diff)
        if manifest.skipped:
            # Not items: a CCM resource whose `control` says no is not managed at all.
            term.line()
            show_skipped(term, manifest)
    if plan.failures and not term.json_mode:
        # Not an error of the plan itself: an earlier item of the same apply
        # (a user, a directory) may still make these possible.
        term.line(
            f"Note: {len(plan.failures)} item(s) marked ! cannot be applied as the machine is now.",
            "bold red",
            always=True,
        )
    edited = plan.edited
    if edited and not term.json_mode:
        term.line(
            f"Note: {count_paths(len(edited))} edited since the last apply would be overwritten. "
            "Keep the edits with 'sys add PATH', or overwrite them with 'sys apply --force'.",
            "bold red",
            always=True,
        )
    if exit_code and plan.has_changes:
        return PENDING
    return 0
