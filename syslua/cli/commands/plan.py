"""`sys plan`: evaluate, merge, and compare with the machine; never changes anything."""

from __future__ import annotations

from pathlib import Path

from syslua.cli.commands.common import load_manifest
from syslua.cli.output import Terminal
from syslua.paths import Paths
from syslua.plan.planner import make_plan
from syslua.resources.base import Context
from syslua.resources.process import Runner

PENDING = 4


def run(term: Terminal, config: Path | None, *, diff: bool, exit_code: bool, facts: list[str], impure: bool,
        max_depth: int) -> int:
    paths = Paths.from_env()
    manifest = load_manifest(term, config, facts=facts, impure=impure, max_depth=max_depth, paths=paths)
    previous = _previous(paths)
    term.log("Building execution plan...")
    plan = make_plan(manifest, Context(runner=Runner(), noop=True), previous, with_diff=diff or term.json_mode)
    if term.json_mode:
        term.json({
            "manifest": {**manifest.to_dict(), "digest": manifest.digest},
            "plan": plan.to_dict(),
            "waves": plan.waves,
        })
    else:
        term.line()
        term.plan(plan, show_diff=diff)
    if exit_code and plan.has_changes:
        return PENDING
    return 0


def _previous(paths: Paths):  # type: ignore[no-untyped-def]
    """The current snapshot's manifest, once snapshots exist."""
    try:
        from syslua.state.snapshots import current_manifest
    except ImportError:
        return None
    return current_manifest(paths)
