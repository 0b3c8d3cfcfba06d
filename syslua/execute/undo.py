"""Undo what a journal recorded: paths put back, types' own records undone.

Used by in-process rollback (reverse completion order) and by crash
recovery (every record of an interrupted journal, newest first). A `path`
record is restored here; any other record belongs to the type that wrote it
(`ResourceType.undo`), named in the record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from syslua.errors import StateError
from syslua.resources import owner_of
from syslua.resources.base import ResourceError, UndoContext, UndoReport
from syslua.resources.process import Runner
from syslua.state.restore import restore_path
from syslua.state.store import Store

__all__ = ["UndoReport", "restore_path", "undo_records"]


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
            if op == "path":
                report.unrestored.append({"path": rec["path"], "prev": rec["prev"], "why": str(e)})
        except (KeyError, TypeError, ValueError) as e:  # a record damaged on disk
            what = rec.get("path") or rec.get("item") or op
            report.failed.append(f"{what}: the journal record is damaged ({type(e).__name__}: {e})")
    return report
