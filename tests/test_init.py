"""`sys init`: a starter config that plans and applies as it is, and a .luarc.json."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import tree


def test_init_writes_a_starter_and_luarc_into_the_default_dir(sysenv):
    p = sysenv.run("init")
    assert p.returncode == 0, p.stderr
    config_dir = sysenv.home / ".config" / "syslua"
    assert (config_dir / "sys.lua").is_file()
    luarc = json.loads((config_dir / ".luarc.json").read_text())
    assert luarc["runtime.version"] == "LuaJIT"
    assert "sys" in luarc["diagnostics.globals"] and "file" in luarc["diagnostics.globals"]
    stubs = Path(luarc["workspace.library"][0]) / "syslua.lua"
    assert stubs.is_file(), stubs
    # CONFIG defaults to ~/.config/syslua/sys.lua when there is no ./sys.lua
    plan = sysenv.run("plan")
    assert plan.returncode == 0, plan.stderr
    assert "env.EDITOR" in plan.stdout


def test_the_starter_applies_and_reapplies_cleanly(sysenv):
    assert sysenv.run("init", str(sysenv.work)).returncode == 0
    first = sysenv.run("apply")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Apply complete" in first.stdout
    assert (sysenv.root / "state" / "env.sh").read_text().count("EDITOR='vi'") == 1
    again = sysenv.run("apply")
    assert again.returncode == 0 and "No changes" in again.stdout


def test_init_never_overwrites_an_existing_config(sysenv):
    """An existing sys.lua is left alone and said so; the missing .luarc.json is written."""
    target = sysenv.write("sys.lua", "-- mine\n")
    p = sysenv.run("init", str(sysenv.work))
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines() == [
        f"left alone because it exists: {target}",
        f"written: {sysenv.work / '.luarc.json'}",
        f"Next: sys plan {target}",
    ]
    assert target.read_text() == "-- mine\n"
    assert json.loads((sysenv.work / ".luarc.json").read_text())["runtime.version"] == "LuaJIT"


def test_init_says_what_it_wrote_and_what_it_left_alone(sysenv):
    d = sysenv.work / "cfg"
    first = sysenv.run("init", str(d))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        f"written: {d / 'sys.lua'}",
        f"written: {d / '.luarc.json'}",
        f"Next: sys plan {d / 'sys.lua'}",
    ]
    before = tree(d)
    again = sysenv.run("init", str(d))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        f"left alone because it exists: {d / 'sys.lua'}",
        f"left alone because it exists: {d / '.luarc.json'}",
        f"Next: sys plan {d / 'sys.lua'}",
    ]
    assert tree(d) == before
    # a dangling link counts as existing: it is not followed, nor replaced
    (d / ".luarc.json").unlink()
    (d / ".luarc.json").symlink_to(d / "nowhere.json")
    third = sysenv.run("init", str(d))
    assert f"left alone because it exists: {d / '.luarc.json'}" in third.stdout
    assert not (d / "nowhere.json").exists()


def test_init_into_a_file_is_a_usage_error(sysenv):
    f = sysenv.write("notadir", "x\n")
    before = tree(sysenv.work)
    p = sysenv.run("init", str(f))
    assert p.returncode == 2 and f"Error: {f} is not a directory" in p.stderr, p.stderr
    assert tree(sysenv.work) == before
