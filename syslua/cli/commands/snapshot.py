"""`sys snapshot show|tag|delete`."""

import time
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import JsonOpt, NoPagerOpt, complete_snapshot
from syslua.execute.objects import content_of

if TYPE_CHECKING:
    from syslua.cli.output import Terminal


def show_command(
    snapshot_id: Annotated[
        str | None,
        typer.Argument(
            metavar="ID", help="Snapshot id (default: current).", autocompletion=complete_snapshot
        ),
    ] = None,
    json_: JsonOpt = False,
    no_pager: NoPagerOpt = False,
) -> None:
    """Show one snapshot.

    \b
    Examples:
      sys snapshot show
      sys snapshot show 20261126-001820-5869 --json
    """
    from syslua.cli.pager import paging

    term = terminal(json_)
    with paging(term, not no_pager):
        code = show(term, snapshot_id)
    raise typer.Exit(code)


def tag_command(
    snapshot_id: Annotated[str, typer.Argument(metavar="ID", autocompletion=complete_snapshot)],
    tag: Annotated[
        str, typer.Argument(metavar="TAG", help="A name; tagged snapshots are kept by gc.")
    ],
) -> None:
    """Tag a snapshot so gc keeps it.

    \b
    Example:
      sys snapshot tag 20261126-001820-5869 good
    """
    raise typer.Exit(tag_snapshot(terminal(), snapshot_id, tag))


def delete_command(
    snapshot_id: Annotated[str, typer.Argument(metavar="ID", autocompletion=complete_snapshot)],
) -> None:
    """Delete a snapshot (not the current one).

    \b
    Example:
      sys snapshot delete 20261126-001820-5869
    """
    raise typer.Exit(delete(terminal(), snapshot_id))


def show(term: "Terminal", snapshot_id: str | None) -> int:
    from syslua.cli.commands.common import state
    from syslua.cli.machine import JSON_FORMAT
    from syslua.errors import UsageError
    from syslua.paths import Paths
    from syslua.state.snapshots import Snapshots

    paths = Paths.from_env()
    with state(paths, term, exclusive=False):
        snapshots = Snapshots(paths)
        ident = snapshots.resolve_id(snapshot_id) if snapshot_id else snapshots.current_id()
        if ident is None:
            raise UsageError("no current snapshot; give an id (see `sys history`)")
        snap = snapshots.load(ident)
        tags = snapshots.index().get("tags", {}).get(ident, [])
    if term.json_mode:
        term.json({"format": JSON_FORMAT, **snap.to_dict(), "tags": tags})
        return 0
    term.line(f"Snapshot {snap.id}{' [' + ', '.join(tags) + ']' if tags else ''}")
    term.line(f"  time:     {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(snap.time))}")
    term.line(f"  message:  {snap.message}")
    term.line(f"  kind:     {snap.kind}")
    term.line(f"  parent:   {snap.parent or '-'}")
    term.line(f"  config:   {snap.config or '-'}")
    term.line(f"  manifest: {snap.digest}")
    term.line(f"  items:    {len(snap.manifest.get('items', []))}")
    for item in snap.manifest.get("items", []):
        ident_ = f"{item['type']}#{item['key']}"
        content = content_of(snap, ident_)
        extra = f" (content {content[:12]})" if content else ""
        if ident_ in snap.originals:
            extra += " (original kept)"
        term.line(f"    {ident_}{extra}")
    if snap.inputs:
        term.line("  config files:")
        for path, blob in sorted(snap.inputs.items()):
            term.line(f"    {path} ({blob[:12]})")
    return 0


def tag_snapshot(term: "Terminal", snapshot_id: str, name: str) -> int:
    from syslua.cli.commands.common import state
    from syslua.paths import Paths
    from syslua.state.snapshots import Snapshots

    paths = Paths.from_env()
    with state(paths, term, exclusive=True):
        snapshots = Snapshots(paths)
        ident = snapshots.resolve_id(snapshot_id)
        snapshots.tag(ident, name)
    term.line(f"Tagged {ident} as {name}.")
    return 0


def delete(term: "Terminal", snapshot_id: str) -> int:
    from syslua.cli import signals
    from syslua.cli.commands.common import state
    from syslua.paths import Paths
    from syslua.state.snapshots import Snapshots

    paths = Paths.from_env()
    with state(paths, term, exclusive=True):
        snapshots = Snapshots(paths)
        ident = snapshots.resolve_id(snapshot_id)
        with signals.current().critical():  # Ctrl-C waits for its end
            snapshots.delete(ident)
    term.line(f"Deleted snapshot {ident}. Its store objects are freed by `sys gc`.")
    return signals.stopped_after(0)
