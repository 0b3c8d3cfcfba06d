"""The bind provider: runs a bind's create/update/destroy phases and keeps its state file.

Each phase is journaled before its actions run (`ctx.note`), and the state
file (`state/binds/<hash>.json`, the recorded outputs) is written atomically
once they succeeded, so a failed apply can destroy what was created and
re-create what was destroyed. `undo_record` is that rollback: it undoes one
journal record, re-running `create` (the restore) where a bind must come back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from syslua.fsutil import atomic_write, make_dir
from syslua.manifest.model import Item, thaw
from syslua.resources.actions import run_actions
from syslua.resources.base import Context
from syslua.resources.placeholders import Resolver
from syslua.resources.process import Runner
from syslua.state.layout import PRIVATE_DIR, PRIVATE_FILE


def state_file(state_dir: Path, digest: str) -> Path:
    return state_dir / "binds" / f"{digest}.json"


def out_dir(state_dir: Path, bind_id: str) -> Path:
    """A bind's own directory (`ctx.out`): kept from create until destroy, one per id."""
    import hashlib

    return state_dir / "bind-out" / hashlib.sha256(bind_id.encode()).hexdigest()[:24]


def _with_out(state_dir: Path, bind_id: str, local: dict[str, str]) -> dict[str, str]:
    path = out_dir(state_dir, bind_id)
    make_dir(path, PRIVATE_DIR)
    return {**local, "out": str(path)}


def _state(ctx: Context) -> Path:
    """The state directory, where binds keep their state files (an apply has one)."""
    assert ctx.paths is not None
    return ctx.paths.state


def _resolver(ctx: Context) -> Resolver:
    assert ctx.resolver is not None
    return ctx.resolver


def _drop_out(state_dir: Path, bind_id: str) -> None:
    import shutil

    shutil.rmtree(out_dir(state_dir, bind_id), ignore_errors=True)


def check(item: Item, outputs: dict[str, Any], ctx: Context) -> str | None:
    """Run a bind's check with its recorded outputs: None when in order, else why it drifted.

    The check's actions run first (one that fails is drift, with its error);
    then its `drifted` (a boolean, or an action's output: "true" means drifted)
    and `message` are resolved.
    """
    from syslua.resources.base import ResourceError

    state = ctx.paths.state if ctx.paths is not None else None
    local = self_placeholders(outputs)
    if state is not None:
        local["out"] = str(out_dir(state, item.key))
    try:
        local = run_actions(f"bind {item.key} check", thaw(item.get("check") or []), ctx, local)
        result = thaw(item.get("check_result") or {})
        drifted = result.get("drifted", False)
        if isinstance(drifted, str):
            drifted = _resolver(ctx).resolve(drifted, local).strip().lower() == "true"
        if not drifted:
            return None
        message = result.get("message")
        return _resolver(ctx).resolve(message, local) if message else "its check reported drift"
    except ResourceError as e:
        return str(e)


def load_outputs(state_dir: Path, digest: str) -> dict[str, Any] | None:
    try:
        return json.loads(state_file(state_dir, digest).read_text())["outputs"]
    except (OSError, ValueError, KeyError):
        return None


def self_placeholders(outputs: dict[str, Any]) -> dict[str, str]:
    """Recorded outputs as the `self:<name>` placeholders of update, destroy and check."""
    return {f"self:{k}": str(v) for k, v in outputs.items()}


def _save(path: Path, bind_id: str | None, outputs: dict[str, Any]) -> None:
    make_dir(path.parent, PRIVATE_DIR)  # outputs may be secrets: owner only
    atomic_write(
        path, json.dumps({"id": bind_id, "outputs": outputs}, indent=1).encode(), PRIVATE_FILE
    )


def create(item: Item, ctx: Context) -> None:
    """Run the bind's actions and record its outputs."""
    _run_phase(
        item,
        "create",
        thaw(item.get("actions") or []),
        {},
        thaw(item.get("outputs") or {}),
        None,
        ctx,
    )


def update(item: Item, old: Item, old_outputs: dict[str, Any], ctx: Context) -> None:
    """Run `update` on an older definition of the bind (with its outputs as `self`).

    The journal record keeps how to re-create the old one, and its state file
    goes once the new outputs are recorded.
    """
    restore = {
        "hash": old.get("hash"),
        "id": old.key,
        "create": thaw(old.get("actions") or []),
        "outputs_spec": thaw(old.get("outputs") or {}),
        "state": str(state_file(_state(ctx), old.get("hash"))),
    }
    _run_phase(
        item,
        "update",
        thaw(item.get("update")),
        self_placeholders(old_outputs),
        thaw(item.get("update_outputs") or item.get("outputs") or {}),
        restore,
        ctx,
    )


def _run_phase(
    item: Item,
    phase: str,
    actions: list[Any],
    local: dict[str, str],
    outputs_spec: dict[str, Any],
    restore: dict[str, Any] | None,
    ctx: Context,
) -> None:
    digest = item.get("hash")
    path = state_file(_state(ctx), digest)
    destroy = thaw(item.get("destroy") or [])
    ctx.note(
        {
            "op": "bind",
            "phase": phase,
            "hash": digest,
            "id": item.key,
            "destroy": destroy,
            "outputs_spec": outputs_spec,
        }
    )
    ctx.before_change(str(path))
    local = _with_out(_state(ctx), item.key, local)
    local = run_actions(f"bind {item.key} {phase}", actions, ctx, local)
    outputs = {k: _resolver(ctx).resolve(str(v), local) for k, v in outputs_spec.items()}
    ctx.note(
        {
            "op": "bind",
            "phase": "created",
            "hash": digest,
            "id": item.key,
            "destroy": destroy,
            "outputs": outputs,
            "restore": restore,
        }
    )
    _save(path, item.key, outputs)
    if restore is not None:
        Path(restore["state"]).unlink(
            missing_ok=True
        )  # the old outputs live on in the journal record


def update_in_place(item: Item, recorded: dict[str, Any], ctx: Context) -> None:
    """Converge a drifted bind with its `update`, from its recorded outputs.

    Only the state file is journaled (as a path): a rollback puts the old
    outputs back.
    """
    path = state_file(_state(ctx), item.get("hash"))
    ctx.before_change(str(path))
    local = run_actions(
        f"bind {item.key} update",
        thaw(item.get("update")),
        ctx,
        _with_out(_state(ctx), item.key, self_placeholders(recorded)),
    )
    spec = thaw(item.get("update_outputs") or item.get("outputs") or {})
    outputs = {k: _resolver(ctx).resolve(str(v), local) for k, v in spec.items()}
    _save(path, item.key, outputs)


def destroy(item: Item, outputs: dict[str, Any], ctx: Context, note: Any) -> None:
    """Run a bind's destroy; once it succeeded, a journal record can recreate it."""
    # The state file is not journaled as a path: undoing the "destroyed" record
    # writes it again, with the outputs of the re-created bind.
    path = state_file(_state(ctx), item.get("hash"))
    if item.get("destroy"):
        run_actions(
            f"bind {item.key} destroy",
            thaw(item.get("destroy")),
            ctx,
            _with_out(_state(ctx), item.key, self_placeholders(outputs)),
        )
    _drop_out(_state(ctx), item.key)
    note(
        {
            "op": "bind",
            "phase": "destroyed",
            "hash": item.get("hash"),
            "id": item.key,
            "create": thaw(item.get("actions") or []),
            "outputs_spec": thaw(item.get("outputs") or {}),
            "state": str(path),
        }
    )
    path.unlink(missing_ok=True)


class Destroyed(set[str]):
    """The hashes of binds whose "created" record an undo run has undone: their
    "create" or "update" record needs nothing more."""


def undo_record(
    rec: Mapping[str, Any],
    store: Any,
    runner: Runner,
    report: Any,
    state_dir: Path | None = None,
    seen: Destroyed | None = None,
) -> None:
    """Undo one journal record of a bind (see `syslua.resources.bind`)."""
    from syslua.resources.placeholders import Unresolved

    if state_dir is None:
        return
    phase = rec.get("phase")
    ctx = Context(runner=runner, noop=False, store=store, resolver=Resolver(None, store, state_dir))
    if phase == "created":
        if seen is not None:
            seen.add(rec["hash"])
        if rec.get("destroy") and rec.get("outputs") is not None:
            run_actions(
                f"bind {rec['id']} destroy",
                rec["destroy"],
                ctx,
                _with_out(state_dir, rec["id"], self_placeholders(rec["outputs"])),
            )
        if not rec.get("restore"):
            _drop_out(state_dir, rec["id"])
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
            out = {"out": str(out_dir(state_dir, rec["id"]))}
            outputs = {
                k: _resolver(ctx).resolve(str(v), out)
                for k, v in (rec.get("outputs_spec") or {}).items()
            }
        except Unresolved:
            report.left.append(
                f"bind {rec['id']}: interrupted during {phase}; its outputs were never recorded, "
                "so it could not be destroyed"
            )
            return
        if rec.get("destroy"):
            run_actions(
                f"bind {rec['id']} destroy",
                rec["destroy"],
                ctx,
                _with_out(state_dir, rec["id"], self_placeholders(outputs)),
            )
        if phase == "create":
            _drop_out(state_dir, rec["id"])
        report.restored.append(f"bind {rec['id']}")
    elif phase == "destroyed":
        _recreate(rec, ctx)
        report.restored.append(f"bind {rec['id']}")


def _recreate(rec: Mapping[str, Any], ctx: Context) -> None:
    """The seed's restore: run a bind's create again and record its outputs."""
    state_dir = Path(rec["state"]).parent.parent
    local = run_actions(
        f"bind {rec.get('id', rec['hash'][:12])} restore",
        rec.get("create") or [],
        ctx,
        _with_out(state_dir, rec.get("id") or rec["hash"], {}),
    )
    outputs = {
        k: _resolver(ctx).resolve(str(v), local) for k, v in (rec.get("outputs_spec") or {}).items()
    }
    _save(Path(rec["state"]), rec.get("id"), outputs)
