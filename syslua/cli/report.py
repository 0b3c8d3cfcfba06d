"""Reporters: how an apply's progress reaches the user (rich, plain or JSON).

The engine calls `planned`, `started`, `finished`, `rolling_back` and `note`
(and `activity`, `output` and `download` through the options); the CLI picks
the reporter: a live display on a terminal (a row per running item with what
it does and for how long, a `[n/N]` line per finished item), plain lines
otherwise, or one JSON event per item on stdout with `--json`. Every item the
plan counts is reported, env variables included, so `[n/N]` ends at the
plan's total.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from syslua.cli.live import Frames
from syslua.cli.output import Terminal, printable
from syslua.execute.item import CHANGED, FAILED, NOOP, SKIPPED, UNCHANGED, ItemResult
from syslua.plan.planner import Entry, Plan
from syslua.plan.words import plan_summary
from syslua.resources.base import DANGLING

MARKS = {CHANGED: "✓", UNCHANGED: "✓", FAILED: "✗", SKIPPED: "~", NOOP: "~"}
ROLLING_BACK = {False: "Rolling back...", True: "Interrupted. Rolling back..."}
STYLES = {CHANGED: "green", UNCHANGED: "dim", FAILED: "bold red", SKIPPED: "yellow", NOOP: "yellow"}


def _subject(result: ItemResult) -> str:
    return f"{result.type} {result.label}"


class PlainReporter:
    """Plain lines, never wrapped: one per finished item."""

    def __init__(self, term: Terminal) -> None:
        self.term = term
        self.total = 0
        self.count = 0
        self.numbered: frozenset[str] = frozenset()  # the ids `[n/N]` counts
        self.members: frozenset[str] = frozenset()  # shown under their tree, with -v
        self.lock = threading.Lock()
        self.print_lock = threading.Lock()  # finished lines come out in [n/N] order
        self.undo_lines: list[str] = []  # what the rollback undid so far

    def planned(self, plan: Plan) -> None:
        self.term.distrust(e.id for e in plan.all_entries)
        self.numbered = frozenset(plan.numbered)
        self.members = plan.members
        self.total = len(self.numbered)
        c = plan.counts()
        self._log(plan_summary(c))
        if plan.has_changes or c["noop"] or c["fail"]:
            self.term.line("Executing:")

    def _place(self, result: ItemResult) -> str | None:
        """What a finished item's line starts with: its number (`[3/7]`), for
        each item the plan numbered, in the order they finish, so the numbers
        never skip; blanks as wide for one shown without a number (a tree's
        member under -v or dangling, indented more; an unchanged item under -v; a
        failure, or an item that changed though the plan said it would
        not); None when it is not shown. With -q only failures are shown,
        without numbers."""
        with self.lock:
            numbered = result.id in self.numbered
            if numbered:
                self.count += 1
            n = self.count
        verbosity = self.term.verbosity
        if numbered and verbosity >= 0:
            return f"[{n}/{self.total}]"
        blank = " " * len(f"[{self.total}/{self.total}]")
        if result.status == FAILED:
            return blank
        if verbosity < 0:
            return None
        if result.id in self.members:
            # as the plan shows a member that needs attention: a link made dangling
            notable = verbosity > 0 or result.warnings or DANGLING in result.message
            return blank + "  " if notable else None
        if result.status == UNCHANGED and verbosity < 1 and not result.warnings:
            return None
        return blank

    def _log(self, text: str) -> None:
        # The plan's summary: on stdout, with the per-item lines it counts.
        self.term.line(text)

    def started(self, ident: str, label: str) -> None:
        return None

    def finished(self, result: ItemResult) -> None:
        with self.print_lock:
            place = self._place(result)
            if place is None:
                return
            mark = MARKS.get(result.status, "?")
            message = result.message.rstrip("\n")
            first, *rest = [message] if self.term.one_line else message.split("\n")
            line = f"  {place} {mark} {_subject(result)}: {first} ({result.duration:.2f}s)"
            failed = result.status == FAILED
            self.term.line(line, STYLES.get(result.status), always=failed)
            for extra in rest:
                self.term.line(f"      {extra}", always=failed)
            for w in result.warnings:
                self.term.line(f"        Warning: {w}", "yellow")

    def output(self, ident: str, stream: str, line: str) -> None:
        """A line of command output (logoutput = true, or -v), as it arrives."""
        with self.print_lock:
            self._print(f"    {ident} {stream}: {line}")

    def _print(self, text: str) -> None:
        self.term.line(text)

    def rolling_back(self, interrupted: bool = False) -> None:
        self.term.line()
        self.term.line(ROLLING_BACK[interrupted], "yellow", always=interrupted)

    def undone(self, lines: list[str], done: int, total: int) -> None:
        """What undoing each item did: said once the rollback ended, a line a
        path when there are few (or with -v), else counted on one line."""
        self.undo_lines += lines
        if done >= total:
            for line in undo_summary(self.undo_lines, self.term.verbosity > 0):
                self._undo_line(f"  - {line}")
            self.undo_lines = []

    def _undo_line(self, text: str) -> None:
        self.term.line(text)

    def note(self, text: str) -> None:
        self.term.lines(text)

    def close(self) -> None:
        return None


class RichReporter(PlainReporter):
    """A live display on a terminal: a row per running item saying what it does
    (its command, or the last line the command printed, else `creating`...)
    and how long it has run, a row per download, and a footer with the count;
    finished items are printed above it as lines of their own, `[n/N]` first.
    Narrower than `WIDE` columns, a row takes two lines (the subject, then what
    it does), and every line is cut or wrapped to the width, never beyond it."""

    def __init__(self, term: Terminal) -> None:
        super().__init__(term)
        self.running: dict[str, _Row] = {}  # guarded by self.lock, as `count`
        self.downloads: dict[int, list[Any]] = {}  # [label, done, total]
        self.keys = itertools.count()
        self.entries: dict[str, Entry] = {}
        self.live: Frames | None = None
        self.undoing = (0, 0)  # items undone so far, of how many
        self.began = time.monotonic()

    def planned(self, plan: Plan) -> None:
        super().planned(plan)
        self.entries = {e.id: e for e in plan.all_entries}
        self.began = time.monotonic()
        # At most 10 frames a second, however many items finish (syslua/cli/live.py).
        self.live = Frames(self.term.console(), _Display(self))
        self.live.start()

    def started(self, ident: str, label: str) -> None:
        entry = self.entries.get(ident)
        kind = entry.type if entry is not None else ident.partition("#")[0]
        action = entry.decision.action if entry is not None else ""
        with self.lock:
            self.running[ident] = _Row(f"{kind} {label}", DOING.get(action, "checking"))

    def activity(self, ident: str, kind: str, text: str) -> None:
        """What a running item does now: a command it starts, or a line it printed."""
        with self.lock:
            row = self.running.get(ident)
            if row is not None:
                row.doing = f"$ {text}" if kind == "command" else f"» {text}"

    def finished(self, result: ItemResult) -> None:
        with self.print_lock:
            with self.lock:
                self.running.pop(result.id, None)
                for key in [k for k, d in self.downloads.items() if d[0] == result.label]:
                    del self.downloads[key]
            place = self._place(result)
            if place is None:
                return
            from rich.table import Table
            from rich.text import Text

            console = self._console()
            style = STYLES.get(result.status, "")
            head = f"  {place} {MARKS.get(result.status, '?')}"
            subject, message = printable(_subject(result)), self.term.printable(result.message)
            took = f"({result.duration:.2f}s)"
            # Wrapped under the subject (a hanging indent), long paths cut to fill the line.
            body = _fill(f"{subject}: {message} {took}", console.width - len(head) - 1)
            text = Text(body)
            text.stylize("dim", len(body) - len(took))
            line = Table.grid(padding=(0, 1))
            line.add_column(no_wrap=True)
            line.add_column(overflow="fold")
            line.add_row(Text(head, style), text)
            self._show(line)
            for w in result.warnings:
                self._show(Text(f"      Warning: {printable(w)}", "yellow"))

    def _log(self, text: str) -> None:
        # Wrapped at spaces on a narrow terminal (`Terminal.line`), not cut in a word by it.
        self.term.line(text)

    def _console(self) -> Any:
        return self.term.console()

    def _show(self, renderable: Any) -> None:
        """Printed above the live display, with its next frame (at once without one)."""
        if self.live is not None:
            self.live.print(renderable)
        else:
            self._console().print(renderable)

    def _print(self, text: str) -> None:
        from rich.text import Text

        self._show(Text(printable(text)))

    def download(self, label: str):  # type: ignore[no-untyped-def]
        """A row for one download (the package kind calls it with bytes so far)."""
        with self.lock:
            key = next(self.keys)
            self.downloads[key] = [label, 0, None]

        def update(done: int, total: int | None) -> None:
            with self.lock:
                if key not in self.downloads:
                    return
                if total is not None and done >= total:
                    del self.downloads[key]
                else:
                    self.downloads[key][1:] = [done, total]

        return update

    def rows(self) -> tuple[list[tuple[str, str, float]], int, int, float]:
        """What the display shows now: (subject, doing, seconds) per running item
        and download, how many finished, of how many, and the time so far."""
        now = time.monotonic()
        with self.lock:
            rows = [(r.subject, r.doing, now - r.since) for r in self.running.values()]
            for label, done, total in self.downloads.values():
                size = _size(done) + (f" of {_size(total)}" if total else "")
                rows.append((f"↓ {label}", size, -1.0))
            return rows, self.count, self.total, now - self.began

    def rolling_back(self, interrupted: bool = False) -> None:
        self.close()
        super().rolling_back(interrupted)

    def undone(self, lines: list[str], done: int, total: int) -> None:
        """A progress line while the rollback runs (`Undoing: 37 of 200
        items`), drawn as the live display is; then what it did."""
        self.undoing = (done, total)
        if done < total and self.live is None:
            self.live = Frames(self.term.console(), _Undoing(self))
            self.live.start()
        if done >= total:
            self.close()
        super().undone(lines, done, total)

    def _undo_line(self, text: str) -> None:
        from rich.text import Text

        # wrapped at spaces, under what it says, on a narrow terminal
        width = self._console().width
        self._console().print(Text(_fill(text, width - 4).replace("\n", "\n    ")))

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


# What a running item does, until it says more (a command, a line of output).
DOING = {"create": "creating", "update": "updating", "run": "running", "remove": "removing"}
WIDE = 80  # columns from which a running item's row is one line
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class _Row:
    __slots__ = ("doing", "since", "subject")

    def __init__(self, subject: str, doing: str) -> None:
        self.subject = subject
        self.doing = doing
        self.since = time.monotonic()


def _fill(text: str, width: int) -> str:
    """`text` wrapped at `width` columns, each of its lines: at spaces, and
    inside a word longer than what is left of the line (a path), so that a
    line is not left with one short word."""
    import textwrap

    if width < 10:
        return text
    return "\n".join(
        "\n".join(
            textwrap.wrap(
                part, width, break_on_hyphens=False, drop_whitespace=True, replace_whitespace=False
            )
            or [""]
        )
        for part in text.split("\n")
    )


def _elapsed(seconds: float) -> str:
    """`0.4s`, `12.0s`, `2m05s`."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s"


def _size(n: int) -> str:
    """`512 B`, `1.5 MiB`."""
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if size < 1024 or unit == "GiB":
            break
    return f"{size:.1f} {unit}"


class _Display:
    """The live part of `RichReporter`, drawn again a few times a second."""

    def __init__(self, reporter: RichReporter) -> None:
        self.reporter = reporter

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.table import Table
        from rich.text import Text

        rows, done, total, spent = self.reporter.rows()
        width = options.max_width
        frame = SPINNER[int(time.monotonic() * 10) % len(SPINNER)]
        for subject, doing, seconds in rows:
            head = Text(f"  {frame} {printable(subject)}" if seconds >= 0 else f"  {subject}")
            when = Text(_elapsed(seconds) if seconds >= 0 else "", "dim")
            what = Text(printable(doing), "dim" if doing in DOING.values() else "")
            grid = Table.grid(padding=(0, 1), expand=True)
            if width >= WIDE:
                grid.add_column(no_wrap=True, overflow="ellipsis", max_width=width * 2 // 5)
                grid.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
                grid.add_column(no_wrap=True, justify="right")
                grid.add_row(head, what, when)
                yield grid
                continue
            grid.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
            grid.add_column(no_wrap=True, justify="right")
            grid.add_row(head, when)
            yield grid
            what.pad_left(6)
            what.no_wrap, what.overflow = True, "ellipsis"
            yield what
        yield Text(f"  [{done}/{total}] {len(rows)} running, {_elapsed(spent)}", "dim")


class _Undoing:
    """The rollback's progress line."""

    def __init__(self, reporter: RichReporter) -> None:
        self.reporter = reporter

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        done, total = self.reporter.undoing
        frame = SPINNER[int(time.monotonic() * 10) % len(SPINNER)]
        yield Text(f"  {frame} Undoing: {done} of {total} items", "yellow")


UNDO_LINES = 10  # more lines than this of a rollback are counted on one line (-v lists them)


def undo_summary(lines: list[str], verbose: bool) -> list[str]:
    """A rollback's lines (`Removed ~/a`, `Restored ~/b`, `Undid exec#x`) as
    they are when few (or with -v), else one line that counts them:
    `Removed 150 paths this apply created, restored 48, undid 2 changes
    (sys apply -v lists each)`."""
    if verbose or len(lines) <= UNDO_LINES:
        return lines
    n = {
        word: sum(1 for ln in lines if ln.startswith(word + " "))
        for word in ("Removed", "Restored", "Undid")
    }
    parts = []
    if n["Removed"]:
        parts.append(f"removed {n['Removed']} path(s) this apply created")
    if n["Restored"]:
        parts.append(f"restored {n['Restored']} path(s)")
    if n["Undid"]:
        parts.append(f"undid {n['Undid']} other change(s)")
    said = ", ".join(parts)
    return [f"{said[:1].upper()}{said[1:]} (-v lists each)"]


class JsonReporter:
    """One JSON object per line on stdout: item events, then a summary."""

    def __init__(self, term: Terminal) -> None:
        self.term = term
        self.lock = threading.Lock()
        self.notes: list[str] = []
        self.undo_lines: list[str] = []

    def planned(self, plan: Plan) -> None:
        self.term.json_event({"event": "plan", "counts": plan.counts(), "waves": plan.waves})

    def started(self, ident: str, label: str) -> None:
        return None

    def finished(self, result: ItemResult) -> None:
        with self.lock:
            self.term.json_event(result.to_event())

    def output(self, ident: str, stream: str, line: str) -> None:
        return None  # --json: command output is in each item's event

    def rolling_back(self, interrupted: bool = False) -> None:
        self.term.log(ROLLING_BACK[interrupted])

    def undone(self, lines: list[str], done: int, total: int) -> None:
        self.undo_lines += lines
        if done >= total:
            for line in undo_summary(self.undo_lines, self.term.verbosity > 0):
                self.term.log(f"  - {line}")
            self.undo_lines = []

    def note(self, text: str) -> None:
        self.notes.append(text.strip())
        self.term.log(text)

    def close(self) -> None:
        return None


def make_reporter(term: Terminal) -> PlainReporter | JsonReporter:
    if term.json_mode:
        return JsonReporter(term)
    if term.rich:
        return RichReporter(term)
    return PlainReporter(term)


# The summary's columns, in order: those always shown, then those shown when
# they count something (what a rollback undid replaces `changed`).
COLUMNS = ("changed", "rolled back", "not undone", "noop", "unchanged", "held", "failed", "skipped")
ALWAYS = frozenset({"changed", "rolled back", "unchanged", "failed", "skipped"})


def summary_table(term: Terminal, counts: dict[str, int], duration: float) -> None:
    """The counts as a table; on a terminal too narrow for it, as one line
    (`1 rolled back, 0 unchanged, 1 failed, 0 skipped in 0.41s`), wrapped."""
    cols = [c for c in COLUMNS if c in counts and (c in ALWAYS or counts[c])]
    values = [str(counts.get(c, 0)) for c in cols] + [f"{duration:.2f}s"]
    heads = cols + ["duration"]
    widths = [max(len(h), len(v)) for h, v in zip(heads, values)]
    if term.rich:
        from rich.table import Table

        console = term.console()
        # Each column takes its width and 3 more (padding, rule); 2 columns spare.
        if sum(widths) + 3 * len(widths) + 2 > console.width:
            said = ", ".join(f"{v} {c}" for c, v in zip(cols, values))
            console.print(f"  {said} in {values[-1]}", highlight=False, markup=False)
            return
        table = Table(title=None, show_edge=False)
        for c in heads:
            table.add_column(c, justify="right")
        table.add_row(*values)
        console.print(table)
        return
    term.line("  " + "  ".join(h.rjust(w) for h, w in zip(heads, widths)))
    term.line("  " + "  ".join(v.rjust(w) for v, w in zip(values, widths)))
