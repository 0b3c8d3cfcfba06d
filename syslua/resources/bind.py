"""`sys.bind`: a side effect whose outputs are recorded and handed back later.

| phase   | when                                          | sees                           |
|---------|-----------------------------------------------|--------------------------------|
| create  | the bind is new (no state file)               | its inputs                     |
| check   | each plan/apply, when declared                | `$${self:x}`: recorded outputs |
| update  | an older bind with the same id exists, or the | the old (or recorded) outputs  |
|         | check failed (drift)                          | as `self`                      |
| destroy | removal, replacement, rollback of a create,   | the recorded outputs           |
|         | or drift without `update` (then create again) |                                |

State files (`state/binds/<hash>.json`) hold the outputs. Every phase is
journaled before it runs, so a failed apply destroys what it created,
recreates what it destroyed (with the restore resolver reading other binds'
state files) and puts state files back.

This module decides (status with its check, decide, which phase, verify); the
provider (`bind_phases`) runs the phases, writes the state files and undoes
journal records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from syslua.manifest.checks import anything, nonempty_string
from syslua.manifest.model import Item, Manifest
from syslua.manifest.schema import Prop, schema
from syslua.resources import bind_phases as phases
from syslua.resources.base import (
    CREATE,
    NONE,
    NOTHING,
    REMOVE,
    UPDATE,
    Applied,
    Context,
    Decision,
    Removal,
    UndoContext,
)

# The state files and the phases are the provider's (bind_phases); these names
# stay importable from here for the engine (`bind.undo_record`) and the status below.
from syslua.resources.bind_phases import load_outputs, state_file, undo_record
from syslua.resources.kind import Drifts, Kind, Ordered, Removable, Undoes
from syslua.state.records import KindRecord, Original

__all__ = ["BindType", "load_outputs", "state_file", "undo_record"]


# -- the declaration -----------------------------------------------------------

SCHEMA = schema(
    "bind",
    "id",
    [
        Prop("id", nonempty_string),
        Prop("inputs", anything),
        Prop("actions", anything),
        Prop("outputs", anything),
        Prop("update", anything),
        Prop("destroy", anything),
        Prop("check", anything),
        Prop("update_outputs", anything),
        Prop("check_result", anything),
    ],
)


class BindType(Kind[dict[str, Any]], Removable, Undoes, Drifts, Ordered):
    name = "bind"
    schema = SCHEMA

    def label(self, item: Item) -> str:
        return item.key

    def status(self, item: Item, ctx: Context) -> dict[str, Any]:
        outputs = load_outputs(ctx.paths.state, item.get("hash")) if ctx.paths else None
        drift = None
        if outputs is not None and (item.get("check") or item.get("check_result")):
            drift = phases.check(item, outputs, ctx)
        return {"outputs": outputs, "drift": drift, "previous": self._previous(item, ctx)}

    def _previous(self, item: Item, ctx: Context) -> Item | None:
        """The bind with the same id in the previous snapshot, when it had another hash."""
        if ctx.previous is None:
            return None
        old = ctx.previous.get(item.id)
        if old is None or old.get("hash") == item.get("hash"):
            return None
        return old

    def decide(
        self, item: Item, status: dict[str, Any], ctx: Context, triggered: bool = False
    ) -> Decision:
        if status["outputs"] is None:
            if status["previous"] is not None and item.get("update"):
                return Decision(UPDATE, "its definition changed", "Would have updated")
            return Decision(CREATE, "", "Would have created")
        if status["drift"]:
            return Decision(UPDATE, f"check failed: {status['drift']}", "Would have re-created")
        return Decision(NONE, "created")

    def apply(
        self, item: Item, decision: Decision, planned: dict[str, Any] | None, ctx: Context
    ) -> Applied:
        assert ctx.paths is not None
        digest = item.get("hash")
        recorded = load_outputs(ctx.paths.state, digest)
        if recorded is not None:
            # The same definition, but its check failed: the world drifted.
            self._repair(item, recorded, ctx)
            return NOTHING
        old = ctx.previous.get(item.id) if ctx.previous is not None else None
        if old is not None and old.get("hash") == digest:
            old = None
        old_outputs = load_outputs(ctx.paths.state, old.get("hash")) if old is not None else None
        if old is None or old_outputs is None:
            phases.create(item, ctx)
        elif item.get("update"):
            phases.update(item, old, old_outputs, ctx)
        else:
            # The definition changed and there is no `update`: destroy the old one first.
            phases.destroy(old, old_outputs, ctx, ctx.note)
            phases.create(item, ctx)
        return NOTHING

    def _repair(self, item: Item, recorded: dict[str, Any], ctx: Context) -> None:
        """Converge a drifted bind: `update` from its recorded outputs when it has
        one; otherwise destroy it (journaled, so a rollback re-creates it) and
        create it again."""
        if item.get("update"):
            phases.update_in_place(item, recorded, ctx)
            return
        phases.destroy(item, recorded, ctx, ctx.note)
        phases.create(item, ctx)

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        st = self.status(item, ctx)
        if st["outputs"] is None:
            return "no outputs were recorded"
        drift: str | None = st["drift"]
        return drift

    # -- capabilities ----------------------------------------------------------
    def provides(self, item: Item) -> tuple[str, ...]:
        """Items whose placeholders name this bind's outputs run after it."""
        return (f"output:{item.get('hash')}",)

    def requires(self, item: Item) -> tuple[str, ...]:
        return ()

    def predecessors(self, item: Item, manifest: Manifest) -> tuple[str, ...]:
        return ()

    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        return Decision(REMOVE, "no longer declared")

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        """Destroy a bind that is no longer declared (its state file goes with it)."""
        assert ctx.paths is not None
        outputs = load_outputs(ctx.paths.state, item.get("hash"))
        if outputs is None:
            return Removal("nothing to destroy (no recorded outputs)")
        phases.destroy(item, outputs, ctx, ctx.note)
        return Removal("destroyed")

    def undo(self, record: KindRecord, uctx: UndoContext) -> None:
        undo_record(
            record.data,
            uctx.store,
            uctx.runner,
            uctx.report,
            uctx.state_dir,
            uctx.memo(phases.Destroyed),
        )

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        st = self.status(item, ctx)
        if st["outputs"] is None:
            return "changed", "bind has no recorded outputs"
        if st["drift"]:
            return "changed", f"check failed: {st['drift']}"
        return None
