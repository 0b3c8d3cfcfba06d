"""`sys destroy [--dry-run]`: remove everything syslua manages and restore every original.

It is an apply of an empty manifest through the normal removal path: every
item of the current snapshot is removed as if its declaration had been
deleted (files syslua created go, originals it took over come back, execs
run their `undo`, packages leave the profile), atomically and journaled, and
the result is recorded as a snapshot of kind `destroy`, so `sys rollback`
undoes it. On a terminal it first shows what it would remove and asks
(`y` or `yes` goes ahead); `--yes` skips the question, and elsewhere (a
script, a pipe) `--yes` is required, as `terraform destroy` requires
`-auto-approve`: without it the destroy is refused, exit 2, changing
nothing. `--dry-run` never asks. A path edited by hand since the last apply
(it no longer holds what syslua wrote there) is never removed unasked: the
destroy refuses, exit 2, changing nothing; with `--force` the edits are
kept in a snapshot recorded just before, which the rollback returns to. The env scripts stay, setting nothing of the config's,
so a shell rc file that loads them keeps working. What it cannot undo (a
command run without an `undo`: its kind says so through `Irreversible`) is
named, and the last line claims no more than was done. Ctrl-C or SIGTERM
stops it as it stops `sys apply`: what it removed is put back, and it ends
with `Destroy interrupted. System unchanged.`, exit 130.
"""

import sys
import time
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import (
    JobsOpt,
    JsonOpt,
    NoColorOpt,
    QuietOpt,
    VerboseOpt,
    WaitOpt,
    dry_run_option,
)

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.paths import Paths
    from syslua.state.snapshots import Snapshot


def command(
    dry_run: Annotated[
        bool, dry_run_option("Only show what would be removed and restored.")
    ] = False,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            "-y",
            help="Do not ask for confirmation (required when not on a terminal).",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Remove paths edited by hand since the last apply too; the edits are kept "
            "in a snapshot that `sys rollback` returns to.",
        ),
    ] = False,
    json_: JsonOpt = False,
    jobs: JobsOpt = None,
    wait: WaitOpt = False,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Remove everything syslua manages and restore every original (`sys rollback` undoes it).

    \b
    Examples:
      sys destroy --dry-run
      sys destroy                         # shows what goes, then asks
      sys destroy --yes                   # in a script: no question
    """
    term = terminal(json_, verbose, quiet, no_color)
    raise typer.Exit(run(term, dry_run=dry_run, jobs=jobs, wait=wait, force=force, yes=yes))


def _asking(yes: bool, dry_run: bool) -> bool:
    """Whether to ask before destroying: on a terminal, unless `--yes` or a
    dry run. Not on a terminal, `--yes` is required: refused, nothing read or
    changed."""
    from syslua.errors import UsageError

    if yes or dry_run:
        return False
    if sys.stdin is not None and sys.stdin.isatty():
        return True
    raise UsageError(
        "sys destroy removes everything syslua manages, and stdin is not a terminal to "
        "confirm it on: pass --yes to go ahead (`sys destroy --yes`), or see what it would "
        "remove with `sys destroy --dry-run`"
    )


def _confirmed(term: "Terminal", paths: "Paths", current: "Snapshot") -> bool:
    """Show what the destroy would remove, then ask; `y` or `yes` goes ahead."""
    from syslua.plan.inputs import removal_plan

    plan = removal_plan(paths, current, with_diff=False)
    term.line(f"sys destroy will remove everything snapshot {current.id} manages:")
    term.plan(plan)
    for _, label, why in not_undone(current):
        term.line(f"Will not be undone ({why}): {label}")
    sys.stdout.flush()
    sys.stderr.write("Destroy everything syslua manages? `sys rollback` undoes it. [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def run(
    term: "Terminal",
    *,
    dry_run: bool,
    jobs: int | None,
    wait: bool,
    force: bool = False,
    yes: bool = False,
) -> int:
    from syslua.cli import signals
    from syslua.cli.commands.common import state
    from syslua.cli.outcome import interrupted_early, late, report, reporter_for
    from syslua.errors import Interrupted, UsageError
    from syslua.execute.apply import ApplyOptions, apply_manifest
    from syslua.manifest.model import Manifest
    from syslua.paths import Paths
    from syslua.state.snapshots import Snapshots

    started = time.monotonic()
    ask = _asking(yes, dry_run)
    paths = Paths.from_env()
    try:
        with state(paths, term, exclusive=not dry_run, wait=wait):
            snapshots = Snapshots(paths)
            current, warning = snapshots.usable_current()
            for note in (snapshots.rebuilt, warning):
                if note:
                    term.warn(note)
            if current is None:
                if snapshots.index()["order"]:
                    raise UsageError(
                        "there is no current snapshot, so what syslua manages is not known; "
                        "make one current with `sys rollback ID` (see `sys history`), then destroy"
                    )
                term.line("Nothing to destroy: nothing has been applied yet.")
                return 0
            if not current.manifest.get("items"):
                term.line(f"Nothing to destroy: snapshot {current.id} manages nothing.")
                return 0
            if dry_run:
                return _dry_run(term, paths, current)
            if ask and not _confirmed(term, paths, current):
                term.line("Destroy cancelled: nothing was changed.")
                return CANCELLED
            term.log("Removing everything syslua manages...")
            # Ctrl-C and SIGTERM stop it as they stop `sys apply`: what it
            # removed comes back, and it ends with `Destroy interrupted. ...`.
            options = ApplyOptions(
                jobs=jobs, kind="destroy", keep_edits=force, stop=signals.current()
            )
            reporter = reporter_for(term, options)
            try:
                outcome = apply_manifest(Manifest(items=()), paths, options, reporter)
            finally:
                reporter.close()
    except Interrupted:
        return interrupted_early(term, "Destroy")
    late(term, outcome, options)
    lasting = not_undone(current)
    if outcome.ok:
        # --json: the summary's `not_undone`, as for a rollback that left commands done
        outcome.not_undone = [ident for ident, _, _ in lasting]
    code = report(term, outcome, time.monotonic() - started, verb="Destroy")
    if outcome.ok:
        for _, label, why in lasting:
            term.line(f"Not undone ({why}): {label}")
        everything = "Everything else" if lasting else "Everything"
        term.line(
            f"{everything} syslua managed is removed and the originals it took over are "
            "restored; `sys rollback` undoes this."
        )
    return code


CANCELLED = 2  # the question answered no: a refusal, nothing changed


def not_undone(current: "Snapshot") -> list[tuple[str, str, str]]:
    """The items of `current` whose effects removing them leaves in place:
    those whose kind says running them cannot be undone (`Irreversible`; an
    exec without `undo`). (id, `exec setup`, why), in the snapshot's order."""
    from syslua.resources import capability
    from syslua.resources import get as get_type
    from syslua.resources.base import RUN, Decision
    from syslua.resources.kind import Irreversible

    out = []
    ran = Decision(RUN, "")
    for item in current.load_manifest():
        if item.noop or item.health_check_only:
            continue  # it never ran for real
        kind = get_type(item.type)
        irreversible = capability(kind, Irreversible)
        why = irreversible.irreversible(item, ran) if irreversible is not None else False
        if why:
            reason = why if isinstance(why, str) else "no undo command"
            out.append((item.id, f"{item.type} {kind.label(item)}", reason))
    return out


def _dry_run(term: "Terminal", paths: "Paths", current: "Snapshot") -> int:
    """What destroying would do, from a plan of the empty manifest; nothing changes."""
    from syslua.cli.machine import JSON_FORMAT
    from syslua.cli.output import count_paths
    from syslua.plan.inputs import removal_plan

    plan = removal_plan(paths, current, with_diff=term.json_mode)
    if term.json_mode:
        term.json(
            {"format": JSON_FORMAT, "snapshot": current.id, "dry_run": True, "plan": plan.to_dict()}
        )
        return 0
    term.line(f"sys destroy would remove everything snapshot {current.id} manages:")
    term.plan(plan)
    if plan.edited:
        term.line(
            f"Note: {count_paths(len(plan.edited))} edited since the last apply: `sys destroy` "
            "refuses to remove them; `sys destroy --force` keeps them in a snapshot first, "
            "and `sys rollback` after it brings the edits back."
        )
    for _, label, why in not_undone(current):
        term.line(f"Would not be undone ({why}): {label}")
    term.line("Dry run: nothing was changed.")
    return 0
