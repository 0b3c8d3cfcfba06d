"""The Ansible module's own contract, without ansible-playbook (fast): its
documentation parses and lists exactly its options, the diffs it builds, and
its answers to bad input, by running the module file as Ansible would run it
(a JSON file of arguments), against this checkout's `sys`."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import HEADER, ROOT, tree

pytest.importorskip("ansible", reason="ansible-core is the `fleet` extra: pip install '.[fleet]'")

MODULE = ROOT / "contrib" / "ansible" / "plugins" / "modules" / "syslua.py"


def docs() -> dict[str, Any]:
    tree_ = ast.parse(MODULE.read_text())
    found: dict[str, str] = {
        node.targets[0].id: str(node.value.value)
        for node in tree_.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }
    return {k: yaml.safe_load(found[k]) for k in ("DOCUMENTATION", "EXAMPLES", "RETURN")}


def module() -> Any:
    spec = importlib.util.spec_from_file_location("syslua_ansible_module", MODULE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_documentation_lists_exactly_the_options_and_return_values() -> None:
    d = docs()
    doc = d["DOCUMENTATION"]
    assert doc["module"] == "syslua"
    options = doc["options"]
    assert set(options) == {
        "config", "state", "snapshot", "facts", "jobs", "executable", "environment"
    }  # fmt: skip
    assert options["state"]["choices"] == ["applied", "planned", "rolled_back"]
    assert options["state"]["default"] == "applied" and options["executable"]["default"] == "sys"
    assert {"snapshot", "counts", "failures", "plan"} <= set(d["RETURN"])
    assert all("syslua.syslua.syslua" in t or "ansible.builtin" in str(t) for t in d["EXAMPLES"])
    # the argument_spec says the same (types and defaults)
    source = MODULE.read_text()
    for name, option in options.items():
        assert f'{name}=dict(type="{option["type"]}"' in source, name


def test_diffs_are_the_plan_applied_to_the_file_or_prepared(tmp_path: Path) -> None:
    m = module()
    assert m.patched("a\nb\nc\n", "--- x\n+++ x\n@@ -2 +2 @@\n-b\n+B\n") == "a\nB\nc\n"
    no_newline = "--- x\n+++ x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"
    assert m.patched("a", no_newline) == "a\n"
    assert m.patched("other\n", "--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n") is None  # moved on since
    f = tmp_path / "f.txt"
    f.write_text("one\ntwo\n")
    plan = {
        "items": [
            {"id": f"file#{f}", "label": "f.txt", "diff": "--- a\n+++ b\n@@ -2 +2 @@\n-two\n+2\n"},
            {"id": f"file#{tmp_path}/bin", "label": "bin", "diff": "Binary files differ"},
            {"id": "exec#x", "label": "x"},
        ],
        "removals": [],
    }
    assert m.ansible_diffs(plan) == [
        {
            "before_header": "f.txt",
            "after_header": "f.txt",
            "before": "one\ntwo\n",
            "after": "one\n2\n",
        },
        {"before_header": "bin", "after_header": "bin", "prepared": "Binary files differ\n"},
    ]
    assert m.fact_args({"role": "web", "site": {"dc": "fra1"}, "on": True}) == [
        "--fact", "on=true", "--fact", "role=web", "--fact", "site.dc=fra1"
    ]  # fmt: skip


def run_module(sysenv, args: dict[str, Any], check: bool = False) -> dict[str, Any]:
    argv = {"ANSIBLE_MODULE_ARGS": {**args, "_ansible_check_mode": check}}
    path = sysenv.work / "args.json"
    path.write_text(json.dumps(argv))
    p = subprocess.run(
        [sys.executable, str(MODULE), str(path)],
        env=sysenv.env,
        capture_output=True,
        text=True,
        cwd=sysenv.work,
        timeout=120,
    )
    return json.loads(p.stdout)


SYS = {"executable": str(Path(sys.executable).parent / "sys")}


def test_bad_input_fails_the_task_and_changes_nothing(sysenv) -> None:
    if not Path(SYS["executable"]).exists():
        pytest.skip(f"no `sys` beside {sys.executable}")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
    before = tree(sysenv.home)
    r = run_module(sysenv, {"executable": "no-such-sys-cmd"})
    assert r["failed"] and "'no-such-sys-cmd' was not found in PATH" in r["msg"], r
    r = run_module(sysenv, {**SYS, "config": str(sysenv.work / "missing.lua")})
    assert r["failed"] and "does not exist on this host" in r["msg"], r
    r = run_module(sysenv, {**SYS, "snapshot": "x"})
    assert r["failed"] and r["msg"] == "snapshot is used with state=rolled_back only", r
    sysenv.write("bad.lua", HEADER + 'file { path = "relative", content = "x" }\n')
    r = run_module(sysenv, {**SYS, "config": str(sysenv.work / "bad.lua")})
    assert r["failed"] and r["rc"] == 2 and "nothing was changed" in r["msg"], r
    assert "bad.lua:" in r["msg"] and "Traceback" not in r["msg"], r
    r = run_module(sysenv, {**SYS, "state": "rolled_back"})
    assert r["failed"] and r["changed"] is False, r
    assert tree(sysenv.home) == before


def test_planned_and_check_mode_through_the_module(sysenv) -> None:
    if not Path(SYS["executable"]).exists():
        pytest.skip(f"no `sys` beside {sys.executable}")
    config = sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
    args = {**SYS, "config": str(config), "environment": {"PYTHONPATH": str(ROOT)}}
    r = run_module(sysenv, {**args, "state": "planned"})
    assert r["changed"] is False and r["plan"]["changes"] is True and r["snapshot"] is None, r
    r = run_module(sysenv, args, check=True)
    assert r["changed"] is True and r["counts"]["create"] == 1, r
    assert not (sysenv.home / "a.txt").exists()
    r = run_module(sysenv, args)
    assert r["changed"] is True and r["counts"]["changed"] == 1 and r["snapshot"], r
    assert run_module(sysenv, args)["changed"] is False
    assert run_module(sysenv, args, check=True)["changed"] is False
