"""Undo what a journal recorded: paths put back, kinds' own records undone.

Used by in-process rollback (reverse completion order) and by crash
recovery (every record of an interrupted journal, newest first). A `path`
record is restored here; any other record belongs to the kind that wrote it
(`Undoes.undo`), named in the record.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from syslua.errors import StateError
from syslua.resources import capability, owner_of
from syslua.resources.base import ResourceError, UndoContext, UndoReport
from syslua.resources.kind import Undoes
from syslua.resources.process import Runner
from syslua.state.records import (
    ABSENT,
    DIR,
    Damaged,
    KindRecord,
    PathRecord,
    PathState,
    Record,
    Unrestored,
)
from syslua.state.restore import restore_path
from syslua.state.store import Store

__all__ = ["UndoReport", "UndoSession", "restore_path", "sweep_created_dirs", "undo_records"]


class UndoSession:
    """Several undo runs that end together (a rollback undoes its items one at
    a time): kinds whose records wait for older ones (`Undoes.after_undo`)
    finish once, after the last, seeing every path put back."""

    def __init__(self) -> None:
        self.memo: dict[type, object] = {}
        self.kinds: list[Undoes] = []
        self.put_back = UndoReport()

    def finish(self, store: Store, runner: Runner, state_dir: Path | None) -> UndoReport:
        """Run each kind's `after_undo`; what they did, as a report."""
        report = UndoReport()
        seen = UndoReport()
        seen.restored, seen.removed = list(self.put_back.restored), list(self.put_back.removed)
        uctx = UndoContext(store, runner, state_dir, seen, self.memo)
        for kind in self.kinds:
            try:
                kind.after_undo(uctx)
            except (OSError, StateError, ResourceError) as e:
                seen.failed.append(f"{type(kind).__name__}: {e}")
        report.restored = seen.restored[len(self.put_back.restored) :]
        report.failed = seen.failed
        self.kinds.clear()
        return report


def undo_records(
    records: Sequence[Record],
    store: Store,
    runner: Runner,
    state_dir: Path | None = None,
    *,
    session: UndoSession | None = None,
) -> UndoReport:
    """Undo records newest first. With `session`, the kinds' `after_undo` waits
    for `session.finish`; without, it runs at the end of this call."""
    report = UndoReport()
    alone = session is None
    session = session if session is not None else UndoSession()
    uctx = UndoContext(store, runner, state_dir, report, session.memo)
    for rec in reversed(records):
        if isinstance(rec, Damaged):
            report.failed.append(f"{rec.what}: the journal record is damaged ({rec.why})")
            continue
        try:
            if isinstance(rec, PathRecord):
                note = restore_path(rec.path, rec.prev, store)
                if note:
                    report.left.append(note)
                else:
                    _put_back(report, rec.path, rec.prev)
            elif isinstance(rec, KindRecord):
                _undo_kind_record(rec, uctx)
            # else a record that needs no undoing (begin, commit, ...)
        except (OSError, StateError, ResourceError) as e:
            report.failed.append(f"{_what(rec)}: {e}")
            if isinstance(rec, PathRecord):
                report.unrestored.append(Unrestored(rec.path, rec.prev, str(e)))
                _copy_out(rec.prev, store)
        except (KeyError, TypeError, ValueError) as e:  # a kind's record damaged on disk
            report.failed.append(
                f"{_what(rec)}: the journal record is damaged ({type(e).__name__}: {e})"
            )
    session.kinds += [k for k in _kinds_of(records) if k not in session.kinds]
    session.put_back.restored += report.restored
    session.put_back.removed += report.removed
    if alone:
        report.merge(session.finish(store, runner, state_dir))
    sweep_created_dirs(records, store, report)
    return report


def _kinds_of(records: Sequence[Record]) -> list[Undoes]:
    """The kinds that undid records of their own, once each, in record order."""
    out: list[Undoes] = []
    for rec in records:
        if isinstance(rec, KindRecord):
            kind = owner_of(rec)
            owner = capability(kind, Undoes) if kind is not None else None
            if owner is not None and owner not in out:
                out.append(owner)
    return out


def _put_back(report: UndoReport, path: str, prev: PathState) -> None:
    """A path as it was: one the apply created is `removed`, others `restored`."""
    (report.removed if prev.kind == ABSENT else report.restored).append(path)


def _undo_kind_record(rec: KindRecord, uctx: UndoContext) -> None:
    """A kind's own record, undone by the kind that wrote it."""
    kind = owner_of(rec)
    if kind is None:
        return  # a kind syslua no longer has: nothing knows how
    owner = capability(kind, Undoes)
    if owner is None:
        raise StateError(f"{kind.name}: no way to undo a `{rec.op}` record")
    owner.undo(rec, uctx)


def _what(rec: Record) -> str:
    if isinstance(rec, PathRecord):
        return rec.path
    return rec.item or str(rec.op)


def _copy_out(prev: PathState, store: Store) -> None:
    """Give the previous content of a path that was not put back a file of
    its own in the store (a packed blob has none), which `sys status` names
    so that it can be copied back by hand."""
    if prev.blob:
        try:
            store.loose_path(prev.blob)
        except (OSError, StateError):
            pass  # status names where it is kept, whatever holds it


def sweep_created_dirs(records: Sequence[Record], store: Store, report: UndoReport) -> None:
    """Put back, deepest first, paths these records say were not a directory
    and that are an empty directory now: the directories the apply created
    (or put where a link or file was) for several items at once. Records are
    undone item by item, so such a directory may still have held another
    item's file when its own record was undone; its "left in place" note
    goes once it is put back here."""
    last: dict[str, PathState] = {}
    for r in records:
        if isinstance(r, PathRecord) and r.prev.kind != DIR:
            last.setdefault(r.path, r.prev)  # the first record: what was there before
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
            _put_back(report, path, last[path])
