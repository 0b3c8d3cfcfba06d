"""Crash recovery: roll back an apply that was interrupted, from the journal it left.

An apply that died before committing left its journal behind: every path it
was about to change, recorded before the change. `recover` undoes those
changes (or, when the journal says the run had committed, finishes making
its snapshot current). A journal that cannot be read is set aside, and the
current snapshot forgotten, so that the next apply converges everything.
The caller holds the state lock.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from syslua.fsutil import remove_temp_leftovers
from syslua.paths import Paths
from syslua.resources.process import Runner
from syslua.state.originals import Originals, clear_unrestored, note_unrestored
from syslua.state.snapshots import Snapshots
from syslua.state.store import Store

if TYPE_CHECKING:
    from syslua.execute.apply import Reporter


def recover(paths: Paths, reporter: Reporter) -> str | None:
    """Roll back an interrupted apply, if its journal was left behind. Caller holds the lock."""
    from syslua.execute.undo import undo_records
    from syslua.state import journal as journal_mod

    if not journal_mod.exists(paths.journal):
        return None
    problem = journal_mod.unusable(paths.journal)
    if problem is not None:
        return _set_aside_unusable(paths, problem)
    records = journal_mod.read(paths.journal)
    snapshots = Snapshots(paths)
    committed = next((r for r in records if r.get("op") == "commit"), None)
    registry = Originals.load(paths.state)
    if committed is not None:
        # The snapshot was written before the crash: finish the commit.
        snapshots.set_current(committed["snapshot"])
        if committed.get("removed"):
            registry.drop(committed["removed"])
            registry.save()
        clear_unrestored(paths.state)
        journal_mod.remove(paths.journal)
        return f"finished recording snapshot {committed['snapshot']} of an apply that was interrupted after it completed"
    begin = records[0] if records and records[0].get("op") == "begin" else {}
    store = Store(paths.store)
    # A process killed while writing left its temp file beside the target:
    # removed before undoing (it could keep a directory syslua made from
    # being removed) and after (undoing writes files too).
    touched = [r["path"] for r in records if r.get("op") == "path" and "path" in r]
    remove_temp_leftovers(touched)
    report = undo_records(records, store, Runner(), paths.state)
    remove_temp_leftovers(touched)
    for rec in records:
        if rec.get("op") == "snapshot" and rec["snapshot"] in snapshots.index()["order"]:
            snapshots.delete(rec["snapshot"])  # recorded, never committed
    added = [i for r in records if r.get("op") == "originals" for i in r.get("added", ())]
    if report.ok:
        if added:
            registry.drop(added)  # taken over by the run that was rolled back
            registry.save()
        journal_mod.remove(paths.journal)
        what = (
            f"rolled back an interrupted {begin.get('kind', 'apply')} (pid {begin.get('pid', '?')})"
        )
        if report.left or report.not_undone:
            return (
                what
                + "; not everything could be put back:\n  "
                + "\n  ".join(report.left + report.not_undone)
            )
        return what + "; the machine is as it was before it"
    note_unrestored(paths.state, report.unrestored)
    snapshots.clear_current()
    journal_mod.set_aside(
        paths.journal / journal_mod.JOURNAL,
        paths.failed_journals,
        f"recovery-{time.strftime('%Y%m%d-%H%M%S')}.jsonl",
    )
    return (
        "could not fully roll back an interrupted apply: "
        + "; ".join(report.failed)
        + ". The current snapshot pointer was cleared; the next `sys apply` will converge everything."
    )


def _set_aside_unusable(paths: Paths, problem: str) -> str:
    """A journal that cannot be read cannot be rolled back: keep it for the
    user to look at, and forget the current snapshot (what the run did is
    unknown), so the next apply converges every item from the live state."""
    from syslua.state import journal as journal_mod

    stamp = time.strftime("%Y%m%d-%H%M%S")
    if paths.journal.is_symlink() or not paths.journal.is_dir():
        moved = journal_mod.set_aside(paths.journal, paths.failed_journals, f"unreadable-{stamp}")
    else:
        moved = journal_mod.set_aside(
            paths.journal / journal_mod.JOURNAL, paths.failed_journals, f"unreadable-{stamp}.jsonl"
        )
    Snapshots(paths).clear_current()
    return (
        f"{problem}; moved it to {moved}. The current snapshot pointer was cleared: "
        "the next `sys apply` will converge everything."
    )
