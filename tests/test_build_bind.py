"""`sys.build` and `sys.bind` end to end through the real `sys` command line.

Builds write into `$${out}` and land in `store/trees/<hash>-<id>`, cached by
their inputs; their outputs are used by execs and files through placeholders.
Binds record outputs after create and get them back in destroy, update and
check; they take part in rollback (a destroyed bind is recreated; a failed
destroy during rollback clears the current-snapshot pointer).
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import HEADER, ok
from conftest import out as out_of

HELPERS = r"""
local M = {}

-- A build that writes $${out}/bin/x (a script printing `greeting`), and logs each run to ~/build.log.
function M.tool(id, greeting, extra)
  return sys.build {
    id = id,
    inputs = { greeting = greeting },
    depends_on = extra and extra.depends_on,
    create = function(inputs, ctx)
      ctx:exec { bin = "/bin/sh", args = { "-c",
        'mkdir -p "$1/bin" && printf "#!/bin/sh\\necho %s\\n" "$2" > "$1/bin/x" && chmod +x "$1/bin/x" && echo "$2" >> "$3"',
        "sh", ctx.out, inputs.greeting, sys.path("~/build.log") } }
      if extra and extra.fail then
        ctx:exec { bin = "/bin/sh", args = { "-c", "echo partial > \"$1/partial\"; echo build-broke >&2; exit 3", "sh", ctx.out } }
      end
      return { out = ctx.out, bin = ctx.out .. "/bin/x" }
    end,
  }
end

-- A bind that creates a temp file (its path is only known after create) and removes it on destroy.
function M.marker(id, opts)
  opts = opts or {}
  return sys.bind {
    id = id,
    inputs = { dir = sys.path("~"), version = opts.version or 1 },
    depends_on = opts.depends_on,
    create = function(inputs, ctx)
      local p = ctx:exec { bin = "/bin/sh", args = { "-c", 'mktemp -p "$1" ' .. id .. '.XXXXXX', "sh", inputs.dir } }
      return { path = p, version = tostring(inputs.version) }
    end,
    update = opts.update and function(outputs, inputs, ctx)
      ctx:exec { bin = "/bin/sh", args = { "-c", 'echo "$1 $2 -> $3" >> "$4"', "sh", outputs.path, outputs.version,
        tostring(inputs.version), sys.path("~/update.log") } }
      return { path = outputs.path, version = tostring(inputs.version) }
    end or nil,
    destroy = function(outputs, ctx)
      ctx:exec { bin = "/bin/sh", args = { "-c", opts.destroy or 'echo "$1" >> "$2"; rm -f "$1"', "sh", outputs.path,
        sys.path("~/destroy.log") } }
    end,
    check = function(outputs, inputs, ctx)
      local state = ctx:exec { bin = "/bin/sh", args = { "-c", 'test -f "$1" && printf false || printf true', "sh", outputs.path } }
      return { drifted = state, message = "the marker file is missing" }
    end,
  }
end

return M
"""


def config(sysenv, body: str) -> None:
    sysenv.write("helpers.lua", HELPERS, dedent=False)
    sysenv.write("sys.lua", HEADER + 'local H = require("helpers")\n' + body, dedent=False)


def trees(sysenv, suffix: str = "") -> list[str]:
    d = sysenv.root / "store" / "trees"
    return sorted(p.name for p in d.iterdir() if p.name.endswith(suffix)) if d.is_dir() else []


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def markers(sysenv, prefix: str) -> list[Path]:
    return sorted(sysenv.home.glob(prefix + ".*"))


def bind_states(sysenv) -> dict[str, dict]:
    d = sysenv.root / "state" / "binds"
    return {p.stem: json.loads(p.read_text()) for p in d.glob("*.json")} if d.is_dir() else {}


def current_snapshot(sysenv) -> str | None:
    res = sysenv.run("history", "--json")
    ok(res)
    return next((s["id"] for s in json.loads(res.stdout) if s["current"]), None)


USE_BUILD = """
local t = H.tool("hello", "GREETING")
exec { name = "use", provider = "shell", command = t.outputs.bin .. " > " .. sys.path("~/used.txt"),
       creates = sys.path("~/used.txt") }
file { path = "~/where.txt", content = "bin=" .. t.outputs.bin .. "\\n" }
"""


# -- builds ------------------------------------------------------------------


def test_build_output_used_by_exec_and_file(sysenv):
    config(sysenv, USE_BUILD.replace("GREETING", "hello world"))
    ok(sysenv.run("apply"))
    [tree] = trees(sysenv, "-hello")
    tool = sysenv.root / "store" / "trees" / tree / "bin" / "x"
    assert tool.is_file()
    assert (sysenv.home / "used.txt").read_text() == "hello world\n"
    assert (sysenv.home / "where.txt").read_text() == f"bin={tool}\n"
    assert not tool.stat().st_mode & 0o222  # read-only in the store
    assert lines(sysenv.home / "build.log") == ["hello world"]
    # the manifest names the build by hash
    doc = json.loads(sysenv.run("plan", "--json").stdout)
    build = next(i for i in doc["manifest"]["items"] if i["type"] == "build")
    digest = build["props"]["hash"]
    assert tree.startswith(digest[:32])
    use = next(i for i in doc["manifest"]["items"] if i["type"] == "exec")
    assert f"$${{build:{digest}:bin}}" in use["props"]["command"]
    # the exec runs after the build
    waves = doc["plan"]["waves"]
    assert waves.index(next(w for w in waves if "build#hello" in w)) < waves.index(
        next(w for w in waves if "exec#use" in w)
    )


def test_build_is_cached_by_its_inputs(sysenv):
    config(sysenv, USE_BUILD.replace("GREETING", "one"))
    ok(sysenv.run("apply"))
    first = trees(sysenv, "-hello")
    res = sysenv.run("apply")
    ok(res)
    assert "No changes" in res.stdout
    assert lines(sysenv.home / "build.log") == ["one"]  # not rebuilt
    plan = sysenv.run("plan", "-v")  # the unchanged build is listed with -v
    assert "cached by its inputs" in out_of(plan)

    config(sysenv, USE_BUILD.replace("GREETING", "two"))
    (sysenv.home / "used.txt").unlink()
    ok(sysenv.run("apply"))
    assert lines(sysenv.home / "build.log") == ["one", "two"]
    second = trees(sysenv, "-hello")
    assert len(second) == 2 and set(first) < set(second)  # a new store path; the old one stays
    new = (set(second) - set(first)).pop()
    assert (sysenv.home / "where.txt").read_text() == f"bin={sysenv.root}/store/trees/{new}/bin/x\n"
    assert (sysenv.home / "used.txt").read_text() == "two\n"


def test_build_hash_changes_with_what_it_uses(sysenv):
    """A build using another build's output gets a new hash when the other one changes."""
    body = """
local base = H.tool("base", "GREETING")
local top = sys.build {
  id = "top",
  create = function(inputs, ctx)
    ctx:exec { bin = "/bin/sh", args = { "-c", 'mkdir -p "$1" && "$2" > "$1/said"', "sh", ctx.out, base.outputs.bin } }
  end,
}
file { path = "~/top.txt", content = top.outputs.out }
"""
    config(sysenv, body.replace("GREETING", "a"))
    ok(sysenv.run("apply"))
    [top1] = trees(sysenv, "-top")
    assert (sysenv.root / "store" / "trees" / top1 / "said").read_text() == "a\n"
    config(sysenv, body.replace("GREETING", "b"))
    ok(sysenv.run("apply"))
    tops = trees(sysenv, "-top")
    assert len(tops) == 2
    [top2] = [t for t in tops if t != top1]
    assert (sysenv.root / "store" / "trees" / top2 / "said").read_text() == "b\n"
    assert (sysenv.home / "top.txt").read_text() == str(sysenv.root / "store" / "trees" / top2)


def test_failed_build_skips_dependents_and_rolls_back(sysenv):
    config(sysenv, 'file { path = "~/keep.txt", content = "before" }\n')
    ok(sysenv.run("apply"))
    before_snapshot = current_snapshot(sysenv)
    config(
        sysenv,
        """
local m = H.marker("early")
local t = H.tool("broken", "x", { fail = true, depends_on = { m } })
file { path = "~/keep.txt", content = "after" }
exec { name = "after", provider = "shell", command = "touch " .. sys.path("~/after-ran") .. " " .. t.outputs.bin }
file { path = "~/uses-build.txt", content = t.outputs.out }
""",
    )
    res = sysenv.run("apply")
    text = out_of(res)
    assert res.returncode == 1, text
    assert "Apply failed. System unchanged." in text
    assert "broken" in text and "exit code 3" in text
    assert "Traceback" not in text
    assert not (sysenv.home / "after-ran").exists()  # dependents did not run
    assert not (sysenv.home / "uses-build.txt").exists()
    assert (sysenv.home / "keep.txt").read_text() == "before"  # completed items undone
    assert markers(sysenv, "early") == []  # the bind that completed was destroyed
    assert len(lines(sysenv.home / "destroy.log")) == 1
    assert bind_states(sysenv) == {}
    assert trees(sysenv, "-broken") == []  # a failed build leaves nothing in the store
    tmp = sysenv.root / "store" / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []
    assert current_snapshot(sysenv) == before_snapshot


def test_successful_build_is_kept_when_a_later_item_fails(sysenv):
    config(
        sysenv,
        """
local t = H.tool("kept", "k")
exec { name = "fails", provider = "shell", command = t.outputs.bin .. " && false" }
""",
    )
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)
    assert len(trees(sysenv, "-kept")) == 1  # builds are never rolled back
    config(
        sysenv,
        """
local t = H.tool("kept", "k")
exec { name = "fine", provider = "shell", command = t.outputs.bin .. " > " .. sys.path("~/fine.txt"),
       creates = sys.path("~/fine.txt") }
""",
    )
    ok(sysenv.run("apply"))
    assert lines(sysenv.home / "build.log") == ["k"]  # reused, not rebuilt
    assert (sysenv.home / "fine.txt").read_text() == "k\n"


def test_dollar_escaping_and_env_placeholder(sysenv, monkeypatch):
    monkeypatch.setenv("SYSLUA_TEST_VALUE", "from-env")
    config(
        sysenv,
        r"""
local b = sys.build {
  id = "lit",
  create = function(inputs, ctx)
    ctx:exec { bin = "/bin/sh", args = { "-c", 'mkdir -p "$1" && printf "%s|%s" "$2" "$3" > "$1/out.txt"', "sh",
      ctx.out, "$$${out} and $$${build:x:y}", "$${env:SYSLUA_TEST_VALUE}" } }
  end,
}
file { path = "~/lit.txt", content = "literal $$${out} / $$$${x} / $${env:SYSLUA_TEST_VALUE}\n" }
file { path = "~/built.txt", content = b.outputs.out }
""",
    )
    ok(sysenv.run("apply"))
    assert (sysenv.home / "lit.txt").read_text() == "literal $${out} / $$${x} / from-env\n"
    built = Path((sysenv.home / "built.txt").read_text())
    assert (built / "out.txt").read_text() == "$${out} and $${build:x:y}|from-env"
    res = sysenv.run("apply")
    ok(res)
    assert "No changes" in res.stdout


def test_unknown_placeholder_in_file(sysenv):
    config(sysenv, 'file { path = "~/bad.txt", content = "$${nonsense:thing}" }\n')
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)  # the item fails as it runs; the apply is rolled back
    assert "nonsense" in out_of(res) and "Traceback" not in out_of(res)
    assert not (sysenv.home / "bad.txt").exists()


def test_placeholder_naming_undeclared_build(sysenv):
    config(
        sysenv,
        'sys.build { id = "other", create = function() end }\n'
        'file { path = "~/bad.txt", content = "$${build:@missing:out}" }\n',
    )
    res = sysenv.run("plan")
    assert res.returncode == 2, out_of(res)
    assert "missing" in out_of(res) and "not declared" in out_of(res)
    assert "sys.lua:" in out_of(res)


def test_placeholder_naming_undeclared_build_without_any_build(sysenv):
    config(sysenv, 'file { path = "~/bad.txt", content = "$${build:@missing:out}" }\n')
    res = sysenv.run("plan")
    assert res.returncode == 2, out_of(res)
    assert "not declared" in out_of(res)


def test_build_validation_errors(sysenv):
    config(sysenv, 'sys.build { id = "x", create = function() end, typo = 1 }\n')
    res = sysenv.run("plan")
    assert res.returncode == 2 and "typo" in out_of(res), out_of(res)
    for body, message in [
        ("sys.build { id = 5, create = function() end }", "`id` must be a non-empty string"),
        (
            "sys.build { inputs = 5, create = function() end }",
            "`inputs` must be a table or a function",
        ),
        ("sys.build { id = 'x' }", "`create` must be a function(inputs, ctx)"),
        (
            "sys.bind { create = function() end, check = function() return true end }",
            "check must return a table { drifted = <boolean>, message = <string> }",
        ),
        (
            "sys.bind { create = function() end, check = function() return { drifted = 1 } end }",
            "`drifted` must be a boolean",
        ),
        (
            "sys.build { id = 'a', create = function() end }\n"
            "sys.build { id = 'a', inputs = { v = 2 }, create = function() end }",
            "a build with id `a` is already declared at",
        ),
    ]:
        config(sysenv, body + "\n")
        res = sysenv.run("plan")
        assert res.returncode == 2 and message in out_of(res), out_of(res)
        assert "sys.lua:" in out_of(res)


# -- binds --------------------------------------------------------------------


def test_bind_create_records_outputs_and_destroy_gets_them(sysenv):
    config(sysenv, 'H.marker("m1")\n')
    ok(sysenv.run("apply"))
    [marker] = markers(sysenv, "m1")
    [(digest, state)] = bind_states(sysenv).items()
    assert state["outputs"]["path"] == str(marker)
    assert state["outputs"]["version"] == "1"
    # unchanged: nothing runs again
    res = sysenv.run("apply")
    ok(res)
    assert "No changes" in res.stdout
    assert markers(sysenv, "m1") == [marker]

    # removal: destroy receives the recorded (random) path
    config(sysenv, "-- nothing\n")
    ok(sysenv.run("apply", "--allow-empty"))
    assert markers(sysenv, "m1") == []
    assert lines(sysenv.home / "destroy.log") == [str(marker)]
    assert bind_states(sysenv) == {}


def test_bind_check_detects_drift(sysenv):
    config(sysenv, 'H.marker("m2")\n')
    ok(sysenv.run("apply"))
    [marker] = markers(sysenv, "m2")
    plan = sysenv.run("plan", "--exit-code")
    assert plan.returncode == 0, out_of(plan)
    marker.unlink()
    plan = sysenv.run("plan", "--json")
    item = next(i for i in json.loads(plan.stdout)["plan"]["items"] if i["id"] == "bind#m2")
    assert item["action"] == "update"
    assert "check failed" in item["reason"]
    assert sysenv.run("plan", "--exit-code").returncode == 4
    ok(sysenv.run("apply"))
    [again] = markers(sysenv, "m2")
    [(_, state)] = bind_states(sysenv).items()
    assert state["outputs"]["path"] == str(again)
    assert sysenv.run("plan", "--exit-code").returncode == 0


def test_status_reports_bind_drift(sysenv):
    config(sysenv, 'H.marker("m3")\n')
    ok(sysenv.run("apply"))
    [marker] = markers(sysenv, "m3")
    marker.unlink()
    res = sysenv.run("status")
    ok(res)
    assert "No drift" not in res.stdout
    assert "m3" in res.stdout


def test_bind_update_gets_old_outputs(sysenv):
    config(sysenv, 'H.marker("m4", { update = true })\n')
    ok(sysenv.run("apply"))
    [marker] = markers(sysenv, "m4")
    config(sysenv, 'H.marker("m4", { update = true, version = 2 })\n')
    ok(sysenv.run("apply"))
    assert lines(sysenv.home / "update.log") == [f"{marker} 1 -> 2"]
    assert markers(sysenv, "m4") == [marker]  # updated in place, not destroyed
    assert not (sysenv.home / "destroy.log").exists()
    doc = json.loads(sysenv.run("plan", "--json").stdout)
    digest = next(i for i in doc["manifest"]["items"] if i["type"] == "bind")["props"]["hash"]
    assert bind_states(sysenv)[digest]["outputs"] == {"path": str(marker), "version": "2"}
    assert next(i for i in doc["plan"]["items"] if i["id"] == "bind#m4")["action"] == "none"


def test_bind_update_back_to_previous_definition(sysenv):
    config(sysenv, 'H.marker("m7", { update = true })\n')
    ok(sysenv.run("apply"))
    [marker] = markers(sysenv, "m7")
    config(sysenv, 'H.marker("m7", { update = true, version = 2 })\n')
    ok(sysenv.run("apply"))
    config(sysenv, 'H.marker("m7", { update = true })\n')
    ok(sysenv.run("apply"))
    assert lines(sysenv.home / "update.log") == [f"{marker} 1 -> 2", f"{marker} 2 -> 1"]


def test_bind_output_used_by_a_file(sysenv):
    config(
        sysenv,
        """
local m = H.marker("m5")
file { path = "~/points-to.txt", content = m.outputs.path }
""",
    )
    ok(sysenv.run("apply"))
    [marker] = markers(sysenv, "m5")
    assert (sysenv.home / "points-to.txt").read_text() == str(marker)


def test_removed_bind_is_restored_when_the_apply_fails(sysenv):
    config(sysenv, 'H.marker("m6")\nfile { path = "~/f.txt", content = "one" }\n')
    ok(sysenv.run("apply"))
    [marker] = markers(sysenv, "m6")
    snap = current_snapshot(sysenv)
    config(
        sysenv,
        'file { path = "~/f.txt", content = "two" }\nexec { name = "boom", command = "false" }\n',
    )
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)
    assert "Apply failed. System unchanged." in out_of(res)
    assert lines(sysenv.home / "destroy.log") == [str(marker)]  # it was destroyed...
    [restored] = markers(sysenv, "m6")  # ...and created again
    [(_, state)] = bind_states(sysenv).items()
    assert state["outputs"]["path"] == str(restored)  # with its new outputs recorded
    assert (sysenv.home / "f.txt").read_text() == "one"
    assert current_snapshot(sysenv) == snap
    # the restored bind is in order: removing it for real destroys the new one
    config(sysenv, "-- nothing\n")
    ok(sysenv.run("apply", "--allow-empty"))
    assert markers(sysenv, "m6") == []
    assert lines(sysenv.home / "destroy.log") == [str(marker), str(restored)]


BAD_DESTROY = """
local m = H.marker("bad", { destroy = "echo cannot-destroy >&2; exit 7" })
exec { name = "boom", command = "false", depends_on = { m } }
"""


def test_failed_destroy_during_rollback_clears_current(sysenv):
    config(sysenv, 'file { path = "~/base.txt", content = "base" }\n')
    ok(sysenv.run("apply"))
    assert current_snapshot(sysenv) is not None
    config(sysenv, BAD_DESTROY)
    res = sysenv.run("apply")
    text = out_of(res)
    assert res.returncode == 1, text
    assert "rolling back failed too" in text
    assert "bind bad destroy" in text and "exit code 7" in text
    assert "current snapshot pointer was cleared" in text
    assert "System unchanged" not in text
    assert current_snapshot(sysenv) is None
    # self-healing: the next apply converges everything
    config(sysenv, 'file { path = "~/base.txt", content = "healed" }\n')
    ok(sysenv.run("apply"))
    assert (sysenv.home / "base.txt").read_text() == "healed"
    assert current_snapshot(sysenv) is not None


def test_failed_destroy_report_is_not_misleading(sysenv):
    config(sysenv, BAD_DESTROY)
    res = sysenv.run("apply")
    assert res.returncode == 1
    assert "outputs were never recorded" not in out_of(res)


def test_bind_create_failure_rolls_back_earlier_binds(sysenv):
    config(
        sysenv,
        """
local a = H.marker("first")
sys.bind { id = "fails", depends_on = { a }, create = function(inputs, ctx)
  ctx:exec { bin = "/bin/sh", args = { "-c", "exit 5" } }
end }
""",
    )
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)
    assert "fails" in out_of(res) and "exit code 5" in out_of(res)
    assert markers(sysenv, "first") == []
    assert bind_states(sysenv) == {}


def test_drift_without_update_destroys_then_creates_again(sysenv):
    config(sysenv, 'H.marker("m9")\n')
    ok(sysenv.run("apply"))
    [first] = markers(sysenv, "m9")
    first.unlink()  # drift: the check (test -f) now fails
    ok(sysenv.run("apply"))
    assert lines(sysenv.home / "destroy.log") == [str(first)]  # destroyed with its recorded outputs
    [second] = markers(sysenv, "m9")  # then created again
    [(_, state)] = bind_states(sysenv).items()
    assert state["outputs"]["path"] == str(second)


def test_drift_with_update_runs_update_from_the_recorded_outputs(sysenv):
    config(sysenv, 'H.marker("m10", { update = true })\n')
    ok(sysenv.run("apply"))
    [marker] = markers(sysenv, "m10")
    marker.unlink()
    res = sysenv.run("apply")
    # update ran from the recorded outputs (and no destroy); this update only logs, so the
    # drift is still there and the check after the change fails the item
    assert lines(sysenv.home / "update.log") == [f"{marker} 1 -> 1"]
    assert not (sysenv.home / "destroy.log").exists()
    assert res.returncode == 1 and "desired state not reached" in out_of(res), out_of(res)


def test_ref_hash_names_the_primitive_in_placeholders(sysenv):
    """The original's `ref.hash` is a string; written into the SPEC's
    `$${build:<hash>:out}` / `$${bind:<hash>:<output>}` it resolves when run."""
    config(
        sysenv,
        """
local b = sys.build { id = "b", create = function(_, ctx)
  ctx:exec("echo x > " .. ctx.out .. "/f")
  return { out = ctx.out }
end }
local d = sys.bind { id = "d", inputs = { b = b }, create = function(_, ctx)
  ctx:exec("cat $${build:" .. b.hash .. ":out}/f > $HOME/via-build")
  return { o = "recorded" }
end, destroy = function() end }
assert(type(b.hash) == "string" and type(d.hash) == "string")
file { path = "~/via-bind", content = "$${bind:" .. d.hash .. ":o}" }
""",
    )
    ok(sysenv.run("apply"))
    assert (sysenv.home / "via-build").read_text() == "x\n"
    assert (sysenv.home / "via-bind").read_text() == "recorded"


def test_rollback_resolves_the_placeholders_it_returns_to(sysenv):
    """A rollback runs its snapshot's manifest from the store, which says
    whether any item holds a placeholder (issue 27: then, and only then, the
    run resolves them): a file naming a build output is written resolved."""
    config(sysenv, USE_BUILD.replace("GREETING", "one"))
    ok(sysenv.run("apply"))
    where = (sysenv.home / "where.txt").read_text()
    assert "$${" not in where
    config(sysenv, USE_BUILD.replace("GREETING", "two"))
    ok(sysenv.run("apply"))
    assert (sysenv.home / "where.txt").read_text() != where
    ok(sysenv.run("rollback"))
    assert (sysenv.home / "where.txt").read_text() == where
