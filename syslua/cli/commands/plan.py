"""`sys plan`: evaluate, merge, and compare with the machine; never changes anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from syslua.cli.commands.common import load_manifest, show_skipped, state
from syslua.cli.machine import JSON_FORMAT
from syslua.cli.output import Terminal, count_paths
from syslua.paths import Paths
from syslua.plan.inputs import PlanInputs
from syslua.resources.process import Runner

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
        inputs = PlanInputs(paths, manifest)
        originals = inputs.known_originals()
    for note in inputs.warnings:
        term.warn(note)
    term.log("Building execution plan...")
    ctx = inputs.context(Runner(), originals=originals)
    plan = inputs.plan(ctx, with_diff=diff or term.json_mode)
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
