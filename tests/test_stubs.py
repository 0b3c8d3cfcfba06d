"""The lua-language-server stubs in lua/types/ follow the schema.

`lua/types/generated.lua` is written by `python -m syslua.manifest.stubs`
from the schema; these tests fail when the committed file has drifted from
what the generator produces, and check what the generated text says.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lupa.luajit21 as lupa
import pytest
from conftest import item_of

from syslua.eval import constants
from syslua.manifest import schema, stubs


def test_committed_stubs_match_the_schema():
    committed = stubs.path().read_text(encoding="utf-8")
    assert committed == stubs.render(), (
        f"{stubs.path()} is out of date with syslua/manifest/schema.py: run `{stubs.COMMAND}` and commit the result"
    )


def test_check_mode_reports_drift_with_the_command(tmp_path, monkeypatch):
    stale = tmp_path / "generated.lua"
    stale.write_text("---@meta\n")
    monkeypatch.setattr(stubs, "path", lambda: stale)
    assert stubs.main(["--check"]) == 1
    assert stubs.main([]) == 0
    assert stale.read_text() == stubs.render()
    assert stubs.main(["--check"]) == 0


def test_the_module_runs_as_a_command():
    p = subprocess.run(
        [sys.executable, "-m", "syslua.manifest.stubs", "--check"], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("name", ["generated.lua", "syslua.lua"])
def test_stub_files_are_valid_lua(name):
    code = (stubs.path().parent / name).read_bytes()
    lua = lupa.LuaRuntime()
    ok, err = lua.eval("function(code) local f, e = loadstring(code); return f ~= nil, e end")(code)
    assert ok, err


def test_every_property_of_every_declaration_is_described():
    text = stubs.render()
    for type_ in stubs.declarations():
        sch = schema.of(type_)
        for prop in sch.props.values():
            optional = "" if prop.name == sch.key else "?"
            assert f"---@field {prop.name}{optional} {schema.lua_type(prop)} " in text, (
                type_,
                prop.name,
            )
            assert prop.doc, f"{type_}.{prop.name} has no doc text in the schema"
        assert f"---@class {stubs.class_name(type_)}: {stubs.class_name(type_, True)}" in text


def test_properties_defaults_may_supply_are_optional():
    text = stubs.render()
    for field in ("owner", "group", "mode"):
        line = next(ln for ln in text.splitlines() if ln.startswith(f"---@field {field}? "))
        assert "required, may come from defaults{}" in line
    assert (
        '---@field ensure? "present"|"absent"|"directory"|"link" what should be at path; default "present"'
        in text
    )
    assert "---@field path string " in text and "---@field file? SysluaFileProps" in text


def test_priorities_in_the_stubs_are_the_constants():
    text = stubs.render()
    assert f"---Priority {constants.FORCE}: override whatever else is declared." in text
    assert (
        f"mkAfter {constants.AFTER})" in text and f"defaults{{}} {constants.FROM_DEFAULTS}" in text
    )


def test_hand_written_stubs_keep_sys_and_lib():
    hand = (Path(stubs.path()).parent / "syslua.lua").read_text()
    for needle in (
        "sys = {",
        "function sys.readFile",
        "function sys.readDir",
        "function sys.glob",
        "function lib.fetchUrl",
        "---@class SysluaRef",
        "---@class SysluaSource",
    ):
        assert needle in hand
    # nothing generated is also written by hand
    assert "function file(" not in hand and "lib.mkForce" not in hand


def _config_names(tmp_path: Path) -> dict[str, list[str]]:
    """The names a config can use, read from a real evaluation: the keys of
    `sys`, `sys.user` and `lib`, and the declaration globals."""
    from syslua.eval.constants import KEYS
    from syslua.manifest.resolve import resolve

    config = tmp_path / "sys.lua"
    globals_ = [k for k in KEYS if k not in ("build", "bind")]
    config.write_text(
        "local function keys(t)\n"
        "  local out = {}\n"
        "  for k in pairs(t) do out[#out + 1] = k end\n"
        "  table.sort(out)\n"
        '  return table.concat(out, ",")\n'
        "end\n"
        "local seen = {}\n"
        f"for _, g in ipairs({{ {', '.join(repr(g) for g in globals_)} }}) do\n"
        "  if _G[g] ~= nil then seen[#seen + 1] = g end\n"
        "end\n"
        'env { SYS_KEYS = keys(sys), USER_KEYS = keys(sys.user), LIB_KEYS = keys(lib), GLOBALS = table.concat(seen, ",") }\n'
    )
    manifest = resolve(config)
    return {
        name.lower(): item_of(manifest, f"env#{name}").get("value").split(",")
        for name in ("SYS_KEYS", "USER_KEYS", "LIB_KEYS", "GLOBALS")
    }


def test_every_name_a_config_can_use_is_in_the_stubs(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    names = _config_names(tmp_path)
    types = stubs.path().parent
    text = (types / "syslua.lua").read_text() + (types / "generated.lua").read_text()
    sys_class = text.split("---@class SysluaSys\n", 1)[1].split("sys = {}", 1)[0]
    user_class = text.split("---@class SysluaUserFacts\n", 1)[1].split("\n\n", 1)[0]
    missing = [
        f"sys.{k}"
        for k in names["sys_keys"]
        if f"---@field {k} " not in sys_class and f"function sys.{k}(" not in text
    ]
    missing += [f"sys.user.{k}" for k in names["user_keys"] if f"---@field {k} " not in user_class]
    missing += [f"lib.{k}" for k in names["lib_keys"] if f"function lib.{k}(" not in text]
    missing += [
        g
        for g in names["globals"]
        if f"function {g}(" not in text and f"---@class {g}lib" not in text
    ]
    assert not missing, f"described nowhere in {types}: {missing}"
    # the primitives and the helpers added with file trees are among them
    for name in ("sys.build", "sys.bind", "sys.readDir", "sys.glob", "sys.path"):
        assert name.split(".")[1] in names["sys_keys"] and f"function {name}(" in text
    for ctx_method in ("function SysluaActionCtx:exec(", "function SysluaActionCtx:fetch_url("):
        assert ctx_method in text


def test_the_new_file_properties_are_in_the_stubs():
    text = stubs.render()
    fields = text.split("---@class SysluaFileProps: SysluaCommon\n", 1)[1].split("\n\n", 1)[0]
    for prop in ("target", "link", "template", "ignore", "dir_mode", "source", "content"):
        assert f"---@field {prop}? " in fields, prop
