"""Reporters: how an apply's progress reaches the user (rich, plain or JSON).

The engine calls `planned`, `started`, `finished`, `rolling_back` and `note`;
the CLI picks the reporter: a rich live display on a terminal (a progress
bar, one line per running item, a line per finished item), plain lines
otherwise, or one JSON event per item on stdout with `--json`.
"""

from __future__ import annotations

import threading
from typing import Any

from syslua.cli.output import Terminal, printable
from syslua.execute.item import CHANGED, FAILED, NOOP, SKIPPED, UNCHANGED, ItemResult
from syslua.plan.planner import Plan

MARKS = {CHANGED: "✓", UNCHANGED: "✓", FAILED: "✗", SKIPPED: "~", NOOP: "~"}
ROLLING_BACK = {False: "Rolling back...", True: "Interrupted. Rolling back..."}
STYLES = {CHANGED: "green", UNCHANGED: "dim", FAILED: "bold red", SKIPPED: "yellow", NOOP: "yellow"}


def _subject(result: ItemResult) -> str:
    return f"{result.type} {result.label}"


def _markup(text: str) -> str:
    """`text` shown as it is inside rich markup: escaped controls, no markup of its own."""
    from rich.markup import escape

    return escape(printable(text))


class PlainReporter:
    """Plain lines, never wrapped: one per finished item."""

    def __init__(self, term: Terminal) -> None:
        self.term = term
        self.total = 0
        self.count = 0
        self.lock = threading.Lock()

    def planned(self, plan: Plan) -> None:
        self.term.distrust(e.id for e in plan.all_entries)
        self.total = sum(len(w) for w in plan.waves) + len(plan.removals)
        c = plan.counts()
        runs = f"{c['run']} to run, " if c["run"] else ""
        failing = f", {c['fail']} cannot be applied" if c["fail"] else ""
        self.term.log(
            f"Plan: {c['create']} to create, {c['update']} to update, {runs}{c['remove']} to remove, "
            f"{c['unchanged']} unchanged{failing}."
        )
        if plan.has_changes and (plan.waves or plan.removals):
            self.term.line("Executing:")

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
    """A live display: overall progress bar and one line per running item."""

    def __init__(self, term: Terminal) -> None:
        super().__init__(term)
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=term.console(),
            transient=True,
        )
        self.overall: Any = None
        self.running: dict[str, Any] = {}

    def planned(self, plan: Plan) -> None:
        super().planned(plan)
        self.overall = self.progress.add_task("Applying", total=max(self.total, 1))
        self.progress.start()

    def started(self, ident: str, label: str) -> None:
        with self.lock:
            self.running[ident] = self.progress.add_task(f"  … {_markup(label)}", total=None)

    def finished(self, result: ItemResult) -> None:
        with self.lock:
            task = self.running.pop(result.id, None)
            if task is not None:
                self.progress.remove_task(task)
            if self.overall is not None:
                self.progress.advance(self.overall)
            self.count += 1
            if (self.term.verbosity < 0 and result.status != FAILED) or (
                result.status == UNCHANGED and self.term.verbosity < 1 and not result.warnings
            ):
                return
            from rich.markup import escape

            mark = MARKS.get(result.status, "?")
            style = STYLES.get(result.status, "")
            subject, message = printable(_subject(result)), self.term.printable(result.message)
            self.progress.console.print(
                f"  [{style}]{mark}[/] {escape(subject)}: {escape(message)} "
                f"[dim]({result.duration:.2f}s)[/]"
            )
            for w in result.warnings:
                self.progress.console.print(f"      [yellow]Warning:[/] {escape(printable(w))}")

    def _print(self, text: str) -> None:
        from rich.markup import escape

        self.progress.console.print(escape(printable(text)))

    def download(self, label: str):  # type: ignore[no-untyped-def]
        """A progress bar for one download (the package type calls it with bytes so far)."""
        task = self.progress.add_task(f"  ↓ {_markup(label)}", total=None)

        def update(done: int, total: int | None) -> None:
            self.progress.update(task, completed=done, total=total)
            if total is not None and done >= total:
                self.progress.remove_task(task)

        return update

    def rolling_back(self, interrupted: bool = False) -> None:
        self.close()
        super().rolling_back(interrupted)

    def close(self) -> None:
        self.progress.stop()


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


def summary_table(term: Terminal, counts: dict[str, int], duration: float) -> None:
    cols = ["changed", "unchanged", "failed", "skipped"]
    if counts.get("noop"):
        cols.insert(1, "noop")
    if term.rich:
        from rich.table import Table

        table = Table(title=None, show_edge=False)
        for c in cols + ["duration"]:
            table.add_column(c, justify="right")
        table.add_row(*[str(counts.get(c, 0)) for c in cols], f"{duration:.2f}s")
        term.console().print(table)
        return
    values = [str(counts.get(c, 0)) for c in cols] + [f"{duration:.2f}s"]
    heads = cols + ["duration"]
    widths = [max(len(h), len(v)) for h, v in zip(heads, values)]
    term.line("  " + "  ".join(h.rjust(w) for h, w in zip(heads, widths)))
    term.line("  " + "  ".join(v.rjust(w) for v, w in zip(values, widths)))
