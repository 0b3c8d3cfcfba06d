"""Dangling and looping links are visible (issue 21, point 4).

A `link = true` item whose source is gone (deleted, renamed, `git rm`) cannot
be applied: the plan marks it `!` and the apply refuses it, as a copy with a
missing source is. `sys status` and `sys doctor` list managed links that lead
nowhere, and a rollback that puts back a link to a source that is gone says so.
"""

from __future__ import annotations

import json
import os

from conftest import HEADER, out, tree


def _config(sysenv, body: str) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)


LINK = 'file { path = "~/.vimrc", source = "vimrc", link = true }\n'


def test_a_link_to_a_missing_source_is_marked_and_refused(sysenv):
    _config(sysenv, LINK + 'file { path = "~/.other", content = "x\\n" }\n')
    before = tree(sysenv.home)
    p = sysenv.run("plan")
    source = sysenv.work / "vimrc"
    assert f"! file ~/.vimrc: its source {source} does not exist" in p.stdout, out(p)
    entry = next(
        e
        for e in json.loads(sysenv.run("plan", "--json").stdout)["plan"]["items"]
        if e["label"] == "~/.vimrc"
    )
    assert entry["action"] == "fail"
    a = sysenv.run("apply")
    assert a.returncode == 1, out(a)
    assert "its source" in out(a) and "does not exist" in out(a)
    assert tree(sysenv.home) == before


def test_a_managed_link_whose_source_went_is_listed_by_status_doctor_and_plan(sysenv):
    (sysenv.work / "vimrc").write_text("set nu\n")
    _config(sysenv, LINK)
    assert sysenv.run("apply").returncode == 0
    (sysenv.work / "vimrc").unlink()  # git rm
    s = sysenv.run("status", "-v")
    assert "!! file ~/.vimrc" in s.stdout.splitlines(), out(s)
    assert "    in the home: a dangling link" in s.stdout, out(s)
    d = sysenv.run("doctor")
    assert d.returncode == 1, out(d)
    assert (
        "managed links: 1 of 1 managed links are not as applied: ~/.vimrc is a dangling link"
        in d.stdout
    )
    p = sysenv.run("plan")
    assert "! file ~/.vimrc: its source" in p.stdout, out(p)
    before = tree(sysenv.home)
    assert sysenv.run("apply").returncode == 1
    assert tree(sysenv.home) == before


def test_doctor_passes_when_every_managed_link_resolves(sysenv):
    (sysenv.work / "vimrc").write_text("set nu\n")
    _config(sysenv, LINK)
    assert sysenv.run("apply").returncode == 0
    d = sysenv.run("doctor")
    assert "✓ managed links: 1 link, none dangling" in d.stdout, out(d)


def test_a_managed_link_that_became_a_loop_is_marked(sysenv):
    os.symlink("b", sysenv.work / "a")
    (sysenv.work / "b").write_text("b\n")
    _config(sysenv, 'file { path = "~/.a", source = "a", link = true }\n')
    assert sysenv.run("apply").returncode == 0
    (sysenv.work / "b").unlink()
    os.symlink("a", sysenv.work / "b")
    p = sysenv.run("plan")
    assert "! file ~/.a: its source" in p.stdout and "is a symlink loop" in p.stdout, out(p)
    s = sysenv.run("status", "-v")
    assert "    in the home: a symlink loop" in s.stdout, out(s)


def test_a_rollback_that_restores_a_dangling_link_says_so(sysenv):
    (sysenv.work / "vimrc").write_text("set nu\n")
    _config(sysenv, LINK)
    assert sysenv.run("apply").returncode == 0
    _config(sysenv, 'file { path = "~/.other", content = "x\\n" }\n')
    assert sysenv.run("apply").returncode == 0
    (sysenv.work / "vimrc").unlink()  # git rm, after the declaration went
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert "~/.vimrc" in r.stdout and "created (dangling: its source" in r.stdout, out(r)
    assert os.path.islink(sysenv.home / ".vimrc")


def test_an_original_restored_as_a_dangling_link_is_said_to_be_one(sysenv):
    """A `*.symlink` bootstrap linked ~/.gitignore; syslua took it over. The
    source is `git rm`-ed and its declaration goes with it: the original
    link comes back, and the output says it leads nowhere."""
    src = sysenv.work / "gitignore.symlink"
    src.write_text("*.swp\n")
    os.symlink(src, sysenv.home / ".gitignore")
    _config(sysenv, f'file {{ path = "~/.gitignore", source = "{src}", link = true }}\n')
    assert sysenv.run("apply").returncode == 0
    src.unlink()
    _config(sysenv, 'file { path = "~/.other", content = "x\\n" }\n')
    a = sysenv.run("apply")
    assert a.returncode == 0, out(a)
    assert f"~/.gitignore: restored the original it took over: a link to {src}" in a.stdout
    assert "(dangling)" in a.stdout
    assert os.readlink(sysenv.home / ".gitignore") == str(src)


def test_doctor_names_a_managed_link_that_is_not_what_was_recorded(sysenv):
    (sysenv.work / "vimrc").write_text("set nu\n")
    (sysenv.work / "other").write_text("x\n")
    _config(sysenv, LINK)
    assert sysenv.run("apply").returncode == 0
    link = sysenv.home / ".vimrc"
    link.unlink()
    os.symlink(sysenv.work / "other", link)
    d = sysenv.run("doctor")
    assert d.returncode == 1, out(d)
    assert f"~/.vimrc is a link to {sysenv.work}/other, not to {sysenv.work}/vimrc" in d.stdout
    link.unlink()
    link.write_text("a file\n")
    assert "~/.vimrc is no longer a link" in sysenv.run("doctor").stdout
