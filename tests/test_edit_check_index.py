"""The check for a hand edit reads the stat index (issue 27).

Whether a managed file was edited since the last apply is asked of every
file an apply or a rollback changes: the file's digest against the one the
last apply recorded. Where the stat index of the current snapshot recorded
the file's `lstat` as it is now, that digest is the index's, and the file
is not read; a same-size edit whose mtime was put back still moved the
ctime, and is seen.
"""

from __future__ import annotations

import pytest
from conftest import out, plan_line
from test_stat_index import EDITED, _index, _same_size_edit, _setup

from syslua.resources import file as file_type
from syslua.resources import file_edits, file_posix
from syslua.state import stat_index
from syslua.state.stat_index import fields


@pytest.fixture
def trusting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stat_index, "MARGIN", 0)


def _no_target_reads(monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    """A read of `target`'s content fails the test (other files may be read)."""
    for module, name in ((file_edits, "sha256_file"), (file_type, "sha256_file")):
        real = getattr(module, name)

        def guarded(path, *args, _real=real):  # type: ignore[no-untyped-def]
            assert str(path) != target, f"read {path}"
            return _real(path, *args)

        monkeypatch.setattr(module, name, guarded)
    monkeypatch.setattr(file_posix, "same_content", lambda *a, **k: pytest.fail("compared"))


def test_a_trusted_file_is_checked_for_edits_without_reading_it(
    sysenv, trusting, monkeypatch
) -> None:
    _setup(sysenv)
    sysenv.run("apply")  # no change: the index records both files
    target = str(sysenv.home / "a.conf")
    sysenv.write("src/a.conf", "aaaa, and more\n")  # another size: no read to see it differs
    _no_target_reads(monkeypatch, target)
    p = sysenv.run("plan")
    line = plan_line(p, "~/a.conf")
    assert "will update (content changed)" in line and EDITED not in line, out(p)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "a.conf").read_text() == "aaaa, and more\n"


def test_a_same_size_edit_of_a_changing_file_is_still_an_edit(sysenv, trusting) -> None:
    _setup(sysenv)
    sysenv.run("apply")
    target = sysenv.home / "a.conf"
    _same_size_edit(target, "AAAA\n", fields(_index(sysenv).entries[str(target)])[1])
    sysenv.write("src/a.conf", "aaaa, and more\n")
    p = sysenv.run("plan")
    assert EDITED in plan_line(p, "~/a.conf"), out(p)
    a = sysenv.run("apply")
    assert a.returncode == 2, out(a)
    assert target.read_text() == "AAAA\n"
