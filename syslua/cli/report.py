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

from syslua.cli.output import Terminal, printable
from syslua.execute.item import CHANGED, FAILED, NOOP, SKIPPED, UNCHANGED, ItemResult
from syslua.plan.planner import Entry, Plan

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
        self.lock = threading.Lock()

    def planned(self, plan: Plan) -> None:
        self.term.distrust(e.id for e in plan.all_entries)
        self.total = plan.size
        c = plan.counts()
        runs = f"{c['run']} to run, " if c["run"] else ""
        noop = f", {c['noop']} would change in noop" if c["noop"] else ""
        failing = f", {c['fail']} cannot be applied" if c["fail"] else ""
        self._log(
            f"Plan: {c['create']} to create, {c['update']} to update, {runs}{c['remove']} to remove, "
            f"{c['unchanged']} unchanged{noop}{failing}."
        )
        if plan.has_changes or c["noop"] or c["fail"]:
            self.term.line("Executing:")

    def _log(self, text: str) -> None:
        # The plan's summary: on stdout, with the per-item lines it counts.
        self.term.line(text)

    def started(self, ident: str, label: str) -> None:
        return None

    def finished(self, result: ItemResult) -> None:
        with self.lock:
            self.count += 1
            if self.term.verbosity < 0 and result.status != FAILED:
                return
            if result.status == UNCHANGED and self.term.verbosity < 1 and not result.warnings:
                return
            mark = MARKS.get(result.status, "?")
            message = result.message.rstrip("\n")
            first, *rest = [message] if self.term.one_line else message.split("\n")
            line = f"  [{self.count}/{self.total}] {mark} {_subject(result)}: {first} ({result.duration:.2f}s)"
            failed = result.status == FAILED
            self.term.line(line, STYLES.get(result.status), always=failed)
            for extra in rest:
                self.term.line(f"      {extra}", always=failed)
            for w in result.warnings:
                self.term.line(f"        Warning: {w}", "yellow")

    def output(self, ident: str, stream: str, line: str) -> None:
        """A line of command output (logoutput = true, or -v), as it arrives."""
        with self.lock:
            self._print(f"    {ident} {stream}: {line}")

    def _print(self, text: str) -> None:
        self.term.line(text)

    def rolling_back(self, interrupted: bool = False) -> None:
        self.term.line()
        self.term.line(ROLLING_BACK[interrupted], "yellow", always=interrupted)

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
        self.print_lock = threading.Lock()  # finished lines come out in [n/N] order
        self.running: dict[str, _Row] = {}  # guarded by self.lock, as `count`
        self.downloads: dict[int, list[Any]] = {}  # [label, done, total]
        self.keys = itertools.count()
        self.entries: dict[str, Entry] = {}
        self.live: Any = None
        self.began = time.monotonic()

    def planned(self, plan: Plan) -> None:
        super().planned(plan)
        from rich.live import Live

        self.entries = {e.id: e for e in plan.all_entries}
        self.began = time.monotonic()
        self.live = Live(
            _Display(self),
            console=self.term.console(),
            transient=True,
            refresh_per_second=8,
            redirect_stdout=False,
            redirect_stderr=False,
        )
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
                self.count += 1
                n = self.count
            if (self.term.verbosity < 0 and result.status != FAILED) or (
                result.status == UNCHANGED and self.term.verbosity < 1 and not result.warnings
            ):
                return
            from rich.table import Table
            from rich.text import Text

            console = self._console()
            style = STYLES.get(result.status, "")
            head = f"  [{n}/{self.total}] {MARKS.get(result.status, '?')}"
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
            console.print(line)
            for w in result.warnings:
                self._console().print(Text(f"      Warning: {printable(w)}", "yellow"))

    def _log(self, text: str) -> None:
        # Wrapped at spaces on a narrow terminal (`Terminal.line`), not cut in a word by it.
        self.term.line(text)

    def _console(self) -> Any:
        return self.live.console if self.live is not None else self.term.console()

    def _print(self, text: str) -> None:
        from rich.text import Text

        with self.print_lock:
            self._console().print(Text(printable(text)))

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


class JsonReporter:
    """One JSON object per line on stdout: item events, then a summary."""

    def __init__(self, term: Terminal) -> None:
        self.term = term
        self.lock = threading.Lock()
        self.notes: list[str] = []

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
COLUMNS = ("changed", "rolled back", "not undone", "noop", "unchanged", "failed", "skipped")
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
