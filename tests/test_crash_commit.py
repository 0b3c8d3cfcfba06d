"""SIGKILL around the group commit (docs/atomic-apply.md, "Group commit").

Files are written without an fsync each; the apply syncs every filesystem it
wrote to just before the journal's commit record. A real SIGKILL at the two
points around that record (SYSLUA_CRASH_AT, a fault-injection switch read by
`state.journal.crash_point`) must give: before the commit record, a rollback
to the exact previous bytes; after it, the new snapshot, made current by
the next command.
"""

from __future__ import annotations

import signal
import subprocess
import sys

from conftest import HEADER, apply_ok, current, history, out, put, tree
from test_crash import RECOVERED

V1 = "".join(f'file {{ path = "~/d/f{i:03}.txt", content = "v1 {i}\\n" }}\n' for i in range(40))
V2 = "".join(f'file {{ path = "~/d/f{i:03}.txt", content = "v2 {i}\\n" }}\n' for i in range(40)) + (
    'file { path = "~/d/new.txt", content = "new\\n", mode = "0600" }\n'
)
DIR = 'file { path = "~/d", ensure = "directory", mode = "0755" }\n'


def killed_at(sysenv, point: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    env = dict(sysenv.env, SYSLUA_CRASH_AT=point)
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == -signal.SIGKILL, out(p)
    return p


def test_killed_between_the_last_write_and_the_commit_rolls_back(sysenv) -> None:
    put(sysenv.home / "d" / "hand.txt", "made by hand\n", 0o640)
    s1 = apply_ok(sysenv, DIR + V1)
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua", HEADER + DIR + V2 + 'file { path = "~/d/hand.txt", content = "managed\\n" }\n'
    )
    killed_at(sysenv, "before-commit")
    # every change had been written when it died
    assert (sysenv.home / "d" / "f000.txt").read_text() == "v2 0\n"
    assert (sysenv.home / "d" / "hand.txt").read_text() == "managed\n"

    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert RECOVERED in out(p)
    assert tree(sysenv.home) == before
    assert current(sysenv) == s1 and len(history(sysenv)) == 1


def test_killed_after_the_commit_record_keeps_the_new_snapshot(sysenv) -> None:
    s1 = apply_ok(sysenv, DIR + V1)
    sysenv.write("sys.lua", HEADER + DIR + V2)
    killed_at(sysenv, "after-commit")
    after = tree(sysenv.home)
    assert after["d/new.txt"] == ("file", 0o600, b"new\n")

    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert "finished recording snapshot" in out(p), out(p)
    assert tree(sysenv.home) == after
    snaps = history(sysenv)
    assert len(snaps) == 2 and current(sysenv) != s1
    assert "No drift" in p.stdout, out(p)


def test_killed_before_the_commit_of_the_very_first_apply(sysenv) -> None:
    """No snapshot existed: the one the killed run saved is not current, and goes."""
    put(sysenv.home / "d" / "hand.txt", "made by hand\n", 0o640)
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua", HEADER + DIR + V1 + 'file { path = "~/d/hand.txt", content = "managed\\n" }\n'
    )
    killed_at(sysenv, "before-commit")
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert RECOVERED in out(p)
    assert tree(sysenv.home) == before
    assert history(sysenv) == []


def test_killed_once_the_first_records_are_written_puts_every_file_back(sysenv) -> None:
    """The records name the previous contents by hash; a small content waits
    in the store's memory until a sync. The store syncs before the records
    reach the journal file, so a kill right after that finds every content
    the records name, and the undo puts back the exact previous bytes."""
    for i in range(0, 40, 2):
        put(sysenv.home / "d" / f"f{i:03}.txt", f"by hand {i}\n", 0o640)
    before = tree(sysenv.home)
    sysenv.write("sys.lua", HEADER + DIR + V1)
    killed_at(sysenv, "journal-batch")
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert RECOVERED in out(p), out(p)
    assert tree(sysenv.home) == before
    assert history(sysenv) == []
