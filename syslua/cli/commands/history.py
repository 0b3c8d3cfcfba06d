"""`sys history`: the snapshots, newest first, with the current one marked.

One line per snapshot under a header: its generation number (`#12`, what
`sys rollback 12` takes), the shortest unique end of its id, its age, what
recorded it, how many items that run changed, and its message (shortened to
fit a terminal; never in a pipe).
"""

import re
import shutil
from typing import TYPE_CHECKING, Annotated, Any

import typer

from syslua.cli import terminal
from syslua.cli.options import JsonOpt, NoColorOpt, NoPagerOpt

if TYPE_CHECKING:
    from syslua.cli.output import Terminal

HEADER = ("", "#", "ID", "WHEN", "KIND", "CHANGED", "MESSAGE")
# The message syslua writes when there is no `-m` ends with the counts
# (`apply sys.lua (3 changed)`, `execute/record.py`: `default_message`),
# which the CHANGED column shows already.
_COUNTS_SUFFIX = re.compile(r"^(apply\b.*|rollback|destroy) \(\d+ (changed|removed)\)$")


def command(
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, metavar="N", help="Show only the newest N snapshots."),
    ] = None,
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
    no_pager: NoPagerOpt = False,
) -> None:
    """List snapshots, newest first.

    \b
    Examples:
      sys history
      sys history --limit 5
      sys history --json
    """
    from syslua.cli.pager import paging

    term = terminal(json_, 0, False, no_color)
    with paging(term, not no_pager):
        code = run(term, limit)
    raise typer.Exit(code)


def run(term: "Terminal", limit: int | None = None) -> int:
    from syslua.cli.commands.common import state
    from syslua.cli.machine import JSON_FORMAT
    from syslua.cli.when import iso
    from syslua.paths import Paths
    from syslua.state.snapshots import Snapshots

    paths = Paths.from_env()
    with state(paths, term, exclusive=False):
        snapshots = Snapshots(paths)
        index = snapshots.index()
        if snapshots.rebuilt:
            term.warn(snapshots.rebuilt)
        current = index.get("current")
        numbers = snapshots.generations()
        problems: list[str] = []
        everything = snapshots.all(problems)
        for problem in problems:
            term.warn(problem)
    shown = list(reversed(everything))[:limit]
    if term.json_mode:
        term.json(
            [
                {
                    "format": JSON_FORMAT,
                    "id": snap.id,
                    "generation": numbers.get(snap.id),
                    "time": iso(snap.time),
                    "message": snap.message,
                    "kind": snap.kind,
                    "current": snap.id == current,
                    "counts": snap.counts,
                    "tags": index.get("tags", {}).get(snap.id, []),
                }
                for snap in shown
            ]
        )
        return 0
    if not shown:
        term.line("No snapshots yet. Run `sys apply` to record the first one.")
        return 0
    ends = short_ids([s.id for s in everything])
    rows = [_row(snap, numbers, ends, current, index.get("tags", {})) for snap in shown]
    width = shutil.get_terminal_size().columns if term.is_tty else None
    for line in table([HEADER, *rows], width):
        term.line(line)
    if limit is not None and len(everything) > limit:
        term.line(f"({len(everything) - limit} older; `sys history` lists them all)")
    if current is None:
        term.line("(no current snapshot: the next `sys apply` converges everything)")
    return 0


def _row(
    snap: Any,
    numbers: dict[str, int],
    ends: dict[str, str],
    current: str | None,
    tags: dict[str, list[str]],
) -> tuple[str, ...]:
    from syslua.cli.when import ago

    number = numbers.get(snap.id)
    message = _COUNTS_SUFFIX.sub(r"\1", snap.message)
    # An older rollback's message names its target by id; its number is shorter.
    target = message.removeprefix("rollback to ") if snap.kind == "rollback" else None
    if target in numbers:
        message = f"rollback to #{numbers[target]}"
    names = tags.get(snap.id, [])
    if names:  # before the message: a shortened message keeps them
        message = f"[{', '.join(names)}] {message}"
    return (
        "*" if snap.id == current else "",
        f"#{number}" if number is not None else "",
        ends[snap.id],
        ago(snap.time),
        snap.kind,
        changed(snap.counts),
        message,
    )


def changed(counts: dict[str, int]) -> str:
    """`2 of 7`: how many items the run that recorded a snapshot changed, of
    how many; `-` when it ran nothing (edits kept, `sys add`)."""
    if not counts:
        return "-"
    total = sum(counts.get(k, 0) for k in ("changed", "unchanged", "failed", "skipped", "noop"))
    return f"{counts.get('changed', 0)} of {total}"


def short_ids(ids: list[str]) -> dict[str, str]:
    """The shortest end (4 characters at least) of each id that no other id
    ends with: what `sys rollback 3ee6` takes."""
    out = {}
    for ident in ids:
        n = min(4, len(ident))
        while n < len(ident) and any(o != ident and o.endswith(ident[-n:]) for o in ids):
            n += 1
        out[ident] = ident[-n:]
    return out


def table(rows: list[tuple[str, ...]], width: int | None) -> list[str]:
    """`rows` in columns two spaces apart, the first (a mark) one space; the
    last column is shortened with `…` so that each line fits `width`."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    widths[0] = max(widths[0], 1)  # the mark's column, even when no snapshot is current
    lines = []
    for r in rows:
        head = (
            r[0].ljust(widths[0])
            + " "
            + "  ".join(c.ljust(w) for c, w in zip(r[1:-1], widths[1:], strict=True))
        )
        line = f"{head}  {r[-1]}"
        if width is not None and len(line) > width - 1:
            room = max(width - 1 - len(head) - 2, 8)
            if len(r[-1]) > room:
                line = f"{head}  {r[-1][: room - 1].rstrip()}…"
        lines.append(line.rstrip())
    return lines
