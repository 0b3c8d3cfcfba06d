"""Steps 7 and 8 of an apply that succeeded: write the generated outputs, record, commit.

1. Write the generated outputs of the new manifest (the env scripts), and
   report the values they carry.
2. Record the edits the apply overwrote, if any, as a snapshot of their own
   (the current one with the edits adopted), so that rollback returns to them.
3. Record the apply's snapshot: per-item states (`Recorded.snapshot_state`,
   with what each item's apply did), the config files read, the scripts.
4. Sync every filesystem the apply wrote to (group commit: files were
   written without an fsync each), then write the commit record: from here
   crash recovery finishes the apply instead of undoing it.
5. Make the snapshot current, delete the journal, drop originals of items
   removed, and let kinds tidy up (profile generations no snapshot needs).

A failure before the commit record means the apply is not done: its
snapshot is forgotten and the caller rolls everything back.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syslua import secrets
from syslua.errors import StateError
from syslua.execute.outcome import ApplyOutcome
from syslua.execute.run import ApplyRun
from syslua.execute.take_back import replaced_homes
from syslua.fsutil import give_back_memory, sha256_file
from syslua.manifest.model import MANIFEST_VERSION, Item, Manifest
from syslua.plan.planner import Plan, recorded_order
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.base import SnapshotContext
from syslua.resources.kind import Journaled, Recorded, TakesBack
from syslua.resources.process import tail
from syslua.state.journal import capture
from syslua.state.originals import clear_unrestored
from syslua.state.records import Commit, ItemState, PathRecord, SnapshotNamed
from syslua.state.snapshots import ADD, Encoded, ItemStates, Snapshot, Snapshots, new_id
from syslua.state.store import Store

if TYPE_CHECKING:
    from syslua.state.journal import Journal

# Errors that mean the store cannot take more, not that a file to copy is gone.
STORE_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})


def record(run: ApplyRun, plan: Plan, journal: Journal, outcome: ApplyOutcome) -> bool:
    """Write the outputs, record the snapshot and commit (see the module's
    docstring). False when that failed before the commit (`outcome` says
    why; the caller rolls back). A failure after the commit record is an
    error: the next `sys` command finishes the commit."""
    stage = "the env scripts"
    mark = run.store.mark()  # what the store held before: forgotten on failure
    try:
        outcome.env_line = _write_outputs(run, journal)
        outcome.results += run.report_values(plan)
        stage, mark = "the snapshot", run.store.mark()
        snap = _snapshot(run, plan, journal, outcome)
        _commit(run, journal, snap, plan)
    except (OSError, StateError) as e:
        if journal.committed:  # only making it current failed: recovery finishes that
            why = (e.strerror or str(e)) if isinstance(e, OSError) else e.message
            raise StateError(
                f"the apply completed, but making its snapshot current failed: {why}",
                hint="The next `sys` command finishes recording it.",
            ) from None
        # Not recorded, so not done: undo it all in this same run.
        outcome.ok = False
        outcome.error = _failure(e, stage, run.paths.state)
        forget_snapshots(journal, run.inputs.snapshots, run.store, mark)
        return False
    except Exception:
        # A bug: the caller rolls back before it is reported, unless the
        # commit record is written (recovery then finishes the apply).
        if not journal.committed:
            outcome.ok = False
            forget_snapshots(journal, run.inputs.snapshots, run.store, mark)
        raise
    outcome.snapshot_id = snap.id
    try:
        _after_commit(run, journal, plan)
        run.inputs.save_stat_index(snap.id)  # the journal is gone: see `state/stat_index`
    except OSError as e:
        # The apply is done and recorded: what is left is tidying up.
        where = failed_path(e)
        run.reporter.note(
            f"Warning: the apply completed, but tidying up after it failed: "
            f"{e.strerror or e}{f': {where}' if where else ''}"
        )
    return True


def _failure(e: OSError | StateError, stage: str, state: Path) -> str:
    """What failed while recording, for the user: why, what was being
    written, and the path the error is about."""
    if isinstance(e, StateError):
        return f"{e.message} (while writing {stage} under {state})"
    where = failed_path(e)
    why = e.strerror or str(e)
    return f"{why} while writing {stage} under {state}" + (f": {where}" if where else "")


def failed_path(e: OSError) -> str | None:
    """The path an OS error is about, as the user knows it: the target of a
    rename (not the temp file renamed), the directory a temp file could not
    be made in, else the file named."""
    if e.filename2:
        return os.fsdecode(e.filename2)
    if not e.filename or not isinstance(e.filename, (str, bytes, os.PathLike)):
        return None
    name = os.fsdecode(e.filename)
    if ".syslua-" in os.path.basename(name):
        return os.path.dirname(name)
    return name


def _write_outputs(run: ApplyRun, journal: Journal) -> str | None:
    """Write every kind's generated outputs; returns the first note for the user."""
    notes = []
    for name, generator in run.generators.items():

        def before_change(path: str, name: str = name) -> None:
            journal.before_change(name, path)

        notes.append(generator.write_outputs(run.manifest, run.paths, before_change))
    return next((n for n in notes if n), None)


def _snapshot(run: ApplyRun, plan: Plan, journal: Journal, outcome: ApplyOutcome) -> Snapshot:
    """The apply's snapshot, saved (not current yet), and the journal told first."""
    current, store, options = run.inputs.current, run.store, run.options
    snapshots = run.inputs.snapshots
    parent = current.id if current else None
    kept = _keep_edits(run, plan, journal, snapshots)
    if kept is not None:
        parent = outcome.kept_edits = kept[0].id
        outcome.kept = kept[1]
    generated = run.generated
    counts = outcome.counts()
    snap = Snapshot(
        id=new_id(),
        time=time.time(),
        message=options.message or default_message(options.kind, counts, run.config),
        kind=options.kind,
        manifest=_manifest(run.snapshot_manifest),
        digest=run.snapshot_manifest.digest,
        config=run.config,
        parent=parent,
        inputs=_config_files(run),
        items=_item_states(run, plan, journal, outcome),
        originals={k: v for k, v in run.originals.items() if v.exists},
        env={f.name: store.put_file(f) for fs in generated.values() for f in fs if f.is_file()},
        counts=counts,
        order=recorded_order(plan, run.snapshot_manifest),
        pre=_pre(run, journal),
    )
    secrets.persist()  # the values it used, sealed: a rollback writes them again
    store.sync()
    give_back_memory()  # the blobs that waited to be packed: the snapshot is written next
    # Named before it exists: if the run dies before committing, recovery
    # deletes it, so history never lists an apply that was rolled back.
    journal.note(SnapshotNamed(snap.id))
    snapshots.save(snap, make_current=False)
    return snap


def _manifest(manifest: Manifest) -> dict[str, Any]:
    """`manifest.to_dict()` as the snapshot keeps it: its items are made plain
    dicts a batch at a time as the file is written (`Encoded`)."""
    return {"version": MANIFEST_VERSION, "items": Encoded(manifest.items, Item.to_dict)}


def _pre(run: ApplyRun, journal: Journal) -> dict[str, Any]:
    """The pre-apply record: the snapshot current before, what the journal
    recorded of every path; and, for a rollback that put back files a
    `sys add` wrote, what it wrote there, so a rollback of it puts them back
    in turn (as of a `sys add`: `rollback_target`)."""
    current = run.inputs.current
    pre: dict[str, Any] = {
        "previous": current.id if current else None,
        "records": Encoded(journal.path_records(), PathRecord.to_json),
    }
    if run.target.restores:
        wrote = {p: sha256_file(p) for p, _ in run.target.restores if os.path.isfile(p)}
        pre[ADD] = {"items": list(run.target.kept), "wrote": wrote}
        # A home path this rollback replaced (a link that became the file it
        # had replaced): a rollback of it makes it what it was again.
        before = {
            ident: (path, rec.prev)
            for ident, path in run.target.homes.items()
            if (rec := journal.by_path.get(path)) is not None
        }
        homes = replaced_homes(before, run.store)
        if homes:
            pre[ADD]["homes"] = homes
    return pre


def _item_states(run: ApplyRun, plan: Plan, journal: Journal, outcome: ApplyOutcome) -> ItemStates:
    """What the snapshot keeps of each item: its kind's state, with what its
    apply did, and the result of the command it ran."""
    current, previous = run.inputs.current, run.previous
    prev_items = current.items if current else {}
    changed = {e.id for e in plan.entries if e.decision.changes}
    by_id = {r.id: r for r in outcome.results}
    memo: dict[str, Any] = {}  # the kinds' cache while they record this snapshot
    items: dict[str, ItemState] = {}
    for item in run.manifest:
        result = by_id.get(item.id)
        kind = capability(get_type(item.type), Recorded)
        own: dict[str, Any] = {}
        if kind is not None:

            def declared_as_before(ident: str = item.id) -> bool:
                return previous is not None and previous.get(ident) == run.snapshot_manifest.get(
                    ident
                )

            own = kind.snapshot_state(
                item,
                SnapshotContext(
                    store=run.store,
                    records=journal.by_item.get(item.id, []),
                    previous=prev_items.get(item.id, {}),
                    changed=item.id in changed,
                    declared_as_before=declared_as_before,
                    manifest=run.manifest,
                    path_records=journal.by_path,
                    applied=result.applied if result is not None else None,
                    target=run.target.states.get(item.id),
                    others=prev_items,
                    memo=memo,
                ),
            )
        if item.id in run.held and item.id in prev_items:
            items[item.id] = prev_items[item.id]  # left as it is: still what the last apply left
            continue
        state = ItemState(own, result.status if result is not None else None)
        if result is not None and result.output is not None:
            state.exit_code = result.output.exit_code
            state.stdout = tail(result.output.stdout)  # the last OUTPUT_TAIL bytes
            state.stderr = tail(result.output.stderr)
        items[item.id] = state
    for ident in run.held:  # a removal left undone: still managed
        if ident not in items and ident in prev_items:
            items[ident] = prev_items[ident]
    return ItemStates(items)


def _config_files(run: ApplyRun) -> dict[str, str]:
    """The config files read (path -> blob), kept in the store with the snapshot."""
    inputs = dict(run.given_inputs or {})
    for path in run.manifest.inputs:
        try:
            inputs[path] = run.store.put_file(path)
        except OSError as e:
            if e.errno in STORE_FULL:
                raise  # the store cannot be written: the snapshot cannot be recorded
            continue  # a config file gone or unreadable since evaluation
    return inputs


def _commit(run: ApplyRun, journal: Journal, snap: Snapshot, plan: Plan) -> None:
    """Sync, write the commit record, and make `snap` current."""
    from syslua.state.journal import crash_point

    # Group commit: new content was written without an fsync per file. Once
    # the filesystems it went to are synced, the commit record may say so.
    crash_point("before-commit")
    journal.sync_touched(run.store.root)
    removed = [e.id for e in plan.removals if e.id not in run.held]
    journal.note(Commit(snap.id, tuple(removed)))
    crash_point("after-commit")
    run.inputs.snapshots.set_current(snap.id, snap)  # the index notes its config


def _after_commit(run: ApplyRun, journal: Journal, plan: Plan) -> None:
    """The journal is no longer needed; removed items gave their originals
    back, the machine has converged past any path an earlier failed undo
    left, and kinds tidy up."""
    journal.commit()
    registry = run.registry
    assert registry is not None
    gone = [e.id for e in plan.removals if e.id in registry and e.id not in run.held]
    if gone:
        registry.drop(gone)
        registry.save()
    clear_unrestored(run.paths.state)
    for generator in run.generators.values():
        generator.after_commit(run.paths)


def _keep_edits(
    run: ApplyRun, plan: Plan, journal: Journal, snapshots: Snapshots
) -> tuple[Snapshot, list[str]] | None:
    """Record the edits this apply overwrote as a snapshot before its own: the
    current snapshot, with each edited item's state adopting what the journal
    captured before the apply changed it. `sys rollback` then returns to it,
    and so brings the edits back. An edit `--overwrite` left as it is (held)
    is adopted as it is now: the rollback leaves it so, still an edit.
    Returns it and the labels of the edits it keeps (overwrote); None when
    there were none it could keep."""
    current = run.inputs.current
    if current is None or not plan.edited:
        return None
    previous = current.load_manifest()
    items: dict[str, ItemState] = dict(current.items)
    kept = []
    for entry in plan.edited:
        item = previous.get(entry.id)
        kind = get_type(item.type) if item is not None else None
        journaled = capability(kind, Journaled) if kind is not None else None
        takes_back = capability(kind, TakesBack) if kind is not None else None
        path = journaled.managed_path(item) if journaled is not None and item else None
        if path is None or takes_back is None or item is None:
            continue
        if entry.id in run.held:
            # Left as it is: the snapshot says so too, so that a rollback to it
            # leaves it as it is, still a hand edit.
            prev = capture(path, run.store)
        elif (captured := journal.by_path.get(path)) is not None:
            prev = captured.prev
        else:
            continue
        last_state: Mapping[str, Any] = current.items.get(entry.id) or {}
        state = takes_back.adopt(item, last_state, prev, run.store)
        if state is not None:
            items[entry.id] = ItemState.from_json(state)
            if entry.id not in run.held:
                kept.append(entry.id)
    if not kept:
        return None
    labels = [e.label for e in plan.edited if e.id in kept]
    shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
    verb = run.options.kind
    if verb == "apply":
        verb = "apply --overwrite" if run.options.overwrite else "apply --force"
    snap = current.amended(
        kind="edits", message=f"edits kept before {verb}: {shown}", items=items, records=[]
    )
    # Named before it exists, as the apply's own snapshot is: recovery of a run
    # that dies before committing deletes it.
    journal.note(SnapshotNamed(snap.id))
    snapshots.save(snap, make_current=False)
    return snap, labels


def forget_snapshots(journal: Journal, snapshots: Snapshots, store: Store, mark: int) -> None:
    """A snapshot that could not be recorded whole is not kept, nor the store
    objects written for it since `mark` (which gives the rollback room back;
    the undo records' objects were written before it)."""
    for rec in journal.records_for(""):
        if not isinstance(rec, SnapshotNamed):
            continue
        ident = rec.snapshot
        try:
            snapshots.path(ident).unlink(missing_ok=True)
            if ident in snapshots.index()["order"]:
                snapshots.delete(ident)
        except OSError:
            pass  # crash recovery deletes it, as the journal names it
    store.remove_since(mark)


def default_message(kind: str, counts: Mapping[str, int], config: str | None) -> str:
    what = f"{counts.get('changed', 0)} changed"
    if kind == "rollback":
        return f"rollback ({what})"
    if kind == "destroy":
        return f"destroy ({counts.get('changed', 0)} removed)"
    return f"apply {Path(config).name if config else ''} ({what})".replace("  ", " ")
