"""Evaluating sys.lua in the sandboxed LuaJIT (SPEC sections 2 and 9).

Every test writes a real config into a temp work dir (`sysenv`) and evaluates
it with the real resolver; nothing is mocked. Errors are checked by type and
by the text the user sees (`err.render()`), including `sys.lua:LINE`.
"""

from __future__ import annotations

import grp
import os
import pwd
from typing import Any

import pytest
from conftest import HEADER, item_of

from syslua.errors import ConfigError
from syslua.eval import lua as evallua
from syslua.eval.lua import run_config
from syslua.manifest.model import Manifest, thaw
from syslua.manifest.resolve import Options, resolve
from syslua.paths import shipped_dirs

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def evaluate(sysenv: Any, text: str, *, name: str = "sys.lua", **options: Any) -> Manifest:
    path = sysenv.write(name, text)
    return resolve(path, Options(**options))


def failure(sysenv: Any, text: str, *, name: str = "sys.lua", **options: Any) -> ConfigError:
    path = sysenv.write(name, text)
    with pytest.raises(ConfigError) as info:
        resolve(path, Options(**options))
    err = info.value
    assert type(err) is ConfigError, f"expected a plain ConfigError, got {type(err).__name__}"
    assert "Traceback" not in err.render()
    return err


def env_values(m: Manifest) -> dict[str, Any]:
    return {i.key: thaw(i.get("value")) for i in m.of_type("env")}


def home(sysenv: Any) -> str:
    return str(sysenv.home)


def work(sysenv: Any) -> str:
    return str(sysenv.work)


# ---------------------------------------------------------------------------
# 1. the sandbox: pure by default
# ---------------------------------------------------------------------------

PURE_HINT = "evaluation is pure (run with --impure to allow it)"

# (id, line 2 of sys.lua, message after "sys.lua:2: ", hint or None)
BLOCKED_IN_PURE_MODE = [
    (
        "python-global",
        'local v = python.eval("1")',
        "attempt to index global 'python' (a nil value)",
        None,
    ),
    (
        "python-builtins",
        'local v = python.builtins.open("/etc/passwd")',
        "attempt to index global 'python' (a nil value)",
        None,
    ),
    (
        "os.execute",
        'os.execute("true")',
        "attempt to call field 'execute' (a nil value)",
        f"os.execute is not available: {PURE_HINT}",
    ),
    (
        "io.popen",
        'local h = io.popen("ls")',
        "attempt to call field 'popen' (a nil value)",
        f"io.popen is not available: {PURE_HINT}",
    ),
    (
        "io.write",
        'io.write("hello")',
        "attempt to call field 'write' (a nil value)",
        f"writing files is not available: {PURE_HINT}",
    ),
    (
        "io.output",
        'io.output("out.txt")',
        "attempt to call field 'output' (a nil value)",
        f"writing files is not available: {PURE_HINT}",
    ),
    (
        "os.remove",
        'os.remove("victim.txt")',
        "attempt to call field 'remove' (a nil value)",
        f"os.remove is not available: {PURE_HINT}",
    ),
    (
        "os.rename",
        'os.rename("victim.txt", "moved.txt")',
        "attempt to call field 'rename' (a nil value)",
        f"os.rename is not available: {PURE_HINT}",
    ),
    (
        "os.exit",
        "os.exit(3)",
        "attempt to call field 'exit' (a nil value)",
        "os.exit is not available while evaluating a config",
    ),
    (
        "package.loadlib",
        'local f = package.loadlib("libc.so.6", "system")',
        "attempt to call field 'loadlib' (a nil value)",
        None,
    ),
    (
        "io.open-w",
        'local f = io.open("out.txt", "w")',
        "io.open: only reading is allowed while evaluating (mode 'w'); run with --impure to write files",
        None,
    ),
    (
        "io.open-a",
        'local f = io.open("victim.txt", "a")',
        "io.open: only reading is allowed while evaluating (mode 'a'); run with --impure to write files",
        None,
    ),
    (
        "io.open-r+",
        'local f = io.open("victim.txt", "r+")',
        "io.open: only reading is allowed while evaluating (mode 'r+'); run with --impure to write files",
        None,
    ),
    (
        "io.open-wb",
        'local f = io.open("~/out.bin", "wb")',
        "io.open: only reading is allowed while evaluating (mode 'wb'); run with --impure to write files",
        None,
    ),
    (
        "io.lines-stdin",
        "for l in io.lines() do end",
        "io.lines: a path is required while evaluating",
        None,
    ),
]


@pytest.mark.parametrize(
    "snippet,message,hint",
    [pytest.param(s, m, h, id=i) for i, s, m, h in BLOCKED_IN_PURE_MODE],
)
def test_pure_mode_blocks_side_effects(sysenv, snippet, message, hint):
    victim = sysenv.write("victim.txt", "original\n")
    err = failure(sysenv, f"-- line 1 is a comment\n{snippet}\n")
    text = err.render()
    assert str(err.source) == "sys.lua:2"
    assert text.startswith(f"sys.lua:2: {message}\n  2 | {snippet}")
    if hint is None:
        assert "\n\n" not in text
    else:
        assert text.endswith(f"\n\n{hint}")
    # nothing was written, moved or removed
    assert victim.read_text() == "original\n"
    assert sorted(p.name for p in sysenv.work.iterdir()) == ["sys.lua", "victim.txt"]
    assert list(sysenv.home.iterdir()) == []


def test_require_ffi_is_not_available_in_pure_mode(sysenv):
    err = failure(sysenv, 'local x = 1\nlocal ffi = require("ffi")\n')
    text = err.render()
    assert text.startswith("sys.lua:2: module 'ffi' not found:")
    assert "no field package.preload['ffi']" in text
    assert f"no file '{work(sysenv)}/ffi.lua'" in text
    assert '  2 | local ffi = require("ffi")' in text


@pytest.mark.parametrize(
    "expr,expected",
    [
        ("type(python)", "nil"),
        ("type(os.execute)", "nil"),
        ("type(os.exit)", "nil"),
        ("type(os.remove)", "nil"),
        ("type(io.popen)", "nil"),
        ("type(io.write)", "nil"),
        ("type(io.stdout)", "nil"),
        ("type(package.loadlib)", "nil"),
        ("type(package.preload.ffi)", "nil"),
        ("type(debug.getupvalue)", "nil"),
        ("type(debug.sethook)", "nil"),
        ("tostring(package.cpath)", ""),
        # what stays available
        ("type(os.time)", "function"),
        ("type(os.getenv)", "function"),
        ("type(io.open)", "function"),
        ("type(debug.traceback)", "function"),
        ("type(string.format)", "function"),
    ],
)
def test_pure_mode_globals(sysenv, expr, expected):
    m = evaluate(sysenv, f"env {{ V = {expr} }}\n")
    assert env_values(m)["V"] == expected


@pytest.mark.parametrize(
    "snippet",
    [
        pytest.param('require("os").execute("touch {marker}")', id="require-os-execute"),
        pytest.param('package.loaded.os.execute("touch {marker}")', id="package.loaded.os-execute"),
        pytest.param(
            'local f = require("io").open("{marker}", "w"); f:write("x"); f:close()',
            id="require-io-open-w",
        ),
        pytest.param(
            'local f = package.loaded.io.open("{marker}", "w"); f:write("x"); f:close()',
            id="package.loaded.io-open-w",
        ),
        pytest.param(
            'local h = require("io").popen("touch {marker}"); h:close()', id="require-io-popen"
        ),
    ],
)
def test_pure_mode_cannot_be_bypassed_through_loaded_libraries(sysenv, snippet):
    marker = sysenv.work / "pwned"
    path = sysenv.write("sys.lua", snippet.format(marker=marker) + "\n")
    try:
        with pytest.raises(ConfigError):
            resolve(path, Options())
    finally:
        # the side effect must not have happened either way
        assert not marker.exists()


# ---------------------------------------------------------------------------
# --impure
# ---------------------------------------------------------------------------


def test_impure_allows_execute_popen_and_writing(sysenv):
    marker = sysenv.work / "made-by-execute"
    written = sysenv.work / "written.txt"
    m = evaluate(
        sysenv,
        f"""\
        local ok = os.execute("touch {marker}")
        local h = io.popen("echo from-popen")
        local out = h:read("*a")
        h:close()
        local f = io.open("written.txt", "w")
        f:write("impure write\\n")
        f:close()
        local ffi = require("ffi")
        env {{ OUT = (out:gsub("%s+$", "")), FFI = type(ffi), EXIT = type(os.exit) }}
        """,
        impure=True,
    )
    assert marker.exists()
    assert written.read_text() == "impure write\n"
    assert env_values(m) == {"OUT": "from-popen", "FFI": "table", "EXIT": "nil"}


def test_impure_still_has_no_os_exit(sysenv):
    err = failure(sysenv, "local a = 1\nos.exit(0)\n", impure=True)
    assert err.render().startswith(
        "sys.lua:2: attempt to call field 'exit' (a nil value)\n  2 | os.exit(0)"
    )
    # no "run with --impure" hint when already impure
    assert "--impure" not in err.render()


def test_impure_hint_is_not_given_in_impure_mode(sysenv):
    err = failure(sysenv, 'local t = {}\nt.execute("x")\n', impure=True)
    assert (
        err.render()
        == "sys.lua:2: attempt to call field 'execute' (a nil value)\n  2 | t.execute(\"x\")"
    )


def test_run_config_raw_eval_impure_flag(sysenv):
    """`run_config` directly: the same chunk fails pure and works impure."""
    path = sysenv.write("sys.lua", 'local h = io.popen("echo 1"); h:close()\nexec { name = "x" }\n')
    kwargs: dict[str, Any] = dict(core={}, facts={}, data={}, root_dir=str(sysenv.work))
    with pytest.raises(ConfigError) as info:
        run_config(path, **kwargs)
    assert info.value.hint == f"io.popen is not available: {PURE_HINT}"
    result = run_config(path, impure=True, **kwargs)
    assert [(d.type, d.props, d.source.line) for d in result.declarations] == [
        ("exec", {"name": "x"}, 2)
    ]
    assert result.inputs == [str(path)]


# ---------------------------------------------------------------------------
# reading files: recorded as inputs
# ---------------------------------------------------------------------------


def test_read_helpers_record_inputs(sysenv):
    sysenv.write("dotfiles/aliases.sh", "alias ll='ls -l'\n")
    sysenv.write("plain.txt", "via io.open\n")
    sysenv.write("lines.txt", "one\ntwo\n")
    sysenv.write("chunk.lua", "return 'from dofile'\n")
    sysenv.write("loaded.lua", "return 'from loadfile'\n")
    (sysenv.home / "h.txt").write_text("in home\n")
    m = evaluate(
        sysenv,
        """\
        local a = sys.readFile("dotfiles/aliases.sh")
        local h = sys.readFile("~/h.txt")
        local f = io.open("plain.txt")
        local p = f:read("*a")
        f:close()
        local n = 0
        for _ in io.lines("lines.txt") do n = n + 1 end
        local d = dofile("chunk.lua")
        local l = loadfile("loaded.lua")()
        env { A = a, H = h, P = p, N = n, D = d, L = l }
        """,
    )
    assert env_values(m) == {
        "A": "alias ll='ls -l'\n",
        "H": "in home\n",
        "P": "via io.open\n",
        "N": "2",
        "D": "from dofile",
        "L": "from loadfile",
    }
    w, h = work(sysenv), home(sysenv)
    assert list(m.inputs) == [
        f"{w}/sys.lua",
        f"{w}/dotfiles/aliases.sh",
        f"{h}/h.txt",
        f"{w}/plain.txt",
        f"{w}/lines.txt",
        f"{w}/chunk.lua",
        f"{w}/loaded.lua",
    ]


def test_read_file_absolute_path_is_recorded_once(sysenv):
    data = sysenv.write("data.txt", "x")
    m = evaluate(
        sysenv,
        f'local a = sys.readFile("{data}")\nlocal b = sys.readFile("data.txt")\nenv {{ A = a .. b }}\n',
    )
    assert env_values(m) == {"A": "xx"}
    assert list(m.inputs) == [f"{work(sysenv)}/sys.lua", str(data)]


@pytest.mark.parametrize(
    "snippet,message",
    [
        ('local t = sys.readFile("missing.txt")', "sys.readFile: cannot read missing.txt: "),
        ("local t = sys.readFile(42)", "sys.readFile expects a path string"),
        ("local t = sys.path(nil)", "sys.path expects a path string"),
        ('dofile("nope.lua")', "<work>/nope.lua: No such file or directory"),
    ],
)
def test_read_errors_are_located(sysenv, snippet, message):
    message = message.replace("<work>", work(sysenv))
    err = failure(sysenv, f"local x = 0\n{snippet}\n")
    text = err.render()
    assert text.startswith(f"sys.lua:2: {message}")
    assert f"\n  2 | {snippet}" in text


def test_sys_path_and_dir(sysenv):
    m = evaluate(
        sysenv,
        'env { DIR = sys.dir, REL = sys.path("a/b"), HOME_ = sys.path("~/c"), ABS = sys.path("/x") }\n',
    )
    assert env_values(m) == {
        "DIR": work(sysenv),
        "REL": f"{work(sysenv)}/a/b",
        "HOME_": f"{home(sysenv)}/c",
        "ABS": "/x",
    }


# ---------------------------------------------------------------------------
# facts
# ---------------------------------------------------------------------------


def test_core_facts(sysenv):
    m = evaluate(
        sysenv,
        "env { OS = sys.os, ARCH = sys.arch, PLATFORM = sys.platform, HOST = sys.hostname,"
        " U = sys.user.name, G = sys.user.group, UID = sys.user.uid, CCMHOST = sys.facts.host.info.hostname,"
        " CCMOS = sys.facts.host.info.os }\n",
    )
    v = env_values(m)
    import platform
    import socket

    assert v["OS"] == platform.system().lower() == v["CCMOS"]
    assert v["PLATFORM"] == f"{v['ARCH']}-{v['OS']}"
    assert v["HOST"] == socket.gethostname() == v["CCMHOST"]
    assert v["U"] == pwd.getpwuid(os.getuid()).pw_name
    assert v["G"] == grp.getgrgid(os.getgid()).gr_name
    assert v["UID"] == str(os.getuid())


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, ("", "")),
        ({".dockerenv": ""}, ("docker", "guest")),
        ({"run/.containerenv": ""}, ("podman", "guest")),
        ({"proc/1/environ": "PATH=/bin\0container=lxc\0"}, ("lxc", "guest")),
        ({"proc/self/cgroup": "0::/docker/4f1e\n"}, ("docker", "guest")),
        ({"proc/self/cgroup": "0::/init.scope\n"}, ("", "")),
        ({"sys/class/dmi/id/sys_vendor": "QEMU\n"}, ("kvm", "guest")),
        ({"sys/class/dmi/id/product_name": "VMware Virtual Platform\n"}, ("vmware", "guest")),
        ({"sys/class/dmi/id/sys_vendor": "Dell Inc.\n"}, ("", "")),
    ],
)
def test_virtualization_facts_read_the_file_system(tmp_path, files, expected, monkeypatch):
    """host.info.virtualizationSystem / virtualizationRole, as CCM names them."""
    from syslua.eval import facts

    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    # the made-up file system stands for /: what the function reads is moved there
    read, exists = facts._read, os.path.exists
    with monkeypatch.context() as m:
        m.setattr(facts, "_read", lambda path: read(f"{tmp_path}{path}"))
        m.setattr(os.path, "exists", lambda path: exists(f"{tmp_path}{path}"))
        found = facts._virtualization()
    assert found == expected


def test_virtualization_facts_are_in_host_info(sysenv):
    m = evaluate(
        sysenv,
        "env { V = '[' .. sys.facts.host.info.virtualizationSystem .. ']',"
        " R = '[' .. sys.facts.host.info.virtualizationRole .. ']' }\n",
    )
    v = env_values(m)
    assert v["V"] in {"[]", "[docker]", "[podman]", "[lxc]", "[kvm]", "[vmware]", "[vbox]", "[xen]"}
    assert v["R"] == ("[]" if v["V"] == "[]" else "[guest]")


def test_user_and_cli_facts(sysenv):
    cfg = sysenv.home / ".config" / "syslua"
    cfg.mkdir(parents=True)
    (cfg / "facts.json").write_text('{"role": "laptop", "site": {"dc": "ams", "rack": 4}}')
    m = evaluate(
        sysenv,
        "env { ROLE = sys.facts.role, DC = sys.facts.site.dc, RACK = sys.facts.site.rack, TEAM = sys.facts.team.name }\n",
        cli_facts={"site": {"dc": "fra"}, "team": {"name": "infra"}},
    )
    assert env_values(m) == {"ROLE": "laptop", "DC": "fra", "RACK": "4", "TEAM": "infra"}


# ---------------------------------------------------------------------------
# require
# ---------------------------------------------------------------------------

# (files written beside sys.lua, module name, expected value, module file relative to work)
REQUIRE_CASES = [
    ({"helper.lua": "return { value = 'beside' }"}, "helper", "beside", "helper.lua"),
    (
        {"modules/git.lua": "return { value = 'dotted' }"},
        "modules.git",
        "dotted",
        "modules/git.lua",
    ),
    ({"shell/init.lua": "return { value = 'init' }"}, "shell", "init", "shell/init.lua"),
    ({"a/b/c.lua": "return { value = sys.dir }"}, "a.b.c", "<work>", "a/b/c.lua"),
]


@pytest.mark.parametrize(
    "files,module,expected,rel", REQUIRE_CASES, ids=[c[1] for c in REQUIRE_CASES]
)
def test_require_finds_modules_beside_the_config(sysenv, files, module, expected, rel):
    for name, text in files.items():
        sysenv.write(name, text + "\n")
    m = evaluate(
        sysenv,
        f'local mod = require("{module}")\nenv {{ V = mod.value, SAME = tostring(require("{module}") == mod) }}\n',
    )
    assert env_values(m) == {"V": expected.replace("<work>", work(sysenv)), "SAME": "true"}
    assert f"{work(sysenv)}/{rel}" in m.inputs


def test_require_missing_module_lists_the_places_tried(sysenv):
    err = failure(sysenv, '\nlocal m = require("nothere.mod")\n')
    text = err.render()
    assert text.startswith("sys.lua:2: module 'nothere.mod' not found:")
    lua_dir, _ = shipped_dirs()
    for tried in (
        f"{work(sysenv)}/nothere/mod.lua",
        f"{work(sysenv)}/nothere/mod/init.lua",
        f"{lua_dir}/nothere/mod.lua",
    ):
        assert f"no file '{tried}'" in text


def test_require_pkgs_modules_from_the_package_catalogue(sysenv, tmp_path, monkeypatch):
    """`pkgs.*` is looked up in the shipped catalogue; point it at a temp one."""
    lua_dir, _ = shipped_dirs()
    catalogue = tmp_path / "catalogue" / "pkgs"
    (catalogue / "cli").mkdir(parents=True)
    sha = "ab" * 32
    (catalogue / "cli" / "tool.lua").write_text(
        "local M = {}\n"
        "function M.setup(opts)\n"
        "  local ref = package {\n"
        "    name = 'tool', version = opts.version,\n"
        f"    source = lib.fetchUrl {{ url = 'https://example.org/tool-' .. opts.version .. '.tar.gz', sha256 = '{sha}' }},\n"
        "    bin = { 'tool' },\n"
        "  }\n"
        "  return ref\n"
        "end\n"
        "return M\n"
    )
    monkeypatch.setattr(evallua, "shipped_dirs", lambda: (lua_dir, str(catalogue)))
    m = evaluate(
        sysenv,
        '\nlocal tool = require("pkgs.cli.tool").setup { version = "1.2.3" }\nexec { name = "use", depends_on = { tool } }\n',
    )
    item = m.get("package#tool")
    assert item is not None
    assert thaw(item.props) == {
        "version": "1.2.3",
        "source": {"fetch": "url", "url": "https://example.org/tool-1.2.3.tar.gz", "sha256": sha},
        "bin": ["tool"],
        "strip_components": 0,
    }
    assert m.source_of("package#tool") == f"{catalogue}/cli/tool.lua:3"
    assert thaw(item_of(m, "exec#use").get("depends_on")) == ["package#tool"]
    assert f"{catalogue}/cli/tool.lua" in m.inputs


def test_pkgs_prefix_is_not_searched_beside_the_config(sysenv, tmp_path, monkeypatch):
    lua_dir, _ = shipped_dirs()
    catalogue = tmp_path / "empty" / "pkgs"
    catalogue.mkdir(parents=True)
    monkeypatch.setattr(evallua, "shipped_dirs", lambda: (lua_dir, str(catalogue)))
    err = failure(sysenv, 'local t = require("pkgs.cli.nope")\n')
    assert err.render().startswith("sys.lua:1: module 'pkgs.cli.nope' not found:")
    assert f"no file '{catalogue}/cli/nope.lua'" in err.render()


# ---------------------------------------------------------------------------
# Lua errors: file:line and the offending line
# ---------------------------------------------------------------------------

MODULE = "local M = {}\nfunction M.bad()\n  return nil .. 'x'\nend\nfunction M.strict(v)\n  if not v then error('strict: v is required', 2) end\nend\nreturn M\n"

# (id, extra files, sys.lua text, expected full render)
LUA_ERRORS = [
    (
        "syntax-unclosed-table",
        {},
        'local a = 1\nfile { path = "/x"\nlocal b = 2\n',
        "sys.lua:3: '}' expected (to close '{' at line 2) near 'local'\n  3 | local b = 2",
    ),
    (
        "syntax-bad-token",
        {},
        "-- c\nlocal x = = 1\n",
        "sys.lua:2: unexpected symbol near '='\n  2 | local x = = 1",
    ),
    (
        "runtime-arith",
        {},
        "local t = {}\n\nlocal x = t.missing + 1\n",
        "sys.lua:3: attempt to perform arithmetic on field 'missing' (a nil value)\n  3 | local x = t.missing + 1",
    ),
    (
        "runtime-undefined-global",
        {},
        "local a = 1\nundefined_function()\n",
        # Lua's "attempt to call global ... (a nil value)", in words (test_surprises.py)
        "sys.lua:2: `undefined_function` is not defined\n  2 | undefined_function()\n\n"
        "The declarations are file, exec, apply, package, os_package, user, archive, service, env, defaults, sys.build and sys.bind.",
    ),
    (
        "error-string",
        {},
        'local a = 1\nlocal b = 2\nerror("boom")\n',
        'sys.lua:3: boom\n  3 | error("boom")',
    ),
    (
        "error-level-2-in-module-blames-caller",
        {"mods/m.lua": MODULE},
        'local m = require("mods.m")\nm.strict(nil)\n',
        "sys.lua:2: strict: v is required\n  2 | m.strict(nil)",
    ),
    (
        "runtime-in-module",
        {"mods/m.lua": MODULE},
        'local m = require("mods.m")\n\nm.bad()\n',
        "mods/m.lua:3: attempt to concatenate a nil value\n  3 |   return nil .. 'x'",
    ),
    (
        "syntax-in-module",
        {"mods/broken.lua": "local M = {}\nreturn M M\n"},
        'local m = require("mods.broken")\n',
        "mods/broken.lua:2: '<eof>' expected near 'M'\n  2 | return M M",
    ),
    (
        "declaration-not-a-table",
        {},
        'local a = 1\nexec "echo hi"\n',
        'sys.lua:2: exec expects a table of properties, e.g. exec { ... }, got string\n  2 | exec "echo hi"',
    ),
    (
        "declaration-missing-key",
        {},
        'exec { command = "echo" }\n',
        'sys.lua:1: exec: missing required property `name`\n  1 | exec { command = "echo" }',
    ),
    (
        "declaration-key-not-string",
        {},
        "\nfile { path = 7 }\n",
        "sys.lua:2: file: `path` must be a string, got number\n  2 | file { path = 7 }",
    ),
    (
        "mixed-table",
        {},
        'exec { name = "x", environment = { "A=1", B = "2" } }\n',
        'sys.lua:1: exec.environment: a table mixes list items and named fields\n  1 | exec { name = "x", environment = { "A=1", B = "2" } }',
    ),
    (
        "function-value",
        {},
        "env { A = print }\n",
        "sys.lua:1: env.A.value: a function cannot be a property value\n  1 | env { A = print }",
    ),
    (
        "infinite-number",
        {},
        "env { A = 1/0 }\n",
        "sys.lua:1: env.A.value: numbers must be finite\n  1 | env { A = 1/0 }",
    ),
    (
        "multi-line-declaration-error-points-at-call",
        {},
        'exec {\n  name = "x",\n  environment = function() end,\n}\n',
        "sys.lua:1: exec.environment: a function cannot be a property value\n  1 | exec {",
    ),
]


@pytest.mark.parametrize(
    "files,text,expected",
    [pytest.param(f, t, e, id=i) for i, f, t, e in LUA_ERRORS],
)
def test_lua_errors_are_rendered_with_location_and_line(sysenv, files, text, expected):
    for name, body in files.items():
        sysenv.write(name, body)
    err = failure(sysenv, text)
    assert err.render() == expected


def test_lua_error_location_survives_a_long_config_path(sysenv):
    deep = "projects/dotfiles-and-other-configuration/machines/work-laptop/sys.lua"
    path = sysenv.write(deep, "local a = 1\nerror('boom')\n")
    assert len(str(path)) > 60
    with pytest.raises(ConfigError) as info:
        resolve(path, Options())
    assert info.value.source is not None and info.value.source.file == str(path)
    assert info.value.render() == "sys.lua:2: boom\n  2 | error('boom')"


def test_error_with_table_value_is_located(sysenv):
    """Issue 9: `error({})` names its line, not a table's address."""
    err = failure(sysenv, "error({ code = 1 })\n")
    assert err.source is not None and err.source.line == 1
    assert err.render() == "sys.lua:1: error called with a table value\n  1 | error({ code = 1 })"


# ---------------------------------------------------------------------------
# declaration sources
# ---------------------------------------------------------------------------


def test_declaration_sources_have_the_right_lines(sysenv):
    sysenv.write(
        "mods/m.lua", "local M = {}\nfunction M.setup(o)\n  exec { name = o.name }\nend\nreturn M\n"
    )
    sha = "0" * 64
    m = evaluate(
        sysenv,
        f"""\
        -- comment
        defaults {{ file = {{ owner = "u", group = "g", mode = "644" }} }}

        file {{
          path = "/multi",
          content = "x",
        }}
        local function helper(n)
          exec {{ name = n }}
        end
        helper("h1")
        env {{ A = "1", B = "2" }}
        require("mods.m").setup {{ name = "from-mod" }}
        file(lib.mkForce {{ path = "/forced" }})
        lib.mkForce(file {{ path = "/forced2" }})
        package {{ name = "p", version = "1", source = lib.fetchUrl {{ url = "https://x/p", sha256 = "{sha}" }} }}
        user {{ name = "bob" }}
        exec {{ name = "twice" }}
        exec {{ name = "twice", timeout = "1s" }}
        """,
    )
    expected = {
        "file#/multi": "sys.lua:4",
        "exec#h1": "sys.lua:9",
        "env#A": "sys.lua:12",
        "env#B": "sys.lua:12",
        "exec#from-mod": "mods/m.lua:3",
        "file#/forced": "sys.lua:14",
        "file#/forced2": "sys.lua:15",
        "package#p": "sys.lua:16",
        "user#bob": "sys.lua:17",
        "exec#twice": "sys.lua:18, sys.lua:19",
    }
    assert {ident: m.source_of(ident) for ident in expected} == expected
    assert sorted(m.sources) == sorted(expected)


@pytest.mark.xfail(
    strict=True,
    reason="BUG: `return exec {...}` (a tail call) inside a module function is located at the module's caller, not at the declaration",
)
def test_tail_called_declaration_is_located_in_the_module(sysenv):
    sysenv.write(
        "mods/m.lua",
        "local M = {}\n"
        "function M.bad(o)\n"
        "  return exec { name = o.name, timeout = 'soon' }\n"
        "end\n"
        "return M\n",
    )
    err = failure(sysenv, 'local m = require("mods.m")\nm.bad { name = "b" }\n')
    assert err.render().startswith('mods/m.lua:3: exec: `timeout`: "soon" is not a duration')


def test_sources_of_a_lua_child(sysenv):
    sysenv.write("sub/child.lua", "\n\nexec { name = 'in-child' }\n")
    m = evaluate(sysenv, 'apply { name = "sub/child.lua" }\n')
    assert m.source_of("exec#in-child") == "sub/child.lua:3"
    assert m.source_of(f"apply#{work(sysenv)}/sub/child.lua") == "sys.lua:1"
    assert item_of(m, "exec#in-child").parent == f"apply#{work(sysenv)}/sub/child.lua"


# ---------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------


def test_references_returned_by_declarations(sysenv):
    sysenv.write("child.lua", "-- empty child\n")
    m = evaluate(
        sysenv,
        HEADER
        + """\
local rc = file { path = "~/.zshrc", content = "x" }
local dir = file { path = "~/.config", ensure = "directory" }
local vars = env { EDITOR = "vi", PAGER = "less" }
local build = exec { name = "build" }
local child = apply { name = "child.lua" }
exec {
  name = "use",
  depends_on = { rc, dir, vars, build, child },
  subscribe = rc,
}
env { RC = tostring(rc), VARS = tostring(vars) }
""",
    )
    h, w = home(sysenv), work(sysenv)
    use = item_of(m, "exec#use")
    assert thaw(use.get("depends_on")) == [
        f"file#{h}/.zshrc",
        f"file#{h}/.config",
        "env#EDITOR",
        "env#PAGER",
        "exec#build",
        f"apply#{w}/child.lua",
    ]
    assert thaw(use.get("subscribe")) == [f"file#{h}/.zshrc"]
    # tostring(ref) is what the user wrote, type#key
    assert env_values(m)["RC"] == "file#~/.zshrc"
    assert env_values(m)["VARS"] == "env#EDITOR, env#PAGER"


# (reference string, declaration that makes it valid, normalised id)
REF_NORMALISATION = [
    ("file#~/x", 'file { path = "~/x" }', "file#<home>/x"),
    ("file#~", 'file { path = "~", ensure = "directory" }', "file#<home>"),
    ("file#<home>/x", 'file { path = "~/x" }', "file#<home>/x"),
    ("apply#child.lua", 'apply { name = "child.lua" }', "apply#<work>/child.lua"),
    ("apply#./child.lua", 'apply { name = "child.lua" }', "apply#<work>/child.lua"),
    ("apply#~/../<workname>/child.lua", 'apply { name = "child.lua" }', "apply#<work>/child.lua"),
    ("exec#make all", 'exec { name = "make all" }', "exec#make all"),
    ("env#PATH", 'env { PATH = "/bin" }', "env#PATH"),
    ("user#bob", 'user { name = "bob" }', "user#bob"),
]


@pytest.mark.parametrize(
    "ref,target,normal", REF_NORMALISATION, ids=[r[0] for r in REF_NORMALISATION]
)
def test_string_references_are_normalised_like_their_key(sysenv, ref, target, normal):
    sysenv.write("child.lua", "-- child\n")
    h, w = home(sysenv), work(sysenv)
    ref = ref.replace("<home>", h).replace("<workname>", sysenv.work.name)
    m = evaluate(
        sysenv,
        HEADER
        + f'{target}\nexec {{ name = "x", depends_on = "{ref}", subscribe = {{ "{ref}" }} }}\n',
    )
    expected = normal.replace("<home>", h).replace("<work>", w)
    assert thaw(item_of(m, "exec#x").get("depends_on")) == [expected]
    assert thaw(item_of(m, "exec#x").get("subscribe")) == [expected]


@pytest.mark.parametrize(
    "value,message",
    [
        ('"file#/nope"', "exec x: `depends_on` names file#/nope, which is not declared"),
        ('"exec#x"', "exec x: `depends_on` names the item itself"),
        (
            '"cron#nginx"',
            'exec: `depends_on`: reference "cron#nginx" names an unknown type `cron`',
        ),
        (
            '"fiel#/x"',
            'exec: `depends_on`: reference "fiel#/x" names an unknown type `fiel` (did you mean `file`?)',
        ),
        (
            '"defaults#file"',
            'exec: `depends_on`: reference "defaults#file" names an unknown type `defaults`',
        ),
        (
            '"nohash"',
            'exec: `depends_on`: reference "nohash" must look like "type#key", e.g. "file#~/.zshrc"',
        ),
        (
            '"file#"',
            'exec: `depends_on`: reference "file#" must look like "type#key", e.g. "file#~/.zshrc"',
        ),
        (
            '"file#relative"',
            'exec: `depends_on`: reference "file#relative": file path must be absolute and clean, got "relative"',
        ),
        (
            "{ 42 }",
            'exec: `depends_on`: expected a reference (the value a declaration returns) or "type#key", got the number 42',
        ),
    ],
)
def test_bad_references(sysenv, value, message):
    snippet = f'exec {{ name = "x", depends_on = {value} }}'
    err = failure(sysenv, f"-- refs\n{snippet}\n")
    assert err.render() == f"sys.lua:2: {message}\n  2 | {snippet}"


# ---------------------------------------------------------------------------
# print goes to stderr
# ---------------------------------------------------------------------------


def test_print_goes_to_stderr_not_stdout(sysenv, capfd):
    capfd.readouterr()
    m = evaluate(sysenv, 'print("hello from lua", 42, nil, true)\nprint()\nenv { A = "1" }\n')
    out, err = capfd.readouterr()
    assert out == ""
    assert "hello from lua\t42\tnil\ttrue\n\n" in err
    assert env_values(m) == {"A": "1"}


def test_print_goes_to_stderr_in_the_cli(sysenv):
    sysenv.write("sys.lua", 'print("lua says hi")\n')
    proc = sysenv.run("plan", "sys.lua")
    assert proc.returncode == 0, proc.stderr  # 4 only with --exit-code
    assert "lua says hi" in proc.stderr
    assert "lua says hi" not in proc.stdout


# ---------------------------------------------------------------------------
# isolation between runs and children, apply data
# ---------------------------------------------------------------------------


def test_each_file_gets_a_fresh_runtime(sysenv):
    sysenv.write(
        "child.lua", "env { LEAK = tostring(shared_global), DATA = sys.data.who, DIR = sys.dir }\n"
    )
    sysenv.write("sub/other.lua", "env { OTHER_DIR = sys.dir }\n")
    m = evaluate(
        sysenv,
        'shared_global = "parent"\napply { name = "child.lua", data = { who = "me" } }\napply { name = "sub/other.lua" }\n',
    )
    assert env_values(m) == {
        "LEAK": "nil",
        "DATA": "me",
        "DIR": work(sysenv),
        "OTHER_DIR": f"{work(sysenv)}/sub",
    }


def test_declared_values_are_captured_when_declared(sysenv):
    m = evaluate(
        sysenv, 'local t = { "A=1" }\nexec { name = "x", environment = t }\nt[1] = "A=2"\n'
    )
    assert thaw(item_of(m, "exec#x").get("environment")) == ["A=1"]


def test_nested_apply_data_reaches_a_lua_child(sysenv):
    sysenv.write("child.lua", "env { B = tostring(sys.data.nested.b), L = sys.data.list[2] }\n")
    m = evaluate(
        sysenv, 'apply { name = "child.lua", data = { nested = { b = 9 }, list = { "x", "y" } } }\n'
    )
    assert env_values(m) == {"B": "9", "L": "y"}
