"""Evaluation always stops (issue 22, point 7).

A Lua pattern that backtracks for ever runs inside one C call: no VM
instruction for the prelude's watchdog, no point where Python runs a signal
handler. The CLI's watchdog (`syslua/cli/watchdog.py`) ends the process once
the time limit plus a grace has passed (exit 2, the usual message), on a
second Ctrl-C, or a grace after one that could not act (exit 130).
Evaluation has no side effects and holds no lock, so nothing is left behind.

Every run here is a real `python -m syslua` process: signals, and a process
that ends itself with `os._exit`, need one.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HEADER, out, tree

STUCK = 'string.find(string.rep("a", 40), string.rep("a*", 30) .. "b")\n'
INTERRUPTED = "Apply interrupted. System unchanged."


def stuck_config(sysenv, marker: Path | None = None) -> None:  # type: ignore[no-untyped-def]
    """A config that declares a file, then never returns from one C call
    (having written `marker` first, with --impure, when given)."""
    say = ""
    if marker is not None:
        say = f'local f = io.open({json.dumps(str(marker))}, "w") f:write("x") f:close()\n'
    sysenv.write("sys.lua", HEADER + 'file { path = "~/x.txt", content = "x\\n" }\n' + say + STUCK)


def start(sysenv, *args: str) -> subprocess.Popen[str]:  # type: ignore[no-untyped-def]
    return subprocess.Popen(
        [sys.executable, "-m", "syslua", *args],
        cwd=sysenv.work,
        env=sysenv.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(proc: subprocess.Popen[str], marker: Path) -> None:
    deadline = time.monotonic() + 10
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, "evaluation did not start"
        time.sleep(0.01)
    time.sleep(0.1)  # into the C call


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        text, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        text, _ = proc.communicate()
        pytest.fail("sys did not end:\n" + text)
    return proc.returncode, text, time.monotonic() - t0


def nothing_left(sysenv, before) -> None:  # type: ignore[no-untyped-def]
    """The home as it was, and the next command runs (no lock or journal held)."""
    assert tree(sysenv.home) == before
    sysenv.write("sys.lua", HEADER + 'file { path = "~/y.txt", content = "y\\n" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert "recover" not in out(p).lower(), out(p)
    assert (sysenv.home / "y.txt").read_text() == "y\n"


def test_a_call_that_never_returns_stops_at_the_eval_timeout(sysenv) -> None:
    before = tree(sysenv.home)
    stuck_config(sysenv)
    t0 = time.monotonic()
    p = sysenv.spawn("apply", "--eval-timeout", "0.5", timeout=10)
    assert time.monotonic() - t0 < 4.5, out(p)
    assert p.returncode == 2, out(p)
    assert "Traceback" not in out(p)
    assert "Error: evaluation did not finish within 0.5 s (in sys.lua" in p.stderr, out(p)
    assert "--eval-timeout SECONDS" in p.stderr, out(p)
    nothing_left(sysenv, before)


def test_a_second_ctrl_c_ends_a_call_that_never_returns_at_once(sysenv) -> None:
    before = tree(sysenv.home)
    marker = sysenv.work / "evaluating"
    stuck_config(sysenv, marker)
    proc = start(sysenv, "apply", "--impure")
    wait_for(proc, marker)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    code, text, took = finish(proc, timeout=4)
    assert code == 130, text
    assert took < 0.9, text  # the second one, not the grace of the first
    assert "Traceback" not in text
    assert [ln for ln in text.splitlines() if ln.strip()][-1] == INTERRUPTED, text
    marker.unlink()
    nothing_left(sysenv, before)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_one_signal_ends_it_after_a_short_grace(sysenv, signum) -> None:
    marker = sysenv.work / "evaluating"
    stuck_config(sysenv, marker)
    proc = start(sysenv, "plan", "--impure")
    wait_for(proc, marker)
    proc.send_signal(signum)
    code, text, took = finish(proc, timeout=4)
    assert code == 130, text
    assert took < 3, text
    assert "Traceback" not in text
    assert text.rstrip().endswith("Interrupted."), text
