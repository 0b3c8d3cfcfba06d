"""Merging declarations by key and priority (SPEC section 3, seed apply-flow.md).

Priorities: lib.mkForce 50 < lib.mkBefore 500 < plain 900 < lib.mkDefault 1000
< lib.mkAfter 1500, lib.mkOrder(n). A singular property takes the lowest
number; two different values there are a ConflictError naming both lines; a
mergeable property is the union ordered by priority. The manifest digest
never depends on the order of declarations.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import HEADER, item_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syslua.errors import ConfigError, SysluaError
from syslua.manifest.merge import ConflictError
from syslua.manifest.model import Manifest, thaw
from syslua.manifest.resolve import Options, resolve

SHA = "ab" * 32
SRC = f'lib.fetchUrl {{ url = "https://example.org/rg.tgz", sha256 = "{SHA}" }}'
HINT = "Use lib.mkForce() to override, or lib.mkDefault() to provide a fallback."


def evaluate(sysenv: Any, text: str) -> Manifest:
    path = sysenv.write("sys.lua", text, dedent=False)
    return resolve(path, Options())


def conflict(sysenv: Any, text: str) -> ConflictError:
    path = sysenv.write("sys.lua", text, dedent=False)
    with pytest.raises(ConflictError) as info:
        resolve(path, Options())
    return info.value


def value(m: Manifest, ident: str, prop: str) -> Any:
    item = m.get(ident)
    assert item is not None, f"{ident} not in {[i.id for i in m]}"
    return thaw(item.get(prop))


def subst(v: Any, sysenv: Any) -> Any:
    if isinstance(v, str):
        return v.replace("<home>", str(sysenv.home)).replace("<work>", str(sysenv.work))
    if isinstance(v, list):
        return [subst(x, sysenv) for x in v]
    return v


# ---------------------------------------------------------------------------
# singular properties: the lowest priority number wins
# ---------------------------------------------------------------------------

# (value written in declaration A, value in declaration B, winner)
SINGULAR = [
    ('lib.mkForce("a")', '"b"', "a"),
    ('lib.mkForce("a")', 'lib.mkBefore("b")', "a"),
    ('lib.mkBefore("a")', '"b"', "a"),
    ('"a"', 'lib.mkDefault("b")', "a"),
    ('"a"', 'lib.mkAfter("b")', "a"),
    ('lib.mkDefault("a")', 'lib.mkAfter("b")', "a"),
    ('lib.mkForce("a")', 'lib.mkAfter("b")', "a"),
    ('lib.mkOrder(49, "a")', 'lib.mkForce("b")', "a"),
    ('lib.mkOrder(51, "a")', 'lib.mkForce("b")', "b"),
    ('lib.mkOrder(0, "a")', 'lib.mkOrder(1, "b")', "a"),
    ('lib.mkOrder(899, "a")', '"b"', "a"),
    ('lib.mkOrder(901, "a")', '"b"', "b"),
    ('lib.mkOrder(499, "a")', 'lib.mkBefore("b")', "a"),
    ('lib.mkOrder(999, "a")', 'lib.mkDefault("b")', "a"),
    ('lib.mkOrder(1001, "a")', 'lib.mkDefault("b")', "b"),
    ('lib.mkOrder(1499, "a")', 'lib.mkAfter("b")', "a"),
    ('lib.mkOrder(2000, "a")', 'lib.mkAfter("b")', "b"),
]


@pytest.mark.parametrize("a,b,winner", SINGULAR, ids=[f"{a} vs {b}" for a, b, _ in SINGULAR])
@pytest.mark.parametrize("reverse", [False, True], ids=["a-first", "b-first"])
def test_singular_lowest_priority_wins(sysenv, a, b, winner, reverse):
    lines = [f"env {{ EDITOR = {a} }}", f"env {{ EDITOR = {b} }}"]
    if reverse:
        lines.reverse()
    m = evaluate(sysenv, "\n".join(lines) + "\n")
    assert value(m, "env#EDITOR", "value") == winner


def test_seed_singular_example(sysenv):
    m = evaluate(
        sysenv,
        'env { EDITOR = "vim" }\nenv { EDITOR = lib.mkDefault("nano") }\nenv { EDITOR = lib.mkForce("nvim") }\n',
    )
    assert value(m, "env#EDITOR", "value") == "nvim"
    assert m.source_of("env#EDITOR") == "sys.lua:1, sys.lua:2, sys.lua:3"


@pytest.mark.parametrize(
    "decls,ident,prop,expected",
    [
        # file properties
        (
            'file { path = "/srv/a", mode = "0640" }\nfile { path = "/srv/a", mode = lib.mkForce("0600") }',
            "file#/srv/a",
            "mode",
            "0600",
        ),
        (
            'file { path = "/srv/a", content = lib.mkDefault("fallback") }\nfile { path = "/srv/a", content = "real" }',
            "file#/srv/a",
            "content",
            "real",
        ),
        (
            'file { path = "/srv/a", ensure = lib.mkDefault("directory") }\nfile { path = "/srv/a", ensure = "present" }',
            "file#/srv/a",
            "ensure",
            "present",
        ),
        # content and source share one slot: the lower priority one is the body
        (
            'file { path = "/srv/a", content = "inline" }\nfile { path = "/srv/a", source = lib.mkForce("files/a") }',
            "file#/srv/a",
            "source",
            "<work>/files/a",
        ),
        (
            'file { path = "/srv/a", content = "inline" }\nfile { path = "/srv/a", source = lib.mkDefault("files/a") }',
            "file#/srv/a",
            "content",
            "inline",
        ),
        # the HEADER's defaults{} are mkDefault-strength
        (
            'file { path = "/srv/a" }\nfile { path = "/srv/a", mode = "0600" }',
            "file#/srv/a",
            "mode",
            "0600",
        ),
        ('file { path = "/srv/a", owner = "root" }', "file#/srv/a", "owner", "root"),
        # exec
        (
            'exec { name = "x", timeout = "1m" }\nexec { name = "x", timeout = lib.mkAfter("5m") }',
            "exec#x",
            "timeout",
            60,
        ),
        (
            'exec { name = "x", provider = lib.mkDefault("shell") }\nexec { name = "x" }',
            "exec#x",
            "provider",
            "shell",
        ),
        (
            'exec { name = "x", command = lib.mkBefore("make") }\nexec { name = "x", command = "make all" }',
            "exec#x",
            "command",
            "make",
        ),
        # package version
        (
            f'package {{ name = "rg", version = lib.mkDefault("13"), source = {SRC} }}\npackage {{ name = "rg", version = "14" }}',
            "package#rg",
            "version",
            "14",
        ),
    ],
)
def test_singular_priorities_on_other_types(sysenv, decls, ident, prop, expected):
    m = evaluate(sysenv, HEADER + decls + "\n")
    assert value(m, ident, prop) == subst(expected, sysenv)


# ---------------------------------------------------------------------------
# whole-declaration priorities
# ---------------------------------------------------------------------------

WHOLE = [
    # (declaration A, declaration B, expected mode of /srv/a)
    (
        'file(lib.mkForce { path = "/srv/a", mode = "0600" })',
        'file { path = "/srv/a", mode = "0640" }',
        "0600",
    ),
    (
        'lib.mkForce(file { path = "/srv/a", mode = "0600" })',
        'file { path = "/srv/a", mode = "0640" }',
        "0600",
    ),
    (
        'file(lib.mkDefault { path = "/srv/a", mode = "0600" })',
        'file { path = "/srv/a", mode = "0640" }',
        "0640",
    ),
    (
        'lib.mkDefault(file { path = "/srv/a", mode = "0600" })',
        'file { path = "/srv/a", mode = "0640" }',
        "0640",
    ),
    (
        'file(lib.mkAfter { path = "/srv/a", mode = "0600" })',
        'file(lib.mkDefault { path = "/srv/a", mode = "0640" })',
        "0640",
    ),
    (
        'file(lib.mkOrder(10, { path = "/srv/a", mode = "0600" }))',
        'file(lib.mkForce { path = "/srv/a", mode = "0640" })',
        "0600",
    ),
    # an explicit property wrapper beats the whole-declaration priority
    (
        'file(lib.mkForce { path = "/srv/a", mode = lib.mkDefault("0600") })',
        'file { path = "/srv/a", mode = "0640" }',
        "0640",
    ),
    (
        'lib.mkForce(file { path = "/srv/a", mode = lib.mkAfter("0600") })',
        'file { path = "/srv/a", mode = "0640" }',
        "0640",
    ),
    (
        'file(lib.mkDefault { path = "/srv/a", mode = lib.mkForce("0600") })',
        'file { path = "/srv/a", mode = "0640" }',
        "0600",
    ),
]


@pytest.mark.parametrize("a,b,expected", WHOLE, ids=[a for a, _, _ in WHOLE])
@pytest.mark.parametrize("reverse", [False, True], ids=["a-first", "b-first"])
def test_whole_declaration_priority(sysenv, a, b, expected, reverse):
    lines = [a, b][::-1] if reverse else [a, b]
    m = evaluate(sysenv, HEADER + "\n".join(lines) + "\n")
    assert value(m, "file#/srv/a", "mode") == expected


def test_whole_declaration_priority_of_env_and_package(sysenv):
    m = evaluate(
        sysenv,
        'lib.mkForce(env { EDITOR = "nvim", PAGER = "most" })\n'
        'env { EDITOR = "vim", PAGER = "less" }\n'
        f'package(lib.mkDefault {{ name = "rg", version = "13", source = {SRC}, bin = {{ "rg" }} }})\n'
        'package { name = "rg", version = "14", bin = { "rg-extra" } }\n',
    )
    assert value(m, "env#EDITOR", "value") == "nvim"
    assert value(m, "env#PAGER", "value") == "most"
    assert value(m, "package#rg", "version") == "14"
    assert value(m, "package#rg", "bin") == ["rg-extra", "rg"]
    assert value(m, "package#rg", "source") == {
        "fetch": "url",
        "url": "https://example.org/rg.tgz",
        "sha256": SHA,
    }


# ---------------------------------------------------------------------------
# conflicts
# ---------------------------------------------------------------------------

CONFLICTS = [
    (
        "seed-editor",
        'env { EDITOR = "vim" }\n\nenv { EDITOR = "emacs" }\n',
        "Conflicting values for env.EDITOR at priority 900:\n"
        '  - "vim" (declared at sys.lua:1)\n'
        '  - "emacs" (declared at sys.lua:3)',
    ),
    (
        "listed-by-line-not-by-value",
        'env { EDITOR = "zed" }\nenv { EDITOR = "atom" }\n',
        "Conflicting values for env.EDITOR at priority 900:\n"
        '  - "zed" (declared at sys.lua:1)\n'
        '  - "atom" (declared at sys.lua:2)',
    ),
    (
        "two-defaults",
        'env { EDITOR = lib.mkDefault("vim") }\nenv { EDITOR = lib.mkDefault("nano") }\n',
        "Conflicting values for env.EDITOR at priority 1000:\n"
        '  - "vim" (declared at sys.lua:1)\n'
        '  - "nano" (declared at sys.lua:2)',
    ),
    (
        "two-forces-beat-a-plain-value",
        'env { EDITOR = "vim" }\nenv { EDITOR = lib.mkForce("nano") }\nenv { EDITOR = lib.mkForce("ed") }\n',
        "Conflicting values for env.EDITOR at priority 50:\n"
        '  - "nano" (declared at sys.lua:2)\n'
        '  - "ed" (declared at sys.lua:3)',
    ),
    (
        "mkOrder",
        'env { EDITOR = lib.mkOrder(7, "a") }\nenv { EDITOR = lib.mkOrder(7, "b") }\n',
        "Conflicting values for env.EDITOR at priority 7:\n"
        '  - "a" (declared at sys.lua:1)\n'
        '  - "b" (declared at sys.lua:2)',
    ),
    (
        "three-way",
        'env { PAGER = "less" }\nenv { PAGER = "most" }\nenv { PAGER = "more" }\n',
        "Conflicting values for env.PAGER at priority 900:\n"
        '  - "less" (declared at sys.lua:1)\n'
        '  - "most" (declared at sys.lua:2)\n'
        '  - "more" (declared at sys.lua:3)',
    ),
    (
        "numbers-as-env-values",
        "env { JOBS = 4 }\nenv { JOBS = 8 }\n",
        "Conflicting values for env.JOBS at priority 900:\n"
        '  - "4" (declared at sys.lua:1)\n'
        '  - "8" (declared at sys.lua:2)',
    ),
    (
        "file-mode",
        HEADER
        + 'file { path = "/srv/app.conf", mode = "0600" }\nfile { path = "/srv/app.conf", mode = "640" }\n',
        "Conflicting values for file#/srv/app.conf.mode at priority 900:\n"
        '  - "0600" (declared at sys.lua:3)\n'
        '  - "0640" (declared at sys.lua:4)',
    ),
    (
        "file-content-vs-source",
        # An absolute source: a path under the temp dir can pass the 72
        # characters at which values are shortened, on some runners.
        HEADER
        + 'file { path = "/srv/a", content = "x" }\nfile { path = "/srv/a", source = "/y" }\n',
        "Conflicting values for file#/srv/a.content/source at priority 900:\n"
        '  - "x" (declared at sys.lua:3)\n'
        '  - "/y" (declared at sys.lua:4)',
    ),
    (
        "exec-timeout-numbers",
        'exec { name = "x", timeout = "5s" }\nexec { name = "x", timeout = 10 }\n',
        "Conflicting values for exec#x.timeout at priority 900:\n"
        "  - 5 (declared at sys.lua:1)\n"
        "  - 10 (declared at sys.lua:2)",
    ),
    (
        "exec-returns-lists",
        'exec { name = "x", returns = 1 }\nexec { name = "x", returns = { 0, 1 } }\n',
        "Conflicting values for exec#x.returns at priority 900:\n"
        "  - [1] (declared at sys.lua:1)\n"
        "  - [0, 1] (declared at sys.lua:2)",
    ),
    (
        "apply-data",
        'apply { name = "child.lua", data = { color = "red" } }\napply { name = "child.lua", data = { color = "blue" } }\n',
        "Conflicting values for apply#<work>/child.lua.data at priority 900:\n"
        '  - {"color": "red"} (declared at sys.lua:1)\n'
        '  - {"color": "blue"} (declared at sys.lua:2)',
    ),
    (
        "whole-declaration-priorities",
        'lib.mkForce(env { EDITOR = "vim" })\nenv { EDITOR = lib.mkForce("emacs") }\n',
        "Conflicting values for env.EDITOR at priority 50:\n"
        '  - "vim" (declared at sys.lua:1)\n'
        '  - "emacs" (declared at sys.lua:2)',
    ),
]


@pytest.mark.parametrize("text,message", [pytest.param(t, m, id=i) for i, t, m in CONFLICTS])
def test_conflicts_name_both_declarations(sysenv, text, message):
    sysenv.write("child.lua", "-- child\n")
    err = conflict(sysenv, text)
    assert isinstance(err, ConfigError) and err.exit_code == 2
    assert err.render() == subst(message, sysenv) + "\n\n" + HINT
    assert err.hint == HINT


def test_conflict_across_files(sysenv):
    sysenv.write(
        "mods/editor.lua",
        "local M = {}\nfunction M.setup()\n  env { EDITOR = 'vim' }\nend\nreturn M\n",
    )
    err = conflict(sysenv, '\nenv { EDITOR = "emacs" }\nrequire("mods.editor").setup()\n')
    assert err.render() == (
        "Conflicting values for env.EDITOR at priority 900:\n"
        '  - "vim" (declared at mods/editor.lua:3)\n'
        '  - "emacs" (declared at sys.lua:2)\n\n' + HINT
    )


def test_conflict_is_reported_through_the_cli(sysenv):
    sysenv.write("sys.lua", 'env { EDITOR = "vim" }\nenv { EDITOR = "emacs" }\n')
    proc = sysenv.run("plan", "sys.lua")
    assert proc.returncode == 2
    assert "Conflicting values for env.EDITOR at priority 900:" in proc.stderr
    assert '  - "vim" (declared at sys.lua:1)' in proc.stderr
    assert '  - "emacs" (declared at sys.lua:2)' in proc.stderr
    assert HINT in proc.stderr
    assert "Traceback" not in proc.stderr


# (declaration A, declaration B, id, property, expected merged value) — same priority, equal after normalisation
EQUAL_IS_NOT_A_CONFLICT = [
    ('env { EDITOR = "vim" }', 'env { EDITOR = "vim" }', "env#EDITOR", "value", "vim"),
    ("env { JOBS = 8 }", 'env { JOBS = "8" }', "env#JOBS", "value", "8"),
    ("env { ON = true }", 'env { ON = "true" }', "env#ON", "value", "true"),
    (
        'file { path = "/srv/a", mode = "644" }',
        'file { path = "/srv/a", mode = "0644" }',
        "file#/srv/a",
        "mode",
        "0644",
    ),
    (
        'file { path = "/srv/a", mode = 644 }',
        'file { path = "/srv/a", mode = "0o644" }',
        "file#/srv/a",
        "mode",
        "0644",
    ),
    (
        'file { path = "/srv/a", mode = "0O644" }',
        'file { path = "/srv/a", mode = "00644" }',
        "file#/srv/a",
        "mode",
        "0644",
    ),
    (
        'file { path = "/srv/a", owner = 0 }',
        'file { path = "/srv/a", owner = "0" }',
        "file#/srv/a",
        "owner",
        "0",
    ),
    (
        'file { path = "/srv/a", content = "x" }',
        'file { path = "/srv/a", contents = "x" }',
        "file#/srv/a",
        "content",
        "x",
    ),
    (
        'file { path = "~/a", source = "files/a" }',
        'file { path = "<home>/a", source = "./files/../files/a" }',
        "file#<home>/a",
        "source",
        "<work>/files/a",
    ),
    (
        'exec { name = "x", timeout = "60s" }',
        'exec { name = "x", timeout = "1m" }',
        "exec#x",
        "timeout",
        60,
    ),
    (
        'exec { name = "x", timeout = 60 }',
        'exec { name = "x", timeout = "1m" }',
        "exec#x",
        "timeout",
        60,
    ),
    (
        'exec { name = "x", timeout = "1h" }',
        'exec { name = "x", timeout = "60m" }',
        "exec#x",
        "timeout",
        3600,
    ),
    (
        'exec { name = "x", returns = 1 }',
        'exec { name = "x", returns = { 1 } }',
        "exec#x",
        "returns",
        [1],
    ),
    (
        'exec { name = "x", path = "/a:/b" }',
        'exec { name = "x", path = { "/a", "/b" } }',
        "exec#x",
        "path",
        "/a:/b",
    ),
    (
        'exec { name = "x", creates = "~/m" }',
        'exec { name = "x", creates = "<home>/m" }',
        "exec#x",
        "creates",
        "<home>/m",
    ),
    (
        'exec { name = "x", refreshonly = true }',
        'exec { name = "x", refresh_only = true }',
        "exec#x",
        "refresh_only",
        True,
    ),
    (
        'env { EDITOR = lib.mkDefault("vi") }',
        'env { EDITOR = lib.mkDefault("vi") }',
        "env#EDITOR",
        "value",
        "vi",
    ),
]


@pytest.mark.parametrize(
    "a,b,ident,prop,expected",
    EQUAL_IS_NOT_A_CONFLICT,
    ids=[f"{a} / {b}" for a, b, *_ in EQUAL_IS_NOT_A_CONFLICT],
)
def test_equal_values_at_the_same_priority_are_not_a_conflict(sysenv, a, b, ident, prop, expected):
    m = evaluate(sysenv, HEADER + a + "\n" + subst(b, sysenv) + "\n")
    assert value(m, subst(ident, sysenv), prop) == subst(expected, sysenv)
    assert len(m.sources[subst(ident, sysenv)]) == 2


# ---------------------------------------------------------------------------
# mergeable properties: unions ordered by priority
# ---------------------------------------------------------------------------

MERGEABLE = [
    (
        "seed-PATH",
        'env { PATH = lib.mkBefore("/custom/bin") }\nenv { PATH = "~/bin" }\nenv { PATH = lib.mkAfter("/opt/bin") }',
        "env#PATH",
        "value",
        ["/custom/bin", "<home>/bin", "/opt/bin"],
    ),
    (
        "seed-PATH-reversed",
        'env { PATH = lib.mkAfter("/opt/bin") }\nenv { PATH = "~/bin" }\nenv { PATH = lib.mkBefore("/custom/bin") }',
        "env#PATH",
        "value",
        ["/custom/bin", "<home>/bin", "/opt/bin"],
    ),
    (
        "PATH-every-priority",
        'env { PATH = lib.mkAfter("/after") }\nenv { PATH = lib.mkDefault("/default") }\nenv { PATH = "/plain" }\n'
        'env { PATH = lib.mkOrder(600, "/order600") }\nenv { PATH = lib.mkBefore("/before") }\nenv { PATH = lib.mkForce("/force") }',
        "env#PATH",
        "value",
        ["/force", "/before", "/order600", "/plain", "/default", "/after"],
    ),
    (
        "PATH-duplicates-keep-the-best-position",
        'env { PATH = "/usr/bin:/bin" }\nenv { PATH = lib.mkBefore("/bin") }',
        "env#PATH",
        "value",
        ["/bin", "/usr/bin"],
    ),
    (
        "PATH-order-inside-one-declaration-is-kept",
        'env { PATH = "/z:/a:/m" }',
        "env#PATH",
        "value",
        ["/z", "/a", "/m"],
    ),
    (
        "MANPATH",
        'env { MANPATH = "/usr/share/man" }\nenv { MANPATH = lib.mkBefore("~/man") }',
        "env#MANPATH",
        "value",
        ["<home>/man", "/usr/share/man"],
    ),
    (
        "XDG_DATA_DIRS",
        'env { XDG_DATA_DIRS = lib.mkAfter("/usr/share") }\nenv { XDG_DATA_DIRS = "/usr/local/share" }',
        "env#XDG_DATA_DIRS",
        "value",
        ["/usr/local/share", "/usr/share"],
    ),
    (
        "INFOPATH",
        'env { INFOPATH = "/a" }\nenv { INFOPATH = lib.mkForce("/b") }',
        "env#INFOPATH",
        "value",
        ["/b", "/a"],
    ),
    (
        "depends_on",
        'exec { name = "a" }\nexec { name = "b" }\nexec { name = "c" }\n'
        'exec { name = "x", depends_on = { "exec#a" } }\nexec { name = "x", depends_on = lib.mkBefore({ "exec#b" }) }\n'
        'exec { name = "x", depends_on = lib.mkAfter({ "exec#c", "exec#a" }) }',
        "exec#x",
        "depends_on",
        ["exec#b", "exec#a", "exec#c"],
    ),
    (
        "depends_on-via-require-alias",
        'exec { name = "a" }\nexec { name = "b" }\nexec { name = "x", require = "exec#a" }\nexec { name = "x", depends_on = "exec#b" }',
        "exec#x",
        "depends_on",
        ["exec#a", "exec#b"],
    ),
    (
        "subscribe",
        'exec { name = "a" }\nexec { name = "b" }\nexec { name = "x", subscribe = "exec#b" }\nexec { name = "x", subscribe = lib.mkBefore("exec#a") }',
        "exec#x",
        "subscribe",
        ["exec#a", "exec#b"],
    ),
    (
        "environment",
        'exec { name = "x", environment = { "CC=gcc" } }\nexec { name = "x", environment = lib.mkBefore({ CFLAGS = "-O2" }) }\n'
        'exec { name = "x", environment = lib.mkAfter("LANG=C") }',
        "exec#x",
        "environment",
        ["CFLAGS=-O2", "CC=gcc", "LANG=C"],
    ),
    (
        "package-bin",
        f'package {{ name = "rg", version = "14", source = {SRC}, bin = "rg" }}\npackage {{ name = "rg", bin = lib.mkBefore({{ "rga" }}) }}',
        "package#rg",
        "bin",
        ["rga", "rg"],
    ),
    (
        "user-groups",
        'user { name = "bob", groups = { "wheel" } }\nuser { name = "bob", groups = lib.mkAfter({ "docker" }) }\nuser { name = "bob", groups = lib.mkForce("adm") }',
        "user#bob",
        "groups",
        ["adm", "wheel", "docker"],
    ),
    (
        "health_checks",
        'exec { name = "x", health_checks = { "check_a" } }\nexec { name = "x", health_checks = lib.mkBefore({ { command = "check_b", tries = 2 } }) }',
        "exec#x",
        "health_checks",
        [
            {"command": "check_b", "tries": 2, "try_sleep": 1},
            {"command": "check_a", "tries": 1, "try_sleep": 1},
        ],
    ),
]


@pytest.mark.parametrize(
    "text,ident,prop,expected", [pytest.param(t, i, p, e, id=n) for n, t, i, p, e in MERGEABLE]
)
def test_mergeable_properties_are_unions_ordered_by_priority(sysenv, text, ident, prop, expected):
    m = evaluate(sysenv, HEADER + text + "\n")
    assert value(m, ident, prop) == subst(expected, sysenv)


@pytest.mark.parametrize(
    "a,b,ident,prop",
    [
        ('env { PATH = "/b" }', 'env { PATH = "/a" }', "env#PATH", "value"),
        ('env { GOPATH = "/b" }', 'env { GOPATH = "/a" }', "env#GOPATH", "value"),
        (
            'exec { name = "x", environment = { "B=1" } }',
            'exec { name = "x", environment = { "A=1" } }',
            "exec#x",
            "environment",
        ),
        (
            'user { name = "u", groups = "b" }',
            'user { name = "u", groups = "a" }',
            "user#u",
            "groups",
        ),
    ],
)
def test_same_priority_contributions_do_not_conflict_and_ignore_order(sysenv, a, b, ident, prop):
    first = value(evaluate(sysenv, f"{a}\n{b}\n"), ident, prop)
    second = value(evaluate(sysenv, f"{b}\n{a}\n"), ident, prop)
    assert first == second
    assert sorted(first) == first and len(first) == 2


def test_non_path_env_var_is_not_mergeable(sysenv):
    err = conflict(sysenv, 'env { EDITOR = "a" }\nenv { EDITOR = "b" }\n')
    assert "Conflicting values for env.EDITOR at priority 900:" in err.render()


def test_forced_environment_entry_wins_for_its_key(sysenv):
    m = evaluate(
        sysenv,
        'exec { name = "x", environment = { "A=1", "B=1" } }\nexec { name = "x", environment = lib.mkForce({ "A=2" }) }\n',
    )
    env = value(m, "exec#x", "environment")
    # the command sees each KEY once, with the value of the best priority
    effective = dict(e.split("=", 1) for e in env)
    assert effective == {"A": "2", "B": "1"}
    assert [e for e in env if e.startswith("A=")] == ["A=2"]


@pytest.mark.parametrize(
    "decl",
    [
        'exec { name = "x", timeout = { __prio = 5, value = "1s" } }',
        'apply { name = "child.lua", data = { __prio = 1, note = "x" } }',
    ],
)
def test_user_table_with_a_prio_key_is_a_clear_error_or_data(sysenv, decl):
    sysenv.write("child.lua", "-- child\n")
    path = sysenv.write("sys.lua", decl + "\n")
    try:
        resolve(path, Options())
    except SysluaError as e:  # a clear message is fine
        assert "Traceback" not in e.render()


# ---------------------------------------------------------------------------
# order independence: the digest is the same for any order of declarations
# ---------------------------------------------------------------------------

ORDER_FREE_LINES = [
    'file { path = "~/a", content = "A", owner = "u", group = "g", mode = "644" }',
    'file { path = "~/a", mode = lib.mkForce("0600"), depends_on = { "exec#setup" } }',
    'file { path = "~/a", owner = lib.mkDefault("nobody"), depends_on = { "file#~/b" } }',
    'file { path = "~/b", ensure = "directory", owner = "u", group = "g", mode = "0o755" }',
    'exec { name = "setup", environment = { "B=2" }, timeout = "1m" }',
    'exec { name = "setup", environment = { A = "1" }, timeout = 60, subscribe = "file#~/b" }',
    'exec { name = "setup", environment = lib.mkBefore({ "Z=0" }) }',
    'env { PATH = "~/bin" }',
    'env { PATH = "/usr/local/bin" }',
    'env { PATH = lib.mkBefore("/custom/bin") }',
    'env { PATH = lib.mkAfter("/opt/bin") }',
    'env { EDITOR = "nvim", PAGER = lib.mkDefault("less") }',
    'env { PAGER = "most" }',
    'env { EDITOR = lib.mkDefault("vi") }',
    'user { name = "bob", groups = { "wheel" } }',
    'user { name = "bob", groups = { "audio", "video" }, shell = "/bin/zsh" }',
    f'package(lib.mkDefault {{ name = "rg", version = "14", source = {SRC}, bin = {{ "rg" }} }})',
    'package { name = "rg", version = "14.1", bin = { "rg-extra" } }',
    'lib.mkForce(exec { name = "forced", timeout = "5s" })',
    'exec { name = "forced", timeout = "10s" }',
]


def test_order_free_lines_merge_as_expected(sysenv):
    m = evaluate(sysenv, "\n".join(ORDER_FREE_LINES) + "\n")
    h = str(sysenv.home)
    assert thaw(item_of(m, f"file#{h}/a").props) == {
        "content": "A",
        "owner": "u",
        "group": "g",
        "mode": "0600",
        "depends_on": ["exec#setup", f"file#{h}/b"],
        "ensure": "present",
        "provider": "posix",
        "force": False,
    }
    assert value(m, "exec#setup", "environment") == ["Z=0", "A=1", "B=2"]
    assert value(m, "exec#setup", "timeout") == 60
    assert value(m, "env#PATH", "value") == [
        "/custom/bin",
        *sorted([f"{h}/bin", "/usr/local/bin"]),
        "/opt/bin",
    ]
    assert value(m, "env#EDITOR", "value") == "nvim"
    assert value(m, "env#PAGER", "value") == "most"
    assert value(m, "user#bob", "groups") == ["audio", "video", "wheel"]
    assert value(m, "package#rg", "version") == "14.1"
    assert value(m, "package#rg", "bin") == ["rg-extra", "rg"]
    assert value(m, "exec#forced", "timeout") == 5


@pytest.mark.parametrize("order", ["reversed", "odd-even", "rotated"])
def test_fixed_permutations_give_the_same_digest(sysenv, order):
    base = evaluate(sysenv, "\n".join(ORDER_FREE_LINES) + "\n")
    lines = list(ORDER_FREE_LINES)
    if order == "reversed":
        lines.reverse()
    elif order == "odd-even":
        lines = lines[1::2] + lines[0::2]
    else:
        lines = lines[7:] + lines[:7]
    other = evaluate(sysenv, "\n".join(lines) + "\n")
    assert other.canonical() == base.canonical()
    assert other.digest == base.digest


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.permutations(ORDER_FREE_LINES))
def test_any_permutation_gives_the_same_digest(sysenv, lines):
    base = evaluate(sysenv, "\n".join(ORDER_FREE_LINES) + "\n").digest
    assert evaluate(sysenv, "\n".join(lines) + "\n").digest == base


def test_digest_ignores_comments_and_line_numbers_but_not_values(sysenv):
    text = "\n".join(ORDER_FREE_LINES) + "\n"
    base = evaluate(sysenv, text)
    moved = evaluate(sysenv, "-- a comment\n\n" + text.replace("\n", "\n\n"))
    assert moved.digest == base.digest
    assert moved.source_of("env#PAGER") != base.source_of("env#PAGER")
    changed = evaluate(sysenv, text.replace('"most"', '"more"'))
    assert changed.digest != base.digest
    assert len(base.digest) == 64 and int(base.digest, 16) >= 0


def test_explicit_mkdefault_beats_a_value_from_defaults(sysenv):
    # defaults{} fills properties at 1200, weaker than lib.mkDefault (1000).
    path = sysenv.write(
        "sys.lua",
        HEADER + 'file { path = "/srv/a", mode = lib.mkDefault("0600") }\n'
        'file { path = "/srv/a" }\n',
    )
    m = resolve(path, Options())
    assert item_of(m, "file#/srv/a").get("mode") == "0600"
