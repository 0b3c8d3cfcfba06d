"""Undo what a journal recorded: paths put back, types' own records undone.

Used by in-process rollback (reverse completion order) and by crash
recovery (every record of an interrupted journal, newest first). A `path`
record is restored here; any other record belongs to the kind that wrote it
(`Undoes.undo`), named in the record.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from syslua.errors import StateError
from syslua.resources import capability, owner_of
from syslua.resources.base import ResourceError, UndoContext, UndoReport
from syslua.resources.kind import Undoes
from syslua.resources.process import Runner
from syslua.state.restore import restore_path
from syslua.state.store import Store

__all__ = ["UndoReport", "restore_path", "sweep_created_dirs", "undo_records"]


def undo_records(
    records: list[dict[str, Any]], store: Store, runner: Runner, state_dir: Path | None = None
) -> UndoReport:
    """Undo records newest first."""
    report = UndoReport()
    uctx = UndoContext(store=store, runner=runner, state_dir=state_dir, report=report)
    for rec in reversed(records):
        op = rec.get("op")
        try:
            if op == "path":
                note = restore_path(rec["path"], rec["prev"], store)
                if note:
                    report.left.append(note)
                else:
                    report.restored.append(rec["path"])
                continue
            kind = owner_of(rec)
            if kind is None:
                continue  # a record that needs no undoing (begin, commit)
            owner = capability(kind, Undoes)
            if owner is None:
                raise StateError(f"{kind.name}: no way to undo a `{op}` record")
            owner.undo(rec, uctx)
        except (OSError, StateError, ResourceError) as e:
            what = rec.get("path") or rec.get("item") or op
            report.failed.append(f"{what}: {e}")
            if op == "path":
                report.unrestored.append({"path": rec["path"], "prev": rec["prev"], "why": str(e)})
                _copy_out(rec["prev"], store)
        except (KeyError, TypeError, ValueError) as e:  # a record damaged on disk
            what = rec.get("path") or rec.get("item") or op
            report.failed.append(f"{what}: the journal record is damaged ({type(e).__name__}: {e})")
    sweep_created_dirs(records, store, report)
    return report


def _copy_out(prev: dict[str, Any], store: Store) -> None:
    """Give the previous content of a path that was not put back a file of
    its own in the store (a packed blob has none), which `sys status` names
    so that it can be copied back by hand."""
    blob = prev.get("blob") if isinstance(prev, dict) else None
    if blob:
        try:
            store.loose_path(blob)
        except (OSError, StateError):
            pass  # status names where it is kept, whatever holds it


def sweep_created_dirs(records: list[dict[str, Any]], store: Store, report: UndoReport) -> None:
    """Put back, deepest first, paths these records say were not a directory
    and that are an empty directory now: the directories the apply created
    (or put where a link or file was) for several items at once. Records are
    undone item by item, so such a directory may still have held another
    item's file when its own record was undone; its "left in place" note
    goes once it is put back here."""
    last: dict[str, dict[str, Any]] = {}
    for r in records:
        prev, path = r.get("prev"), r.get("path")
        if r.get("op") != "path" or not isinstance(prev, dict) or not isinstance(path, str):
            continue  # a damaged record: undo_records reported it
        if prev.get("kind") != "dir":
            last.setdefault(path, prev)  # the first record: what was there before
    for path in sorted(last, key=lambda p: p.count("/"), reverse=True):
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        try:
            if os.listdir(path):
                continue  # something is still in it (its note stays)
            note = restore_path(path, last[path], store)
        except OSError:
            continue
        if note is None:
            report.left[:] = [n for n in report.left if not n.startswith(f"{path}: left in place")]
            report.restored.append(path)
