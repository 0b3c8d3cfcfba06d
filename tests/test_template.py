"""`{{ lookup('root.key') }}` / `${ lookup(...) }` templates (SPEC sections 2 and 5).

The renderer is a pure function, so most cases call it directly on a table of
inputs; the rest go through a real sys.lua whose file `content` is a template.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import HEADER

from syslua.errors import ConfigError
from syslua.eval import template
from syslua.eval.template import TemplateError, expressions, render, render_deep
from syslua.manifest.model import thaw
from syslua.manifest.resolve import Options, resolve

ROOTS: dict[str, Any] = {
    "facts": {
        "hostname": "box",
        "host": {"info": {"hostname": "box.example", "os": "linux"}},
        "cores": 8,
        "ratio": 1.5,
        "laptop": True,
        "nothing": None,
        "disks": ["sda", "sdb"],
        "user": {"name": "ada", "home": "/home/ada"},
    },
    "data": {
        "color": "cyan",
        "port": 8080,
        "empty": "",
        "nested": {"a": {"b": "deep"}},
        "list": [{"k": "v"}],
    },
    "env": {"HOME": "/home/ada", "SHELL": "/bin/zsh"},
}

# (template, rendered text)
RENDER = [
    ("{{ lookup('facts.hostname') }}", "box"),
    ("{{lookup('facts.hostname')}}", "box"),
    ("{{   lookup( 'facts.hostname' )   }}", "box"),
    ('{{ lookup("facts.hostname") }}', "box"),
    (
        "Welcome to {{ lookup('facts.host.info.hostname') }}\nManaged by syslua\n",
        "Welcome to box.example\nManaged by syslua\n",
    ),
    ("${ lookup('env.HOME') }/bin", "/home/ada/bin"),
    ("${lookup('environ.SHELL')}", "/bin/zsh"),
    ("{{ lookup('environ.HOME') }}", "/home/ada"),
    ("{{ lookup('data.color') }}-{{ lookup('data.port') }}", "cyan-8080"),
    ("{{ lookup('data.nested.a.b') }}", "deep"),
    ("{{ lookup('data.list.0.k') }}", "v"),
    ("{{ lookup('facts.disks.1') }}", "sdb"),
    ("{{ lookup('data.empty') }}", ""),
    # scalar types as text
    ("{{ lookup('facts.cores') }}", "8"),
    ("{{ lookup('facts.ratio') }}", "1.5"),
    ("{{ lookup('facts.laptop') }}", "true"),
    ("{{ lookup('facts.nothing') }}", ""),
    ("{{ lookup('facts.disks') }}", '["sda", "sdb"]'),
    ("{{ lookup('facts.user') }}", '{"home": "/home/ada", "name": "ada"}'),
    # defaults
    ("{{ lookup('data.missing', 'fallback') }}", "fallback"),
    ('{{ lookup("data.missing", "fallback") }}', "fallback"),
    ("{{ lookup('data.missing', 42) }}", "42"),
    ("{{ lookup('data.missing', true) }}", "true"),
    ("{{ lookup('data.missing', nil) }}", ""),
    ("{{ lookup('data.missing', null) }}", ""),
    ("{{ lookup('data.missing', [1, 2]) }}", "[1, 2]"),
    ("{{ lookup('data.color', 'unused') }}", "cyan"),
    ("{{ lookup('facts.disks.9', 'none') }}", "none"),
    ("{{ lookup('data.color.deeper', 'x') }}", "x"),
    # non-lookup text is left exactly as written
    ("{{ x }}", "{{ x }}"),
    ("${HOME}", "${HOME}"),
    ("$HOME and ${PATH:-/bin}", "$HOME and ${PATH:-/bin}"),
    ("{{ .Values.image }}", "{{ .Values.image }}"),
    ("{{ lookup }}", "{{ lookup }}"),
    ("{{ lookups('data.color') }}", "{{ lookups('data.color') }}"),
    ("lookup('data.color')", "lookup('data.color')"),
    ("{% if x %}{{ y }}{% endif %}", "{% if x %}{{ y }}{% endif %}"),
    (
        "PS1='${debian_chroot:+($debian_chroot)}\\u@\\h'",
        "PS1='${debian_chroot:+($debian_chroot)}\\u@\\h'",
    ),
    ("{{ x }} {{ lookup('data.color') }} ${HOME}", "{{ x }} cyan ${HOME}"),
    ("", ""),
]


@pytest.mark.parametrize("text,expected", RENDER, ids=[t[:50] or "empty" for t, _ in RENDER])
def test_render(text, expected):
    assert render(text, ROOTS) == expected


# (template, error message)
ERRORS = [
    ("{{ lookup('data.missing') }}", "lookup('data.missing'): no such key"),
    ("{{ lookup('facts.host.info.nope') }}", "lookup('facts.host.info.nope'): no such key"),
    ("{{ lookup('facts.disks.7') }}", "lookup('facts.disks.7'): no such key"),
    ("{{ lookup('data.color.x') }}", "lookup('data.color.x'): no such key"),
    (
        "{{ lookup('bogus.x') }}",
        "lookup('bogus.x'): unknown root `bogus` (use facts., data. or env.)",
    ),
    (
        "{{ lookup('hostname') }}",
        "lookup('hostname'): unknown root `hostname` (use facts., data. or env.)",
    ),
    # The text inside the braces is an Expr expression (tests/test_expr.py):
    # a lookup path is a string, and its default any expression.
    (
        "{{ lookup(data.color) }}",
        "`lookup(data.color)`: unknown name data (did you mean Data?)",
    ),
    (
        "{{ lookup('data.color',) }}",
        "`lookup('data.color',)`: syntax error: expected an argument, found `)` at position 21",
    ),
    (
        "{{ lookup('data.x', [1, ) }}",
        "`lookup('data.x', [1, )`: syntax error: unexpected `)` at position 22",
    ),
    (
        "{{ lookup('data.x', bare) }}",
        "`lookup('data.x', bare)`: unknown name bare (the variables are Facts, Data and Environ; "
        "call lookup('...') for a path)",
    ),
]


@pytest.mark.parametrize("text,message", ERRORS, ids=[t for t, _ in ERRORS])
def test_render_errors(text, message):
    with pytest.raises(TemplateError) as info:
        render(text, ROOTS)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "text",
    ["{{ lookup('data.missing') }}", "x-${ lookup('facts.nope.deeper') }-y"],
)
def test_non_strict_reads_missing_keys_as_empty(text):
    expected = text.replace("{{ lookup('data.missing') }}", "").replace(
        "${ lookup('facts.nope.deeper') }", ""
    )
    assert render(text, ROOTS, strict=False) == expected


# (template, typed value)
TYPED = [
    ("{{ lookup('data.port') }}", 8080),
    ("  {{ lookup('data.port') }}  ", 8080),
    ("${ lookup('facts.laptop') }", True),
    ("{{ lookup('facts.ratio') }}", 1.5),
    ("{{ lookup('facts.disks') }}", ["sda", "sdb"]),
    ("{{ lookup('facts.user') }}", {"name": "ada", "home": "/home/ada"}),
    ("{{ lookup('facts.nothing') }}", None),
    ("{{ lookup('data.missing', 5) }}", 5),
    ("{{ lookup('data.missing', [1, 2]) }}", [1, 2]),
    ("{{ lookup('data.missing', 'five') }}", "five"),
    ("{{ lookup('data.port') }}x", "8080x"),
    ("port {{ lookup('data.port') }}", "port 8080"),
    ("plain text", "plain text"),
    ("{{ x }}", "{{ x }}"),
]


@pytest.mark.parametrize("text,expected", TYPED, ids=[t for t, _ in TYPED])
def test_typed_whole_string_lookups_keep_their_type(text, expected):
    got = render(text, ROOTS, typed=True)
    assert got == expected
    assert type(got) is type(expected)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("{{ lookup('data.color') }}{{ lookup('data.port') }}", "cyan8080"),
        ("{{ lookup('data.color') }}-{{ lookup('data.port') }}", "cyan-8080"),
        ("{{ lookup('data.missing', 'd') }}-{{ lookup('data.color') }}", "d-cyan"),
        ("${ lookup('env.HOME') }:${ lookup('env.SHELL') }", "/home/ada:/bin/zsh"),
    ],
)
def test_typed_render_of_two_lookups_is_text(text, expected):
    assert render(text, ROOTS, typed=True) == expected


def test_render_deep():
    value = {
        "port": "{{ lookup('data.port') }}",
        "url": "http://{{ lookup('facts.hostname') }}:{{ lookup('data.port') }}/",
        "{{ lookup('data.color') }}": ["${ lookup('facts.cores') }", "{{ x }}", 3, None, True],
        "nested": {"home": "{{ lookup('env.HOME') }}"},
    }
    assert render_deep(value, ROOTS) == {
        "port": 8080,
        "url": "http://box:8080/",
        "cyan": [8, "{{ x }}", 3, None, True],
        "nested": {"home": "/home/ada"},
    }
    assert render_deep(value, ROOTS, typed=False)["port"] == "8080"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("{{ lookup('a.b') }}", True),
        ("x ${ lookup('a.b') } y", True),
        ("{{ x }}", False),
        ("${HOME}", False),
        ("lookup", False),
        ("no templates", False),
    ],
)
def test_expressions_finds_templates(text, expected):
    assert bool(expressions(text, {})) is expected


def test_expression_pattern_is_not_greedy_across_lines():
    text = "a={{ lookup('data.color') }}\nb={{ lookup('data.port') }}\n"
    assert [inner for _, _, inner in template.placeholders(text)] == [
        "lookup('data.color')",
        "lookup('data.port')",
    ]


# ---------------------------------------------------------------------------
# templates in a real sys.lua (file content)
# ---------------------------------------------------------------------------


def _resolve(sysenv: Any, text: str, **options: Any):
    path = sysenv.write("sys.lua", text, dedent=False)
    return resolve(path, Options(**options))


@pytest.mark.parametrize(
    "content,expected",
    [
        ("role={{ lookup('facts.role') }}", "role=web"),
        ("dc={{ lookup('facts.site.dc') }}", "dc=ams"),
        ("host={{ lookup('facts.host.info.hostname') }}", "host=<hostname>"),
        ("home=${ lookup('env.TEMPLATE_TEST_VAR') }", "home=from-env"),
        ("home={{ lookup('environ.TEMPLATE_TEST_VAR') }}", "home=from-env"),
        ("x={{ lookup('data.anything', 'none at the root') }}", "x=none at the root"),
        ("{{ x }} ${HOME} $PATH", "{{ x }} ${HOME} $PATH"),
        ("export PS1='${PWD##*/} $ '", "export PS1='${PWD##*/} $ '"),
    ],
)
def test_file_content_templates_in_lua(sysenv, monkeypatch, content, expected):
    import socket

    monkeypatch.setenv("TEMPLATE_TEST_VAR", "from-env")
    lua_content = content.replace("\\", "\\\\").replace('"', '\\"')
    m = _resolve(
        sysenv,
        HEADER + f'file {{ path = "/srv/motd", content = "{lua_content}" }}\n',
        cli_facts={"role": "web", "site": {"dc": "ams"}},
    )
    assert m.get("file#/srv/motd").get("content") == expected.replace(
        "<hostname>", socket.gethostname()
    )


def test_file_content_template_with_data_in_a_lua_child(sysenv):
    sysenv.write(
        "child.lua",
        HEADER
        + "file { path = \"/srv/prompt\", content = \"color={{ lookup('data.color') }} n={{ lookup('data.n') }}\" }\n",
    )
    m = _resolve(sysenv, 'apply { name = "child.lua", data = { color = "cyan", n = 2 } }\n')
    assert m.get("file#/srv/prompt").get("content") == "color=cyan n=2"


@pytest.mark.parametrize(
    "content,message",
    [
        ("{{ lookup('data.nope') }}", "file: `content`: lookup('data.nope'): no such key"),
        (
            "{{ lookup('facts.nope.deeper') }}",
            "file: `content`: lookup('facts.nope.deeper'): no such key",
        ),
        (
            "{{ lookup('secrets.x') }}",
            "file: `content`: lookup('secrets.x'): unknown root `secrets` (use facts., data. or env.)",
        ),
        (
            "{{ lookup(facts.x) }}",
            "file: `content`: `lookup(facts.x)`: unknown name facts (did you mean Facts?)",
        ),
    ],
)
def test_file_content_template_errors_are_located(sysenv, content, message):
    decl = f'file {{ path = "/srv/motd", content = "{content}" }}'
    path = sysenv.write("sys.lua", HEADER + decl + "\n", dedent=False)
    with pytest.raises(ConfigError) as info:
        resolve(path, Options())
    assert type(info.value) is ConfigError
    assert info.value.render() == f"sys.lua:3: {message}\n  3 | {decl}"


def test_template_in_read_file_content_is_rendered(sysenv):
    sysenv.write("motd.tmpl", "Welcome to {{ lookup('facts.role') }} ${HOME}\n")
    m = _resolve(
        sysenv,
        HEADER + 'file { path = "/srv/motd", content = sys.readFile("motd.tmpl") }\n',
        cli_facts={"role": "db"},
    )
    assert m.get("file#/srv/motd").get("content") == "Welcome to db ${HOME}\n"


def test_templates_only_render_content(sysenv):
    """Other properties are taken literally (no lookup in exec commands written in Lua)."""
    m = _resolve(
        sysenv, "exec { name = \"echo {{ lookup('facts.role') }}\" }\n", cli_facts={"role": "web"}
    )
    assert [i.id for i in m] == ["exec#echo {{ lookup('facts.role') }}"]
    assert thaw(m.items[0].get("command")) == "echo {{ lookup('facts.role') }}"
