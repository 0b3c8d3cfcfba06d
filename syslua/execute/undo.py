"""Undo what a journal recorded: paths put back, types' own records undone.

Used by in-process rollback (reverse completion order) and by crash
recovery (every record of an interrupted journal, newest first). A `path`
record is restored here; any other record belongs to the type that wrote it
(`ResourceType.undo`), named in the record.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from syslua.errors import StateError
from syslua.resources import owner_of
from syslua.resources.base import ResourceError, UndoContext, UndoReport
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
            owner = owner_of(rec)
            if owner is not None:  # else a record that needs no undoing (begin, commit)
                owner.undo(rec, uctx)
        except (OSError, StateError, ResourceError) as e:
            what = rec.get("path") or rec.get("item") or op
            report.failed.append(f"{what}: {e}")
    sweep_created_dirs(records, report)
    return report


def sweep_created_dirs(records: list[dict[str, Any]], report: UndoReport) -> None:
    """Remove the directories these records say did not exist, deepest first,
    once they are empty again; a note that one was left in place goes away
    when it is removed here. Records are undone item by item, so a parent
    created for several items may still have held another item's file when
    its own record was undone."""
    absent = {
        r["path"] for r in records if r.get("op") == "path" and r["prev"].get("kind") == "absent"
    }
    for path in sorted(absent, key=lambda p: p.count("/"), reverse=True):
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        try:
            os.rmdir(path)
        except OSError:
            continue  # not empty: something that is not ours is in it (its note stays)
        note = f"{path}: left in place, the directory is not empty"
        if note in report.left:
            report.left.remove(note)
            report.restored.append(path)
