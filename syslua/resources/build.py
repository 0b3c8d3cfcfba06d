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
from pathlib import Path
from typing import Any

from syslua.fsutil import atomic_write
from syslua.manifest.model import Item, thaw
from syslua.manifest.primitives import tree_name
from syslua.resources.actions import run_actions
from syslua.resources.base import (
    CREATE,
    NONE,
    REMOVE,
    Context,
    Decision,
    RecordContext,
    ResourceType,
)


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


class BuildType(ResourceType):
    name = "build"
    in_dag = True

    def label(self, item: Item) -> str:
        return f"{item.key} ({item.get('hash')[:12]})"

    def status(self, item: Item, ctx: Context) -> bool:
        return ctx.store is not None and ctx.store.tree_path(tree_name(item)).is_dir()

    def decide(self, item: Item, status: bool, ctx: Context, triggered: bool = False) -> Decision:
        if status:
            return Decision(NONE, "built (cached by its inputs)")
        return Decision(CREATE, "not in the store", "Would have built")

    def apply(self, item: Item, decision: Decision, ctx: Context) -> None:
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

    def verify(self, item: Item, decision: Decision, ctx: Context) -> str | None:
        return None if self.status(item, ctx) else "the build output is not in the store"

    def diff(self, item: Item, status: Any, ctx: Context) -> str | None:
        return None

    # -- hooks ---------------------------------------------------------------
    def removal(self, item: Item) -> Decision:
        return Decision(REMOVE, "no longer declared; its store object stays until `sys gc`")

    def provides(self, item: Item) -> tuple[str, ...]:
        """Items whose placeholders name this build's outputs run after it."""
        return (f"output:{item.get('hash')}",)

    def snapshot_state(self, item: Item, rctx: RecordContext) -> dict[str, Any]:
        return {"tree": tree_name(item)}
