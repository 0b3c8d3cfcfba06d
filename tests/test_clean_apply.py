"""A clean apply does each piece of work once (issue 27, point 3).

Many files under the same missing directories: planning and the journal's
preparation look at each directory once, and the answers are the same as
one look per file (a directory in the way is reported for every file under
it, the parents made are undone with the rest). A file is written without
looking for a directory at its path first: the rename refuses to replace
one, with the same message.
"""

from __future__ import annotations

import os

import pytest
from conftest import HEADER, out, put, tree

from syslua.resources import file_posix as posix
from syslua.resources.base import ResourceError


def _files(n: int, under: str) -> str:
    return "".join(f'file {{ path = "~/{under}/f{i}", content = "{i}\\n" }}\n' for i in range(n))


def test_a_file_in_the_way_of_a_shared_parent_is_reported_for_every_file_under_it(sysenv):
    put(sysenv.home / "no", "a file\n")
    sysenv.write("sys.lua", HEADER + _files(3, "no/such") + _files(2, "ok/new"))
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    for i in range(3):
        assert f"~/no is not a directory, so ~/no/such/f{i} cannot be created" in out(p)
    assert tree(sysenv.home) == before


def test_parents_shared_by_many_files_are_made_once_and_undone_with_them(sysenv):
    before = tree(sysenv.home)
    body = _files(5, "a/b/c") + _files(5, "a/b/d")
    body += 'exec { name = "last", command = "false", depends_on = { "file#~/a/b/d/f4" } }\n'
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert tree(sysenv.home) == before  # the files and every parent made for them are gone
    sysenv.write("sys.lua", HEADER + body.replace('"false"', '"true"'))
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert sorted(os.listdir(sysenv.home / "a" / "b" / "c")) == [f"f{i}" for i in range(5)]


@pytest.mark.parametrize("entries", [0, 1])
def test_a_directory_at_the_path_is_refused_by_the_rename_and_kept(tmp_path, monkeypatch, entries):
    monkeypatch.setenv("HOME", str(tmp_path))
    target = tmp_path / "x.conf"
    target.mkdir()
    if entries:
        (target / "inside").write_text("kept\n")
    seen: list[str] = []
    with pytest.raises(ResourceError, match="a directory exists where a file is wanted"):
        posix.store(
            str(target),
            content=b"new\n",
            source=None,
            uid=os.getuid(),
            gid=os.getgid(),
            mode=0o644,
            before_change=seen.append,
        )
    assert target.is_dir()
    assert sorted(os.listdir(tmp_path)) == ["x.conf"]  # no temp file left beside it
    assert sorted(os.listdir(target)) == (["inside"] if entries else [])


@pytest.mark.parametrize(
    "path", ["/a/b", "/a", "/", "//a", "a/b", "a", "a//b", "//", "/a/b/", "", "///a//b", "/a//"]
)
def test_parent_of_is_dirname(path):
    assert posix.parent_of(path) == os.path.dirname(path)


def test_temp_names_are_fresh_and_carry_the_pid_of_the_process_that_makes_them():
    from syslua import fsutil

    names = [fsutil.temp_name("f.conf") for _ in range(1000)]
    assert len(set(names)) == 1000
    assert {fsutil._temp_owner(n, {"f.conf"}) for n in names} == {os.getpid()}
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.write(write, fsutil.temp_name("f.conf").encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    theirs = os.read(read, 200).decode()
    os.close(read)
    assert fsutil._temp_owner(theirs, {"f.conf"}) == child
