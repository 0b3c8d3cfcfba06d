"""CCM manifests: order, fail_on_error, alias, control, JSON, annotations, warnings.

The corpus (test_ccm_corpus.py) runs whole manifests through the CLI; these
tests pin down what it does not: the DAG and scheduler semantics of the
ordering edges, what stays an error in Lua, what a rejected manifest leaves
on disk, and the annotation validators one by one.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from conftest import out, tree

from syslua.errors import ConfigError
from syslua.eval import data_annotations as notes
from syslua.execute import scheduler
from syslua.execute.item import CHANGED, FAILED, SKIPPED, ItemResult
from syslua.manifest.model import Item, Manifest, freeze
from syslua.manifest.resolve import Options, resolve
from syslua.plan.dag import Dag


def write(sysenv: Any, name: str, text: str):  # type: ignore[no-untyped-def]
    return sysenv.write(name, textwrap.dedent(text).lstrip("\n"), dedent=False)


def execs(spec: dict[str, dict[str, Any]]) -> Manifest:
    items = [
        Item("exec", name, freeze({"command": "true", **props})) for name, props in spec.items()
    ]
    return Manifest(items=tuple(sorted(items, key=lambda i: i.id)))


def run_all(m: Manifest, failing: set[str]) -> dict[str, ItemResult]:
    def run(ident: str) -> ItemResult:
        status = FAILED if ident in failing else CHANGED
        return ItemResult(ident, "exec", ident, status, status)

    done = scheduler.execute(Dag.from_manifest(m), m, run, jobs=1, stop_on_failure=True)
    return {r.id: r for r in done}


# ---------------------------------------------------------------------------
# the scheduler: ordering edges and fail_on_error
# ---------------------------------------------------------------------------


def test_an_ordering_edge_orders_but_a_failure_does_not_skip_through_it():
    m = execs(
        {
            "a": {"fail_on_error": False},
            "b": {"after": ("exec#a",), "fail_on_error": False},
            "c": {"after": ("exec#b",), "fail_on_error": False},
        }
    )
    dag = Dag.from_manifest(m)
    assert dag.waves() == [["exec#a"], ["exec#b"], ["exec#c"]]
    done = run_all(m, {"exec#a"})
    assert [done[i].status for i in ("exec#a", "exec#b", "exec#c")] == [FAILED, CHANGED, CHANGED]


def test_a_real_dependency_still_skips_with_fail_on_error_false():
    m = execs(
        {
            "a": {"fail_on_error": False},
            "b": {"after": ("exec#a",), "depends_on": ("exec#a",), "fail_on_error": False},
        }
    )
    done = run_all(m, {"exec#a"})
    assert done["exec#b"].status == SKIPPED
    assert done["exec#b"].message == "skipped because exec#a failed"


def test_fail_on_error_true_starts_nothing_after_the_failure():
    m = execs({"a": {}, "b": {"after": ("exec#a",)}, "c": {"after": ("exec#b",)}})
    done = run_all(m, {"exec#a"})
    assert done["exec#b"].message == "not started: another item failed"
    assert done["exec#c"].status == SKIPPED


def test_an_interrupt_stops_items_with_fail_on_error_false_too():
    m = execs({"a": {"fail_on_error": False}, "b": {"fail_on_error": False}})
    ran: list[str] = []

    def run(ident: str) -> ItemResult:
        ran.append(ident)
        return ItemResult(ident, "exec", ident, FAILED, FAILED)

    done = scheduler.execute(Dag.from_manifest(m), m, run, jobs=1, should_stop=lambda: bool(ran))
    assert ran == ["exec#a"]
    assert {r.id: r.message for r in done}["exec#b"] == "not started: interrupted"


def test_a_require_reaching_forward_drops_only_the_conflicting_order_edges():
    m = execs(
        {
            "a": {"depends_on": ("exec#b",)},
            "b": {"after": ("exec#a",)},
            "c": {"after": ("exec#b",)},
        }
    )
    dag = Dag.from_manifest(m)
    assert dag.waves() == [["exec#b"], ["exec#a", "exec#c"]]


def test_a_real_cycle_is_still_an_error_with_order_edges():
    m = execs(
        {
            "a": {"depends_on": ("exec#b",)},
            "b": {"depends_on": ("exec#a",), "after": ("exec#a",)},
        }
    )
    with pytest.raises(ConfigError, match="dependency cycle"):
        Dag.from_manifest(m)


# ---------------------------------------------------------------------------
# what only CCM manifests may do
# ---------------------------------------------------------------------------


def test_lua_cannot_set_the_ccm_only_properties(sysenv):
    sysenv.write("sys.lua", 'exec { name = "x", command = "true", after = { "exec#y" } }\n')
    res = sysenv.run("plan")
    assert res.returncode == 2
    assert "unknown property `after` for exec" in out(res)


def test_lua_subscribe_to_an_undeclared_item_is_still_an_error(sysenv):
    sysenv.write(
        "sys.lua", 'exec { name = "x", command = "true", subscribe = { "exec#missing" } }\n'
    )
    res = sysenv.run("plan")
    assert res.returncode == 2
    assert "`subscribe` names exec#missing, which is not declared" in out(res)


def test_lua_configs_keep_their_parallel_waves(sysenv):
    sysenv.write(
        "sys.lua",
        'exec { name = "a", command = "true" }\nexec { name = "b", command = "true" }\n',
    )
    res = sysenv.run("plan")
    assert "[Wave 1] a, b - parallel" in res.stdout


def test_a_yaml_child_of_a_lua_config_runs_in_order_and_keeps_going(sysenv):
    sysenv.write("sys.lua", 'apply { name = "child.yaml" }\n')
    write(
        sysenv,
        "child.yaml",
        """
        ccm:
          resources:
            - exec:
                - boom: {command: /bin/false}
                - later:
                    command: echo later >> ~/log
                    provider: shell
        """,
    )
    res = sysenv.run("apply")
    assert res.returncode == 1
    assert (sysenv.home / "log").read_text() == "later\n"
    assert "exec later: executed" in res.stdout


def test_the_previous_resource_and_fail_on_error_are_recorded(sysenv):
    path = write(
        sysenv,
        "m.yaml",
        """
        ccm:
          fail_on_error: true
          resources:
            - exec:
                - a: {command: /bin/true}
            - exec:
                name: b
                command: /bin/true
        """,
    )
    m = resolve(path, Options())
    a, b = m.get("exec#a"), m.get("exec#b")
    assert a is not None and b is not None
    assert "after" not in a.props and a.get("fail_on_error") is True
    assert b.get("after") == ("exec#a",)


def test_a_skipped_by_control_resource_is_not_an_item_and_the_next_follows_the_one_before(
    sysenv,
):
    path = write(
        sysenv,
        "m.yaml",
        """
        ccm:
          resources:
            - exec:
                - a: {command: /bin/true}
                - b: {command: /bin/true, control: {if: false}}
                - c: {command: /bin/true}
        """,
    )
    m = resolve(path, Options())
    assert "exec#b" not in m
    c = m.get("exec#c")
    assert c is not None and c.get("after") == ("exec#a",)
    assert m.skipped == (("exec b", "if: false is false", "m.yaml:5"),)


def test_plan_json_lists_resources_skipped_by_control(sysenv):
    import json

    write(
        sysenv,
        "m.yaml",
        """
        ccm:
          resources:
            - exec:
                - a: {command: /bin/true, control: {unless: true}}
            - package:
                - hello: {control: {if: false}}
        """,
    )
    res = sysenv.run("plan", "--json", "m.yaml")
    assert res.returncode == 0, out(res)
    data = json.loads(res.stdout)
    assert data["skipped_by_control"] == [
        {"subject": "exec a", "reason": "unless: true is true", "declared_at": "m.yaml:4"},
        {"subject": "os_package hello", "reason": "if: false is false", "declared_at": "m.yaml:6"},
    ]


def test_control_that_cannot_be_evaluated_names_the_expression(sysenv):
    write(
        sysenv,
        "m.yaml",
        """
        ccm:
          resources:
            - exec:
                - a:
                    command: /bin/true
                    control: {if: "lookup('data.missing')"}
        """,
    )
    res = sysenv.run("plan", "m.yaml")
    assert res.returncode == 2
    assert "m.yaml:4: exec a: control.if:" in out(res)
    assert "data.missing" in out(res)


# ---------------------------------------------------------------------------
# JSON manifests
# ---------------------------------------------------------------------------


def test_invalid_json_is_an_error_with_its_line_and_nothing_changes(sysenv):
    sysenv.write("m.json", '{\n  "ccm": {\n    "resources": [,]\n  }\n}\n')
    before = tree(sysenv.home)
    res = sysenv.run("apply", "m.json")
    assert res.returncode == 2
    assert "m.json:3: invalid JSON" in out(res)
    assert tree(sysenv.home) == before


def test_a_json_child_of_a_lua_config(sysenv):
    sysenv.write("sys.lua", 'apply { name = "child.json", data = { word = "hi" } }\n')
    sysenv.write(
        "child.json",
        '{"ccm": {"resources": [{"exec": {"name": "say", "command": '
        '"echo {{ lookup(\'data.word\') }} > ~/said", "provider": "shell"}}]}}\n',
    )
    res = sysenv.run("apply")
    assert res.returncode == 0, out(res)
    assert (sysenv.home / "said").read_text() == "hi\n"


def test_json_errors_point_at_the_line_of_the_resource(sysenv):
    sysenv.write(
        "m.json",
        '{\n  "ccm": {\n    "resources": [\n      {"scaffold": {"name": "x"}}\n    ]\n  }\n}\n',
    )
    res = sysenv.run("plan", "m.json")
    assert res.returncode == 2
    assert "m.json:4: resource type `scaffold` is not supported" in out(res)


# ---------------------------------------------------------------------------
# types syslua lacks, source over content, symlinks
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["scaffold", "cron"])
def test_types_syslua_lacks_are_refused_at_their_line_and_nothing_changes(sysenv, kind):
    write(
        sysenv,
        "m.yaml",
        f"""
        ccm:
          resources:
            - exec:
                - first:
                    command: echo ran > ~/ran
                    provider: shell
            - {kind}:
                name: thing
        """,
    )
    before = tree(sysenv.home)
    res = sysenv.run("apply", "m.yaml")
    assert res.returncode == 2
    assert f"Error: m.yaml:7: resource type `{kind}` is not supported" in out(res)
    assert tree(sysenv.home) == before


def test_source_with_content_in_lua_stays_an_error(sysenv):
    sysenv.write("a.txt", "a\n")
    sysenv.write(
        "sys.lua",
        'file { path = "~/x", source = "a.txt", content = "b", '
        'owner = sys.user.name, group = sys.user.group, mode = "0644" }\n',
    )
    res = sysenv.run("plan")
    assert res.returncode == 2
    assert "`content` and `source` are mutually exclusive" in out(res)


def test_an_attribute_only_file_does_not_replace_a_symlink_in_lua_either(sysenv):
    target = sysenv.home / "real"
    target.write_text("keep me\n")
    (sysenv.home / "link").symlink_to(target)
    sysenv.write(
        "sys.lua",
        'file { path = "~/link", owner = sys.user.name, group = sys.user.group, mode = "0600" }\n',
    )
    before = tree(sysenv.home)
    plan = sysenv.run("plan")
    assert "! file ~/link: is a symlink to" in plan.stdout
    res = sysenv.run("apply")
    assert res.returncode == 1
    assert "a file with only owner, group and mode would replace it" in out(res)
    assert tree(sysenv.home) == before


def test_a_file_with_content_still_replaces_a_symlink(sysenv):
    (sysenv.home / "link").symlink_to("/etc/hostname")
    sysenv.write(
        "sys.lua",
        'file { path = "~/link", content = "mine\\n", owner = sys.user.name, '
        'group = sys.user.group, mode = "0644" }\n',
    )
    res = sysenv.run("apply")
    assert res.returncode == 0, out(res)
    assert not (sysenv.home / "link").is_symlink()
    assert (sysenv.home / "link").read_text() == "mine\n"


# ---------------------------------------------------------------------------
# --monitor-only
# ---------------------------------------------------------------------------


def test_monitor_only_is_health_check_only(sysenv):
    sysenv.write(
        "sys.lua",
        'file { path = "~/x", content = "x", owner = sys.user.name, group = sys.user.group, '
        'mode = "0644", health_checks = { { command = "sh -c \'exit 2\'" } } }\n',
    )
    res = sysenv.run("apply", "--monitor-only")
    assert res.returncode == 1
    assert not (sysenv.home / "x").exists()
    help_text = sysenv.run("apply", "--help").stdout
    assert "--monitor-only" in help_text


# ---------------------------------------------------------------------------
# annotations
# ---------------------------------------------------------------------------

ANNOTATED = """
data:
  # The user.
  # @require
  user: bob
  web:
    # @validate isInt(value)
    port: 8080
    text: |
      # @require
      not: a key
    # @validate isIPv4(value)
    listen: 10.0.0.1
  list:
    # @require
    - a
  # @bogus
  other: 1
ccm: {}
"""


def test_annotations_are_read_from_the_data_section_only():
    found = notes.read(textwrap.dedent(ANNOTATED))
    assert [(a.path, a.directive, a.argument) for a in found] == [
        (("user",), "require", ""),
        (("web", "port"), "validate", "isInt(value)"),
        (("web", "listen"), "validate", "isIPv4(value)"),
        (("other",), "bogus", ""),
    ]


@pytest.mark.parametrize(
    "expr,value,ok",
    [
        ("isIP(value)", "::1", True),
        ("isIPv4(value)", "::1", False),
        ("is_ipv6(value)", "::1", True),
        ("isInt(value)", "-12", True),
        ("isInt(value)", "1.5", False),
        ("isFloat(value)", "1.5", True),
        ("isDuration(value)", "1h30m", True),
        ("isDuration(value)", "soon", False),
        ('isRegex(value, "^[a-z]+$")', "web", True),
        ('isRegex(value, "^[a-z]+$")', "Web1", False),
        ("isShellSafe(value)", "/usr/bin/thing --flag", True),
        ("isShellSafe(value)", "a; rm -rf /", False),
        ("isHostname(value)", "web-01", True),
        ("isHostname(value)", "-bad", False),
        ("isFQDN(value)", "web.example.net", True),
        ("isFQDN(value)", "web", False),
        ("isIPv4(value) || isIPv6(value)", "fe80::1", True),
        ("isInt(value) && !isIPv4(value)", "12", True),
        ("not isInt(value)", "x", True),
    ],
)
def test_validators(expr, value, ok):
    assert notes.evaluate(expr, value) is ok


@pytest.mark.parametrize(
    "expr", ["__import__('os')", "value.upper()", "open(value)", "isInt(value", "nope(value)"]
)
def test_validation_expressions_are_sandboxed(expr):
    with pytest.raises(ValueError):
        notes.evaluate(expr, "x")


def test_a_failed_annotation_changes_nothing_and_names_the_key(sysenv):
    write(
        sysenv,
        "m.yaml",
        """
        data:
          web:
            # @validate isInt(value)
            port: eighty
        ccm:
          resources:
            - exec:
                - a:
                    command: echo ran > ~/ran
                    provider: shell
        """,
    )
    before = tree(sysenv.home)
    res = sysenv.run("apply", "m.yaml")
    assert res.returncode == 2
    assert "m.yaml:3: data.web.port: @validate isInt(value): 'eighty' is not valid" in out(res)
    assert tree(sysenv.home) == before


def test_annotations_check_the_data_after_the_parent_apply_merged_its_own(sysenv):
    sysenv.write("sys.lua", 'apply { name = "child.yaml", data = { port = "http" } }\n')
    write(
        sysenv,
        "child.yaml",
        """
        data:
          # @validate isInt(value)
          port: 80
        ccm: {}
        """,
    )
    res = sysenv.run("plan")
    assert res.returncode == 2
    assert "data.port: @validate isInt(value): 'http' is not valid" in out(res)


def test_lua_subscribe_to_a_type_syslua_lacks_stays_an_error(sysenv):
    sysenv.write("sys.lua", 'exec { name = "x", command = "true", subscribe = { "cron#nginx" } }\n')
    res = sysenv.run("plan")
    assert res.returncode == 2
    assert "names an unknown type `cron`" in out(res)


@pytest.mark.parametrize(
    "expression,shown",
    [("Data.nothing", "got nil"), ("Data.name", 'got "web01"'), ("Data.n", "got 3")],
)
def test_control_that_is_not_a_boolean_shows_the_value_as_expressions_write_it(
    sysenv, expression, shown
):
    write(
        sysenv,
        "m.yaml",
        f"""
        data:
          nothing: null
          name: web01
          n: 3
        ccm:
          resources:
            - exec:
                - a:
                    command: /bin/true
                    control: {{if: "{expression}"}}
        """,
    )
    before = tree(sysenv.home)
    res = sysenv.run("plan", "m.yaml")
    assert res.returncode == 2
    assert (
        f"m.yaml:8: exec a: control.if: the expression `{expression}` must give true or false, {shown}"
        in out(res)
    )
    assert "None" not in out(res)
    assert tree(sysenv.home) == before


def test_a_require_of_an_undeclared_resource_is_named_require_in_yaml(sysenv):
    write(
        sysenv,
        "m.yaml",
        """
        ccm:
          resources:
            - exec:
                - a:
                    command: /bin/true
                    require: [exec#nothere]
        """,
    )
    res = sysenv.run("plan", "m.yaml")
    assert res.returncode == 2
    assert "m.yaml:4: exec a: `require` names exec#nothere, which is not declared" in out(res)


def test_a_depends_on_of_an_undeclared_item_keeps_its_lua_name(sysenv):
    sysenv.write(
        "sys.lua", 'exec { name = "a", command = "/bin/true", depends_on = { "exec#nothere" } }'
    )
    res = sysenv.run("plan")
    assert res.returncode == 2
    assert "sys.lua:1: exec a: `depends_on` names exec#nothere, which is not declared" in out(res)


def test_a_require_of_a_resource_skipped_by_control_is_met_as_in_ccm(sysenv):
    """CCM skips a resource only when what it requires failed; one that control
    left out did not fail, so the resource that requires it (by name or
    alias) still runs, and a subscription to it never triggers."""
    write(
        sysenv,
        "m.yaml",
        f"""
        ccm:
          resources:
            - exec:
                - apt-update:
                    command: /bin/true
                    alias: index
                    control: {{if: false}}
                - {sysenv.home}/ran-by-name:
                    command: /bin/touch {sysenv.home}/ran-by-name
                    creates: {sysenv.home}/ran-by-name
                    require: [exec#apt-update]
                - {sysenv.home}/ran-by-alias:
                    command: /bin/touch {sysenv.home}/ran-by-alias
                    creates: {sysenv.home}/ran-by-alias
                    require: exec#index
                - reload:
                    command: /bin/touch {sysenv.home}/reloaded
                    refreshonly: true
                    subscribe: [exec#index]
        """,
    )
    res = sysenv.run("apply", "m.yaml")
    assert res.returncode == 0, out(res)
    assert "exec apt-update: skipped by control (if: false is false)" in out(res)
    assert "Warning" not in out(res)
    assert (sysenv.home / "ran-by-name").exists()
    assert (sysenv.home / "ran-by-alias").exists()
    assert not (sysenv.home / "reloaded").exists()


def test_a_require_of_a_resource_skipped_by_control_in_lua_stays_an_error(sysenv):
    write(
        sysenv,
        "child.yaml",
        "ccm:\n  resources:\n    - exec:\n        - a: {command: /bin/true, control: {if: false}}\n",
    )
    sysenv.write(
        "sys.lua",
        'apply { name = "child.yaml" }\nexec { name = "b", command = "/bin/true", depends_on = { "exec#a" } }',
    )
    before = tree(sysenv.home)
    res = sysenv.run("plan")
    assert res.returncode == 2
    assert "exec b: `depends_on` names exec#a, which is not declared" in out(res)
    assert tree(sysenv.home) == before


def test_a_forward_require_moves_what_is_needed_before_and_keeps_one_at_a_time(sysenv):
    """`a` needs `c`, which needs `d`: d and c move to just before a; every
    resource still runs after the one before it, none in parallel."""
    write(
        sysenv,
        "m.yaml",
        """
        ccm:
          resources:
            - exec:
                - a: {command: /bin/true, require: [exec#c]}
                - b: {command: /bin/true}
                - c: {command: /bin/true, require: [exec#d]}
                - d: {command: /bin/true}
                - e: {command: /bin/true, subscribe: [exec#a]}
        """,
    )
    res = sysenv.run("plan", "--json", "m.yaml")
    assert res.returncode == 0, out(res)
    import json

    waves = json.loads(res.stdout)["plan"]["waves"]
    assert waves == [["exec#d"], ["exec#c"], ["exec#a"], ["exec#b"], ["exec#e"]]


def test_a_forward_subscribe_through_an_alias_keeps_the_rest_in_order(sysenv):
    write(
        sysenv,
        "m.yaml",
        f"""
        ccm:
          resources:
            - exec:
                - reload: {{command: /bin/true, refreshonly: true, subscribe: [file#cfg]}}
            - file:
                - {sysenv.home}/c.conf:
                    alias: cfg
                    owner: "{{{{ lookup('facts.user.name') }}}}"
                    group: "{{{{ lookup('facts.user.group') }}}}"
                    mode: "0644"
                    content: x
            - exec:
                - last: {{command: /bin/true}}
        """,
    )
    res = sysenv.run("plan", "m.yaml")
    assert res.returncode == 0, out(res)
    assert "[Wave 1] ~/c.conf\n  [Wave 2] reload\n  [Wave 3] last\n" in res.stdout
