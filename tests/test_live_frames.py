"""The live display's frames, and a Ctrl-C rollback, as a terminal sees them
(issue 23, point 3).

A real `python -m syslua apply` runs in a pseudo-terminal of 100 or 60
columns; the bytes it writes are kept with the time they arrived and played
on the small terminal screen of test_live_display (`Screen`). The display
is drawn at most about 10 times a second however many items finish, each
frame between the synchronized-output marks (DEC mode 2026), which only a
terminal gets. A real SIGINT during an apply rolls it back: the files this
apply created are `Removed`, those it changed `Restored`, and a rollback of
200 items shows a progress line, not 200 lines.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import HEADER, apply_ok, ok, tree
from ptyrun import Pty, run_in_pty
from test_interrupt import slow
from test_live_display import Screen

BEGIN, END = b"\x1b[?2026h", b"\x1b[?2026l"
# What redraws the live display: the cursor going up, or a line erased.
REDRAW = re.compile(rb"\x1b\[\d*A|\x1b\[2K")


@dataclass
class Run:
    data: bytes  # everything written to the terminal
    screen: Screen
    code: int
    live_seconds: float  # from `Executing:` to the end of the process


def in_pty(sysenv, columns: int, *, interrupt_when: Path | None = None) -> Run:  # type: ignore[no-untyped-def]
    """`sys apply` in a pseudo-terminal `columns` wide; with `interrupt_when`,
    a real SIGINT is sent once that file exists (the exec that writes it runs)."""
    env = dict(sysenv.env, TERM="xterm-256color", COLUMNS=str(columns), LINES="40")
    env["SHELL"] = "/bin/bash"
    (sysenv.home / ".bashrc").write_text(f". '{sysenv.root}/state/env.sh'\n")
    live_from = None
    sent = False

    def watching(pty: Pty, _: bytes) -> None:
        nonlocal live_from, sent
        if interrupt_when is not None and not sent and interrupt_when.exists():
            os.kill(pty.proc.pid, signal.SIGINT)
            sent = True
        if live_from is None and b"Executing:" in pty.seen:
            live_from = time.monotonic()

    code, data, finished = run_in_pty(
        [sys.executable, "-m", "syslua", "apply"],
        env=env,
        cwd=sysenv.work,
        columns=columns,
        timeout=90,
        poll=0.02,
        each=watching,
    )
    ended = time.monotonic()
    if not finished:
        pytest.fail("sys apply did not finish in time")
    screen = Screen(columns)
    screen.feed(data)
    assert live_from is not None, data.decode(errors="replace")
    return Run(data, screen, code, ended - live_from)


def many_files(n: int) -> str:
    return (
        "local fs = {}\n"
        f"for i = 1, {n} do\n"
        '  fs[i] = file { path = "~/many/f" .. i, content = "x\\n" }\n'
        "end\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize("columns", [100, 60])
def test_the_display_draws_at_most_ten_frames_a_second_each_synchronized(
    sysenv, columns: int
) -> None:
    sysenv.write("sys.lua", HEADER + many_files(300))
    r = in_pty(sysenv, columns)
    final = r.screen.lines()
    assert r.code == 0, "\n".join(final)
    frames = r.data.count(BEGIN)
    assert frames >= 1 and frames == r.data.count(END), (frames, r.data.count(END))
    # 300 items, each printed as it finished, and yet about 10 frames a second
    assert frames <= 10 * r.live_seconds + 3, (frames, r.live_seconds)
    # every redraw of the display is inside a frame
    outside = re.sub(re.escape(BEGIN) + rb".*?" + re.escape(END), b"", r.data, flags=re.S)
    assert not REDRAW.search(outside), outside[-2000:]
    # and nothing was lost: every line is there, numbered without a gap
    numbers = [int(m[1]) for ln in final if (m := re.match(r"  \[(\d+)/300\] ✓ file ", ln))]
    assert numbers == list(range(1, 301)), final[:20]
    assert r.screen.overflows == [], r.screen.overflows
    assert any(ln.startswith("Apply complete: snapshot ") for ln in final), final[-5:]


def test_no_synchronized_output_off_a_terminal(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + many_files(3))
    p = sysenv.run("apply")
    ok(p)
    assert "\x1b[?2026" not in p.stdout + p.stderr


@pytest.mark.slow
def test_ctrl_c_rollback_says_removed_for_what_this_apply_created(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "a v1\\n" }\n')
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    sysenv.write(
        "sys.lua",
        HEADER
        + 'local a = file { path = "~/a.txt", content = "a v2\\n" }\n'
        + 'local n = file { path = "~/new.txt", content = "new\\n" }\n'
        + slow(marker, deps="a, n"),
    )
    r = in_pty(sysenv, 100, interrupt_when=marker)
    final = r.screen.lines()
    text = "\n".join(final)
    assert r.code == 130, text
    assert "Interrupted. Rolling back..." in text, text
    assert "  - Removed ~/new.txt" in final, text
    assert "  - Restored ~/a.txt" in final, text
    assert "Restored ~/new.txt" not in text, text
    assert final[-1] == "Apply interrupted. System unchanged.", text
    (sysenv.home / ".bashrc").unlink()  # in_pty's, for the shell advice
    assert tree(sysenv.home) == before


@pytest.mark.slow
@pytest.mark.parametrize("columns", [100, 60])
def test_a_rollback_of_200_items_is_a_progress_line(sysenv, columns: int) -> None:
    marker = sysenv.work / "slow.pid"
    sysenv.write(
        "sys.lua",
        HEADER + many_files(200) + slow(marker, deps="table.unpack(fs)"),
    )
    r = in_pty(sysenv, columns, interrupt_when=marker)
    final = r.screen.lines()
    text = "\n".join(final)
    assert r.code == 130, text
    # while it ran, a progress line (drawn as the display is, then gone) ...
    assert re.search(rb"Undoing: \d+ of 201 items", r.data), r.data[-3000:]
    assert not any("Undoing:" in ln for ln in final), text
    # ... and then one line, not 200
    start = final.index("Interrupted. Rolling back...")
    undone = [ln for ln in final[start:] if ln.startswith("  - ")]
    assert len(undone) == 1, undone
    said = " ".join(ln.strip() for ln in final[final.index(undone[0]) :][:3])
    assert re.match(r"- Removed 20\d path\(s\) this apply created", said), said
    assert "Restored" not in text
    assert all(len(ln) <= columns for ln in final), [ln for ln in final if len(ln) > columns]
    assert r.screen.overflows == [], r.screen.overflows
    assert final[-1] == "Apply interrupted. System unchanged.", text
    assert not (sysenv.home / "many").exists()
