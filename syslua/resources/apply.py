"""The apply kind: a child manifest whose resources run inside the same run and DAG.

Children are resolved while planning (`syslua.manifest.resolve`), so here the
apply item only reports on them: it finishes after its children (its
members: items whose `parent` it is), is changed when any child changed, and
fails with the count when any child failed (seed apply-resource.md, Child
Manifest Failures).
"""

from __future__ import annotations

from syslua.errors import display_path
from syslua.manifest.checks import boolean, choice, local_path, mapping
from syslua.manifest.model import Item
from syslua.manifest.schema import Prop, schema
from syslua.resources.base import (
    FAIL,
    NONE,
    NOTHING,
    RUN,
    UPDATE,
    Applied,
    Context,
    Decision,
    Members,
)
from syslua.resources.kind import Kind, Scheduling

# -- the declaration -----------------------------------------------------------

SCHEMA = schema(
    "apply",
    "name",
    [
        Prop("name", local_path, doc="child manifest (.lua or .yaml), relative to this file"),
        Prop("ensure", choice("present"), doc="the only value"),
        Prop("noop", boolean, doc="run the child's resources in noop mode"),
        Prop(
            "health_check_only",
            boolean,
            doc="only run the health checks of the child's resources",
        ),
        Prop("allow_apply", boolean, doc="whether the child may contain apply items of its own"),
        Prop(
            "data",
            mapping,
            doc="sys.data in a Lua child, the data. root of lookups in a YAML child",
        ),
        Prop(
            "provider",
            choice("ccmmanifest", "lua"),
            doc="accepted for CCM compatibility; the format follows the file extension",
        ),
    ],
    defaults={
        "ensure": "present",
        "noop": False,
        "health_check_only": False,
        "allow_apply": True,
        "data": {},
    },
    doc="A child manifest, Lua or CCM YAML (docs/resources/apply.md).",
)


class ApplyType(Kind[Members], Scheduling):
    name = "apply"
    schema = SCHEMA
    in_dag = True
    inline = False
    aggregates = True  # reports on its children; runs even when one of them failed

    def label(self, item: Item) -> str:
        return display_path(item.key)

    def status(self, item: Item, ctx: Context) -> Members:
        return ctx.members(item)

    def decide(
        self, item: Item, status: Members, ctx: Context, triggered: bool = False
    ) -> Decision:
        if status.failed:
            return Decision(FAIL, f"{status.failed} of {status.total} child resources failed")
        if status.changed and (ctx.previous is None or item.id not in ctx.previous):
            # A child applied for the first time runs, it updates nothing: `will run`.
            if ctx.noop:
                return Decision(RUN, "", "Would have run")
            return Decision(RUN, f"{status.changed} of {status.total} child resources changed")
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

    def apply(
        self, item: Item, decision: Decision, planned: Members | None, ctx: Context
    ) -> Applied:
        return NOTHING

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        return None
