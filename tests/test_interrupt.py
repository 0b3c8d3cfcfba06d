"""Interruptions (SPEC sections 6 and 8; issue 9, "Interruptions").

Ctrl-C (SIGINT) or SIGTERM during `sys apply` or `sys rollback` starts no
new item, kills the running commands' process groups, undoes everything,
prints `Interrupted. Rolling back...` and ends with
`Apply interrupted. System unchanged.` (`Rollback interrupted. ...` for a
rollback), exit 130. A second Ctrl-C during that rollback does not stop it.
During evaluation Ctrl-C exits 130 at once, even inside an endless loop, and
evaluation has a time limit (`--eval-timeout`). No temp file of syslua's is
left beside a user's files after a kill or an interruption.

Every signal is a real one, sent to a real `python -m syslua` process: the
in-process runner (`sysenv.run`) cannot receive one. The time-limit tests
need no signal and run in-process.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HEADER, apply_ok, current, history, out, put, tree

INTERRUPTED = "Apply interrupted. System unchanged."
ROLLING_BACK = "Interrupted. Rolling back..."
STILL = "Still rolling back; it will finish shortly."
TEMP = re.compile(r"\.syslua-")


class Running:
    """A `sys` process in the background; its output goes to a log file."""

    def __init__(self, sysenv, *args: str) -> None:  # type: ignore[no-untyped-def]
        self.log = sysenv.work / f"bg-{time.monotonic_ns()}.log"
        self.logf = open(self.log, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "syslua", *args],
            cwd=sysenv.work,
            env=sysenv.env,
            stdin=subprocess.DEVNULL,
            stdout=self.logf,
            stderr=subprocess.STDOUT,
        )

    def wait_for(self, path: Path, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            if self.proc.poll() is not None:
                pytest.fail(
                    f"sys exited ({self.proc.returncode}) before {path.name} appeared:\n"
                    + self.output()
                )
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {path}:\n" + self.output())
            time.sleep(0.01)

    def send(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        """Wait for the process; its exit code and output."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("sys did not end:\n" + self.output())
        return code, self.output()

    def output(self) -> str:
        self.logf.flush()
        return self.log.read_text()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()


@pytest.fixture
def background(sysenv):  # type: ignore[no-untyped-def]
    started: list[Running] = []

    def start(*args: str) -> Running:
        r = Running(sysenv, *args)
        started.append(r)
        return r

    yield start
    for r in started:
        r.close()


def slow(marker: Path, name: str = "slow", deps: str = "", undo: str = "true") -> str:
    """An exec that writes its pid to `marker`, then sleeps for a minute."""
    body = f"echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep 60"
    dep = f", depends_on = {{ {deps} }}" if deps else ""
    return (
        f'exec {{ name = "{name}", provider = "shell", command = {json.dumps(body)}, '
        f"undo = {json.dumps(undo)}{dep} }}\n"
    )


def held_undo(started: Path, release: Path, then: str = "true") -> str:
    """An undo command that says it started, then runs until `release` exists
    (at most 30 s), then runs `then`: a rollback the test can hold open."""
    return (
        f"touch {started}; for i in $(seq 1500); do [ -e {release} ] && break; sleep 0.02; done; "
        + then
    )


def wait_for_text(run: Running, text: str, timeout: float = 30, *, count: int = 1) -> None:
    deadline = time.monotonic() + timeout
    while run.output().count(text) < count:
        if run.proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{text!r} did not appear:\n" + run.output())
        time.sleep(0.02)


def started(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


def gone(pid: int, timeout: float = 10, since: int | None = None) -> bool:
    """Whether process `pid` has ended (it is a child of the sys process,
    which reaps it). With `since` (its `started`), a process that got the
    same pid later does not count: other tests start processes by the
    thousand, and pids wrap at 32768 here."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if since is not None and started(pid) != since:
            return True
        time.sleep(0.02)
    return False


def last_lines(text: str, n: int = 1) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()][-n:]


def journal(sysenv) -> Path:  # type: ignore[no-untyped-def]
    return sysenv.root / "state" / "journal" / "journal.jsonl"


V1 = """
file { path = "~/a.txt", content = "a v1\\n" }
file { path = "~/old.txt", content = "old\\n" }
"""


# -- Ctrl-C and SIGTERM during apply -------------------------------------------
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_apply_kills_running_commands_and_rolls_back(
    sysenv, background, signum
) -> None:
    s1 = apply_ok(sysenv, V1)
    put(sysenv.home / ".bashrc", "# hand-made\n", 0o600)
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    sysenv.write(
        "sys.lua",
        HEADER
        + """
local a = file { path = "~/a.txt", content = "a v2\\n", mode = "0600" }
local rc = file { path = "~/.bashrc", content = "# managed\\n" }
local d = file { path = "~/new", ensure = "directory", mode = "0755" }
local n = file { path = "~/new/n.txt", content = "n\\n" }
"""
        + slow(marker, deps="a, rc, n")
        + """
file { path = "~/after.txt", content = "after\\n", depends_on = { "exec#slow" } }
""",
    )
    run = background("apply")
    run.wait_for(marker)
    sleeper = int(marker.read_text())
    since = started(sleeper)
    assert (sysenv.home / ".bashrc").read_text() == "# managed\n"  # it is half-way
    t0 = time.monotonic()
    run.send(signum)
    code, text = run.finish()
    assert time.monotonic() - t0 < 10, text  # the sleep was killed, not waited for
    assert code == 130, text
    assert ROLLING_BACK in text, text
    assert last_lines(text) == [INTERRUPTED], text
    assert "exec slow failed: interrupted" in text, text
    assert "Traceback" not in text
    assert gone(sleeper, since=since), "the exec's process group was not killed"
    assert tree(sysenv.home) == before
    assert not journal(sysenv).exists()
    assert current(sysenv) == s1 and len(history(sysenv)) == 1


def test_interrupted_apply_names_commands_that_cannot_be_undone(sysenv, background) -> None:
    apply_ok(sysenv, V1)
    marker = sysenv.work / "slow.pid"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
local a = file {{ path = "~/a.txt", content = "a v2\\n" }}
local n = exec {{ name = "notify", command = "touch {sysenv.work}/notified", depends_on = {{ a }} }}
"""
        + slow(marker, deps="n"),
    )
    run = background("apply")
    run.wait_for(marker)
    run.send(signal.SIGINT)
    code, text = run.finish()
    assert code == 130, text
    assert "System unchanged." not in text, text
    assert last_lines(text, 2) == [
        "Apply interrupted. Rolled back everything except 1 command(s) that cannot be undone:",
        "  - exec notify (declared at sys.lua:5)",
    ], text
    assert (sysenv.home / "a.txt").read_text() == "a v1\n"


def test_second_ctrl_c_during_the_rollback_does_not_stop_it(sysenv, background) -> None:
    s1 = apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    marker, undoing, release, undone = (
        sysenv.work / n for n in ("slow.pid", "undoing", "release", "undone")
    )
    # The undo command runs until released: the second Ctrl-C arrives while it runs.
    undo = held_undo(undoing, release, f"touch {undone}")
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
local a = file {{ path = "~/a.txt", content = "a v2\\n" }}
local m = exec {{ name = "mark", provider = "shell", command = "true", undo = {json.dumps(undo)},
                 depends_on = {{ a }} }}
"""
        + slow(marker, deps="m"),
    )
    run = background("apply")
    run.wait_for(marker)
    run.send(signal.SIGINT)
    run.wait_for(undoing)
    run.send(signal.SIGINT)
    wait_for_text(run, STILL)
    run.send(signal.SIGTERM)
    wait_for_text(run, STILL, count=2)  # handled while the undo still runs
    release.write_text("")
    code, text = run.finish()
    assert code == 130, text
    assert text.count(STILL) == 2, text
    assert undone.exists(), "the undo command was stopped"
    assert last_lines(text) == [INTERRUPTED], text
    assert tree(sysenv.home) == before
    assert current(sysenv) == s1
    assert not journal(sysenv).exists()


def test_sigint_during_rollback_command(sysenv, background) -> None:
    guard, marker = sysenv.work / "go-slow", sysenv.work / "slow.pid"
    body = f"if [ -e {guard} ]; then echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep 60; fi"
    s1 = apply_ok(
        sysenv,
        f"""
local x = file {{ path = "~/x.conf", content = "x v1\\n" }}
exec {{ name = "slow", provider = "shell", command = {json.dumps(body)}, undo = "true", depends_on = {{ x }} }}
""",
    )
    s2 = apply_ok(sysenv, 'file { path = "~/x.conf", content = "x v2\\n" }\n')
    before = tree(sysenv.home)
    guard.write_text("")
    run = background("rollback")
    run.wait_for(marker)
    assert (sysenv.home / "x.conf").read_text() == "x v1\n"  # half-way back to s1
    run.send(signal.SIGINT)
    code, text = run.finish()
    assert code == 130, text
    assert ROLLING_BACK in text, text
    assert last_lines(text) == ["Rollback interrupted. System unchanged."], text
    assert tree(sysenv.home) == before
    h = history(sysenv)
    assert [x["id"] for x in h] == [s2, s1] and h[0]["current"]


def test_sigint_while_waiting_for_the_lock_exits_at_once(sysenv, background) -> None:
    marker = sysenv.work / "slow.pid"
    sysenv.write("hold.lua", HEADER + slow(marker))
    holder = background("apply", "hold.lua")
    holder.wait_for(marker)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/w.txt", content = "w\\n" }\n')
    waiter = background("apply", "--wait")
    deadline = time.monotonic() + 30
    while "Building execution plan..." not in waiter.output():  # evaluated: next, the lock
        assert waiter.proc.poll() is None and time.monotonic() < deadline, waiter.output()
        time.sleep(0.02)
    time.sleep(0.3)  # blocked on the lock by now
    assert waiter.proc.poll() is None, waiter.output()
    waiter.send(signal.SIGINT)
    code, text = waiter.finish(timeout=20)
    assert code == 130, text
    assert last_lines(text) == [INTERRUPTED], text
    assert not (sysenv.home / "w.txt").exists()
    assert holder.proc.poll() is None  # the holder goes on
    holder.send(signal.SIGTERM)
    code, text = holder.finish()
    assert code == 130, text


def test_sigint_during_crash_recovery_finishes_it_then_stops(sysenv, background) -> None:
    """Recovery is a rollback too: Ctrl-C lets it finish, then the command ends (130)."""
    s1 = apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    marker, undoing, release = (sysenv.work / n for n in ("slow.pid", "undoing", "release"))
    undo = held_undo(undoing, release)
    sysenv.write(
        "v2.lua",
        HEADER
        + """
local a = file { path = "~/a.txt", content = "a v2\\n" }
"""
        + slow(marker, deps="a", undo=undo),
    )
    killed = background("apply", "v2.lua")
    killed.wait_for(marker)
    sleeper = int(marker.read_text())
    killed.send(signal.SIGKILL)
    killed.finish()
    os.kill(sleeper, signal.SIGKILL)  # the orphan of the killed run
    assert journal(sysenv).exists()

    run = background("apply")  # sys.lua is still V1: after recovery, nothing to do
    run.wait_for(undoing)
    run.send(signal.SIGINT)
    wait_for_text(run, STILL)
    release.write_text("")
    code, text = run.finish()
    assert code == 130, text
    assert STILL in text, text
    assert "rolled back an interrupted apply" in text, text
    assert last_lines(text) == [INTERRUPTED], text
    assert tree(sysenv.home) == before
    assert not journal(sysenv).exists()
    assert current(sysenv) == s1


# -- Ctrl-C during evaluation --------------------------------------------------
LOOPS = {
    "while": "while true do end",
    "pcall": "while true do pcall(function() while true do end end) end",
    "xpcall": "while true do xpcall(function() while true do end end, function() while true do end end) end",
    "coroutine": "local co = coroutine.create(function() while true do end end)\nwhile true do coroutine.resume(co) end",
}


@pytest.mark.parametrize("command", ["apply", "plan"])
def test_ctrl_c_during_evaluation_exits_130_at_once(sysenv, background, command) -> None:
    marker = sysenv.work / "evaluating"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
file {{ path = "~/x.txt", content = "x\\n" }}
local f = io.open({json.dumps(str(marker))}, "w") f:write("x") f:close()
{LOOPS["pcall"]}
""",
    )
    run = background(command, "--impure")
    run.wait_for(marker)
    time.sleep(0.2)  # inside the loop
    t0 = time.monotonic()
    run.send(signal.SIGINT)
    code, text = run.finish(timeout=20)
    assert time.monotonic() - t0 < 10, text
    assert code == 130, text
    assert "Traceback" not in text, text
    expected = INTERRUPTED if command == "apply" else "Interrupted."
    assert last_lines(text) == [expected], text
    assert tree(sysenv.home) == {}
    assert history(sysenv) == []


def test_sigterm_during_evaluation_exits_130(sysenv, background) -> None:
    marker = sysenv.work / "evaluating"
    sysenv.write(
        "sys.lua",
        f'local f = io.open({json.dumps(str(marker))}, "w") f:write("x") f:close()\nwhile true do end\n',
    )
    run = background("apply", "--impure")
    run.wait_for(marker)
    run.send(signal.SIGTERM)
    code, text = run.finish(timeout=20)
    assert code == 130, text
    assert last_lines(text) == [INTERRUPTED], text


# -- the evaluation's time limit -----------------------------------------------
@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_eval_timeout_names_the_line_it_stopped(sysenv, loop) -> None:
    apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/x.txt", content = "x\\n" }\n' + LOOPS[loop])
    t0 = time.monotonic()
    p = sysenv.run("apply", "--eval-timeout", "0.5")
    assert time.monotonic() - t0 < 20
    assert p.returncode == 2, out(p)
    line = HEADER.count("\n") + 2  # the loop's first line
    assert f"Error: evaluation did not finish within 0.5 s (sys.lua:{line})" in p.stderr, out(p)
    assert "--eval-timeout" in p.stderr
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before


def test_eval_timeout_in_a_module_names_the_module(sysenv) -> None:
    sysenv.write(
        "lib/spin.lua", "local M = {}\nfunction M.spin()\n  while true do end\nend\nreturn M\n"
    )
    sysenv.write("sys.lua", 'local spin = require("lib.spin")\nspin.spin()\n')
    p = sysenv.run("plan", "--eval-timeout", "1")
    assert p.returncode == 2, out(p)
    assert "evaluation did not finish within 1 s (lib/spin.lua:3)" in p.stderr, out(p)


def test_eval_timeout_covers_apply_children(sysenv) -> None:
    sysenv.write("child.lua", "local n = 0\nwhile true do n = n + 1 end\n")
    sysenv.write("sys.lua", 'apply { name = "./child.lua" }\n')
    p = sysenv.run("plan", "--eval-timeout", "0.5")
    assert p.returncode == 2, out(p)
    assert "evaluation did not finish within 0.5 s (child.lua:2)" in p.stderr, out(p)


def test_eval_timeout_default_is_60_seconds_and_0_is_no_limit(sysenv) -> None:
    from syslua import cli
    from syslua.eval.lua import DEFAULT_EVAL_TIMEOUT

    assert cli.DEFAULT_EVAL_TIMEOUT == DEFAULT_EVAL_TIMEOUT == 60
    for command in ("apply", "plan"):
        h = sysenv.run(command, "--help")
        assert re.search(r"--eval-timeout\s+FLOAT.*\[default: 60", " ".join(h.stdout.split())), (
            h.stdout
        )
    # a config that takes a moment is not stopped without a limit
    sysenv.write("sys.lua", "local t = os.clock() while os.clock() - t < 0.3 do end\n")
    assert sysenv.run("plan", "--eval-timeout", "0").returncode == 0
    bad = sysenv.run("plan", "--eval-timeout", "-1")
    assert bad.returncode == 2 and "Traceback" not in out(bad)


def test_a_config_cannot_turn_the_jit_back_on(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        'assert(jit.os and jit.arch and jit.version)\nassert(jit.on == nil)\nassert(package.loaded["jit.opt"] == nil)\n',
    )
    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)


# -- temp files ------------------------------------------------------------------
def dead_pid() -> int:
    """The pid of a process that has ended."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_recovery_removes_temp_files_a_killed_writer_left(sysenv, background, request) -> None:
    """A SIGKILL mid-write leaves `.<name>.syslua-<pid>-<hex>`; made here as the
    killed writer would have, beside paths the killed apply journaled."""
    s1 = apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    sysenv.write(
        "sys.lua",
        HEADER
        + """
local a = file { path = "~/a.txt", content = "a v2\\n" }
local d = file { path = "~/made", ensure = "directory", mode = "0755" }
local f = file { path = "~/made/f.txt", content = "f\\n" }
"""
        + slow(marker, deps="a, f"),
    )
    run = background("apply")
    run.wait_for(marker)
    sleeper = int(marker.read_text())
    run.send(signal.SIGKILL)
    run.finish()
    os.kill(sleeper, signal.SIGKILL)
    dead = run.proc.pid
    leftovers = [
        sysenv.home / f".a.txt.syslua-{dead}-0badf00d",
        sysenv.home / f".a.txt.syslua-restore-{dead}",  # an older version's name
        sysenv.home / "made" / f".f.txt.syslua-{dead}-deadbeef",  # keeps ~/made from going
    ]
    live = subprocess.Popen(["sleep", "60"])
    request.addfinalizer(live.kill)
    kept = [
        sysenv.home / f".a.txt.syslua-{live.pid}-0badf00d",  # a live process's: not ours
        sysenv.home / f".other.syslua-{dead}-0badf00d",  # not beside a journaled path
        sysenv.home / ".a.txt.syslua-notes",  # not syslua's pattern
    ]
    for p in leftovers + kept:
        p.write_text("partial")

    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert "rolled back an interrupted apply" in out(p), out(p)
    assert not any(p.exists() for p in leftovers), [p for p in leftovers if p.exists()]
    assert all(p.exists() for p in kept)
    for p in kept:
        p.unlink()
    assert tree(sysenv.home) == before
    assert current(sysenv) == s1


def test_in_process_rollback_removes_stale_temp_files(sysenv) -> None:
    apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    stale = sysenv.home / f".a.txt.syslua-{dead_pid()}-0badf00d"
    stale.write_text("left by a run killed long ago")
    sysenv.write(
        "sys.lua",
        HEADER
        + """
local a = file { path = "~/a.txt", content = "a v2\\n" }
exec { name = "boom", command = "false", depends_on = { a } }
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert not stale.exists()
    assert tree(sysenv.home) == before


def test_sigkill_mid_write_leaves_no_temp_file_after_recovery(sysenv, background) -> None:
    """A real kill while a large file is being written (retried until it lands mid-write)."""
    big = sysenv.work / "big.bin"
    big.write_bytes(os.urandom(1 << 20) * 48)
    sysenv.write(
        "sys.lua", HEADER + f'file {{ path = "~/big.bin", source = {json.dumps(str(big))} }}\n'
    )
    sysenv.write("empty.lua", "")
    for _ in range(8):
        run = background("apply")
        caught = None
        deadline = time.monotonic() + 60
        while run.proc.poll() is None and time.monotonic() < deadline:
            temps = [n for n in os.listdir(sysenv.home) if TEMP.search(n)]
            if temps:
                run.send(signal.SIGKILL)
                caught = temps[0]
                break
        run.finish()
        mid_write = caught is not None and (sysenv.home / caught).exists()
        p = sysenv.run("status")  # recovers the killed apply, if it was killed
        assert "Traceback" not in out(p), out(p)
        if not mid_write:
            # the write was done before the kill landed (or the apply finished): again
            if (sysenv.home / "big.bin").exists():
                assert sysenv.run("apply", "--allow-empty", "empty.lua").returncode == 0
            continue
        assert "rolled back an interrupted apply" in out(p), out(p)
        assert [n for n in os.listdir(sysenv.home) if TEMP.search(n)] == []
        assert not (sysenv.home / "big.bin").exists()
        return
    pytest.skip("the write always finished before the kill landed")
