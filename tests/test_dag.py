"""The execution DAG (SPEC section 4), built from real Lua configs.

Configs are resolved with `syslua.manifest.resolve.resolve` and turned into
a `syslua.plan.dag.Dag`; an edge a -> b means `b in dag.preds` has `a`
(a finishes before b starts).
"""

from __future__ import annotations

import graphlib
import itertools
import re

import pytest
from conftest import HEADER, fid
from hypothesis import given, settings
from hypothesis import strategies as st

from syslua.manifest.resolve import Options, resolve
from syslua.plan.dag import CycleError, Dag

PKG = (
    'package { name = "rg", version = "1", '
    'source = lib.fetchUrl{ url = "http://127.0.0.1/x.tar.gz", sha256 = string.rep("a", 64) }, '
    'bin = { "bin/rg" } }\n'
)


def build(sysenv, text: str, name: str = "sys.lua", **files: str):
    for rel, body in files.items():
        sysenv.write(rel, body)
    path = sysenv.write(name, text)
    manifest = resolve(path, Options())
    return manifest, Dag.from_manifest(manifest)


def assert_generations(dag: Dag) -> list[list[str]]:
    """Waves are the topological generations of the DAG: check every property."""
    waves = dag.waves()
    seen: list[str] = [n for w in waves for n in w]
    assert sorted(seen) == sorted(dag.nodes), "every node in exactly one wave"
    assert len(seen) == len(set(seen))
    level = {n: i for i, w in enumerate(waves) for n in w}
    for node in dag.nodes:
        preds = dag.preds[node]
        # only needs earlier waves
        assert all(level[p] < level[node] for p in preds), node
        # and is in the earliest wave it can be: 0 without preds, else right after its latest pred
        expected = 0 if not preds else max(level[p] for p in preds) + 1
        assert level[node] == expected, node
    for w in waves:
        assert w == sorted(w)
    return waves


# ---------------------------------------------------------------------------
# edges
# ---------------------------------------------------------------------------


def test_depends_on_edge(sysenv):
    m, dag = build(
        sysenv,
        HEADER
        + """\
local a = exec { name = "a", command = "true" }
exec { name = "b", command = "true", depends_on = { a } }
exec { name = "c", command = "true", depends_on = { "exec#b", "exec#a" } }
exec { name = "lonely", command = "true" }
""",
    )
    assert set(dag.preds["exec#a"]) == set()
    assert set(dag.preds["exec#b"]) == {"exec#a"}
    assert set(dag.preds["exec#c"]) == {"exec#a", "exec#b"}
    assert set(dag.preds["exec#lonely"]) == set()
    assert assert_generations(dag) == [["exec#a", "exec#lonely"], ["exec#b"], ["exec#c"]]


def test_depends_on_a_file_by_tilde_reference(sysenv):
    m, dag = build(
        sysenv,
        HEADER
        + """\
file { path = "~/conf", content = "x" }
exec { name = "use", command = "true", depends_on = { "file#~/conf" } }
""",
    )
    assert set(dag.preds["exec#use"]) == {fid(sysenv, "conf")}


def test_subscribe_edge_target_before_subscriber(sysenv):
    m, dag = build(
        sysenv,
        HEADER
        + """\
local cfg = file { path = "~/app.conf", content = "x" }
exec { name = "reload", command = "true", refresh_only = true, subscribe = { cfg } }
exec { name = "both", command = "true", subscribe = { "exec#reload" }, depends_on = { cfg } }
""",
    )
    conf = fid(sysenv, "app.conf")
    assert set(dag.preds["exec#reload"]) == {conf}
    assert set(dag.preds["exec#both"]) == {conf, "exec#reload"}
    assert set(dag.preds[conf]) == set()
    assert dag.successors()[conf] == {"exec#reload", "exec#both"}
    assert assert_generations(dag) == [[conf], ["exec#reload"], ["exec#both"]]


def test_file_inside_declared_directory_depends_on_nearest_declared_ancestor(sysenv):
    m, dag = build(
        sysenv,
        HEADER
        + """\
file { path = "~/top", ensure = "directory", mode = "0755" }
file { path = "~/top/mid", ensure = "directory", mode = "0755" }
file { path = "~/top/mid/undeclared/deep.txt", content = "x" }
file { path = "~/top/mid/direct.txt", content = "x" }
file { path = "~/top/side.txt", content = "x" }
file { path = "~/elsewhere.txt", content = "x" }
file { path = "~/topology.txt", content = "x" }
""",
    )
    top, mid = fid(sysenv, "top"), fid(sysenv, "top/mid")
    assert set(dag.preds[top]) == set()
    assert set(dag.preds[mid]) == {top}
    # nearest declared ancestor only (top/mid, not top), skipping undeclared levels
    assert set(dag.preds[fid(sysenv, "top/mid/undeclared/deep.txt")]) == {mid}
    assert set(dag.preds[fid(sysenv, "top/mid/direct.txt")]) == {mid}
    assert set(dag.preds[fid(sysenv, "top/side.txt")]) == {top}
    assert set(dag.preds[fid(sysenv, "elsewhere.txt")]) == set()
    # a sibling whose name merely starts with the directory's name is not inside it
    assert set(dag.preds[fid(sysenv, "topology.txt")]) == set()
    waves = assert_generations(dag)
    assert len(waves) == 3


def test_file_under_a_non_directory_item_gets_no_directory_edge(sysenv):
    # `~/thing` is declared absent: it is not a directory that contains anything.
    m, dag = build(
        sysenv,
        HEADER
        + """\
file { path = "~/thing", ensure = "absent" }
file { path = "~/thing2", ensure = "directory", mode = "0755" }
file { path = "~/thing2/x", content = "x" }
""",
    )
    assert set(dag.preds[fid(sysenv, "thing2/x")]) == {fid(sysenv, "thing2")}
    assert set(dag.preds[fid(sysenv, "thing")]) == set()


def test_package_is_declared_in_the_manifest(sysenv):
    m, _ = build(sysenv, PKG + 'exec { name = "rg --version" }\n')
    pkg = m.get("package#rg")
    assert pkg is not None
    assert list(pkg.get("bin")) == ["bin/rg"]
    assert m.get("exec#rg --version").get("command") == "rg --version"


def test_exec_running_a_package_bin_depends_on_the_package(sysenv):
    m, dag = build(
        sysenv, PKG + 'exec { name = "rg --version" }\nexec { name = "other", command = "true" }\n'
    )
    assert "package#rg" in dag.nodes
    assert set(dag.preds["exec#rg --version"]) == {"package#rg"}
    assert set(dag.preds["exec#other"]) == set()
    assert assert_generations(dag) == [["exec#other", "package#rg"], ["exec#rg --version"]]


def test_exec_not_running_a_package_bin_has_no_package_edge(sysenv):
    m, dag = build(
        sysenv, PKG + 'exec { name = "rgx --version" }\nexec { name = "grep rg /dev/null" }\n'
    )
    assert set(dag.preds["exec#rgx --version"]) == set()
    assert set(dag.preds["exec#grep rg /dev/null"]) == set()


def test_apply_children_run_inside_the_apply(sysenv):
    m, dag = build(
        sysenv,
        HEADER
        + """\
local setup = exec { name = "setup", command = "true" }
apply { name = "child.lua", depends_on = { setup } }
exec { name = "after", command = "true", depends_on = { "apply#child.lua" } }
""",
        **{
            "child.lua": """\
exec { name = "kid-1", command = "true" }
exec { name = "kid-2", command = "true", depends_on = { "exec#kid-1" } }
"""
        },
    )
    apply_id = f"apply#{sysenv.work}/child.lua"
    assert m.get("exec#kid-1").parent == apply_id
    # each child -> its apply
    assert set(dag.preds[apply_id]) == {"exec#setup", "exec#kid-1", "exec#kid-2"}
    # the apply's own dependencies -> each child
    assert set(dag.preds["exec#kid-1"]) == {"exec#setup"}
    assert set(dag.preds["exec#kid-2"]) == {"exec#setup", "exec#kid-1"}
    # whatever depends on the apply waits for all of its children
    assert set(dag.preds["exec#after"]) == {apply_id}
    assert assert_generations(dag) == [
        ["exec#setup"],
        ["exec#kid-1"],
        ["exec#kid-2"],
        [apply_id],
        ["exec#after"],
    ]


def test_nested_apply_children(sysenv):
    m, dag = build(
        sysenv,
        'apply { name = "a.lua" }\n',
        **{
            "a.lua": 'exec { name = "in-a", command = "true" }\napply { name = "b.lua" }\n',
            "b.lua": 'exec { name = "in-b", command = "true" }\n',
        },
    )
    a, b = f"apply#{sysenv.work}/a.lua", f"apply#{sysenv.work}/b.lua"
    assert m.get(b).parent == a
    assert m.get("exec#in-b").parent == b
    assert m.get("exec#in-a").parent == a
    assert set(dag.preds[b]) == {"exec#in-b"}
    assert set(dag.preds[a]) == {"exec#in-a", b}
    assert assert_generations(dag) == [["exec#in-a", "exec#in-b"], [b], [a]]


def test_apply_dependencies_reach_grandchildren(sysenv):
    m, dag = build(
        sysenv,
        'exec { name = "setup", command = "true" }\napply { name = "a.lua", depends_on = { "exec#setup" } }\n',
        **{
            "a.lua": 'apply { name = "b.lua" }\n',
            "b.lua": 'exec { name = "deep", command = "true" }\n',
        },
    )
    level = {n: i for i, w in enumerate(dag.waves()) for n in w}
    assert level["exec#setup"] < level["exec#deep"]


# ---------------------------------------------------------------------------
# waves
# ---------------------------------------------------------------------------


DIAMOND = [
    'exec { name = "root", command = "true" }\n',
    'exec { name = "left", command = "true", depends_on = { "exec#root" } }\n',
    'exec { name = "right", command = "true", depends_on = { "exec#root" } }\n',
    'exec { name = "long-1", command = "true", depends_on = { "exec#right" } }\n',
    'exec { name = "join", command = "true", depends_on = { "exec#left", "exec#long-1" } }\n',
    'exec { name = "free", command = "true" }\n',
]


def test_waves_are_topological_generations(sysenv):
    m, dag = build(sysenv, "".join(DIAMOND))
    waves = assert_generations(dag)
    assert waves == [
        ["exec#free", "exec#root"],
        ["exec#left", "exec#right"],
        ["exec#long-1"],
        ["exec#join"],
    ]


@pytest.mark.parametrize(
    "perm", list(itertools.islice(itertools.permutations(range(len(DIAMOND))), 0, 720, 97))
)
def test_waves_do_not_depend_on_declaration_order(sysenv, perm):
    _, reference = build(sysenv, "".join(DIAMOND), name="ref.lua")
    m, dag = build(sysenv, "".join(DIAMOND[i] for i in perm))
    assert dag.preds == reference.preds
    assert dag.waves() == reference.waves()


def test_empty_manifest_has_no_waves(sysenv):
    m, dag = build(sysenv, 'env { EDITOR = "vim" }\n')
    assert dag.nodes == []  # env items are not executed nodes
    assert dag.waves() == []


# ---------------------------------------------------------------------------
# cycles
# ---------------------------------------------------------------------------


def test_cycle_error_lists_the_cycle_and_where_it_was_declared(sysenv):
    text = HEADER + (
        'exec { name = "a", command = "true", depends_on = { "exec#b" } }\n'
        'exec { name = "b", command = "true", depends_on = { "exec#c" } }\n'
        'exec { name = "c", command = "true", depends_on = { "exec#a" } }\n'
        'exec { name = "innocent", command = "true" }\n'
    )
    path = sysenv.write("sys.lua", text)
    manifest = resolve(path, Options())
    with pytest.raises(CycleError) as err:
        Dag.from_manifest(manifest)
    msg = err.value.render()
    assert "dependency cycle:" in msg
    # execution order: c must finish before b, b before a, a before c
    assert "exec#a -> exec#c -> exec#b -> exec#a" in msg
    assert "exec#a declared at sys.lua:3" in msg
    assert "exec#b declared at sys.lua:4" in msg
    assert "exec#c declared at sys.lua:5" in msg
    assert "innocent" not in msg
    assert err.value.exit_code == 2


def test_cycle_through_subscribe_and_directory_edge(sysenv):
    # the directory must exist before the file inside it, but it waits for an exec
    # that subscribes to that file
    text = HEADER + (
        'file { path = "~/d", ensure = "directory", mode = "0755", depends_on = { "exec#e" } }\n'
        'file { path = "~/d/f", content = "x" }\n'
        'exec { name = "e", command = "true", subscribe = { "file#~/d/f" } }\n'
    )
    path = sysenv.write("sys.lua", text)
    with pytest.raises(CycleError) as err:
        Dag.from_manifest(resolve(path, Options()))
    msg = err.value.render()
    d, f = fid(sysenv, "d"), fid(sysenv, "d/f")
    assert f"exec#e -> {d} -> {f} -> exec#e" in msg


def test_two_independent_cycles_are_both_listed(sysenv):
    text = (
        'exec { name = "a", command = "true", depends_on = { "exec#b" } }\n'
        'exec { name = "b", command = "true", depends_on = { "exec#a" } }\n'
        'exec { name = "x", command = "true", depends_on = { "exec#y" } }\n'
        'exec { name = "y", command = "true", depends_on = { "exec#x" } }\n'
    )
    path = sysenv.write("sys.lua", text)
    with pytest.raises(CycleError) as err:
        Dag.from_manifest(resolve(path, Options()))
    msg = err.value.render()
    assert msg.startswith("2 dependency cycles:")
    assert re.search(r"exec#a -> exec#b -> exec#a", msg)
    assert re.search(r"exec#x -> exec#y -> exec#x", msg)


# ---------------------------------------------------------------------------
# waves are computed by dag.py itself (in-degree counts): the same generations
# as the standard library's graphlib, on any graph
# ---------------------------------------------------------------------------


@given(
    st.integers(min_value=0, max_value=40).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.sets(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0)))),
        )
    )
)
@settings(max_examples=200, deadline=None)
def test_waves_are_graphlibs_generations(graph):
    n, pairs = graph
    nodes = [f"exec#n{i:02d}" for i in range(n)]
    # Only edges from a smaller to a larger index: acyclic by construction.
    preds = {node: {nodes[a] for a, b in pairs if a < b and nodes[b] == node} for node in nodes}
    dag = Dag(sorted(nodes), preds)
    reference = graphlib.TopologicalSorter({node: preds[node] for node in nodes})
    reference.prepare()
    generations = []
    while reference.is_active():
        ready = sorted(reference.get_ready())
        generations.append(ready)
        reference.done(*ready)
    assert dag.waves() == generations
    assert_generations(dag)


def test_waves_of_a_hand_made_cycle_raise_cycle_error():
    preds = {"exec#a": {"exec#c"}, "exec#b": {"exec#a"}, "exec#c": {"exec#b"}, "exec#d": set()}
    with pytest.raises(CycleError) as err:
        Dag(sorted(preds), preds).waves()
    assert "exec#a -> exec#b -> exec#c -> exec#a" in str(err.value)
