"""`apply` children (seed apply-resource.md; SPEC sections 2, 5 and 9).

Children are real Lua and CCM-YAML files in the work dir, resolved with
`syslua.manifest.resolve.resolve` (and through the CLI where the brief asks
for the flag): data handed down, parent marks, noop strengthening, the depth
limit on real nesting, `allow_apply` and cycles.
"""

from __future__ import annotations

import pytest
from conftest import HEADER, aid, item_of, tree

from syslua.errors import ConfigError
from syslua.manifest.resolve import DEFAULT_MAX_DEPTH, Options, resolve


def load(sysenv, root: str, options: Options | None = None, /, **files: str):
    for rel, body in files.items():
        sysenv.write(rel.replace("__", "/"), body)
    return resolve(sysenv.write("sys.lua", root), options or Options())


def content(manifest, sysenv, rel: str) -> str:
    item = manifest.get(f"file#{sysenv.home}/{rel}")
    assert item is not None, f"file ~/{rel} not declared: {[i.id for i in manifest]}"
    return item.get("content")


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------


def test_lua_child_gets_data_as_sys_data_and_parent_data_is_unaffected(sysenv):
    m = load(
        sysenv,
        HEADER
        + """\
apply { name = "child.lua", data = { greeting = "hello", count = 3, list = { "a", "b" }, nested = { color = "cyan" } } }
-- declared after the apply: the parent still sees its own (empty) data
exec { name = "parent-greeting=" .. tostring(sys.data.greeting), command = "true" }
exec { name = "parent-data-empty=" .. tostring(next(sys.data) == nil), command = "true" }
""",
        **{
            "child.lua": HEADER
            + """\
file { path = "~/child.txt", content = sys.data.greeting .. " x" .. sys.data.count .. " " .. table.concat(sys.data.list, ",") }
file { path = "~/tmpl.txt", content = "{{ lookup('data.greeting') }}/{{ lookup('data.nested.color') }}" }
exec { name = "child-dir=" .. sys.dir, command = "true" }
""",
        },
    )
    assert content(m, sysenv, "child.txt") == "hello x3 a,b"
    assert content(m, sysenv, "tmpl.txt") == "hello/cyan"
    assert m.get("exec#parent-greeting=nil") is not None
    assert m.get("exec#parent-data-empty=true") is not None
    assert m.get(f"exec#child-dir={sysenv.work}") is not None


def test_lua_child_gets_nested_data_tables(sysenv):
    m = load(
        sysenv,
        'apply { name = "child.lua", data = { nested = { color = "cyan", deeper = { n = 1 } } } }\n',
        **{
            "child.lua": 'exec { name = "color=" .. tostring(sys.data.nested.color) .. "/" '
            '.. tostring(sys.data.nested.deeper and sys.data.nested.deeper.n), command = "true" }\n'
        },
    )
    assert m.get("exec#color=cyan/1") is not None, [i.id for i in m]


def test_middle_manifest_keeps_its_own_data_around_its_child(sysenv):
    m = load(
        sysenv,
        'apply { name = "mid.lua", data = { level = "mid" } }\n',
        **{
            "mid.lua": """\
exec { name = "mid-before=" .. sys.data.level, command = "true" }
apply { name = "leaf.lua", data = { level = "leaf" } }
exec { name = "mid-after=" .. sys.data.level, command = "true" }
""",
            "leaf.lua": 'exec { name = "leaf=" .. sys.data.level, command = "true" }\n',
        },
    )
    ids = {i.id for i in m}
    assert {"exec#mid-before=mid", "exec#mid-after=mid", "exec#leaf=leaf"} <= ids
    assert not any(i.startswith("exec#mid-") and i.endswith("=leaf") for i in ids)


def test_child_without_data_sees_empty_sys_data(sysenv):
    m = load(
        sysenv,
        'apply { name = "child.lua" }\n',
        **{
            "child.lua": 'exec { name = "empty=" .. tostring(next(sys.data) == nil), command = "true" }\n'
        },
    )
    assert m.get("exec#empty=true") is not None


def test_child_in_subdirectory_resolves_its_paths_beside_itself(sysenv):
    sysenv.write("sub/files/motd", "hi\n")
    m = load(
        sysenv,
        HEADER + 'apply { name = "sub/child.lua" }\n',
        **{
            "sub__child.lua": HEADER
            + """\
file { path = "~/motd", source = "files/motd" }
apply { name = "grand.lua" }
""",
            "sub__grand.lua": 'exec { name = "grand", command = "true" }\n',
        },
    )
    assert m.get(f"file#{sysenv.home}/motd").get("source") == f"{sysenv.work}/sub/files/motd"
    # apply names are relative to the manifest that declares them
    assert m.get(aid(sysenv, "sub/grand.lua")) is not None
    assert m.get("exec#grand").parent == aid(sysenv, "sub/grand.lua")


YAML_CHILD = """\
data:
  color: white
  greeting: hello
ccm:
  resources:
    - file:
        - defaults: { owner: "{{ lookup('facts.user.name') }}", group: "{{ lookup('facts.user.group') }}", mode: "0644" }
        - "{{ lookup('env.HOME') }}/prompt.txt":
            content: "{{ lookup('data.greeting') }} in {{ lookup('data.color') }}"
    - exec:
        name: "echo {{ lookup('data.color') }}"
        refreshonly: true
"""


def test_yaml_child_gets_data_merged_over_its_own(sysenv):
    m = load(
        sysenv,
        HEADER + 'apply { name = "prompt.yaml", data = { color = "cyan" } }\n',
        **{"prompt.yaml": YAML_CHILD},
    )
    # the apply's data wins; the child's own data fills the rest
    assert content(m, sysenv, "prompt.txt") == "hello in cyan"
    exec_item = m.get("exec#echo cyan")
    assert exec_item is not None and exec_item.get("refresh_only") is True
    assert exec_item.parent == aid(sysenv, "prompt.yaml")
    assert m.get(f"file#{sysenv.home}/prompt.txt").parent == aid(sysenv, "prompt.yaml")


def test_yaml_child_without_data_uses_its_own(sysenv):
    m = load(sysenv, HEADER + 'apply { name = "prompt.yaml" }\n', **{"prompt.yaml": YAML_CHILD})
    assert content(m, sysenv, "prompt.txt") == "hello in white"
    assert m.get("exec#echo white") is not None


def test_yaml_child_applies_a_lua_grandchild_with_data(sysenv):
    m = load(
        sysenv,
        'apply { name = "mid.yaml", data = { who = "root" } }\n',
        **{
            "mid.yaml": """\
ccm:
  resources:
    - apply:
        - leaf.lua:
            data:
              from: "{{ lookup('data.who') }}-via-yaml"
""",
            "leaf.lua": 'exec { name = "leaf-from=" .. sys.data.from, command = "true" }\n',
        },
    )
    item = m.get("exec#leaf-from=root-via-yaml")
    assert item is not None
    assert item.parent == aid(sysenv, "leaf.lua")
    assert m.get(aid(sysenv, "leaf.lua")).parent == aid(sysenv, "mid.yaml")


# ---------------------------------------------------------------------------
# parents
# ---------------------------------------------------------------------------


def test_items_are_marked_with_their_apply_parent(sysenv):
    m = load(
        sysenv,
        HEADER
        + """\
exec { name = "root-item", command = "true" }
apply { name = "a.lua" }
apply { name = "b.yaml" }
""",
        **{
            "a.lua": 'exec { name = "from-a", command = "true" }\napply { name = "a2.lua" }\n',
            "a2.lua": 'exec { name = "from-a2", command = "true" }\n',
            "b.yaml": 'ccm:\n  resources:\n    - exec:\n        name: from-b\n        command: "true"\n',
        },
    )
    a, a2, b = aid(sysenv, "a.lua"), aid(sysenv, "a2.lua"), aid(sysenv, "b.yaml")
    assert m.get("exec#root-item").parent is None
    assert m.get(a).parent is None and m.get(b).parent is None
    assert m.get("exec#from-a").parent == a
    assert m.get(a2).parent == a
    assert m.get("exec#from-a2").parent == a2
    assert m.get("exec#from-b").parent == b


def test_same_child_from_two_parents_is_not_a_cycle(sysenv):
    m = load(
        sysenv,
        'apply { name = "a.lua" }\napply { name = "b.lua" }\n',
        **{
            "a.lua": 'apply { name = "common.lua" }\n',
            "b.lua": 'apply { name = "common.lua" }\n',
            "common.lua": 'exec { name = "shared", command = "true" }\n',
        },
    )
    assert m.get("exec#shared").parent == aid(sysenv, "common.lua")
    assert m.get(aid(sysenv, "common.lua")) is not None


# ---------------------------------------------------------------------------
# noop strengthening (seed table)
# ---------------------------------------------------------------------------

NOOP_ROWS = [
    # parent noop, child `noop` property, effective child noop, warning?
    (True, "false", True, True),
    (True, "true", True, False),
    (False, "true", True, False),
    (False, "false", False, False),
    (True, None, True, False),  # child does not ask: no warning, parent's noop applies
    (False, None, False, False),
]


@pytest.mark.parametrize("parent_noop,child_prop,effective,warns", NOOP_ROWS)
def test_noop_strengthening_table(sysenv, parent_noop, child_prop, effective, warns):
    # The parent is itself a child, so its noop mode comes from its own apply.
    root = f'apply {{ name = "parent.lua", noop = {str(parent_noop).lower()} }}\n'
    root += 'exec { name = "root-after", command = "true" }\n'
    child_noop = "" if child_prop is None else f", noop = {child_prop}"
    parent = f'exec {{ name = "in-parent", command = "true" }}\napply {{ name = "child.lua"{child_noop} }}\n'
    m = load(
        sysenv,
        root,
        **{
            "parent.lua": parent,
            "child.lua": 'exec { name = "in-child", command = "true" }\n',
        },
    )
    assert m.get("exec#in-parent").noop is parent_noop
    assert m.get("exec#in-child").noop is effective
    # child noop never leaks to what follows in the root
    assert m.get("exec#root-after").noop is False
    noop_warnings = [w for w in m.warnings if "noop" in w]
    if warns:
        assert len(noop_warnings) == 1
        assert "child.lua" in noop_warnings[0] and "noop stays on" in noop_warnings[0]
    else:
        assert noop_warnings == []


def test_noop_child_does_not_leak_to_sibling(sysenv):
    m = load(
        sysenv,
        'apply { name = "quiet.lua", noop = true }\napply { name = "loud.lua" }\n',
        **{
            "quiet.lua": 'exec { name = "q", command = "true" }\n',
            "loud.lua": 'exec { name = "l", command = "true" }\n',
        },
    )
    assert m.get("exec#q").noop is True
    assert m.get("exec#l").noop is False


def test_noop_weakening_warning_is_printed_by_plan(sysenv):
    sysenv.write("sys.lua", 'apply { name = "parent.lua", noop = true }\n')
    sysenv.write("parent.lua", 'apply { name = "child.lua", noop = false }\n')
    sysenv.write("child.lua", 'exec { name = "in-child", command = "true" }\n')
    r = sysenv.run("plan")
    assert r.returncode == 0, r.stderr
    assert "Warning:" in r.stderr and "noop stays on" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("parent_hco,child_prop,effective,warns", NOOP_ROWS)
def test_health_check_only_strengthening_table(sysenv, parent_hco, child_prop, effective, warns):
    root = f'apply {{ name = "parent.lua", health_check_only = {str(parent_hco).lower()} }}\n'
    child_hco = "" if child_prop is None else f", health_check_only = {child_prop}"
    m = load(
        sysenv,
        root,
        **{
            "parent.lua": f'exec {{ name = "in-parent", command = "true" }}\napply {{ name = "child.lua"{child_hco} }}\n',
            "child.lua": 'exec { name = "in-child", command = "true" }\n',
        },
    )
    assert m.get("exec#in-parent").health_check_only is parent_hco
    assert m.get("exec#in-child").health_check_only is effective
    hco_warnings = [w for w in m.warnings if "health_check_only" in w]
    assert len(hco_warnings) == (1 if warns else 0)


# ---------------------------------------------------------------------------
# depth limit on real nesting
# ---------------------------------------------------------------------------


def chain(sysenv, n: int) -> None:
    """sys.lua -> c1.lua -> ... -> cn.lua, n distinct files nested under sys.lua."""
    sysenv.write("sys.lua", 'apply { name = "c1.lua" }\n')
    for i in range(1, n + 1):
        body = f'exec {{ name = "level-{i}", command = "true" }}\n'
        if i < n:
            body += f'apply {{ name = "c{i + 1}.lua" }}\n'
        sysenv.write(f"c{i}.lua", body)


def test_default_depth_limit_is_ten():
    assert DEFAULT_MAX_DEPTH == 10
    assert Options().max_depth == 10


def test_chain_of_ten_nested_children_passes(sysenv):
    chain(sysenv, 10)
    m = resolve(sysenv.work / "sys.lua", Options())
    assert item_of(m, "exec#level-10").parent == aid(sysenv, "c10.lua")
    assert item_of(m, aid(sysenv, "c10.lua")).parent == aid(sysenv, "c9.lua")


def test_chain_of_eleven_nested_children_fails(sysenv):
    chain(sysenv, 11)
    with pytest.raises(ConfigError) as err:
        resolve(sysenv.work / "sys.lua", Options())
    msg = err.value.render()
    assert "nesting depth 11 exceeds the limit of 10" in msg
    assert msg.startswith("c10.lua:2:")
    assert "sys.lua -> c1.lua -> c2.lua" in msg and "c11.lua" in msg
    assert err.value.exit_code == 2


@pytest.mark.parametrize("limit", [1, 3, 5])
def test_max_depth_option_boundary(sysenv, limit):
    chain(sysenv, limit)
    m = resolve(sysenv.work / "sys.lua", Options(max_depth=limit))
    assert m.get(f"exec#level-{limit}") is not None
    chain(sysenv, limit + 1)
    with pytest.raises(
        ConfigError, match=f"nesting depth {limit + 1} exceeds the limit of {limit}"
    ):
        resolve(sysenv.work / "sys.lua", Options(max_depth=limit))


def test_many_siblings_are_not_depth(sysenv):
    """Depth counts nesting, not the number of applies."""
    root = "".join(f'apply {{ name = "s{i}.lua" }}\n' for i in range(15))
    files = {f"s{i}.lua": f'exec {{ name = "sib-{i}", command = "true" }}\n' for i in range(15)}
    m = load(sysenv, root, Options(max_depth=1), **files)
    assert all(m.get(f"exec#sib-{i}") is not None for i in range(15))


def test_max_depth_flag_on_the_cli(sysenv):
    chain(sysenv, 4)
    ok = sysenv.run("plan", "--max-depth", "4")
    assert ok.returncode == 0, ok.stderr
    assert "exec level-4" in ok.stdout
    before = tree(sysenv.home), tree(sysenv.root)
    bad = sysenv.run("plan", "--max-depth", "3")
    assert bad.returncode == 2
    assert "nesting depth 4 exceeds the limit of 3" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert (tree(sysenv.home), tree(sysenv.root)) == before
    zero = sysenv.run("plan", "--max-depth", "0")
    assert zero.returncode == 2 and "Traceback" not in zero.stderr


# ---------------------------------------------------------------------------
# cycles and allow_apply
# ---------------------------------------------------------------------------


def test_self_include_is_a_cycle(sysenv):
    sysenv.write("sys.lua", 'exec { name = "x", command = "true" }\napply { name = "sys.lua" }\n')
    with pytest.raises(ConfigError) as err:
        resolve(sysenv.work / "sys.lua", Options())
    msg = err.value.render()
    assert msg.startswith("sys.lua:2: apply: manifest cycle: sys.lua -> sys.lua")
    assert "depth" not in msg


def test_self_include_with_huge_max_depth_is_still_a_cycle(sysenv):
    sysenv.write("sys.lua", 'apply { name = "./sys.lua" }\n')
    with pytest.raises(ConfigError, match="manifest cycle"):
        resolve(sysenv.work / "sys.lua", Options(max_depth=1000))


def test_child_including_itself_is_a_cycle(sysenv):
    sysenv.write("sys.lua", 'apply { name = "loop.yaml" }\n')
    sysenv.write("loop.yaml", "ccm:\n  resources:\n    - apply:\n        - loop.yaml: {}\n")
    with pytest.raises(ConfigError) as err:
        resolve(sysenv.work / "sys.lua", Options())
    assert "manifest cycle: loop.yaml -> loop.yaml" in err.value.render()


def test_allow_apply_false_rejects_nested_apply(sysenv):
    sysenv.write("sys.lua", 'apply { name = "child.lua", allow_apply = false }\n')
    sysenv.write(
        "child.lua", 'exec { name = "c", command = "true" }\napply { name = "grand.lua" }\n'
    )
    sysenv.write("grand.lua", 'exec { name = "g", command = "true" }\n')
    with pytest.raises(ConfigError) as err:
        resolve(sysenv.work / "sys.lua", Options())
    msg = err.value.render()
    assert "allow_apply" in msg
    assert msg.startswith("child.lua:2:")


def test_allow_apply_true_permits_nested_apply(sysenv):
    sysenv.write("sys.lua", 'apply { name = "child.lua", allow_apply = true }\n')
    sysenv.write("child.lua", 'apply { name = "grand.lua" }\n')
    sysenv.write("grand.lua", 'exec { name = "g", command = "true" }\n')
    m = resolve(sysenv.work / "sys.lua", Options())
    assert item_of(m, "exec#g").parent == aid(sysenv, "grand.lua")
