"""Declarative removal: items of the current snapshot that the new manifest no longer declares.

Each type removes its own items (`ResourceType.remove`): a file's original
is restored or the file deleted, an exec's `undo` command runs, a package
leaves the profile, ... Everything a removal changes is journaled first
(paths through `Context.record`, other undo records through `Context.note`),
so a failed apply puts removed items back.
"""

from __future__ import annotations

import time
from typing import Any

from syslua.execute.item import CHANGED, FAILED, UNCHANGED, ItemResult
from syslua.manifest.model import Item
from syslua.resources import get as get_type
from syslua.resources.base import Context, ResourceError
from syslua.state.journal import Journal


def remove_item(
    item: Item,
    ctx: Context,
    journal: Journal,
    original: dict[str, Any] | None,
    state: dict[str, Any],
) -> ItemResult:
    """Remove `item`; `original` is what it took over, `state` what the current snapshot recorded for it."""
    start = time.monotonic()
    rtype = get_type(item.type)
    label = rtype.key_label(item.key)
    ident = item.id

    def result(status: str, message: str, **kw: Any) -> ItemResult:
        return ItemResult(
            ident, item.type, label, status, message, "remove", time.monotonic() - start, **kw
        )

    rctx = ctx.replace(
        record=lambda path: journal.before_change(ident, path),
        record_batch=lambda paths: journal.before_changes(ident, paths),
        note=lambda rec: journal.note({**rec, "item": ident, "type": item.type}),
    )
    try:
        removal = rtype.remove(item, rctx, original, state)
    except (ResourceError, OSError) as e:
        return result(FAILED, str(e), mutated=True)
    if removal.failed:
        return result(FAILED, removal.message, mutated=True, output=removal.output)
    status = CHANGED if removal.changed else UNCHANGED
    return result(status, removal.message, mutated=removal.changed, output=removal.output)
