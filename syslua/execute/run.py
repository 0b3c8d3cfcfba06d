"""One apply's shared state, and its steps up to running the items.

`ApplyRun` holds what every step of an apply needs: what it was asked
(manifest, options, reporter), what it read before planning (`PlanInputs`:
the current snapshot, originals, ...), and the facilities its steps share
(the store, the command runner). Its steps here are the plan, what stops an
apply before anything changes (refusals, nothing to do, a read-only run),
and running the items: removals, then the DAG.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syslua import safe_fs
from syslua.errors import StateError, UsageError
from syslua.execute.item import (
    CHANGED,
    FAILED,
    SKIPPED,
    ItemResult,
    run_item,
    skipped,
    value_result,
)
from syslua.execute.outcome import ApplyOptions, ApplyOutcome, Reporter
from syslua.manifest.model import Item, Manifest
from syslua.paths import Paths, abbreviate
from syslua.plan.dag import Dag
from syslua.plan.inputs import PlanInputs
from syslua.plan.planner import Entry, Plan
from syslua.resources import capability, with_outputs
from syslua.resources import get as get_type
from syslua.resources.base import CREATE, UPDATE, Context
from syslua.resources.kind import Journaled, Outputs
from syslua.resources.process import Runner
from syslua.state.originals import Originals
from syslua.state.records import Original, PathState

if TYPE_CHECKING:
    from syslua.state.journal import Journal
    from syslua.state.snapshots import Snapshot

# The scheduler, journal, removal and undo code is imported where it is used:
# an apply with nothing to do (the common re-apply) stops after planning and
# should not pay for loading it.


# Journal records of the paths a rollback puts back outside any item.
RESTORES = "sys add"
# What an edit left as it is (`--overwrite` names others) reports.
HELD = "left as it is: edited since the last apply"


@dataclass(frozen=True)
class Rollback:
    """What a rollback returns to beyond the manifest it runs: the item states
    of its snapshot (`states`: one that keeps a hand edit says so, and the
    new snapshot keeps saying it), and paths outside any item to put back
    (`restores`: the source files a `sys add` overwrote), each with what was
    there before; `kept`: the items a `sys add` took back, whose home files
    keep their content."""

    states: Mapping[str, Mapping[str, Any]]
    restores: tuple[tuple[str, PathState], ...] = ()
    kept: tuple[str, ...] = ()  # items whose live content `states` keeps as a hand edit
    homes: Mapping[str, str] = field(default_factory=dict)  # the paths of `kept`, by item id


class ApplyRun:
    """What the steps of one apply share (see the module's docstring)."""

    def __init__(
        self,
        manifest: Manifest,
        paths: Paths,
        options: ApplyOptions,
        reporter: Reporter,
        *,
        snapshot_manifest: Manifest,  # what the snapshot records (a rollback runs store copies of sources)
        config: str | None,
        given_inputs: dict[str, str] | None,  # config files already in the store (a rollback's)
        target: Rollback | None = None,  # what else a rollback returns to
        current: Snapshot | None = None,  # the current snapshot, when the caller read it
    ) -> None:
        self.manifest = manifest
        self.target = target if target is not None else Rollback({})
        # Edited items `--overwrite` did not name: left as they are, their
        # states (and, for one no longer declared, its declaration) kept.
        self.held: dict[str, Entry] = {}
        self.paths = paths
        self.options = options
        self.reporter = reporter
        self.snapshot_manifest = snapshot_manifest
        self.config = config
        self.given_inputs = given_inputs
        self.inputs = PlanInputs(paths, manifest, from_snapshot=options.from_snapshot, read=current)
        self.store = self.inputs.store
        for note in self.inputs.warnings:
            reporter.note(f"Warning: {note}")
        self.runner = Runner()
        # Ctrl-C kills its running commands (one runner per command).
        options.stop.on_request(self.runner.cancel)
        self.registry = self._registry()
        # The originals of the declared items (`execute.begin`), and those of
        # them this run added to the record.
        self.originals: dict[str, Original] = {}
        self.added: list[str] = []

    def _registry(self) -> Originals | None:
        """The record of originals; a read-only run goes on without it when it
        cannot be read (an apply stops here, before anything changes)."""
        try:
            return self.inputs.originals_record()
        except StateError:
            if not self.options.read_only:
                raise
            return None

    def context(self, *, noop: bool, originals: bool = False) -> Context:
        """A context over this run: the planning one (`originals`: it names the
        originals removals restore), or the one items run with (fresh outcomes)."""
        options = self.options
        return self.inputs.context(
            self.runner,
            noop=noop,
            verbose=options.verbose,
            on_output=options.on_output,
            on_activity=options.on_activity,
            progress=options.progress,
            max_unpack=options.max_unpack,
            restoring=options.kind != "apply",
            originals=self.registry.entries if originals and self.registry is not None else None,
        )

    @property
    def previous(self) -> Manifest | None:
        return self.inputs.previous

    @property
    def generators(self) -> dict[str, Outputs]:
        """The kinds that write outputs from the whole manifest, by name."""
        cached = self.__dict__.get("_generators")
        if cached is None:
            cached = self.__dict__["_generators"] = {
                kind.name: gen
                for kind in with_outputs()
                if (gen := capability(kind, Outputs)) is not None
            }
        return cached  # type: ignore[no-any-return]

    @property
    def generated(self) -> dict[str, list[Path]]:
        """The files each generator writes."""
        return {name: g.outputs(self.paths) for name, g in self.generators.items()}

    # -- 3. plan -------------------------------------------------------------
    def plan(self) -> Plan:
        # An apply of a cached evaluation gathers what would prove that nothing
        # changed (`execute/proof.py`): the next run may then skip planning.
        options = self.options
        prove = (
            options.kind == "apply"
            and not options.read_only
            and self.manifest.evaluation is not None
            and self.snapshot_manifest is self.manifest
        )
        return self.inputs.plan(self.context(noop=True, originals=True), prove=prove)

    def refusal(self, plan: Plan) -> ApplyOutcome | None:
        """Stop before anything changes: a config that declares nothing while
        items are managed (unless `allow_empty`; an error), removals planned
        from a snapshot standing in for a damaged current one (an error), an
        apply of a plan that marks items `!` as unable to be applied, or a
        plan that would overwrite edits made by hand (unless told to keep
        them)."""
        options, previous = self.options, self.previous
        if options.read_only:
            return None
        if self.inputs.stand_in and plan.removals:
            raise self._stand_in_removals(plan)
        if not options.allow_empty and len(self.manifest) == 0 and previous:
            n = len(previous)
            raise UsageError(
                f"Refusing to remove all {n} managed item{'s' if n != 1 else ''}: "
                "the config declares nothing. Pass --allow-empty if that is what you want.",
                reason="empty_config",
            )
        if options.kind == "apply" and plan.failures:
            # The plan is a promise: an item it marks `!` would fail the apply
            # after others ran (an exec cannot be undone), so none runs.
            edited = [] if options.keep_edits or options.overwrite else plan.edited
            return ApplyOutcome(plan, ok=False, cannot_apply=plan.failures, refused=edited)
        if options.overwrite and not options.keep_edits:
            self._hold(plan)
        elif plan.edited and not options.keep_edits:
            return ApplyOutcome(plan, ok=False, refused=plan.edited)
        return None

    def _stand_in_removals(self, plan: Plan) -> UsageError:
        """The refusal to remove what an older snapshot, standing in for the
        damaged current one, manages: it did not leave the machine as it is
        (a later apply may have put an original back), so the user says
        which snapshot removals are planned against."""
        current, damaged = self.inputs.current, self.inputs.damaged
        assert current is not None
        n = len(plan.removals)
        ways = f"make snapshot {current.id} current with `sys doctor --repair`. A"
        if self.options.kind == "apply":
            ways = (
                f"plan them against snapshot {current.id} with "
                f"`sys apply --from-snapshot {current.id}`, or {ways[:-3]}. Either way, a"
            )
        return UsageError(
            f"refusing to remove {n} item{'s' if n != 1 else ''} that snapshot {current.id} "
            f"manages: the current snapshot {damaged} is corrupt or missing, so what the last "
            f"apply left is not known, and snapshot {current.id} is older. Nothing was changed.",
            hint=f"To go on, {ways} path changed since that snapshot is kept as an edit, "
            "which is not removed without --force.",
            reason="damaged_snapshot",
        )

    def _hold(self, plan: Plan) -> None:
        """`--overwrite PATH...`: every path named must be an edited one; the
        edits it does not name are left as they are (`held`)."""
        edited = {self._path_of(e.id): e for e in plan.edited}
        unknown = sorted(set(self.options.overwrite) - set(edited))
        if unknown:
            raise UsageError(
                f"--overwrite {abbreviate(unknown[0])}: not a path edited since the last apply",
                hint="`sys plan` marks the paths edited since the last apply with `!`.",
            )
        self.held = {e.id: e for p, e in edited.items() if p not in self.options.overwrite}
        plan.held = frozenset(self.held)
        previous = self.previous
        kept = [
            item
            for e in plan.removals
            if e.id in self.held and previous is not None and (item := previous.get(e.id))
        ]
        if kept:  # a removal left undone: its declaration stays recorded
            items = sorted((*self.snapshot_manifest.items, *kept), key=lambda i: i.id)
            self.snapshot_manifest = self.snapshot_manifest.replace(items=tuple(items))

    def _path_of(self, ident: str) -> str:
        item = self.manifest.get(ident) or (self.previous.get(ident) if self.previous else None)
        assert item is not None
        kind = capability(get_type(item.type), Journaled)
        path = kind.managed_path(item) if kind is not None else None
        return path or item.key

    def unchanged(self, plan: Plan) -> ApplyOutcome | None:
        """The outcome of an apply with nothing to do: no change, the same
        declarations as the current snapshot, and every generated output there."""
        current, previous = self.inputs.current, self.previous
        if (
            plan.has_changes
            or plan.failures  # an item that cannot be applied fails the run
            or self.target.restores
            or current is None
            or previous is None
        ):
            return None
        # The items compare equal (not the digest of their canonical JSON, five
        # times dearer): the plan compared them when it runs what it records.
        same = (
            plan.same_as_previous
            if self.snapshot_manifest is self.manifest
            else previous.items == self.snapshot_manifest.items
        )
        if not same or not all(f.is_file() for fs in self.generated.values() for f in fs):
            return None
        return ApplyOutcome(plan, [], ok=True, no_changes=True, snapshot_id=current.id)

    def dry_run(self, plan: Plan) -> ApplyOutcome:
        """`--noop` or `--health-check-only`: every item decided (and checked),
        none changed."""
        from syslua.execute import scheduler

        ctx, options = self.context(noop=True), self.options
        results = scheduler.execute(
            plan.dag or Dag.from_manifest(self.manifest),
            self.manifest,
            lambda ident: run_item(
                self.item(ident), ctx, None, health_check_only=options.health_check_only
            ),
            jobs=options.jobs,
            stop_on_failure=False,
            on_start=lambda i: self.reporter.started(i, plan.labels.get(i, i)),
            on_finish=self.reporter.finished,
            should_stop=lambda: options.stop.requested,
        )
        results += self.report_values(plan)
        return ApplyOutcome(plan, results, ok=all(r.ok for r in results))

    # -- 5, 6. remove, run the DAG -------------------------------------------
    def execute(self, plan: Plan, journal: Journal) -> ApplyOutcome:
        """Remove the items no longer declared, then run the DAG; the first
        failure, or a stop request, stops new items from starting."""
        ctx = self.context(noop=False)
        outcome = ApplyOutcome(plan, held=[e.label for e in self.held.values()])
        with safe_fs.cached():  # each directory walked once, not once per file in it
            if self._remove(plan, journal, ctx, outcome):
                self._run_dag(plan, journal, ctx, outcome)
        if outcome.ok and self.target.restores and not self.options.stop.requested:
            self._put_back(journal, outcome)
        if self.options.stop.requested:
            # The last moment to stop: past it, the apply records and commits.
            outcome.ok, outcome.interrupted = False, True
        if not outcome.ok:
            self._not_started(plan, outcome)
        return outcome

    def _run_dag(self, plan: Plan, journal: Journal, ctx: Context, outcome: ApplyOutcome) -> None:
        """Run the DAG's items, each as soon as what it depends on is done."""
        from syslua.execute import scheduler

        planned = plan.take_statuses()
        held, labels = self.held, plan.labels
        created = {
            e.id for e in plan.entries if e.id in plan.groups and e.decision.action == CREATE
        }

        def run(ident: str) -> ItemResult:
            if ident in held:
                return skipped(self.item(ident), HELD)
            result = run_item(self.item(ident), ctx, journal, planned=planned.pop(ident, None))
            if result.label == (label := labels.get(ident)):
                result.label = label  # the plan's string, not a copy per item held
            return _created(result) if ident in created else result

        outcome.results += scheduler.execute(
            plan.dag or Dag.from_manifest(self.manifest),
            self.manifest,
            run,
            jobs=self.options.jobs,
            stop_on_failure=True,
            on_start=lambda i: self.reporter.started(i, plan.labels.get(i, i)),
            on_finish=self.reporter.finished,
            should_stop=lambda: self.options.stop.requested,
        )
        outcome.ok = all(r.status != FAILED for r in outcome.results)

    def _not_started(self, plan: Plan, outcome: ApplyOutcome) -> None:
        """Report each item a failed run did not reach (after a failed removal,
        the env variables, written only at the end) as skipped, so that the
        run's counts add up to the plan's."""
        why = "interrupted" if self.options.stop.requested else "another item failed"
        reported = {r.id for r in outcome.results}
        for e in plan.all_entries:
            if e.created_parent or e.id in reported:
                continue
            result = ItemResult(e.id, e.type, e.label, SKIPPED, f"not started: {why}")
            outcome.results.append(result)
            self.reporter.finished(result)

    def _remove(self, plan: Plan, journal: Journal, ctx: Context, outcome: ApplyOutcome) -> bool:
        """Remove the items no longer declared, in the plan's order; False
        (and `outcome` not ok) when one failed or the run was stopped."""
        from syslua.execute.remove import remove_item

        originals = self.registry.entries if self.registry is not None else {}
        current = self.inputs.current
        for entry in plan.removals:
            item = self.previous.get(entry.id) if self.previous else None
            if item is None:
                continue
            if entry.id in self.held:
                held = skipped(item, HELD)
                outcome.results.append(held)
                self.reporter.finished(held)
                continue
            if self.options.stop.requested:
                outcome.ok = False
                return False
            self.reporter.started(entry.id, entry.label)
            state = current.items.get(entry.id) if current else None
            result = remove_item(item, ctx, journal, originals.get(entry.id), state or {})
            outcome.results.append(result)
            self.reporter.finished(result)
            if result.status == FAILED:
                outcome.ok = False
                return False
        return True

    def _put_back(self, journal: Journal, outcome: ApplyOutcome) -> None:
        """Put back the paths a rollback restores outside any item (the source
        files a `sys add` overwrote), each recorded first; a failure fails the
        run, which undoes them with the rest."""
        from syslua.state.restore import restore_path

        for path, prev in self.target.restores:
            try:
                journal.before_change(RESTORES, path)
                left = restore_path(path, prev, self.store)
            except (OSError, StateError) as e:
                outcome.ok = False
                outcome.error = (
                    f"putting back {abbreviate(path)}: {getattr(e, 'strerror', None) or e}"
                )
                return
            if left:
                outcome.ok, outcome.error = False, left
                return
            self.reporter.note(f"  - Put back {abbreviate(path)}, which `sys add` overwrote")

    def report_values(self, plan: Plan) -> list[ItemResult]:
        """Report the items outside the DAG (env variables) as the others are:
        they changed when the generated outputs were written (or would, in noop)."""
        results = []
        for entry in plan.values:
            result = value_result(
                entry.id,
                entry.type,
                entry.label,
                entry.decision,
                noop=self.options.noop,
                health_check_only=self.options.health_check_only,
            )
            self.reporter.finished(result)
            results.append(result)
        return results

    def item(self, ident: str) -> Item:
        item = self.manifest.get(ident)
        assert item is not None
        return item


def _created(result: ItemResult) -> ItemResult:
    """A tree the plan creates is reported `created`, as the plan said: its
    members run first and make its directory on their way, so by the time
    its root runs, the root only finds them changed (`updated`)."""
    if result.status != CHANGED or result.action != UPDATE:
        return result
    rest = result.message.removeprefix("updated")
    result.action, result.message = CREATE, "created" + rest
    return result
