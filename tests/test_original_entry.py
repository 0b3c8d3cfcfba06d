"""Configs written for the original sys.lua: the `{ inputs, setup }` entry point,
`init.lua` as a default config name, and the original's `sys` table
(`sys.getenv`, `sys.is_elevated`, `sys.os`/`arch`/`platform`, `sys.path.*`)."""

from __future__ import annotations

import json
import os
import platform

import pytest
from conftest import HEADER, apply_ok, current, ok, out, tree

ENTRY = """\
return {
  inputs = {},
  setup = function(inputs)
    local ME, GRP = sys.user.name, sys.user.group
    file { path = "~/from-setup.txt", content = "set up\\n", owner = ME, group = GRP, mode = "0644" }
  end,
}
"""


def test_an_entry_config_runs_its_setup(sysenv) -> None:
    sysenv.write("init.lua", ENTRY)
    p = sysenv.run("apply", "init.lua")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "from-setup.txt").read_text() == "set up\n"
    # no inputs: nothing to lock
    assert not (sysenv.work / "syslua.lock").exists()


def test_setup_gets_an_empty_inputs_table_and_top_level_declarations_count_too(sysenv) -> None:
    sysenv.write(
        "init.lua",
        HEADER
        + """\
file { path = "~/top.txt", content = "top\\n" }
local M = {}
function M.setup(inputs)
  assert(type(inputs) == "table" and next(inputs) == nil, "inputs should be an empty table")
  file { path = "~/inner.txt", content = "inner\\n" }
end
return M
""",
    )
    p = sysenv.run("apply", "init.lua")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "top.txt").read_text() == "top\n"
    assert (sysenv.home / "inner.txt").read_text() == "inner\n"


BAD_RETURNS = {
    "no-setup": (
        "return {\n  inputs = {},\n}\n",
        1,
        "a config's main chunk returned a table without a `setup` function",
    ),
    "setup-not-a-function": (
        'return { setup = "later" }\n',
        1,
        "a config's main chunk returned a table without a `setup` function",
    ),
    "number": ("return 42\n", 1, "a config's main chunk returned a number value"),
    "string": ('local x = 1\nreturn "done"\n', 2, "a config's main chunk returned a string value"),
    "entry-and-more": (
        "local M = { setup = function() end }\nreturn M, 5\n",
        2,
        "a config's main chunk returned 2 values",
    ),
    "inputs-not-a-table": (
        'return {\n  inputs = "git:x",\n  setup = function() end,\n}\n',
        1,
        "`inputs` must be a table",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_RETURNS))
def test_a_bad_entry_is_an_error_at_its_line_and_changes_nothing(sysenv, case) -> None:
    s1 = apply_ok(sysenv, 'file { path = "~/keep.txt", content = "keep\\n" }\n')
    code, line, message = BAD_RETURNS[case]
    sysenv.write("init.lua", code)
    before = tree(sysenv.home), tree(sysenv.work)
    for command in ("plan", "apply"):
        p = sysenv.run(command, "init.lua")
        assert p.returncode == 2, out(p)
        assert f"Error: init.lua:{line}: {message}" in p.stderr, out(p)
        assert "Traceback" not in out(p)
    assert (tree(sysenv.home), tree(sysenv.work)) == before
    assert current(sysenv) == s1


def test_an_error_inside_setup_is_located_at_its_line(sysenv) -> None:
    sysenv.write(
        "init.lua",
        "return {\n  setup = function(inputs)\n    local t = nil\n    return t.x\n  end,\n}\n",
    )
    p = sysenv.run("plan", "init.lua")
    assert p.returncode == 2, out(p)
    assert "Error: init.lua:4: attempt to index local 't' (a nil value)" in p.stderr, out(p)
    assert not (sysenv.root / "state" / "snapshots").exists() or current(sysenv) is None


# -- default config names ---------------------------------------------------------
def _marker(name: str) -> str:
    return (
        f'return {{ setup = function()\n  env {{ WHICH = "{name.replace("~", "home")}" }}\nend }}\n'
    )


def _which(sysenv) -> str:  # type: ignore[no-untyped-def]
    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)
    return p.stdout


@pytest.mark.parametrize(
    "present, expected",
    [
        (["./sys.lua", "./init.lua", "~/sys.lua", "~/init.lua"], "./sys.lua"),
        (["./init.lua", "~/sys.lua", "~/init.lua"], "./init.lua"),
        (["~/sys.lua", "~/init.lua"], "~/sys.lua"),
        (["~/init.lua"], "~/init.lua"),
    ],
)
def test_default_config_order(sysenv, present, expected) -> None:
    config_dir = sysenv.home / ".config" / "syslua"
    for name in present:
        base = sysenv.work if name.startswith("./") else config_dir
        base.mkdir(parents=True, exist_ok=True)
        (base / name[2:]).write_text(_marker(name))
    assert f'+ env WHICH: "{expected.replace("~", "home")}"' in _which(sysenv)


def test_a_directory_with_only_init_lua_is_a_config(sysenv) -> None:
    sysenv.write("dots/init.lua", ENTRY)
    p = sysenv.run("apply", "dots")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "from-setup.txt").exists()
    sysenv.write("empty/readme.txt", "")
    p = sysenv.run("plan", "empty")
    assert p.returncode == 2, out(p)
    assert "no sys.lua or init.lua in empty" in p.stderr, out(p)


def test_no_config_names_both_names(sysenv) -> None:
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert "create ./sys.lua (or ./init.lua) or ~/.config/syslua/sys.lua (or init.lua" in p.stderr


# -- the original's sys table -------------------------------------------------------
def _plain(sysenv) -> dict[str, str]:  # type: ignore[no-untyped-def]
    p = sysenv.run("apply", "-q")
    assert p.returncode == 0, out(p)
    values = {}
    for line in (sysenv.root / "state" / "env.sh").read_text().splitlines():
        if line.startswith("export ") and not line.startswith("export PATH="):
            name, _, value = line[7:].partition("=")
            values[name] = value.strip("'")
    return values


def test_sys_facts_have_the_originals_values(sysenv) -> None:
    got = _plain_values(
        sysenv,
        "v = { OS = sys.os, ARCH = sys.arch, PLATFORM = sys.platform,\n"
        "      ELEVATED = tostring(sys.is_elevated), DIR = sys.dir }",
    )
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    assert got["OS"] == "linux"
    assert got["ARCH"] == arch
    assert got["PLATFORM"] == f"{arch}-linux"
    assert got["ELEVATED"] == ("true" if os.geteuid() == 0 else "false")
    assert got["DIR"] == str(sysenv.work)


def _plain_values(sysenv, lua: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", lua + "\nenv(v)\n")
    return _plain(sysenv)


def test_sys_getenv(sysenv, monkeypatch) -> None:
    monkeypatch.setenv("SYSLUA_TEST_OUT", "/tmp/out dir")
    monkeypatch.delenv("SYSLUA_TEST_UNSET", raising=False)
    got = _plain_values(
        sysenv,
        'v = { OUT = sys.getenv("SYSLUA_TEST_OUT"),\n'
        '      UNSET = tostring(sys.getenv("SYSLUA_TEST_UNSET")) }',
    )
    assert got == {"OUT": "/tmp/out dir", "UNSET": "nil"}
    sysenv.write("sys.lua", "local x = sys.getenv(42)\n")
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert "Error: sys.lua:1: sys.getenv expects a variable name string, got number" in p.stderr


def test_sys_path_helpers(sysenv) -> None:
    (sysenv.work / "real").mkdir()
    os.symlink("real", sysenv.work / "alias")
    got = _plain_values(
        sysenv,
        """\
local p = sys.path
local parts = p.split("/a/./b//c/")
v = {
  JOIN = p.join("a", "b", "c.txt"),
  JOIN_ABS = p.join("a", "/b", "c"),
  DIRNAME = p.dirname("/x/y/z.txt"),
  DIRNAME_ROOT = "[" .. p.dirname("/") .. "]",
  BASENAME = p.basename("/x/y/z.txt"),
  EXTNAME = p.extname("archive.tar.gz"),
  EXTNAME_DOT = "[" .. p.extname(".bashrc") .. "]",
  ABS = tostring(p.is_absolute("/x")) .. "," .. tostring(p.is_absolute("x")),
  NORM = p.normalize("/a/b/../c/./d"),
  REL = p.relative("/a/b/c", "/a/d/e"),
  SPLIT = table.concat(parts, "|"),
  RESOLVE = p.resolve("sub", "../other", "f"),
  RESOLVE_HOME = p.resolve("~", "x"),
  CANON = p.canonicalize("alias"),
  CALL = sys.path("rel/x"),
}
""",
    )
    assert got == {
        "JOIN": "a/b/c.txt",
        "JOIN_ABS": "/b/c",
        "DIRNAME": "/x/y",
        "DIRNAME_ROOT": "[]",
        "BASENAME": "z.txt",
        "EXTNAME": ".gz",
        "EXTNAME_DOT": "[]",
        "ABS": "true,false",
        "NORM": "/a/c/d",
        "REL": "../../d/e",
        "SPLIT": "/|a|b|c",
        "RESOLVE": f"{sysenv.work}/other/f",
        "RESOLVE_HOME": f"{sysenv.home}/x",
        "CANON": f"{sysenv.work}/real",
        "CALL": f"{sysenv.work}/rel/x",
    }


@pytest.mark.parametrize(
    "code, message",
    [
        ("sys.path.join('a', 1)", "sys.path.join expects path strings, argument 2 is a number"),
        ("sys.path.dirname()", "sys.path.dirname expects 1 path string, got 0 arguments"),
        ("sys.path.relative('/a')", "sys.path.relative expects 2 path strings, got 1 argument"),
        (
            "sys.path.canonicalize('nowhere')",
            "sys.path.canonicalize: cannot canonicalize {work}/nowhere: No such file or directory",
        ),
        ("sys.path(nil)", "sys.path expects a path string"),
    ],
)
def test_sys_path_misuse_is_located(sysenv, code, message) -> None:
    sysenv.write("sys.lua", f"local ok = true\nlocal x = {code}\n")
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert f"Error: sys.lua:2: {message.format(work=sysenv.work)}" in p.stderr, out(p)


def test_the_original_example_shape_runs(sysenv) -> None:
    """The shape of the original's examples/basic: `sys.path` helpers on
    `sys.getenv('HOME')` and `sys.dir`, inside `setup`."""
    sysenv.write("dotfiles/starship.toml", "[character]\n")
    sysenv.write(
        "config/init.lua",
        """\
local M = {}
M.inputs = {}
function M.setup()
  local path = sys.path
  local ME, GRP = sys.user.name, sys.user.group
  file {
    path = path.resolve(path.join(sys.getenv('HOME'), '.config', 'starship.toml')),
    source = path.resolve(path.join(sys.dir, '..', 'dotfiles', 'starship.toml')),
    owner = ME, group = GRP, mode = "0644",
  }
end
return M
""",
    )
    p = sysenv.run("apply", "config")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / ".config" / "starship.toml").read_text() == "[character]\n"


def test_setup_runs_under_the_evaluation_time_limit(sysenv) -> None:
    sysenv.write("init.lua", "return {\n  setup = function()\n    while true do end\n  end,\n}\n")
    p = sysenv.run("plan", "--eval-timeout", "0.5", "init.lua")
    assert p.returncode == 2, out(p)
    assert "Error: evaluation did not finish within 0.5 s (init.lua:3)" in p.stderr, out(p)


def test_sys_path_helpers_leave_extra_arguments_alone(sysenv) -> None:
    """Like any Lua function (and the original's), a helper of fixed arity takes
    its first arguments: gsub's count after the string is not an error."""
    sysenv.write(
        "sys.lua",
        "env { B = sys.path.basename(('/a/b/'):gsub('/$', '')),\n"
        "      R = sys.path.relative('/a/b', '/a/c', 'extra') }\n",
    )
    p = sysenv.run("plan", "--json")
    ok(p)
    items = {i["key"]: i["props"]["value"] for i in json.loads(p.stdout)["manifest"]["items"]}
    assert items == {"B": "b", "R": "../c"}
