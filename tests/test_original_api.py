"""The original sys.lua's API on syslua, through the real `sys` command line.

Configs here are written the way the original's users write them (its
`sys.build`/`sys.bind` signatures, `ctx:exec`, `ctx:script`, checks that
return `{ drifted, message }`, `require('syslua')` modules), in the flat form
(top-level code) that syslua runs today. Every refusal is checked for its
message, its location and that nothing changed on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HEADER, ok, q, tree
from conftest import out as out_of
from httpserver import LocalServer

# Real accounts (useradd, the account files): the tests of this group take
# turns (conftest.machine_lock), whichever worker runs them.
pytestmark = pytest.mark.xdist_group("accounts")


def config(sysenv, body: str) -> None:
    sysenv.write("sys.lua", HEADER + body)


def trees(sysenv, suffix: str = "") -> list[Path]:
    d = sysenv.root / "store" / "trees"
    return sorted(p for p in d.iterdir() if p.name.endswith(suffix)) if d.is_dir() else []


def bind_outputs(sysenv) -> list[dict]:
    d = sysenv.root / "state" / "binds"
    return [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))] if d.is_dir() else []


def refused(sysenv, body: str, message: str, cmd: str = "apply") -> str:
    """Apply `body`: exit 2 with `message` at a sys.lua line, and nothing changed."""
    before_root, before_home = tree(sysenv.root), tree(sysenv.home)
    config(sysenv, body)
    res = sysenv.run(cmd)
    text = out_of(res)
    assert res.returncode == 2, text
    assert message in text, text
    assert tree(sysenv.root) == before_root
    assert tree(sysenv.home) == before_home
    return text


# -- builds ----------------------------------------------------------------------


def test_build_with_exec_string_and_inputs_function(sysenv):
    config(
        sysenv,
        """
        sys.build {
          id = "words",
          inputs = function() return { word = "lua" } end,
          create = function(inputs, ctx)
            ctx:exec("echo " .. inputs.word .. " > " .. ctx.out .. "/word.txt")
            local upper = ctx:exec("tr a-z A-Z < " .. ctx.out .. "/word.txt")
            ctx:exec { bin = "/bin/sh", args = { "-c", 'printf "%s" "$1" > "$2"', "sh", upper, ctx.out .. "/upper.txt" } }
            return { out = ctx.out }
          end,
        }
        """,
    )
    ok(sysenv.run("apply"))
    [t] = trees(sysenv, "-words")
    assert (t / "word.txt").read_text() == "lua\n"
    assert (t / "upper.txt").read_text() == "LUA"
    res = sysenv.run("apply")
    ok(res)
    assert "No changes" in res.stdout


def test_build_without_id_is_named_by_what_it_does(sysenv):
    body = """
        sys.build { create = function(inputs, ctx) ctx:exec("echo %s > " .. ctx.out .. "/v") end }
        """
    config(sysenv, body % "one")
    ok(sysenv.run("apply"))
    [first] = trees(sysenv, "")
    assert "-build-" in first.name
    config(sysenv, body % "two")
    ok(sysenv.run("apply"))
    names = {p.name for p in trees(sysenv, "")}
    assert len(names) == 2 and first.name in names  # a new build; the old tree stays until gc


def test_multi_build_uses_the_first_build_through_inputs(sysenv):
    config(
        sysenv,
        """
        local data = sys.build {
          id = "data",
          create = function(_, ctx)
            ctx:exec("echo DATA > " .. ctx.out .. "/data.txt")
            return { file = ctx.out .. "/data.txt" }
          end,
        }
        sys.build {
          id = "copy",
          inputs = { data = data },
          create = function(inputs, ctx)
            ctx:exec("cat " .. inputs.data.outputs.file .. " " .. inputs.data.outputs.file .. " > " .. ctx.out .. "/twice.txt")
          end,
        }
        """,
    )
    res = sysenv.run("apply", "--json")
    ok(res)
    order = [
        json.loads(line)["id"]
        for line in res.stdout.splitlines()
        if json.loads(line)["event"] == "item"
    ]
    assert order == ["build#data", "build#copy"]
    [copy] = trees(sysenv, "-copy")
    assert (copy / "twice.txt").read_text() == "DATA\nDATA\n"


def test_a_failed_build_skips_the_bind_that_takes_it_as_input(sysenv):
    config(sysenv, 'file { path = "~/keep.txt", content = "before" }\n')
    ok(sysenv.run("apply"))
    config(
        sysenv,
        f"""
        file {{ path = "~/keep.txt", content = "after" }}
        local broken = sys.build {{
          id = "broken",
          create = function(_, ctx) ctx:exec("echo half > " .. ctx.out .. "/half; exit 4") end,
        }}
        sys.bind {{
          id = "needs-broken",
          inputs = {{ b = broken }},
          create = function(_, ctx) ctx:exec("touch " .. {q(sysenv.home / "ran")}) end,
        }}
        """,
    )
    res = sysenv.run("apply")
    text = out_of(res)
    assert res.returncode == 1, text
    assert "build broken" in text and "exit code 4" in text
    assert "Apply failed. System unchanged." in text
    assert not (sysenv.home / "ran").exists()
    assert (sysenv.home / "keep.txt").read_text() == "before"
    assert trees(sysenv, "-broken") == []
    assert bind_outputs(sysenv) == []


# -- binds -----------------------------------------------------------------------

MARKER = """
local dir = {dir}
sys.bind {{
  id = "marker",
  inputs = {{ version = {version} }},
  create = function(inputs, ctx)
    local path = ctx:exec("mktemp -p " .. dir .. " marker.XXXXXX")
    ctx:exec("echo v" .. inputs.version .. " > " .. path)
    return {{ path = path, version = tostring(inputs.version) }}
  end,
  update = function(outputs, inputs, ctx)
    ctx:exec("echo v" .. inputs.version .. " > " .. outputs.path .. "; echo " .. outputs.version .. " >> " .. dir .. "/updates")
    return {{ path = outputs.path, version = tostring(inputs.version) }}
  end,
  destroy = function(outputs, ctx)
    ctx:exec("rm -f " .. outputs.path .. "; echo " .. outputs.path .. " >> " .. dir .. "/destroyed")
  end,
  check = function(outputs, inputs, ctx)
    local gone = ctx:exec("test -f " .. outputs.path .. " && printf false || printf true")
    return {{ drifted = gone, message = "marker " .. outputs.path .. " is gone" }}
  end,
}}
"""


def marker(sysenv, version: int) -> str:
    return MARKER.format(dir=q(sysenv.home), version=version)


def markers(sysenv) -> list[Path]:
    return sorted(sysenv.home.glob("marker.*"))


def test_bind_create_update_destroy(sysenv):
    config(sysenv, marker(sysenv, 1))
    ok(sysenv.run("apply"))
    [m] = markers(sysenv)
    assert m.read_text() == "v1\n"
    [state] = bind_outputs(sysenv)
    assert state["outputs"] == {"path": str(m), "version": "1"}

    config(sysenv, marker(sysenv, 2))  # new inputs: update, with the old outputs
    ok(sysenv.run("apply"))
    assert markers(sysenv) == [m]
    assert m.read_text() == "v2\n"
    assert (sysenv.home / "updates").read_text() == "1\n"
    assert not (sysenv.home / "destroyed").exists()

    config(sysenv, "-- nothing\n")  # no longer declared: destroy with the recorded outputs
    ok(sysenv.run("apply", "--allow-empty"))
    assert markers(sysenv) == []
    assert (sysenv.home / "destroyed").read_text() == f"{m}\n"
    assert bind_outputs(sysenv) == []


def test_check_reports_drift_with_its_message_and_apply_repairs_it(sysenv):
    config(sysenv, marker(sysenv, 1))
    ok(sysenv.run("apply"))
    assert sysenv.run("plan", "--exit-code").returncode == 0  # drifted = "false": in order
    [m] = markers(sysenv)
    m.unlink()
    status = sysenv.run("status", "-v")
    assert f"check failed: marker {m} is gone" in status.stdout, out_of(status)
    plan = sysenv.run("plan", "--json")
    item = next(i for i in json.loads(plan.stdout)["plan"]["items"] if i["id"] == "bind#marker")
    assert item["action"] == "update"
    assert item["reason"] == f"check failed: marker {m} is gone"
    ok(sysenv.run("apply"))  # with an update: update runs from the recorded outputs
    assert m.read_text() == "v1\n"
    assert sysenv.run("plan", "--exit-code").returncode == 0


def test_changing_only_the_check_does_not_recreate_the_bind(sysenv):
    config(sysenv, marker(sysenv, 1))
    ok(sysenv.run("apply"))
    [m] = markers(sysenv)
    config(sysenv, marker(sysenv, 1).replace('"marker " ..', '"the marker " ..'))
    res = sysenv.run("apply")
    ok(res)
    assert "Plan: 0 to create, 0 to update, 0 to remove, 1 unchanged." in res.stdout
    assert markers(sysenv) == [m]


def test_check_whose_action_fails_is_drift(sysenv):
    config(
        sysenv,
        """
        sys.bind {
          id = "flaky",
          create = function(_, ctx) return { n = "1" } end,
          check = function(outputs, _, ctx)
            ctx:exec { bin = "/bin/sh", args = { "-c", "echo probe-broke >&2; exit 9" } }
            return { drifted = false }
          end,
        }
        """,
    )
    res = sysenv.run("apply")
    # the check still fails after the repair: the item fails, and the apply is undone
    assert res.returncode == 1, out_of(res)
    assert "exit code 9" in out_of(res)


def test_rollback_restores_a_destroyed_bind(sysenv):
    config(sysenv, marker(sysenv, 1) + 'file { path = "~/f.txt", content = "one" }\n')
    ok(sysenv.run("apply"))
    [m] = markers(sysenv)
    # the bind is destroyed, then a later item fails: the bind is created again
    config(
        sysenv,
        'file { path = "~/f.txt", content = "two" }\nexec { name = "boom", command = "false" }\n',
    )
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)
    assert (sysenv.home / "destroyed").read_text() == f"{m}\n"
    [again] = markers(sysenv)
    assert again.read_text() == "v1\n"
    assert (sysenv.home / "f.txt").read_text() == "one"
    # and `sys rollback` after a successful removal brings it back too
    config(sysenv, 'file { path = "~/f.txt", content = "two" }\n')
    ok(sysenv.run("apply"))
    assert markers(sysenv) == []
    ok(sysenv.run("rollback"))
    [back] = markers(sysenv)
    assert back.read_text() == "v1\n"


def test_bind_ctx_out_lives_from_create_to_destroy(sysenv):
    config(
        sysenv,
        """
        sys.bind {
          id = "own-dir",
          create = function(_, ctx)
            ctx:exec("echo kept > " .. ctx.out .. "/note")
            return { dir = ctx.out }
          end,
          destroy = function(outputs, ctx) ctx:exec("test -f " .. outputs.dir .. "/note") end,
        }
        """,
    )
    ok(sysenv.run("apply"))
    [state] = bind_outputs(sysenv)
    own = Path(state["outputs"]["dir"])
    assert (own / "note").read_text() == "kept\n"
    assert str(own).startswith(str(sysenv.root / "state"))
    config(sysenv, "-- nothing\n")
    ok(sysenv.run("apply", "--allow-empty"))
    assert not own.exists()


# -- scripts -----------------------------------------------------------------------


def test_scripts_in_a_build_and_a_bind(sysenv):
    config(
        sysenv,
        f"""
        sys.build {{
          id = "scripted",
          create = function(_, ctx)
            local a = ctx:script("shell", "echo from-sh > $${{out}}/a.txt; echo shout")
            local b = ctx:script("bash", 'words=(x y z)\\necho "${{words[2]}}" > ' .. ctx.out .. "/b.txt", {{ name = "arrays" }})
            ctx:exec("echo " .. a.stdout .. " > " .. ctx.out .. "/a-stdout.txt")
            return {{ out = ctx.out, a = a.path, b = b.path }}
          end,
        }}
        local r
        sys.bind {{
          id = "scripted-bind",
          create = function(_, ctx)
            r = ctx:script("shell", "echo bound > " .. {q(sysenv.home / "bound.txt")} .. "; echo said-hi")
            return {{ said = r.stdout }}
          end,
          destroy = function(_, ctx) ctx:script("shell", "rm -f " .. {q(sysenv.home / "bound.txt")}) end,
        }}
        """,
    )
    ok(sysenv.run("apply"))
    [t] = trees(sysenv, "-scripted")
    assert (t / "a.txt").read_text() == "from-sh\n"
    assert (t / "b.txt").read_text() == "z\n"
    assert (t / "a-stdout.txt").read_text() == "shout\n"
    assert sorted(p.name for p in (t / "tmp").iterdir()) == ["arrays.sh", "script_1.sh"]
    assert (sysenv.home / "bound.txt").read_text() == "bound\n"
    [state] = bind_outputs(sysenv)
    assert state["outputs"] == {"said": "said-hi"}
    config(sysenv, "-- nothing\n")
    ok(sysenv.run("apply", "--allow-empty"))
    assert not (sysenv.home / "bound.txt").exists()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "ctx:script('powershell', 'Write-Output hi')",
            "ctx:script: the powershell format runs only on Windows; on linux the format must be 'shell' or 'bash'",
        ),
        ("ctx:script('cmd', 'echo hi')", "the cmd format runs only on Windows"),
        (
            "ctx:script('zsh', 'echo hi')",
            "ctx:script: format must be 'shell' or 'bash' ('powershell' and 'cmd' on Windows), got 'zsh'",
        ),
        ("ctx:script('shell', 42)", "ctx:script: the script content must be a string"),
        ("ctx:script('shell', 'x', { name = '../up' })", "`name` must be a file name"),
        (
            "ctx:script('shell', 'x', { name = 'a' }); ctx:script('shell', 'y', { name = 'a' })",
            "a script named `a` was already written in this phase",
        ),
        ("ctx:exec(42)", "ctx:exec expects a command string or { bin ="),
    ],
)
def test_script_and_exec_refusals(sysenv, call, message):
    text = refused(
        sysenv, f"sys.build {{ id = 's', create = function(_, ctx) {call} end }}\n", message
    )
    assert "sys.lua:3:" in text


# -- declaration rules ------------------------------------------------------------


def test_same_id_twice_needs_replace(sysenv):
    one = "sys.bind { id = 'b', create = function(_, ctx) ctx:exec('echo %s >> ' .. %s) end%s }\n"
    log = q(sysenv.home / "log")
    text = refused(sysenv, one % ("1", log, "") + one % ("2", log, ""), "a bind with id `b`")
    assert "is already declared at" in text and "sys.lua:3" in text and "replace = true" in text
    config(sysenv, one % ("1", log, "") + one % ("2", log, ", replace = true"))
    ok(sysenv.run("apply"))
    assert (sysenv.home / "log").read_text() == "2\n"
    config(sysenv, one % ("1", log, "") + one % ("1", log, ""))  # the very same twice: one item
    ok(sysenv.run("apply"))


def test_ctx_methods_can_be_registered(sysenv):
    config(
        sysenv,
        """
        sys.register_build_ctx_method("write", function(ctx, name, text)
          return ctx:exec { bin = "/bin/sh", args = { "-c", 'printf "%s" "$1" > "$2"', "sh", text, ctx.out .. "/" .. name } }
        end)
        sys.build { id = "w", create = function(_, ctx) ctx:write("hello.txt", "hi") end }
        """,
    )
    ok(sysenv.run("apply"))
    [t] = trees(sysenv, "-w")
    assert (t / "hello.txt").read_text() == "hi"
    refused(
        sysenv,
        'sys.register_bind_ctx_method("exec", function() end)\n',
        "sys.register_bind_ctx_method: `exec` is built in and cannot be replaced",
    )


# -- Lua 5.4 --------------------------------------------------------------------------


def test_lua54_functions(sysenv):
    config(
        sysenv,
        """
        local a, b, c = table.unpack({ 1, 2, 3 })
        local p = table.pack(1, nil, 3)
        local moved = table.move({ 1, 2, 3 }, 1, 3, 2)
        local facts = {
          sum = a + b + c, n = p.n, int = math.type(3), float = math.type(3.5), none = tostring(math.type("3")),
          toint = tostring(math.tointeger(4)), moved = table.concat(moved, ","), fmt = string.format("%03i|%%i", 7),
          ult = tostring(math.ult(1, -1)),
        }
        local keys = {}
        for k in pairs(facts) do keys[#keys + 1] = k end
        table.sort(keys)
        local lines = {}
        for _, k in ipairs(keys) do lines[#lines + 1] = k .. "=" .. tostring(facts[k]) end
        file { path = "~/lua54.txt", content = table.concat(lines, "\\n") }
        """,
    )
    ok(sysenv.run("apply"))
    assert (sysenv.home / "lua54.txt").read_text().splitlines() == [
        "float=float",
        "fmt=007|%i",
        "int=integer",
        "moved=1,1,2,3",
        "n=3",
        "none=nil",
        "sum=6",
        "toint=4",
        "ult=true",
    ]


# -- modules ---------------------------------------------------------------------------


def test_priority_module_merges_and_feeds_declarations(sysenv):
    config(
        sysenv,
        """
        local priority = require('syslua.priority')
        local merged = priority.merge({ port = priority.default(80), name = "a" }, { port = priority.before(443) })
        merged = priority.merge(merged, { port = priority.after(8080), paths = priority.mergeable({ separator = ":" }) })
        merged = priority.merge(merged, { paths = priority.after("/b") })
        merged = priority.merge(merged, { paths = priority.force("/a") })
        file { path = "~/merged.txt", content = merged.name .. " " .. merged.port .. " " .. merged.paths }
        -- wrapped values go straight into declarations
        file { path = "~/won.txt", content = priority.default("weak") }
        file { path = "~/won.txt", content = priority.force("strong") }
        env { PATH = priority.after("/late") }
        env { PATH = priority.before("/early") }
        """,
    )
    ok(sysenv.run("apply"))
    assert (sysenv.home / "merged.txt").read_text() == "a 443 /a:/b"
    assert (sysenv.home / "won.txt").read_text() == "strong"
    env_sh = (sysenv.root / "state" / "env.sh").read_text()
    assert env_sh.index("/early") < env_sh.index("/late")


def test_priority_conflict_names_both_places(sysenv):
    text = refused(
        sysenv,
        """
        local priority = require('syslua.priority')
        priority.merge({ port = priority.default(1) }, { port = priority.default(2) })
        """,
        "Priority conflict in 'port'",
    )
    # the error is located at the merge, and both values were written on line 5
    assert "Error: sys.lua:5: Priority conflict in 'port'" in text
    assert text.count("sys.lua:5") == 3
    assert "Resolution options" in text


def test_a_conflict_of_plain_values_given_to_modules_names_the_config_lines(sysenv):
    """Plain values carry no place of their own: the config lines that passed
    them to setup() are named, not the module's."""
    text = refused(
        sysenv,
        """
        local vars = require('syslua.environment.variables')
        vars.setup({ EDITOR = 'vim' })
        vars.setup({ EDITOR = 'emacs' })
        """,
        "Priority conflict in 'EDITOR'",
    )
    assert 'sys.lua:5\n    EDITOR = "vim"' in text, text
    assert 'sys.lua:6\n    EDITOR = "emacs"' in text, text
    assert "variables.lua" not in text and "override:0" not in text, text


def test_interpolation_and_json(sysenv):
    config(
        sysenv,
        """
        local syslua = require('syslua')
        local json = syslua.json
        local doc = json.decode('{"b":[1,2.5,"x\\\\u00e9"],"a":true,"n":null}')
        local text = syslua.f("{{name}} has {{#items}} items, {{n:%03d}}, {{n=}}; ${HOME} stays",
          { name = "box", items = { 1, 2 }, n = 7 })
        file { path = "~/out.txt", content = text .. "\\n" .. json.encode(doc) .. "\\n" .. tostring(doc.n == json.null) }
        """,
    )
    ok(sysenv.run("apply"))
    assert (sysenv.home / "out.txt").read_text().splitlines() == [
        "box has 2 items, 007, n=7; ${HOME} stays",
        '{"a":true,"b":[1,2.5,"xé"],"n":null}',
        "true",
    ]


def test_interpolation_without_values_sees_the_callers_variables(sysenv):
    """As the original: f"..." without a values table reads the caller's
    locals, then its upvalues, then the globals."""
    config(
        sysenv,
        """
        local f = require('syslua.interpolation')
        local person = "ada"
        SHELLNAME = "zsh"
        local function line(n)
          local who = person  -- an upvalue is seen only where the code names it
          local s = f"{{who}} #{{n}} uses {{SHELLNAME}} ({{person}})"
          return s
        end
        file { path = "~/out.txt", content = f"{{person}}\\n" .. line(2) .. "\\n" }
        """,
    )
    ok(sysenv.run("apply"))
    assert (sysenv.home / "out.txt").read_text() == "ada\nada #2 uses zsh (ada)\n"


def test_interpolation_errors_are_located(sysenv):
    refused(
        sysenv,
        "local f = require('syslua.interpolation')\nfile { path = '~/x', content = f('{{1 +}}') }\n",
        "syslua.interpolation: cannot parse {{1 +}}",
    )


def test_lib_fetch_url_keeps_the_download_in_the_store(sysenv, server: LocalServer):
    url, sha = server.put("data.bin", b"payload\n")
    config(
        sysenv,
        f"""
        local syslua = require('syslua')
        local fetched = syslua.lib.fetch_url({{ url = {q(url)}, sha256 = {q(sha)} }})
        file {{ path = "~/where.txt", content = fetched.outputs.out }}
        """,
    )
    ok(sysenv.run("apply"))
    where = Path((sysenv.home / "where.txt").read_text())
    assert where.read_bytes() == b"payload\n"
    assert where.name == "data.bin" and str(where).startswith(str(sysenv.root / "store"))
    refused(
        sysenv,
        "require('syslua').lib.fetch_url({ sha256 = 'abc' })\n",
        "syslua.lib.fetch_url requires a 'url' option",
    )
    # a checksum that cannot be one is refused while evaluating, not after a download
    text = refused(
        sysenv,
        "sys.build { id = 'f', create = function(_, ctx)\n"
        f"  ctx:fetch_url({q(url)}, 'abc')\n"
        "  return { out = ctx.out }\nend }\n",
        "sys.build: ctx:fetch_url: sha256 must be 64 hexadecimal digits, got 'abc'",
    )
    assert "sys.lua:" in text


def test_lib_extract_unpacks_a_fetched_archive(sysenv, server: LocalServer):
    """syslua.lib.extract, the original's companion of fetch_url: a build whose
    `out` is the unpacked tree, without `strip_components` leading directories."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"#!/bin/sh\necho hi\n"
        info = tarfile.TarInfo("tool-1.0/bin/tool")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    url, sha = server.put("tool.tar.gz", buf.getvalue())
    config(
        sysenv,
        f"""
        local lib = require('syslua').lib
        local got = lib.fetch_url({{ url = {q(url)}, sha256 = {q(sha)} }})
        local x = lib.extract({{ archive = got.outputs.out, format = 'tar.gz', strip_components = 1 }})
        file {{ path = "~/where.txt", content = x.outputs.out }}
        """,
    )
    ok(sysenv.run("apply"))
    where = Path((sysenv.home / "where.txt").read_text())
    assert (where / "bin" / "tool").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert not (where / "tool-1.0").exists()
    refused(
        sysenv,
        "require('syslua').lib.extract({ archive = '/x.rar', format = 'rar' })\n",
        "syslua.lib.extract: format must be 'tar.gz', 'tar.xz' or 'zip', got 'rar'",
    )
    refused(
        sysenv,
        "require('syslua').lib.extract({ archive = '/x.zip', format = 'zip', strip_components = 1 })\n",
        "syslua.lib.extract: strip_components works with tar archives, not zip",
    )


def test_pkgs_cli_maps_onto_the_catalogue(sysenv):
    config(
        sysenv,
        """
        local syslua = require('syslua')
        local rg = syslua.pkgs.cli.ripgrep.setup()
        assert(syslua.pkgs.cli.ripgrep.meta.versions.stable == "15.1.0")
        syslua.programs.fd.setup({ config = { ["~/.fdignore"] = { content = "target/\\n" } } })
        file { path = "~/rg-path.txt", content = rg.outputs.bin }
        """,
    )
    res = sysenv.run("plan", "--json")
    ok(res)
    items = {
        f"{i['type']}#{i['key']}": i["props"] for i in json.loads(res.stdout)["manifest"]["items"]
    }
    assert items["package#ripgrep"]["version"] == "15.1.0"
    assert "package#fd" in items
    assert items["file#" + str(sysenv.home / ".fdignore")]["content"] == "target/\n"
    assert items["file#" + str(sysenv.home / "rg-path.txt")]["content"] == str(
        sysenv.root / "state" / "profile" / "bin" / "rg"
    )
    refused(
        sysenv,
        "require('syslua').pkgs.cli.jq.setup({ version = '0.1' })\n",
        "jq version '0.1' not found. Available: 1.7.1",
    )
    refused(
        sysenv,
        "local x = require('syslua').pkgs.cli.nope\n",
        "package syslua.pkgs.cli.nope not found",
    )


def test_environment_modules(sysenv):
    sysenv.write("gitconfig", "[user]\n")
    config(
        sysenv,
        """
        local env = require('syslua').environment
        env.files.setup({
          ["~/.gitconfig"] = { source = "./gitconfig" },
          ["~/copy"] = { source = "./gitconfig", mutable = true },
          ["~/notes.txt"] = { content = "hello" },
        })
        env.variables.setup({ EDITOR = "nvim" })
        env.aliases.setup({ ll = "ls -la" })
        env.aliases.setup({ say = "echo 'hi'" })
        """,
    )
    ok(sysenv.run("apply"))
    home = sysenv.home
    assert (home / ".gitconfig").is_symlink()
    assert (home / ".gitconfig").resolve() == sysenv.work / "gitconfig"
    assert not (home / "copy").is_symlink() and (home / "copy").read_text() == "[user]\n"
    assert (home / "notes.txt").read_text() == "hello"
    assert "export EDITOR='nvim'" in (sysenv.root / "state" / "env.sh").read_text()
    aliases = (home / ".config" / "syslua" / "aliases.sh").read_text().splitlines()
    assert aliases[1:] == ["alias ll='ls -la'", "alias say='echo '\\''hi'\\'''"]
    fish = (home / ".config" / "syslua" / "aliases.fish").read_text().splitlines()
    assert fish[1:] == ["alias ll 'ls -la'", "alias say 'echo '\\''hi'\\'''"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "require('syslua.environment.files').setup({ ['~/x'] = {} })",
            "File setup requires either a 'source' or 'content' option (for ~/x)",
        ),
        (
            "require('syslua.environment.packages').setup({ use = {} })",
            "`use` must list at least one package",
        ),
        (
            "require('syslua.environment.packages').setup({ use = { sys.build { id = 'b', create = function() end } } })",
            "use[1] is not a package (got build#b)",
        ),
        ("require('syslua.groups').setup({})", "at least one group definition is required"),
        (
            "sys.is_elevated = false\nrequire('syslua.groups').setup({ g = {} })",
            "syslua.groups requires elevated privileges (root/Administrator)",
        ),
        (
            "sys.is_elevated = false\nrequire('syslua.users').setup({ u = { homeDir = '/home/u' } })",
            "syslua.users requires elevated privileges (root/Administrator)",
        ),
        (
            "require('syslua.users').setup({ u = { homeDir = '/home/u', initialPassword = 'x' } })",
            "initialPassword is not supported",
        ),
        ("require('syslua.groups').setup({ ['Bad Name'] = {} })", "is not a valid group name"),
        (
            "require('syslua.groups').setup({ g = { gid = -1 } })",
            "gid must be a non-negative integer",
        ),
        ("local x = require('syslua').nothing", "module 'syslua.nothing' not found"),
    ],
)
def test_module_refusals(sysenv, body, message):
    text = refused(sysenv, body + "\n", message)
    assert "sys.lua:" in text


def test_users_and_groups_under_an_accounts_prefix(sysenv, monkeypatch):
    accounts = sysenv.work / "accounts"
    (accounts / "etc").mkdir(parents=True)
    (accounts / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (accounts / "etc" / "group").write_text("root:x:0:\nusers:x:100:\n")
    (accounts / "etc" / "shadow").write_text("root:*:19000:0:99999:7:::\n")
    (accounts / "etc" / "gshadow").write_text("root:*::\nusers:*::\n")
    monkeypatch.setenv("SYSLUA_ACCOUNTS_PREFIX", str(accounts))
    config(
        sysenv,
        """
        local syslua = require('syslua')
        syslua.groups.setup({ devs = { gid = 2345 } })
        syslua.users.setup({ ada = { homeDir = '/home/ada', description = 'Ada', groups = { 'devs' } } })
        """,
    )
    # The plan knows the group's bind runs first: the account can be created.
    plan = sysenv.run("plan", "--exit-code")
    assert plan.returncode == 4, out_of(plan)
    assert "+ user ada: will create" in plan.stdout, out_of(plan)
    assert "cannot be applied" not in out_of(plan)
    ok(sysenv.run("apply"))
    group = (accounts / "etc" / "group").read_text().splitlines()
    assert "devs:x:2345:ada" in group
    assert any(
        line.startswith("ada:x:") and ":Ada:/home/ada:" in line
        for line in (accounts / "etc" / "passwd").read_text().splitlines()
    )
    # a group deleted by hand is drift; apply creates it again
    (accounts / "etc" / "group").write_text(
        "\n".join(line for line in group if not line.startswith("devs:")) + "\n"
    )
    status = sysenv.run("status", "-v")
    assert "group devs does not exist" in status.stdout, out_of(status)
    ok(sysenv.run("apply"))
    assert "devs:x:2345:" in (accounts / "etc" / "group").read_text()
    config(sysenv, "-- nothing\n")
    ok(sysenv.run("apply", "--allow-empty"))
    assert not any(
        line.startswith("devs:") for line in (accounts / "etc" / "group").read_text().splitlines()
    )


def test_build_output_holding_an_action_result(sysenv):
    """`return { version = ctx:exec(...) }`: the result is recorded when built."""
    config(
        sysenv,
        """
        local b = sys.build {
          id = "ver",
          create = function(_, ctx)
            local r = ctx:script("shell", "echo 1.2.3")
            return { out = ctx.out, version = ctx:exec("echo v" .. r.stdout), script = r.path }
          end,
        }
        file { path = "~/ver.txt", content = b.outputs.version .. " " .. b.outputs.script }
        """,
    )
    ok(sysenv.run("apply"))
    [t] = trees(sysenv, "-ver")
    assert (sysenv.home / "ver.txt").read_text() == f"v1.2.3 {t}/tmp/script_1.sh"
    ok(sysenv.run("apply"))  # and again from the store, without building
    assert (sysenv.home / "ver.txt").read_text() == f"v1.2.3 {t}/tmp/script_1.sh"
