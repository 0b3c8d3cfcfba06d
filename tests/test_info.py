"""`sys info`, and the original sys.lua's command-line spellings: `-o json`
for `--json`, `sys apply --repair`."""

from __future__ import annotations

import json
import os

import pytest
from conftest import HEADER, apply_ok, out, tree


def test_info_before_anything(sysenv) -> None:
    p = sysenv.run("info")
    assert p.returncode == 0, out(p)
    lines = p.stdout.splitlines()
    assert lines[0].startswith("syslua ") and "LuaJIT" in lines[0]
    assert "System:" in lines
    assert any(line.startswith("  Platform: ") and line.endswith("-linux") for line in lines)
    assert f"  Store: {sysenv.root}/store" in lines
    assert f"  State: {sysenv.root}/state" in lines
    assert f"  Cache: {sysenv.root}/cache" in lines
    assert "  none found (./sys.lua, ./init.lua, ~/.config/syslua/sys.lua or init.lua)" in lines
    assert "  none yet (run `sys apply`)" in lines
    # read-only: it creates nothing
    assert tree(sysenv.root) == {} and tree(sysenv.work) == {}


def test_info_json_names_the_config_its_lock_and_the_snapshot(sysenv) -> None:
    snap = apply_ok(sysenv, 'file { path = "~/a.txt", content = "a\\n" }\n')
    sysenv.write("libs/x/readme", "x")
    sysenv.write(
        "init.lua",
        'return { inputs = { x = "path:./libs/x" }, setup = function() end }\n',
    )
    assert sysenv.run("plan", "init.lua").returncode == 0
    p = sysenv.run("info", "--json", "init.lua")
    assert p.returncode == 0, out(p)
    doc = json.loads(p.stdout)
    assert doc["format"] == 1
    system = doc["system"]
    assert system["platform"] == f"{system['arch']}-{system['os']}"
    assert system["is_elevated"] == (os.geteuid() == 0)
    assert system["home"] == str(sysenv.home)
    assert doc["paths"]["env_script"] == f"{sysenv.root}/state/env.sh"
    assert doc["config"] == {
        "path": str(sysenv.work / "init.lua"),
        "found_by": "given",
        "lock": str(sysenv.work / "syslua.lock"),
        "inputs": {"x": {"type": "path", "url": "path:./libs/x", "rev": "local"}},
    }
    assert doc["snapshot"]["id"] == snap
    assert doc["snapshot"]["config"] == str(sysenv.work / "sys.lua")
    # the text form says the same
    p = sysenv.run("info", "init.lua")
    assert "    x: path:./libs/x @ local" in p.stdout, out(p)
    assert f"  {snap}  " in p.stdout


@pytest.mark.parametrize(
    "args",
    [["-o", "json"], ["--output", "json"], ["-ojson"], ["--output=json"]],
)
def test_dash_o_json_is_json(sysenv, args) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "a\\n" }\n')
    for command in ("history", "info"):
        p = sysenv.run(command, *args)
        assert p.returncode == 0, out(p)
        assert p.stdout == sysenv.run(command, "--json").stdout
        json.loads(p.stdout)
    for command in ("plan", "status"):
        p = sysenv.run(command, *args)
        assert p.returncode == 0, out(p)
        assert sorted(json.loads(p.stdout)) == sorted(
            json.loads(sysenv.run(command, "--json").stdout)
        )


@pytest.mark.parametrize(
    "args", [["-o", "text"], ["--output", "text"], ["-otext"], ["--output=text"]]
)
def test_dash_o_text_is_the_plain_output(sysenv, args) -> None:
    """The original's default format, spelled out, is our plain output."""
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "a\\n" }\n')
    for command in ("history", "plan", "status", "info"):
        p = sysenv.run(command, *args)
        assert p.returncode == 0, out(p)
        assert p.stdout == sysenv.run(command).stdout, out(p)
        assert not p.stdout.lstrip().startswith(("{", "["))


def test_dash_o_elsewhere_is_refused(sysenv) -> None:
    p = sysenv.run("env", "-o", "json")
    assert p.returncode == 2, out(p)
    assert "Error: sys env has no -o option: it has no machine-readable output" in p.stderr, out(p)
    p = sysenv.run("history", "-o", "yaml")
    assert p.returncode == 2, out(p)


def test_apply_repair_is_accepted_and_repairs_drift(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "a\\n" }\n')
    (sysenv.home / "a.txt").unlink()  # drift: the file is gone
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
    p = sysenv.run("apply", "--repair")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "a.txt").read_text() == "a\n"
    p = sysenv.run("apply", "--help")
    assert "--repair" in p.stdout and "every apply repairs drift" in " ".join(p.stdout.split())
