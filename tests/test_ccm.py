"""CCM-format YAML manifests (SPEC section 5, seeds file/exec/apply-resource.md).

Real YAML files are written into a temp work dir and resolved with the real
resolver, as a root config or as an `apply` child of a sys.lua. Data
resolution (`data`, `hierarchy`, `overrides`) is also checked directly on
`ccm.resolve_data` with a table of cases.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import yaml
from conftest import item_of

from syslua.errors import ConfigError, Source
from syslua.eval import ccm
from syslua.manifest.model import Manifest, thaw
from syslua.manifest.resolve import Options, resolve


def write(sysenv: Any, name: str, text: str):
    return sysenv.write(name, textwrap.dedent(text).lstrip("\n"), dedent=False)


def load(sysenv: Any, text: str, name: str = "m.yaml", **options: Any) -> Manifest:
    return resolve(write(sysenv, name, text), Options(**options))


def failure(sysenv: Any, text: str, name: str = "m.yaml") -> ConfigError:
    path = write(sysenv, name, text)
    with pytest.raises(ConfigError) as info:
        resolve(path, Options())
    assert type(info.value) is ConfigError
    assert "Traceback" not in info.value.render()
    return info.value


def line_of(text: str, needle: str) -> int:
    lines = textwrap.dedent(text).lstrip("\n").splitlines()
    hits = [i for i, ln in enumerate(lines, 1) if needle in ln]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def props(m: Manifest, ident: str) -> dict[str, Any]:
    item = m.get(ident)
    assert item is not None, f"{ident} not in {[i.id for i in m]}"
    return thaw(item.props)


# ---------------------------------------------------------------------------
# both resource forms
# ---------------------------------------------------------------------------

BOTH_FORMS = """
ccm:
  resources:
    - file:
        name: /srv/map-form
        ensure: present
        content: from the map form
        owner: root
        group: root
        mode: "0644"
    - file:
        - /srv/list-a:
            contents: from the list form
            owner: app
            group: app
            mode: "0640"
        - /srv/list-b:
            ensure: absent
    - exec:
        name: map-exec
        command: echo hi
    - exec:
        - "echo from-a-bare-entry":
        - second:
            command: "true"
            returns: [0, 2]
    - user:
        - bob:
            groups: [wheel]
    - package:
        name: zsh
        ensure: "5.9"
"""


def test_both_resource_forms(sysenv):
    m = load(sysenv, BOTH_FORMS)
    assert [i.id for i in m] == [
        "exec#echo from-a-bare-entry",
        "exec#map-exec",
        "exec#second",
        "file#/srv/list-a",
        "file#/srv/list-b",
        "file#/srv/map-form",
        "os_package#zsh",
        "user#bob",
    ]
    assert props(m, "file#/srv/map-form") == {
        "ensure": "present",
        "content": "from the map form",
        "owner": "root",
        "group": "root",
        "mode": "0644",
        "provider": "posix",
        "force": False,
        "fail_on_error": False,
    }
    assert props(m, "file#/srv/list-a")["content"] == "from the list form"
    assert props(m, "file#/srv/list-a")["mode"] == "0640"
    assert props(m, "file#/srv/list-b") == {
        "ensure": "absent",
        "provider": "posix",
        "force": False,
        "after": ["file#/srv/list-a"],
        "fail_on_error": False,
    }
    assert props(m, "exec#map-exec")["command"] == "echo hi"
    assert props(m, "exec#echo from-a-bare-entry")["command"] == "echo from-a-bare-entry"
    assert props(m, "exec#second")["returns"] == [0, 2]
    assert props(m, "user#bob")["groups"] == ["wheel"]
    # CCM's package is an OS package: syslua's os_package
    assert props(m, "os_package#zsh") == {
        "ensure": "5.9",
        "after": ["user#bob"],
        "fail_on_error": False,
    }


@pytest.mark.parametrize(
    "ident,needle",
    [
        ("file#/srv/map-form", "name: /srv/map-form"),
        ("file#/srv/list-a", "- /srv/list-a:"),
        ("file#/srv/list-b", "- /srv/list-b:"),
        ("exec#map-exec", "name: map-exec"),
        ("exec#second", "- second:"),
        ("user#bob", "- bob:"),
    ],
)
def test_sources_point_at_the_yaml_lines(sysenv, ident, needle):
    m = load(sysenv, BOTH_FORMS)
    assert m.source_of(ident) == f"m.yaml:{line_of(BOTH_FORMS, needle)}"


# ---------------------------------------------------------------------------
# the `defaults` entry of a resource list
# ---------------------------------------------------------------------------

DEFAULTS = """
ccm:
  resources:
    - exec:
        - before-defaults: {}
        - defaults: {timeout: 5m, environment: ["A=1"], provider: shell}
        - after-defaults:
            provider: posix
            timeout: 10s
    - exec:
        - other-list: {}
    - file:
        - defaults: {owner: root, group: root, mode: 0640}
        - /srv/a: {content: a}
        - /srv/b: {mode: "0600"}
"""


@pytest.mark.parametrize(
    "ident,expected",
    [
        ("exec#before-defaults", {"timeout": 300, "environment": ["A=1"], "provider": "shell"}),
        ("exec#after-defaults", {"timeout": 10, "environment": ["A=1"], "provider": "posix"}),
        ("exec#other-list", {"timeout": None, "environment": None, "provider": "posix"}),
        ("file#/srv/a", {"owner": "root", "group": "root", "mode": "0640"}),
        ("file#/srv/b", {"owner": "root", "group": "root", "mode": "0600"}),
    ],
)
def test_defaults_entry_applies_to_its_own_list_only(sysenv, ident, expected):
    p = props(load(sysenv, DEFAULTS), ident)
    assert {k: p.get(k) for k in expected} == expected


def test_defaults_entry_is_not_an_item(sysenv):
    m = load(sysenv, DEFAULTS)
    assert "exec#defaults" not in m and "file#defaults" not in m
    assert len(m) == 5


def test_defaults_entry_does_not_reach_another_file_list(sysenv):
    text = """
    ccm:
      resources:
        - file:
            - defaults: {owner: root, group: root, mode: "0644"}
            - /srv/a: {}
        - file:
            - /srv/b: {}
    """
    err = failure(sysenv, text)
    n = line_of(text, "/srv/b")
    assert err.render().startswith(
        f"m.yaml:{n}: file /srv/b: missing required property `owner`\n  {n} |         - /srv/b: {{}}"
    )


def test_only_one_defaults_entry_per_list(sysenv):
    text = """
    ccm:
      resources:
        - exec:
            - a: {}
            - defaults: {timeout: 1s}
            - defaults: {timeout: 2s}
    """
    err = failure(sysenv, text)
    n = line_of(text, "2s")
    assert (
        err.render()
        == f"m.yaml:{n}: exec: only one `defaults` entry is allowed per list\n  {n} |         - defaults: {{timeout: 2s}}"
    )


def test_a_declared_value_beats_a_defaults_entry_of_another_list(sysenv):
    m = load(
        sysenv,
        """
        ccm:
          resources:
            - exec:
                - defaults: {timeout: 1m}
                - job: {}
            - exec:
                - job: {timeout: 5s}
        """,
    )
    assert props(m, "exec#job")["timeout"] == 5


# ---------------------------------------------------------------------------
# YAML-specific values
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "yaml_value,expected",
    [
        ("0644", "0644"),
        ("0755", "0755"),
        ("0600", "0600"),
        ("644", "0644"),
        ('"0644"', "0644"),
        ('"0o750"', "0750"),
        ("0o700", "0700"),
        ("00644", "0644"),
    ],
)
def test_unquoted_modes_stay_octal(sysenv, yaml_value, expected):
    m = load(
        sysenv,
        f"""
    ccm:
      resources:
        - file:
            name: /srv/a
            owner: root
            group: root
            mode: {yaml_value}
    """,
    )
    assert props(m, "file#/srv/a")["mode"] == expected


def test_unquoted_mode_above_0777_is_rejected(sysenv):
    text = """
    ccm:
      resources:
        - file:
            name: /srv/a
            owner: root
            group: root
            mode: 04755
    """
    err = failure(sysenv, text)
    assert err.render().startswith("m.yaml:4: file: `mode`: mode 04755 exceeds maximum value 0777")


@pytest.mark.parametrize(
    "body,prop,expected",
    [
        ("{refreshonly: true}", "refresh_only", True),
        ("{refresh_only: true}", "refresh_only", True),
        ("{require: [exec#first]}", "depends_on", ["exec#first"]),
        ("{require: exec#first}", "depends_on", ["exec#first"]),
        ("{depends_on: [exec#first]}", "depends_on", ["exec#first"]),
        ("{subscribe: [exec#first]}", "subscribe", ["exec#first"]),
        ("{timeout: 30}", "timeout", 30),
        ("{timeout: 1h30m}", "timeout", 5400),
        ("{returns: [0, 1]}", "returns", [0, 1]),
        ("{returns: 3}", "returns", [3]),
        ("{environment: [CC=gcc, CFLAGS=-O2]}", "environment", ["CC=gcc", "CFLAGS=-O2"]),
        ("{environment: {CC: gcc, JOBS: 4}}", "environment", ["CC=gcc", "JOBS=4"]),
        ("{path: /usr/local/bin:/usr/bin}", "path", "/usr/local/bin:/usr/bin"),
        ("{creates: /opt/app/bin/app}", "creates", "/opt/app/bin/app"),
        (
            "{command: tar xzf /tmp/app.tar.gz -C /opt}",
            "command",
            "tar xzf /tmp/app.tar.gz -C /opt",
        ),
        ("{}", "command", "reload"),
        (
            "{health_checks: [{command: check_reload, tries: 2}]}",
            "health_checks",
            [{"command": "check_reload", "tries": 2, "try_sleep": 1}],
        ),
    ],
)
def test_exec_properties_and_ccm_aliases(sysenv, body, prop, expected):
    m = load(
        sysenv,
        f"""
    ccm:
      resources:
        - exec:
            - first: {{}}
            - reload: {body}
    """,
    )
    assert props(m, "exec#reload")[prop] == expected


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------

# (yaml text, needle of the reported line, message)
ERRORS = [
    (
        """
        resources:
          - file: {}
        """,
        "resources:",
        "unknown top-level key `resources` (expected data, hierarchy, overrides, ccm)",
    ),
    (
        """
        ccm:
          resourcez: []
        """,
        "resourcez",
        "unknown key `ccm.resourcez` (expected fail_on_error, post_message, pre_message, resources)",
    ),
    (
        """
        ccm:
          resources:
            - exec:
                name: fine
            - scaffold:
                - nginx: {}
        """,
        "- scaffold:",
        "resource type `scaffold` is not supported (supported: file, exec, apply, package, user, archive, service)",
    ),
    (
        """
        ccm:
          resources:
            - exec: {name: a}
              file: {name: /b}
        """,
        "- exec: {name: a}",
        "each resource must be a map with exactly one type, e.g. `- file: {...}`",
    ),
    (
        """
        ccm:
          resources: {exec: {name: a}}
        """,
        "resources:",
        "`ccm.resources` must be a list",
    ),
    (
        """
        ccm:
          resources:
            - file: {ensure: absent}
        """,
        "- file:",
        "file: `name` is required",
    ),
    (
        """
        ccm:
          resources:
            - exec:
                - a: {}
                  b: {}
        """,
        "- a: {}",
        "exec: each entry must be a single `name: {...}` map",
    ),
    (
        """
        ccm:
          resources:
            - exec:
                - a: "a string"
        """,
        "- a:",
        "exec a: properties must be a map",
    ),
    (
        """
        ccm:
          resources:
            - exec: "echo"
        """,
        "- exec:",
        "exec: expected a map with `name`, or a list of `name: {...}` entries",
    ),
    (
        """
        ccm:
          resources:
            - exec:
                name: x
                comand: y
        """,
        "name: x",
        "exec: unknown property `comand` for exec (did you mean `command`?)",
    ),
    (
        """
        ccm:
          resources:
            - exec:
                - a: {timeout: 5x}
        """,
        "- a:",
        'exec: `timeout`: "5x" is not a duration (use e.g. "30s", "5m", "1h30m")',
    ),
    (
        """
        ccm:
          resources:
            - apply:
                - other.yaml: {ensure: absent}
        """,
        "- other.yaml:",
        'apply: `ensure`: must be one of present; got "absent"',
    ),
    (
        """
        ccm:
          resources:
            - exec:
                name: "{{ lookup('data.nope') }}"
        """,
        'name: "{{',
        "exec: lookup('data.nope'): no such key",
    ),
    (
        """
        ccm:
          resources:
            - exec:
                - a: {}
          bad: [
        """,
        "bad: [",
        None,  # an invalid YAML message from the parser, checked below
    ),
    (
        """
        - just
        - a list
        """,
        "- just",
        "a YAML manifest must be a map with data, hierarchy, overrides and ccm",
    ),
    (
        """
        hierarchy:
          order: [a]
          merge: widest
        """,
        "merge: widest",
        "`hierarchy.merge` must be first or deep, got widest",
    ),
    (
        """
        hierarchy:
          order: a
        """,
        "order: a",
        "`hierarchy.order` must be a list of strings",
    ),
    (
        """
        ccm:
          resources: []
        data: [1, 2]
        """,
        "data:",
        "`data` must be a map of names to values",
    ),
    (
        """
        hierarchy: [a, b]
        """,
        "hierarchy:",
        "`hierarchy` must be a map with `order` and `merge`",
    ),
    (
        """
        ccm:
          pre_message: "hello {{ lookup('data.nope') }}"
        """,
        "pre_message:",
        "ccm.pre_message: lookup('data.nope'): no such key",
    ),
    (
        """
        data:
          a: 1
          b: "{{ Nope.x }}"
        """,
        "b: ",
        "data.b: `Nope.x`: unknown name Nope (the variables are Facts, Data and Environ; "
        "call lookup('...') for a path)",
    ),
    (
        """
        hierarchy:
          merge: first
          order:
            - "os:{{ upper( }}"
        """,
        "order:",
        "hierarchy.order: `upper(`: syntax error: unexpected end of the expression",
    ),
    (
        """
        hierarchy:
          order: [default]
        overrides:
          other: {a: 1}
          default:
            a: "{{ jet('x.jet') }}"
        """,
        "default:",
        "overrides.default: `jet('x.jet')`: jet() (Jet templates) is not supported by syslua",
    ),
]


@pytest.mark.parametrize("text,needle,message", ERRORS, ids=[str(e[2])[:50] for e in ERRORS])
def test_errors_name_the_yaml_line(sysenv, text, needle, message):
    if needle == "bad: [":
        # the parser reports where it gave up: the end of the stream
        err = failure(sysenv, text)
        assert err.render().startswith(
            "m.yaml:6: invalid YAML: expected the node content, but found '<stream end>'"
        )
        return
    err = failure(sysenv, text)
    line = line_of(text, needle)
    shown = textwrap.dedent(text).lstrip("\n").splitlines()[line - 1]
    assert err.render() == f"m.yaml:{line}: {message}\n  {line} | {shown}"


def test_unknown_top_level_key_is_located_at_the_key(sysenv):
    text = """
    data:
      a: 1
    resources:
      - file: {}
    """
    err = failure(sysenv, text)
    assert err.render().startswith("m.yaml:3: unknown top-level key `resources`")


# ---------------------------------------------------------------------------
# hierarchy: data, order, overrides, first vs deep
# ---------------------------------------------------------------------------

HIERARCHY_DOC = """
data:
  color: white
  pkgs: [coreutils]
  nested: {z: 0}
hierarchy:
  order:
    - "role:{{ lookup('facts.role') }}"
    - "site:${ lookup('facts.site') }"
    - "team:{{ lookup('facts.team') }}"
    - "{{ lookup('facts.nothing') }}"
    - common
  merge: %s
overrides:
  "role:web": {color: red, pkgs: [nginx], nested: {a: 1}}
  "site:eu": {color: blue, pkgs: [eu-tool], nested: {b: 2}}
  "team:": {color: never-from-an-empty-team}
  "": {color: never-from-an-empty-entry}
  common: {pkgs: [base], extra: true}
"""

DATA_CASES = [
    # (merge, facts, apply data, resolved data)
    (
        "first",
        {"role": "web", "site": "eu"},
        {},
        {"color": "red", "pkgs": ["nginx"], "nested": {"a": 1}},
    ),
    (
        "FIRST",
        {"role": "web", "site": "eu"},
        {},
        {"color": "red", "pkgs": ["nginx"], "nested": {"a": 1}},
    ),
    (
        "first",
        {"role": "db", "site": "eu"},
        {},
        {"color": "blue", "pkgs": ["eu-tool"], "nested": {"b": 2}},
    ),
    ("first", {}, {}, {"color": "white", "pkgs": ["base"], "nested": {"z": 0}, "extra": True}),
    (
        "first",
        {"team": "ops"},
        {},
        {"color": "white", "pkgs": ["base"], "nested": {"z": 0}, "extra": True},
    ),
    (
        "deep",
        {"role": "web", "site": "eu"},
        {},
        {
            "color": "blue",
            "pkgs": ["coreutils", "nginx", "eu-tool", "base"],
            "nested": {"z": 0, "a": 1, "b": 2},
            "extra": True,
        },
    ),
    (
        "deep",
        {"site": "eu"},
        {},
        {
            "color": "blue",
            "pkgs": ["coreutils", "eu-tool", "base"],
            "nested": {"z": 0, "b": 2},
            "extra": True,
        },
    ),
    (
        "deep",
        {},
        {},
        {"color": "white", "pkgs": ["coreutils", "base"], "nested": {"z": 0}, "extra": True},
    ),
    # data handed down by an apply parent is deep-merged on top
    (
        "first",
        {"role": "web"},
        {"color": "cyan", "nested": {"b": 9}, "new": 1},
        {"color": "cyan", "pkgs": ["nginx"], "nested": {"a": 1, "b": 9}, "new": 1},
    ),
    (
        "deep",
        {"role": "web"},
        {"pkgs": ["from-parent"]},
        {
            "color": "red",
            "pkgs": ["coreutils", "nginx", "base", "from-parent"],
            "nested": {"z": 0, "a": 1},
            "extra": True,
        },
    ),
]


@pytest.mark.parametrize("merge,facts,extra,expected", DATA_CASES)
def test_resolve_data(merge, facts, extra, expected):
    doc = yaml.safe_load(HIERARCHY_DOC % merge)
    assert ccm.resolve_data(doc, facts, extra, Source("/m.yaml", 1)) == expected


def test_resolve_data_without_hierarchy_uses_default_entry():
    doc = yaml.safe_load("data: {a: 1}\noverrides:\n  default: {a: 2, b: 3}\n")
    assert ccm.resolve_data(doc, {}, {}, Source("/m.yaml", 1)) == {"a": 2, "b": 3}


def test_resolve_data_renders_lookups_in_data_and_overrides():
    doc = yaml.safe_load(
        "data:\n  host: \"{{ lookup('facts.host') }}\"\n  cores: \"{{ lookup('facts.cores') }}\"\n"
        "  missing: \"{{ lookup('facts.nope') }}\"\n"
        "hierarchy: {order: [common]}\noverrides:\n  common: {greeting: \"hi ${ lookup('facts.host') }\"}\n"
    )
    assert ccm.resolve_data(doc, {"host": "box", "cores": 8}, {}, Source("/m.yaml", 1)) == {
        "host": "box",
        "cores": 8,
        "missing": "",
        "greeting": "hi box",
    }


@pytest.mark.parametrize("merge", ["first", "deep"])
def test_hierarchy_through_resolve(sysenv, merge):
    text = HIERARCHY_DOC % merge + textwrap.dedent("""
    ccm:
      pre_message: "color={{ lookup('data.color') }}"
      resources:
        - exec:
            name: "pkgs {{ lookup('data.pkgs') }}"
            command: "echo {{ lookup('data.color') }} ${ lookup('data.nested.a') }"
    """)
    m = load(sysenv, text, cli_facts={"role": "web", "site": "eu"})
    if merge == "first":
        expected = ('exec#pkgs ["nginx"]', "echo red 1", "color=red")
    else:
        expected = (
            'exec#pkgs ["coreutils", "nginx", "eu-tool", "base"]',
            "echo blue 1",
            "color=blue",
        )
    assert [i.id for i in m] == [expected[0]]
    assert m.items[0].get("command") == expected[1]
    assert list(m.messages) == [("pre_message", expected[2])]


# ---------------------------------------------------------------------------
# messages, templates and facts
# ---------------------------------------------------------------------------


def test_pre_and_post_messages_are_captured(sysenv):
    m = load(
        sysenv,
        """
        data:
          who: world
        ccm:
          pre_message: "hello {{ lookup('data.who') }}"
          post_message: |
            done on ${ lookup('facts.role') }
          fail_on_error: true
          resources: []
        """,
        cli_facts={"role": "web"},
    )
    assert list(m.messages) == [("pre_message", "hello world"), ("post_message", "done on web\n")]
    assert len(m) == 0


def test_templates_in_names_and_properties(sysenv, monkeypatch):
    monkeypatch.setenv("CCM_TEST_DIR", "/srv/from-env")
    # Every placeholder in YAML is an expression; text kept as written is a string one.
    m = load(
        sysenv,
        """
        data:
          port: 8080
        ccm:
          resources:
            - file:
                - "{{ lookup('env.CCM_TEST_DIR') }}/app.conf":
                    content: |
                      port={{ lookup('data.port') }}
                      host=${ lookup('facts.host.info.hostname') }
                      shell={{ "${HOME}" }} {{ "{{ x }}" }}
                    owner: "{{ lookup('facts.user.name') }}"
                    group: "{{ lookup('environ.CCM_TEST_GROUP', 'staff') }}"
                    mode: "0644"
        """,
    )
    import socket

    from syslua.eval import facts

    p = props(m, "file#/srv/from-env/app.conf")
    assert p["content"] == f"port=8080\nhost={socket.gethostname()}\nshell=${{HOME}} {{{{ x }}}}\n"
    assert p["owner"] == facts.machine_facts()["user"]["name"]
    assert p["group"] == "staff"


# ---------------------------------------------------------------------------
# YAML children of a sys.lua: apply data overrides the child's data
# ---------------------------------------------------------------------------

CHILD = """
data:
  color: white
  size: 1
ccm:
  pre_message: "child color {{ lookup('data.color') }}"
  post_message: "child done"
  resources:
    - exec:
        name: "paint {{ lookup('data.color') }} {{ lookup('data.size') }}"
"""


@pytest.mark.parametrize(
    "apply_data,expected",
    [
        ("", "exec#paint white 1"),
        ("data = {}", "exec#paint white 1"),
        ('data = { color = "cyan" }', "exec#paint cyan 1"),
        ('data = { color = "cyan", size = 3 }', "exec#paint cyan 3"),
    ],
)
def test_apply_data_overrides_child_data(sysenv, apply_data, expected):
    write(sysenv, "child.yaml", CHILD)
    sep = ", " if apply_data else ""
    m = load(sysenv, f'apply {{ name = "child.yaml"{sep}{apply_data} }}\n', name="sys.lua")
    child_id = f"apply#{sysenv.work}/child.yaml"
    exec_item = m.of_type("exec")[0]
    assert exec_item.id == expected
    assert exec_item.parent == child_id
    assert m.source_of(exec_item.id) == f"child.yaml:{line_of(CHILD, 'name: ')}"
    color = expected.split()[1]
    assert list(m.messages) == [
        ("pre_message", f"child color {color}"),
        ("post_message", "child done"),
    ]
    assert f"{sysenv.work}/child.yaml" in m.inputs


def test_yaml_parent_passes_typed_data_to_a_yaml_child(sysenv):
    write(
        sysenv,
        "child.yaml",
        """
    ccm:
      resources:
        - exec:
            name: "port {{ lookup('data.port') }} on {{ lookup('data.host') }}"
    """,
    )
    m = load(
        sysenv,
        """
    data:
      port: 8080
    ccm:
      resources:
        - apply:
            - child.yaml:
                data:
                  port: "{{ lookup('data.port') }}"
                  host: "${ lookup('facts.role') }"
    """,
        cli_facts={"role": "web"},
    )
    child = item_of(m, f"apply#{sysenv.work}/child.yaml")
    assert thaw(child.get("data")) == {"port": 8080, "host": "web"}
    assert [i.id for i in m.of_type("exec")] == ["exec#port 8080 on web"]


def test_nested_apply_data_reaches_a_yaml_child(sysenv):
    write(
        sysenv,
        "child.yaml",
        """
    data:
      nested: {a: 1, b: 2}
    ccm:
      resources:
        - exec:
            name: "nested {{ lookup('data.nested.a') }}{{ lookup('data.nested.b') }}"
    """,
    )
    m = load(
        sysenv, 'apply { name = "child.yaml", data = { nested = { b = 9 } } }\n', name="sys.lua"
    )
    assert [i.id for i in m.of_type("exec")] == ["exec#nested 19"]


def test_data_value_with_two_lookups(sysenv):
    m = load(
        sysenv,
        """
    data:
      url: "http://{{ lookup('facts.host') }}:{{ lookup('facts.port') }}"
      pair: "{{ lookup('facts.host') }}-{{ lookup('facts.port') }}"
    ccm:
      resources:
        - exec:
            name: "fetch {{ lookup('data.pair') }} {{ lookup('data.url') }}"
    """,
        cli_facts={"host": "box", "port": "80"},
    )
    assert [i.id for i in m] == ["exec#fetch box-80 http://box:80"]


def test_yaml_child_without_allow_apply_may_not_apply(sysenv):
    write(sysenv, "grandchild.yaml", "ccm: {resources: []}\n")
    text = """
    ccm:
      resources:
        - apply:
            - grandchild.yaml: {}
    """
    write(sysenv, "child.yaml", text)
    path = sysenv.write("sys.lua", 'apply { name = "child.yaml", allow_apply = false }\n')
    with pytest.raises(ConfigError) as info:
        resolve(path, Options())
    text_ = info.value.render()
    n = line_of(text, "grandchild.yaml")
    assert text_.startswith(
        f"child.yaml:{n}: apply grandchild.yaml: not allowed here: the parent apply "
    )
    assert (
        "child.yaml sets allow_apply = false, so this manifest may not contain apply resources"
        in text_
    )
    assert text_.endswith(f"\n  {n} |         - grandchild.yaml: {{}}")


def test_allow_apply_error_names_the_parent_briefly(sysenv):
    write(sysenv, "grandchild.yaml", "ccm: {resources: []}\n")
    write(sysenv, "child.yaml", "ccm:\n  resources:\n    - apply:\n        - grandchild.yaml: {}\n")
    path = sysenv.write("sys.lua", 'apply { name = "child.yaml", allow_apply = false }\n')
    with pytest.raises(ConfigError) as info:
        resolve(path, Options())
    assert "the parent apply child.yaml sets allow_apply = false" in info.value.render()


def test_empty_yaml_manifest_declares_nothing(sysenv):
    m = load(sysenv, "# nothing here\n")
    assert len(m) == 0 and list(m.messages) == []


@pytest.mark.parametrize(
    "yaml_value,expected",
    [
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("Off", "Off"),
        ("y", "y"),
        ("1:20", "1:20"),
        ("true", True),
        ("False", False),
        ("TRUE", True),
        ("12", 12),
    ],
)
def test_scalars_are_read_as_yaml_1_2_as_ccm_reads_them(sysenv, yaml_value, expected):
    """CCM's YAML reader (goccy/go-yaml) follows YAML 1.2: yes/no/on/off are
    text, not booleans, and `1:20` is not a base-60 number."""
    m = load(
        sysenv,
        f"""
    data:
      value: {yaml_value}
    ccm:
      resources:
        - exec:
            name: show
            command: "echo {{{{ type(Data.value) }}}} {{{{ Data.value }}}}"
    """,
    )
    kind = {str: "string", bool: "bool", int: "int"}[type(expected)]
    shown = str(expected).lower() if isinstance(expected, bool) else str(expected)
    assert props(m, "exec#show")["command"] == f"echo {kind} {shown}"


def test_yes_and_no_keys_stay_text(sysenv):
    m = load(
        sysenv,
        """
    data:
      answers:
        yes: 1
        no: 2
    ccm:
      resources:
        - exec:
            name: show
            command: "echo {{ Data.answers.yes }} {{ Data.answers['no'] }}"
    """,
    )
    assert props(m, "exec#show")["command"] == "echo 1 2"


def test_a_jet_resources_file_is_refused_clearly(sysenv):
    text = """
    ccm:
      resources_jet_file: resources.jet
    """
    err = failure(sysenv, text)
    assert err.render().startswith(
        "m.yaml:2: `ccm.resources_jet_file` (resources generated by a Jet template) "
        "is not supported by syslua"
    )
