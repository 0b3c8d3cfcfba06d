"""The values a kind's methods take and give, and the context they run in.

A kind (`syslua.resources.kind`) decides; a provider acts. `decide` gives a
`Decision` with a reason, `apply` returns what it did (`Applied`), and a
removal what it did (`Removal`); what items did so far in a run is in
`Context.outcomes`. The engine only knows kinds through the registry in
`syslua.resources`.
"""

from __future__ import annotations

import grp
import pwd
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, cast

from syslua.errors import ResourceError
from syslua.record import Frozen

__all__ = [
    "CREATE",
    "NOTHING",
    "Applied",
    "Context",
    "Decision",
    "Members",
    "Outcomes",
    "Removal",
    "ResourceError",
    "SnapshotContext",
    "TakeBack",
    "UndoContext",
    "UndoReport",
]

if TYPE_CHECKING:
    from syslua.manifest.model import Item, Manifest
    from syslua.paths import Paths
    from syslua.resources.placeholders import Resolver
    from syslua.resources.process import ProcessResult, Runner
    from syslua.state.records import ItemState, Original, PathRecord, Record, Unrestored
    from syslua.state.stat_index import StatIndex
    from syslua.state.store import Store

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
# How `sys plan` says what a change will do (`Decision.plan_line`); the noop
# messages (`Would have created the file`) are CCM's, for `sys apply --noop`.
FUTURE = {CREATE: "will create", UPDATE: "will update", RUN: "will run", REMOVE: "will remove"}


# The classes below are written out rather than made by @dataclass: generating
# a dataclass's methods costs every start about half a millisecond each.


# How a reason starts when a link is made to what does not exist: shown
# even beside "created", where a reason usually goes without saying.
DANGLING = "dangling: "


class Decision(Frozen):
    """What a resource would do, and why. Read-only; equal when its fields are
    (a subclass adds fields to `_names` and `__init__`, as PackageDecision does)."""

    __slots__ = ("action", "reason", "noop_message", "verb")
    _names: ClassVar[tuple[str, ...]] = __slots__
    action: str
    reason: str
    noop_message: str | None
    # How the plan says it (`plan_line`): None for `will <action>` (FUTURE);
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
    def plan_line(self) -> str:
        """The line `sys plan` shows, in the future: `will update (content changed)`."""
        verb = FUTURE.get(self.action) if self.verb is None else self.verb
        if verb is None:
            return self.message  # nothing to do, or cannot be done: the reason
        if not verb:
            return self.reason
        return f"{verb} ({self.reason})" if self.reason else verb


class Applied(Frozen):
    """What `Kind.apply` did, handed on to `verify`, the report and the snapshot."""

    __slots__ = ("output", "stored", "warnings")
    _names: ClassVar[tuple[str, ...]] = __slots__
    output: ProcessResult | None  # the result of the command it ran
    stored: str | None  # the digest of the content it wrote, kept in the store as it wrote it
    warnings: tuple[str, ...]  # worth saying about an item that did converge

    def __init__(
        self,
        output: ProcessResult | None = None,
        stored: str | None = None,
        warnings: tuple[str, ...] = (),
    ) -> None:
        _set = object.__setattr__
        _set(self, "output", output)
        _set(self, "stored", stored)
        _set(self, "warnings", warnings)


NOTHING = Applied()  # an apply that has nothing to report


class Members(Frozen):
    """What the members of an item (items whose `parent` is its id: a tree's
    files, an apply's children) did so far in this run."""

    __slots__ = ("total", "changed", "failed", "would_change", "removed")
    _names: ClassVar[tuple[str, ...]] = __slots__
    total: int
    changed: int
    failed: int
    would_change: int  # in a noop child: would have changed in a real run
    removed: int  # members of the previous snapshot no longer declared

    def __init__(
        self, total: int, changed: int = 0, failed: int = 0, would_change: int = 0, removed: int = 0
    ) -> None:
        _set = object.__setattr__
        _set(self, "total", total)
        _set(self, "changed", changed)
        _set(self, "failed", failed)
        _set(self, "would_change", would_change)
        _set(self, "removed", removed)


class Outcomes:
    """Which items changed, would have changed (in a noop child) or failed so
    far in one run: what subscribers and containers read. Shared by the
    workers, so every change to it is made under its lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed: set[str] = set()
        self._would_change: set[str] = set()
        self._failed: set[str] = set()

    def mark_changed(self, ident: str, *, noop: bool = False) -> None:
        """The item changed; with `noop` (an item of a noop child), it only would have."""
        with self._lock:
            (self._would_change if noop else self._changed).add(ident)

    def mark_failed(self, ident: str) -> None:
        with self._lock:
            self._failed.add(ident)

    def changed(self, ident: str) -> bool:
        return ident in self._changed

    def failed(self, ident: str) -> bool:
        return ident in self._failed

    def triggered(self, targets: Iterable[str], noop: bool) -> bool:
        """Whether any of `targets` changed (or, for a noop subscriber, would have)."""
        with self._lock:
            return any(t in self._changed or (noop and t in self._would_change) for t in targets)

    def pending(self, idents: Iterable[str]) -> bool:
        """Whether any of `idents` changed or would change in this run."""
        with self._lock:
            return any(i in self._changed or i in self._would_change for i in idents)

    def count(self, idents: Iterable[str]) -> tuple[int, int, int]:
        """(changed, failed, would change) among `idents`."""
        changed = failed = would = 0
        with self._lock:
            for ident in idents:
                if ident in self._changed:
                    changed += 1
                elif ident in self._would_change:
                    would += 1
                if ident in self._failed:
                    failed += 1
        return changed, failed, would


class Ids:
    """User and group names looked up once per run (workers share it: locked)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._uids: dict[str, int | None] = {}
        self._gids: dict[str, int | None] = {}

    def uid(self, owner: str) -> int | None:
        """uid for a user name or numeric id (None when no such user)."""
        return self._look_up(self._uids, owner, lambda name: pwd.getpwnam(name).pw_uid)

    def gid(self, group: str) -> int | None:
        return self._look_up(self._gids, group, lambda name: grp.getgrnam(name).gr_gid)

    def _look_up(
        self, known: dict[str, int | None], name: str, find: Callable[[str], int]
    ) -> int | None:
        with self._lock:
            if name in known:
                return known[name]
        if name.isdigit():
            found: int | None = int(name)
        else:
            try:
                found = find(name)
            except KeyError:
                found = None
        with self._lock:
            known[name] = found
        return found


class Journaling(Protocol):
    """What a running item writes to the journal (the apply's `Journal`)."""

    def before_change(self, item: str, path: str) -> None: ...

    def before_changes(self, item: str, paths: list[str]) -> None: ...

    def note(self, record: Record, *, durable: bool = True) -> None: ...


_T = TypeVar("_T")


# Contexts (this one, UndoContext, SnapshotContext) are compared by identity and
# shown by the default repr (a field-by-field one would print the whole
# manifest).
class Context:
    """What a kind may use while planning, applying or removing items of one run.

    Set once, then only read, and shared by the worker threads; what changes
    during the run is in objects that lock (`outcomes`, the id and memo
    caches). `for_item` gives the context of one running item: the same,
    plus its journal and its line of the live display.
    """

    def __init__(
        self,
        runner: Runner,
        noop: bool = True,
        manifest: Manifest | None = None,
        *,
        previous: Manifest | None = None,  # the current snapshot's manifest, when there is one
        store: Store | None = None,  # the content store, when the run has one
        paths: Paths | None = None,  # the state, cache and profile directories
        resolver: Resolver | None = None,  # for `$${...}` placeholders
        # item id -> what was at its path before syslua took it over (the record
        # of originals), when known: the plan says which removals restore one.
        originals: Mapping[str, Original] | None = None,
        # item id -> what the current snapshot recorded for it (`snapshot_state`),
        # when there is one: edits made since the last apply are found from it.
        last_applied: Mapping[str, ItemState] | None = None,
        max_unpack: int | None = None,  # bytes an archive may unpack to (--max-unpack); None: 4 GiB
        verbose: bool = False,
        # (item id, stream, line) for live command output (`logoutput`, -v)
        on_output: Callable[[str, str, str], None] | None = None,
        # (item id, "command" or "output", text): what a running item does now,
        # for the live display; an item reaches it through its own `doing`.
        on_activity: Callable[[str, str, str], None] | None = None,
        # label -> (done, total) callback, for downloads
        progress: Callable[[str], Callable[[int, int | None], None]] | None = None,
        outcomes: Outcomes | None = None,
        # A rollback or destroy: it puts back what a snapshot recorded, even
        # what can no longer be as it was (a link whose source is gone).
        restoring: bool = False,
        # What `lstat` said of files when their content was last hashed
        # (`state/stat_index`): a file that still says so is not read.
        stat_index: StatIndex | None = None,
    ) -> None:
        self.runner = runner
        self.restoring = restoring
        self.stat_index = stat_index
        self.noop = noop
        self.manifest = manifest
        self.previous = previous
        self.store = store
        self.paths = paths
        self.resolver = resolver
        self.originals = originals
        self.last_applied = last_applied
        self.max_unpack = max_unpack
        self.verbose = verbose
        self.on_output = on_output
        self.on_activity = on_activity
        self.progress = progress
        self.outcomes = Outcomes() if outcomes is None else outcomes
        # Of one running item (`for_item`): its journal, and its live display line.
        self.journal: _ItemJournal | None = None
        self.doing: Callable[[str, str], None] | None = None
        self._ids = Ids()
        self._memo: dict[type, object] = {}
        self._memo_lock = threading.Lock()

    def replace(self, **changes: Any) -> Context:
        """A copy with `changes` made, sharing everything else (the outcomes
        and the caches too)."""
        unknown = changes.keys() - self.__dict__.keys()
        if unknown:
            raise TypeError(f"Context has no field {', '.join(sorted(unknown))}")
        new = object.__new__(Context)
        new.__dict__.update(self.__dict__, **changes)
        return new

    def for_item(self, item: Item, journal: Journaling | None) -> Context:
        """The context of `item` while it runs: its changes are journaled under
        its id, and what it does shows on its line of the live display."""
        ident = item.id
        on_activity = self.on_activity
        doing = None
        if on_activity is not None:

            def doing(kind: str, text: str) -> None:
                on_activity(ident, kind, text)

        bound = _ItemJournal(journal, ident, item.type) if journal is not None else None
        return self.replace(journal=bound, doing=doing)

    def before_change(self, path: str) -> None:
        """Called by providers before they change or remove `path` (the journal hook)."""
        if self.journal is not None:
            self.journal.before_change(path)

    def before_changes(self, paths: Iterable[str]) -> None:
        """`before_change` for many paths at once: their undo records are made
        durable together, before any of them changes."""
        if self.journal is not None:
            self.journal.before_changes(list(paths))

    def note(self, record: dict[str, Any]) -> None:
        """Journal an undo record of the kind's own, durably, before the change
        it covers (`op` names what it is; the rest is the kind's to read when
        `Undoes.undo` undoes it); nothing outside an apply."""
        if self.journal is not None:
            self.journal.note(record)

    def uid(self, owner: str) -> int | None:
        return self._ids.uid(owner)

    def gid(self, group: str) -> int | None:
        return self._ids.gid(group)

    def memo(self, cls: type[_T]) -> _T:
        """The run's one instance of `cls` (made on first use): a cache a kind
        keeps for one run, such as what planning found of parent directories."""
        with self._memo_lock:
            found = self._memo.get(cls)
            if found is None:
                found = self._memo[cls] = cls()
            return cast(_T, found)

    def members(self, item: Item) -> Members:
        """What the members of `item` did so far in this run, and how many of
        the previous snapshot's are no longer declared."""
        manifest = self.manifest
        if manifest is None:
            return Members(0)
        members = manifest.members(item.id)
        changed, failed, would = self.outcomes.count(m.id for m in members)
        removed = 0
        if self.previous is not None:
            removed = sum(1 for m in self.previous.members(item.id) if m.id not in manifest)
        return Members(len(members), changed, failed, would, removed)


class _ItemJournal:
    """The journal as one running item writes to it: records name the item."""

    __slots__ = ("journal", "ident", "kind")

    def __init__(self, journal: Journaling, ident: str, kind: str) -> None:
        self.journal = journal
        self.ident = ident
        self.kind = kind

    def before_change(self, path: str) -> None:
        self.journal.before_change(self.ident, path)

    def before_changes(self, paths: list[str]) -> None:
        self.journal.before_changes(self.ident, paths)

    def note(self, record: dict[str, Any]) -> None:
        from syslua.state.records import KindRecord

        data = {k: v for k, v in record.items() if k not in ("op", "item", "type")}
        self.journal.note(KindRecord(record["op"], self.ident, self.kind, data))


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


class Removal:
    """The outcome of removing an item no longer declared."""

    def __init__(
        self,
        message: str,
        changed: bool = True,
        failed: bool = False,
        output: ProcessResult | None = None,  # the result of a command it ran
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
        # Refused because the two sides disagree (the source changed too, or only
        # a mode the declaration sets did), not because the path cannot be taken back.
        conflict: bool = False,
        detail: str | None = None,  # shown under the message: diffs, how to resolve
        # The ways on from a refusal, each (what it does, the words after
        # `sys apply` that do it): the CLI prints them as commands to run.
        ways: tuple[tuple[str, tuple[str, ...]], ...] = (),
    ) -> None:
        self.message = message
        self.refused = refused
        self.writes = writes
        self.act = act
        self.declaration = declaration
        self.conflict = conflict
        self.detail = detail
        self.ways = ways


class UndoReport:
    """What undoing journal records did: restored, left in place, failed, not undoable."""

    def __init__(
        self,
        restored: list[str] | None = None,
        left: list[str] | None = None,  # paths left in place, with why
        failed: list[str] | None = None,  # what could not be undone
        not_undone: list[str] | None = None,  # irreversible execs
        unrestored: list[Unrestored] | None = None,  # paths that could not be put back
        removed: list[str] | None = None,  # paths the apply created, removed again
    ) -> None:
        self.restored: list[str] = [] if restored is None else restored
        self.removed: list[str] = [] if removed is None else removed
        self.left: list[str] = [] if left is None else left
        self.failed: list[str] = [] if failed is None else failed
        self.not_undone: list[str] = [] if not_undone is None else not_undone
        self.unrestored: list[Unrestored] = [] if unrestored is None else unrestored

    @property
    def ok(self) -> bool:
        return not self.failed

    def merge(self, other: UndoReport) -> None:
        self.restored += other.restored
        self.removed += other.removed
        self.left += other.left
        self.failed += other.failed
        self.not_undone += other.not_undone
        self.unrestored += other.unrestored


class UndoContext:
    """What undoing a kind's journal records may use (compared by identity, as Context)."""

    def __init__(
        self,
        store: Store,
        runner: Runner,
        state_dir: Path | None,
        report: UndoReport,
        memo: dict[type, object] | None = None,  # shared by the undo runs of one rollback
    ) -> None:
        self.store = store
        self.runner = runner
        self.state_dir = state_dir
        self.report = report
        self._memo: dict[type, object] = {} if memo is None else memo

    def memo(self, cls: type[_T]) -> _T:
        """The undo run's one instance of `cls`: a kind's own bookkeeping while
        it undoes several records (records are undone one at a time)."""
        found = self._memo.get(cls)
        if found is None:
            found = self._memo[cls] = cls()
        return cast(_T, found)


class SnapshotContext:
    """What `snapshot_state` may use when an apply records its snapshot
    (compared by identity, as Context)."""

    def __init__(
        self,
        store: Store,
        records: list[Record],  # the item's journal records in this apply
        previous: Mapping[str, Any],  # what the current snapshot recorded for the item
        changed: bool,  # whether the item changed in this apply
        declared_as_before: Callable[[], bool],  # same declaration as in the current snapshot
        manifest: Manifest | None = None,  # the manifest being recorded
        # Every path this apply's journal recorded (path -> its record), whichever item recorded it.
        path_records: Mapping[str, PathRecord] | None = None,
        applied: Applied | None = None,  # what the item's apply did in this run, if it ran
        # What the snapshot a rollback returns to recorded for the item (empty
        # for an apply): a state it keeps may say more than the item declares.
        target: Mapping[str, Any] | None = None,
        # What the current snapshot recorded for every item (a kind may look
        # at its other items), and a cache the kind keeps for this recording.
        others: Mapping[str, Mapping[str, Any]] | None = None,
        memo: dict[str, Any] | None = None,
    ) -> None:
        self.others: Mapping[str, Mapping[str, Any]] = {} if others is None else others
        self.memo: dict[str, Any] = {} if memo is None else memo
        self.applied = applied
        self.target: Mapping[str, Any] = {} if target is None else target
        self.store = store
        self.records = records
        self.previous = previous
        self.changed = changed
        self.declared_as_before = declared_as_before
        self.manifest = manifest
        self.path_records: Mapping[str, PathRecord] = {} if path_records is None else path_records
