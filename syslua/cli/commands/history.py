"""`sys history`: the snapshots, newest first, with the current one marked."""

import time
from typing import TYPE_CHECKING

import typer

from syslua.cli import terminal
from syslua.cli.options import JsonOpt, NoColorOpt, NoPagerOpt

if TYPE_CHECKING:
    from syslua.cli.output import Terminal


def command(
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
    no_pager: NoPagerOpt = False,
) -> None:
    """List snapshots, newest first.

    \b
    Examples:
      sys history
      sys history --json
    """
    from syslua.cli.pager import paging

    term = terminal(json_, 0, False, no_color)
    with paging(term, not no_pager):
        code = run(term)
    raise typer.Exit(code)


def run(term: "Terminal") -> int:
    from syslua.cli.commands.common import state
    from syslua.cli.machine import JSON_FORMAT
    from syslua.paths import Paths
    from syslua.state.snapshots import Snapshots

    paths = Paths.from_env()
    with state(paths, term, exclusive=False):
        snapshots = Snapshots(paths)
        index = snapshots.index()
        if snapshots.rebuilt:
            term.warn(snapshots.rebuilt)
        current = index.get("current")
        rows = []
        problems: list[str] = []
        everything = snapshots.all(problems)
        for problem in problems:
            term.warn(problem)
        for snap in reversed(everything):
            rows.append(
                {
                    "format": JSON_FORMAT,
                    "id": snap.id,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(snap.time)),
                    "message": snap.message,
                    "kind": snap.kind,
                    "current": snap.id == current,
                    "counts": snap.counts,
                    "tags": index.get("tags", {}).get(snap.id, []),
                    "_local": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snap.time)),
                }
            )
    if term.json_mode:
        term.json([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows])
        return 0
    if not rows:
        term.line("No snapshots yet. Run `sys apply` to record the first one.")
        return 0
    for r in rows:
        mark = "*" if r["current"] else " "
        c = r["counts"]
        # A snapshot that ran nothing (edits kept, `sys add`) has no counts.
        counts = (
            f"  ({c.get('changed', 0)} changed, {c.get('unchanged', 0)} unchanged)" if c else ""
        )
        tags = f" [{', '.join(r['tags'])}]" if r["tags"] else ""
        term.line(f"{mark} {r['id']}  {r['_local']}  {r['message']}{counts}{tags}")
    if current is None:
        term.line("(no current snapshot: the next `sys apply` converges everything)")
    return 0
