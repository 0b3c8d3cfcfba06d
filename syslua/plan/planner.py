"""Compare the manifest with the current snapshot and the live machine, read-only.

Steps:
1. Build the DAG (cycles are errors) and its waves.
2. Walk the waves in order; for each item read its status and decide, so a
   subscriber sees whether its targets would change, and an apply item sees
   its children. Exec guards run here, as the seed says they do in noop.
3. Compare items of types outside the DAG (env variables) with the
   previous snapshot's.
4. List items of the previous snapshot that are no longer declared: they
   will be removed, in reverse dependency order, an item's children (a
   tree's members) before it.
5. Of the items that would be changed or removed, mark those edited by hand
   since the last apply (asking each kind, `Edited.edited`): an apply
   would overwrite the edit.
6. Group: an item that is part of another (a tree's member) is shown under
   it, and the group's line says what its members do (`group_note`).

Directories that a change creates on its way and that no item declares
(missing parents) get an entry of their own, before the item's, once; they
are not items, and are not counted.

Entries speak of the future (`will create`, `will update (content changed)`,
`will remove (the original is restored)`: `Decision.plan_line`); an item of a
noop child keeps CCM's noop message (`Would have created the file`), as
`sys apply --noop` shows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from syslua.manifest.model import Item, Manifest
from syslua.plan.dag import CycleError, Dag, graph_items, in_dag
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.base import (
    CREATE,
    FAIL,
    NONE,
    REMOVE,
    RUN,
    SKIP,
    UPDATE,
    Context,
    Decision,
)
from syslua.resources.kind import (
    Claim,
    Container,
    Edited,
    Explained,
    Irreversible,
    Journaled,
    Kind,
    Proven,
    Removable,
)
from syslua.resources.placeholders import RENDERED, Deferred, Unresolved, deferred

EDITED = "edited since the last apply"
RESTORED = "the original is restored"
NOT_DECLARED = "no longer declared"


# Plain classes, not dataclasses: a dataclass costs every start half a
# millisecond or more to generate its methods, and nothing compares entries
# or prints them. Entries are read-only: `replace` makes a changed copy.


class Entry:
    """One line of the plan: an item (or a removal), its decision and remarks."""

    __slots__ = (
        "id",
        "type",
        "label",
        "decision",
        "diff",
        "irreversible",
        "takeover",
        "noop",
        "edited",
        "edit_diff",
        "notes",
        "group",
        "note",
        "subject",
        "created_parent",
        "status",
    )

    def __init__(
        self,
        id: str,
        type: str,
        label: str,
        decision: Decision,
        diff: str | None = None,
        # An exec that will run and declares no `undo` (True), or why a change
        # cannot be undone, as its type says it (an OS package the archive lost).
        irreversible: bool | str = False,
        takeover: bool = False,  # a path syslua manages for the first time, which exists now
        noop: bool = False,  # in a noop child: it would change, but the apply will not change it
        edited: str
        | None = None,  # what was edited by hand since the last apply, which this overwrites
        edit_diff: str
        | None = None,  # the edit, from what the last apply left to what is there now
        notes: tuple[str, ...] = (),  # the type's remarks, shown in parentheses
        group: str | None = None,  # the id of the item this one is part of (a tree's member)
        note: str | None = None,  # shown in parentheses after the subject, instead of the message
        subject: str | None = None,  # how the line names it, when not "<type> <label>"
        # A directory created on the way to an item (not an item: not counted).
        created_parent: bool = False,
        # What the kind's `status` read while planning, for the apply of an
        # entry that runs (`Kind.apply`'s `planned`); None for the others.
        status: Any = None,
    ) -> None:
        self.id = id
        self.type = type
        self.label = label
        self.decision = decision
        self.diff = diff
        self.irreversible = irreversible
        self.takeover = takeover
        self.noop = noop
        self.edited = edited
        self.edit_diff = edit_diff
        self.notes = notes
        self.group = group
        self.note = note
        self.subject = subject
        self.created_parent = created_parent
        self.status = status

    def replace(self, **changes: Any) -> Entry:
        """A copy with `changes` made (what `dataclasses.replace` does for a dataclass)."""
        values = {name: getattr(self, name) for name in Entry.__slots__}
        values.update(changes)
        return Entry(**values)

    @property
    def symbol(self) -> str:
        return "!" if self.edited else self.decision.symbol

    @property
    def attention(self) -> bool:
        """A member that gets its own line even when its group is shown as one:
        it cannot be applied, or it would overwrite an edit."""
        return self.symbol == "!"

    @property
    def message(self) -> str:
        """The line shown to the user: an edit first, then what the apply will do
        (what it would have done, for an item of a noop child)."""
        said = self.decision.message if self.noop else self.decision.plan_line
        if self.edited:
            return f"{EDITED} ({self.edited}); {said}"
        return said

    @property
    def runs(self) -> bool:
        """Whether `sys apply` acts on it: it changes, or fails trying."""
        return (self.decision.changes or self.decision.action == FAIL) and not (
            self.noop or self.created_parent
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "label": self.label,
            "action": self.decision.action,
            "symbol": self.symbol,
            "reason": EDITED if self.edited else self.decision.reason,
            "message": self.message,
        }
        if self.decision.noop_message:
            d["noop_message"] = self.decision.noop_message
        if self.diff is not None:
            d["diff"] = self.diff
        if self.irreversible:
            d["irreversible"] = True
            if isinstance(self.irreversible, str):
                d["irreversible_reason"] = self.irreversible
        if self.takeover:
            d["takeover"] = True
        if self.noop:
            d["noop"] = True
        if self.edited:
            d["edited"] = self.edited
            d["change_reason"] = self.decision.reason
        if self.edit_diff is not None:
            d["edit_diff"] = self.edit_diff
        if self.notes:
            d["notes"] = list(self.notes)
        if self.group is not None:
            d["group"] = self.group
        if self.note is not None:
            d["note"] = self.note
        if self.subject is not None:
            d["subject"] = self.subject
        return d


class Plan:
    """The decisions for a manifest against the machine, in execution order."""

    def __init__(
        self,
        manifest: Manifest,
        entries: list[Entry],  # declared items, in execution order
        removals: list[Entry],  # no longer declared, in removal order
        waves: list[list[str]],
        labels: dict[str, str] | None = None,
        dag: Dag | None = None,
        # group id -> its members' entries (declared, then removed), in plan order
        groups: dict[str, list[Entry]] | None = None,
        # Items outside the DAG (env variables), also among `entries`: compared,
        # never run; the apply reports them once their outputs are written.
        values: list[Entry] | None = None,
    ) -> None:
        self.manifest = manifest
        self.entries = entries
        self.removals = removals
        self.waves = waves
        self.labels: dict[str, str] = {} if labels is None else labels
        self.dag = dag
        self.groups: dict[str, list[Entry]] = {} if groups is None else groups
        self.values: list[Entry] = [] if values is None else values
        # Whether the manifest declares exactly what the current snapshot's
        # does (None: there is none). Where JSON tells 1, 1.0 and true apart,
        # they compare equal here: what differs only so is no change.
        self.same_as_previous: bool | None = None
        # What proves each unchanged status (`make_plan(prove=True)`); None:
        # not gathered, or some status paths cannot prove.
        self.claims: list[Claim] | None = None
        # Edited items `sys apply --overwrite PATH` leaves as they are (the
        # apply sets it): counted as `held`, never as a change.
        self.held: frozenset[str] = frozenset()

    def take_statuses(self) -> dict[str, Any]:
        """What planning read of each entry that runs (`Entry.status`), by id,
        handed over to the run: the entries hold them no more, so the run
        drops each once its item has run (10,000 statuses are not held
        while the snapshot is recorded)."""
        taken = {}
        for e in self.entries:
            if e.status is not None:
                taken[e.id], e.status = e.status, None
        return taken

    @property
    def counted(self) -> list[Entry]:
        """The entries the plan counts, in order: every item once, a tree as
        one (its members are shown under it, with -v, and not counted), and
        no parent directory (shown, never counted)."""
        return [e for e in self.all_entries if e.group is None and not e.created_parent]

    @property
    def members(self) -> frozenset[str]:
        """The ids of the items shown under another (a tree's members): the
        apply reports them under -v, without a number, and counts them nowhere."""
        return frozenset(e.id for e in self.all_entries if e.group is not None)

    @property
    def numbered(self) -> list[str]:
        """The ids the apply numbers (`[n/N]`), in plan order: the counted
        entries that change, would change (noop) or cannot be applied;
        `len(numbered)` is the plan's create + update + run + remove + fail
        + noop, and `held` (left as they are) are not among them."""
        return [
            e.id
            for e in self.counted
            if (e.decision.changes or e.decision.action == FAIL) and e.id not in self.held
        ]

    @property
    def size(self) -> int:
        """How many items the apply numbers (its `[n/N]`): see `numbered`."""
        return len(self.numbered)

    @property
    def all_entries(self) -> list[Entry]:
        return self.entries + self.removals

    @property
    def has_changes(self) -> bool:
        """Whether the apply would change anything (noop children never do)."""
        return any(e.decision.changes and not e.noop for e in self.all_entries)

    @property
    def failures(self) -> list[Entry]:
        return [e for e in self.all_entries if e.decision.action == FAIL]

    @property
    def edited(self) -> list[Entry]:
        """Entries whose change would overwrite an edit made since the last apply."""
        return [e for e in self.all_entries if e.edited]

    def counts(self) -> dict[str, int]:
        out = {
            "create": 0,
            "update": 0,
            "run": 0,
            "remove": 0,
            "unchanged": 0,
            "fail": 0,
            "noop": 0,
            "edited": 0,
            "held": 0,
        }
        # `edited` and `held` count paths (a tree's members too), as the
        # notes and refusals that name them do; the others count items.
        out["edited"] = len(self.edited)
        out["held"] = len(self.held)
        for e in self.counted:
            a = e.decision.action
            if e.id in self.held:
                continue
            if e.noop and e.decision.changes:
                out["noop"] += 1
            elif a == CREATE:
                out["create"] += 1
            elif a == RUN:
                out["run"] += 1
            elif a == UPDATE:
                out["update"] += 1
            elif a == REMOVE:
                out["remove"] += 1
            elif a == FAIL:
                out["fail"] += 1
            else:
                out["unchanged"] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "changes": self.has_changes,
            "counts": self.counts(),
            "items": [e.to_dict() for e in self.entries],
            "removals": [e.to_dict() for e in self.removals],
            "waves": self.waves,
        }


def label(item: Item) -> str:
    return get_type(item.type).label(item)


def key_label(kind: Kind[Any], key: str) -> str:
    """How an item of `kind` is named from its key alone (removals, parents, drift)."""
    paths = capability(kind, Journaled)
    return paths.key_label(key) if paths is not None else key


def make_plan(
    manifest: Manifest,
    ctx: Context,
    previous: Manifest | None = None,
    *,
    with_diff: bool = False,
    known: Manifest | None = None,
    order: Sequence[Sequence[int]] | None = None,
    prove: bool = False,
) -> Plan:
    """`known`: what syslua managed before, when there is no current snapshot
    (after self-healing): its files are not taken over again. `order`: the
    waves the current snapshot recorded for `previous` (positions in its
    items); when the manifest declares exactly what `previous` does, they
    are its waves, and the graph is built only if the apply runs something.
    `prove`: gather what proves each unchanged status (`plan.claims`)."""
    same = previous.items == manifest.items if previous is not None else None
    waves = recorded_waves(manifest, order) if same and order else None
    dag = None
    if waves is None:
        dag = Dag.from_manifest(manifest)
        waves = dag.waves()
    if ctx.manifest is not manifest or ctx.previous is not previous:
        ctx = ctx.replace(manifest=manifest, previous=previous)
    entries: list[Entry] = []
    announced: set[str] = set()  # parents already listed
    baseline = previous if previous is not None else known
    claims = _Claims() if prove else None
    for wave in waves:
        for ident in wave:
            item = manifest.get(ident)
            assert item is not None
            entry, status = _plan_item(item, ctx, baseline, with_diff=with_diff)
            if entry.decision.changes and status is not None:
                entries.extend(_parents(item, status, announced))
            entries.append(entry)
            if claims is not None:
                claims.add(item, entry, status)
    values = _plan_values(manifest, previous, ctx, claims)
    entries.extend(values)
    removals = plan_removals(manifest, previous, ctx, with_diff=with_diff)
    labels = {e.id: e.label for e in entries if e.id in manifest}
    labels.update((i.id, label(i)) for i in manifest if i.id not in labels)
    plan = Plan(manifest, entries, removals, waves, labels, dag, values=values)
    plan.same_as_previous = same
    plan.claims = claims.found if claims is not None and not removals else None
    _group(plan, previous)
    return plan


def recorded_waves(manifest: Manifest, order: Sequence[Sequence[int]]) -> list[list[str]] | None:
    """`order` as waves of ids of `manifest` (which declares what the snapshot
    that recorded it does); None when it does not name every item of the
    graph once."""
    items = manifest.items
    try:
        waves = [[items[n].id for n in wave] for wave in order]
    except (IndexError, TypeError):
        return None
    named = {i for wave in waves for i in wave}
    in_dag = {i.id for i in graph_items(manifest)}
    if named != in_dag or sum(len(w) for w in waves) != len(named):
        return None
    return waves


def recorded_order(plan: Plan, snapshot_manifest: Manifest) -> list[list[int]] | None:
    """The plan's waves as positions in `snapshot_manifest`'s items, for its
    snapshot (None when an id is not among them)."""
    where = {item.id: n for n, item in enumerate(snapshot_manifest.items)}
    try:
        return [[where[i] for i in wave] for wave in plan.waves]
    except KeyError:
        return None


def _plan_item(
    item: Item, ctx: Context, previous: Manifest | None, *, with_diff: bool = False
) -> tuple[Entry, Any]:
    """Status and decision for one item, noted in the run's outcomes for its
    subscribers and containers; the entry of an item that runs keeps the
    status it read, for its apply."""
    kind = get_type(item.type)
    item, status, decision = _decide(kind, item, ctx)
    if decision.changes:
        # Items of a noop child never change for real: like the executor,
        # they only trigger subscribers that are noop themselves.
        ctx.outcomes.mark_changed(item.id, noop=item.noop)
    if decision.action == FAIL:
        ctx.outcomes.mark_failed(item.id)
    edited, edit_diff = (
        _edit(item.id, previous, ctx, with_diff)
        if decision.changes and not item.noop
        else (None, None)
    )
    irreversible = capability(kind, Irreversible)
    diff, takeover, notes = _explain(kind, item, status, decision, ctx, previous, with_diff)
    runs = (decision.changes or decision.action == FAIL) and not item.noop
    entry = Entry(
        item.id,
        item.type,
        kind.label(item),
        decision,
        diff,
        irreversible.irreversible(item, decision) if irreversible else False,
        takeover,
        item.noop,
        edited,
        edit_diff,
        notes=notes,
        group=_group_of(item, ctx.manifest),
        status=status if runs else None,
    )
    return entry, status


def _decide(kind: Kind[Any], item: Item, ctx: Context) -> tuple[Item, Any, Decision]:
    """(the item with its placeholders resolved, its status, its decision)."""
    if item.health_check_only:
        return item, None, Decision(SKIP, "health checks only")
    try:
        if ctx.resolver is not None:
            resolver = ctx.resolver
            if resolver.active and deferred(item) and ctx.outcomes.pending(_before(item, ctx)):
                # a CCM template reading files that what runs before it may change
                raise Deferred(RENDERED)
            item = resolver.resolve_item(item)
        status = kind.status(item, ctx)
        triggered = ctx.outcomes.triggered(item.get("subscribe", ()), item.noop)
        return item, status, kind.decide(item, status, ctx, triggered)
    except Deferred:
        return item, None, Decision(UPDATE, RENDERED, "Would have changed")
    except Unresolved as e:
        return item, None, Decision(UPDATE, f"{e}; resolved when it runs", "Would have changed")


_ORDERING = ("after", "depends_on", "subscribe")


def _before(item: Item, ctx: Context) -> set[str]:
    """The items that run before `item`: what it is ordered after, depends on
    or subscribes to, and theirs in turn."""
    manifest = ctx.manifest
    seen: set[str] = set()
    todo = [item]
    while todo:
        current = todo.pop()
        for ident in (i for prop in _ORDERING for i in current.get(prop, ())):
            if ident not in seen:
                seen.add(ident)
                found = manifest.get(ident) if manifest is not None else None
                if found is not None:
                    todo.append(found)
    return seen


def _explain(
    kind: Kind[Any],
    item: Item,
    status: Any,
    decision: Decision,
    ctx: Context,
    previous: Manifest | None,
    with_diff: bool,
) -> tuple[str | None, bool, tuple[str, ...]]:
    """What the item's kind says beyond the decision (`Explained`): the diff,
    whether it takes over what exists, its notes. All need what status read."""
    explained = capability(kind, Explained) if status is not None else None
    if explained is None:
        return None, False, ()
    changes = decision.changes
    diff = explained.diff(item, status, ctx) if with_diff and changes else None
    new = previous is None or item.id not in previous
    takeover = bool(changes and new and explained.takes_over(item, status))
    return diff, takeover, tuple(explained.notes(item, status))


def _group_of(item: Item, manifest: Manifest | None) -> str | None:
    """The container the plan shows the item under: its `parent`, when that
    folds its members into one line (a tree and its files)."""
    if item.parent is None or manifest is None:
        return None
    parent = manifest.get(item.parent)
    if parent is None:
        return None
    container = capability(get_type(parent.type), Container)
    return parent.id if container is not None and container.folds(parent) else None


def _parents(item: Item, status: Any, announced: set[str]) -> list[Entry]:
    """Entries for what the item creates on its way (missing parent
    directories no item declares), each listed once."""
    kind = get_type(item.type)
    explained = capability(kind, Explained)
    if explained is None:
        return []
    out = []
    for key, subject in explained.created_parents(item, status):
        if key in announced:
            continue
        announced.add(key)
        out.append(
            Entry(
                f"{item.type}#{key}",
                item.type,
                key_label(kind, key),
                Decision(CREATE, f"parent of {kind.label(item)}"),
                noop=item.noop,
                note="parent",
                subject=subject,
                created_parent=True,
            )
        )
    return out


def _group(plan: Plan, previous: Manifest | None) -> None:
    """Gather each group's members (declared and removed) and give the
    group's own entry its note. Linear: one pass over the entries."""
    groups: dict[str, list[Entry]] = {}
    for e in plan.entries + plan.removals:
        if e.group is not None:
            groups.setdefault(e.group, []).append(e)
    if not groups:
        return
    plan.groups = groups
    for entries in (plan.entries, plan.removals):
        for n, e in enumerate(entries):
            members = groups.get(e.id)
            if members is None:
                continue
            source = plan.manifest if e.decision.action != REMOVE else previous
            root = source.get(e.id) if source is not None else None
            if root is None:
                continue
            pairs = []
            for m in members:
                it = plan.manifest.get(m.id) if m.decision.action != REMOVE else None
                if it is None and previous is not None:
                    it = previous.get(m.id)
                if it is not None:
                    pairs.append((it, m.decision))
            kind = get_type(root.type)
            container = capability(kind, Container)
            assert container is not None  # only a container folds members
            entries[n] = e.replace(
                note=container.group_note(root, e.decision, pairs),
                subject=f"{kind.name} {kind.label(root)}",
                takeover=False,
            )


def _edit(
    ident: str, previous: Manifest | None, ctx: Context, with_diff: bool
) -> tuple[str | None, str | None]:
    """What was edited by hand at an item's path since the last apply (which
    declared it as `previous` has it, and recorded `ctx.last_applied` for it),
    and the edit as a diff when asked."""
    if ctx.last_applied is None or previous is None:
        return None, None
    before, recorded = previous.get(ident), ctx.last_applied.get(ident)
    if before is None or recorded is None:
        return None, None
    kind = capability(get_type(before.type), Edited)
    if kind is None:
        return None, None
    edited = kind.edited(before, recorded, ctx)
    if edited is None:
        return None, None
    return edited, kind.edit_diff(before, recorded, ctx) if with_diff else None


def removal(item: Item, recorded: Mapping[str, Any]) -> Decision:
    """How removing an item no longer declared is planned, as its kind says."""
    kind = capability(get_type(item.type), Removable)
    return kind.removal(item, recorded) if kind is not None else Decision(REMOVE, NOT_DECLARED)


def _plan_values(
    manifest: Manifest, previous: Manifest | None, ctx: Context, claims: _Claims | None = None
) -> list[Entry]:
    """Items of kinds outside the DAG: their status is the previous snapshot's item."""
    out = []
    for item in _outside_dag(manifest):
        kind = get_type(item.type)
        status = kind.status(item, ctx)
        decision = kind.decide(item, status, ctx)
        out.append(Entry(item.id, item.type, kind.label(item), decision, noop=item.noop))
        if claims is not None:
            claims.add(item, out[-1], status)
    if previous is not None:
        for item in _outside_dag(previous):
            if item.id not in manifest:
                kind = get_type(item.type)
                out.append(Entry(item.id, item.type, kind.label(item), removal(item, {})))
    return out


class _Claims:
    """What proves a plan's unchanged statuses (`Proven`), gathered while it
    is made; `found` becomes None at the first item paths cannot prove (one
    that changes, fails, is skipped, or of a kind without the capability)."""

    __slots__ = ("found",)

    def __init__(self) -> None:
        self.found: list[Claim] | None = []

    def add(self, item: Item, entry: Entry, status: Any) -> None:
        found = self.found
        if found is None:
            return
        if entry.decision.action != NONE or item.noop:
            self.found = None  # a change, a failure, a skipped item: nothing to prove
            return
        proven = capability(get_type(item.type), Proven)
        more = proven.proof(item, status) if proven is not None else None
        if more is None:
            self.found = None
        else:
            found.extend(more)


def _outside_dag(manifest: Manifest) -> list[Item]:
    """The items of kinds that do not run on the DAG (each kind asked once)."""
    outside = {t for t in {i.type for i in manifest} if not in_dag(get_type(t))}
    return [i for i in manifest if i.type in outside] if outside else []


def _children_first(items: list[Item]) -> list[Item]:
    """The same order, except that an item comes after every item whose
    `parent` it is (a tree's root after its members, which are inside it)."""
    ids = {i.id for i in items}
    waiting: dict[str, int] = {}
    for i in items:
        if i.parent in ids:
            waiting[i.parent] = waiting.get(i.parent, 0) + 1
    if not waiting:
        return items
    out: list[Item] = []
    held: dict[str, Item] = {}

    def emit(item: Item) -> None:
        out.append(item)
        p = item.parent
        if p is not None and p in waiting:
            waiting[p] -= 1
            if waiting[p] == 0 and p in held:
                emit(held.pop(p))

    for item in items:
        if waiting.get(item.id):
            held[item.id] = item
        else:
            emit(item)
    out.extend(held.values())
    return out


def plan_removals(
    manifest: Manifest,
    previous: Manifest | None,
    ctx: Context | None = None,
    *,
    with_diff: bool = False,
) -> list[Entry]:
    """Items of the previous snapshot that are gone, in reverse dependency order
    (with `ctx`, those whose removal would lose an edit made by hand are marked,
    and those whose removal restores an original, as `ctx.originals` has it, say so)."""
    if previous is None:
        return []
    gone = [i for i in previous if i.id not in manifest and in_dag(get_type(i.type))]
    if not gone:
        return []
    try:
        order = [x for wave in Dag.from_manifest(previous).waves() for x in wave]
    except CycleError:
        order = sorted(i.id for i in previous)
    rank = {ident: n for n, ident in enumerate(order)}
    gone.sort(key=lambda i: rank.get(i.id, -1), reverse=True)
    return [_removal_entry(item, previous, ctx, with_diff) for item in _children_first(gone)]


def _removal_entry(item: Item, previous: Manifest, ctx: Context | None, with_diff: bool) -> Entry:
    """The plan's line for removing `item`: its kind's decision, saying so
    when an original comes back, and the edit by hand it would lose."""
    edited, edit_diff = _edit(item.id, previous, ctx, with_diff) if ctx else (None, None)
    recorded = ctx.last_applied.get(item.id) if ctx is not None and ctx.last_applied else None
    decision = removal(item, recorded or {})
    original = ctx.originals.get(item.id) if ctx is not None and ctx.originals else None
    if decision.action == REMOVE and original is not None and original.exists:
        decision = decision.replace(reason=RESTORED)
    return Entry(
        item.id,
        item.type,
        key_label(get_type(item.type), item.key),
        decision,
        edited=edited,
        edit_diff=edit_diff,
        group=_group_of(item, previous),
    )
