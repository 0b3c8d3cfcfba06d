"""The plan is a promise (issue 23, point 1; SPEC section 8).

When the plan marks an item `!` (it cannot be applied: a missing source, an
owner that does not exist, a directory where a file is wanted, an edit that
would be overwritten), `sys apply` refuses before anything runs: no exec
runs, nothing is written, no snapshot is recorded, and the items are listed
with their reasons and `file:line`. `sys plan` exits 1 and says so on its
last line, also with `--exit-code` (which keeps 4 for changes pending).
"""

from __future__ import annotations

import json

from conftest import HEADER, apply_ok, history, out, tree

# An exec that would run first (no undo: irreversible), then a file whose
# source is missing. Before issue 23 the exec ran, then the apply failed.
EXEC_THEN_MISSING = (
    HEADER
    + """\
local mark = exec { name = "mark", command = "touch " .. sys.user.home .. "/marker" }
file { path = "~/a", source = "./missing.txt", depends_on = { mark } }
"""
)


def test_apply_refuses_before_an_exec_runs(sysenv) -> None:
    sysenv.write("sys.lua", EXEC_THEN_MISSING)
    home = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert not (sysenv.home / "marker").exists(), "the exec ran before the known failure"
    assert tree(sysenv.home) == home
    # no journal, no snapshot, nothing in the store: only the (empty) lock was taken
    assert set(tree(sysenv.root)) == {"state", "state/lock", "store"}, tree(sysenv.root)
    lines = p.stdout.splitlines()
    assert "Refusing to apply: 1 item cannot be applied (marked ! by `sys plan`):" in lines, out(p)
    assert (
        f"  file ~/a: source file not found: {sysenv.work}/missing.txt (declared at sys.lua:4)"
        in lines
    ), out(p)
    assert "Nothing was changed." in lines, out(p)
    assert "Executing:" not in p.stdout and "Rolling back" not in p.stdout, out(p)
    assert history(sysenv) == []


def test_apply_refuses_for_every_kind_of_known_failure(sysenv) -> None:
    """A missing owner and a directory where a file is wanted, beside a change that
    would go through: nothing is written, and both are listed."""
    (sysenv.home / "dir").mkdir()
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/ok", content = "fine\\n" }\n'
        + 'file { path = "~/owned", content = "x\\n", owner = "no-such-user-sl" }\n'
        + 'file { path = "~/dir", content = "x\\n" }\n',
    )
    home = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert tree(sysenv.home) == home
    assert "Refusing to apply: 2 items cannot be applied" in p.stdout, out(p)
    assert "file ~/owned: owner `no-such-user-sl` does not exist (declared at sys.lua:4)" in (
        p.stdout
    )
    assert "file ~/dir: a directory exists where a file is wanted (declared at sys.lua:5)" in (
        p.stdout
    )


def test_force_does_not_get_past_a_known_failure(sysenv) -> None:
    sysenv.write("sys.lua", EXEC_THEN_MISSING)
    p = sysenv.run("apply", "--force")
    assert p.returncode == 1, out(p)
    assert not (sysenv.home / "marker").exists()


def test_a_known_failure_lists_the_edits_too(sysenv) -> None:
    """Both kinds of `!` at once: the items that cannot be applied and the edits
    that would be overwritten are listed; the exit is the known failure's, 1."""
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "one\\n" }\n')
    (sysenv.home / "a.txt").write_text("edited\n")
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/a.txt", content = "two\\n" }\n'
        + 'file { path = "~/b", source = "./missing.txt" }\n',
    )
    home = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert tree(sysenv.home) == home
    assert "Refusing to apply: 1 item cannot be applied" in p.stdout, out(p)
    assert "and 1 path edited since the last apply would be overwritten:" in p.stdout, out(p)
    assert "  file ~/a.txt: edited since the last apply (content edited)" in p.stdout, out(p)


def test_plan_exits_1_and_says_so_last(sysenv) -> None:
    sysenv.write("sys.lua", EXEC_THEN_MISSING)
    for args in (("plan",), ("plan", "--exit-code")):
        p = sysenv.run(*args)
        assert p.returncode == 1, out(p)
        last = p.stdout.splitlines()[-1]
        assert last == "1 item marked ! cannot be applied: `sys apply` would refuse (exit 1).", out(
            p
        )
    assert not (sysenv.home / "marker").exists()


def test_plan_exit_code_keeps_4_without_a_known_failure(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "a\\n" }\n')
    assert sysenv.run("plan", "--exit-code").returncode == 4
    assert sysenv.run("plan").returncode == 0


def test_an_edit_that_would_be_overwritten_makes_plan_exit_1(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "one\\n" }\n')
    (sysenv.home / "a.txt").write_text("edited\n")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "two\\n" }\n')
    p = sysenv.run("plan", "--exit-code")
    assert p.returncode == 1, out(p)
    assert p.stdout.splitlines()[-1].startswith("1 path edited since the last apply"), out(p)
    # the apply's refusal of edits keeps its exit code, 2
    assert sysenv.run("apply").returncode == 2
    assert (sysenv.home / "a.txt").read_text() == "edited\n"


def test_plan_json_names_what_apply_would_refuse(sysenv) -> None:
    sysenv.write("sys.lua", EXEC_THEN_MISSING)
    p = sysenv.run("plan", "--json")
    assert p.returncode == 1, out(p)
    assert json.loads(p.stdout)["refused"] == "cannot_apply"
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "a\\n" }\n')
    p = sysenv.run("plan", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["refused"] is None, out(p)


def test_noop_still_reports_item_by_item(sysenv) -> None:
    """`--noop` changes nothing anyway: it goes on deciding every item, exit 1."""
    sysenv.write("sys.lua", EXEC_THEN_MISSING)
    p = sysenv.run("apply", "--noop")
    assert p.returncode == 1, out(p)
    assert "Some items cannot be applied" in p.stdout, out(p)
    assert not (sysenv.home / "marker").exists()
