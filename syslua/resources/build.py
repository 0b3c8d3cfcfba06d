"""`sys.build`: an immutable store object produced by recorded actions.

A build is cached by its hash (`store/trees/<hash>-<id>`): present means
done. Its actions run in a staging directory (`$${out}`) that is moved into
the store, read-only, only when every action succeeded. Builds are never
rolled back; a failed build leaves nothing in the store.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from syslua.fsutil import atomic_write
from syslua.manifest.checks import anything, nonempty_string
from syslua.manifest.model import Item, Manifest, thaw
from syslua.manifest.primitives import tree_name
from syslua.manifest.schema import Prop, schema
from syslua.resources.actions import run_actions
from syslua.resources.base import (
    CREATE,
    NONE,
    NOTHING,
    REMOVE,
    Applied,
    Context,
    Decision,
    Removal,
    SnapshotContext,
)
from syslua.resources.kind import Kind, Ordered, Recorded, Removable
from syslua.state.records import Original
from syslua.state.store import Store


def outputs_file(state_dir: Path, digest: str) -> Path:
    """Where a build's outputs that hold action results (`ctx:exec`'s stdout) are kept."""
    return state_dir / "builds" / f"{digest}.json"


def record_action_outputs(item: Item, local: dict[str, str], state_dir: Path) -> None:
    """Keep the outputs that name an action's result, with that result filled in.

    Other outputs are known from the declaration alone; these are not, and
    the staging directory they ran in is gone once the tree is in the store.
    `$${out}` stays a placeholder (the tree's path is filled in on use).
    """
    outputs = thaw(item.get("outputs") or {})
    recorded = {
        name: re.sub(r"\$\$\{(action:[^}]*)\}", lambda m: local.get(m.group(1), m.group(0)), value)
        for name, value in outputs.items()
        if isinstance(value, str) and "$${action:" in value
    }
    if recorded:
        atomic_write(outputs_file(state_dir, item.get("hash")), json.dumps(recorded).encode())


# -- the declaration -----------------------------------------------------------

SCHEMA = schema(
    "build",
    "id",
    [
        Prop("id", nonempty_string),
        Prop("inputs", anything),
        Prop("actions", anything),
        Prop("outputs", anything),
    ],
)


class BuildType(Kind[bool], Removable, Recorded, Ordered):
    name = "build"
    schema = SCHEMA

    def label(self, item: Item) -> str:
        return f"{item.key} ({item.get('hash')[:12]})"

    def status(self, item: Item, ctx: Context) -> bool:
        return ctx.store is not None and ctx.store.tree_path(tree_name(item)).is_dir()

    def decide(self, item: Item, status: bool, ctx: Context, triggered: bool = False) -> Decision:
        if status:
            return Decision(NONE, "built (cached by its inputs)")
        return Decision(CREATE, "not in the store", "Would have built")

    def apply(self, item: Item, decision: Decision, planned: bool | None, ctx: Context) -> Applied:
        assert ctx.store is not None and ctx.paths is not None
        staging = ctx.store.staging_dir(f"build-{item.key}-")
        out = staging / "out"
        out.mkdir()
        try:
            local = run_actions(
                f"build {item.key}",
                thaw(item.get("actions") or []),
                ctx,
                {"out": str(out)},
                cwd=str(out),
            )
            record_action_outputs(item, local, ctx.paths.state)
            ctx.store.add_tree(out, tree_name(item))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return NOTHING

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        return None if self.status(item, ctx) else "the build output is not in the store"

    # -- capabilities ----------------------------------------------------------
    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        return Decision(REMOVE, "no longer declared; its store object stays until `sys gc`")

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        return Removal("no longer declared", changed=False)  # builds are never undone

    def provides(self, item: Item) -> tuple[str, ...]:
        """Items whose placeholders name this build's outputs run after it."""
        return (f"output:{item.get('hash')}",)

    def requires(self, item: Item) -> tuple[str, ...]:
        return ()

    def predecessors(self, item: Item, manifest: Manifest) -> tuple[str, ...]:
        return ()

    def snapshot_state(self, item: Item, sctx: SnapshotContext) -> dict[str, Any]:
        return {"tree": tree_name(item)}

    def materialise(
        self, item: Item, state: Mapping[str, Any], store: Store, snapshot: str
    ) -> Item:
        return item  # its tree is in the store under its name

    def blobs(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    def trees(self, state: Mapping[str, Any]) -> set[str]:
        return {state["tree"]} if state.get("tree") else set()
