"""`sys snapshot show|tag|delete`."""

from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import JsonOpt, NoColorOpt, NoPagerOpt, QuietOpt, complete_snapshot
from syslua.cli.when import ago, iso, local

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.manifest.model import Item
    from syslua.state.snapshots import Snapshot


def show_command(
    snapshot_id: Annotated[
        str | None,
        typer.Argument(
            metavar="ID", help="Snapshot id (default: current).", autocompletion=complete_snapshot
        ),
    ] = None,
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
    no_pager: NoPagerOpt = False,
) -> None:
    """Show one snapshot.

    \b
    Examples:
      sys snapshot show
      sys snapshot show 20261126-001820-5869 --json
    """
    from syslua.cli.pager import paging

    term = terminal(json_, no_color=no_color)
    with paging(term, not no_pager):
        code = show(term, snapshot_id)
    raise typer.Exit(code)


def tag_command(
    snapshot_id: Annotated[str, typer.Argument(metavar="ID", autocompletion=complete_snapshot)],
    tag: Annotated[
        str, typer.Argument(metavar="TAG", help="A name; tagged snapshots are kept by gc.")
    ],
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Tag a snapshot so gc keeps it.

    \b
    Example:
      sys snapshot tag 20261126-001820-5869 good
    """
    raise typer.Exit(tag_snapshot(terminal(quiet=quiet, no_color=no_color), snapshot_id, tag))


def delete_command(
    snapshot_id: Annotated[str, typer.Argument(metavar="ID", autocompletion=complete_snapshot)],
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Delete a snapshot (not the current one).

    \b
    Example:
      sys snapshot delete 20261126-001820-5869
    """
    raise typer.Exit(delete(terminal(quiet=quiet, no_color=no_color), snapshot_id))


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
        numbers = snapshots.generations()
    # The index numbers a snapshot made before the numbers existed.
    snap.generation = numbers.get(ident, snap.generation)
    if term.json_mode:
        term.json({"format": JSON_FORMAT, **snap.to_dict(), "time": iso(snap.time), "tags": tags})
        return 0

    def named(ident: str | None) -> str:
        return f"#{numbers[ident]} {ident}" if ident in numbers else ident or "-"

    term.line(f"Snapshot {named(snap.id)}{' [' + ', '.join(tags) + ']' if tags else ''}")
    term.line(f"  time:     {local(snap.time)} ({ago(snap.time)})")
    term.line(f"  message:  {snap.message}")
    term.line(f"  kind:     {snap.kind}")
    term.line(f"  parent:   {named(snap.parent)}")
    term.line(f"  config:   {snap.config or '-'}")
    term.line(f"  manifest: {snap.digest}")
    for line in _items(snap):
        term.line(line)
    if snap.inputs:
        term.line("  config files:")
        for path, blob in sorted(snap.inputs.items()):
            term.line(f"    {path} ({blob[:12]})")
    return 0


def _items(snap: "Snapshot") -> list[str]:
    """The snapshot's items as the plan names them (`file ~/.bashrc`,
    `file ~/.config/nvim/ (tree: 3 files)`), each one's members (a tree's
    files, an `apply` child's items) under it."""
    from syslua.execute.objects import content_of
    from syslua.plan.planner import label
    from syslua.resources import has as has_type

    members: dict[str | None, list[Item]] = {}
    for item in snap.load_manifest():
        members.setdefault(item.parent, []).append(item)
    lines = [f"  items:    {len(members.get(None, []))}"]

    def add(item: "Item", depth: int) -> None:
        name = f"{item.type} {label(item) if has_type(item.type) else item.key}"
        inside = members.get(item.id, [])
        notes = [_inside(item, inside)] if inside else []
        content = content_of(snap, item.id)
        if content:  # the store object holding the content it wrote
            notes.append(f"content {content[:12]}")
        if item.id in snap.originals:
            notes.append("original kept")
        lines.append("  " * depth + name + "".join(f" ({n})" for n in notes))
        for member in inside:
            add(member, depth + 1)

    for item in members.get(None, []):
        add(item, 2)
    return lines


def _inside(parent: "Item", members: list["Item"]) -> str:
    """What a parent holds, as the plan says it: `tree: 3 files, 1 directory`
    for a file tree, `2 items` otherwise."""
    if parent.type != "file":
        return f"{len(members)} item{'s' if len(members) != 1 else ''}"
    kinds = [m.get("ensure") for m in members]
    parts = []
    for kind, one, many in (
        ("present", "file", "files"),
        ("link", "link", "links"),
        ("directory", "directory", "directories"),
    ):
        n = kinds.count(kind)
        if n:
            parts.append(f"{n} {one if n == 1 else many}")
    return "tree: " + (", ".join(parts) or f"{len(members)} members")


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
