"""`sys status` (issue 23, point 5): in two columns, as `git status -s` and
`chezmoi status`, what changed in the home since the last apply (first
column) and what the config would change (second); `-v` gives the details,
`--exit-code` exits 4 on either. It never changes anything."""

from __future__ import annotations

import json

from conftest import HEADER, out, put, state_of, tree

V1 = """
file { path = "~/edited", content = "edited v1\\n" }
file { path = "~/deleted", content = "deleted v1\\n" }
file { path = "~/same", content = "same\\n" }
file { path = "~/changed", content = "changed v1\\n" }
file { path = "~/dropped", content = "dropped\\n" }
"""
V2 = """
file { path = "~/edited", content = "edited v1\\n" }
file { path = "~/deleted", content = "deleted v1\\n" }
file { path = "~/same", content = "same\\n" }
file { path = "~/changed", content = "changed v2\\n" }
file { path = "~/new", content = "new\\n" }
exec { name = "hello", command = "true" }
"""


def applied(sysenv, body: str = V1) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)


def drifted(sysenv) -> None:  # type: ignore[no-untyped-def]
    """V1 applied, then two hand changes and a config that moved on to V2."""
    applied(sysenv)
    (sysenv.home / "edited").write_text("edited by hand\n")
    (sysenv.home / "deleted").unlink()
    sysenv.write("sys.lua", HEADER + V2)


def test_two_columns_drift_in_the_home_and_what_the_config_would_change(sysenv) -> None:
    drifted(sysenv)
    home, state = tree(sysenv.home), state_of(sysenv)
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    lines = p.stdout.splitlines()
    rows = lines[: lines.index("")]
    assert sorted(rows) == sorted(
        [
            "M! file ~/edited",  # edited by hand; the apply would overwrite an edit
            "DA file ~/deleted",  # deleted by hand; the apply creates it again
            " M file ~/changed",  # the config changed it
            " A file ~/new",  # the config declares it
            " R exec hello",  # the config runs it
            " D file ~/dropped",  # the config no longer declares it
        ]
    ), p.stdout
    snap = json.loads(sysenv.run("history", "--json").stdout)[0]["id"]
    assert f"Drift since snapshot {snap}: 2 items (first column)." in lines, p.stdout
    pending = f"Pending in {sysenv.work / 'sys.lua'}: 6 items (second column)."
    assert pending in lines, p.stdout
    # the apply would refuse the `!` line: the next step is the plan, which names the ways on
    assert lines[-1] == "Details: `sys status -v`. As a diff: `sys diff`. The ways on: `sys plan`."
    assert tree(sysenv.home) == home and state_of(sysenv) == state
    (sysenv.home / "edited").unlink()  # no edit left to overwrite: the apply goes ahead
    lines = sysenv.run("status").stdout.splitlines()
    assert lines[-1] == "Details: `sys status -v`. As a diff: `sys diff`. To converge: `sys apply`."


def test_verbose_gives_each_line_its_details_and_diffs(sysenv) -> None:
    drifted(sysenv)
    p = sysenv.run("status", "-v")
    assert p.returncode == 0, out(p)
    text = p.stdout
    block = text[text.index("M! file ~/edited") :].splitlines()
    assert block[1] == "    in the home: content edited", text
    assert block[2].startswith("    sys apply: edited since the last apply (content edited)"), text
    assert "      +edited by hand" in text  # the edit, as a diff
    assert "    in the home: deleted" in text
    assert "      -changed v1" in text and "      +changed v2" in text
    assert text.splitlines()[-2:] == [
        "Column 1, since the last apply: M edited, D deleted, A back, ! unreadable.",
        "Column 2, by `sys apply`: A create, M update, D remove, R run, ! cannot.",
    ]


def test_exit_code_4_on_drift_or_on_pending_changes(sysenv) -> None:
    applied(sysenv)
    p = sysenv.run("status", "--exit-code")
    assert p.returncode == 0, out(p)
    assert "No drift: the machine matches snapshot" in p.stdout
    assert "Nothing pending: " in p.stdout
    # pending only: the config changed, the home did not
    sysenv.write("sys.lua", HEADER + V1.replace("changed v1", "changed v2"))
    p = sysenv.run("status", "--exit-code")
    assert p.returncode == 4, out(p)
    assert " M file ~/changed" in p.stdout.splitlines() and "No drift" in p.stdout
    assert sysenv.run("status").returncode == 0  # without the flag, neither is a failure
    # drift only: found even when the config is gone (then only the drift is shown)
    (sysenv.work / "sys.lua").unlink()
    (sysenv.home / "same").write_text("hand\n")
    p = sysenv.run("status", "--exit-code")
    assert p.returncode == 4, out(p)
    assert "M  file ~/same" in p.stdout.splitlines(), p.stdout
    assert "No config found: only the drift is shown" in p.stdout


def test_json_has_the_drift_and_the_pending_changes(sysenv) -> None:
    drifted(sysenv)
    p = sysenv.run("status", "--json", "--exit-code")
    assert p.returncode == 4, out(p)
    data = json.loads(p.stdout)
    assert data["config"] == str(sysenv.work / "sys.lua")
    assert {d["id"].rpartition("/")[2]: d["kind"] for d in data["drift"]} == {
        "edited": "edited",
        "deleted": "deleted",
    }
    assert {e["label"]: e["status"] for e in data["pending"]} == {
        "~/edited": "!",
        "~/deleted": "A",
        "~/changed": "M",
        "~/new": "A",
        "hello": "R",
        "~/dropped": "D",
    }


def test_a_config_error_is_an_error_and_changes_nothing(sysenv) -> None:
    applied(sysenv)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/x", contnt = "x" }\n')
    home, state = tree(sysenv.home), state_of(sysenv)
    p = sysenv.run("status")
    assert p.returncode == 2, out(p)
    assert "sys.lua:" in p.stderr and "contnt" in p.stderr, out(p)
    assert tree(sysenv.home) == home and state_of(sysenv) == state


def test_before_the_first_apply_it_shows_what_the_config_would_do(sysenv) -> None:
    put(sysenv.home / "edited", "mine\n")
    sysenv.write("sys.lua", HEADER + V1)
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert "No current snapshot: nothing to compare with" in p.stdout
    assert " M file ~/edited" in p.stdout.splitlines(), p.stdout  # taken over, updated
    assert " A file ~/same" in p.stdout.splitlines(), p.stdout


# -- sys diff: without snapshots, the config's pending changes -------------------------
def test_diff_without_snapshots_shows_what_plan_diff_shows(sysenv) -> None:
    drifted(sysenv)
    home, state = tree(sysenv.home), state_of(sysenv)
    d = sysenv.run("diff")
    assert d.returncode == 0, out(d)
    assert "-changed v1" in d.stdout and "+changed v2" in d.stdout, d.stdout
    assert "+edited by hand" in d.stdout  # the hand edit the apply would overwrite
    p = sysenv.run("plan", "--diff")
    assert d.stdout == p.stdout
    assert json.loads(sysenv.run("diff", "--json").stdout)["plan"]["items"]
    assert tree(sysenv.home) == home and state_of(sysenv) == state
    # with a snapshot it compares snapshots, as before
    first = json.loads(sysenv.run("history", "--json").stdout)[0]["id"]
    s = sysenv.run("diff", first)
    assert s.returncode == 0 and f"From {first} to {first}:" in s.stdout, out(s)
    s = sysenv.run("diff", first, "--config", "sys.lua")
    assert s.returncode == 2 and "--config goes without snapshots" in s.stderr, out(s)


def test_diff_of_another_config(sysenv) -> None:
    applied(sysenv)
    other = sysenv.write("other/sys.lua", HEADER + V1.replace("same\\n", "other\\n"))
    d = sysenv.run("diff", "--config", str(other))
    assert d.returncode == 0, out(d)
    assert "-same" in d.stdout and "+other" in d.stdout, d.stdout
