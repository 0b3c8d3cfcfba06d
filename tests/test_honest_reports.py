"""Honest failure reports (SPEC sections 6 and 8; issue 9, "Honest failure reports").

"System unchanged." is printed only when it is true: when execs without
`undo` completed before a failure, the verdict names them instead. A config
whose main chunk returns a value is an error at its `file:line`, never a
config that declares nothing. `sys apply` of a config that declares nothing
refuses to remove every managed item unless `--allow-empty` is given.
"""

from __future__ import annotations

import pytest
from conftest import HEADER, apply_ok, current, history, out, tree

V1 = """
file { path = "~/a.txt", content = "a v1\\n" }
file { path = "~/b.txt", content = "b v1\\n" }
exec { name = "hello", command = "true", undo = "true" }
"""


def lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


# -- "System unchanged." only when true -------------------------------------------
def test_completed_execs_without_undo_are_named_instead_of_system_unchanged(sysenv) -> None:
    apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
local a = file {{ path = "~/a.txt", content = "a v2\\n" }}
local n = exec {{ name = "notify", command = "touch {sysenv.work}/notified", depends_on = {{ a }} }}
local m = exec {{ name = "migrate", command = "touch {sysenv.work}/migrated", depends_on = {{ a }} }}
local u = exec {{ name = "undoable", command = "true", undo = "true", depends_on = {{ a }} }}
exec {{ name = "boom", command = "false", depends_on = {{ n, m, u }} }}
""",
    )
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert "System unchanged" not in text, text
    tail = lines(p.stdout)[-3:]
    assert tail[0] == (
        "Apply failed. Rolled back everything except 2 command(s) that cannot be undone:"
    ), text
    assert sorted(tail[1:]) == [
        "  - exec migrate (declared at sys.lua:6)",
        "  - exec notify (declared at sys.lua:5)",
    ], text
    # the failing exec is reported as the failure, not as a command left done
    assert "exec boom failed: desired state not reached: exit code 1" in text, text
    assert tree(sysenv.home) == before  # everything else was rolled back
    assert (sysenv.work / "notified").exists() and (sysenv.work / "migrated").exists()


def test_json_summary_lists_what_was_not_undone(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
local n = exec {{ name = "notify", command = "touch {sysenv.work}/notified" }}
exec {{ name = "boom", command = "false", depends_on = {{ n }} }}
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    import json

    summary = json.loads(p.stdout.splitlines()[-1])
    assert summary["result"] == "failed"
    assert summary["not_undone"] == ["exec#notify"]


def test_system_unchanged_is_the_last_line_when_it_is_true(sysenv) -> None:
    s1 = apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER
        + """
local a = file { path = "~/a.txt", content = "a v2\\n" }
local u = exec { name = "undoable", command = "true", undo = "true", depends_on = { a } }
exec { name = "boom", command = "false", depends_on = { u } }
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert lines(p.stdout)[-1] == "Apply failed. System unchanged.", out(p)
    assert "not undone" not in out(p)
    assert tree(sysenv.home) == before
    assert current(sysenv) == s1


def test_a_path_left_in_place_is_named_too(sysenv) -> None:
    """A directory syslua made that an exec without undo filled cannot be removed."""
    sysenv.write(
        "sys.lua",
        HEADER
        + """
local d = file { path = "~/made", ensure = "directory", mode = "0755" }
local n = exec { name = "fill", provider = "shell", command = "touch ~/made/user-data", depends_on = { d } }
exec { name = "boom", command = "false", depends_on = { n } }
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    tail = lines(p.stdout)[-3:]
    assert tail[0] == (
        "Apply failed. Rolled back everything except 1 command(s) that cannot be undone "
        "and 1 path(s) left in place:"
    ), out(p)
    assert tail[1] == "  - exec fill (declared at sys.lua:5)", out(p)
    assert "made: left in place, the directory is not empty" in tail[2], out(p)
    assert "System unchanged" not in out(p)


# -- a config's main chunk returns nothing ----------------------------------------
RETURNS = {
    "entry-without-setup": (
        'return { inputs = { pkgs = "github:x/y" } }',
        "a config's main chunk returned a table without a `setup` function; a config declares, "
        "it returns nothing or the entry table { inputs = { ... }, setup = function(inputs) ... end }",
    ),
    "table": (
        "return { 1, 2, 3 }",
        "a config's main chunk returned a table without a `setup` function; a config declares, "
        "it returns nothing",
    ),
    "string": (
        'return "done"',
        "a config's main chunk returned a string value; a config declares, it returns nothing",
    ),
    "number": (
        "return 42",
        "a config's main chunk returned a number value; a config declares, it returns nothing",
    ),
    "tail-call": (
        "local function make() return true end\nreturn make()",
        "a config's main chunk returned a boolean value; a config declares, it returns nothing",
    ),
}


@pytest.mark.parametrize("case", sorted(RETURNS))
def test_a_config_that_returns_a_value_is_an_error_at_its_line(sysenv, case) -> None:
    s1 = apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    code, message = RETURNS[case]
    sysenv.write("sys.lua", HEADER + 'file { path = "~/c.txt", content = "c\\n" }\n' + code + "\n")
    line = HEADER.count("\n") + 1 + code.count("\n") + 1
    for command in ("plan", "apply"):
        p = sysenv.run(command)
        assert p.returncode == 2, out(p)
        assert f"Error: sys.lua:{line}: {message}" in p.stderr, out(p)
        assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before
    assert current(sysenv) == s1


def test_an_apply_child_that_returns_a_value_is_an_error_at_its_line(sysenv) -> None:
    sysenv.write("child.lua", "local x = 1\nreturn { set_up = function() end }\n")
    sysenv.write("sys.lua", 'apply { name = "./child.lua" }\n')
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert (
        "Error: child.lua:2: a config's main chunk returned a table without a `setup` function"
        in p.stderr
    ), out(p)


@pytest.mark.parametrize("ending", ["return", "return nil", "do return end", "return nil, nil"])
def test_returning_nothing_is_fine(sysenv, ending) -> None:
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/c.txt", content = "c\\n" }\n' + ending + "\n"
    )
    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)


def test_a_module_may_return_a_value(sysenv) -> None:
    sysenv.write("lib/m.lua", "return { name = 'c.txt' }\n")
    sysenv.write(
        "sys.lua",
        HEADER + 'local m = require("lib.m")\nfile { path = "~/" .. m.name, content = "c\\n" }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "c.txt").read_text() == "c\n"


# -- a config that declares nothing ------------------------------------------------
def test_apply_refuses_to_remove_everything_without_allow_empty(sysenv) -> None:
    s1 = apply_ok(sysenv, V1)
    before = tree(sysenv.home)
    sysenv.write("sys.lua", "-- everything was commented out\n")
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert (
        "Error: Refusing to remove all 3 managed items: the config declares nothing. "
        "Pass --allow-empty if that is what you want." in p.stderr
    ), out(p)
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before
    assert current(sysenv) == s1 and len(history(sysenv)) == 1
    # noop changes nothing, so it does not refuse
    assert sysenv.run("apply", "--noop").returncode == 0
    # with --allow-empty, it does what was asked
    p = sysenv.run("apply", "--allow-empty")
    assert p.returncode == 0, out(p)
    assert not (sysenv.home / "a.txt").exists() and not (sysenv.home / "b.txt").exists()
    # and nothing is managed now: an empty config applies again without the flag
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)


def test_a_first_apply_of_an_empty_config_is_fine(sysenv) -> None:
    sysenv.write("sys.lua", "")
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)


def test_an_env_only_config_is_not_empty(sysenv) -> None:
    apply_ok(sysenv, V1)
    sysenv.write("sys.lua", 'env { EDITOR = "vim" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert not (sysenv.home / "a.txt").exists()
