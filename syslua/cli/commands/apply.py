"""`sys apply`: converge the machine to the config, atomically.

Evaluation errors exit 2 before any state is touched; then the state lock is
taken (exit 3 when held), an interrupted apply is rolled back, and the apply
runs. Exit 0 when every item converged, 1 when the apply failed (and was
rolled back), 2 when it refused to overwrite files edited by hand since the
last apply (without `--force`; nothing was changed).
"""

from __future__ import annotations

import time
from pathlib import Path

from syslua.cli.commands.common import load_manifest, state
from syslua.cli.output import Terminal, count_paths
from syslua.cli.report import make_reporter, summary_table
from syslua.execute.apply import ApplyOptions, ApplyOutcome, Reporter, apply_manifest
from syslua.paths import Paths


def run(
    term: Terminal,
    config: Path | None,
    *,
    noop: bool,
    health_check_only: bool,
    jobs: int | None,
    facts: list[str],
    impure: bool,
    max_depth: int,
    message: str | None,
    wait: bool,
    force: bool = False,
) -> int:
    started = time.monotonic()
    paths = Paths.from_env()
    manifest = load_manifest(
        term,
        config,
        facts=facts,
        impure=impure,
        max_depth=max_depth,
        paths=paths,
        noop=noop,
        health_check_only=health_check_only,
    )
    for kind, text in manifest.messages:
        if kind == "pre_message":
            term.line(text)
    options = ApplyOptions(
        noop=noop,
        health_check_only=health_check_only,
        jobs=jobs,
        message=message,
        keep_edits=force,
    )
    read_only = noop or health_check_only
    term.log("Building execution plan...")
    reporter = reporter_for(term, options)
    with state(paths, term, exclusive=not read_only, wait=wait):
        try:
            outcome = apply_manifest(manifest, paths, options, reporter, config=manifest.config)
        finally:
            reporter.close()
    for kind, text in manifest.messages:
        if kind == "post_message" and outcome.ok:
            term.line(text)
    return report(term, outcome, time.monotonic() - started, noop=noop, hc=health_check_only)


def reporter_for(term: Terminal, options: ApplyOptions) -> Reporter:
    """The reporter for this terminal, wired into the options: download
    progress, and command output (logoutput = true, or every command with -v)."""
    reporter = make_reporter(term)
    options.verbose = term.verbosity > 0
    options.progress = getattr(reporter, "download", None)
    if not term.json_mode and term.verbosity >= 0:
        options.on_output = reporter.output
    return reporter


def report(
    term: Terminal,
    outcome: ApplyOutcome,
    duration: float,
    *,
    noop: bool = False,
    hc: bool = False,
    verb: str = "Apply",
) -> int:
    if outcome.refused:
        return refuse(term, outcome, duration)
    counts = outcome.counts()
    if term.json_mode:
        term.json_event(
            {
                "event": "summary",
                "result": "ok" if outcome.ok else "failed",
                "counts": counts,
                "duration": round(duration, 3),
                "snapshot": outcome.snapshot_id,
                "no_changes": outcome.no_changes,
                "rolled_back": outcome.rolled_back,
                "restore_failed": outcome.restore_failed,
                "failures": [{"id": r.id, "message": r.message} for r in outcome.failures],
                "kept_edits": outcome.kept_edits,
            }
        )
        return 0 if outcome.ok else 1
    if outcome.no_changes:
        term.line("No changes. The machine matches the configuration.")
        return 0
    term.line()
    summary_table(term, counts, duration)
    if outcome.ok:
        if hc:
            term.line("Health checks passed." if counts.get("failed", 0) == 0 else "")
        elif noop:
            term.line(f"Noop: {counts.get('noop', 0)} item(s) would change; nothing was changed.")
        else:
            term.line(f"{verb} complete: snapshot {outcome.snapshot_id}.")
            if outcome.kept_edits:
                n = len(outcome.kept)
                term.line(
                    f"Kept {count_paths(n)} edited since the last apply in snapshot {outcome.kept_edits}: "
                    f"`sys rollback` brings {'it' if n == 1 else 'them'} back."
                )
            if outcome.env_line:
                term.line(
                    "Add this line to your shell's rc file to use your environment and tools:"
                )
                term.line(f"  {outcome.env_line}")
        return 0
    if hc or noop:
        for r in outcome.failures:
            term.line(f"  {r.type} {r.label}: {r.message}", "red", always=True)
        term.line(
            "Health checks failed." if hc else "Some items cannot be applied (see above).",
            "bold red",
            always=True,
        )
        return 1
    undo = outcome.undo
    if undo is not None:
        for note in undo.not_undone:
            term.line(f"  - {note}", "yellow")
        for note in undo.left:
            term.line(f"  - {note}", "yellow")
    if outcome.restore_failed and undo is not None:
        term.line(f"{verb} failed, and rolling back failed too:", "bold red", always=True)
        for f in undo.failed:
            term.line(f"  - {f}", "red", always=True)
        term.line(
            "The current snapshot pointer was cleared; the next `sys apply` will converge everything.",
            always=True,
        )
    else:
        term.line(f"{verb} failed. System unchanged.", "bold red", always=True)
    manifest = outcome.plan.manifest if outcome.plan else None
    for r in outcome.failures:
        lines = r.message.splitlines()
        where = manifest.source_of(r.id) if manifest is not None else ""
        term.line(
            f"  {r.type} {r.label} failed: {lines[0]}"
            + (f" (declared at {where})" if where else ""),
            "red",
            always=True,
        )
        for ln in lines[1:]:
            term.line(f"  {ln}", always=True)
    term.line("Run 'sys plan' to review the execution plan.", always=True)
    return 1


REFUSED = 2


def refuse(term: Terminal, outcome: ApplyOutcome, duration: float) -> int:
    """An apply that would overwrite edits made by hand: it changed nothing."""
    labels = [e.label for e in outcome.refused]
    if term.json_mode:
        term.json_event(
            {
                "event": "summary",
                "result": "refused",
                "counts": outcome.counts(),
                "duration": round(duration, 3),
                "snapshot": None,
                "no_changes": False,
                "rolled_back": False,
                "restore_failed": False,
                "failures": [],
                "edited": [
                    {"id": e.id, "label": e.label, "edited": e.edited} for e in outcome.refused
                ],
            }
        )
        return REFUSED
    term.line(
        f"Refusing to overwrite {count_paths(len(labels))} edited since the last apply:",
        "bold red",
        always=True,
    )
    for entry in outcome.refused:
        term.line(f"  {entry.label}", always=True)
    term.line(
        "Keep the edits with 'sys add PATH', or overwrite them with 'sys apply --force'.",
        always=True,
    )
    return REFUSED
