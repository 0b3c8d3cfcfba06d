"""An apply walks each directory once (`safe_fs.cached`), and still never
writes through a link (issue 27, point 3).

While an apply runs, the directory a file was written in is kept open for the
next file in it; before it is used again, one `lstat` must find the same
directory there. A directory swapped for a link, or replaced by another one,
between two items of one apply is walked again: the link is refused, the new
directory is written in.
"""

from __future__ import annotations

import os

import pytest
from conftest import HEADER, out, put, tree

from syslua import safe_fs


def _two_files_around(home: os.PathLike[str], command: str, undo: str) -> str:
    """a.txt, then an exec running `command`, then b.txt, all in ~/sub."""
    return (
        HEADER
        + 'file { path = "~/sub/a.txt", content = "a\\n" }\n'
        + f'exec {{ name = "swap", provider = "shell", command = "{command}", undo = "{undo}",'
        + ' depends_on = { "file#~/sub/a.txt" } }\n'
        + 'file { path = "~/sub/b.txt", content = "b\\n", depends_on = { "exec#swap" } }\n'
    )


def test_a_directory_swapped_for_a_link_between_two_items_is_never_written_through(
    sysenv, tmp_path
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    put(sysenv.home / "sub" / "old.txt", "old\n")
    before = tree(sysenv.home)
    home = sysenv.home
    swap = f"mv {home}/sub {home}/sub.real && ln -s {elsewhere} {home}/sub"
    unswap = f"rm {home}/sub && mv {home}/sub.real {home}/sub"
    sysenv.write("sys.lua", _two_files_around(home, swap, unswap))
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "parent directory ~/sub changed into a symlink since planning" in out(p)
    assert "Apply failed. System unchanged." in out(p)
    assert list(elsewhere.iterdir()) == []  # nothing was written through the link
    assert tree(sysenv.home) == before


def test_a_directory_replaced_between_two_items_is_written_in_as_it_is_now(sysenv):
    put(sysenv.home / "sub" / "old.txt", "old\n")
    home = sysenv.home
    swap = f"mv {home}/sub {home}/sub.old && mkdir {home}/sub"
    unswap = f"rm -rf {home}/sub && mv {home}/sub.old {home}/sub"
    sysenv.write("sys.lua", _two_files_around(home, swap, unswap))
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    # The second file is in the directory that is at ~/sub now, not in the
    # one the first file was written in (kept open until then).
    assert (home / "sub" / "b.txt").read_text() == "b\n"
    assert sorted(os.listdir(home / "sub.old")) == ["a.txt", "old.txt"]


def test_a_kept_directory_is_used_again_only_while_it_is_still_there(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "d").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with safe_fs.cached():
        with safe_fs.at(str(home / "d" / "x")) as (first, _):
            pass
        with safe_fs.at(str(home / "d" / "y")) as (again, _):
            pass
        assert again == first  # walked once
        os.rename(home / "d", home / "d.real")
        os.symlink(elsewhere, home / "d")
        with (
            pytest.raises(safe_fs.UnsafePath, match="changed into a symlink since planning"),
            safe_fs.at(str(home / "d" / "z"), {}),
        ):
            pass
    assert list(elsewhere.iterdir()) == []


def test_a_directory_another_user_may_change_is_walked_each_time(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "shared").mkdir(parents=True)
    os.chmod(home / "shared", 0o777)  # anyone may rename what it holds
    (home / "shared" / "d").mkdir()
    monkeypatch.setenv("HOME", str(home))
    with safe_fs.cached():
        with safe_fs.at(str(home / "shared" / "d" / "x")):
            pass
        with safe_fs.at(str(home / "shared" / "x")):
            pass
        assert safe_fs._cache is not None
        kept = set(safe_fs._cache.kept)
    assert kept == {str(home / "shared")}  # not ~/shared/d: its holder is not private


def test_the_originals_of_many_files_in_one_directory_are_each_kept(sysenv):
    # The journal's preparation reads them through one walk of ~/many.
    for i in range(5):
        put(sysenv.home / "many" / f"f{i}", f"original {i}\n")
    before = tree(sysenv.home)
    body = "".join(f'file {{ path = "~/many/f{i}", content = "new {i}\\n" }}\n' for i in range(5))
    sysenv.write("sys.lua", HEADER + body)
    assert sysenv.run("apply").returncode == 0
    assert (sysenv.home / "many" / "f3").read_text() == "new 3\n"
    sysenv.write("sys.lua", HEADER)
    p = sysenv.run("apply", "--allow-empty")
    assert p.returncode == 0, out(p)
    assert tree(sysenv.home) == before  # every original put back


def _same_dir(fd: int, path: os.PathLike[str]) -> bool:
    here, there = os.fstat(fd), os.stat(path)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def test_a_directory_dropped_while_a_change_holds_it_stays_open_under_that_change(
    tmp_path, monkeypatch
):
    # The journal may read another path while a change holds its directory:
    # neither the oldest directory dropped past the limit, nor one found
    # replaced, is closed under the change that uses it.
    home = tmp_path / "home"
    for d in ("a", "b", "c"):
        (home / d).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(safe_fs.DirCache, "LIMIT", 1)
    with safe_fs.cached():
        with safe_fs.at(str(home / "a" / "x")) as (outer, _):
            with safe_fs.at(str(home / "b" / "y")), safe_fs.at(str(home / "c" / "z")):
                pass  # "a", then "b", dropped past the limit
            assert _same_dir(outer, home / "a")
            os.rename(home / "a", home / "a.old")
            os.mkdir(home / "a")
            with safe_fs.at(str(home / "a" / "y")) as (inner, _):
                assert _same_dir(inner, home / "a")
            assert _same_dir(outer, home / "a.old")  # still the one it opened
            os.mkdir(home / "a" / "sub")  # new descriptors do not reuse its number
            with safe_fs.at(str(home / "a" / "sub" / "w")) as (other, _):
                assert other != outer
        try:
            still = _same_dir(outer, home / "a.old")
        except OSError:
            still = False
        assert not still  # closed once given back
