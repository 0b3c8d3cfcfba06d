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
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from syslua.fsutil import atomic_write
from syslua.manifest.model import Item, thaw
from syslua.resources.actions import run_actions
from syslua.resources.base import (
    CREATE,
    NONE,
    UPDATE,
    Context,
    Decision,
    Removal,
    ResourceError,
    ResourceType,
    UndoContext,
)
from syslua.resources.process import Runner


def state_file(state_dir: Path, digest: str) -> Path:
    return state_dir / "binds" / f"{digest}.json"


def load_outputs(state_dir: Path, digest: str) -> dict[str, Any] | None:
    try:
        return json.loads(state_file(state_dir, digest).read_text())["outputs"]
    except (OSError, ValueError, KeyError):
        return None


def _self(outputs: dict[str, Any]) -> dict[str, str]:
    return {f"self:{k}": str(v) for k, v in outputs.items()}


class BindType(ResourceType):
    name = "bind"
    in_dag = True

    def label(self, item: Item) -> str:
        return item.key

    def status(self, item: Item, ctx: Context) -> dict[str, Any]:
        outputs = load_outputs(ctx.paths.state, item.get("hash")) if ctx.paths else None
        drift = None
        if outputs is not None and item.get("check"):
            try:
                run_actions(f"bind {item.key} check", thaw(item.get("check")), ctx, _self(outputs))
            except ResourceError as e:
                drift = str(e)
        return {"outputs": outputs, "drift": drift, "previous": self._previous(item, ctx)}

    def _previous(self, item: Item, ctx: Context) -> Item | None:
        """The bind with the same id in the previous snapshot, when it had another hash."""
        prev_manifest = getattr(ctx, "previous", None)
        if prev_manifest is None:
            return None
        old = prev_manifest.get(item.id)
        if old is None or old.get("hash") == item.get("hash"):
            return None
        return old

    def decide(self, item: Item, status: dict[str, Any], ctx: Context, triggered: bool = False) -> Decision:
        if status["outputs"] is None:
            if status["previous"] is not None and item.get("update"):
                return Decision(UPDATE, "its definition changed", "Would have updated")
            return Decision(CREATE, "", "Would have created")
        if status["drift"]:
            return Decision(UPDATE, f"check failed: {status['drift']}", "Would have re-created")
        return Decision(NONE, "created")

    def apply(self, item: Item, decision: Decision, ctx: Context) -> None:
        digest = item.get("hash")
        path = state_file(ctx.paths.state, digest)
        recorded = load_outputs(ctx.paths.state, digest)
        if recorded is not None:
            # The same definition, but its check failed: the world drifted.
            self._repair(item, recorded, ctx)
            return
        old = ctx.previous.get(item.id) if ctx.previous is not None else None
        if old is not None and old.get("hash") == digest:
            old = None
        old_outputs = load_outputs(ctx.paths.state, old.get("hash")) if old is not None else None
        use_update = old is not None and old_outputs is not None and bool(item.get("update"))
        if old is not None and old_outputs is not None and not use_update:
            # The definition changed and there is no `update`: destroy the old one first.
            _destroy(old, old_outputs, ctx, ctx.note)
        if use_update:
            assert old is not None and old_outputs is not None
            phase, actions, local = "update", thaw(item.get("update")), _self(old_outputs)
            outputs_spec = thaw(item.get("update_outputs") or item.get("outputs") or {})
            restore = {"hash": old.get("hash"), "id": old.key, "create": thaw(old.get("actions") or []),
                       "outputs_spec": thaw(old.get("outputs") or {}),
                       "state": str(state_file(ctx.paths.state, old.get("hash")))}
        else:
            phase, actions, local = "create", thaw(item.get("actions") or []), {}
            outputs_spec, restore = thaw(item.get("outputs") or {}), None
        destroy = thaw(item.get("destroy") or [])
        ctx.note({"op": "bind", "phase": phase, "hash": digest, "id": item.key, "destroy": destroy,
                  "outputs_spec": outputs_spec})
        ctx.before_change(str(path))
        local = run_actions(f"bind {item.key} {phase}", actions, ctx, local)
        outputs = {k: ctx.resolver.resolve(str(v), local) for k, v in outputs_spec.items()}
        ctx.note({"op": "bind", "phase": "created", "hash": digest, "id": item.key, "destroy": destroy,
                  "outputs": outputs, "restore": restore})
        atomic_write(path, json.dumps({"id": item.key, "outputs": outputs}, indent=1).encode())
        if restore is not None:
            Path(restore["state"]).unlink(missing_ok=True)  # the old outputs live on in the journal record

    def _repair(self, item: Item, recorded: dict[str, Any], ctx: Context) -> None:
        """Converge a drifted bind: `update` from its recorded outputs when it has
        one; otherwise destroy it (journaled, so a rollback re-creates it) and
        create it again."""
        path = state_file(ctx.paths.state, item.get("hash"))
        if item.get("update"):
            ctx.before_change(str(path))
            local = run_actions(f"bind {item.key} update", thaw(item.get("update")), ctx, _self(recorded))
            spec = thaw(item.get("update_outputs") or item.get("outputs") or {})
            outputs = {k: ctx.resolver.resolve(str(v), local) for k, v in spec.items()}
            atomic_write(path, json.dumps({"id": item.key, "outputs": outputs}, indent=1).encode())
            return
        _destroy(item, recorded, ctx, ctx.note)
        destroy = thaw(item.get("destroy") or [])
        spec = thaw(item.get("outputs") or {})
        ctx.note({"op": "bind", "phase": "create", "hash": item.get("hash"), "id": item.key, "destroy": destroy,
                  "outputs_spec": spec})
        ctx.before_change(str(path))
        local = run_actions(f"bind {item.key} create", thaw(item.get("actions") or []), ctx, {})
        outputs = {k: ctx.resolver.resolve(str(v), local) for k, v in spec.items()}
        ctx.note({"op": "bind", "phase": "created", "hash": item.get("hash"), "id": item.key, "destroy": destroy,
                  "outputs": outputs, "restore": None})
        atomic_write(path, json.dumps({"id": item.key, "outputs": outputs}, indent=1).encode())

    def verify(self, item: Item, decision: Decision, ctx: Context) -> str | None:
        st = self.status(item, ctx)
        if st["outputs"] is None:
            return "no outputs were recorded"
        return st["drift"]

    def diff(self, item: Item, status: Any, ctx: Context) -> str | None:
        return None

    # -- hooks ---------------------------------------------------------------
    def provides(self, item: Item) -> tuple[str, ...]:
        """Items whose placeholders name this bind's outputs run after it."""
        return (f"output:{item.get('hash')}",)

    def remove(self, item: Item, ctx: Context, original: dict[str, Any] | None, state: dict[str, Any]) -> Removal:
        """Destroy a bind that is no longer declared (its state file goes with it)."""
        outputs = load_outputs(ctx.paths.state, item.get("hash"))
        if outputs is None:
            return Removal("nothing to destroy (no recorded outputs)")
        _destroy(item, outputs, ctx, ctx.note)
        return Removal("destroyed")

    def undo(self, record: dict[str, Any], uctx: UndoContext) -> None:
        undo_record(record, uctx.store, uctx.runner, uctx.report, uctx.state_dir,
                    uctx.memo.setdefault(self.name, set()))

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        st = self.status(item, ctx)
        if st["outputs"] is None:
            return "changed", "bind has no recorded outputs"
        if st["drift"]:
            return "changed", f"check failed: {st['drift']}"
        return None


def _destroy(item: Item, outputs: dict[str, Any], ctx: Context, note: Any) -> None:
    """Run a bind's destroy; once it succeeded, a journal record can recreate it."""
    # The state file is not journaled as a path: undoing the "destroyed" record
    # writes it again, with the outputs of the re-created bind.
    path = state_file(ctx.paths.state, item.get("hash"))
    if item.get("destroy"):
        run_actions(f"bind {item.key} destroy", thaw(item.get("destroy")), ctx, _self(outputs))
    note({"op": "bind", "phase": "destroyed", "hash": item.get("hash"), "id": item.key,
          "create": thaw(item.get("actions") or []), "outputs_spec": thaw(item.get("outputs") or {}),
          "state": str(path)})
    path.unlink(missing_ok=True)


def undo_record(rec: dict[str, Any], store: Any, runner: Runner, report: Any, state_dir: Path | None = None,
                seen: set[str] | None = None) -> None:
    """Undo one journal record of a bind (see the module docstring)."""
    from syslua.resources.placeholders import Resolver, Unresolved

    if state_dir is None:
        return
    phase = rec.get("phase")
    ctx = Context(runner=runner, noop=False, store=store, resolver=Resolver(None, store, state_dir))
    if phase == "created":
        if seen is not None:
            seen.add(rec["hash"])
        if rec.get("destroy") and rec.get("outputs") is not None:
            run_actions(f"bind {rec['id']} destroy", rec["destroy"], ctx, _self(rec["outputs"]))
        restore = rec.get("restore")
        if restore:  # it was an update: bring the old definition back
            _recreate(restore, ctx)
        report.restored.append(f"bind {rec['id']}")
    elif phase in ("create", "update"):
        if seen is not None and rec["hash"] in seen:
            return  # its "created" record was undone already
        # Interrupted before its outputs were recorded: outputs that depend only
        # on inputs are still known, and then destroy can run.
        try:
            outputs = {k: ctx.resolver.resolve(str(v), {}) for k, v in (rec.get("outputs_spec") or {}).items()}
        except Unresolved:
            report.left.append(f"bind {rec['id']}: interrupted during {phase}; its outputs were never recorded, "
                               "so it could not be destroyed")
            return
        if rec.get("destroy"):
            run_actions(f"bind {rec['id']} destroy", rec["destroy"], ctx, _self(outputs))
        report.restored.append(f"bind {rec['id']}")
    elif phase == "destroyed":
        _recreate(rec, ctx)
        report.restored.append(f"bind {rec['id']}")


def _recreate(rec: dict[str, Any], ctx: Context) -> None:
    """The seed's restore: run a bind's create again and record its outputs."""
    local = run_actions(f"bind {rec.get('id', rec['hash'][:12])} restore", rec.get("create") or [], ctx, {})
    outputs = {k: ctx.resolver.resolve(str(v), local) for k, v in (rec.get("outputs_spec") or {}).items()}
    atomic_write(Path(rec["state"]), json.dumps({"id": rec.get("id"), "outputs": outputs}, indent=1).encode())
