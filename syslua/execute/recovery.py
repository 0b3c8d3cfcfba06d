"""Crash recovery, and opening the state dir for a command (which recovers first).

An apply that died before committing left its journal behind: every path it
was about to change, recorded before the change, and every command it
started. `recover` first stops what is still running of those commands
(`resources.groups`: the same process groups, checked by start time and
boot), so that none writes into the machine after it was put back; then it
undoes those changes (or, when the journal says the run had committed, finishes making
its snapshot current). A journal that cannot be read is set aside, and the
current snapshot forgotten, so that the next apply converges everything.
The caller holds the state lock.

`StateAccess.open` is how every command reaches the state dir, in order:
1. tighten the permissions of a state dir an older version left readable;
2. take the state lock when writing (recording the command and when it
   started; waiting for another run when told to);
3. roll back an interrupted apply first, if its journal was left (which
   takes the lock even for a command that only reads). Ctrl-C does not stop
   that rollback; the command ends after it (`errors.Interrupted`).
What it has to say goes to the command's `warn`; it never prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from syslua.errors import Interrupted, LockHeldError, StateError
from syslua.fsutil import remove_temp_leftovers
from syslua.paths import Paths, root_hint
from syslua.resources.process import Runner
from syslua.state.originals import Originals, clear_unrestored, note_unrestored
from syslua.state.records import (
    Begin,
    Commit,
    Ended,
    OriginalsAdded,
    PathRecord,
    Record,
    SnapshotNamed,
    Started,
)
from syslua.state.snapshots import Snapshots
from syslua.state.store import Store

if TYPE_CHECKING:
    from syslua.execute.apply import Reporter
    from syslua.execute.stop import Stop
    from syslua.resources.base import UndoReport
    from syslua.state.lock import Holder, StateLock


def recover(paths: Paths, reporter: Reporter) -> str | None:
    """Roll back an interrupted apply, if its journal was left behind (or
    finish recording it, when it had committed); what was done, for the
    user. The caller holds the lock."""
    from syslua.state import journal as journal_mod

    if not journal_mod.exists(paths.journal):
        return None
    problem = journal_mod.unusable(paths.journal)
    if problem is not None:
        return _set_aside_unusable(paths, problem)
    reading = journal_mod.read_checked(paths.journal)
    records = reading.records
    if reading.ignored and not (records and isinstance(records[0], Begin)):
        # Its begin record fails its checksum (or its key is gone): nothing
        # in it can be told from a forgery, so nothing in it is undone.
        return _set_aside_unusable(
            paths,
            f"{paths.journal / journal_mod.JOURNAL} cannot be trusted "
            f"({_ignored(reading.ignored)}, its begin record among them)",
        )
    registry = Originals.load(paths.state)
    commit = next((r for r in records if isinstance(r, Commit)), None)
    if commit is not None:
        what = _finish_commit(paths, commit, registry)
    else:
        what = _roll_back(paths, records, registry, reading.ignored)
    if not reading.sealed and records:
        what += (
            " (its journal was written before journal records had checksums, by an older "
            "syslua: its records were trusted as they are)"
        )
    return what


def _ignored(n: int) -> str:
    if n == 1:
        return "ignored 1 journal record that fails its checksum"
    return f"ignored {n} journal records that fail their checksum"


def _done(paths: Paths, ignored: int) -> str:
    """The journal has been acted on: delete it, or, when some of its
    records were ignored, keep it for the user to look at; what to add to
    the note."""
    from syslua.state import journal as journal_mod

    if not ignored:
        journal_mod.remove(paths.journal)
        return ""
    kept = journal_mod.set_aside(
        paths.journal / journal_mod.JOURNAL,
        paths.failed_journals,
        f"untrusted-{time.strftime('%Y%m%d-%H%M%S')}.jsonl",
    )
    return (
        f"; {_ignored(ignored)} (not written by that apply, or damaged), so what "
        f"{'it names was' if ignored == 1 else 'they name was'} left as it is; "
        f"the journal is kept as {kept}"
    )


def _finish_commit(paths: Paths, commit: Commit, registry: Originals, ignored: int = 0) -> str:
    """The snapshot was written before the crash: finish the commit."""
    Snapshots(paths).set_current(commit.snapshot)
    if commit.removed:
        registry.drop(commit.removed)
        registry.save()
    clear_unrestored(paths.state)
    kept = _done(paths, ignored)
    return (
        f"finished recording snapshot {commit.snapshot} of an apply that was interrupted "
        "after it completed" + kept
    )


def _roll_back(paths: Paths, records: list[Record], registry: Originals, ignored: int) -> str:
    """Undo every record of the journal, newest first, and forget the
    snapshots it named; when that fails, self-heal (see `_self_heal`)."""
    from syslua.execute.undo import undo_records

    snapshots = Snapshots(paths)
    stopped = _stop_commands(records)  # before anything is undone: none of them writes after
    # A process killed while writing left its temp file beside the target:
    # removed before undoing (it could keep a directory syslua made from
    # being removed) and after (undoing writes files too).
    touched = [r.path for r in records if isinstance(r, PathRecord)]
    remove_temp_leftovers(touched)
    report = undo_records(records, Store(paths.store), Runner(), paths.state)
    remove_temp_leftovers(touched)
    for rec in records:
        if isinstance(rec, SnapshotNamed) and rec.snapshot in snapshots.index()["order"]:
            snapshots.delete(rec.snapshot)  # recorded, never committed
    if not report.ok:
        return _self_heal(paths, snapshots, report, stopped, ignored)
    added = [i for r in records if isinstance(r, OriginalsAdded) for i in r.added]
    if added:
        registry.drop(added)  # taken over by the run that was rolled back
        registry.save()
    kept = _done(paths, ignored)
    begin = records[0] if records and isinstance(records[0], Begin) else None
    kind, pid = (begin.kind, begin.pid) if begin is not None else ("apply", None)
    what = f"rolled back an interrupted {kind} (pid {pid if pid is not None else '?'})"
    if stopped:
        what += ", " + stopped
    if report.left or report.not_undone:
        return (
            what
            + kept
            + "; not everything could be put back:\n  "
            + "\n  ".join(report.left + report.not_undone)
        )
    # With records ignored, it cannot know the machine is as it was.
    return what + (kept or "; the machine is as it was before it")


def _stop_commands(records: list[Record]) -> str:
    """Stop the commands of the dead run still running; what was done ("" for nothing)."""
    started = [(r.pgid, r.start, r.boot) for r in records if isinstance(r, Started)]
    if not started:
        return ""
    from syslua.resources import groups

    ended = {r.pgid for r in records if isinstance(r, Ended)}
    return groups.stop(started, ended).describe("it")


def _self_heal(
    paths: Paths, snapshots: Snapshots, report: UndoReport, stopped: str, ignored: int
) -> str:
    """Undoing failed: remember what was not put back, forget the current
    snapshot so the next apply converges everything, keep the journal aside."""
    from syslua.state import journal as journal_mod

    note_unrestored(paths.state, report.unrestored)
    snapshots.clear_current()
    journal_mod.set_aside(
        paths.journal / journal_mod.JOURNAL,
        paths.failed_journals,
        f"recovery-{time.strftime('%Y%m%d-%H%M%S')}.jsonl",
    )
    return (
        "could not fully roll back an interrupted apply"
        + (f" ({stopped})" if stopped else "")
        + ": "
        + "; ".join(report.failed)
        + (f" ({_ignored(ignored)})" if ignored else "")
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


class StateAccess:
    """How a command opens the state dir (see the module's docstring).

    `warn` receives what opening it has to say (permissions tightened, what
    recovery did); `stop` gives the command's Stop and `reporter` a reporter
    for recovery, both asked for only when recovering; `command` and
    `started` are recorded in the lock, and `on_wait` is told who holds it
    while a `wait` waits."""

    def __init__(
        self,
        paths: Paths,
        *,
        warn: Callable[[str], None],
        stop: Callable[[], Stop],
        reporter: Callable[[], Reporter],
        command: str | None = None,
        started: float | None = None,
        on_wait: Callable[[Holder | None], None] | None = None,
    ) -> None:
        self.paths = paths
        self.warn = warn
        self.stop = stop
        self.reporter = reporter
        self.command = command
        self.started = started
        self.on_wait = on_wait

    @contextmanager
    def open(self, *, exclusive: bool, wait: bool = False) -> Iterator[StateLock | None]:
        """The state dir, locked (the lock is yielded) when `exclusive`."""
        from syslua.state import journal, layout

        paths = self.paths
        problem = layout.unusable(paths, writing=exclusive)
        if problem is not None:
            raise StateError(problem, hint=root_hint())
        tightened = layout.tighten(paths)
        if tightened:
            self.warn(
                f"Tightened permissions of {', '.join(str(p) for p in tightened)}: "
                "other users could read syslua's state"
            )
        if not exclusive and not journal.exists(paths.journal):
            yield None  # reading, and nothing to recover: no lock (its module is not even loaded)
            return
        from syslua.state.lock import StateLock

        lock = StateLock(paths.lock)
        if exclusive:
            layout.ensure(paths)
            lock.acquire(
                wait=wait, command=self.command, started=self.started, on_wait=self.on_wait
            )
            try:
                self.recover()
                yield lock
            finally:
                lock.release()
            return
        if not lock.is_held_by_other():  # an interrupted apply's journal: recover
            try:
                lock.acquire(wait=False)
            except LockHeldError:
                yield None  # an apply is running now: its journal is not interrupted
                return
            try:
                self.recover()
            finally:
                lock.release()
        yield None

    def recover(self) -> None:
        """Roll back an interrupted apply, if its journal was left; the caller
        holds the lock. Ctrl-C waits for the rollback, then ends the command."""
        from syslua.state import journal

        if not journal.exists(self.paths.journal):
            return
        stop = self.stop()
        with stop.rolling_back():
            note = recover(self.paths, self.reporter())
        if note:
            self.warn(note)
        if stop.requested:
            raise Interrupted()  # after recovering, nothing else
