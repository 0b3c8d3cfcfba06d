"""Recovery trusts only the records the dead apply wrote itself (issue 22, point 8).

Each journal has a random key of its own, in an owner-only file beside it,
and every record line carries an HMAC of the record under that key. A line
added or changed by hand (a record pointing outside the apply's paths, a
real record edited) does not carry a valid one: recovery ignores it, says
so, and undoes every real record as before. A journal written before
records were sealed (no key, no MACs) is recovered as it always was, and
the warning says its records could not be checked.

Each test kills a real `sys apply` (SIGKILL at a `crash_point`) and then
recovers with the real CLI.
"""

from __future__ import annotations

import json
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HEADER, apply_ok, current, history, out, put, tree
from test_crash import RECOVERED

V1 = "".join(f'file {{ path = "~/d/f{i}.txt", content = "v1 {i}\\n" }}\n' for i in range(5))
V2 = "".join(f'file {{ path = "~/d/f{i}.txt", content = "v2 {i}\\n" }}\n' for i in range(5)) + (
    'file { path = "~/d/new.txt", content = "new\\n" }\n'
    'file { path = "~/hand.txt", content = "managed\\n" }\n'
)
POINTS = ["journal-batch", "before-commit"]


def journal(sysenv) -> Path:  # type: ignore[no-untyped-def]
    return sysenv.root / "state" / "journal" / "journal.jsonl"


def key(sysenv) -> Path:  # type: ignore[no-untyped-def]
    return sysenv.root / "state" / "journal" / "journal.key"


def failed_journals(sysenv) -> list[Path]:  # type: ignore[no-untyped-def]
    d = sysenv.root / "state" / "failed-journals"
    return sorted(d.iterdir()) if d.is_dir() else []


def killed_at(sysenv, point: str) -> None:  # type: ignore[no-untyped-def]
    """A real `sys apply` of V2 over V1, SIGKILLed at `point`."""
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env=dict(sysenv.env, SYSLUA_CRASH_AT=point),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == -signal.SIGKILL, out(p)


@pytest.fixture
def crashed(sysenv, tmp_path: Path):  # type: ignore[no-untyped-def]
    """V1 applied, a hand-made file, then V2's apply killed: what the home
    and the state were before it, and a file outside the home."""

    def crash(point: str) -> tuple[dict, str | None, Path]:
        put(sysenv.home / "hand.txt", "made by hand\n", 0o640)
        s1 = apply_ok(sysenv, V1)
        before = tree(sysenv.home)
        victim = put(tmp_path / "outside" / "victim.txt", "not syslua's\n", 0o600)
        sysenv.write("sys.lua", HEADER + V2)
        killed_at(sysenv, point)
        assert journal(sysenv).exists()
        assert (sysenv.home / "d" / "f0.txt").read_text() == "v2 0\n" or point == "journal-batch"
        return before, s1, victim

    return crash


def append(sysenv, *lines: str) -> None:  # type: ignore[no-untyped-def]
    with journal(sysenv).open("a") as f:
        f.writelines(line + "\n" for line in lines)


def forged_path(victim: Path, **extra: str) -> str:
    """A path record saying `victim` was absent: undoing it would delete it."""
    return json.dumps(
        {"op": "path", "item": "file#x", "path": str(victim), "prev": {"kind": "absent"}, **extra}
    )


def recovered_everything(sysenv, before: dict, s1: str | None) -> None:  # type: ignore[no-untyped-def]
    assert tree(sysenv.home) == before
    assert current(sysenv) == s1 and len(history(sysenv)) == 1
    assert not journal(sysenv).exists() and not key(sysenv).exists()


@pytest.mark.parametrize("point", POINTS)
def test_a_hand_written_record_outside_the_home_is_ignored(sysenv, crashed, point) -> None:
    before, s1, victim = crashed(point)
    append(sysenv, forged_path(victim))

    p = sysenv.run("status")
    text = out(p)
    assert p.returncode == 0, text
    assert RECOVERED in text
    assert "ignored 1 journal record that fails its checksum" in text, text
    assert "the machine is as it was before it" not in text  # it cannot know that
    assert victim.read_text() == "not syslua's\n"  # left intact
    recovered_everything(sysenv, before, s1)
    # the journal is kept for the user to look at, the forged line in it
    [kept] = failed_journals(sysenv)
    assert str(victim) in kept.read_text()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert f"the journal is kept as {kept}" in text


@pytest.mark.parametrize("point", POINTS)
def test_a_record_with_a_bad_checksum_is_ignored(sysenv, crashed, point) -> None:
    """A real record edited to point elsewhere (its MAC kept), a made-up
    MAC, a forged exec whose undo would remove the file, a forged commit."""
    before, s1, victim = crashed(point)
    lines = journal(sysenv).read_text().splitlines()
    real = next(line for line in lines if '"op":"path"' in line and "f0.txt" in line)
    edited = real.replace(str(sysenv.home / "d" / "f0.txt"), str(victim))
    assert re.search(r',"mac":"[0-9a-f]{64}"\}$', edited)
    made_up = forged_path(victim)[:-1] + ',"mac":"' + "ab" * 32 + '"}'
    exec_undo = json.dumps(
        {"op": "exec", "item": "exec#x", "type": "exec", "undo": f"rm -f {victim}", "mac": "00"}
    )
    commit = json.dumps({"op": "commit", "snapshot": "forged", "removed": []})
    append(sysenv, edited, made_up, exec_undo, commit)

    p = sysenv.run("status")
    text = out(p)
    assert p.returncode == 0, text
    assert "ignored 4 journal records that fail their checksum" in text, text
    assert victim.read_text() == "not syslua's\n"
    recovered_everything(sysenv, before, s1)


@pytest.mark.parametrize("point", POINTS)
def test_a_real_crash_is_recovered_as_before(sysenv, crashed, point) -> None:
    before, s1, victim = crashed(point)
    lines = journal(sysenv).read_text().splitlines()
    assert all(re.search(r',"mac":"[0-9a-f]{64}"\}$', line) for line in lines), lines
    assert stat.S_IMODE(key(sysenv).stat().st_mode) == 0o600

    p = sysenv.run("status")
    text = out(p)
    assert p.returncode == 0, text
    assert RECOVERED + " (pid" in text and "the machine is as it was before it" in text, text
    assert "checksum" not in text
    recovered_everything(sysenv, before, s1)
    assert failed_journals(sysenv) == []
    assert victim.read_text() == "not syslua's\n"


def test_a_journal_from_before_checksums_is_recovered_as_today(sysenv, crashed) -> None:
    """What an older syslua left: no key, no MACs. Recovered as it always
    was, and the warning says its records could not be checked."""
    before, s1, _ = crashed("before-commit")
    lines = journal(sysenv).read_text().splitlines()
    journal(sysenv).write_text(
        "".join(re.sub(r',"mac":"[0-9a-f]{64}"\}$', "}", line) + "\n" for line in lines)
    )
    key(sysenv).unlink()

    p = sysenv.run("status")
    text = out(p)
    assert p.returncode == 0, text
    assert RECOVERED in text and "the machine is as it was before it" in text, text
    assert "written before journal records had checksums" in text, text
    recovered_everything(sysenv, before, s1)


def test_a_sealed_journal_whose_key_is_gone_trusts_nothing(sysenv, crashed, tmp_path) -> None:
    """Deleting the key does not turn a sealed journal into an old one: no
    record can be checked, none is undone, and the journal is kept."""
    _, _, victim = crashed("before-commit")
    append(sysenv, forged_path(victim))
    key(sysenv).unlink()

    p = sysenv.run("status")
    text = out(p)
    assert p.returncode == 0, text
    assert "journal records that fail their checksum" in text, text
    assert victim.read_text() == "not syslua's\n"
    assert (sysenv.home / "d" / "new.txt").exists()  # nothing was undone
    assert len(failed_journals(sysenv)) == 1
    assert not journal(sysenv).exists()
