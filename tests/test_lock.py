"""The state lock (SPEC sections 6 and 7; issue 4, item 8).

One exclusive lock per state dir for apply, rollback and gc: a second process
fails at once with exit code 3 naming the holder's pid and command, or waits
with `--wait`. Read-only commands (history, plan, status) neither block on a
running apply nor mistake its live journal for an interrupted one. A lock
whose holder is dead is free.

A run that meets a live holder is a second real process (`sysenv.spawn`);
runs after the holder is gone may be in-process (`sysenv.run`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HEADER, out, tree


def wait_for(path: Path, proc: subprocess.Popen, timeout: float = 30) -> None:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            o, e = proc.communicate()
            pytest.fail(f"sys exited ({proc.returncode}) before {path.name} appeared:\n{o}{e}")
        assert time.monotonic() < deadline, f"timed out waiting for {path}"
        time.sleep(0.01)


class Holder:
    """A real `sys apply` that holds the lock until released: its exec waits for a `go` file."""

    def __init__(self, sysenv, name: str = "hold.lua", extra: str = "") -> None:  # type: ignore[no-untyped-def]
        self.sysenv = sysenv
        self.started = sysenv.work / f"{name}.started"
        self.go = sysenv.work / f"{name}.go"
        wait = f"touch {self.started}; while [ ! -e {self.go} ]; do sleep 0.02; done"
        sysenv.write(
            name,
            HEADER
            + extra
            + f"""
local f = file {{ path = "~/held.txt", content = "written while holding the lock\\n" }}
exec {{ name = "hold", provider = "shell", command = {json.dumps(wait)}, undo = "true", depends_on = {{ f }} }}
""",
        )
        self.proc = self.popen("apply", name)
        wait_for(self.started, self.proc)

    def popen(self, *args: str) -> subprocess.Popen:  # type: ignore[type-arg]
        return subprocess.Popen(
            [sys.executable, "-m", "syslua", *args],
            cwd=self.sysenv.work,
            env=self.sysenv.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def release(self) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
        self.go.write_text("")
        o, e = self.proc.communicate(timeout=60)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, o, e)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.go.write_text("")
            try:
                self.proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()


@pytest.fixture
def holder(sysenv):  # type: ignore[no-untyped-def]
    made: list[Holder] = []

    def start(**kw: str) -> Holder:
        h = Holder(sysenv, **kw)
        made.append(h)
        return h

    yield start
    for h in made:
        h.stop()


def test_second_apply_fails_at_once_naming_the_holder(sysenv, holder) -> None:
    h = holder()
    sysenv.write("sys.lua", HEADER + 'file { path = "~/other.txt", content = "other\\n" }\n')
    t0 = time.monotonic()
    p = sysenv.spawn("apply")
    elapsed = time.monotonic() - t0
    assert p.returncode == 3, out(p)
    assert f"pid {h.proc.pid}" in p.stderr and "sys apply hold.lua" in p.stderr, out(p)
    assert "--wait" in p.stderr
    assert "Traceback" not in out(p)
    assert elapsed < 10  # at once, not after the holder finished
    assert h.proc.poll() is None
    assert not (sysenv.home / "other.txt").exists()
    # rollback and gc take the same lock
    for args in (("rollback",), ("gc",), ("snapshot", "tag", "x", "y")):
        q = sysenv.spawn(*args)
        assert q.returncode == 3 and f"pid {h.proc.pid}" in q.stderr, (args, out(q))
    done = h.release()
    assert done.returncode == 0, out(done)
    assert (sysenv.home / "held.txt").exists() and not (sysenv.home / "other.txt").exists()


def test_wait_waits_then_succeeds(sysenv, holder) -> None:
    h = holder()
    sysenv.write("sys.lua", HEADER + 'file { path = "~/other.txt", content = "other\\n" }\n')
    waiter = h.popen("apply", "--wait")
    time.sleep(0.5)
    assert waiter.poll() is None, waiter.communicate()  # still waiting for the lock
    assert not (sysenv.home / "other.txt").exists()
    first = h.release()
    assert first.returncode == 0, out(first)
    o, e = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, o + e
    assert (sysenv.home / "other.txt").read_text() == "other\n"
    hist = json.loads(sysenv.run("history", "--json").stdout)
    assert len(hist) == 2 and hist[0]["current"]  # the waiter's snapshot came second
    assert "held.txt" not in tree(sysenv.home)  # the waiter's config does not declare it: removed


def test_read_only_commands_do_not_block_or_recover_a_running_apply(sysenv, holder) -> None:
    h = holder()
    journal = sysenv.root / "state" / "journal" / "journal.jsonl"
    assert journal.exists()  # the running apply's live journal
    sysenv.write(
        "sys.lua",
        HEADER + 'file { path = "~/held.txt", content = "written while holding the lock\\n" }\n',
    )
    # diff: the config's pending changes, as plan --diff shows them
    expected = {("history", "--json"): 0, ("plan",): 0, ("status",): 0, ("diff",): 0}
    for args, code in expected.items():
        t0 = time.monotonic()
        p = sysenv.spawn(*args)
        assert time.monotonic() - t0 < 10, args
        assert "interrupted" not in out(p), (args, out(p))
        assert p.returncode == code, (args, out(p))
        assert "lock" not in p.stderr.lower(), (args, out(p))
    assert journal.exists() and h.proc.poll() is None
    assert (sysenv.home / "held.txt").exists()  # not rolled back under the running apply
    done = h.release()
    assert done.returncode == 0, out(done)
    assert (sysenv.home / "held.txt").exists()


def test_stale_lock_file_does_not_block(sysenv) -> None:
    lock = sysenv.root / "state" / "lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("pid 2147483646 (sys apply)\n")  # a holder that no longer exists
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "a.txt").exists()
    assert lock.read_text() == ""  # released, not naming anyone


def test_lock_of_a_dead_process_is_free(sysenv) -> None:
    """A process that took the flock and died: the kernel released it."""
    lock = sysenv.root / "state" / "lock"
    lock.parent.mkdir(parents=True)
    code = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'pid %d (sys apply)\\n' % os.getpid()); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code, str(lock)], check=True)
    assert "pid" in lock.read_text()
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)


def test_lock_held_by_a_live_non_sys_process(sysenv) -> None:
    """The lock is the kernel's flock, not the file's text: a live holder blocks (exit 3)."""
    lock = sysenv.root / "state" / "lock"
    lock.parent.mkdir(parents=True)
    code = (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'pid %d (test holder)\\n' % os.getpid()); "
        "print('locked', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
        p = sysenv.spawn("apply")
        assert p.returncode == 3 and f"pid {holder.pid} (test holder)" in p.stderr, out(p)
        assert not (sysenv.home / "a.txt").exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
