"""All terminal output goes through `Terminal`.

On a terminal it uses rich (colour, live progress, tables) and wraps each
line at spaces to the terminal's width (`wrap`: a word wider than a whole
line, a long path, is the only thing cut); otherwise it writes plain lines
that never wrap or truncate, so paths and `file:line` locations stay whole. With `--json`, stdout carries only JSON and every log
line goes to stderr. Rich is imported only when it is used, which keeps
`sys --help` and plain runs fast.

Control characters in human output are escaped here (`printable`), so that
nothing a config says (a path, a name, a message, a command's output) can
start a line of its own, rewrite one (`\r`) or drive the terminal (`\x1b`):
a `line` is one line, whatever it holds; text of several lines (`lines`,
`warn`, `error`, `log`) keeps the newlines syslua put between them, unless a
declared name or path holds a control character itself (`distrust`): a
message quoting it could then start a line of its own, so from then on every
message is shown on one line. JSON output is exact.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from syslua.plan.words import NO_CHANGES, plan_summary

if TYPE_CHECKING:  # commands that print no plan (history, env, gc) need not import the planner
    from syslua.plan.planner import Entry, Plan

COLORS = {"+": "green", "~": "yellow", "-": "red", "=": "dim", "!": "bold red"}

# C0 controls but tab, DEL and C1 (0x9b is a one-byte CSI to some terminals),
# bidirectional overrides (they reorder what is shown), and lone surrogates
# (bytes of a path that are not UTF-8, which a UTF-8 stream cannot write).
# Compiled on first use (a millisecond of every start otherwise), which plain
# ASCII text never reaches: `_clean` answers for it.
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_patterns: dict[bool, re.Pattern[str]] = {}


def _pattern(newlines: bool) -> re.Pattern[str]:
    """The control characters to escape; with `newlines`, newlines are not among them."""
    pattern = _patterns.get(newlines)
    if pattern is None:
        pattern = _patterns[newlines] = re.compile(
            f"[{_CONTROLS}]" if newlines else f"[\n{_CONTROLS}]"
        )
    return pattern


def _clean(text: str) -> bool:
    """Printable ASCII only: nothing to escape (a shortcut past the pattern)."""
    return text.isascii() and text.isprintable()


_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    if c in _NAMED:
        return _NAMED[c]
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:
        return f"\\x{n - 0xDC00:02x}"  # a byte that was not UTF-8 (surrogateescape)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` with its control characters shown as escapes (`\n`, `\r`, `\x1b`...);
    with `newlines`, newlines are kept (they separate lines syslua wrote)."""
    if _clean(text):
        return text
    pattern = _pattern(newlines)
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def _columns() -> int:
    """The terminal's width: COLUMNS, else what the terminal says, else 80."""
    return shutil.get_terminal_size((80, 24)).columns


def _cells(text: str) -> int:
    """How many columns `text` takes on a terminal (a wide character two)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return int(cell_len(text))


_WORDS = re.compile(r"[^ ]+| +")
NARROWEST = 16  # narrower than this, lines are left to the terminal


# A line that ends with a command to run after a colon (the next steps of
# refusals and failures): `keep it: sys add ~/.bashrc`.
_COMMAND_TAIL = re.compile(r": ((?:sys|git|cd) [^`]*)$")


def wrap(text: str, width: int, hang: int | None = None) -> list[str]:
    """`text` (one line) as lines of at most `width` columns, cut at spaces;
    a word is cut in the middle only when it alone is wider than a line (a
    long path), and then where the line ends, from where it starts. The lines after the first are
    indented by `hang` columns (default: the text's indentation and 4 more;
    at most half the width)."""
    if _cells(text) <= width or width < NARROWEST:
        return [text]
    body = text.lstrip(" ")
    lead = min(len(text) - len(body), width // 2)
    hang = min(lead + 4 if hang is None else hang, width // 2)
    command = _COMMAND_TAIL.search(text)
    if command is not None:
        # A next step ending in a command to run (`...: sys apply --force`):
        # the command goes whole on a line of its own, so that it can be
        # copied as it is, and only the words before it are wrapped.
        return [*wrap(text[: command.start() + 1], width, hang), " " * hang + command.group(1)]
    out: list[str] = []
    line, used, fresh, space = " " * lead, lead, True, ""
    for token in _WORDS.findall(body):
        if token[0] == " ":
            space = token
            continue
        cells = _cells(token)
        if not fresh and used + len(space) + cells > width and hang + cells <= width:
            out.append(line)  # the word fits on the next line
            line, used, fresh = " " * hang, hang, True
        elif not fresh:
            line, used = line + space, used + len(space)
        space = ""
        while used + cells > width:  # wider than a whole line: cut where the line ends
            head, token = _cut(token, width - used)
            out.append(line + head)
            line, used = " " * hang, hang
            cells = _cells(token)
        line, used, fresh = line + token, used + cells, False
    out.append(line)
    return out


def _cut(word: str, room: int) -> tuple[str, str]:
    """`word` cut after at most `room` columns (at least one character)."""
    if word.isascii():
        n = max(room, 1)
        return word[:n], word[n:]
    used = 0
    for i, ch in enumerate(word):
        used += _cells(ch)
        if used > room:
            n = max(i, 1)
            return word[:n], word[n:]
    return word, ""


class Terminal:
    def __init__(
        self,
        *,
        json_mode: bool = False,
        verbosity: int = 0,
        color: bool | None = None,
    ) -> None:
        self.out: TextIO = sys.stdout
        self.err: TextIO = sys.stderr
        self.json_mode = json_mode
        self.verbosity = verbosity  # -1 quiet, 0 normal, 1 verbose
        self.is_tty = self.out.isatty() and not json_mode
        # The columns human lines must fit in (None: not a terminal, no limit);
        # COLUMNS, when set, says it, as for every program on the terminal.
        self.width = _columns() if self.is_tty else None
        self.err_width = _columns() if self.err.isatty() else None
        no_color = bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"
        self.color = self.is_tty and not no_color if color is None else (color and not no_color)
        self._console: Any = None
        self._err_console: Any = None

    # -- consoles ----------------------------------------------------------
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(
                file=self.out,
                no_color=not self.color,
                highlight=False,
                force_terminal=self.is_tty,
                soft_wrap=not self.is_tty,
                # Through a pager (`divert`), the terminal's width, not the pipe's.
                width=None if self.out.isatty() else self.width,
            )
        return self._console

    def divert(self, stream: TextIO) -> TextIO:
        """Send what goes to stdout to `stream` (a pager, `cli/pager.py`) from
        now on, still as to this terminal; returns the stream it replaces."""
        previous, self.out = self.out, stream
        self._console = None
        return previous

    def err_console(self) -> Any:
        if self._err_console is None:
            from rich.console import Console

            self._err_console = Console(
                file=self.err,
                no_color=not self.color,
                highlight=False,
                force_terminal=self.is_tty and self.err.isatty(),
                soft_wrap=True,
            )
        return self._err_console

    @property
    def rich(self) -> bool:
        return self.is_tty

    # -- plain messages ----------------------------------------------------
    # Set by `distrust` for the rest of the command, for every Terminal (the
    # one `main` makes to print an error too); `new_command` clears it.
    _distrusted: ClassVar[bool] = False

    @classmethod
    def new_command(cls) -> None:
        cls._distrusted = False

    @property
    def one_line(self) -> bool:
        """Are newlines in messages escaped too (see `distrust`)?"""
        return Terminal._distrusted

    def distrust(self, ids: Iterable[str]) -> None:
        """Show every message on one line from now on if one of these item ids
        (a declared name or path, or one being removed) has a control character."""
        if not Terminal._distrusted:
            Terminal._distrusted = any(
                not _clean(i) and _pattern(False).search(i) is not None for i in ids
            )

    def printable(self, text: str) -> str:
        """Text of several lines, escaped for this terminal (see `distrust`)."""
        return printable(text, newlines=not self.one_line)

    def log(self, text: str) -> None:
        """Progress chatter: stderr, hidden with -q."""
        if self.verbosity >= 0:
            self._styled(self.err, self.printable(text), None)

    def warn(self, text: str) -> None:
        self._styled(self.err, self.printable(f"Warning: {text}"), "yellow")

    def error(self, text: str) -> None:
        self._styled(self.err, self.printable(f"Error: {text}"), "bold red")

    def line(
        self,
        text: str = "",
        style: str | None = None,
        *,
        always: bool = False,
        hang: int | None = None,
        whole: bool = False,
    ) -> None:
        """One line of main output on stdout (a newline in `text` is shown as `\\n`);
        hidden by --json, and by -q unless `always` (errors). On a terminal
        narrower than it, it is wrapped, the lines after the first indented
        by `hang` columns (default: its own indentation and 4 more), unless
        it is `whole`: a command to copy and paste, which a newline would break."""
        if self.json_mode or (self.verbosity < 0 and not always):
            return
        self._styled(self.out, printable(text), style, -1 if whole else hang)

    def lines(
        self, text: str, style: str | None = None, *, indent: str = "", always: bool = False
    ) -> None:
        """Text of several lines (a message and its details): one `line` each,
        the ones after the first indented by `indent`."""
        first, *rest = [text] if self.one_line else text.split("\n")
        self.line(first, style, always=always)
        for more in rest:
            self.line(indent + more, style, always=always)

    def _styled(
        self, stream: TextIO, text: str, style: str | None, hang: int | None = None
    ) -> None:
        width = self.width if stream is self.out else self.err_width
        if width is not None and hang != -1:  # -1: a `whole` line
            text = "\n".join(p for ln in text.split("\n") for p in wrap(ln, width, hang))
        if style and self.color:
            from rich.markup import escape

            con = self.console() if stream is self.out else self.err_console()
            con.print(f"[{style}]{escape(text)}[/]", soft_wrap=hang == -1)
        else:
            stream.write(text + "\n")
            stream.flush()

    def json(self, data: Any) -> None:
        self.out.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    def json_event(self, data: Any) -> None:
        self.out.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    # -- plans -------------------------------------------------------------
    def plan(self, plan: Plan, *, show_diff: bool = False) -> None:
        """What will change, one line per item (unchanged ones as one count line,
        each with -v), the waves of the items that will run, and the counts."""
        self.distrust(e.id for e in plan.all_entries)
        changes = plan.has_changes or bool(plan.failures)
        self.line("Changes:" if changes else NO_CHANGES)
        everything = plan.entries + plan.removals
        groups = {e.id: plan.groups[e.id] for e in everything if e.id in plan.groups}
        c = plan.counts()
        listed = self._entries(everything, groups, show_diff)
        if listed and c["unchanged"] and self.verbosity <= 0:
            self.line(f"  = {c['unchanged']} unchanged", COLORS["="])
        self._order(plan, groups)
        self.line()
        self.line(plan_summary(c))

    def _entries(
        self, everything: list[Entry], groups: dict[str, list[Entry]], show_diff: bool
    ) -> bool:
        """A line per entry (an unchanged one only with -v), a group's members
        under it; returns whether any entry was listed."""
        verbose = self.verbosity > 0
        listed = False
        for entry in everything:
            if entry.group in groups:
                continue  # shown under its group
            if entry.symbol == "=" and not verbose:
                continue  # counted on one line
            listed = True
            members = groups.get(entry.id, ())
            self._entry_with_diff(entry, show_diff, takeovers=sum(m.takeover for m in members))
            for member in members:
                # A group is one line; -v lists its members, and a member that
                # needs attention (an edit, a failure) or has a diff to show
                # always gets a line.
                if verbose or member.attention or (show_diff and (member.diff or member.edit_diff)):
                    self._entry_with_diff(member, show_diff, indent="    ")
        return listed

    def _order(self, plan: Plan, groups: dict[str, list[Entry]]) -> None:
        """The execution order of the items that will run: the waves (renumbered
        without the items that have nothing to do), the removals, and the env
        variables, written to the env scripts once everything else is done."""
        runs = {e.id for e in plan.all_entries if e.runs}
        waves = [[i for i in wave if i in runs] for wave in plan.waves]
        waves = [w for w in waves if w]
        values = [e.label for e in plan.values if e.runs]
        if not (waves or values or plan.removals):
            return
        self.line()
        self.line("Execution order:")
        kinds = {e.id: e.type for e in plan.all_entries}
        for n, wave in enumerate(waves, 1):
            labels = self._collapsed(plan.labels, wave, groups)
            suffix = " - parallel" if len(wave) > 1 else ""
            self._step(f"[Wave {n}]", labels, _kinds(wave, kinds, groups), suffix)
        if plan.removals:
            # A member removed from a tree that stays is counted under the
            # tree's label, which only the declared items' labels have.
            names = {**plan.labels, **{e.id: e.label for e in plan.removals}}
            ids = [e.id for e in plan.removals]
            removed = self._collapsed(names, ids, groups)
            self._step("[Remove]", removed, _kinds(ids, kinds, groups))
        if values:
            self._step("[Env scripts]", values, _counted(len(values), "variable"))

    def _step(self, head: str, labels: list[str], summary: str, suffix: str = "") -> None:
        """One step of the execution order: its labels, or what they are
        (`200 files, 3 execs`) when there are more than `LISTED` (all with -v);
        wrapped on a terminal under the first label."""
        listed = ", ".join(labels) if len(labels) <= LISTED or self.verbosity > 0 else summary
        self.line(f"  {head} {listed}{suffix}", hang=len(head) + 3)

    def _entry_with_diff(
        self, entry: Entry, show_diff: bool, indent: str = "  ", takeovers: int = 0
    ) -> None:
        self.entry(entry, indent=indent, takeovers=takeovers)
        if show_diff:
            # An edit first (what changed by hand), then what the apply would write.
            for diff in (entry.edit_diff, entry.diff):
                for dl in (diff or "").rstrip("\n").splitlines():
                    style = "green" if dl.startswith("+") else "red" if dl.startswith("-") else None
                    self.line(indent + "    " + dl, style)

    def _collapsed(
        self, labels: dict[str, str], ids: list[str], groups: dict[str, list[Entry]]
    ) -> list[str]:
        """Labels of `ids`, with the members of each group as one `<group>* (N)`,
        or left out when the group's own item is among `ids` (every member with -v)."""
        if not groups or self.verbosity > 0:
            return [labels.get(i, i) for i in ids]
        owner = {m.id: g for g, members in groups.items() for m in members}
        present = set(ids)
        out: list[str] = []
        counts: dict[str, int] = {}
        for ident in ids:
            g = owner.get(ident)
            if g is None:
                out.append(labels.get(ident, ident))
            elif g not in present:
                if g not in counts:
                    counts[g] = 0
                    out.append(g)
                counts[g] += 1
        return [f"{labels.get(x, x)}* ({counts[x]})" if x in counts else x for x in out]

    def entry(self, entry: Entry, indent: str = "  ", takeovers: int = 0) -> None:
        """One plan line; `takeovers`: how many members of a group take over existing files."""
        subject = entry.subject or _subject(entry)
        if entry.note is not None:
            text = f"{indent}{entry.symbol} {subject} ({entry.note})"
        else:
            text = f"{indent}{entry.symbol} {subject}: {entry.message}"
        if entry.takeover:
            text += " - takes over an existing file; the original is kept"
        elif takeovers == 1:
            text += " - takes over 1 existing file; the original is kept"
        elif takeovers:
            text += f" - takes over {takeovers} existing files; the originals are kept"
        if entry.irreversible:
            why = entry.irreversible if isinstance(entry.irreversible, str) else "no undo command"
            text += f" - irreversible ({why})"
        for note in entry.notes:
            text += f" ({note})"
        if entry.noop and entry.decision.changes:
            text += " - noop child: not changed by `sys apply`"
        self.line(text, COLORS.get(entry.symbol))


LISTED = 10  # a step of the execution order with more labels is summarised


def _kinds(ids: list[str], kinds: dict[str, str], groups: dict[str, list[Entry]]) -> str:
    """What `ids` are, counted by kind, most first: `200 files, 3 execs`; a
    tree (a group, or members of one) is one `tree`."""
    owner = {m.id: g for g, members in groups.items() for m in members}
    seen: set[str] = set()
    counts: dict[str, int] = {}
    for ident in ids:
        unit = owner.get(ident, ident)
        if unit in seen:
            continue
        seen.add(unit)
        kind = "tree" if unit in groups else kinds.get(unit, unit.partition("#")[0])
        counts[kind] = counts.get(kind, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(_counted(n, kind) for kind, n in ranked)


def _counted(n: int, noun: str) -> str:
    """`1 file`, `3 files`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def count_paths(n: int) -> str:
    """`1 path`, `2 paths`."""
    return "1 path" if n == 1 else f"{n} paths"


def _subject(entry: Entry) -> str:
    return f"{entry.type} {entry.label}"
