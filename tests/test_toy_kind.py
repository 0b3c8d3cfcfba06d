"""A new kind is one module: the toy `stamp` (tests/stamp_kind.py), declared from Lua.

The kind is defined in tests/stamp_kind.py and registered by this test,
nothing else: no file of syslua names it. A Lua config declares it as any
shipped kind is declared, and the real CLI (in this process, where the kind
is registered) plans it (text and `--json`), applies it, records it,
removes it restoring what it took over, rolls back a failed apply through
its own journal record, rolls back to an earlier snapshot and reports
drift; the editor stubs describe it; a CCM manifest refuses it with the
usual message; its schema's rule is checked at the declaration's line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HEADER, ROOT, SysEnv, tree
from stamp_kind import register_stamp, unregister_stamp

from syslua.manifest import stubs
from syslua.paths import Paths
from syslua.resources import has
from syslua.state.snapshots import Snapshots


@pytest.fixture
def stamp(sysenv: SysEnv) -> Iterator[SysEnv]:
    register_stamp()
    (sysenv.home / "stamps").mkdir()
    yield sysenv
    unregister_stamp()


def config(sysenv: SysEnv, stamps: dict[str, str], extra: str = "") -> None:
    lines = [
        f'stamp {{ name = "{name}", text = "{text}", dir = "~/stamps" }}'
        for name, text in stamps.items()
    ]
    sysenv.write("sys.lua", HEADER + "\n".join(lines) + "\n" + extra)


def applies(sysenv: SysEnv) -> int:
    counter = sysenv.home / "stamps" / "applies"
    return int(counter.read_text()) if counter.exists() else 0


def test_no_file_of_syslua_names_the_kind() -> None:
    named = re.compile(r"""["'`]stamp["'`#]|\bstamp \{|stamp#""")
    found = [
        str(p.relative_to(ROOT))
        for top in ("syslua", "lua")
        for p in (ROOT / top).rglob("*")
        if p.suffix in (".py", ".lua") and named.search(p.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_unknown_until_registered(sysenv: SysEnv) -> None:
    assert not has("stamp")
    config(sysenv, {"a": "one"})
    p = sysenv.run("plan")
    assert p.returncode == 2
    assert "`stamp` is not defined" in p.stderr
    register_stamp()
    try:
        assert has("stamp")
        assert sysenv.run("plan").returncode == 0
    finally:
        unregister_stamp()


def test_planned_from_lua_text_and_json(stamp: SysEnv) -> None:
    config(stamp, {"a": "hello"})
    p = stamp.run("plan")
    assert p.returncode == 0, p.stderr
    assert "+ stamp <a>: will create" in p.stdout
    p = stamp.run("plan", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    [entry] = [e for e in out["plan"]["items"] if e["type"] == "stamp"]
    assert (entry["id"], entry["label"], entry["action"], entry["noop_message"]) == (
        "stamp#a",
        "<a>",
        "create",
        "Would have stamped",
    )
    [item] = [i for i in out["manifest"]["items"] if i["type"] == "stamp"]
    assert item["props"]["dir"] == str(stamp.home / "stamps")
    assert out["waves"] == [["stamp#a"]]
    assert not (stamp.home / "stamps" / "a.stamp").exists()  # planning changes nothing


def test_its_schema_and_rules_are_checked_where_declared(stamp: SysEnv) -> None:
    cases = {
        'stamp { name = "a", txet = "x", dir = "~/stamps" }': (
            "sys.lua:3: stamp: unknown property `txet` for stamp (did you mean `text`?)"
        ),
        'stamp { name = "a", text = "x" }': "sys.lua:3: stamp a: missing required property `dir`",
        'stamp { name = "a", text = "", dir = "~/stamps" }': (
            "sys.lua:3: stamp a: `text` is empty; set blank = true for an empty stamp"
        ),
    }
    for line, message in cases.items():
        stamp.write("sys.lua", HEADER + line + "\n")
        p = stamp.run("apply")
        assert p.returncode == 2, p.stderr
        assert message in p.stderr, p.stderr
        assert tree(stamp.home / "stamps") == {}
    stamp.write(
        "sys.lua", HEADER + 'stamp { name = "a", text = "", blank = true, dir = "~/stamps" }\n'
    )
    assert stamp.run("apply").returncode == 0


def test_applies_records_and_removes_restoring_what_it_took_over(stamp: SysEnv) -> None:
    (stamp.home / "stamps" / "b.stamp").write_text("hand-made\n")
    config(stamp, {"a": "one", "b": "two"})
    p = stamp.run("apply")
    assert p.returncode == 0, p.stderr
    assert (stamp.home / "stamps" / "a.stamp").read_text() == "one"
    assert (stamp.home / "stamps" / "b.stamp").read_text() == "two"
    snaps = Snapshots(Paths.from_env())
    snap = snaps.current()
    assert snap is not None
    assert snap.items["stamp#a"] == {"text": "one", "status": "changed"}
    assert snap.originals["stamp#b"].to_json()["kind"] == "file"  # kept before it was stamped

    config(stamp, {})
    p = stamp.run("apply", "--allow-empty", "--json")
    assert p.returncode == 0, p.stderr
    results = {
        e["id"]: e for e in map(json.loads, p.stdout.splitlines()) if e.get("event") == "item"
    }
    assert results["stamp#a"]["message"] == "unstamped (it said 'one')"
    assert results["stamp#a"]["label"] == "<a>"
    assert results["stamp#b"]["message"] == "restored the stamp it took over"
    assert not (stamp.home / "stamps" / "a.stamp").exists()
    assert (stamp.home / "stamps" / "b.stamp").read_text() == "hand-made\n"


def test_a_failed_apply_rolls_it_back_through_its_own_record(stamp: SysEnv) -> None:
    config(stamp, {"a": "one"})
    assert stamp.run("apply").returncode == 0
    assert applies(stamp) == 1
    before = tree(stamp.home)
    config(
        stamp,
        {"a": "two"},
        'stamp { name = "zz", text = "-", dir = "~/stamps", fail = true,'
        ' depends_on = { "stamp#a" } }\n',
    )
    p = stamp.run("apply")
    assert p.returncode == 1, p.stderr
    assert "zz was told to fail" in p.stdout + p.stderr
    assert "Apply failed. System unchanged." in p.stdout + p.stderr
    assert f"Undid stamp counter in {stamp.home}/stamps" in p.stdout + p.stderr
    assert tree(stamp.home) == before  # the stamp's text and its counter are back


def test_rollback_and_drift(stamp: SysEnv) -> None:
    config(stamp, {"a": "one"})
    assert stamp.run("apply").returncode == 0
    first = Snapshots(Paths.from_env()).current_id()
    config(stamp, {"a": "two"})
    assert stamp.run("apply").returncode == 0
    (stamp.home / "stamps" / "a.stamp").write_text("edited by hand")
    p = stamp.run("status", "--json")
    drift = json.loads(p.stdout)["drift"]
    assert [(d["id"], d["kind"], d["detail"]) for d in drift] == [
        ("stamp#a", "edited", "stamp edited")
    ]
    p = stamp.run("status", "-v")
    assert "\n    in the home: stamp edited\n" in p.stdout, p.stdout
    assert [ln for ln in p.stdout.splitlines() if ln.endswith("stamp <a>")] == [
        "MM stamp <a>"  # its label, from its key
    ], p.stdout

    assert first is not None
    p = stamp.run("rollback", first)
    assert p.returncode == 0, p.stderr
    assert (stamp.home / "stamps" / "a.stamp").read_text() == "one"
    assert json.loads(stamp.run("status", "--json").stdout)["drift"] == []


def test_described_by_the_editor_stubs(stamp: SysEnv) -> None:
    text = stubs.render()
    assert "---A stamp file (a toy kind, for tests).\n---@param spec SysluaStamp" in text
    assert "function stamp(spec) end" in text
    assert "---@field text? string what the stamp says; required, may come from defaults{}" in text
    assert "---@field stamp? SysluaStampProps" in text  # defaults { stamp = {...} }


def test_refused_in_a_ccm_manifest_with_the_usual_message(stamp: SysEnv) -> None:
    stamp.write(
        "site.yaml",
        """\
        ccm:
          resources:
            - stamp:
                name: a
                text: one
                dir: /tmp
        """,
    )
    p = stamp.run("plan", "site.yaml")
    assert p.returncode == 2
    assert (
        "site.yaml:3: resource type `stamp` is not supported "
        "(supported: file, exec, apply, package, user, archive, service)"
    ) in p.stderr


def test_defaults_apply_to_it(stamp: SysEnv) -> None:
    stamp.write(
        "sys.lua",
        HEADER
        + 'defaults { stamp = { dir = "~/stamps" } }\nstamp { name = "d", text = "from defaults" }\n',
    )
    assert stamp.run("apply").returncode == 0
    assert (stamp.home / "stamps" / "d.stamp").read_text() == "from defaults"


def test_its_module_is_the_kind(stamp: SysEnv) -> None:
    """Everything the engine used is in one file, beside this test."""
    module = Path(__file__).with_name("stamp_kind.py").read_text(encoding="utf-8")
    for member in ("def status", "def decide", "def apply", "def verify", "SCHEMA = schema("):
        assert member in module
