"""Declarative removal: items of the current snapshot that the new manifest no longer declares.

Each kind removes its own items (`Removable.remove`): a file's original is
restored or the file deleted, an exec's `undo` command runs, a package
leaves the profile, ... A kind without that capability leaves its items as
they are. Everything a removal changes is journaled first (paths through
`Context.before_change`, other undo records through `Context.note`), so a
failed apply puts removed items back.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from syslua.execute.item import CHANGED, FAILED, UNCHANGED, ItemResult
from syslua.manifest.model import Item
from syslua.plan.planner import NOT_DECLARED, key_label
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.base import Context, Removal, ResourceError
from syslua.resources.kind import Removable
from syslua.state.journal import Journal
from syslua.state.records import Original


def remove_item(
    item: Item,
    ctx: Context,
    journal: Journal,
    original: Original | None,
    state: Mapping[str, Any],
) -> ItemResult:
    """Remove `item`; `original` is what it took over, `state` what the current snapshot recorded for it."""
    start = time.monotonic()
    kind = get_type(item.type)
    label = key_label(kind, item.key)
    ident = item.id

    def result(status: str, message: str, **kw: Any) -> ItemResult:
        return ItemResult(
            ident, item.type, label, status, message, "remove", time.monotonic() - start, **kw
        )

    removable = capability(kind, Removable)
    try:
        if removable is None:
            removal = Removal(NOT_DECLARED, changed=False)
        else:
            removal = removable.remove(item, ctx.for_item(item, journal), original, state)
    except (ResourceError, OSError) as e:
        return result(FAILED, str(e), mutated=True)
    if removal.failed:
        return result(FAILED, removal.message, mutated=True, output=removal.output)
    status = CHANGED if removal.changed else UNCHANGED
    return result(status, removal.message, mutated=removal.changed, output=removal.output)
