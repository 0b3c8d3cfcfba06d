"""Recovery stops what the dead apply started (issue 22, point 3).

Each command an apply runs is recorded in its journal, durably, before it
runs: its process group, its leader's start time and the boot. A real
`sys apply` is SIGKILLed while a command of its exec runs (and while a
command that already ended left something running in the background); the
next command stops those process groups before undoing anything and says
so, and nothing they would have written appears afterwards. A record whose
process is not the one it names (a pid reused: another start time; another
boot) is left alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HEADER, apply_ok, out, tree
from test_crash import RECOVERED, Killed

from syslua.resources.groups import boot_id, start_time
from syslua.state import journal

V1 = 'file { path = "~/keep.txt", content = "keep v1\\n" }\n'


def late_writer(home: Path, release: Path) -> str:
    """Shell that leaves a process in the background which, once `release`
    exists, writes ~/late.txt: what a killed apply's command does afterwards."""
    loop = f"while [ ! -e {release} ]; do sleep 0.02; done; echo late > {home}/late.txt"
    return f"sh -c '{loop}' >/dev/null 2>&1 &"


def exec_item(name: str, body: str, deps: str = "") -> str:
    dep = f", depends_on = {{ {deps} }}" if deps else ""
    return (
        f'exec {{ name = "{name}", provider = "shell", command = {json.dumps(body)}, '
        f'undo = "true"{dep} }}\n'
    )


def running_until(marker: Path) -> str:
    """Shell that writes its pid to `marker`, then runs on (a long command)."""
    return f"echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep 30"


def journal_ops(sysenv) -> list[dict]:  # type: ignore[no-untyped-def,type-arg]
    lines = (sysenv.root / "state" / "journal" / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def killed(sysenv):  # type: ignore[no-untyped-def]
    """`sys` processes to SIGKILL (test_crash.Killed), cleaned up at the end."""
    started: list[Killed] = []

    def start(*args: str) -> Killed:
        started.append(Killed(sysenv, *args))
        return started[-1]

    yield start
    for k in started:
        k.cleanup()


@pytest.fixture
def release(sysenv):  # type: ignore[no-untyped-def]
    """The file that lets a background writer go on; made at the end whatever
    happened, so that a writer left alive ends (into the test's home)."""
    path = sysenv.work / "release"
    yield path
    path.touch()


def test_a_killed_apply_s_running_command_is_stopped_before_recovery(
    sysenv, killed, release
) -> None:  # type: ignore[no-untyped-def]
    apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    body = late_writer(sysenv.home, release) + " " + running_until(marker)
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/keep.txt", content = "keep v2\\n" }\n'
        + exec_item("quick", "true")
        + exec_item("slow", body, deps='"exec#quick"'),
    )
    k = killed("apply")
    k.kill_when(marker)
    ops = journal_ops(sysenv)
    started = [r["pgid"] for r in ops if r["op"] == "started"]
    ended = [r["pgid"] for r in ops if r["op"] == "ended"]
    assert len(started) == 2 and ended == started[:1], ops  # the quick one ended
    assert k.child == started[1]  # the slow command leads its own group

    p = sysenv.spawn("status")
    assert p.returncode == 0, out(p)
    assert RECOVERED in out(p)
    assert f"after stopping 1 command it left running (process group {k.child})" in out(p)
    assert "the machine is as it was before it" in out(p)
    assert not alive(k.child)
    release.touch()  # a writer still alive would write now
    time.sleep(0.5)
    assert not (sysenv.home / "late.txt").exists()
    assert tree(sysenv.home) == before


def test_what_an_ended_command_left_running_is_stopped_too(sysenv, killed, release) -> None:  # type: ignore[no-untyped-def]
    """The command itself has ended, but its background child runs on in its
    group: the group is not marked ended, and recovery stops the child."""
    apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    marker = sysenv.work / "slow.pid"
    sysenv.write(
        "sys.lua",
        HEADER
        + exec_item("spawner", late_writer(sysenv.home, release))
        + exec_item("slow", running_until(marker), deps='"exec#spawner"'),
    )
    k = killed("apply")
    k.kill_when(marker)
    ops = journal_ops(sysenv)
    started = [r["pgid"] for r in ops if r["op"] == "started"]
    assert len(started) == 2 and not [r for r in ops if r["op"] == "ended"], ops
    spawner = started[0]
    assert not alive(spawner)  # its leader ended; its background child has not
    left = [
        int(d)
        for d in os.listdir("/proc")
        if d.isdigit() and _pgid(int(d)) == spawner and alive(int(d))
    ]
    assert left, "the background writer should still be running"

    p = sysenv.spawn("status")
    assert p.returncode == 0, out(p)
    assert RECOVERED in out(p)
    groups = ", ".join(str(g) for g in sorted(started))
    assert f"after stopping 2 commands it left running (process groups {groups})" in out(p)
    assert not any(alive(pid) for pid in left)
    release.touch()
    time.sleep(0.5)
    assert not (sysenv.home / "late.txt").exists()
    assert tree(sysenv.home) == before


def _pgid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[2])
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


def test_a_record_naming_another_process_is_not_killed(sysenv) -> None:  # type: ignore[no-untyped-def]
    """A pid reused by another program (its start time differs), and one from
    another boot, are left alone; the process the record names is stopped."""
    apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/keep.txt", content = "keep v2\\n" }\n')
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env=dict(sysenv.env, SYSLUA_CRASH_AT="journal-batch"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == -signal.SIGKILL, out(p)

    def victim() -> subprocess.Popen[bytes]:
        return subprocess.Popen(["sleep", "30"], start_new_session=True)

    reused, rebooted, same = victim(), victim(), victim()
    try:
        boot = boot_id()
        starts: dict[int, int] = {}
        for v in (reused, rebooted, same):
            found = start_time(v.pid)
            assert found is not None
            starts[v.pid] = found
        assert boot is not None
        records = [
            {"op": "started", "pgid": reused.pid, "start": starts[reused.pid] - 1, "boot": boot},
            {"op": "started", "pgid": rebooted.pid, "start": starts[rebooted.pid], "boot": "x"},
            {"op": "started", "pgid": same.pid, "start": starts[same.pid], "boot": boot},
        ]
        # Sealed as the apply seals its own lines (with the journal's key):
        # records it wrote, naming processes that are not, or no longer, its.
        journal_dir = sysenv.root / "state" / "journal"
        key = journal._load_key(journal_dir)
        assert key is not None
        with open(journal_dir / "journal.jsonl", "a") as f:
            f.writelines(journal._seal(r, key) + "\n" for r in records)

        p = sysenv.spawn("status")
        assert p.returncode == 0, out(p)
        assert RECOVERED in out(p)
        assert f"after stopping 1 command it left running (process group {same.pid})" in out(p)
        assert same.wait(timeout=5) == -signal.SIGTERM
        assert reused.poll() is None and rebooted.poll() is None
        assert tree(sysenv.home) == before
    finally:
        for v in (reused, rebooted, same):
            v.kill()
            v.wait()
