"""Writes never follow a symlink that was not there when the item was planned (issue 9).

A parent directory that is a symlink while planning is shown in the plan and
written through; one that turns into a symlink after planning (an earlier
item of the same apply swapped it) fails the item and rolls the apply back.
The destination itself is never followed.
"""

from __future__ import annotations

import json
import os

from conftest import HEADER, out, put, tree


def test_a_parent_that_is_a_symlink_when_planning_is_shown_and_written_through(sysenv, tmp_path):
    data = tmp_path / "data" / "config"
    data.mkdir(parents=True)
    os.symlink(data, sysenv.home / ".config")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/.config/app.conf", content = "x\\n" }\n')
    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)
    assert f"(~/.config is a symlink to {data}; writing through it)" in p.stdout, p.stdout
    entry = next(
        e
        for e in json.loads(sysenv.run("plan", "--json").stdout)["plan"]["items"]
        if e["type"] == "file"
    )
    assert entry["notes"] == [f"~/.config is a symlink to {data}; writing through it"]
    assert sysenv.run("apply").returncode == 0
    assert (data / "app.conf").read_text() == "x\n"


def test_a_parent_swapped_into_a_symlink_after_planning_fails_and_rolls_back(sysenv, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    put(sysenv.home / "sub" / "old.txt", "old\n")
    before = tree(sysenv.home)
    home = sysenv.home
    swap = f"mv {home}/sub {home}/sub.real && ln -s {elsewhere} {home}/sub"
    unswap = f"rm {home}/sub && mv {home}/sub.real {home}/sub"
    sysenv.write(
        "sys.lua",
        HEADER
        + f'exec {{ name = "swap", provider = "shell", command = "{swap}", undo = "{unswap}" }}\n'
        + 'file { path = "~/sub/new.txt", content = "secret\\n", mode = "0600", depends_on = { "exec#swap" } }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "parent directory ~/sub changed into a symlink since planning" in out(p)
    assert "Apply failed. System unchanged." in out(p)
    assert list(elsewhere.iterdir()) == []  # nothing was written through the link
    assert tree(sysenv.home) == before


def test_the_destination_itself_is_never_followed(sysenv, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch\n")
    os.symlink(victim, sysenv.home / ".profile")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/.profile", content = "mine\\n" }\n')
    assert sysenv.run("apply").returncode == 0
    assert victim.read_text() == "do not touch\n"
    assert not os.path.islink(sysenv.home / ".profile")
    assert (sysenv.home / ".profile").read_text() == "mine\n"
