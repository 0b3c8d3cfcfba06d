"""`sys status [CONFIG]`: in two columns, as `git status -s` and `chezmoi
status` do, what changed in the home since the last apply (drift from the
current snapshot: edited, deleted, mode changed) and what the config would
change (its plan); `-v` gives each line's details and diffs. Also whether
the store still holds what the snapshot refers to, and the paths a failed
rollback could not put back. It never changes anything."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from syslua.cli import terminal
from syslua.cli.options import (
    ConfigArg,
    FactOpt,
    JsonOpt,
    NoCacheOpt,
    NoColorOpt,
    NoPagerOpt,
    VerboseOpt,
)

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.paths import Paths
    from syslua.plan.planner import Entry, Plan

# First column: what changed in the home since the last apply.
MARK = {
    "deleted": "D",
    "edited": "M",
    "mode": "M",
    "changed": "M",
    "recreated": "A",
    "error": "!",
    "dangling": "!",
    "loop": "!",
}
# Second column: what `sys apply` would do (the plan's action), `!` when it cannot.
WOULD = {"create": "A", "update": "M", "remove": "D", "run": "R", "fail": "!"}
LEGEND = (
    "Column 1, since the last apply: M edited, D deleted, A back, ! unreadable.",
    "Column 2, by `sys apply`: A create, M update, D remove, R run, ! cannot.",
)

DRIFT = 4  # `--exit-code`, as `sys plan --exit-code` exits when changes are pending
BROKEN = 1  # the store lacks what the current snapshot refers to


def command(
    config: ConfigArg = None,
    json_: JsonOpt = False,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code", help="Exit with 4 when something drifted or changes are pending."
        ),
    ] = False,
    fact: FactOpt = None,
    no_color: NoColorOpt = False,
    verbose: VerboseOpt = 0,
    no_cache: NoCacheOpt = False,
    no_pager: NoPagerOpt = False,
) -> None:
    """Show what changed in the home since the last apply, and what the config would change.

    \b
    Short form, two columns as in `git status -s`: the first says what
    changed in the home since the last apply (drift), the second what
    `sys apply` would do; -v gives the details and diffs.

    \b
    Examples:
      sys status
      sys status -v
      sys status --exit-code || echo "drifted, or changes pending"
    """
    from syslua.cli.pager import paging

    term = terminal(json_, verbose, False, no_color)
    with paging(term, verbose > 0 and not no_pager):  # -v: the details, through a pager
        code = run(term, config, exit_code=exit_code, facts=fact or [])
    raise typer.Exit(code)


def run(
    term: "Terminal",
    config: Path | None = None,
    *,
    exit_code: bool = False,
    facts: list[str] | None = None,
) -> int:
    """Exit code: 1 when the store is not whole; else, with `exit_code`, 4 when
    something drifted (or a failed rollback left paths it could not put back)
    or the config has changes pending."""
    from syslua.cli.commands.common import state
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
    found, plan = _pending(term, config, facts or [], paths)
    pending = _changing(plan) if plan is not None else []
    if term.json_mode:
        term.json(_json(snap_id, items, kept, store, found, pending))
    else:
        _show(term, snap_id, items, kept, store)
        if snap_id is not None or found is not None:
            members = {e.id: e for e in plan.all_entries if _changes(e)} if plan else {}
            _columns(term, snap_id if store is None else None, items, found, pending, members)
    return _code(store, bool(items or kept or pending), exit_code)


def _pending(
    term: "Terminal", config: Path | None, facts: list[str], paths: "Paths"
) -> "tuple[Path | None, Plan | None]":
    """The config `sys plan` would use and its plan; (None, None) when no config
    is found (only the drift is shown then). A config that does not evaluate
    is an error, as for `sys plan`."""
    from syslua.cli.commands.common import config_found, load_manifest, state
    from syslua.errors import UsageError
    from syslua.plan.inputs import PlanInputs
    from syslua.resources.process import Runner

    try:
        path = config_found(term, config, paths, example="sys status path/to/sys.lua")
    except UsageError:
        if config is not None:
            raise
        return None, None
    manifest = load_manifest(term, path, facts=facts, impure=False, max_depth=10, paths=paths)
    with state(paths, term, exclusive=False):
        inputs = PlanInputs(paths, manifest)
        originals = inputs.known_originals()
    for note in inputs.warnings:
        term.warn(note)
    ctx = inputs.context(Runner(), originals=originals)
    return path, inputs.plan(ctx, with_diff=term.verbosity > 0 and not term.json_mode)


def _changing(plan: "Plan") -> "list[Entry]":
    """The plan's entries that `sys apply` would act on, or that cannot be
    applied, one per line as the plan lists them: a group (a tree) as one,
    with its members that need attention; no parent directories, nothing a
    noop child holds."""
    grouped = {member.id for members in plan.groups.values() for member in members}
    out = []
    for e in plan.all_entries:
        if not _changes(e):
            continue
        if e.id in grouped and e.id not in plan.groups and not e.attention:
            continue  # counted under its group's line
        out.append(e)
    return out


def _changes(e: "Entry") -> bool:
    """Whether `sys apply` would act on it, or cannot: not unchanged, not a
    parent directory, not in a noop child."""
    return not (e.created_parent or e.noop or e.symbol == "=")


def _second(entry: "Entry") -> str:
    if entry.symbol == "!":
        return "!"
    return WOULD.get(entry.decision.action, "M")


def _subject(d: dict[str, str]) -> str:
    """How a drifted item is named: as the plan names it (`file ~/.bashrc`)."""
    kind, _, key = d["id"].partition("#")
    label = d["label"] if d["label"] != d["id"] else key
    return f"{kind} {label}"


def _columns(
    term: "Terminal",
    snap_id: str | None,
    items: list[dict[str, str]],
    found: Path | None,
    pending: "list[Entry]",
    members: "dict[str, Entry]",
) -> None:
    """A line per item that drifted or would change: `XY subject`, X the drift,
    Y what the apply would do; with -v its details, then its diffs. `snap_id`:
    the snapshot the drift is from, to name (None: said above, or none).
    `members`: every entry that changes, by id, for a drifted member of a
    group whose line the plan counts under the group's."""
    from syslua.paths import abbreviate

    drifted = {d["id"]: d for d in items}
    rows: list[tuple[str, str, dict[str, str] | None, Entry | None]] = []
    for e in pending:
        d = drifted.pop(e.id, None)
        rows.append((MARK[d["kind"]] if d else " ", _second(e), d, e))
    for d in drifted.values():  # drifted, and not on a line of its own in the plan
        member = members.get(d["id"])
        rows.append((MARK[d["kind"]], _second(member) if member else " ", d, member))
    verbose = term.verbosity > 0
    for first, second, drift, entry in rows:
        subject = (
            (entry.subject or f"{entry.type} {entry.label}")
            if entry is not None
            else _subject(drift or {})
        )
        term.line(f"{first}{second} {subject}")
        if verbose:
            _details(term, drift, entry)
    if rows:
        term.line()
    config = abbreviate(str(found)) if found is not None else None
    n_drift, n_pending = sum(1 for r in rows if r[2] is not None), len(pending)
    if snap_id is not None:
        term.line(
            f"Drift since snapshot {snap_id}: {_items(n_drift)} (first column)."
            if n_drift
            else f"No drift: the machine matches snapshot {snap_id}."
        )
    if config is None:
        term.line("No config found: only the drift is shown (`sys status CONFIG` names one).")
    elif n_pending:
        term.line(f"Pending in {config}: {_items(n_pending)} (second column).")
    else:
        term.line(f"Nothing pending: {config} is applied.")
    if rows:
        if verbose:
            for line in LEGEND:
                term.line(line)
        else:
            # An item marked `!` (an edit the apply would overwrite, or one it
            # cannot apply) makes `sys apply` refuse: `sys plan` names the ways on.
            blocked = any(second == "!" for _, second, _, _ in rows)
            way = "The ways on: `sys plan`." if blocked else "To converge: `sys apply`."
            term.line(f"Details: `sys status -v`. As a diff: `sys diff`. {way}")


def _items(n: int) -> str:
    return f"{n} item{'' if n == 1 else 's'}"


def _details(term: "Terminal", d: dict[str, str] | None, e: "Entry | None") -> None:
    if d is not None:
        term.line(f"    in the home: {d['detail']}")
    if e is None:
        term.line("    sys apply: nothing to do (the config declares it as it is now)")
        return
    term.line(f"    sys apply: {e.message}")
    for diff in (e.edit_diff, e.diff):
        for dl in (diff or "").rstrip("\n").splitlines():
            style = "green" if dl.startswith("+") else "red" if dl.startswith("-") else None
            term.line("      " + dl, style)


def _json(
    snap_id: str | None,
    items: list[dict[str, str]],
    kept: list[dict[str, str]],
    store: dict[str, Any] | None,
    found: Path | None,
    pending: "list[Entry]",
) -> dict[str, Any]:
    from syslua.cli.machine import JSON_FORMAT

    return {
        "format": JSON_FORMAT,
        "snapshot": snap_id,
        "drift": [{k: v for k, v in d.items() if k != "label"} for d in items],
        "unrestored": kept,
        "store": store,
        "config": str(found) if found is not None else None,
        "pending": [
            {
                "id": e.id,
                "type": e.type,
                "label": e.label,
                "action": e.decision.action,
                "symbol": e.symbol,
                "status": _second(e),
                "message": e.message,
            }
            for e in pending
        ],
    }


def _show(
    term: "Terminal",
    snap_id: str | None,
    items: list[dict[str, str]],
    kept: list[dict[str, str]],
    store: dict[str, Any] | None,
) -> None:
    """In order: paths a failed rollback left, and what the store lacks."""
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
            term.line(
                f"The managed paths match snapshot {snap_id}; its store is not whole (above)."
            )


def _code(store: dict[str, Any] | None, changed: bool, exit_code: bool) -> int:
    """Paths a failed rollback could not put back count as drift too."""
    if store:
        return BROKEN
    return DRIFT if exit_code and changed else 0


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
