"""What a resource kind is: a small core every kind implements, and capabilities it opts into.

The core (`Kind`) is CCM's resource model: read the item's `status` (never
mutating), `decide` what it would take to converge with a reason, `apply`
that decision through a provider unless noop, and `verify` the result by
reading status again. `label` names an item in plans and reports; `schema`
(`syslua.manifest.schema.TypeSchema`) says what a declaration of the kind
accepts, and the rules of its items.

Everything else the engine may need of a kind is a capability: a small
protocol that a kind implements by subclassing it, so that mypy checks every
member it promises; a kind has a capability only by subclassing it. The
engine asks the registry whether a kind has one (`syslua.resources.capability`),
never which kind it is:

| capability    | what the engine learns through it                    | kinds |
|---------------|------------------------------------------------------|-------|
| `Journaled`   | the paths it changes, recorded before it acts; originals | file, archive |
| `Removable`   | how an item no longer declared is removed           | most |
| `Undoes`      | how its own journal records are undone              | exec, user, bind, package, os_package |
| `Recorded`    | what a snapshot keeps of an item, and the blobs it needs | file, archive, build, package, os_package |
| `Edited`      | what was changed by hand since the last apply       | file, archive |
| `TakesBack`   | how `sys add` takes an edit back into the config    | file |
| `Drifts`      | how the machine no longer matches a snapshot        | file, archive, bind, package, os_package |
| `Container`   | items shown with their members as one plan line     | file |
| `Ordered`     | edges of the DAG it implies                         | file, archive, exec, package, build, bind |
| `Explained`   | what the plan shows beyond the decision             | file, archive |
| `Irreversible`| changes that cannot be undone                       | exec, os_package |
| `Outputs`     | files written from the whole manifest               | env, package |
| `Scheduling`  | how the scheduler runs its items                    | file, env, apply |
| `Rechecked`   | that the status planning read still holds, cheaply  | file |
| `Proven`      | the paths whose `lstat` proves an unchanged status   | file, env |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from syslua.errors import Source
    from syslua.manifest.model import Item, Manifest
    from syslua.manifest.schema import TypeSchema
    from syslua.paths import Paths
    from syslua.resources.base import (
        Applied,
        Context,
        Decision,
        Removal,
        SnapshotContext,
        TakeBack,
        UndoContext,
    )
    from syslua.state.records import KindRecord, Original, PathAt, PathState
    from syslua.state.store import Store

S = TypeVar("S")


class Kind(Protocol[S]):
    """The core every kind implements. `S` is what its `status` reads."""

    name: str
    schema: TypeSchema  # what a declaration of the kind accepts, and the rules of its items

    def label(self, item: Item) -> str:
        """How plans and reports name the item (`~/.vimrc`, `ripgrep@14.1.0`)."""
        ...

    def status(self, item: Item, ctx: Context) -> S:
        """What the machine has of the item now; never changes anything."""
        ...

    def decide(self, item: Item, status: S, ctx: Context, triggered: bool = False) -> Decision:
        """What converging the item takes, and why (`triggered`: a subscribed item changed)."""
        ...

    def apply(self, item: Item, decision: Decision, planned: S | None, ctx: Context) -> Applied:
        """Act on `decision` through the provider, journaling first; returns what it
        did. `planned` is the status the plan read for the item (None: not planned)."""
        ...

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        """None when the item reached its desired state, else the reason it did not."""
        ...


# -- capabilities --------------------------------------------------------------


class Journaled(Protocol):
    """A kind whose items are paths: their previous state is journaled before
    they change, and what was there before syslua is kept as the original."""

    def key_label(self, key: str) -> str:
        """How an item is named from its key alone (removals, drift, snapshot diffs)."""
        ...

    def managed_path(self, item: Item) -> str | None:
        """The path whose original syslua takes over and restores on removal."""
        ...

    def touched_paths(self, item: Item, manifest: Manifest | None, planned: object) -> list[str]:
        """Paths a planned change will touch, parents first (recorded before
        acting); `planned` is the item's status when it was planned."""
        ...

    def original(self, item: Item, prev: PathState, records: list[PathAt]) -> Original | None:
        """What to keep of the managed path's previous state when first taking it over."""
        ...

    def removal_paths(self, item: Item) -> list[str]:
        """Paths removing the item will touch (recorded before acting)."""
        ...


class Removable(Protocol):
    """A kind that does something when an item is no longer declared."""

    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        """How the plan describes removing the item (`will remove (REASON)`);
        `recorded`: what the current snapshot recorded for it (may be empty)."""
        ...

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        """Remove the item. `original`: what it took over; `state`: what the
        current snapshot recorded for it."""
        ...


class Undoes(Protocol):
    """A kind that writes journal records of its own (`Context.note`) and undoes them."""

    def undo(self, record: KindRecord, uctx: UndoContext) -> None: ...

    def after_undo(self, uctx: UndoContext) -> None:
        """Called once after every record of an undo run was undone, for a kind
        whose records wait for older ones (a service restarts once the config
        it watches is back). Nothing by default."""
        return None


class Recorded(Protocol):
    """A kind whose snapshots keep more than the declaration, and what they need of the store."""

    def snapshot_state(self, item: Item, sctx: SnapshotContext) -> dict[str, Any]:
        """What the snapshot keeps of the item beyond its declaration."""
        ...

    def materialise(
        self, item: Item, state: Mapping[str, Any], store: Store, snapshot: str
    ) -> Item:
        """The item as snapshot `snapshot` recorded it, runnable from the store alone."""
        ...

    def blobs(self, state: Mapping[str, Any]) -> set[str]:
        """The store objects `state` (its `snapshot_state`) needs: gc keeps them."""
        ...

    def trees(self, state: Mapping[str, Any]) -> set[str]:
        """The store trees `state` needs: gc keeps them."""
        ...


class Edited(Protocol):
    """A kind that tells what was changed by hand since the last apply."""

    def edited(self, item: Item, recorded: Mapping[str, Any], ctx: Context) -> str | None:
        """What was changed by hand since the last apply, which recorded `recorded`
        (its `snapshot_state`); None when nothing was. `item` is as that apply declared it."""
        ...

    def edit_diff(self, item: Item, recorded: Mapping[str, Any], ctx: Context) -> str | None:
        """The edit `edited` found, as a diff from what the last apply left (`sys plan --diff`)."""
        ...


class TakesBack(Protocol):
    """A kind whose edits `sys add` takes back into the config (and `--force` keeps)."""

    def adopt(
        self, item: Item, recorded: Mapping[str, Any], live: PathState, store: Store
    ) -> dict[str, Any] | None:
        """The snapshot state recording `live` (what the journal captured at the
        managed path) as if the last apply had left it; None when it cannot."""
        ...

    def take_back(
        self,
        item: Item,
        path: str,
        where: str,
        recorded: Mapping[str, Any] | None,
        store: Store,
        *,
        force: bool = False,
        declared: Sequence[Source] = (),
        kept: bool = True,
    ) -> TakeBack:
        """How `sys add` takes the live `path` of `item` (declared at `where`,
        `declared` the sources) back; `force`: even over a source that changed
        since the last apply (`recorded`); `kept`: a snapshot keeps what it
        overwrites (False: there is none yet)."""
        ...

    def take_in(
        self, path: str, dest: str, source: str, encrypt_for: Sequence[str] = ()
    ) -> TakeBack:
        """`sys add` of a path nothing manages: copy it to `dest` and say how to
        declare it; with `encrypt_for`, encrypted with age for those recipients."""
        ...


class Drifts(Protocol):
    """A kind that tells how the machine no longer matches a snapshot (`sys status`)."""

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        """(kind, detail) when the machine no longer matches the item, else None."""
        ...


class Container(Protocol):
    """A kind whose items may fold their members into one plan line (a tree
    and its files). Any item may have members, items whose `parent` is its
    id (an apply's children too): they run first, and the item reads what
    they did from `Context.members` when it runs."""

    def folds(self, item: Item) -> bool:
        """Whether the plan shows the item's members under it, as one line."""
        ...

    def group_note(
        self, root: Item, decision: Decision, members: Sequence[tuple[Item, Decision]]
    ) -> str:
        """The plan's summary of a folded container and its members' decisions."""
        ...


class Ordered(Protocol):
    """A kind whose items imply edges of the DAG beyond `depends_on` and `subscribe`."""

    def provides(self, item: Item) -> Iterable[str]:
        """Capabilities (`bin:rg`, `output:<hash>`) that items requiring them wait for."""
        ...

    def requires(self, item: Item) -> Iterable[str]:
        """Capabilities this item needs: an edge from whichever item provides each."""
        ...

    def predecessors(self, item: Item, manifest: Manifest) -> Iterable[str]:
        """Ids of items that must finish first, found from the item itself."""
        ...

    def why_before(self, item: Item, before: str, manifest: Manifest) -> str:
        """Why `before`, one of `predecessors(item)`, must finish first, in a few
        words (`sys graph` labels the edge with it)."""
        return "ordered by its kind"


class Explained(Protocol):
    """A kind whose plan lines say more than the decision."""

    def diff(self, item: Item, status: Any, ctx: Context) -> str | None:
        """The change as a diff (`sys plan --diff`), when it has one."""
        ...

    def notes(self, item: Item, status: Any) -> list[str]:
        """Remarks shown beside the item's line, in parentheses."""
        ...

    def takes_over(self, item: Item, status: Any) -> bool:
        """Whether a first change of the item replaces something that exists now."""
        ...

    def created_parents(self, item: Item, status: Any) -> list[tuple[str, str]]:
        """What a change creates on its way that no item declares (missing parent
        directories): (key, subject) pairs, outermost first."""
        ...


class Irreversible(Protocol):
    """A kind some of whose changes cannot be undone (the plan marks them)."""

    def irreversible(self, item: Item, decision: Decision) -> bool | str:
        """True, or why as the plan says it, when running `decision` cannot be undone."""
        ...


class Outputs(Protocol):
    """A kind that writes files from the whole manifest after the items ran
    (the env scripts), or tidies up after an apply is recorded (profiles)."""

    def outputs(self, paths: Paths) -> list[Path]:
        """The files it writes."""
        ...

    def write_outputs(self, manifest: Manifest, paths: Paths, before_change: Any) -> str | None:
        """Write `outputs` (`before_change(path)` first); returns a note for the user."""
        ...

    def after_commit(self, paths: Paths) -> None:
        """Tidy up once an apply is recorded."""
        ...


class Scheduling(Protocol):
    """How the scheduler treats a kind's items, when not as a plain item on the DAG."""

    # False: its items are values compared with the previous snapshot and
    # written by its outputs, never run one by one (env variables).
    in_dag: bool
    # Runs in the scheduler's own thread: quick local work (a file's few
    # system calls) that a worker would only slow down with GIL hand-offs.
    inline: bool
    # Runs even when its own members failed, to report on them (apply).
    aggregates: bool


class Rechecked(Protocol):
    """A kind whose planned status is reused when its item runs, once a cheap
    check (a file's one `lstat`) finds that nothing it read has changed since:
    the item is not read twice."""

    def recheck(self, item: Item, planned: Any, ctx: Context) -> Any | None:
        """`planned` (what `status` read while planning) when it still holds
        and may stand for a new `status`; None: read the status again."""
        ...


# A path an unchanged status depended on: the path, how it is compared
# (`syslua.state.proof`: LSTAT, STAT, SHAPE, SHAPE_STAT or ABSENT) and, when
# the status read it, what `lstat` gave then (packed as `stat_index.key`).
Claim = tuple[str, int, "bytes | None"]


class Proven(Protocol):
    """A kind whose unchanged status is proven by the state of some paths:
    while each of them compares equal (`state/proof.py`), a status read again
    would be the same, so a run of the same config against the same snapshot
    can say "no changes" without planning (`syslua/quick.py`)."""

    def proof(self, item: Item, status: Any) -> Iterable[Claim] | None:
        """The paths the unchanged `status` of `item` depended on; None when
        paths cannot prove it (a secret, a folded directory...)."""
        ...
