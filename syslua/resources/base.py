"""What every resource type provides, and the context it runs in.

A type decides; a provider acts. Each type follows the same steps:
`status` reads the machine (never mutates), `decide` compares it with the
item and gives a `Decision` with a reason, `apply` acts through the provider
unless noop, and the executor reads `status` again to verify convergence.
The engine only knows types through the registry in `syslua.resources`.
"""

from __future__ import annotations

import grp
import pwd
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from syslua.errors import ResourceError, StateError
from syslua.record import Frozen

__all__ = [
    "CREATE",
    "Context",
    "Decision",
    "Removal",
    "ResourceError",
    "ResourceType",
    "TakeBack",
    "UndoContext",
    "UndoReport",
]

if TYPE_CHECKING:
    from syslua.manifest.model import Item, Manifest
    from syslua.resources.process import Runner

# Decision actions, and how plan output marks them.
CREATE, UPDATE, REMOVE, NONE, RUN, SKIP, FAIL = (
    "create",
    "update",
    "remove",
    "none",
    "run",
    "skip",
    "fail",
)
SYMBOLS = {CREATE: "+", UPDATE: "~", REMOVE: "-", NONE: "=", RUN: "+", SKIP: "=", FAIL: "!"}
CHANGES = frozenset({CREATE, UPDATE, REMOVE, RUN})
# How `sys plan` says what a change will do (`Decision.planned`); the noop
# messages (`Would have created the file`) are CCM's, for `sys apply --noop`.
FUTURE = {CREATE: "will create", UPDATE: "will update", RUN: "will run", REMOVE: "will remove"}


# The classes below are written out rather than made by @dataclass: generating
# a dataclass's methods costs every start about half a millisecond each.


class Decision(Frozen):
    """What a resource would do, and why. Read-only; equal when its fields are
    (a subclass adds fields to `_names` and `__init__`, as PackageDecision does)."""

    __slots__ = ("action", "reason", "noop_message", "verb")
    _names: ClassVar[tuple[str, ...]] = __slots__
    action: str
    reason: str
    noop_message: str | None
    # How the plan says it (`planned`): None for `will <action>` (FUTURE);
    # "" when the reason says it all (an env variable's `"more" -> "bat"`).
    verb: str | None

    def __init__(
        self, action: str, reason: str, noop_message: str | None = None, verb: str | None = None
    ) -> None:
        _set = object.__setattr__
        _set(self, "action", action)
        _set(self, "reason", reason)
        _set(self, "noop_message", noop_message)
        _set(self, "verb", verb)

    @property
    def symbol(self) -> str:
        return SYMBOLS[self.action]

    @property
    def changes(self) -> bool:
        return self.action in CHANGES

    @property
    def message(self) -> str:
        """The line shown to the user: the noop message with its reason, or the reason."""
        if self.noop_message and self.reason:
            return f"{self.noop_message} ({self.reason})"
        return self.noop_message or self.reason

    @property
    def planned(self) -> str:
        """The line `sys plan` shows, in the future: `will update (content changed)`."""
        verb = FUTURE.get(self.action) if self.verb is None else self.verb
        if verb is None:
            return self.message  # nothing to do, or cannot be done: the reason
        if not verb:
            return self.reason
        return f"{verb} ({self.reason})" if self.reason else verb


# Contexts (this one, UndoContext, RecordContext) are compared by identity and
# shown by the default repr (a field-by-field one would print the whole
# manifest).
class Context:
    """Run-wide facilities handed to resource types (plain sequential code)."""

    def __init__(
        self,
        runner: Runner,
        noop: bool = True,
        manifest: Manifest | None = None,
        # Items changed (or that would change, in a noop run) so far in this run.
        changed: set[str] | None = None,
        # Items of noop children that would have changed in a real run: they
        # trigger only subscribers that are noop themselves.
        would_change: set[str] | None = None,
        verbose: bool = False,
        on_output: Any = None,  # callable(item_id, stream, line) for live command output
        # callable(item_id, kind, text): what a running item does now, for the live
        # display: kind "command" (a command line it starts) or "output" (a line
        # the command printed). Items reach it through `doing`.
        on_activity: Any = None,
        doing: Any = None,  # callable(kind, text): `on_activity` for the item that runs
        store: Any = None,  # the content store, when the executor has one
        paths: Any = None,  # syslua.paths.Paths, for the cache and the profile
        record: Any = None,  # callable(path) before a path changes (the journal)
        # callable(paths): record many paths before they change, made durable
        # together (one sync instead of one per path); `before_changes` falls
        # back to `record` where no journal offers it.
        record_batch: Any = None,
        # callable(record): an undo record the type itself undoes (`ResourceType.undo`)
        note: Any = None,
        progress: Any = None,  # callable(label) -> callable(done, total) for downloads
        resolver: Any = None,  # syslua.resources.placeholders.Resolver, for placeholders
        previous: Any = None,  # the current snapshot's manifest, when there is one
        # item id -> what was at its path before syslua took it over (the record
        # of originals), when known: the plan says which removals restore one.
        originals: Any = None,
        # item id -> what the current snapshot recorded for it (`snapshot_state`),
        # when there is one: edits made since the last apply are found from it.
        last_applied: Any = None,
        max_unpack: int | None = None,  # bytes an archive may unpack to (--max-unpack); None: 4 GiB
        outputs: dict[str, Any] | None = None,  # item id -> command result
        failed: set[str] | None = None,
        # What a type saw of an item while planning, for checks when it runs
        # (shared by the plan's and the apply's contexts; item id -> anything).
        planned: dict[str, Any] | None = None,
        _uids: dict[str, int | None] | None = None,
        _gids: dict[str, int | None] | None = None,
    ) -> None:
        self.runner = runner
        self.noop = noop
        self.manifest = manifest
        self.changed: set[str] = set() if changed is None else changed
        self.would_change: set[str] = set() if would_change is None else would_change
        self.verbose = verbose
        self.on_output = on_output
        self.on_activity = on_activity
        self.doing = doing
        self.store = store
        self.paths = paths
        self.record = record
        self.record_batch = record_batch
        self.note = note
        self.progress = progress
        self.resolver = resolver
        self.previous = previous
        self.originals = originals
        self.last_applied = last_applied
        self.max_unpack = max_unpack
        self.outputs: dict[str, Any] = {} if outputs is None else outputs
        self.failed: set[str] = set() if failed is None else failed
        self.planned: dict[str, Any] = {} if planned is None else planned
        self._uids: dict[str, int | None] = {} if _uids is None else _uids
        self._gids: dict[str, int | None] = {} if _gids is None else _gids

    def replace(self, **changes: Any) -> Context:
        """A copy with `changes` made, sharing everything else (the sets and dicts
        too), as `dataclasses.replace` made it."""
        unknown = changes.keys() - self.__dict__.keys()
        if unknown:
            raise TypeError(f"Context has no field {', '.join(sorted(unknown))}")
        new = object.__new__(Context)
        new.__dict__.update(self.__dict__, **changes)
        return new

    def before_change(self, path: str) -> None:
        """Called by providers before they change or remove `path` (the journal hook)."""
        if self.record is not None:
            self.record(path)

    def before_changes(self, paths: Iterable[str]) -> None:
        """`before_change` for many paths at once: their undo records are made
        durable together, before any of them changes."""
        if self.record_batch is not None:
            self.record_batch(list(paths))
        elif self.record is not None:
            for path in paths:
                self.record(path)

    def uid(self, owner: str) -> int | None:
        """uid for a user name or numeric id (None when no such user)."""
        if owner not in self._uids:
            if owner.isdigit():
                self._uids[owner] = int(owner)
            else:
                try:
                    self._uids[owner] = pwd.getpwnam(owner).pw_uid
                except KeyError:
                    self._uids[owner] = None
        return self._uids[owner]

    def gid(self, group: str) -> int | None:
        if group not in self._gids:
            if group.isdigit():
                self._gids[group] = int(group)
            else:
                try:
                    self._gids[group] = grp.getgrnam(group).gr_gid
                except KeyError:
                    self._gids[group] = None
        return self._gids[group]


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


class ResourceType(Protocol):
    """A resource type: decides and verifies; its provider does the work.

    `status`, `decide`, `apply` and `verify` are the type's own; every other
    method is a hook through which the engine (planner, DAG, journal, removal,
    undo, snapshots, drift, generated outputs) learns what it needs of the
    type. The defaults here do nothing, so a type names only what it uses.
    A type subclasses this protocol to inherit them.
    """

    name: str
    # Executed on the DAG. Types outside it (env) are values compared with
    # the previous snapshot and feed the generated outputs.
    in_dag: bool = True
    # Runs even when its own children failed (apply), to report on them.
    aggregates: bool = False
    # Runs in the scheduler's own thread: quick local work (a file's few
    # system calls) that a worker would only slow down with GIL hand-offs.
    inline: bool = False

    def label(self, item: Item) -> str:
        return item.key

    def key_label(self, key: str) -> str:
        """How an item of this type is named from its key alone (removals, snapshot diffs)."""
        return key

    def subject(self, label: str) -> str:
        """The subject of a plan line, from the item's label."""
        return f"{self.name} {label}"

    def status(self, item: Item, ctx: Context) -> Any: ...

    def decide(
        self, item: Item, status: Any, ctx: Context, triggered: bool = False
    ) -> Decision: ...

    def apply(self, item: Item, decision: Decision, ctx: Context) -> None: ...

    def verify(self, item: Item, decision: Decision, ctx: Context) -> str | None:
        """None when the item reached its desired state, else the reason it did not."""
        ...

    def diff(self, item: Item, status: Any, ctx: Context) -> str | None:
        return None

    def warnings(self, item: Item, decision: Decision, ctx: Context) -> list[str]:
        """What is worth a warning about an item that did reach its desired
        state (`verify` returned None), shown under its line in the report."""
        return []

    # -- planning ----------------------------------------------------------
    def compare(self, item: Item, before: Item | None) -> Decision:
        """For types outside the DAG: the decision from the previous snapshot's item alone."""
        if before is None:
            return Decision(CREATE, "declared")
        if before.props != item.props:
            return Decision(UPDATE, "changed")
        return Decision(NONE, "unchanged")

    def irreversible(self, item: Item, decision: Decision) -> bool | str:
        """Whether running this decision cannot be undone (the plan marks it):
        True (an exec without `undo`), or why, as the plan should say it."""
        return False

    def takes_over(self, item: Item, status: Any) -> bool:
        """Whether a first change of this item replaces something that exists now."""
        return False

    def plan_notes(self, item: Item, status: Any) -> list[str]:
        """Remarks the plan shows beside the item's line, in parentheses."""
        return []

    def removal(self, item: Item) -> Decision:
        """How the plan describes removing an item no longer declared (`will remove (REASON)`)."""
        return Decision(REMOVE, "no longer declared")

    def removal_of(self, item: Item, recorded: dict[str, Any]) -> Decision:
        """`removal`, for a type whose removal depends on what the current
        snapshot recorded for the item (`snapshot_state`): the plan asks this."""
        return self.removal(item)

    def created_parents(self, item: Item, status: Any) -> list[tuple[str, str]]:
        """What a change of this item creates on its way, that no item declares
        (missing parent directories): (key, subject) pairs, outermost first.
        The plan lists each once, as `+ <subject> (parent)`."""
        return []

    def group(self, item: Item) -> str | None:
        """The id of the item this one is part of (a tree's member: the tree),
        under which the plan shows it; None for an item on its own."""
        return None

    def group_note(
        self, root: Item, decision: Decision, members: list[tuple[Item, Decision]]
    ) -> str:
        """The plan's summary of a group: `root`'s own decision and its members'
        (those declared, and those removed in this run)."""
        return f"{len(members)} items"

    # -- the DAG -------------------------------------------------------------
    def provides(self, item: Item) -> Iterable[str]:
        """Capabilities (`bin:rg`, `output:<hash>`) that items requiring them wait for."""
        return ()

    def requires(self, item: Item) -> Iterable[str]:
        """Capabilities this item needs: an edge from whichever item provides each."""
        return ()

    def predecessors(self, item: Item, manifest: Manifest) -> Iterable[str]:
        """Ids of items that must finish first, found from the item itself."""
        return ()

    # -- the journal and originals -----------------------------------------
    def managed_path(self, item: Item) -> str | None:
        """The path whose original syslua takes over and restores on removal."""
        return None

    def touched_paths(self, item: Item) -> list[str]:
        """Paths a planned change will touch, parents first (recorded before acting)."""
        return []

    def original(
        self, item: Item, prev: dict[str, Any], records: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """What to keep of the managed path's previous state when first taking it over."""
        return None if prev["kind"] == "absent" else prev

    # -- removal and undo ----------------------------------------------------
    def removal_paths(self, item: Item) -> list[str]:
        """Paths removing the item will touch (recorded before acting)."""
        return []

    def remove(
        self, item: Item, ctx: Context, original: dict[str, Any] | None, state: dict[str, Any]
    ) -> Removal:
        """Remove an item no longer declared. `original`: what it took over;
        `state`: what the current snapshot recorded for it."""
        return Removal("no longer declared", changed=False)

    def undo(self, record: dict[str, Any], uctx: UndoContext) -> None:
        """Undo one of this type's own journal records (see `Context.note`)."""
        raise StateError(f"{self.name}: no way to undo a `{record.get('op')}` record")

    # -- snapshots and drift -------------------------------------------------
    def snapshot_state(self, item: Item, rctx: RecordContext) -> dict[str, Any]:
        """What the snapshot keeps of the item beyond its declaration (content blobs, trees)."""
        return {}

    def materialise(self, item: Item, state: dict[str, Any], store: Any, snapshot: str) -> Item:
        """The item as snapshot `snapshot` recorded it, runnable from what the store holds alone."""
        return item

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        """(kind, detail) when the machine no longer matches the item, else None."""
        return None

    # -- edits made outside syslua (`sys plan`, `sys apply --force`, `sys add`) --
    def edited(self, item: Item, recorded: dict[str, Any], ctx: Context) -> str | None:
        """What was changed by hand at the item's path since the last apply, which
        recorded `recorded` for it (its `snapshot_state`); None when nothing was.
        `item` is the item as that apply declared it. The planner asks only about
        items it would change or remove: an edit it would overwrite."""
        return None

    def edit_diff(self, item: Item, recorded: dict[str, Any], ctx: Context) -> str | None:
        """The edit `edited` found, as a diff from what the last apply left to
        what is there now (`sys plan --diff`)."""
        return None

    def adopt(
        self, item: Item, recorded: dict[str, Any], live: dict[str, Any], store: Any
    ) -> dict[str, Any] | None:
        """The snapshot state that records `live` (what `journal.capture` found at
        the managed path) as if the last apply had left it, so that `materialise`
        brings it back; None when this type cannot say so. `recorded` is what the
        last apply really recorded."""
        return None

    def take_back(
        self, item: Item, path: str, where: str, recorded: dict[str, Any] | None, store: Any
    ) -> TakeBack:
        """How `sys add` takes the live `path`, managed by `item` (declared at
        `where`), back into the configuration. `recorded`: the current snapshot's
        state of the item, if it has one."""
        return TakeBack(f"`sys add` cannot take back a {self.name}", refused=True)

    def take_in(self, path: str, dest: str, source: str) -> TakeBack:
        """`sys add` of a path nothing manages, for the type the registry names
        for that (`resources.path_type`): copy it to `dest`, and say which
        declaration manages it from there (`source`: `dest` as the config names it)."""
        return TakeBack(f"`sys add` cannot take in paths as a {self.name}", refused=True)

    # -- generated outputs (types listed as such in the registry) ------------
    def outputs(self, paths: Any) -> list[Path]:
        """Files written from the whole manifest after the items ran."""
        return []

    def write_outputs(
        self, manifest: Manifest, paths: Any, before_change: Callable[[str], None]
    ) -> str | None:
        """Write `outputs`; returns a note for the user, if any."""
        return None

    def after_commit(self, paths: Any) -> None:
        """Tidy up once an apply is recorded."""
        return None


class Removal:
    """The outcome of removing an item no longer declared."""

    def __init__(
        self,
        message: str,
        changed: bool = True,
        failed: bool = False,
        output: Any = None,  # the ProcessResult of a command it ran
    ) -> None:
        self.message = message
        self.changed = changed
        self.failed = failed
        self.output = output

    def __repr__(self) -> str:
        return (
            f"Removal(message={self.message!r}, changed={self.changed!r}, "
            f"failed={self.failed!r}, output={self.output!r})"
        )


class TakeBack:
    """What `sys add` does for one path: checked for every path first, then done."""

    def __init__(
        self,
        message: str,  # what it does, or why it refuses
        refused: bool = False,
        # Files of the configuration it overwrites: their previous content is kept
        # in the store (and recorded with the snapshot) before `act` runs.
        writes: tuple[str, ...] = (),
        # Does it; returns the item's new snapshot state (the live content taken
        # back is now what the last apply left), or None when there is none to record.
        act: Callable[[], dict[str, Any] | None] | None = None,
        declaration: str | None = None,  # for a path nothing managed: what to add to the config
    ) -> None:
        self.message = message
        self.refused = refused
        self.writes = writes
        self.act = act
        self.declaration = declaration


class UndoReport:
    """What undoing journal records did: restored, left in place, failed, not undoable."""

    def __init__(
        self,
        restored: list[str] | None = None,
        left: list[str] | None = None,  # paths left in place, with why
        failed: list[str] | None = None,  # what could not be undone
        not_undone: list[str] | None = None,  # irreversible execs
        # path records that could not be put back: {"path": ..., "prev": what it was}
        unrestored: list[dict[str, Any]] | None = None,
    ) -> None:
        self.restored: list[str] = [] if restored is None else restored
        self.left: list[str] = [] if left is None else left
        self.failed: list[str] = [] if failed is None else failed
        self.not_undone: list[str] = [] if not_undone is None else not_undone
        self.unrestored: list[dict[str, Any]] = [] if unrestored is None else unrestored

    @property
    def ok(self) -> bool:
        return not self.failed

    def merge(self, other: UndoReport) -> None:
        self.restored += other.restored
        self.left += other.left
        self.failed += other.failed
        self.not_undone += other.not_undone
        self.unrestored += other.unrestored


class UndoContext:
    """What undoing a type's journal records may use (compared by identity, as Context)."""

    def __init__(
        self,
        store: Any,
        runner: Runner,
        state_dir: Path | None,
        report: UndoReport,
        memo: dict[str, Any] | None = None,  # per undo run, for a type's own bookkeeping
    ) -> None:
        self.store = store
        self.runner = runner
        self.state_dir = state_dir
        self.report = report
        self.memo: dict[str, Any] = {} if memo is None else memo


class RecordContext:
    """What `snapshot_state` may use when an apply records its snapshot
    (compared by identity, as Context)."""

    def __init__(
        self,
        store: Any,
        records: list[dict[str, Any]],  # the item's journal records in this apply
        previous: dict[str, Any],  # what the current snapshot recorded for the item
        changed: bool,  # whether the item changed in this apply
        declared_as_before: Callable[[], bool],  # same declaration as in the current snapshot
        manifest: Manifest | None = None,  # the manifest being recorded
        # Every path this apply's journal recorded (path -> its record), whichever item recorded it.
        recorded: Mapping[str, dict[str, Any]] | None = None,
    ) -> None:
        self.store = store
        self.records = records
        self.previous = previous
        self.changed = changed
        self.declared_as_before = declared_as_before
        self.manifest = manifest
        self.recorded: Mapping[str, dict[str, Any]] = {} if recorded is None else recorded
