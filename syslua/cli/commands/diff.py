"""`sys diff [A B]`: what changed between two snapshots (default: previous and
current), as `syslua/execute/snapshot_diff.py` compares them."""

from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import JsonOpt, NoColorOpt, NoPagerOpt, complete_snapshot

if TYPE_CHECKING:
    from syslua.cli.output import Terminal


def command(
    a: Annotated[
        str | None,
        typer.Argument(
            metavar="A",
            help="Snapshot id (default: the previous snapshot).",
            autocompletion=complete_snapshot,
        ),
    ] = None,
    b: Annotated[
        str | None,
        typer.Argument(
            metavar="B",
            help="Snapshot id (default: the current snapshot).",
            autocompletion=complete_snapshot,
        ),
    ] = None,
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
    no_pager: NoPagerOpt = False,
) -> None:
    """Compare two snapshots.

    \b
    Examples:
      sys diff                            # the previous snapshot with the current one
      sys diff 20261126-001820-5869 good
    """
    from syslua.cli.pager import paging

    term = terminal(json_, 0, False, no_color)
    with paging(term, not no_pager):
        code = run(term, a, b)
    raise typer.Exit(code)


def run(term: "Terminal", a: str | None, b: str | None) -> int:
    from syslua.cli.commands.common import state
    from syslua.cli.machine import JSON_FORMAT
    from syslua.execute.snapshot_diff import compare, pair
    from syslua.paths import Paths
    from syslua.state.snapshots import Snapshots
    from syslua.state.store import Store

    paths = Paths.from_env()
    with state(paths, term, exclusive=False):
        snapshots = Snapshots(paths)
        a, b = pair(snapshots, a, b)
        sa, sb = snapshots.load(a), snapshots.load(b)
        changes = compare(sa, sb, Store(paths.store))
    if term.json_mode:
        term.json({"format": JSON_FORMAT, "from": a, "to": b, "changes": changes})
        return 0
    term.line(f"From {a} to {b}:")
    if not changes:
        term.line("  no differences")
    for c in changes:
        term.line(f"  {c['symbol']} {c['label']}: {c['detail']}")
        for ln in (c.get("diff") or "").rstrip("\n").splitlines():
            term.line("      " + ln)
    return 0
