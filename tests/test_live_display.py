"""The live display of `sys apply` on a terminal, as a person sees it.

A real `python -m syslua apply` runs in a pseudo-terminal (`pty`) of 100 and
of 60 columns, with TERM set; what it writes is played on a small terminal
screen (`Screen`: the cursor moves, erasing and line wrapping that rich's
live display uses), and the tests read that screen while the command runs
and once it ended: a running exec's row shows its command, then the last
line it printed, with its elapsed time; finished lines keep `[n/N]`; at 60
columns a row takes two lines and nothing the display draws is wider than
the terminal.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

import ptyrun
import pytest
from conftest import HEADER

LONG = "~/a-directory-with-a-long-name/and-a-file-with-a-long-name-too.txt"
CONFIG = (
    HEADER
    + f'file {{ path = "{LONG}", content = "a\\n" }}\n'
    + 'exec { name = "slow", provider = "shell", '
    + 'command = "sleep 0.8; echo compiling the first part; sleep 1.2; echo done" }\n'
    + 'env { EDITOR = "vi" }\n'
)
COMMAND = "$ sleep 0.8; echo compiling"
ELAPSED = re.compile(r"\b\d+\.\ds$")
CSI = re.compile(rb"\x1b\[([?0-9;]*)([@-~])")
OSC = re.compile(rb"\x1b\][^\x07\x1b]*(\x07|\x1b\\)")


@dataclass
class Screen:
    """A terminal screen as wide as `width`, without a height limit (what
    scrolled off stays readable): text, CR, LF, and the CSI sequences rich's
    live display sends (cursor up/down/forward/back/column, erase in line and
    display; styles and cursor visibility are ignored). A character written
    past the last column wraps, as a terminal does, and is recorded in
    `overflows`: a line wider than the terminal."""

    width: int
    rows: list[list[str]] = field(default_factory=lambda: [[]])
    row: int = 0
    col: int = 0
    pending: bool = False  # the last column was written: the next character wraps
    overflows: list[str] = field(default_factory=list)

    def feed(self, data: bytes) -> None:
        text = OSC.sub(b"", data)
        pos = 0
        for m in CSI.finditer(text):
            self._text(text[pos : m.start()].decode("utf-8", "replace"))
            self._csi(m.group(1).decode(), m.group(2).decode())
            pos = m.end()
        self._text(text[pos:].decode("utf-8", "replace"))

    def lines(self) -> list[str]:
        return ["".join(r).rstrip() for r in self.rows]

    def _line(self) -> list[str]:
        while len(self.rows) <= self.row:
            self.rows.append([])
        line = self.rows[self.row]
        while len(line) < self.col:
            line.append(" ")
        return line

    def _text(self, text: str) -> None:
        for ch in text:
            if ch == "\r":
                self.col, self.pending = 0, False
            elif ch == "\n":
                self.row, self.pending = self.row + 1, False
            elif ch == "\b":
                self.col = max(0, self.col - 1)
            elif ch >= " ":
                if self.pending:
                    self.overflows.append("".join(self._line()))
                    self.row, self.col, self.pending = self.row + 1, 0, False
                line = self._line()
                if self.col < len(line):
                    line[self.col] = ch
                else:
                    line.append(ch)
                if self.col == self.width - 1:
                    self.pending = True
                else:
                    self.col += 1

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?") or final == "m":
            return
        n = int(params.split(";")[0] or 0)
        self.pending = False
        if final == "A":
            self.row = max(0, self.row - max(n, 1))
        elif final == "B":
            self.row += max(n, 1)
        elif final == "C":
            self.col = min(self.width - 1, self.col + max(n, 1))
        elif final == "D":
            self.col = max(0, self.col - max(n, 1))
        elif final == "G":
            self.col = max(n, 1) - 1
        elif final == "K":
            line = self._line()
            if n == 0:
                del line[self.col :]
            elif n == 1:
                line[: self.col + 1] = [" "] * min(len(line), self.col + 1)
            else:
                line.clear()
        elif final == "J" and n in (0, 2):
            del self._line()[self.col :]
            del self.rows[self.row + 1 :]


@dataclass
class Session:
    screen: Screen
    frames: list[list[str]]  # the screen each time the display was drawn, while it was live
    code: int
    live_overflows: list[str]  # lines wider than the terminal, while the display was live


def run_in_pty(sysenv, columns: int, timeout: float = 60) -> Session:  # type: ignore[no-untyped-def]
    """`sys apply` in a pseudo-terminal `columns` wide, its output played on a `Screen`."""
    env = dict(sysenv.env, TERM="xterm-256color", COLUMNS=str(columns), LINES="40")
    env["SHELL"] = "/bin/bash"  # its rc file loads the env script: nothing to advise
    (sysenv.home / ".bashrc").write_text(f". '{sysenv.root}/state/env.sh'\n")
    screen = Screen(columns)
    frames: list[list[str]] = []
    live = False
    live_overflows: list[str] = []

    def playing(_: ptyrun.Pty, data: bytes) -> None:
        nonlocal live
        if not data:
            return
        if not live and b"Executing:" in data:
            # What comes before it (the log lines on stderr) is not the display.
            cut = data.index(b"Executing:")
            screen.feed(data[:cut])
            data, live = data[cut:], True
        if not live:
            screen.feed(data)
            return
        # The display ends when it shows the cursor again.
        end = data.find(b"\x1b[?25h")
        seen = len(screen.overflows)
        screen.feed(data if end < 0 else data[:end])
        live_overflows.extend(screen.overflows[seen:])
        frames.append(screen.lines())
        if end >= 0:
            screen.feed(data[end:])
            live = False

    code, _, finished = ptyrun.run_in_pty(
        [sys.executable, "-m", "syslua", "apply"],
        env=env,
        cwd=sysenv.work,
        columns=columns,
        timeout=timeout,
        each=playing,
    )
    if not finished:
        pytest.fail("sys apply did not finish in time:\n" + "\n".join(screen.lines()))
    return Session(screen, frames, code, live_overflows)


def seconds(row: str) -> float:
    m = ELAPSED.search(row)
    assert m is not None, row
    return float(m.group(0)[:-1])


def running_rows(frames: list[list[str]]) -> list[list[str]]:
    """For each frame that shows the exec running: its row and the row after it
    (a row ends with the elapsed time: one still being drawn is left out)."""
    out = []
    for lines in frames:
        for i, ln in enumerate(lines):
            if "exec slow" in ln and "✓" not in ln and ELAPSED.search(ln):
                out.append([ln, lines[i + 1] if i + 1 < len(lines) else ""])
    return out


@pytest.mark.slow
def test_live_display_at_100_columns(sysenv) -> None:
    sysenv.write("sys.lua", CONFIG)
    s = run_in_pty(sysenv, 100)
    final = s.screen.lines()
    assert s.code == 0, "\n".join(final)
    rows = running_rows(s.frames)
    assert rows, "the running exec was never shown:\n" + "\n".join(final)
    # One line per running item: the command it runs, then the last line it
    # printed, and how long it has run, at the right edge.
    with_command = [r for r, _ in rows if COMMAND in r]
    with_output = [r for r, _ in rows if "» compiling the first part" in r]
    assert with_command and with_output, rows
    assert all(len(row) <= 100 for row in with_command + with_output)
    assert all(r.startswith("  ") and "exec slow" in r[:16] for r in with_command), with_command
    times = [seconds(r) for r in with_command + with_output]
    assert max(times) >= 1.0 and times == sorted(times), times  # it counts up while it runs
    # Not a bar that never fills: no bar characters while the display is live.
    assert not any(c in ln for frame in s.frames for ln in frame for c in "━─▰▱█"), s.frames[-1]
    # A footer says how many of the items finished.
    assert any(ln.startswith("  [1/3] 1 running, ") for frame in s.frames for ln in frame)
    # The display is gone once it ended; finished lines stay, each with [n/N].
    assert not any("exec slow" in ln and "✓" not in ln for ln in final), final
    assert any(ln.startswith(f"  [1/3] ✓ file {LONG}: created (") for ln in final), final
    assert "  [2/3] ✓ exec slow: executed" in "\n".join(final)
    assert any(ln.startswith('  [3/3] ✓ env EDITOR: "vi" (') for ln in final), final
    assert s.live_overflows == [], s.live_overflows
    assert any(ln.startswith("Apply complete: snapshot ") for ln in final), final


@pytest.mark.slow
def test_live_display_at_60_columns_degrades_to_readable_lines(sysenv) -> None:
    sysenv.write("sys.lua", CONFIG)
    s = run_in_pty(sysenv, 60)
    final = s.screen.lines()
    assert s.code == 0, "\n".join(final)
    rows = running_rows(s.frames)
    assert rows, "the running exec was never shown:\n" + "\n".join(final)
    # Two lines per running item: the subject and its elapsed time, then what
    # it does (its command, cut with … to the width; then its last line of output).
    assert not any(COMMAND in head for head, _ in rows), rows
    doing = [nxt for _, nxt in rows]
    assert any(d.startswith(f"      {COMMAND}") and d.endswith("…") for d in doing), doing
    assert any(d.startswith("      » compiling the first part") for d in doing), doing
    assert max(seconds(h) for h, _ in rows) >= 1.0
    # Nothing the display drew was wider than the terminal, nor any line of the
    # apply (the plan's count line is wrapped at a space too).
    assert s.live_overflows == [] and s.screen.overflows == [], s.screen.overflows
    assert all(len(ln) <= 60 for frame in s.frames for ln in frame), s.frames[-1]
    # A finished line keeps [n/N] and wraps under its subject; joined, its path is whole.
    start = next(i for i, ln in enumerate(final) if ln.startswith("  [1/3] ✓ file "))
    block = [final[start]]
    for ln in final[start + 1 :]:
        if not ln.startswith(" " * 10) or ln.strip().startswith("["):
            break
        block.append(ln)
    assert len(block) > 1, final
    assert all(len(ln) <= 60 for ln in block), block
    joined = re.sub(r"\s", "", "".join(block))
    assert joined.startswith(re.sub(r"\s", "", f"[1/3] ✓ file {LONG}: created (")), block
    assert "  [2/3] ✓ exec slow: executed (" in "\n".join(final)
    assert any(ln.startswith('  [3/3] ✓ env EDITOR: "vi" (') for ln in final), final
    # The summary after it fits as well.
    summary = final[final.index(next(ln for ln in final if ln.startswith("  [3/3]"))) + 1 :]
    assert summary and all(len(ln) <= 60 for ln in summary), summary


@pytest.mark.slow
def test_a_failed_apply_on_a_narrow_terminal_counts_what_it_rolled_back(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + 'local a = file { path = "~/a", content = "a\\n" }\n'
        + 'local t = exec { name = "t", command = "true" }\n'
        + 'exec { name = "boom", command = "false", depends_on = { a, t } }\n',
    )
    s = run_in_pty(sysenv, 60)
    final = s.screen.lines()
    assert s.code == 1, "\n".join(final)
    assert any(ln.startswith("  [3/3] ✗ exec boom: ") for ln in final), final
    # Too narrow for the table: the counts are a sentence, wrapped at a space,
    # and none says `changed`.
    i = next(i for i, ln in enumerate(final) if "rolled back" in ln)
    assert all(len(ln) <= 60 for ln in final[i : i + 2])
    counts = " ".join(ln.strip() for ln in final[i : i + 2])
    assert re.match(
        r"1 rolled back, 1 not undone, 0 unchanged, 1 failed, 0 skipped in \d+\.\d\ds", counts
    ), counts
    assert not any("changed" in ln for ln in final if "unchanged" not in ln), final
    # (the verdict is a line of its own, wrapped at a space)
    verdict = "Apply failed. Rolled back everything except 1 command(s) that cannot be undone:"
    assert verdict in " ".join(ln.strip() for ln in final[-3:-1]), final
    assert final[-1] == "  - exec t (declared at sys.lua:4)", final
    assert not (sysenv.home / "a").exists()
