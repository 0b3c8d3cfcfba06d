"""An apply that failed or was interrupted undoes itself, in the same run.

1. Remove temp files syslua left beside the paths it touched (one could
   keep a directory syslua made from being removed).
2. Undo every item that may have changed the machine, in reverse completion
   order (so removed items come back in dependency order), then the
   generated outputs; remove temp files again, then directories several
   items created together.
3. All undone: the journal is deleted and the previous snapshot stays
   current; originals this run added are forgotten (syslua never managed
   those paths). Commands that completed and cannot be undone are listed
   in the outcome.
4. Undoing failed (self-healing): the current pointer is cleared so the next
   apply converges everything, the paths not put back are remembered for
   `sys status`, and the journal is set aside for the user to read.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from syslua.execute.item import FAILED
from syslua.execute.outcome import ApplyOutcome
from syslua.execute.run import RESTORES, ApplyRun
from syslua.fsutil import remove_temp_leftovers
from syslua.paths import abbreviate
from syslua.state.originals import note_unrestored

if TYPE_CHECKING:
    from syslua.resources.base import UndoReport
    from syslua.state.journal import Journal


def roll_back(run: ApplyRun, outcome: ApplyOutcome, journal: Journal) -> None:
    """Undo what the apply did (see the module's docstring); Ctrl-C cannot stop it."""
    with run.options.stop.rolling_back():
        _undo(run, outcome, journal)
    if outcome.undo is not None and outcome.undo.ok and run.added:
        assert run.registry is not None
        run.registry.drop(run.added)  # the paths are as they were: syslua never managed them
        run.registry.save()


def _undo(run: ApplyRun, outcome: ApplyOutcome, journal: Journal) -> None:
    from syslua.execute.undo import UndoReport, UndoSession, sweep_created_dirs, undo_records
    from syslua.resources.process import Runner

    run.reporter.rolling_back(interrupted=outcome.interrupted)
    try:
        journal.flush()
    except OSError:
        # A full disk: the records of every change were durable before it
        # was made; the undo below works from the same records in memory.
        pass
    remove_temp_leftovers(journal.by_path)
    store, state = run.store, run.paths.state
    runner = Runner()  # the apply's runner may be cancelled; undo commands need their own
    runner.tracker = journal
    report = UndoReport()
    session = UndoSession()  # kinds that finish once every record is undone
    # The paths a rollback put back outside any item, after its items ran.
    report.merge(undo_records(journal.records_for(RESTORES), store, runner, state, session=session))
    mutated = [r for r in reversed(outcome.results) if r.mutated]
    for done, result in enumerate(mutated, 1):
        part = undo_records(journal.records_for(result.id), store, runner, state, session=session)
        run.reporter.undone(_said(part), done, len(mutated))
        if part.not_undone and result.status != FAILED:
            # It completed (a failed one is reported as the failure) and
            # its effects stay: the report must not say "System unchanged".
            outcome.not_undone.append(result.id)
        report.merge(part)
    for name in run.generators:
        report.merge(undo_records(journal.records_for(name), store, runner, state, session=session))
    report.merge(session.finish(store, runner, state))
    remove_temp_leftovers(journal.by_path)
    # Directories the apply created for several items (shared parents) are
    # recorded under one of them, which may have been undone before the
    # others emptied them: remove them now, whoever recorded them.
    sweep_created_dirs([r for rs in journal.by_item.values() for r in rs], store, report)
    outcome.rolled_back = True
    outcome.undo = report
    if report.ok:
        journal.commit()
    else:
        _self_heal(run, outcome, journal)


def _said(part: UndoReport) -> list[str]:
    """What undoing one item did, a line a path: a path this apply created
    is `Removed`, one it changed `Restored`; a kind's own undo `Undid ...`."""
    lines = [f"Removed {abbreviate(p)}" for p in part.removed]
    for what in part.restored:
        lines.append(f"Restored {abbreviate(what)}" if what.startswith("/") else f"Undid {what}")
    return lines


def _self_heal(run: ApplyRun, outcome: ApplyOutcome, journal: Journal) -> None:
    """The machine is in an unknown mix: forget the current snapshot, so the
    next apply converges every item from the live state."""
    from syslua.state.journal import set_aside

    assert outcome.undo is not None
    paths = run.paths
    outcome.restore_failed = True
    note_unrestored(paths.state, outcome.undo.unrestored)
    run.inputs.snapshots.clear_current()
    journal.close()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    set_aside(journal.file, paths.failed_journals, f"{stamp}-{os.getpid()}.jsonl")
