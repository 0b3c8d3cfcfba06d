"""A snapshot records its plan's waves (`order`); planning the same declarations
again uses them instead of building the graph, and anything else builds it.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import HEADER, apply_ok, current, ok, out

from syslua.plan import dag as dag_mod

CONFIG = """
local d = file { path = "~/d", ensure = "directory", mode = "0755" }
file { path = "~/d/a.txt", content = "a\\n" }
file { path = "~/d/b.txt", content = "b\\n" }
local x = exec { name = "x", command = "true", unless = "true" }
exec { name = "y", command = "true", unless = "true", depends_on = { x } }
"""


def snapshot_path(sysenv, ident: str) -> Path:  # type: ignore[no-untyped-def]
    return sysenv.root / "state" / "snapshots" / f"{ident}.json"


def planned_waves(sysenv) -> list[list[str]]:  # type: ignore[no-untyped-def]
    p = sysenv.run("plan", "--json")
    assert p.returncode == 0, out(p)
    return json.loads(p.stdout)["waves"]


def test_the_recorded_order_is_the_graphs_and_replaces_it(sysenv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ident = apply_ok(sysenv, CONFIG)
    snap = json.loads(snapshot_path(sysenv, ident).read_text())
    items = [i["type"] + "#" + i["key"] for i in snap["manifest"]["items"]]
    recorded = [[items[n] for n in wave] for wave in snap["order"]]
    built = planned_waves(sysenv)
    assert recorded == built
    assert built[0] == sorted(i for i in items if i.endswith(("#x", "/d")))  # then what needs them

    # An unchanged config is planned (and applied) without building the graph.
    def no_graph(*args: object, **kwargs: object) -> None:
        raise AssertionError("the graph was built")

    monkeypatch.setattr(dag_mod.Dag, "from_manifest", classmethod(no_graph))
    assert planned_waves(sysenv) == built
    p = sysenv.run("apply")
    assert p.returncode == 0 and "No changes." in p.stdout, out(p)
    assert current(sysenv) == ident


def test_a_changed_config_builds_its_graph(sysenv) -> None:  # type: ignore[no-untyped-def]
    apply_ok(sysenv, CONFIG)
    sysenv.write("sys.lua", HEADER + CONFIG.replace(", depends_on = { x }", ""))
    waves = planned_waves(sysenv)
    assert len(waves) == 2 and "exec#y" in waves[0], waves
    ident = apply_ok(sysenv, CONFIG.replace(", depends_on = { x }", ""))
    snap = json.loads(snapshot_path(sysenv, ident).read_text())
    items = [i["type"] + "#" + i["key"] for i in snap["manifest"]["items"]]
    assert [[items[n] for n in wave] for wave in snap["order"]] == waves


def test_a_damaged_or_missing_order_is_not_trusted(sysenv) -> None:  # type: ignore[no-untyped-def]
    ident = apply_ok(sysenv, CONFIG)
    built = planned_waves(sysenv)
    path = snapshot_path(sysenv, ident)
    snap = json.loads(path.read_text())
    for order in ([[0, 1], [99]], [[0]], [[0, 0, 1, 2, 3, 4]], "x", None):
        snap["order"] = order
        path.write_text(json.dumps(snap))
        assert planned_waves(sysenv) == built, order
        ok(sysenv.run("apply"))
        assert current(sysenv) == ident
    del snap["order"]  # a snapshot written before there was an order
    path.write_text(json.dumps(snap))
    assert planned_waves(sysenv) == built
