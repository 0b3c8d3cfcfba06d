"""Atomic apply: all of the manifest, or nothing (SPEC section 6).

Steps, in order (the caller holds the state lock and has recovered any
interrupted journal):
1. Plan against the current snapshot and the live machine; with no change
   and the same manifest, stop here (no new snapshot). A plan that would
   overwrite files edited by hand since the last apply stops here too,
   unless told to keep the edits (`--force`, rollback, destroy). A config
   that declares nothing while items are managed is refused unless
   `allow_empty`.
2. Begin the journal and record, in one durable batch, the previous state
   of every path the plan will touch (and of files syslua takes over).
   From here on Ctrl-C or SIGTERM (`options.stop`) no longer ends the
   command at once: it kills running commands and stops the run in order.
3. Remove items no longer declared, in reverse dependency order.
4. Run the DAG on the ready-queue scheduler; the first failure, or a stop
   request, stops new items from starting.
5. Write the generated outputs of the new manifest (the env scripts).
6. On failure or interruption: undo every item that may have changed the
   machine, in reverse completion order (so removed items come back in
   dependency order), and remove temp files syslua left beside the paths
   it touched; the previous snapshot stays current. If undoing fails, the
   current pointer is cleared so the next apply converges everything.
   Commands that completed and cannot be undone are listed in the outcome.
7. On success: record the edits it overwrote, if any, as a snapshot of
   their own (the current one with the edits adopted), so that rollback
   returns to them; then record the snapshot, sync every filesystem the
   apply wrote to (group commit: files are written without an fsync each),
   mark the journal committed, make the snapshot current, delete the
   journal, let the types tidy up (profile generations no snapshot needs).
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from syslua.errors import StateError, UsageError
from syslua.execute.item import FAILED, ItemResult, run_item, value_result
from syslua.execute.stop import Stop
from syslua.fsutil import remove_temp_leftovers
from syslua.manifest.model import Item, Manifest
from syslua.paths import Paths, abbreviate
from syslua.plan.dag import Dag
from syslua.plan.planner import Entry, Plan, make_plan, recorded_order
from syslua.resources import get as get_type
from syslua.resources import with_outputs
from syslua.resources.base import Context, RecordContext, ResourceType
from syslua.resources.placeholders import Resolver
from syslua.resources.process import Runner, tail
from syslua.state.originals import Originals, clear_unrestored, note_unrestored
from syslua.state.snapshots import Snapshot, Snapshots, new_id
from syslua.state.store import Store

if TYPE_CHECKING:
    from syslua.execute.undo import UndoReport
    from syslua.state.journal import Journal

# The scheduler, journal, removal and undo code is imported where it is used:
# an apply with nothing to do (the common re-apply) stops after planning and
# should not pay for loading it.


class Reporter(Protocol):
    def planned(self, plan: Plan) -> None: ...
    def started(self, ident: str, label: str) -> None: ...
    def finished(self, result: ItemResult) -> None: ...
    def rolling_back(self, interrupted: bool = False) -> None: ...
    def note(self, text: str) -> None: ...
    def output(self, ident: str, stream: str, line: str) -> None: ...
    def close(self) -> None: ...


@dataclass
class ApplyOptions:
    noop: bool = False
    health_check_only: bool = False
    jobs: int | None = None
    message: str | None = None
    kind: str = "apply"  # apply | rollback | destroy
    # Overwrite paths edited by hand since the last apply, keeping the edits in
    # a snapshot first; otherwise the apply refuses and changes nothing.
    keep_edits: bool = False
    verbose: bool = False
    on_output: Callable[[str, str, str], None] | None = None
    # What a running item does now (item id, "command" or "output", text), for a live display.
    on_activity: Callable[[str, str, str], None] | None = None
    progress: Callable[[str], Callable[[int, int | None], None]] | None = None
    max_unpack: int | None = None  # bytes an archive may unpack to; None: the default
    allow_empty: bool = True  # False: refuse to remove every managed item (`sys apply`)
    stop: Stop = field(default_factory=Stop)  # Ctrl-C / SIGTERM, set by the CLI's handler


@dataclass
class ApplyOutcome:
    plan: Plan | None
    results: list[ItemResult] = field(default_factory=list)
    ok: bool = True
    no_changes: bool = False
    rolled_back: bool = False
    undo: UndoReport | None = None
    restore_failed: bool = False
    snapshot_id: str | None = None
    env_line: str | None = None  # a generated output's note (the env scripts' first write)
    refused: list[Entry] = field(default_factory=list)  # edits it would have overwritten
    kept_edits: str | None = None  # the snapshot that keeps the edits it overwrote
    kept: list[str] = field(default_factory=list)  # labels of those edits
    error: str | None = None  # why a run without failed items failed (recording it)
    interrupted: bool = False  # stopped by Ctrl-C or SIGTERM, then rolled back
    # Items that completed and whose effects the rollback could not undo.
    not_undone: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[ItemResult]:
        return [r for r in self.results if r.status == FAILED]

    def counts(self) -> dict[str, int]:
        out = {"changed": 0, "unchanged": 0, "failed": 0, "skipped": 0, "noop": 0}
        for r in self.results:
            out[r.status] = out.get(r.status, 0) + 1
        return out


def apply_manifest(
    manifest: Manifest,
    paths: Paths,
    options: ApplyOptions,
    reporter: Reporter,
    *,
    config: str | None = None,
    record_manifest: Manifest | None = None,
    inputs: dict[str, str] | None = None,
) -> ApplyOutcome:
    """Converge the machine to `manifest`. `record_manifest` is what the snapshot
    records when it differs from what runs (a rollback runs store copies of sources)."""
    store = Store(paths.store)
    snapshots = Snapshots(paths)
    current, warning = snapshots.usable_current(like=manifest)
    for note in (snapshots.rebuilt, warning):
        if note:
            reporter.note(f"Warning: {note}")
    previous = current.load_manifest() if current else None
    runner = Runner()
    stop = options.stop
    stop.on_request(runner.cancel)  # Ctrl-C kills its running commands (one runner per command)

    resolver = Resolver(manifest, store, paths.state)
    planned: dict[str, Any] = {}  # what types saw while planning, for their checks when items run

    def context(noop: bool) -> Context:
        return Context(
            runner=runner,
            noop=noop,
            manifest=manifest,
            verbose=options.verbose,
            on_output=options.on_output,
            on_activity=options.on_activity,
            store=store,
            paths=paths,
            progress=options.progress,
            resolver=resolver,
            previous=previous,
            planned=planned,
            # A corrupt current snapshot's stand-in did not leave the machine as
            # it is: what differs from it is not an edit.
            last_applied=current.item_states() if current and not warning else None,
            max_unpack=options.max_unpack,
        )

    baseline = snapshots.latest_readable() if current is None else None
    known = baseline.load_manifest() if baseline is not None else None
    read_only = options.health_check_only or options.noop
    registry: Originals | None = None
    try:
        registry = _originals(paths, current or baseline)
    except StateError:
        if not read_only:
            raise  # before anything changes
    plan_ctx = context(True)
    plan_ctx.originals = registry.entries if registry is not None else None
    order = current.order if current is not None and not warning else None
    plan = make_plan(manifest, plan_ctx, previous, known=known, order=order)
    if (
        not options.allow_empty
        and not (options.noop or options.health_check_only)
        and len(manifest) == 0
        and previous is not None
        and len(previous) > 0
    ):
        n = len(previous)
        raise UsageError(
            f"Refusing to remove all {n} managed item{'s' if n != 1 else ''}: "
            "the config declares nothing. Pass --allow-empty if that is what you want."
        )
    if plan.edited and not options.keep_edits and not read_only:
        return ApplyOutcome(plan, ok=False, refused=plan.edited)
    reporter.planned(plan)
    # Built only to run items: a plan of the current snapshot's declarations
    # came in the order it recorded, with no graph.
    dag = plan.dag

    if read_only:
        from syslua.execute import scheduler

        ctx = context(True)
        results = scheduler.execute(
            dag or Dag.from_manifest(manifest),
            manifest,
            lambda ident: run_item(
                _item(manifest, ident), ctx, None, health_check_only=options.health_check_only
            ),
            jobs=options.jobs,
            stop_on_failure=False,
            on_start=lambda i: reporter.started(i, plan.labels.get(i, i)),
            on_finish=reporter.finished,
            should_stop=lambda: stop.requested,
        )
        results += _report_values(plan, reporter, options)
        return ApplyOutcome(plan, results, ok=all(r.ok for r in results))

    recorded = record_manifest or manifest
    generators = with_outputs()
    generated = {t.name: t.outputs(paths) for t in generators}
    if (
        not plan.has_changes
        and current is not None
        and previous is not None
        # The items compare equal (not the digest of their canonical JSON,
        # five times dearer): the plan compared them when it runs what it records.
        and (plan.same_as_previous if recorded is manifest else previous.items == recorded.items)
        and all(f.is_file() for files in generated.values() for f in files)
    ):
        return ApplyOutcome(
            plan, [], ok=True, no_changes=True, snapshot_id=current.id if current else None
        )

    from syslua.state.journal import Journal

    dag = dag or Dag.from_manifest(manifest)
    mark = store.mark()
    stop.changing()  # before the journal exists: a signal no longer raises
    try:
        journal = Journal.begin(
            paths.journal,
            store,
            {
                "kind": options.kind,
                "previous": current.id if current else None,
                "digest": recorded.digest,
            },
        )
    except OSError as e:
        raise _keeping_failed(e, paths, paths.journal) from None
    try:
        known_before = previous if previous is not None else known
        assert registry is not None  # loaded before planning; only a read-only run goes without
        added: list[str] = []
        where = paths.store  # where the originals go: their content first, then the records
        try:
            originals = _prepare(journal, plan, manifest, known_before, registry, store)
            for name, files in generated.items():
                journal.prepare(name, [str(p) for p in files])
            where = paths.journal
            journal.flush()
            # The originals of paths taken over for the first time reach the
            # record of originals (their blobs are durable now) before anything
            # changes; the journal names them, so a clean rollback forgets them.
            added = registry.add(originals)
            if added:
                journal.note({"op": "originals", "added": added})
                where = paths.state
                registry.save()
        except OSError as e:
            # Nothing has changed yet: drop the journal and what was stored for it.
            journal.abandon()
            store.remove_since(mark)
            if added:
                registry.drop(added)
            raise _keeping_failed(e, paths, where) from None
        outcome = _run(
            manifest,
            plan,
            dag,
            previous,
            current,
            journal,
            store,
            runner,
            options,
            reporter,
            registry.entries,
            context(False),
        )
        if stop.requested:
            # The last moment to stop: past it, the apply records and commits.
            outcome.ok, outcome.interrupted = False, True
        if outcome.ok:
            stage = "the env scripts"
            try:
                outcome.env_line = _write_outputs(generators, manifest, paths, journal)
                outcome.results += _report_values(plan, reporter, options)
                stage, recording = "the snapshot", store.mark()
                outcome.snapshot_id = _record(
                    recorded,
                    manifest,
                    plan,
                    outcome,
                    journal,
                    snapshots,
                    store,
                    current,
                    previous,
                    originals,
                    options,
                    config,
                    generated,
                    inputs,
                )
            except OSError as e:
                if journal.committed:  # only making it current failed: recovery finishes that
                    raise StateError(
                        f"the apply completed, but making its snapshot current failed: {_why(e)}",
                        hint="The next `sys` command finishes recording it.",
                    ) from None
                # Not recorded, so not done: undo it all in this same run.
                outcome.ok = False
                outcome.error = f"{_why(e)} while writing {stage} under {paths.state}"
                _forget_snapshot(journal, snapshots, store, recording)
            else:
                journal.commit()
                _committed(paths, registry, plan)
                for rtype in generators:
                    rtype.after_commit(paths)
                return outcome
        with stop.rolling_back():
            # The apply's runner may be cancelled; undo commands need their own.
            _roll_back(
                outcome, journal, store, Runner(), snapshots, reporter, paths, list(generated)
            )
        if outcome.undo is not None and outcome.undo.ok and added:
            registry.drop(added)  # the paths are as they were: syslua never managed them
            registry.save()
        return outcome
    finally:
        journal.close()


# Errors that mean the store cannot take more, not that a file to copy is gone.
STORE_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def _keeping_failed(e: OSError, paths: Paths, where: Path) -> StateError:
    """The error for an apply that could not record the originals (nothing changed)."""
    mine = tuple(f"{d}/" for d in (paths.store, paths.state, paths.cache))
    if e.filename and not str(e.filename).startswith(mine):
        return StateError(
            f"cannot read {e.filename} to keep it as an original: {_why(e)}",
            hint="Nothing was changed.",
        )
    return StateError(
        f"{_why(e)} while keeping the originals under {where}",
        hint="Nothing was changed. Make room there (or fix it) and run again.",
    )


def _forget_snapshot(journal: Journal, snapshots: Snapshots, store: Store, mark: int) -> None:
    """A snapshot that could not be recorded whole is not kept, nor the store
    objects written for it since `mark` (which gives the rollback room back;
    the undo records' objects were written before it)."""
    for rec in journal.records_for(""):
        if rec.get("op") != "snapshot":
            continue
        ident = rec["snapshot"]
        try:
            snapshots.path(ident).unlink(missing_ok=True)
            if ident in snapshots.index()["order"]:
                snapshots.delete(ident)
        except OSError:
            pass  # crash recovery deletes it, as the journal names it
    store.remove_since(mark)


def _item(manifest: Manifest, ident: str) -> Item:
    item = manifest.get(ident)
    assert item is not None
    return item


def _originals(paths: Paths, source: Snapshot | None) -> Originals:
    """The record of originals; a state dir from before it existed starts it
    from the originals its snapshot kept."""
    registry = Originals.load(paths.state)
    if not registry.exists and source is not None and source.originals:
        registry.add(source.originals)
    return registry


def _committed(paths: Paths, registry: Originals, plan: Plan) -> None:
    """After a commit: removed items gave their originals back, and the
    machine has converged past any path an earlier failed undo left."""
    gone = [e.id for e in plan.removals if e.id in registry]
    if gone:
        registry.drop(gone)
        registry.save()
    clear_unrestored(paths.state)


def _prepare(
    journal: Journal,
    plan: Plan,
    manifest: Manifest,
    known: Manifest | None,
    registry: Originals,
    store: Store,
) -> dict[str, dict[str, Any]]:
    """Record what the plan will touch; return the originals of the declared
    items: those in the record of originals, and those syslua takes over now.

    `known` is the current snapshot's manifest or, when there is no current
    one (self-healing cleared it), the newest readable snapshot's: files it
    managed are not taken over again. A path in the record of originals is
    never taken over again either, whatever it holds now.
    """
    from syslua.state.journal import capture

    originals: dict[str, dict[str, Any]] = dict(registry.entries)
    for ident in list(originals):
        if ident not in manifest:
            originals.pop(ident)  # restored by its removal in this apply
    for entry in plan.entries:
        item = manifest.get(entry.id)
        if item is None:
            continue
        rtype = get_type(item.type)
        managed = rtype.managed_path(item)
        if managed is None:
            continue
        new = (known is None or entry.id not in known) and entry.id not in originals
        if entry.decision.changes:
            paths = rtype.touched_paths(item)
            journal.prepare(entry.id, paths)
            if new and managed not in journal.recorded:
                # Nothing of its own is there yet (a tree member behind a
                # symlink its tree replaces): recorded as it runs.
                originals[entry.id] = {"kind": "absent"}
            elif new:
                records = [
                    journal.recorded[p]["prev"] | {"path": p}
                    for p in paths
                    if p in journal.recorded
                ]
                original = rtype.original(item, journal.recorded[managed]["prev"], records)
                if original is not None:
                    originals[entry.id] = original
        elif new and os.path.lexists(managed):
            # Already as declared, but it existed before syslua: keep it, so that
            # removing the declaration later leaves it as it was.
            originals[entry.id] = capture(managed, store)
    for entry in plan.removals:
        gone = known.get(entry.id) if known is not None else None
        if gone is not None:
            journal.prepare(entry.id, get_type(gone.type).removal_paths(gone))
    return originals


def _run(
    manifest: Manifest,
    plan: Plan,
    dag: Dag,
    previous: Manifest | None,
    current: Snapshot | None,
    journal: Journal,
    store: Store,
    runner: Runner,
    options: ApplyOptions,
    reporter: Reporter,
    originals: dict[str, dict[str, Any]],
    ctx: Context,
) -> ApplyOutcome:
    from syslua.execute import scheduler
    from syslua.execute.remove import remove_item

    outcome = ApplyOutcome(plan)
    for entry in plan.removals:
        item = previous.get(entry.id) if previous else None
        if item is None:
            continue
        if options.stop.requested:
            outcome.ok = False
            return outcome
        reporter.started(entry.id, entry.label)
        result = remove_item(
            item,
            ctx,
            journal,
            originals.get(entry.id),
            current.items.get(entry.id, {}) if current else {},
        )
        outcome.results.append(result)
        reporter.finished(result)
        if result.status == FAILED:
            outcome.ok = False
            return outcome
    results = scheduler.execute(
        dag,
        manifest,
        lambda ident: run_item(_item(manifest, ident), ctx, journal),
        jobs=options.jobs,
        stop_on_failure=True,
        on_start=lambda i: reporter.started(i, plan.labels.get(i, i)),
        on_finish=reporter.finished,
        should_stop=lambda: options.stop.requested,
    )
    outcome.results.extend(results)
    outcome.ok = all(r.status != FAILED for r in results)
    return outcome


def _report_values(plan: Plan, reporter: Reporter, options: ApplyOptions) -> list[ItemResult]:
    """Report the items outside the DAG (env variables) as the others are: they
    changed when the generated outputs were written (or would, in noop)."""
    results = []
    for entry in plan.values:
        result = value_result(
            entry.id,
            entry.type,
            entry.label,
            entry.decision,
            noop=options.noop,
            health_check_only=options.health_check_only,
        )
        reporter.finished(result)
        results.append(result)
    return results


def _roll_back(
    outcome: ApplyOutcome,
    journal: Journal,
    store: Store,
    runner: Runner,
    snapshots: Snapshots,
    reporter: Reporter,
    paths: Paths,
    generators: list[str],
) -> None:
    from syslua.execute.undo import UndoReport, sweep_created_dirs, undo_records

    reporter.rolling_back(interrupted=outcome.interrupted)
    try:
        journal.flush()
    except OSError:
        # A full disk: the records of every change were durable before it
        # was made; the undo below works from the same records in memory.
        pass
    # Temp files first (one could keep a directory syslua made from being
    # removed), and again after undoing, which writes files too.
    remove_temp_leftovers(journal.recorded)
    report = UndoReport()
    for result in reversed(outcome.results):
        if not result.mutated:
            continue
        part = undo_records(journal.records_for(result.id), store, runner, paths.state)
        for what in part.restored:
            reporter.note(
                f"  - Restored {abbreviate(what)}" if what.startswith("/") else f"  - Undid {what}"
            )
        if part.not_undone and result.status != FAILED:
            # It completed (a failed one is reported as the failure) and
            # its effects stay: the report must not say "System unchanged".
            outcome.not_undone.append(result.id)
        report.merge(part)
    for name in generators:
        report.merge(undo_records(journal.records_for(name), store, runner, paths.state))
    remove_temp_leftovers(journal.recorded)
    # Directories the apply created for several items (shared parents) are
    # recorded under one of them, which may have been undone before the
    # others emptied them: remove them now, whoever recorded them.
    sweep_created_dirs([r for rs in journal.by_item.values() for r in rs], store, report)
    outcome.rolled_back = True
    outcome.undo = report
    if report.ok:
        journal.commit()
        return
    # Self-healing: the machine is in an unknown mix, so forget the current
    # snapshot; the next apply then converges every item from the live state.
    outcome.restore_failed = True
    note_unrestored(paths.state, report.unrestored)
    snapshots.clear_current()
    journal.close()
    from syslua.state.journal import set_aside

    set_aside(
        journal.file, paths.failed_journals, f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"
    )


def _write_outputs(
    generators: list[ResourceType], manifest: Manifest, paths: Paths, journal: Journal
) -> str | None:
    """Write every type's generated outputs; returns the first note for the user."""
    notes = []
    for rtype in generators:
        name = rtype.name

        def before_change(path: str, name: str = name) -> None:
            journal.before_change(name, path)

        notes.append(rtype.write_outputs(manifest, paths, before_change))
    return next((n for n in notes if n), None)


def _record(
    recorded: Manifest,
    manifest: Manifest,
    plan: Plan,
    outcome: ApplyOutcome,
    journal: Journal,
    snapshots: Snapshots,
    store: Store,
    current: Snapshot | None,
    prev_manifest: Manifest | None,  # current's manifest, loaded once by the caller
    originals: dict[str, dict[str, Any]],
    options: ApplyOptions,
    config: str | None,
    generated: dict[str, list[Path]],
    given_inputs: dict[str, str] | None,
) -> str:
    parent = current.id if current else None
    kept = _keep_edits(plan, current, journal, snapshots, store, options)
    if kept is not None:
        parent = outcome.kept_edits = kept[0].id
        outcome.kept = kept[1]
    items: dict[str, dict[str, Any]] = {}
    prev_items = current.items if current else {}
    changed = {e.id for e in plan.entries if e.decision.changes}
    by_id = {r.id: r for r in outcome.results}
    for item in manifest:
        previous = prev_items.get(item.id, {})

        def declared_as_before(ident: str = item.id) -> bool:
            return prev_manifest is not None and prev_manifest.get(ident) == recorded.get(ident)

        state = get_type(item.type).snapshot_state(
            item,
            RecordContext(
                store=store,
                records=journal.by_item.get(item.id, []),
                previous=previous,
                changed=item.id in changed,
                declared_as_before=declared_as_before,
                manifest=manifest,
                recorded=journal.recorded,
            ),
        )
        result = by_id.get(item.id)
        if result is not None and result.output is not None:
            state["exit_code"] = result.output.exit_code
            state["stdout"] = tail(result.output.stdout)  # the last OUTPUT_TAIL bytes
            state["stderr"] = tail(result.output.stderr)
        if result is not None:
            state["status"] = result.status
        items[item.id] = state
    inputs = dict(given_inputs or {})
    for path in manifest.inputs:
        try:
            inputs[path] = store.put_file(path)
        except OSError as e:
            if e.errno in STORE_FULL:
                raise  # the store cannot be written: the snapshot cannot be recorded
            continue  # a config file gone or unreadable since evaluation
    env = {f.name: store.put_file(f) for files in generated.values() for f in files if f.is_file()}
    counts = outcome.counts()
    message = options.message or _default_message(options.kind, counts, config)
    snap = Snapshot(
        id=new_id(),
        time=time.time(),
        message=message,
        kind=options.kind,
        manifest=recorded.to_dict(),
        digest=recorded.digest,
        config=config,
        parent=parent,
        inputs=inputs,
        items=items,
        originals={k: v for k, v in originals.items() if v.get("kind") != "absent"},
        env=env,
        counts=counts,
        order=recorded_order(plan, recorded),
        pre={
            "previous": current.id if current else None,
            "records": [r for rs in journal.by_item.values() for r in rs if r.get("op") == "path"],
        },
    )
    store.sync()
    # Named before it exists: if the run dies before committing, recovery
    # deletes it, so history never lists an apply that was rolled back.
    journal.note({"op": "snapshot", "snapshot": snap.id})
    snapshots.save(snap, make_current=False)
    from syslua.state.journal import crash_point

    # Group commit: new content was written without an fsync per file. Once
    # the filesystems it went to are synced, the commit record may say so.
    crash_point("before-commit")
    journal.sync_touched(store.root)
    removed = [e.id for e in plan.removals]
    journal.note({"op": "commit", "snapshot": snap.id, "removed": removed})
    crash_point("after-commit")
    snapshots.set_current(snap.id)
    return snap.id


def _keep_edits(
    plan: Plan,
    current: Snapshot | None,
    journal: Journal,
    snapshots: Snapshots,
    store: Store,
    options: ApplyOptions,
) -> tuple[Snapshot, list[str]] | None:
    """Record the edits this apply overwrote as a snapshot before its own: the
    current snapshot, with each edited item's state adopting what the journal
    captured before the apply changed it. `sys rollback` then returns to it,
    and so brings the edits back. Returns it and the labels of the edits it
    keeps; None when there were none it could keep."""
    if current is None or not plan.edited:
        return None
    previous = current.load_manifest()
    items = dict(current.items)
    kept = []
    for entry in plan.edited:
        item = previous.get(entry.id)
        if item is None:
            continue
        rtype = get_type(item.type)
        path = rtype.managed_path(item)
        record = journal.recorded.get(path) if path else None
        if record is None:
            continue
        state = rtype.adopt(item, current.items.get(entry.id, {}), record["prev"], store)
        if state is not None:
            items[entry.id] = state
            kept.append(entry.id)
    if not kept:
        return None
    labels = [e.label for e in plan.edited if e.id in kept]
    shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
    verb = {"apply": "apply --force"}.get(options.kind, options.kind)
    snap = current.amended(
        kind="edits", message=f"edits kept before {verb}: {shown}", items=items, records=[]
    )
    # Named before it exists, as the apply's own snapshot is: recovery of a run
    # that dies before committing deletes it.
    journal.note({"op": "snapshot", "snapshot": snap.id})
    snapshots.save(snap, make_current=False)
    return snap, labels


def _default_message(kind: str, counts: dict[str, int], config: str | None) -> str:
    what = f"{counts.get('changed', 0)} changed"
    if kind == "rollback":
        return f"rollback ({what})"
    if kind == "destroy":
        return f"destroy ({counts.get('changed', 0)} removed)"
    return f"apply {Path(config).name if config else ''} ({what})".replace("  ", " ")
