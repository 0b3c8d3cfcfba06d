"""`sys graph`: the plan's execution graph, in Graphviz DOT or JSON (issue 23, point 10).

Through the real command line, with real configs; the DOT is rendered by the
real `dot` (Debian's graphviz), and the test that needs it is skipped only
when it is not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
from conftest import HEADER, fid, out, tree

# A path with a quote, a backslash and non-ASCII letters, inside a declared directory.
ODD = 'we"ird\\name ünï ✓'
CONFIG = (
    HEADER
    + """\
file { path = "~/.config", ensure = "directory" }
file { path = "~/.config/we\\"ird\\\\name ünï ✓", content = "odd\\n" }
file { path = "~/nv", source = "./src" }
exec { name = "hello", command = "echo hi", depends_on = { "file#~/nv" } }
exec { name = "sub", command = "echo sub", subscribe = { "exec#hello" }, refresh_only = true }
"""
)


@pytest.fixture
def graphed(sysenv):
    sysenv.write("sys.lua", CONFIG)
    sysenv.write("src/init.lua", "-- nvim\n")
    return sysenv


def graph_json(sysenv, *args: str) -> dict:
    r = sysenv.run("graph", "--json", *args)
    assert r.returncode == 0, out(r)
    return json.loads(r.stdout)


def test_graph_json_names_items_as_the_plan_does_with_waves_and_reasons(graphed):
    before = tree(graphed.home), tree(graphed.root)
    g = graph_json(graphed, "sys.lua")
    plan = json.loads(graphed.run("plan", "--json", "sys.lua").stdout)["plan"]
    assert (tree(graphed.home), tree(graphed.root)) == before  # it changes nothing

    nodes = {n["id"]: n for n in g["nodes"]}
    assert set(nodes) == {i["id"] for i in plan["items"] if i["type"] != "parent"}
    for item in plan["items"]:
        node = nodes[item["id"]]
        assert (node["label"], node["action"]) == (item["label"], item["action"])
        assert set(node) >= {"id", "label", "wave", "action"}
    # Waves as the plan numbers them, from 1.
    for n, wave in enumerate(plan["waves"], 1):
        assert all(nodes[i]["wave"] == n for i in wave)

    home = graphed.home
    reasons = {(e["from"], e["to"]): e["reason"] for e in g["edges"]}
    assert reasons == {
        (fid(graphed, ".config"), fid(graphed, f".config/{ODD}")): "parent directory",
        (fid(graphed, "nv/init.lua"), fid(graphed, "nv")): "member",
        (f"file#{home}/nv", "exec#hello"): "depends_on",
        ("exec#hello", "exec#sub"): "subscribe",
    }
    assert nodes[fid(graphed, f".config/{ODD}")]["label"] == f"~/.config/{ODD}"


def test_graph_dot_renders_with_graphviz_and_names_every_item(graphed):
    dot = shutil.which("dot")
    if dot is None:
        pytest.skip("Graphviz's `dot` is not installed (apt-get install graphviz)")
    r = graphed.run("graph", "sys.lua")
    assert r.returncode == 0, out(r)
    assert r.stdout.startswith("digraph ")
    assert "subgraph cluster_wave1 {" in r.stdout
    svg = subprocess.run(
        [dot, "-Tsvg"], input=r.stdout, capture_output=True, text=True, timeout=60, check=False
    )
    assert svg.returncode == 0 and not svg.stderr, svg.stderr
    texts = {
        (t.text or "").strip()
        for t in ET.fromstring(svg.stdout).iter("{http://www.w3.org/2000/svg}text")
    }
    assert {
        "+ file ~/.config",
        f"+ file ~/.config/{ODD}",
        "+ file ~/nv/",
        "+ file ~/nv/init.lua",
        "+ exec hello",
        "+ exec sub",  # hello runs: its subscriber runs too
    } <= texts
    assert {"Wave 1", "Wave 2", "Wave 3", "Wave 4"} <= texts
    assert {"depends_on", "subscribe", "parent directory", "member"} <= texts


def test_graph_dot_escapes_control_characters(sysenv):
    # A path with a newline and an escape: one node, and nothing raw on stdout.
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a\\nb\\027[31m", content = "x" }\n')
    r = sysenv.run("graph", "sys.lua")
    assert r.returncode == 0, out(r)
    assert "\x1b" not in r.stdout
    assert f'"file#{sysenv.home}/a\\nb\\x1b[31m" [label="+ file ~/a\\\\nb\\\\x1b[31m"' in r.stdout
    if shutil.which("dot"):
        svg = subprocess.run(["dot", "-Tsvg"], input=r.stdout, capture_output=True, text=True)
        assert svg.returncode == 0 and "+ file ~/a\\nb\\x1b[31m" in svg.stdout, svg.stderr


def test_graph_changes_keeps_what_the_plan_would_change(graphed):
    r = graphed.run("apply", "sys.lua")
    assert r.returncode == 0, out(r)
    # Change one file of the tree and drop the odd file: the tree's member,
    # the tree (which reports on it), the exec that depends on it and its
    # subscriber change; the odd file is removed; ~/.config stays as it is.
    graphed.write("src/init.lua", "-- nvim, edited\n")
    graphed.write("sys.lua", CONFIG.replace('file { path = "~/.config/we', "-- "))
    plan = json.loads(graphed.run("plan", "--json", "sys.lua").stdout)["plan"]
    changing = {i["id"] for i in plan["items"] + plan["removals"] if i["action"] != "none"}

    g = graph_json(graphed, "--changes", "sys.lua")
    nodes = {n["id"]: n for n in g["nodes"]}
    assert set(nodes) == changing
    assert fid(graphed, ".config") not in nodes
    assert nodes[fid(graphed, f".config/{ODD}")] | {"id": "-"} == {
        "id": "-",
        "type": "file",
        "label": f"~/.config/{ODD}",
        "wave": None,
        "action": "remove",
        "symbol": "-",
    }
    assert {(e["from"], e["to"], e["reason"]) for e in g["edges"]} == {
        (fid(graphed, "nv/init.lua"), fid(graphed, "nv"), "member"),
        (fid(graphed, "nv"), "exec#hello", "depends_on"),
        ("exec#hello", "exec#sub", "subscribe"),
    }

    # The DOT says the same: the unchanged directory is not in it.
    dot = graphed.run("graph", "--changes", "sys.lua").stdout
    assert '~/.config"' not in dot and "subgraph cluster_removed {" in dot
    full = graph_json(graphed, "sys.lua")
    assert fid(graphed, ".config") in {n["id"] for n in full["nodes"]}


def test_graph_changes_of_a_converged_machine_is_empty(graphed):
    graphed.write("sys.lua", CONFIG.replace('"echo hi"', '"echo hi", creates = "~/.config"'))
    assert graphed.run("apply", "sys.lua").returncode == 0
    g = graph_json(graphed, "--changes", "sys.lua")
    assert g["nodes"] == [] and g["edges"] == []
    r = graphed.run("graph", "--changes", "sys.lua")
    assert r.returncode == 0 and "#" not in r.stdout and "->" not in r.stdout, out(r)
    assert len(graph_json(graphed, "sys.lua")["nodes"]) == 6


@pytest.mark.parametrize(
    "body",
    [
        'file { path = "~/a", content = 1 + nil }\n',
        'fiel { path = "~/a" }\n',
        'exec { name = "a", depends_on = { "exec#b" } }\n'
        'exec { name = "b", depends_on = { "exec#a" } }\n',
    ],
    ids=["lua-error", "unknown-global", "cycle"],
)
def test_graph_fails_as_plan_does_on_a_bad_config(sysenv, body):
    sysenv.write("sys.lua", HEADER + body)
    before = tree(sysenv.home), tree(sysenv.root)
    plan = sysenv.run("plan", "sys.lua")
    for args in (("graph", "sys.lua"), ("graph", "--json", "sys.lua")):
        r = sysenv.run(*args)
        assert r.returncode == plan.returncode, out(r)
        if "--json" in args:  # a refusal's summary names its reason, as every --json does
            assert json.loads(r.stdout)["refused"] == "config_error", r.stdout
        else:
            assert r.stdout == "", out(r)
        assert r.returncode == 2
        assert r.stderr.splitlines()[-1] == plan.stderr.splitlines()[-1]
        assert "Error:" in r.stderr and "Traceback" not in r.stderr
    assert (tree(sysenv.home), tree(sysenv.root)) == before


def test_graph_names_ordering_and_member_edges_of_an_apply_child(sysenv):
    sysenv.write(
        "sys.lua",
        'exec { name = "first", command = "true" }\n'
        'apply { name = "child.yaml", depends_on = { "exec#first" } }\n',
    )
    sysenv.write(
        "child.yaml",
        """\
        ccm:
          resources:
            - exec:
                - one: {command: /bin/true}
                - two: {command: /bin/true}
        """,
    )
    g = graph_json(sysenv, "sys.lua")
    child = f"apply#{sysenv.work}/child.yaml"
    assert {(e["from"], e["to"]): e["reason"] for e in g["edges"]} == {
        ("exec#first", child): "depends_on",
        ("exec#first", "exec#one"): "depends_on (inherited)",
        ("exec#first", "exec#two"): "depends_on (inherited)",
        ("exec#one", "exec#two"): "after",
        ("exec#one", child): "member",
        ("exec#two", child): "member",
    }
    assert [n["wave"] for n in g["nodes"]] == [1, 2, 3, 4]
