"""What changed between two snapshots (`sys diff [A B]`).

`pair` chooses the two snapshots (by default the previous and the current
one); `compare` lists, per item, whether it was added, removed or changed,
with the properties that changed and a unified diff of changed file
contents read from the store.
"""

from __future__ import annotations

from typing import Any

from syslua.errors import StateError, UsageError
from syslua.execute.objects import content_of
from syslua.manifest.model import canonical_json
from syslua.paths import abbreviate
from syslua.plan.planner import key_label
from syslua.resources import get as get_type
from syslua.resources import has as has_type
from syslua.resources.private import content_diff, is_private
from syslua.state.snapshots import Snapshot, Snapshots
from syslua.state.store import Store


def pair(snapshots: Snapshots, a: str | None, b: str | None) -> tuple[str, str]:
    """The ids of the snapshots to compare: A and B as given (ids, prefixes or
    tags); A alone against the current one; neither: the previous snapshot
    against the current one."""
    index = snapshots.index()
    order = index["order"]
    current = index.get("current")
    if a is None:
        if current is None or current not in order or order.index(current) == 0:
            raise UsageError("need two snapshots to compare: sys diff A B (see `sys history`)")
        return order[order.index(current) - 1], current
    if b is None:
        if current is None:
            raise UsageError("there is no current snapshot to compare with: sys diff A B")
        return snapshots.resolve_id(a), current
    return snapshots.resolve_id(a), snapshots.resolve_id(b)


def item_label(ident: str) -> str:
    type_, _, key = ident.partition("#")
    if not has_type(type_):
        return f"{type_} {key}"
    return f"{type_} {key_label(get_type(type_), key)}"


def compare(sa: Snapshot, sb: Snapshot, store: Store) -> list[dict[str, str | None]]:
    ma, mb = sa.load_manifest(), sb.load_manifest()
    out: list[dict[str, str | None]] = []
    for ident in sorted({i.id for i in ma} | {i.id for i in mb}):
        ia, ib = ma.get(ident), mb.get(ident)
        if ia is None:
            out.append({"id": ident, "symbol": "+", "label": item_label(ident), "detail": "added"})
        elif ib is None:
            out.append(
                {"id": ident, "symbol": "-", "label": item_label(ident), "detail": "removed"}
            )
        else:
            blob_a, blob_b = content_of(sa, ident), content_of(sb, ident)
            props_a = {k: v for k, v in ia.to_dict()["props"].items() if k != "source"}
            props_b = {k: v for k, v in ib.to_dict()["props"].items() if k != "source"}
            changed = [
                k
                for k in sorted(set(props_a) | set(props_b))
                if k != "content" and props_a.get(k) != props_b.get(k)
            ]
            detail = [
                f"{k} {canonical_json(props_a.get(k))} -> {canonical_json(props_b.get(k))}"
                for k in changed
            ]
            text_diff = None
            if blob_a != blob_b and (blob_a or blob_b):
                detail.insert(0, "content changed")
                modes = (props_a.get("mode"), props_b.get("mode"))
                text_diff = _blob_diff(store, blob_a, blob_b, ident, modes)
            if detail:
                out.append(
                    {
                        "id": ident,
                        "symbol": "~",
                        "label": item_label(ident),
                        "detail": ", ".join(detail),
                        "diff": text_diff,
                    }
                )
    return out


def _blob_diff(
    store: Store, a: str | None, b: str | None, ident: str, modes: tuple[Any, Any]
) -> str | None:
    """The content diff; of a private file (by either snapshot's mode, the
    mode on disk or where it lives: `resources/private.py`), only how many lines changed."""
    try:
        da = store.read(a) if a else b""
        db = store.read(b) if b else b""
    except StateError:
        return None
    path = ident.partition("#")[2]
    label = abbreviate(path)
    private = is_private((path,), modes)
    return content_diff(da, db, f"{label} (before)", f"{label} (after)", private=private)
