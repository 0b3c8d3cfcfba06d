"""Declarative removal: items of the current snapshot that the new manifest no longer declares.

| item   | removal                                                            |
|--------|--------------------------------------------------------------------|
| file   | the original syslua took over is restored; otherwise the file or   |
|        | symlink is deleted, and a directory is removed if syslua created   |
|        | it and it is empty (a non-empty one is left, with a warning)       |
| exec   | its `undo` command runs; without one there is nothing to undo      |
| other  | the type's own `remove` (packages leave the profile, ...)          |

Every path is recorded in the journal before it changes, so a failed apply
puts removed items back.
"""

from __future__ import annotations

import os
import time
from typing import Any

from syslua.execute.item import CHANGED, FAILED, UNCHANGED, ItemResult
from syslua.execute.undo import restore_path
from syslua.manifest.model import Item
from syslua.paths import abbreviate
from syslua.resources import get as get_type
from syslua.resources import has as has_type
from syslua.resources.base import Context, ResourceError
from syslua.resources.exec import journal_env, run_options
from syslua.resources.file_posix import DIRECTORY, status
from syslua.state.journal import Journal
from syslua.state.store import Store


def remove_item(item: Item, ctx: Context, journal: Journal, store: Store,
                original: dict[str, Any] | None, created_parents: Any = ()) -> ItemResult:
    start = time.monotonic()
    label = abbreviate(item.key) if item.type == "file" else item.key

    def result(state: str, message: str, **kw: Any) -> ItemResult:
        return ItemResult(item.id, item.type, label, state, message, "remove", time.monotonic() - start, **kw)

    try:
        if item.type == "file":
            message = _remove_file(item, journal, store, original)
            for parent in sorted(created_parents, key=len, reverse=True):
                journal.before_change(item.id, parent)
                try:
                    os.rmdir(parent)  # only when empty: anything else in it stays
                except OSError:
                    pass
            return result(CHANGED, message, mutated=True)
        if item.type == "exec":
            undo = item.get("undo")
            if not undo:
                return result(UNCHANGED, "no longer declared; nothing to undo (no undo command)")
            # Rolling back this removal means running the exec's own command again.
            journal.exec_started(item.id, item.get("command"), journal_env(item))
            run = ctx.runner.run(undo, **run_options(item))
            if run.exit_code != 0 or run.timed_out:
                return result(FAILED, f"undo command failed: {run.describe()}", mutated=True, output=run)
            return result(CHANGED, "undone (undo command ran)", mutated=True, output=run)
        if has_type(item.type) and hasattr(get_type(item.type), "remove"):
            message = get_type(item.type).remove(item, ctx, journal)  # type: ignore[attr-defined]
            return result(CHANGED, message, mutated=True)
        return result(UNCHANGED, "no longer declared")
    except (ResourceError, OSError) as e:
        return result(FAILED, str(e), mutated=True)


def _remove_file(item: Item, journal: Journal, store: Store, original: dict[str, Any] | None) -> str:
    path = item.key
    journal.before_change(item.id, path)
    if original is not None and original.get("kind") == "tree":
        notes = [restore_path(r["path"], r, store) for r in original["records"]]
        left = [n for n in notes if n]
        return "; ".join(left) if left else "restored the original directory it took over"
    if original is not None:
        note = restore_path(path, original, store)
        return note or "restored the original it took over"
    state = status(path)
    if not state.exists:
        return "already gone"
    if state.ensure == DIRECTORY:
        try:
            os.rmdir(path)
        except OSError:
            return "left in place: the directory is not empty (it holds files syslua does not manage)"
        return "removed directory"
    os.unlink(path)
    return "removed"
