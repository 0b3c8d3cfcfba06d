"""`sys diff [A [B]]`: without arguments, the changes the config would make,
as a diff (what `sys plan --diff` shows: `cli/commands/plan.py`); with
snapshots, what changed between them (A and the current one, or A and B),
as `syslua/execute/snapshot_diff.py` compares them."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import FactOpt, JsonOpt, NoColorOpt, NoPagerOpt, complete_snapshot

if TYPE_CHECKING:
    from syslua.cli.output import Terminal


def command(
    a: Annotated[
        str | None,
        typer.Argument(
            metavar="A",
            help="Snapshot id; without it, the config's pending changes are shown.",
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
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="Without snapshots: the config whose changes to show (default: as for sys plan).",
        ),
    ] = None,
    fact: FactOpt = None,
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
    no_pager: NoPagerOpt = False,
) -> None:
    """Show the changes the config would make as a diff, or compare two snapshots.

    \b
    Without arguments: what `sys plan --diff` shows, the config's pending
    changes with the diff of each file. With A: snapshot A compared with the
    current one; with A and B: A with B.

    \b
    Examples:
      sys diff                            # what sys apply would change
      sys diff 20261126-001820-5869       # that snapshot against the current one
      sys diff 20261126-001820-5869 good
    """
    from syslua.cli.pager import paging

    term = terminal(json_, 0, False, no_color)
    if a is None and b is None:
        with paging(term, not no_pager):
            code = pending(term, config, facts=fact or [])
        raise typer.Exit(code)
    if config is not None:
        from syslua.errors import UsageError

        raise UsageError("--config goes without snapshots: `sys diff --config PATH`")
    with paging(term, not no_pager):
        code = run(term, a, b)
    raise typer.Exit(code)


def pending(term: "Terminal", config: Path | None, *, facts: list[str]) -> int:
    """The config's pending changes with their diffs: `sys plan --diff`. It
    shows; it does not judge: items marked `!` are shown as the plan shows
    them (and said on its last line), but exit 0, as `git diff` does."""
    from syslua.cli.commands import plan

    code = plan.run(
        term, config, diff=True, exit_code=False, facts=facts, impure=False, max_depth=10
    )
    return 0 if code == plan.CANNOT_APPLY else code


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
