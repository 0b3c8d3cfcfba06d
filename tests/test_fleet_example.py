"""The example fleet config (contrib/ansible/examples/config, docs/fleet.md):
a role fact, and per-host data in hosts/<hostname>.lua, loaded when the file
exists; a mistake in that file is an error at its line, never a silent
fallback to no data."""

from __future__ import annotations

import json
import os
import shutil

from conftest import ROOT, out

EXAMPLE = ROOT / "contrib" / "ansible" / "examples" / "config"


def motd(p) -> str:
    data = json.loads(p.stdout)
    for item in data["manifest"]["items"]:
        if item["key"].endswith("/.config/fleet/motd"):
            return item["props"]["content"]
    raise AssertionError(p.stdout)


def test_per_host_data_is_loaded_and_its_mistakes_are_errors(sysenv) -> None:
    config = sysenv.work / "config"
    shutil.copytree(EXAMPLE, config)
    p = sysenv.run("plan", "--json", "--fact", "role=web", str(config))
    assert p.returncode == 0, out(p)
    assert motd(p) == "role: web\nmanaged by syslua\n"

    mine = config / "hosts" / f"{os.uname().nodename}.lua"
    mine.write_text('return { motd = "only here\\n" }\n')
    p = sysenv.run("plan", "--json", str(config))
    assert p.returncode == 0, out(p)
    assert motd(p) == "role: workstation\nonly here\n"

    mine.write_text("return { motd = \n")
    p = sysenv.run("plan", "--json", str(config))
    assert p.returncode == 2 and json.loads(p.stdout)["refused"] == "config_error", out(p)
    assert f"hosts/{mine.name}:" in p.stderr, out(p)
