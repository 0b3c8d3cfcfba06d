"""Atomic apply (SPEC section 6, seeds apply-flow.md and atomic-apply-rollback.md).

Every test drives the real `sys` command line on real Lua configs in a temp
HOME. A failing apply must leave the home tree byte-identical (content and
modes), keep the previous snapshot current, exit 1 and say
"Apply failed. System unchanged." with the failing item and why.

The second half ports the seed's Test Cases table (atomic-apply-rollback.md)
to `sys.bind` / `sys.build`, one test per row.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import HEADER, history, out, put, q, tree

UNCHANGED = "Apply failed. System unchanged."


# -- helpers -----------------------------------------------------------------
def assert_snapshots(sysenv, ids: list[str], current_id: str | None) -> None:  # type: ignore[no-untyped-def]
    """`sys history --json` lists exactly `ids` (oldest first) with `current_id` marked current."""
    h = history(sysenv)
    assert [x["id"] for x in reversed(h)] == ids, h
    assert [x["id"] for x in h if x["current"]] == ([current_id] if current_id else []), h


def apply_ok(sysenv, body: str, name: str = "sys.lua"):  # type: ignore[no-untyped-def]
    sysenv.write(name, HEADER + body)
    p = sysenv.run("apply", name)
    assert p.returncode == 0, out(p)
    m = re.search(r"Apply complete: snapshot (\S+)\.", p.stdout)
    assert m, out(p)
    return m.group(1)


def apply_fails(sysenv, body: str, before: dict, *needles: str, name: str = "sys.lua", args=()):  # type: ignore[no-untyped-def]
    """Apply `body`, expect a clean rollback: exit 1, the message, the home tree as `before`."""
    sysenv.write(name, HEADER + body)
    p = sysenv.run("apply", name, "--allow-empty", *args)  # some remove every item on purpose
    text = out(p)
    assert p.returncode == 1, text
    assert UNCHANGED in text, text
    for n in needles:
        assert n in text, f"{n!r} not in:\n{text}"
    assert "Traceback" not in text, text
    assert tree(sysenv.home) == before
    return p


BOOM_REASON = "exit code 1"


# -- 1. failure in the first, a middle and the last wave ---------------------
V1 = """
file { path = "~/old.txt", content = "old\\n" }
file { path = "~/keep.txt", content = "keep v1\\n" }
"""


def waves_config(home: Path, fail_wave: int) -> str:
    """Four waves touching every kind of path, with `exec boom` (false) in `fail_wave`."""
    dep = {
        1: "",
        2: "depends_on = { w1 }, ",
        3: "depends_on = { mark }, ",
        4: "depends_on = { w3 }, ",
    }[fail_wave]
    return f"""
-- wave 1
local over = file {{ path = "~/.bashrc", content = "managed bashrc\\n" }}
local dir  = file {{ path = "~/newdir/sub", ensure = "directory", mode = "0755" }}
local w1   = file {{ path = "~/w1.txt", content = "one\\n", mode = "0600" }}
local keep = file {{ path = "~/keep.txt", content = "keep v2\\n" }}
-- wave 2
local mark = exec {{ name = "mark", command = "touch {home}/marker", undo = "rm -f {home}/marker",
                    depends_on = {{ w1 }} }}
local w2   = file {{ path = "~/newdir/sub/w2.txt", content = "two\\n" }}
-- wave 3
local w3   = file {{ path = "~/w3.txt", content = "three\\n", depends_on = {{ mark }} }}
-- wave 4
local w4   = file {{ path = "~/w4.txt", content = "four\\n", depends_on = {{ w3 }} }}
exec {{ name = "boom", command = "false", {dep}}}
"""


@pytest.mark.parametrize("fail_wave", [1, 2, 4], ids=["first-wave", "middle-wave", "last-wave"])
def test_failure_in_a_wave_rolls_everything_back(sysenv, fail_wave: int) -> None:
    put(sysenv.home / ".bashrc", "# my own bashrc\nalias ll='ls -l'\n", 0o600)
    put(sysenv.home / ".profile", "untouched\n", 0o640)
    s1 = apply_ok(sysenv, V1)
    before = tree(sysenv.home)

    body = waves_config(sysenv.home, fail_wave)
    sysenv.write("sys.lua", HEADER + body)
    plan = sysenv.run("plan")
    assert f"[Wave {fail_wave}]" in plan.stdout and "boom" in plan.stdout, out(plan)
    wave_line = next(
        ln for ln in plan.stdout.splitlines() if ln.strip().startswith(f"[Wave {fail_wave}]")
    )
    assert "boom" in wave_line, plan.stdout

    p = apply_fails(sysenv, body, before, "exec boom", BOOM_REASON)
    # the removed file came back, the overwritten ones have their old content and mode
    assert (sysenv.home / "old.txt").read_text() == "old\n"
    assert (sysenv.home / "keep.txt").read_text() == "keep v1\n"
    assert (sysenv.home / ".bashrc").read_text().startswith("# my own bashrc")
    assert not (sysenv.home / "newdir").exists() and not (sysenv.home / "marker").exists()
    if fail_wave > 1:  # wave 1 completed before the failure, and was undone
        # what this apply created is removed, what it changed restored (issue 23, point 3)
        assert "Removed ~/w1.txt" in out(p) and "Restored ~/.bashrc" in out(p), out(p)
        assert "Restored ~/w1.txt" not in out(p), out(p)
    if fail_wave == 4:
        assert "Undid exec#mark" in out(p), out(p)  # it ran, so its undo ran
    assert_snapshots(sysenv, [s1], s1)


def test_no_new_item_starts_after_a_failure(sysenv) -> None:
    before = tree(sysenv.home)
    log = sysenv.work / "ran.log"
    p = apply_fails(
        sysenv,
        f"""
local a = exec {{ name = "boom", command = "false" }}
local b = exec {{ name = "after", command = "touch {log}", undo = "true", depends_on = {{ a }} }}
local c = exec {{ name = "later", command = "touch {log}", undo = "true", depends_on = {{ b }} }}
""",
        before,
        "exec boom",
        BOOM_REASON,
    )
    assert not log.exists()
    assert_snapshots(sysenv, [], None)
    assert "skipped because exec#boom failed" in out(p)


def test_in_flight_items_finish_and_are_undone(sysenv) -> None:
    """An item running when another fails finishes, then it is undone too."""
    before = tree(sysenv.home)
    p = apply_fails(
        sysenv,
        f"""
exec {{ name = "slow", provider = "shell", command = "sleep 0.5; echo done > {sysenv.home}/slow.txt", undo = "rm -f {sysenv.home}/slow.txt" }}
exec {{ name = "boom", command = "false" }}
""",
        before,
        "exec boom",
        BOOM_REASON,
    )
    assert "Undid exec#slow" in out(p), out(p)


def test_failure_reason_names_item_and_stderr(sysenv) -> None:
    before = tree(sysenv.home)
    apply_fails(
        sysenv,
        """
file { path = "~/a.txt", content = "a\\n" }
exec { name = "fetch-config", provider = "shell", command = "echo 'no route to host' >&2; exit 7" }
""",
        before,
        "exec fetch-config failed",
        "exit code 7",
        "no route to host",
    )


def test_failure_from_a_file_item_is_rolled_back(sysenv) -> None:
    """The failing item need not be an exec: a file whose parent an earlier
    item made a regular file while the apply ran (the plan could not see it:
    a parent that is a file already is `!`, refused before anything runs)."""
    before = tree(sysenv.home)
    apply_fails(
        sysenv,
        """
local a = file { path = "~/a.txt", content = "a\\n" }
local b = exec { name = "block", command = "touch " .. sys.user.home .. "/blocker",
                 undo = "rm " .. sys.user.home .. "/blocker", depends_on = { a } }
file { path = "~/blocker/child.txt", content = "x\\n", depends_on = { b } }
""",
        before,
        "file ~/blocker/child.txt failed",
        "~/blocker is not a directory",
    )


def test_undo_failure_clears_current_and_next_apply_heals(sysenv) -> None:
    s1 = apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    assert s1
    broken = """
local a = file { path = "~/a.txt", content = "v2\\n" }
local n = file { path = "~/new.txt", content = "new\\n" }
local bad = exec { name = "badundo", command = "true", undo = "echo cannot undo >&2; false",
                       provider = "shell", depends_on = { a, n } }
exec { name = "boom", command = "false", depends_on = { bad } }
"""
    sysenv.write("sys.lua", HEADER + broken)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert "rolling back failed too" in text, text
    assert "exec#badundo" in text and "undo command failed" in text, text
    assert "current snapshot pointer was cleared" in text, text
    assert UNCHANGED not in text
    assert "exec boom failed" in text
    # what could be restored was restored: no user content lost
    assert (sysenv.home / "a.txt").read_text() == "v1\n"
    assert_snapshots(sysenv, [s1], None)
    kept = sysenv.root / "state" / "failed-journals"
    assert kept.is_dir() and any(kept.iterdir())
    # the next apply converges everything (self-healing)
    s2 = apply_ok(
        sysenv,
        """
local a = file { path = "~/a.txt", content = "v2\\n" }
file { path = "~/new.txt", content = "new\\n" }
exec { name = "badundo", command = "true", undo = "false", depends_on = { a } }
""",
    )
    assert (sysenv.home / "a.txt").read_text() == "v2\n"
    assert (sysenv.home / "new.txt").read_text() == "new\n"
    assert_snapshots(sysenv, [s1, s2], s2)


def test_exec_without_undo_is_reported_not_undone(sysenv) -> None:
    """The verdict is not "System unchanged." then: it names the command (issue 9)."""
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
local n = exec {{ name = "notify", command = "touch {sysenv.work}/notified" }}
exec {{ name = "boom", command = "false", depends_on = {{ n }} }}
""",
    )
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert UNCHANGED not in text, text
    assert "exec boom failed" in text and BOOM_REASON in text, text
    assert p.stdout.rstrip().splitlines()[-2:] == [
        "Apply failed. Rolled back everything except 1 command(s) that cannot be undone:",
        "  - exec notify (declared at sys.lua:4)",
    ], text
    assert tree(sysenv.home) == before
    assert (sysenv.work / "notified").exists()  # outside home: it really ran, and cannot be undone


def test_plan_marks_execs_without_undo_irreversible(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + """
exec { name = "noundo", command = "true" }
exec { name = "withundo", command = "true", undo = "true" }
""",
    )
    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)
    lines = {
        ln.split(":")[0].strip(): ln for ln in p.stdout.splitlines() if "exec " in ln and ":" in ln
    }
    assert "irreversible" in lines["+ exec noundo"], p.stdout
    assert "irreversible" not in lines["+ exec withundo"], p.stdout
    pj = sysenv.run("plan", "--json")
    entries = {e["id"]: e for e in json.loads(pj.stdout)["plan"]["items"]}
    assert entries["exec#noundo"].get("irreversible") is True
    assert not entries["exec#withundo"].get("irreversible")


def test_removed_directory_and_files_come_back(sysenv) -> None:
    """Declarative removal done first in the apply is undone when a later item fails."""
    s1 = apply_ok(
        sysenv,
        """
local d = file { path = "~/.config/tool", ensure = "directory", mode = "0700" }
file { path = "~/.config/tool/conf", content = "k = v\\n", mode = "0600" }
file { path = "~/notes.txt", content = "notes\\n", mode = "0640" }
""",
    )
    before = tree(sysenv.home)
    assert before[".config/tool"] == ("dir", 0o700, None)
    apply_fails(
        sysenv, 'exec { name = "boom", command = "false" }\n', before, "exec boom", BOOM_REASON
    )
    assert_snapshots(sysenv, [s1], s1)


def test_overwritten_mode_only_change_is_restored(sysenv) -> None:
    put(sysenv.home / "script.sh", "#!/bin/sh\necho hi\n", 0o700)
    before = tree(sysenv.home)
    apply_fails(
        sysenv,
        """
local s = file { path = "~/script.sh", content = "#!/bin/sh\\necho hi\\n", mode = "0644" }
exec { name = "boom", command = "false", depends_on = { s } }
""",
        before,
        "exec boom",
        BOOM_REASON,
    )
    assert before["script.sh"][1] == 0o700


# -- 2. the seed's Test Cases table (atomic-apply-rollback.md) ---------------
def bind_file(
    ident: str,
    path: Path,
    text: str,
    *,
    deps: str = "",
    src: str | None = None,
    destroy: str | None = None,
    create_cmd: str | None = None,
    log: Path | None = None,
) -> str:
    """A sys.bind that writes `path` (output `path`); its destroy removes it.

    `src` is a Lua expression (another bind's output placeholder) handed to the
    create command as $1; `log` gets one line per phase run, in order.
    """
    logc = f"; echo {ident}:$0 >> {log}" if log else ""
    create = create_cmd or f"printf '%s\\n' {text!r} > {path}"
    destroy_cmd = destroy if destroy is not None else "rm -f $1"
    src_input = f", src = {src}" if src else ""
    return f"""
local {ident} = sys.bind {{
  id = "{ident}",
  inputs = {{ path = {q(path)}{src_input} }},{deps}
  create = function(inputs, ctx)
    ctx:exec {{ bin = "/bin/sh", args = {{ "-c", {q(create + logc)}, "create", inputs.src or "" }} }}
    return {{ path = inputs.path }}
  end,
  destroy = function(outputs, ctx)
    ctx:exec {{ bin = "/bin/sh", args = {{ "-c", {q(destroy_cmd + logc)}, "destroy", outputs.path }} }}
  end,
}}
"""


def bind_state_files(sysenv) -> list[str]:  # type: ignore[no-untyped-def]
    d = sysenv.root / "state" / "binds"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def test_apply_restores_destroyed_binds_on_execution_failure(sysenv) -> None:
    h = sysenv.home
    s1 = apply_ok(sysenv, bind_file("a", h / "bind-a", "from a"))
    states = bind_state_files(sysenv)
    assert len(states) == 1 and (h / "bind-a").read_text() == "from a\n"
    before = tree(h)
    apply_fails(
        sysenv, 'exec { name = "boom", command = "false" }\n', before, "exec boom", BOOM_REASON
    )
    assert (h / "bind-a").read_text() == "from a\n"
    assert bind_state_files(sysenv) == states
    assert_snapshots(sysenv, [s1], s1)


def test_apply_restores_on_partial_destroy_failure(sysenv) -> None:
    h = sysenv.home
    # a depends on b, so a is destroyed first (reverse dependency order), then b's destroy fails
    s1 = apply_ok(
        sysenv,
        bind_file("b", h / "bind-b", "from b", destroy="echo busy >&2; exit 3")
        + bind_file("a", h / "bind-a", "from a", deps=" depends_on = { b },"),
    )
    states = bind_state_files(sysenv)
    assert len(states) == 2
    before = tree(h)
    apply_fails(sysenv, "-- nothing declared any more\n", before, "bind b", "busy")
    assert (h / "bind-a").read_text() == "from a\n"  # destroyed, then restored
    assert bind_state_files(sysenv) == states
    assert_snapshots(sysenv, [s1], s1)


def test_apply_restores_dependent_binds_in_order(sysenv) -> None:
    h, log = sysenv.home, sysenv.work / "phases.log"
    # b copies a's file: restoring b before a would fail
    s1 = apply_ok(
        sysenv,
        bind_file("a", h / "bind-a", "from a", log=log)
        + bind_file(
            "b",
            h / "bind-b",
            "",
            deps=" depends_on = { a },",
            src="a.outputs.path",
            create_cmd=f"cat $1 > {h}/bind-b",
            log=log,
        ),
    )
    assert (h / "bind-b").read_text() == "from a\n"
    log.write_text("")
    before = tree(h)
    apply_fails(
        sysenv, 'exec { name = "boom", command = "false" }\n', before, "exec boom", BOOM_REASON
    )
    phases = log.read_text().split()
    assert phases == ["b:destroy", "a:destroy", "a:create", "b:create"], phases
    assert_snapshots(sysenv, [s1], s1)


def test_apply_success_removes_destroyed_bind_states(sysenv) -> None:
    h = sysenv.home
    apply_ok(sysenv, bind_file("a", h / "bind-a", "from a") + bind_file("k", h / "bind-k", "kept"))
    assert len(bind_state_files(sysenv)) == 2
    apply_ok(sysenv, bind_file("k", h / "bind-k", "kept"))
    assert len(bind_state_files(sysenv)) == 1
    assert not (h / "bind-a").exists()
    assert (h / "bind-k").read_text() == "kept\n"


def test_apply_clears_snapshot_on_restore_failure(sysenv) -> None:
    h, flag = sysenv.home, sysenv.work / "broken"
    # a's create works only while the flag file is absent, so restoring it fails later
    s1 = apply_ok(
        sysenv,
        bind_file("a", h / "bind-a", "", create_cmd=f"test ! -e {flag} && echo a > {h}/bind-a"),
    )
    assert s1
    flag.write_text("")
    sysenv.write("sys.lua", HEADER + 'exec { name = "boom", command = "false" }\n')
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert "rolling back failed too" in text and "current snapshot pointer was cleared" in text, (
        text
    )
    assert "exec boom failed" in text
    assert_snapshots(sysenv, [s1], None)


def test_apply_preserves_builds_on_failure(sysenv) -> None:
    before = tree(sysenv.home)
    body = """
local tool = sys.build {
  id = "tool",
  inputs = { text = "built" },
  create = function(inputs, ctx)
    ctx:exec { bin = "/bin/sh", args = { "-c", "echo built > $1/tool.txt", "build", ctx.out } }
  end,
}
local use = exec { name = "use", command = "cat " .. tool.outputs.out .. "/tool.txt", undo = "true" }
exec { name = "boom", command = "false", depends_on = { use } }
"""
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply")
    text = out(p)
    assert (
        p.returncode == 1 and UNCHANGED in text and "exec boom" in text and BOOM_REASON in text
    ), text
    assert tree(sysenv.home) == before
    trees = sysenv.root / "store" / "trees"
    built = [t for t in trees.iterdir() if t.name.endswith("tool")]
    assert len(built) == 1 and (built[0] / "tool.txt").read_text() == "built\n"
    # a re-apply finds it cached
    plan = sysenv.run("plan")
    assert "Would have built" not in plan.stdout, plan.stdout


def test_apply_restore_resolves_bind_placeholders(sysenv) -> None:
    h = sysenv.home
    b = bind_file("b", h / "bind-b", "b output")
    a = bind_file(
        "a",
        h / "bind-a",
        "",
        deps=" depends_on = { b },",
        src="b.outputs.path",
        create_cmd=f"cp $1 {h}/bind-a",
    )
    s1 = apply_ok(sysenv, b + a)
    assert (h / "bind-a").read_text() == "b output\n"
    before = tree(h)
    # a is destroyed; b is unchanged, so a's restore reads b's output from its state file
    apply_fails(
        sysenv,
        b + 'exec { name = "boom", command = "false", depends_on = { b } }\n',
        before,
        "exec boom",
        BOOM_REASON,
    )
    assert (h / "bind-a").read_text() == "b output\n"
    assert_snapshots(sysenv, [s1], s1)


def test_partial_destroy_failure_does_not_recreate_the_failed_bind(sysenv) -> None:
    """Seed: "Destroy A succeeds, destroy B fails -> A restored". B was never destroyed, so
    restoring must not run B's create again (a create that appends would then append twice)."""
    h = sysenv.home
    apply_ok(
        sysenv,
        bind_file(
            "b",
            h / "bind-b",
            "",
            create_cmd=f"echo line >> {h}/bind-b",
            destroy="echo busy >&2; exit 3",
        )
        + bind_file("a", h / "bind-a", "from a", deps=" depends_on = { b },"),
    )
    assert (h / "bind-b").read_text() == "line\n"
    before = tree(h)
    apply_fails(sysenv, "-- nothing declared any more\n", before, "bind b", "busy")


def test_user_edits_made_after_the_last_apply_survive_a_failed_apply(sysenv) -> None:
    """The rollback restores the live state at apply start, not the snapshot's content
    (`--force`: without it, the apply refuses to overwrite the edit at all). The
    snapshot that would have kept the edit is not recorded either."""
    s1 = apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    put(sysenv.home / "a.txt", "edited by hand after the apply\n", 0o600)
    before = tree(sysenv.home)
    apply_fails(
        sysenv,
        """
local a = file { path = "~/a.txt", content = "v2\\n" }
exec { name = "boom", command = "false", depends_on = { a } }
""",
        before,
        "exec boom",
        BOOM_REASON,
        args=("--force",),
    )
    assert_snapshots(sysenv, [s1], s1)


def test_symlink_replaced_by_a_file_is_restored(sysenv) -> None:
    put(sysenv.home / "dotfiles" / "tmux.conf", "set -g mouse on\n")
    os.symlink("dotfiles/tmux.conf", sysenv.home / ".tmux.conf")
    before = tree(sysenv.home)
    assert before[".tmux.conf"][0] == "link"
    apply_fails(
        sysenv,
        """
local t = file { path = "~/.tmux.conf", content = "managed\\n" }
exec { name = "boom", command = "false", depends_on = { t } }
""",
        before,
        "exec boom",
        BOOM_REASON,
    )
