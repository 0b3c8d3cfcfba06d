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
    assert '  + env EDITOR: "' in plan.stdout, plan.stdout


def test_the_starter_applies_and_reapplies_cleanly(sysenv):
    assert sysenv.run("init", str(sysenv.work)).returncode == 0
    first = sysenv.run("apply")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Apply complete" in first.stdout
    assert (sysenv.root / "state" / "env.sh").read_text().count("EDITOR='vi'") == 1
    again = sysenv.run("apply")
    assert again.returncode == 0 and "No changes" in again.stdout


def test_init_never_overwrites_an_existing_config(sysenv):
    target = sysenv.write("sys.lua", "-- mine\n")
    before = tree(sysenv.work)
    p = sysenv.run("init", str(sysenv.work))
    assert p.returncode == 2
    assert "already exists" in p.stderr and "Traceback" not in p.stderr
    assert tree(sysenv.work) == before
    assert target.read_text() == "-- mine\n"
