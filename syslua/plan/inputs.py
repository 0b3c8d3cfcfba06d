"""What a plan is made against, read from the state dir: the current snapshot
and what goes with it. `sys plan` and `sys apply` read it the same way:

1. the current snapshot, read lean (`like` the manifest about to be planned),
   or, when its file is corrupt or missing (`damaged`: its id), the newest
   readable one standing in for it; `warnings` say so, and say when the
   snapshot index had to be rebuilt. An apply plans no removal from a
   stand-in (`execute/run.py`) unless the user named it (`from_snapshot`:
   `sys apply --from-snapshot ID`), or made it current (`sys doctor --repair`);
2. its manifest (`previous`, what syslua manages now), the item states it
   recorded (`last_applied`: edits made since are found from them) and the
   waves its plan ran in (`order`); the last two only from the real current
   snapshot, never from a stand-in, which did not leave the machine as it is,
   except the item states of one the user named: what it recorded is what a
   removal checks a path still holds (a path changed since is an edit);
3. without a current snapshot (self-healing cleared it), the newest readable
   one as the `baseline`: files its manifest (`known`) managed are not taken
   over again;
4. the originals syslua took over: `known_originals` for a plan (read-only),
   `originals_record` for an apply, which adds to the record;
5. the stat index of the current snapshot (`state/stat_index`): files whose
   `lstat` is as it recorded are not read;
6. the `Context` that plans (and runs) items over all of this (`context`),
   and the plan itself (`plan`).

`removal_plan` plans removing everything a snapshot manages (`sys destroy
--dry-run`).
"""

from __future__ import annotations

from typing import Any

from syslua.errors import UsageError
from syslua.manifest.model import Manifest
from syslua.paths import Paths
from syslua.plan.planner import Plan, make_plan
from syslua.resources.base import Context
from syslua.resources.placeholders import Resolver
from syslua.resources.process import Runner
from syslua.state.originals import Originals, known
from syslua.state.records import Original
from syslua.state.snapshots import Snapshot, Snapshots
from syslua.state.stat_index import StatIndex
from syslua.state.store import Store


class PlanInputs:
    """What `manifest` is planned against (see the module's docstring)."""

    def __init__(
        self,
        paths: Paths,
        manifest: Manifest,
        store: Store | None = None,
        *,
        from_snapshot: str | None = None,
        read: Snapshot | None = None,
    ) -> None:
        """Read it all now; `store`: the one the caller uses, if it has one;
        `from_snapshot`: the snapshot to stand in for a damaged current one
        (an id, a prefix of one, or a tag); `read`: a snapshot the caller
        read already, used when it is the current one (not read again)."""
        self.paths = paths
        self.manifest = manifest
        self.store = store if store is not None else Store(paths.store)
        self.snapshots = Snapshots(paths)
        current: Snapshot | None
        warning: str | None
        if read is not None and read.id == self.snapshots.current_id():
            current, warning = read, None
        else:
            current, warning = self.snapshots.usable_current(like=manifest)
        # The id of the current snapshot when its file cannot be read.
        self.damaged: str | None = self.snapshots.current_id() if warning else None
        named = from_snapshot is not None
        if named:
            current, warning = self._named(str(from_snapshot), current, warning)
        self.current = current
        self.warnings = [n for n in (self.snapshots.rebuilt, warning) if n]
        self.previous = current.load_manifest() if current else None
        real = current is not None and (not warning or named)  # not an unchosen stand-in
        self.last_applied = current.item_states() if real and current else None
        # A stand-in nobody chose: an apply plans no removal from it.
        self.stand_in = current is not None and self.damaged is not None and not named
        self.order = current.order if real and current else None
        self.baseline = self.snapshots.latest_readable() if current is None else None
        self.known = self.baseline.load_manifest() if self.baseline is not None else None
        self.resolver = Resolver(manifest, self.store, paths.state)
        # Files decided from `lstat` alone: the index of the real current snapshot.
        self.stat_index = StatIndex.load(paths.state, current.id if real and current else None)

    def _named(
        self, wanted: str, current: Snapshot | None, warning: str | None
    ) -> tuple[Snapshot | None, str | None]:
        """The snapshot `--from-snapshot` names, standing in for the damaged
        current one, with a note saying so; refused when the current
        snapshot is readable and is not the one named."""
        ident = self.snapshots.resolve_id(wanted)
        if self.damaged is None and current is not None and ident != current.id:
            raise UsageError(
                f"--from-snapshot {wanted}: the current snapshot {current.id} is readable, "
                "and removals are planned against it",
                hint="`--from-snapshot` names the snapshot to plan removals against when the "
                "current one is corrupt or missing; to return to another snapshot, run "
                f"`sys rollback {wanted}`.",
            )
        if current is not None and ident == current.id and self.damaged is None:
            return current, warning
        chosen = self.snapshots.load(ident, like=self.manifest)
        return chosen, (
            f"the current snapshot {self.damaged} cannot be used; planning removals against "
            f"snapshot {ident}, as --from-snapshot says (paths changed since it are edits)"
        )

    def save_stat_index(self, snapshot: str | None) -> None:
        """Write the stat index as `snapshot`'s (the current one, made so by
        this run, which holds the lock) when it changed: what this run
        trusted of it and what it hashed. Not from a stand-in for a damaged
        snapshot; a failure to write it only costs the next run a rehash."""
        index = self.stat_index
        if snapshot is None or self.damaged is not None:
            return
        if index.snapshot == snapshot and not index.changed:
            return
        try:
            index.save(self.paths.state, snapshot)
        except OSError:
            pass

    def known_originals(self) -> dict[str, Original]:
        """The originals as a plan names them (read-only): the record's, or the
        current snapshot's before there was a record; none when the record
        cannot be read (the apply reports that)."""
        return known(self.paths.state, self.current.originals if self.current else None)

    def originals_record(self) -> Originals:
        """The record of originals, for an apply to add to. A state dir from
        before it existed starts it from the originals the current snapshot
        (or the baseline) kept. Raises StateError when it cannot be read."""
        registry = Originals.load(self.paths.state)
        source = self.current or self.baseline
        if not registry.exists and source is not None and source.originals:
            registry.add(source.originals)
        return registry

    def context(self, runner: Runner, *, noop: bool = True, **more: Any) -> Context:
        """A Context over these inputs: the one that plans (noop), or, given the
        apply's facilities in `more` (on_output, progress, originals...), the one
        its items run with."""
        return Context(
            runner=runner,
            noop=noop,
            manifest=self.manifest,
            store=self.store,
            paths=self.paths,
            resolver=self.resolver,
            previous=self.previous,
            last_applied=self.last_applied,
            stat_index=self.stat_index,
            **more,
        )

    def plan(self, ctx: Context, *, with_diff: bool = False, prove: bool = False) -> Plan:
        """The plan of the manifest against these inputs, made with `ctx`
        (`prove`: with what proves its unchanged statuses, `Plan.claims`)."""
        return make_plan(
            self.manifest,
            ctx,
            self.previous,
            with_diff=with_diff,
            known=self.known,
            order=self.order,
            prove=prove,
        )


def removal_plan(paths: Paths, current: Snapshot, *, with_diff: bool = False) -> Plan:
    """The plan of removing everything `current` manages (`sys destroy
    --dry-run`): the empty manifest planned against it."""
    previous = current.load_manifest()
    ctx = Context(
        runner=Runner(),
        noop=True,
        store=Store(paths.store),
        paths=paths,
        previous=previous,
        last_applied=current.items,
        originals=known(paths.state, current.originals),
    )
    return make_plan(Manifest(items=()), ctx, previous, with_diff=with_diff)
