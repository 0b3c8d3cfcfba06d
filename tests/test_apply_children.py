"""`apply` children executed for real by `sys apply` (seed apply-resource.md).

The child manifest's resources run in the same run and DAG as the parent's;
the tables of the seed are driven through the real command line with real
files: noop strengthening, allow_apply, and child failures; an exec
subscribed to `apply#<child>` runs when the child changed.
(Resolution details - data, depth, cycles - are in test_children.py.)
"""

from __future__ import annotations

import os

import pytest
from conftest import HEADER, aid, events, fid, items, out, q, tree

CHILD = HEADER + 'file { path = "~/child.txt", content = "from the child\\n" }\n'


# -- the child runs inside the same apply -----------------------------------------
def test_child_resources_run_in_the_same_apply(sysenv):
    sysenv.write("conf/files/motd", "motd from beside the child\n")
    sysenv.write(
        "conf/child.lua",
        HEADER
        + f"""\
local d = file {{ path = "~/child-dir", ensure = "directory", mode = "0755" }}
file {{ path = "~/child-dir/motd", source = "files/motd", depends_on = {{ d }} }}
exec {{ name = "child-exec", command = "touch {sysenv.work}/child-exec-ran" }}
""",
    )
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
file { path = "~/parent.txt", content = "from the parent\\n" }
apply { name = "conf/child.lua" }
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    evs = [e for e in events(p) if e.get("event") == "item"]
    order = [e["id"] for e in evs]
    # one run, one event stream: parent and child items together, the apply item after its children
    assert set(order) == {
        fid(sysenv, "parent.txt"),
        fid(sysenv, "child-dir"),
        fid(sysenv, "child-dir/motd"),
        "exec#child-exec",
        aid(sysenv, "conf/child.lua"),
    }
    apply_at = order.index(aid(sysenv, "conf/child.lua"))
    for child in (fid(sysenv, "child-dir"), fid(sysenv, "child-dir/motd"), "exec#child-exec"):
        assert order.index(child) < apply_at
    ev = items(p)[aid(sysenv, "conf/child.lua")]
    assert ev["status"] == "changed" and "3 of 3 child resources changed" in ev["message"], ev
    assert (sysenv.home / "parent.txt").read_text() == "from the parent\n"
    # the child's `source` is relative to the child's own directory
    assert (sysenv.home / "child-dir" / "motd").read_text() == "motd from beside the child\n"
    assert (sysenv.work / "child-exec-ran").exists()
    summary = events(p)[-1]
    assert summary["event"] == "summary" and summary["counts"]["changed"] == 5


def test_yaml_child_applies_for_real_with_data(sysenv):
    sysenv.write(
        "prompt.yaml",
        """\
data:
  color: white
ccm:
  resources:
    - file:
        - "{{ lookup('env.HOME') }}/prompt.txt":
            content: "color={{ lookup('data.color') }}"
            owner: "{{ lookup('facts.user.name') }}"
            group: "{{ lookup('facts.user.group') }}"
            mode: "0600"
""",
    )
    sysenv.write("sys.lua", 'apply { name = "prompt.yaml", data = { color = "cyan" } }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "prompt.txt").read_text() == "color=cyan"
    assert os.stat(sysenv.home / "prompt.txt").st_mode & 0o777 == 0o600
    again = sysenv.run("apply")
    assert again.returncode == 0 and "No changes" in again.stdout, out(again)


# -- noop strengthening -----------------------------------------------------------
@pytest.mark.parametrize(
    "cli_noop,child_noop,child_created,parent_created",
    [
        (False, "true", False, True),  # child strengthens to noop
        (False, "false", True, True),  # normal execution
        (True, "true", False, False),  # both agree
        (True, "false", False, False),  # parent noop applies
    ],
    ids=[
        "parent-run/child-noop",
        "parent-run/child-run",
        "parent-noop/child-noop",
        "parent-noop/child-run",
    ],
)
def test_noop_strengthening_table(sysenv, cli_noop, child_noop, child_created, parent_created):
    sysenv.write("child.lua", CHILD)
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/parent.txt", content = "p\\n" }}
apply {{ name = "child.lua", noop = {child_noop} }}
""",
    )
    before = tree(sysenv.home)
    args = ["apply", "--json"] + (["--noop"] if cli_noop else [])
    p = sysenv.run(*args)
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "child.txt").exists() is child_created
    assert (sysenv.home / "parent.txt").exists() is parent_created
    child_ev = items(p)[fid(sysenv, "child.txt")]
    assert child_ev["status"] == ("changed" if child_created else "noop"), child_ev
    if not child_created:
        assert child_ev["message"].startswith("Would have created the file")
    if cli_noop:
        assert tree(sysenv.home) == before


def test_cli_noop_warns_when_a_child_asks_to_weaken(sysenv):
    sysenv.write("child.lua", CHILD)
    sysenv.write("sys.lua", 'apply { name = "child.lua", noop = false }\n')
    p = sysenv.run("apply", "--noop")
    assert p.returncode == 0, out(p)
    assert not (sysenv.home / "child.txt").exists()
    assert "Warning" in out(p) and "noop" in out(p).split("Warning", 1)[1]


def test_noop_child_asking_to_weaken_warns_and_stays_noop(sysenv):
    """A parent that is itself a noop child: its child's noop = false is refused, with a warning."""
    sysenv.write("grand.lua", CHILD)
    sysenv.write("mid.lua", 'apply { name = "grand.lua", noop = false }\n')
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
file { path = "~/root.txt", content = "r\\n" }
apply { name = "mid.lua", noop = true }
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert "Warning" in p.stderr and "noop stays on" in p.stderr
    assert not (sysenv.home / "child.txt").exists()
    assert (sysenv.home / "root.txt").read_text() == "r\n"


def test_child_noop_does_not_leak_to_a_sibling(sysenv):
    sysenv.write("quiet.lua", HEADER + 'file { path = "~/quiet.txt", content = "q\\n" }\n')
    sysenv.write("loud.lua", HEADER + 'file { path = "~/loud.txt", content = "l\\n" }\n')
    sysenv.write(
        "sys.lua", 'apply { name = "quiet.lua", noop = true }\napply { name = "loud.lua" }\n'
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert not (sysenv.home / "quiet.txt").exists()
    assert (sysenv.home / "loud.txt").read_text() == "l\n"


def test_noop_child_does_not_trigger_a_real_subscriber(sysenv):
    sysenv.write("child.lua", CHILD)
    log = sysenv.work / "notified"
    sysenv.write(
        "sys.lua",
        f"""\
apply {{ name = "child.lua", noop = true }}
exec {{ name = "notify", provider = "shell", command = "echo x >> {log}", refresh_only = true,
        subscribe = {{ "apply#child.lua" }} }}
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert not (sysenv.home / "child.txt").exists()
    assert not log.exists(), "the subscriber ran although nothing it watches changed"


def test_apply_item_of_a_noop_child_is_not_reported_changed(sysenv):
    sysenv.write("child.lua", CHILD)
    sysenv.write("sys.lua", 'apply { name = "child.lua", noop = true }\n')
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    ev = items(p)[aid(sysenv, "child.lua")]
    assert not (sysenv.home / "child.txt").exists()
    assert ev["status"] != "changed", ev


# -- allow_apply ---------------------------------------------------------------
@pytest.mark.parametrize(
    "allow,nested,ok",
    [
        ("true", True, True),
        ("true", False, True),
        ("false", True, False),
        ("false", False, True),
    ],
    ids=["allow/nested", "allow/flat", "deny/nested", "deny/flat"],
)
def test_allow_apply_table(sysenv, allow, nested, ok):
    sysenv.write("grand.lua", HEADER + 'file { path = "~/grand.txt", content = "g\\n" }\n')
    body = HEADER + 'file { path = "~/child.txt", content = "c\\n" }\n'
    if nested:
        body += 'apply { name = "grand.lua" }\n'
    sysenv.write("child.lua", body)
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/parent.txt", content = "p\\n" }}
apply {{ name = "child.lua", allow_apply = {allow} }}
""",
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    if ok:
        assert p.returncode == 0, out(p)
        assert (sysenv.home / "parent.txt").exists() and (sysenv.home / "child.txt").exists()
        assert (sysenv.home / "grand.txt").exists() is nested
    else:
        assert p.returncode == 2, out(p)
        assert "allow_apply" in p.stderr
        assert "child.lua:" in p.stderr  # names the offending declaration
        assert "Traceback" not in out(p)
        assert tree(sysenv.home) == before
        assert not (sysenv.root / "state" / "snapshots").exists() or not any(
            (sysenv.root / "state" / "snapshots").iterdir()
        )


# -- child failures --------------------------------------------------------------
def test_all_children_unchanged_reports_apply_unchanged(sysenv):
    (sysenv.home / "child.txt").write_text("from the child\n")
    os.chmod(sysenv.home / "child.txt", 0o644)
    sysenv.write(
        "child.lua",
        CHILD
        + f'exec {{ name = "done-already", command = "false", creates = {q(sysenv.work)} }}\n',
    )
    sysenv.write("sys.lua", 'apply { name = "child.lua" }\n')
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    ev = items(p)[aid(sysenv, "child.lua")]
    assert ev["status"] == "unchanged", ev
    assert "2 child resources unchanged" in ev["message"]


def test_some_children_changed_reports_apply_changed(sysenv):
    (sysenv.home / "child.txt").write_text("from the child\n")
    os.chmod(sysenv.home / "child.txt", 0o644)
    sysenv.write("child.lua", CHILD + 'file { path = "~/new.txt", content = "new\\n" }\n')
    sysenv.write("sys.lua", 'apply { name = "child.lua" }\n')
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    ev = items(p)[aid(sysenv, "child.lua")]
    assert ev["status"] == "changed", ev
    assert "1 of 2 child resources changed" in ev["message"]
    assert (sysenv.home / "new.txt").read_text() == "new\n"


FAILING_CHILD = (
    HEADER
    + """\
file { path = "~/child-ok.txt", content = "ok\\n" }
exec { name = "child-boom", provider = "shell", command = "echo child broke >&2; exit 9" }
"""
)


def test_a_failed_child_fails_the_apply_and_rolls_back(sysenv):
    sysenv.write("child.lua", FAILING_CHILD)
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
file { path = "~/parent.txt", content = "p\\n" }
apply { name = "child.lua" }
""",
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "Apply failed. System unchanged." in p.stdout
    assert (
        "exec child-boom failed" in p.stdout
        and "exit code 9" in p.stdout
        and "child broke" in p.stdout
    )
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before


def test_a_failed_child_fails_the_apply_item_with_the_count(sysenv):
    sysenv.write("child.lua", FAILING_CHILD)
    sysenv.write("sys.lua", 'apply { name = "child.lua" }\n')
    p = sysenv.run("apply", "--json", "--jobs", "8")
    assert p.returncode == 1, out(p)
    ev = items(p)[aid(sysenv, "child.lua")]
    assert ev["status"] == "failed", ev
    assert "1 of 2 child resources failed" in ev["message"], ev


# -- subscribing to a child --------------------------------------------------------
def test_exec_subscribed_to_a_child_runs_when_the_child_changed(sysenv):
    log = sysenv.work / "notified"

    def config(text: str) -> None:
        sysenv.write(
            "child.lua", HEADER + f'file {{ path = "~/child.txt", content = "{text}\\n" }}\n'
        )

    sysenv.write(
        "sys.lua",
        f"""\
apply {{ name = "child.lua" }}
exec {{ name = "notify", provider = "shell", command = "echo x >> {log}", refresh_only = true,
        subscribe = {{ "apply#child.lua" }} }}
""",
    )
    config("v1")
    p1 = sysenv.run("apply", "--json")
    assert p1.returncode == 0, out(p1)
    assert items(p1)["exec#notify"]["status"] == "changed"
    assert log.read_text() == "x\n"
    p2 = sysenv.run("apply")
    assert p2.returncode == 0 and "No changes" in p2.stdout, out(p2)
    assert log.read_text() == "x\n"
    config("v2")
    p3 = sysenv.run("apply", "--json")
    assert p3.returncode == 0, out(p3)
    assert "a subscribed item changed" in items(p3)["exec#notify"]["message"]
    assert log.read_text() == "x\nx\n"
    assert (sysenv.home / "child.txt").read_text() == "v2\n"


def test_noop_child_alone_is_no_change_for_plan_and_apply(sysenv):
    sysenv.write("child.lua", CHILD)
    sysenv.write("sys.lua", 'apply { name = "child.lua", noop = true }\n')
    plan = sysenv.run("plan", "--exit-code")
    assert plan.returncode == 0, out(plan)  # nothing the apply would change
    assert "noop child: not changed by `sys apply`" in plan.stdout
    assert "1 would change in noop children" in plan.stdout
    for _ in range(2):
        assert sysenv.run("apply").returncode == 0
    history = sysenv.run("history", "--json")
    assert len(__import__("json").loads(history.stdout)) == 1  # no pile of identical snapshots
    assert not (sysenv.home / "child.txt").exists()
