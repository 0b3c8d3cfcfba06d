"""The stat index (issue 27, point 1; `syslua/state/stat_index.py`).

A no-change run decides each file from `lstat` alone where the index of the
current snapshot recorded the same `lstat`; an entry too close to the start
of the run that recorded it (racily clean) is hashed instead. The index is
deleted before a journal begins and ignored when it names another snapshot,
when a journal is present, or when it is damaged.

Files written by a test are always younger than `MARGIN` (2 s): tests that
need trusted entries set it to 0 in this process (`trusting`), as if the run
came well after the files were written.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys

import pytest
from conftest import HEADER, apply_ok, current, out, plan_line, tree

from syslua.resources import file as file_type
from syslua.resources import file_posix
from syslua.state import stat_index
from syslua.state.stat_index import StatIndex, fields

EDITED = "edited since the last apply"
CONFIG = """
file { path = "~/a.conf", source = "src/a.conf" }
file { path = "~/b.conf", content = "bbbb\\n" }
"""


def _setup(sysenv) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("src/a.conf", "aaaa\n")
    apply_ok(sysenv, CONFIG)


def _index(sysenv) -> StatIndex:  # type: ignore[no-untyped-def]
    return StatIndex.load(sysenv.root / "state", current(sysenv))


@pytest.fixture
def trusting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stat_index, "MARGIN", 0)


def _no_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any read of a file's content by the file type fails the test."""

    def forbidden(*args: object, **kwargs: object) -> object:
        raise AssertionError(f"read {args[0]}")

    monkeypatch.setattr(file_type, "sha256_file", forbidden)
    monkeypatch.setattr(file_posix, "same_content", forbidden)
    monkeypatch.setattr(file_posix, "read_small", forbidden)


def _same_size_edit(path: os.PathLike[str], text: str, entry_mtime: int) -> None:
    """Rewrite `path` in place with `text` (the same size) and put its mtime
    back to `entry_mtime`, as a same-second edit leaves it: only the ctime moved."""
    before = os.lstat(path)
    with open(path, "r+") as f:
        f.write(text)
    os.utime(path, ns=(before.st_atime_ns, entry_mtime))
    after = os.lstat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        entry_mtime,
        before.st_ino,
    )


def test_a_no_change_run_records_then_reads_nothing(sysenv, trusting, monkeypatch) -> None:
    _setup(sysenv)
    p = sysenv.run("apply")  # no change: hashes both files, records them
    assert p.returncode == 0 and "No changes" in p.stdout, out(p)
    index = _index(sysenv)
    target, source = str(sysenv.home / "a.conf"), str(sysenv.work / "src" / "a.conf")
    assert {target, source, str(sysenv.home / "b.conf")} <= index.entries.keys()
    assert fields(index.entries[target])[8] == fields(index.entries[source])[8]  # same content
    assert stat.S_IMODE(os.stat(sysenv.root / "state" / stat_index.NAME).st_mode) == 0o600

    written = os.stat(sysenv.root / "state" / stat_index.NAME).st_mtime_ns
    _no_reads(monkeypatch)
    for command in ("plan", "apply"):
        p = sysenv.run(command)
        assert p.returncode == 0 and "No changes" in p.stdout, out(p)
    # everything was trusted: nothing to write again
    assert os.stat(sysenv.root / "state" / stat_index.NAME).st_mtime_ns == written


def test_a_same_second_same_size_edit_of_a_target_is_seen(sysenv, trusting) -> None:
    _setup(sysenv)
    sysenv.run("apply")
    target = sysenv.home / "a.conf"
    entry = fields(_index(sysenv).entries[str(target)])
    _same_size_edit(target, "AAAA\n", entry[1])  # the index's size and mtime

    p = sysenv.run("plan")
    assert EDITED in plan_line(p, "~/a.conf"), out(p)
    p = sysenv.run("apply", "--force")
    assert p.returncode == 0, out(p)
    assert target.read_text() == "aaaa\n"


def test_a_same_second_same_size_edit_of_a_source_is_applied(sysenv, trusting) -> None:
    _setup(sysenv)
    sysenv.run("apply")
    source = sysenv.work / "src" / "a.conf"
    _same_size_edit(source, "zzzz\n", fields(_index(sysenv).entries[str(source)])[1])

    p = sysenv.run("plan")
    assert "will update (content changed)" in plan_line(p, "~/a.conf"), out(p)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "a.conf").read_text() == "zzzz\n"


def test_an_edit_within_the_margin_is_seen_with_the_real_margin(sysenv) -> None:
    # The racily-clean rule alone: the files are younger than the margin, so
    # the no-change run records none of them, and the edit is found by reading.
    _setup(sysenv)
    p = sysenv.run("apply")
    assert "No changes" in p.stdout, out(p)
    assert not _index(sysenv).entries
    target = sysenv.home / "b.conf"
    _same_size_edit(target, "BBBB\n", os.lstat(target).st_mtime_ns)
    p = sysenv.run("plan")
    assert EDITED in plan_line(p, "~/b.conf"), out(p)


def test_a_racy_entry_is_not_trusted(sysenv, trusting, monkeypatch) -> None:
    _setup(sysenv)
    sysenv.run("apply")
    target = sysenv.home / "b.conf"
    # the index says b.conf held "bbbb"; but it was recorded by a run that
    # started before the file's last change (as a same-tick write leaves it)
    sid = current(sysenv)
    recorded = fields(_index(sysenv).entries[str(target)])
    _same_size_edit(target, "BBBB\n", recorded[1])
    now = stat_index.key(os.lstat(target))
    forged = StatIndex(sid, 0, {})
    forged.fresh[str(target)] = now + recorded[8]  # the old digest, with the lstat of now
    forged.started = fields(now + recorded[8])[2]  # the ctime is not older than the run: racy
    forged.save(sysenv.root / "state", sid or "")
    monkeypatch.setattr(stat_index, "MARGIN", 2_000_000_000)
    index = _index(sysenv)
    assert str(target) in index.entries and index.digest(str(target), now) is None

    p = sysenv.run("plan")
    assert EDITED in plan_line(p, "~/b.conf"), out(p)


def test_an_index_of_another_snapshot_is_ignored(sysenv, trusting) -> None:
    _setup(sysenv)
    sysenv.run("apply")
    state = sysenv.root / "state"
    old = (state / stat_index.NAME).read_bytes()
    apply_ok(sysenv, CONFIG + 'file { path = "~/c.conf", content = "c\\n" }\n')
    (state / stat_index.NAME).write_bytes(old)
    assert not _index(sysenv).entries
    # and a damaged one
    damaged = bytearray(old)
    damaged[-3] ^= 0xFF
    (state / stat_index.NAME).write_bytes(bytes(damaged))
    assert not StatIndex.load(state, StatIndex.load(state, None).snapshot).entries
    p = sysenv.run("plan")
    assert p.returncode == 0 and "No changes" in p.stdout, out(p)


def test_an_apply_writes_the_index_of_its_snapshot(sysenv, trusting) -> None:
    _setup(sysenv)
    sysenv.run("apply")
    sid = apply_ok(sysenv, CONFIG + 'file { path = "~/c.conf", content = "c\\n" }\n')
    index = _index(sysenv)
    assert index.snapshot == sid
    # what the plan trusted is kept; what the apply wrote is hashed next time
    assert str(sysenv.home / "a.conf") in index.entries
    assert str(sysenv.home / "c.conf") not in index.entries


def test_an_index_left_beside_a_killed_apply_is_not_used(sysenv, trusting) -> None:
    _setup(sysenv)
    sysenv.run("apply")
    state = sysenv.root / "state"
    kept = (state / stat_index.NAME).read_bytes()
    sid, before = current(sysenv), tree(sysenv.home)
    sysenv.write("sys.lua", HEADER + CONFIG.replace("bbbb", "BBBB"))
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env=dict(sysenv.env, SYSLUA_CRASH_AT="before-commit"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == -signal.SIGKILL, out(p)
    # the journal began without it: the killed run left none
    assert not (state / stat_index.NAME).exists()
    # one put back beside the journal (as a run that died while writing it
    # could leave it) is not trusted while the journal is there
    (state / stat_index.NAME).write_bytes(kept)
    assert (state / "journal" / "journal.jsonl").exists()
    assert not StatIndex.load(state, sid).entries
    (state / stat_index.NAME).unlink()

    p = sysenv.run("status")  # recovery: back to the previous bytes
    assert p.returncode == 0, out(p)
    assert tree(sysenv.home) == before
    assert not (state / stat_index.NAME).exists()
    p = sysenv.run("plan")
    assert "will update (content changed)" in plan_line(p, "~/b.conf"), out(p)


def test_status_reads_nothing_trusted_and_sees_a_same_size_edit(
    sysenv, trusting, monkeypatch
) -> None:
    _setup(sysenv)
    sysenv.run("apply")
    target = sysenv.home / "b.conf"
    entry = fields(_index(sysenv).entries[str(target)])
    with monkeypatch.context() as m:
        _no_reads(m)
        p = sysenv.run("status", "--exit-code")
        assert p.returncode == 0, out(p)
    _same_size_edit(target, "BBBB\n", entry[1])
    p = sysenv.run("status", "-v", "--exit-code")
    assert p.returncode == 4 and "in the home: content edited" in p.stdout, out(p)


def test_a_secret_file_is_never_in_the_index(sysenv, trusting) -> None:
    sysenv.write("src/key", "hunter2\n")
    sysenv.write("src/a.conf", "aaaa\n")
    apply_ok(
        sysenv,
        CONFIG + 'file { path = "~/key", source = "src/key", sensitive = true, mode = "0600" }\n',
    )
    sysenv.run("apply")
    index = _index(sysenv)
    assert str(sysenv.home / "a.conf") in index.entries
    assert str(sysenv.home / "key") not in index.entries
    assert str(sysenv.work / "src" / "key") not in index.entries
