"""`sys status`: what drifted from the current snapshot (edited, deleted, mode changed),
and whether the store still holds what the snapshot refers to."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from syslua.cli import terminal
from syslua.cli.options import JsonOpt, NoColorOpt, NoPagerOpt, VerboseOpt

if TYPE_CHECKING:
    from syslua.cli.output import Terminal

MARK = {
    "deleted": "D",
    "edited": "M",
    "mode": "~",
    "changed": "~",
    "recreated": "+",
    "error": "!",
    "dangling": "!",
    "loop": "!",
}


DRIFT = 4  # `--exit-code`, as `sys plan --exit-code` exits when changes are pending
BROKEN = 1  # the store lacks what the current snapshot refers to


def command(
    json_: JsonOpt = False,
    exit_code: Annotated[
        bool, typer.Option("--exit-code", help="Exit with 4 when something drifted.")
    ] = False,
    no_color: NoColorOpt = False,
    verbose: VerboseOpt = 0,
    no_pager: NoPagerOpt = False,
) -> None:
    """Show what drifted from the current snapshot (edited, deleted, mode changed).

    \b
    Examples:
      sys status
      sys status -v
      sys status --exit-code || echo "the machine drifted"
    """
    from syslua.cli.pager import paging

    term = terminal(json_, verbose, False, no_color)
    with paging(term, verbose > 0 and not no_pager):  # -v: the details, through a pager
        code = run(term, exit_code=exit_code)
    raise typer.Exit(code)


def run(term: "Terminal", *, exit_code: bool = False) -> int:
    """Exit code: 1 when the store is not whole; else, with `exit_code`, 4 when
    something drifted (or a failed rollback left paths it could not put back)."""
    from syslua.cli.commands.common import state
    from syslua.cli.machine import JSON_FORMAT
    from syslua.execute.drift import describe_unrestored, drift, store_check
    from syslua.paths import Paths
    from syslua.state.originals import load_unrestored
    from syslua.state.store import Store

    paths = Paths.from_env()
    notes: list[str] = []
    with state(paths, term, exclusive=False):
        snap_id, items = drift(paths, notes)
        unrestored = load_unrestored(paths.state)
        store = store_check(paths)
    for note in notes:
        term.warn(note)
    kept = [describe_unrestored(r, Store(paths.store)) for r in unrestored]
    if term.json_mode:
        term.json(
            {
                "format": JSON_FORMAT,
                "snapshot": snap_id,
                "drift": [{k: v for k, v in d.items() if k != "label"} for d in items],
                "unrestored": kept,
                "store": store,
            }
        )
        return _code(store, bool(items or kept), exit_code)
    _show(term, snap_id, items, kept, store)
    if snap_id is None:
        return _code(None, bool(kept), exit_code)
    return _code(store, bool(items or kept), exit_code)


def _show(
    term: "Terminal",
    snap_id: str | None,
    items: list[dict[str, str]],
    kept: list[dict[str, str]],
    store: dict[str, Any] | None,
) -> None:
    """In order: paths a failed rollback left, what the store lacks, the drift."""
    from syslua.paths import abbreviate

    if kept:
        term.line("A failed rollback could not put these paths back:")
        for k in kept:
            term.line(f"  ! {abbreviate(k['path'])}: {k['before']}")
        term.line("Fix what stopped it (the reason is on each line), then run `sys apply`.")
        term.line()
    if snap_id is None:
        term.line("No current snapshot: nothing to compare with (run `sys apply`).")
        return
    if store is not None:
        _store_lines(term, snap_id, store)
    if not items:
        if store is None:
            term.line(f"No drift: the machine matches snapshot {snap_id}.")
        else:
            term.line(
                f"The managed paths match snapshot {snap_id}; its store is not whole (above)."
            )
        return
    term.line(f"Drift from snapshot {snap_id}:")
    for d in items:
        term.line(f"  {MARK[d['kind']]} {d['label']}: {d['detail']}")
    term.line("Run `sys apply` to converge again, or `sys rollback` to return to a snapshot.")


def _code(store: dict[str, Any] | None, drifted: bool, exit_code: bool) -> int:
    """Paths a failed rollback could not put back count as drift too."""
    if store:
        return BROKEN
    return DRIFT if exit_code and drifted else 0


def _store_lines(term: "Terminal", snap_id: str, store: dict[str, Any]) -> None:
    what = (
        "(file contents, originals of files syslua took over, config sources, package trees); "
        "`sys rollback` and putting originals back need them."
    )
    if not store["exists"]:
        term.line(f"The store is missing: {store['path']} does not exist.", "bold red", always=True)
        term.line(
            f"  Snapshot {snap_id} refers to {store['objects']} object(s) and {store['trees']} "
            f"tree(s) that were kept there {what}",
            always=True,
        )
        return
    term.line(
        f"The store is incomplete: {store['missing_objects']} of {store['objects']} object(s) "
        f"and {store['missing_trees']} of {store['trees']} tree(s) that snapshot {snap_id} "
        f"refers to are missing from {store['path']}.",
        "bold red",
        always=True,
    )
    term.line(f"  They were kept there {what}", always=True)
