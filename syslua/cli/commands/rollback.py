"""`sys rollback [ID]`: converge to an earlier snapshot, atomically, and record it.

Ctrl-C or SIGTERM stops it as it stops `sys apply`: what it changed is
undone, and it ends with `Rollback interrupted. System unchanged.`, exit 130.
"""

import time
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import (
    JobsOpt,
    JsonOpt,
    MaxUnpackOpt,
    NoColorOpt,
    NoopOpt,
    QuietOpt,
    VerboseOpt,
    WaitOpt,
    complete_snapshot,
)

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.state.snapshots import Snapshots


def command(
    snapshot_id: Annotated[
        str | None,
        typer.Argument(
            metavar="ID",
            help="Snapshot to return to (default: the previous one).",
            autocompletion=complete_snapshot,
        ),
    ] = None,
    noop: NoopOpt = False,
    json_: JsonOpt = False,
    jobs: JobsOpt = None,
    wait: WaitOpt = False,
    max_unpack: MaxUnpackOpt = "4GiB",
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Return the machine to an earlier snapshot.

    \b
    Examples:
      sys rollback                        # to the snapshot before the current one
      sys rollback 20261126-001820-5869
      sys rollback good                   # a tagged snapshot
    """
    term = terminal(json_, verbose, quiet, no_color)
    raise typer.Exit(run(term, snapshot_id, noop=noop, jobs=jobs, wait=wait, max_unpack=max_unpack))


def run(
    term: "Terminal",
    snapshot_id: str | None,
    *,
    noop: bool,
    jobs: int | None,
    wait: bool,
    max_unpack: str = "4GiB",
) -> int:
    from syslua.cli import signals
    from syslua.cli.commands.common import parse_size, state
    from syslua.cli.outcome import interrupted_early, late, report, reporter_for
    from syslua.errors import Interrupted
    from syslua.execute import rollback_target
    from syslua.execute.apply import ApplyOptions, apply_manifest
    from syslua.execute.item import CHANGED
    from syslua.execute.materialise import materialise
    from syslua.paths import Paths
    from syslua.state.snapshots import Snapshots
    from syslua.state.store import Store

    started = time.monotonic()
    unpack_limit = parse_size(max_unpack, "--max-unpack")
    paths = Paths.from_env()
    after: list[str] = []
    try:
        with state(paths, term, exclusive=not noop, wait=wait):
            snapshots = Snapshots(paths)
            target_id = snapshots.rollback_target(snapshot_id)
            current_id = snapshots.index().get("current")
            before = snapshots.load(current_id) if current_id else None
            store = Store(paths.store)
            # Undoing a `sys add` puts its source files back (the home keeps what was added).
            returned, also, notes = rollback_target.returning(
                snapshots.load(target_id), before, store
            )
            manifest = materialise(returned, store)
            term.log(f"Rolling back to snapshot {target_id} ({returned.message})...")
            for note in notes:
                term.warn(note)
            # Edits made by hand since the last apply are kept in a snapshot first
            # (the one a second `sys rollback` returns to), not refused.
            options = ApplyOptions(
                noop=noop,
                jobs=jobs,
                kind="rollback",
                message=f"rollback to {_named(snapshots, target_id)}",
                keep_edits=True,
                max_unpack=unpack_limit,
                stop=signals.current(),
            )
            reporter = reporter_for(term, options)
            try:
                outcome = apply_manifest(
                    manifest,
                    paths,
                    options,
                    reporter,
                    config=returned.config,
                    snapshot_manifest=returned.load_manifest(),
                    inputs=returned.inputs,
                    target=also,
                    current=before,
                )
            finally:
                reporter.close()
            if outcome.ok and outcome.snapshot_id and not (noop or outcome.no_changes):
                changed = [r.id for r in outcome.results if r.status == CHANGED]
                ran = rollback_target.Ran(manifest, returned.items, store)
                after = rollback_target.after(paths, before, [*changed, *also.kept], ran)
    except Interrupted:
        return interrupted_early(term, "Rollback")
    late(term, outcome, options)
    code = report(term, outcome, time.monotonic() - started, noop=noop, verb="Rollback")
    for line in after:
        term.line(line)
    return code


def _named(snapshots: "Snapshots", ident: str) -> str:
    """How a rollback's message names the snapshot it returned to: `#12`."""
    number = snapshots.generations().get(ident)
    return f"#{number}" if number is not None else ident
