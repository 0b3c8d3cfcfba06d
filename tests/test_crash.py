"""Crash recovery and write faults (SPEC section 6; issue 4, "Bad input and faults").

A real `sys apply` (or `sys rollback`) is killed with SIGKILL at several
points; the next `sys` command must roll the interrupted run back before
doing anything else, say so, and leave the home tree byte-identical to what
it was before the killed run started. A lock left by the dead process does
not block. A write error (a file-size limit standing in for a full disk)
fails the apply cleanly.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HEADER, apply_ok, current, history, out, put, tree

RECOVERED = "rolled back an interrupted apply"


def slow_exec(
    marker: Path, *, name: str = "slow", deps: str = "", guard: Path | None = None
) -> str:
    """An exec that writes its pid to `marker`, then sleeps; its undo is harmless.

    With `guard`, it only sleeps while the guard file exists (otherwise it is quick).
    """
    body = f"echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep 30"
    if guard is not None:
        body = f"if [ -e {guard} ]; then {body}; fi"
    dep = f", depends_on = {{ {deps} }}" if deps else ""
    return f'exec {{ name = "{name}", provider = "shell", command = {json.dumps(body)}, undo = "true"{dep} }}\n'


class Killed:
    """A `sys` process started in the background and killed with SIGKILL once `marker` exists."""

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
        self.child: int | None = None

    def kill_when(self, marker: Path, timeout: float = 30, *, pid_file: bool = True) -> None:
        """SIGKILL the run once `marker` exists; a pid file names the exec's `sleep` to clean up later."""
        deadline = time.monotonic() + timeout
        while not marker.exists():
            if self.proc.poll() is not None:
                self.logf.close()
                pytest.fail(
                    f"sys exited ({self.proc.returncode}) before {marker.name} appeared:\n"
                    + self.log.read_text()
                )
            if time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail("timed out waiting for " + str(marker))
            time.sleep(0.01)
        if pid_file:
            self.child = int(marker.read_text().strip())
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        assert self.proc.returncode == -signal.SIGKILL
        self.logf.close()

    def cleanup(self) -> None:
        """End the orphaned `sleep` the killed run left behind (by its pid)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.logf.closed:
            self.logf.close()
        if self.child is not None:
            try:
                os.kill(self.child, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def killed(sysenv):  # type: ignore[no-untyped-def]
    started: list[Killed] = []

    def start(*args: str) -> Killed:
        k = Killed(sysenv, *args)
        started.append(k)
        return k

    yield start
    for k in started:
        k.cleanup()


# -- SIGKILL during apply ------------------------------------------------------
V1 = """
file { path = "~/old.txt", content = "old\\n" }
file { path = "~/keep.txt", content = "keep v1\\n", mode = "0600" }
"""


def test_killed_during_exec_after_files_written_plan_recovers(sysenv, killed) -> None:
    s1 = apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    sysenv.write(
        "sys.lua",
        HEADER
        + """
local keep = file { path = "~/keep.txt", content = "keep v2\\n" }
local nd = file { path = "~/nd", ensure = "directory", mode = "0700" }
local f = file { path = "~/nd/f.txt", content = "f\\n" }
local new = file { path = "~/new.txt", content = "new\\n" }
"""
        + slow_exec(marker, deps="keep, f, new")
        + """
file { path = "~/after.txt", content = "after\\n", depends_on = { "exec#slow" } }
""",
    )
    k = killed("apply")
    k.kill_when(marker)
    mid = tree(sysenv.home)
    assert mid != before and "new.txt" in mid and "old.txt" not in mid  # it was killed half-way

    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)
    assert RECOVERED in out(p), out(p)
    assert f"pid {k.proc.pid}" in out(p)
    assert tree(sysenv.home) == before
    assert not (sysenv.root / "state" / "journal" / "journal.jsonl").exists()
    # the plan itself was made against the recovered machine
    assert "  + file ~/new.txt: will create\n" in p.stdout, p.stdout
    assert current(sysenv) == s1


def test_killed_after_overwriting_a_user_file_status_recovers(sysenv, killed) -> None:
    put(sysenv.home / ".gitconfig", "[user]\n  name = Me\n", 0o600)
    put(sysenv.home / ".config" / "app" / "settings.json", '{"theme": "dark"}\n', 0o644)
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    sysenv.write(
        "sys.lua",
        HEADER
        + """
local g = file { path = "~/.gitconfig", content = "[user]\\n  name = Managed\\n" }
local s = file { path = "~/.config/app/settings.json", content = "{}\\n", mode = "0640" }
"""
        + slow_exec(marker, deps="g, s"),
    )
    k = killed("apply")
    k.kill_when(marker)
    assert (sysenv.home / ".gitconfig").read_text().endswith("Managed\n")

    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert RECOVERED in out(p), out(p)
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before
    assert history(sysenv) == []


def test_killed_then_apply_recovers_first_and_stale_lock_does_not_block(sysenv, killed) -> None:
    s1 = apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    sysenv.write(
        "v2.lua",
        HEADER
        + """
local k = file { path = "~/keep.txt", content = "keep v2\\n" }
"""
        + slow_exec(marker, deps="k"),
    )
    k = killed("apply", "v2.lua")
    k.kill_when(marker)
    lock = sysenv.root / "state" / "lock"
    assert json.loads(lock.read_text())["pid"] == k.proc.pid  # the dead holder is still named

    t0 = time.monotonic()
    p = sysenv.run("apply")  # sys.lua is still V1: after recovery nothing is left to do
    assert p.returncode == 0, out(p)
    assert time.monotonic() - t0 < 20
    assert RECOVERED in out(p), out(p)
    assert "No changes" in p.stdout, out(p)
    assert tree(sysenv.home) == before
    h = history(sysenv)
    assert [x["id"] for x in h] == [s1] and h[0]["current"]


def test_killed_as_soon_as_the_journal_exists(sysenv, killed) -> None:
    """Killed at an arbitrary early moment, among many file writes."""
    for i in range(0, 60, 3):
        put(sysenv.home / "many" / f"f{i:03}.txt", f"user {i}\n", 0o600)
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    files = "".join(
        f'file {{ path = "~/many/f{i:03}.txt", content = "managed {i}\\n" }}\n' for i in range(60)
    )
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/many", ensure = "directory", mode = "0755" }\n'
        + files
        + slow_exec(marker, deps='"file#~/many/f059.txt"'),
    )
    k = killed("apply")
    k.kill_when(sysenv.root / "state" / "journal" / "journal.jsonl", pid_file=False)
    if marker.exists():  # killed later than intended: still end its sleep afterwards
        k.child = int(marker.read_text().strip())
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert RECOVERED in out(p), out(p)
    assert tree(sysenv.home) == before


def test_killed_during_rollback(sysenv, killed) -> None:
    guard, marker = sysenv.work / "go-slow", sysenv.work / "slow.pid"
    s1 = apply_ok(
        sysenv,
        """
local x = file { path = "~/x.conf", content = "x v1\\n" }
file { path = "~/only-v1.txt", content = "v1 only\\n" }
"""
        + slow_exec(marker, deps="x", guard=guard),
    )
    s2 = apply_ok(
        sysenv,
        """
file { path = "~/x.conf", content = "x v2\\n", mode = "0600" }
file { path = "~/only-v2.txt", content = "v2 only\\n" }
""",
    )
    before = tree(sysenv.home)
    guard.write_text("")
    k = killed("rollback")
    k.kill_when(marker)
    assert (sysenv.home / "x.conf").read_text() == "x v1\n"  # the rollback was half-way

    p = sysenv.run("history", "--json")
    assert p.returncode == 0, out(p)
    assert "rolled back an interrupted rollback" in p.stderr, out(p)
    assert tree(sysenv.home) == before
    h = json.loads(p.stdout)
    assert [x["id"] for x in h] == [s2, s1] and h[0]["current"]
    # and a rollback that is not interrupted still works afterwards
    guard.unlink()
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert (sysenv.home / "x.conf").read_text() == "x v1\n"
    assert (sysenv.home / "only-v1.txt").exists() and not (sysenv.home / "only-v2.txt").exists()


def test_killed_apply_with_removal_of_a_taken_over_file(sysenv, killed) -> None:
    """Removal restores a taken-over original; a crash during that apply puts the managed file back."""
    put(sysenv.home / ".vimrc", "set nocompatible\n", 0o600)
    apply_ok(sysenv, 'file { path = "~/.vimrc", content = "managed vimrc\\n" }\n')
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    sysenv.write("sys.lua", HEADER + slow_exec(marker))
    k = killed("apply")
    k.kill_when(marker)
    assert (
        sysenv.home / ".vimrc"
    ).read_text() == "set nocompatible\n"  # removal had restored the original
    p = sysenv.run("plan")
    assert RECOVERED in out(p), out(p)
    assert tree(sysenv.home) == before


# -- a write error (disk full) ---------------------------------------------------
LIMIT = 1 << 20  # 1 MiB


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_write_error_fails_cleanly(sysenv) -> None:
    s1 = apply_ok(sysenv, 'file { path = "~/small.txt", content = "v1\\n" }\n')
    put(sysenv.home / ".bashrc", "# mine\n", 0o600)
    big = sysenv.work / "big.bin"
    big.write_bytes(os.urandom(LIMIT + 4096))
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
local s = file {{ path = "~/small.txt", content = "v2\\n" }}
local b = file {{ path = "~/.bashrc", content = "# managed\\n", depends_on = {{ s }} }}
file {{ path = "~/big.bin", source = {json.dumps(str(big))}, depends_on = {{ b }} }}
file {{ path = "~/after.txt", content = "after\\n", depends_on = {{ "file#~/big.bin" }} }}
""",
    )
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env=sysenv.env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size,
    )
    text = out(p)
    assert p.returncode == 1, text
    assert "Apply failed. System unchanged." in text, text
    assert "file ~/big.bin failed" in text, text
    assert "File too large" in text, text
    assert "Traceback" not in text
    assert tree(sysenv.home) == before
    assert current(sysenv) == s1
    # without the limit, the same config applies
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "big.bin").read_bytes() == big.read_bytes()


def test_killed_while_rolling_back_a_failed_apply(sysenv, killed) -> None:
    """Killed during the in-process rollback (a slow undo): recovery finishes the job."""
    guard, marker = sysenv.work / "undo-slow", sysenv.work / "undo.pid"
    s1 = apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    before = tree(sysenv.home)
    undo = f"rm -f {sysenv.home}/mark; if [ -e {guard} ]; then echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep 30; fi"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
local a = file {{ path = "~/a.txt", content = "v2\\n" }}
local m = exec {{ name = "mark", provider = "shell", command = "touch {sysenv.home}/mark", undo = {json.dumps(undo)},
                 depends_on = {{ a }} }}
exec {{ name = "boom", command = "false", depends_on = {{ m }} }}
""",
    )
    guard.write_text("")
    k = killed("apply")
    k.kill_when(marker)
    guard.unlink()
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert RECOVERED in out(p), out(p)
    assert tree(sysenv.home) == before
    assert current(sysenv) == s1


def test_killed_during_a_bind_create(sysenv, killed) -> None:
    """A bind whose outputs do not depend on its actions is destroyed by recovery."""
    marker = sysenv.work / "bind.pid"
    before = tree(sysenv.home)
    create = f"echo made > {sysenv.home}/made.txt; echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep 30"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
sys.bind {{
  id = "maker",
  inputs = {{ path = {json.dumps(str(sysenv.home / "made.txt"))} }},
  create = function(inputs, ctx)
    ctx:exec {{ bin = "/bin/sh", args = {{ "-c", {json.dumps(create)} }} }}
    return {{ path = inputs.path }}
  end,
  destroy = function(outputs, ctx)
    ctx:exec {{ bin = "/bin/rm", args = {{ "-f", outputs.path }} }}
  end,
}}
""",
    )
    k = killed("apply")
    k.kill_when(marker)
    assert (sysenv.home / "made.txt").exists()
    p = sysenv.run("status")
    assert RECOVERED in out(p), out(p)
    assert tree(sysenv.home) == before
