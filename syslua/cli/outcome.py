"""How an apply, a rollback or a destroy ends on the terminal: the summary
and the verdict, and the exit code they go with.

`report` ends with the verdict: "System unchanged." only when that is true;
otherwise it names what the rollback left (commands that cannot be undone,
paths left in place). Its table counts what a rollback undid as `rolled
back`, never as `changed`. After a successful apply (or rollback) of a
config that declares something the shell needs, it prints the line that
loads the env scripts while neither the rc file of `$SHELL` nor the source
it is managed from has it. `refuse` reports an apply that would have overwritten edits made
by hand, `cannot_apply` one whose plan marks items `!` (both refused before
anything ran, and ending with the commands that go on); `interrupted_early` a run that Ctrl-C stopped before anything
changed, `late` one it reached after every item had finished.
"""

from __future__ import annotations

from typing import Any

from syslua.cli.again import again, keep_edits, overwrite_edits
from syslua.cli.machine import JSON_FORMAT, refused_summary
from syslua.cli.output import Terminal, count_paths
from syslua.cli.report import make_reporter, summary_table
from syslua.execute.apply import ApplyOptions, ApplyOutcome, Reporter
from syslua.execute.item import CHANGED
from syslua.execute.outcome import CANNOT_APPLY, EDITED_PATHS
from syslua.paths import Paths
from syslua.plan.planner import Entry
from syslua.plan.words import NO_CHANGES

FAILED = 1
REFUSED = 2
INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C


def reporter_for(term: Terminal, options: ApplyOptions) -> Reporter:
    """The reporter for this terminal, wired into the options: download
    progress, and command output (logoutput = true, or every command with -v)."""
    reporter = make_reporter(term)
    options.verbose = term.verbosity > 0
    options.progress = getattr(reporter, "download", None)
    options.on_activity = getattr(reporter, "activity", None)
    if not term.json_mode and term.verbosity >= 0:
        options.on_output = reporter.output
    return reporter


def late(term: Terminal, outcome: ApplyOutcome, options: ApplyOptions) -> None:
    """Ctrl-C after every item had finished: the run was recorded, not undone."""
    if outcome.ok and options.stop.requested and not (options.noop or options.health_check_only):
        term.line(
            "Interrupted after every item had finished: the result was recorded, not undone.",
            "yellow",
            always=True,
        )


def interrupted_early(term: Terminal, verb: str = "Apply") -> int:
    """Ctrl-C or SIGTERM before anything changed (evaluating, waiting for the
    lock, planning): the command ends at once, and says so."""
    if term.json_mode:
        term.json_event(
            {
                "event": "summary",
                "format": JSON_FORMAT,
                "result": "interrupted",
                "rolled_back": False,
                "not_undone": [],
            }
        )
    term.line(f"{verb} interrupted. System unchanged.", "bold red", always=True)
    return INTERRUPTED


def report(
    term: Terminal,
    outcome: ApplyOutcome,
    duration: float,
    *,
    noop: bool = False,
    hc: bool = False,
    verb: str = "Apply",
    config: str | None = None,
) -> int:
    """The end of the run, in order: the summary (a JSON event, or the table),
    what succeeded or failed, and the verdict, then, after a failure, the
    command to run once it is fixed; returns the exit code. `config`: the
    CONFIG the command was given, for the commands it suggests."""
    if outcome.cannot_apply:
        return cannot_apply(term, outcome, duration, config)
    if outcome.refused:
        return refuse(term, outcome, duration, verb, config)
    counts = outcome.counts()
    failed_code = INTERRUPTED if outcome.interrupted else FAILED
    if term.json_mode:
        term.json_event(_summary(outcome, counts, duration))
        return 0 if outcome.ok else failed_code
    if outcome.no_changes:
        term.line(NO_CHANGES)
        if not (noop or hc):
            _rc_advice(term, outcome, verb)
        return 0
    term.line()
    summary_table(term, counts if outcome.ok else undone_counts(outcome), duration)
    if outcome.ok:
        _succeeded(term, outcome, counts, noop=noop, hc=hc, verb=verb)
        return 0
    if hc or noop:
        _cannot_apply(term, outcome, hc)
        return FAILED
    _failures(term, outcome)
    if not outcome.interrupted:
        # The next step, just before the verdict: SPEC section 6 keeps the
        # verdict (and what it did not undo) the last lines.
        term.line(_fix_then(outcome, verb, config), always=True)
    _verdict(term, outcome, verb)
    return failed_code


def _fix_then(outcome: ApplyOutcome, verb: str, config: str | None) -> str:
    """The next step of a failed run, printed just before its verdict: the
    same command, to run again once what failed is fixed."""
    name = {"Apply": "apply", "Rollback": "rollback", "Destroy": "destroy"}.get(verb, "apply")
    what = "what failed" if outcome.failures or outcome.error else "the cause"
    return f"Fix {what}, then run again: {again(name, config)}"


def _summary(outcome: ApplyOutcome, counts: dict[str, int], duration: float) -> dict[str, Any]:
    """The summary event of `--json`."""
    return {
        "event": "summary",
        "format": JSON_FORMAT,
        "result": "ok" if outcome.ok else ("interrupted" if outcome.interrupted else "failed"),
        "counts": counts,
        "duration": round(duration, 3),
        "snapshot": outcome.snapshot_id,
        "no_changes": outcome.no_changes,
        "rolled_back": outcome.rolled_back,
        "restore_failed": outcome.restore_failed,
        "failures": [{"id": r.id, "message": r.message} for r in outcome.failures],
        "kept_edits": outcome.kept_edits,
        "held": list(outcome.held),
        "error": outcome.error,
        "not_undone": list(outcome.not_undone),
    }


def _succeeded(
    term: Terminal,
    outcome: ApplyOutcome,
    counts: dict[str, int],
    *,
    noop: bool,
    hc: bool,
    verb: str,
) -> None:
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
        if outcome.held:
            n = len(outcome.held)
            term.line(
                f"Left {count_paths(n)} edited since the last apply as {'it is' if n == 1 else 'they are'}: "
                f"{', '.join(outcome.held)} (sys add PATH keeps {'it' if n == 1 else 'them'}, "
                f"sys apply --overwrite PATH overwrites {'it' if n == 1 else 'them'})."
            )
        _rc_advice(term, outcome, verb)


def _cannot_apply(term: Terminal, outcome: ApplyOutcome, hc: bool) -> None:
    """A noop or health-check run with failures: nothing was changed."""
    for r in outcome.failures:
        term.lines(f"  {r.type} {r.label}: {r.message}", "red", indent="    ", always=True)
    term.line(
        "Health checks failed." if hc else "Some items cannot be applied (see above).",
        "bold red",
        always=True,
    )


def _failures(term: Terminal, outcome: ApplyOutcome) -> None:
    """Why the run failed: its error, and each failed item with where it is declared."""
    if outcome.error:
        term.line(f"  {outcome.error}", "red", always=True)
    for r in outcome.failures:
        # Only syslua's newlines (a \r is shown, not obeyed); none at all when a
        # declared name holds one (Terminal.distrust).
        lines = [r.message] if term.one_line else r.message.split("\n")
        term.line(
            f"  {r.type} {r.label} failed: {lines[0]}{_declared(outcome, r.id)}",
            "red",
            always=True,
        )
        for ln in lines[1:]:
            term.line(f"  {ln}", always=True)


def _verdict(term: Terminal, outcome: ApplyOutcome, verb: str) -> None:
    """The last lines of a failed run: "System unchanged." only when it is."""
    what = f"{verb} interrupted" if outcome.interrupted else f"{verb} failed"
    undo = outcome.undo
    if outcome.restore_failed and undo is not None:
        term.line(f"{what}, and rolling back failed too:", "bold red", always=True)
        for f in undo.failed:
            term.line(f"  - {f}", "red", always=True)
        for note in undo.left:
            term.line(f"  - {note}", "yellow", always=True)
        _not_undone(term, outcome)
        term.line(
            "The current snapshot pointer was cleared; the next `sys apply` will converge everything.",
            always=True,
        )
        return
    left = undo.left if undo is not None else []
    kept = []
    if outcome.not_undone:
        kept.append(f"{len(outcome.not_undone)} command(s) that cannot be undone")
    if left:
        kept.append(f"{len(left)} path(s) left in place")
    if not kept:
        term.line(f"{what}. System unchanged.", "bold red", always=True)
        return
    term.line(
        f"{what}. Rolled back everything except {' and '.join(kept)}:", "bold red", always=True
    )
    _not_undone(term, outcome)
    for note in left:
        term.line(f"  - {note}", "yellow", always=True)


def _rc_advice(term: Terminal, outcome: ApplyOutcome, verb: str) -> None:
    """After an apply (or rollback) that succeeded: the line that loads the
    env scripts, while the config needs it and neither the rc file of
    `$SHELL` nor its source has it (`syslua/resources/env_line.py`)."""
    if verb not in ("Apply", "Rollback"):
        return
    from syslua.resources.env_line import rc_advice

    manifest = outcome.plan.manifest if outcome.plan is not None else None
    advice = rc_advice(Paths.from_env(), manifest, first=outcome.env_line is not None)
    if advice is not None:
        append = ", or run `sys env --append`" if advice.appendable else ""
        term.line(f"Add this line to {advice.where} for your environment and tools{append}:")
        term.line(f"  {advice.line}", whole=True)


def undone_counts(outcome: ApplyOutcome) -> dict[str, int]:
    """The counts of a run that failed: what changed was undone by the
    rollback (`rolled back`), but for the commands that cannot be undone
    (`not undone`); `changed` stays only when rolling back failed itself."""
    counts = outcome.counts()
    if outcome.ok or not outcome.rolled_back or outcome.restore_failed:
        return counts
    not_undone = set(outcome.not_undone)
    kept = sum(1 for r in outcome.results if r.status == CHANGED and r.id in not_undone)
    counts["rolled back"] = counts.pop("changed", 0) - kept
    if kept:
        counts["not undone"] = kept
    return counts


def _not_undone(term: Terminal, outcome: ApplyOutcome) -> None:
    """Each completed item whose effects the rollback could not undo."""
    by_id = {r.id: r for r in outcome.results}
    for ident in outcome.not_undone:
        r = by_id.get(ident)
        name = f"{r.type} {r.label}" if r is not None else ident
        term.line(f"  - {name}{_declared(outcome, ident)}", "yellow", always=True)


def _declared(outcome: ApplyOutcome, ident: str) -> str:
    where = _where(outcome, ident)
    return f" (declared at {where})" if where else ""


def _where(outcome: ApplyOutcome, ident: str) -> str:
    """Where item `ident` is declared (`sys.lua:12`), or "" (no longer declared)."""
    manifest = outcome.plan.manifest if outcome.plan else None
    return (manifest.source_of(ident) or "") if manifest is not None else ""


def refuse(
    term: Terminal,
    outcome: ApplyOutcome,
    duration: float,
    verb: str = "Apply",
    config: str | None = None,
) -> int:
    """An apply (or destroy) that would overwrite or remove edits made by hand:
    it changed nothing. It ends with both ways on, each a command that works
    as printed: keep the edits (`sys add`), or overwrite them (`--force`)."""
    labels = [e.label for e in outcome.refused]
    what = "remove" if verb == "Destroy" else "overwrite"
    error = f"Refusing to {what} {count_paths(len(labels))} edited since the last apply"
    if term.json_mode:
        term.json_event(
            refused_summary(
                EDITED_PATHS,
                error,
                counts=outcome.counts(),
                duration=round(duration, 3),
                edited=[
                    {"id": e.id, "label": e.label, "edited": e.edited} for e in outcome.refused
                ],
            )
        )
        return REFUSED
    term.line(f"{error}:", "bold red", always=True)
    for entry in outcome.refused:
        term.line(f"  {entry.label}", always=True)
    name, what = ("destroy", "remove") if verb == "Destroy" else ("apply", "overwrite")
    # A destroy plans against an empty manifest: what declares the edits is not known.
    manifest = outcome.plan.manifest if outcome.plan is not None and verb != "Destroy" else None
    term.line("Nothing was changed. Either:", always=True)
    for line in keep_edits(manifest, outcome.refused, config):
        term.line(f"  {line}", always=True)
    force = again(name, config, "--force")
    term.line(f"  {overwrite_edits(len(labels), what, force)}", always=True)
    return REFUSED


def cannot_apply(
    term: Terminal, outcome: ApplyOutcome, duration: float, config: str | None = None
) -> int:
    """An apply of a plan that marks items `!` as unable to be applied: it
    refused before anything ran, listing them (and the edits it would
    overwrite) with where each is declared; exit 1, as `sys plan` exits."""
    n = len(outcome.cannot_apply)
    error = f"Refusing to apply: {n} item{'s' if n != 1 else ''} cannot be applied"
    if term.json_mode:
        term.json_event(
            refused_summary(
                CANNOT_APPLY,
                error,
                duration=round(duration, 3),
                cannot_apply=[
                    {
                        "id": e.id,
                        "label": e.label,
                        "message": e.message,
                        "declared_at": _where(outcome, e.id) or None,
                    }
                    for e in outcome.cannot_apply
                ],
                edited=[
                    {"id": e.id, "label": e.label, "edited": e.edited} for e in outcome.refused
                ],
            )
        )
        return FAILED
    term.line(f"{error} (marked ! by `sys plan`):", "bold red", always=True)
    _entries(term, outcome, outcome.cannot_apply)
    if outcome.refused:
        edited = count_paths(len(outcome.refused))
        term.line(f"and {edited} edited since the last apply would be overwritten:", always=True)
        _entries(term, outcome, outcome.refused)
    term.line("Nothing was changed.", always=True)
    fix = "what is marked !" if not outcome.refused else "the items that cannot be applied"
    term.line(f"Fix {fix}, then run again: {again('apply', config)}", always=True)
    return FAILED


def _entries(term: Terminal, outcome: ApplyOutcome, entries: list[Entry]) -> None:
    """One line per plan entry, with where it is declared."""
    for e in entries:
        term.lines(
            f"  {e.type} {e.label}: {e.message}{_declared(outcome, e.id)}",
            "red",
            indent="    ",
            always=True,
        )
