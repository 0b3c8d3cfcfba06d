"""Step 4 of an apply: begin the journal, before anything changes.

The journal is begun, and in one durable batch it records the previous
state of every path the plan will touch (a declared item's, a removed
item's, the generated outputs'); the originals of paths syslua takes over
for the first time reach the record of originals (their content is durable
in the store by then). From here on Ctrl-C or SIGTERM no longer ends the
command at once: it kills running commands and stops the run in order.
If any of this fails, nothing has changed: the journal and what was stored
for it are dropped, and the error says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from syslua import safe_fs
from syslua.errors import StateError
from syslua.execute.run import ApplyRun
from syslua.paths import Paths
from syslua.plan.planner import Plan
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.file_posix import unchanging
from syslua.resources.kind import Journaled
from syslua.state.records import ABSENT, Original, OriginalsAdded, PathAt, PathState

if TYPE_CHECKING:
    from syslua.manifest.model import Item, Manifest
    from syslua.state.journal import Journal
    from syslua.state.originals import Originals
    from syslua.state.store import Store


def begin(run: ApplyRun, plan: Plan) -> Journal:
    """The journal of this apply, with everything the plan will touch recorded."""
    from syslua.state.journal import Journal

    paths, store, registry = run.paths, run.store, run.registry
    assert registry is not None  # loaded before planning; only a read-only run goes without
    current = run.inputs.current
    mark = store.mark()
    run.options.stop.changing()  # before the journal exists: a signal no longer raises
    try:
        journal = Journal.begin(
            paths.journal,
            store,
            run.options.kind,
            current.id if current else None,
            run.snapshot_manifest.digest,
        )
    except OSError as e:
        raise keeping_failed(e, paths, paths.journal) from None
    where = paths.store  # where the originals go: their content first, then the records
    try:
        known = run.previous if run.previous is not None else run.inputs.known
        # Each missing parent looked at once, each directory walked once to
        # read what is there (`safe_fs.cached`).
        with unchanging(), safe_fs.cached():
            run.originals = _prepare(journal, plan, run.manifest, known, registry, store)
        for name, files in run.generated.items():
            journal.prepare(name, [str(p) for p in files])
        where = paths.journal
        journal.flush()
        # The originals of paths taken over for the first time reach the
        # record of originals (their blobs are durable now) before anything
        # changes; the journal names them, so a clean rollback forgets them.
        run.added = registry.add(run.originals)
        if run.added:
            journal.note(OriginalsAdded(tuple(run.added)))
            where = paths.state
            registry.save()
    except OSError as e:
        # Nothing has changed yet: drop the journal and what was stored for it.
        journal.abandon()
        store.remove_since(mark)
        registry.drop(run.added)
        raise keeping_failed(e, paths, where) from None
    return journal


def keeping_failed(e: OSError, paths: Paths, where: Path) -> StateError:
    """The error for an apply that could not record the originals (nothing changed)."""
    why = e.strerror or str(e)
    mine = tuple(f"{d}/" for d in (paths.store, paths.state, paths.cache))
    if e.filename and not str(e.filename).startswith(mine):
        return StateError(
            f"cannot read {e.filename} to keep it as an original: {why}",
            hint="Nothing was changed.",
        )
    return StateError(
        f"{why} while keeping the originals under {where}",
        hint="Nothing was changed. Make room there (or fix it) and run again.",
    )


def _prepare(
    journal: Journal,
    plan: Plan,
    manifest: Manifest,
    known: Manifest | None,
    registry: Originals,
    store: Store,
) -> dict[str, Original]:
    """Record what the plan will touch; return the originals of the declared
    items: those in the record of originals, and those syslua takes over now.

    `known` is the current snapshot's manifest or, when there is no current
    one (self-healing cleared it), the newest readable snapshot's: files it
    managed are not taken over again. A path in the record of originals is
    never taken over again either, whatever it holds now.
    """
    # Those of items no longer declared are restored by their removal here.
    originals = {i: o for i, o in registry.entries.items() if i in manifest}
    for entry in plan.entries:
        item = manifest.get(entry.id)
        kind = capability(get_type(item.type), Journaled) if item is not None else None
        if kind is None or item is None:
            continue
        new = (known is None or entry.id not in known) and entry.id not in originals
        original = _take_over(
            journal, kind, item, manifest, store, new, entry.decision.changes, entry.status
        )
        if original is not None:
            originals[entry.id] = original
    for entry in plan.removals:
        gone = known.get(entry.id) if known is not None else None
        journaled = capability(get_type(gone.type), Journaled) if gone is not None else None
        if gone is not None and journaled is not None:
            journal.prepare(entry.id, journaled.removal_paths(gone))
    return originals


def _take_over(
    journal: Journal,
    kind: Journaled,
    item: Item,
    manifest: Manifest,
    store: Store,
    new: bool,  # syslua does not manage the item's path yet
    changes: bool,  # the plan changes the item
    status: object,  # what planning found of it (the kind's own)
) -> Original | None:
    """Journal the paths a change of `item` touches; the original of a path
    syslua takes over now (None when it takes over none)."""
    from syslua.safe_fs import UnsafePath
    from syslua.state.journal import capture

    managed = kind.managed_path(item)
    if managed is None:
        return None
    if not changes:
        # Already as declared, but it existed before syslua: keep it, so that
        # removing the declaration later leaves it as it was.
        if not new or not os.path.lexists(managed):
            return None
        if not kind.touched_paths(item, manifest, status):
            return None  # what is there is not its own (seen through a fold it keeps)
        try:
            return capture(managed, store)
        except UnsafePath:
            return None  # not read through a link swapped in since planning: taken over later
    paths = kind.touched_paths(item, manifest, status)
    journal.prepare(item.id, paths)
    if not new:
        return None
    if managed not in journal.by_path:
        # Nothing of its own is there yet (a tree member behind a symlink its
        # tree replaces): recorded as it runs.
        return PathState(ABSENT)
    records = [PathAt(p, journal.by_path[p].prev) for p in paths if p in journal.by_path]
    return kind.original(item, journal.by_path[managed].prev, records)
