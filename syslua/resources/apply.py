"""The apply type: a child manifest whose resources run inside the same run and DAG.

Children are resolved while planning (`syslua.manifest.resolve`), so here the
apply item only reports on them: it finishes after its children, is changed
when any child changed, and fails with the count when any child failed
(seed apply-resource.md, Child Manifest Failures).
"""

from __future__ import annotations

from dataclasses import dataclass

from syslua.errors import display_path
from syslua.manifest.model import Item
from syslua.resources.base import FAIL, NONE, UPDATE, Context, Decision, ResourceType


@dataclass(frozen=True, slots=True)
class Status:
    total: int
    changed: int
    failed: int
    would_change: int = 0


def children(item: Item, ctx: Context) -> list[Item]:
    if ctx.manifest is None:
        return []
    return [i for i in ctx.manifest if i.parent == item.id]


class ApplyType(ResourceType):
    name = "apply"
    in_dag = True
    aggregates = True  # reports on its children; runs even when one of them failed

    def label(self, item: Item) -> str:
        return display_path(item.key)

    def status(self, item: Item, ctx: Context) -> Status:
        kids = children(item, ctx)
        changed = sum(1 for k in kids if k.id in ctx.changed)
        failed = sum(1 for k in kids if k.id in ctx.failed)
        would = sum(1 for k in kids if k.id in ctx.would_change)
        return Status(len(kids), changed, failed, would)

    def decide(self, item: Item, status: Status, ctx: Context, triggered: bool = False) -> Decision:
        if status.failed:
            return Decision(FAIL, f"{status.failed} of {status.total} child resources failed")
        if status.changed:
            if ctx.noop:  # `will update (2 of 3 child resources)` in a plan
                return Decision(
                    UPDATE,
                    f"{status.changed} of {status.total} child resources",
                    "Would have changed",
                )
            return Decision(UPDATE, f"{status.changed} of {status.total} child resources changed")
        if status.would_change:
            # A noop child: nothing changed, but say what would have.
            return Decision(
                NONE, f"{status.would_change} of {status.total} child resources would change (noop)"
            )
        return Decision(NONE, f"{status.total} child resources unchanged")

    def apply(self, item: Item, decision: Decision, ctx: Context) -> None:
        return None

    def verify(self, item: Item, decision: Decision, ctx: Context) -> str | None:
        return None

    def diff(self, item: Item, status: Status, ctx: Context) -> str | None:
        return None
