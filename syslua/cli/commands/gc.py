"""`sys gc [--keep N] [--dry-run]`: drop old snapshots, then store objects nothing refers to.

Kept: the current snapshot, tagged snapshots, and the N newest others. Then
every blob and tree no kept snapshot (nor the live profile) refers to is
removed from the store (`syslua/execute/gc.py`). Ctrl-C or SIGTERM before
it starts removing ends it with nothing removed; during it, it finishes,
then ends (exit 130).
"""

from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import JsonOpt, NoColorOpt, QuietOpt, WaitOpt, dry_run_option

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.execute.gc import Collected


def command(
    keep: Annotated[
        int,
        typer.Option(
            "--keep", min=0, help="Snapshots to keep besides the current and tagged ones."
        ),
    ] = 10,
    noop: Annotated[bool, dry_run_option("Only show what would be removed.")] = False,
    json_: JsonOpt = False,
    wait: WaitOpt = False,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Drop old snapshots, then store objects nothing refers to.

    \b
    Examples:
      sys gc --dry-run
      sys gc --keep 3
    """
    raise typer.Exit(run(terminal(json_, 0, quiet, no_color), keep=keep, dry_run=noop, wait=wait))


def run(term: "Terminal", *, keep: int, dry_run: bool, wait: bool) -> int:
    from syslua.cli import signals
    from syslua.cli.commands.common import state
    from syslua.cli.machine import JSON_FORMAT
    from syslua.execute.gc import collect
    from syslua.paths import Paths

    paths = Paths.from_env()
    # Ctrl-C once it holds the lock waits for the end of the collection
    with state(paths, term, exclusive=not dry_run, wait=wait), signals.current().critical():
        done = collect(paths, keep=keep, dry_run=dry_run)
    if term.json_mode:
        term.json(
            {
                "format": JSON_FORMAT,
                "snapshots_removed": done.snapshots,
                "objects_removed": len(done.blobs),
                "trees_removed": done.trees,
                "bytes_freed": done.bytes_freed,
                "secrets_removed": len(done.secrets),
                "dry_run": dry_run,
            }
        )
        return signals.stopped_after(0)
    _show(term, done, dry_run)
    return signals.stopped_after(0)


def _show(term: "Terminal", done: "Collected", dry_run: bool) -> None:
    verb = "Would remove" if dry_run else "Removed"
    term.line(
        f"{verb} {len(done.snapshots)} snapshot(s), {len(done.blobs)} store object(s) "
        f"({done.bytes_freed} bytes) and {len(done.trees)} store tree(s) (packages and builds)."
    )
    for ident in done.snapshots:
        term.line(f"  - snapshot {ident}")
    if done.corrupt:
        term.line(
            f"  - {len(done.corrupt)} corrupt store object(s) (they did not match their hash): "
            + ", ".join(b[:12] for b in done.corrupt)
        )
    for t in done.trees:
        term.line(f"  - tree {t}")
    if done.secrets:
        term.line(f"  - {len(done.secrets)} sealed secret value(s) no kept snapshot uses")
