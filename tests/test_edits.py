"""Edits made by hand are never lost (issue 10, "Edits are never lost").

A managed file whose live content or mode changed since the last apply is
*edited*: `sys plan` marks it `!` with `edited since the last apply` (and
`--diff` shows the edit), `sys apply` refuses to overwrite it (exit 2,
nothing changed) unless `--force`, and a forced apply first records the
edits as a snapshot of their own, so that `sys rollback` brings them back.
A rollback keeps edits the same way rather than refusing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from conftest import HEADER, history, out, plan_line, put, state_of, tree

EDITED = "edited since the last apply"
# Both ways on, each a command that works as printed (issue 23, point 7): these
# files are declared with inline content, which `sys add` does not write.
KEEP_BASHRC = (
    "  keep ~/.bashrc: make its declaration (sys.lua:4) say what it holds now, then run: sys apply"
)
KEEP_INPUTRC = (
    "  keep ~/.inputrc: make its declaration (sys.lua:5) say what it holds now, then run: sys apply"
)
OVERWRITE_IT = (
    "  overwrite it (kept in a snapshot first: `sys rollback` brings it back): sys apply --force"
)
REFUSE_1 = "Refusing to overwrite 1 path edited since the last apply:"

V1 = """
file { path = "~/.bashrc", content = "export EDITOR=vi\\n" }
file { path = "~/.inputrc", content = "set bell-style none\\n" }
"""


def apply_ok(sysenv, body: str, *args: str):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply", *args)
    assert p.returncode == 0, out(p)
    assert "Traceback" not in out(p)
    return p


# -- sys plan ---------------------------------------------------------------------
def test_plan_marks_an_edited_file_and_changes_nothing(sysenv) -> None:
    apply_ok(sysenv, V1)
    with open(sysenv.home / ".bashrc", "a") as f:
        f.write("alias ll='ls -l'\n")
    before = tree(sysenv.home)
    p = sysenv.run("plan")
    assert p.returncode == 1, out(p)  # `sys apply` would refuse (issue 23, point 1)
    line = plan_line(p, "~/.bashrc")
    assert line.startswith("  ! file ~/.bashrc: " + EDITED), line
    assert "content edited" in line, line
    # untouched: no mark, and counted among the unchanged (listed with -v)
    assert "  = 1 unchanged" in p.stdout and "~/.inputrc" not in p.stdout, p.stdout
    assert "  = file ~/.inputrc: unchanged" in sysenv.run("plan", "-v").stdout
    assert "1 edited since the last apply" in p.stdout
    assert p.stdout.splitlines()[-4:] == [
        "Keep or overwrite the edit:",
        KEEP_BASHRC,
        OVERWRITE_IT,
        "1 path edited since the last apply would be overwritten: `sys apply` would refuse (exit 2).",
    ], out(p)
    assert tree(sysenv.home) == before
    assert sysenv.run("plan", "--exit-code").returncode == 1

    data = json.loads(sysenv.run("plan", "--json").stdout)
    entry = {e["label"]: e for e in data["plan"]["items"]}["~/.bashrc"]
    assert entry["symbol"] == "!" and entry["reason"] == EDITED
    assert entry["edited"] == "content edited" and entry["action"] == "update"
    assert "+alias ll='ls -l'" in entry["edit_diff"]
    assert data["plan"]["counts"]["edited"] == 1


def test_plan_diff_shows_the_edit_and_what_the_apply_would_write(sysenv) -> None:
    apply_ok(sysenv, V1)
    (sysenv.home / ".bashrc").write_text("export EDITOR=nano\n")
    sysenv.write("sys.lua", HEADER + V1.replace("EDITOR=vi", "EDITOR=vim"))
    p = sysenv.run("plan", "--diff")
    assert p.returncode == 1, out(p)  # an edit: `sys apply` would refuse
    lines = [ln.strip() for ln in p.stdout.splitlines()]
    edit = lines.index("--- ~/.bashrc (last applied)")
    assert lines[edit : edit + 6] == [
        "--- ~/.bashrc (last applied)",
        "+++ ~/.bashrc (live)",
        "@@ -1 +1 @@",
        "-export EDITOR=vi",
        "+export EDITOR=nano",
        "--- ~/.bashrc (current)",
    ], p.stdout
    assert lines[edit + 6 : edit + 10] == [
        "+++ ~/.bashrc (desired)",
        "@@ -1 +1 @@",
        "-export EDITOR=nano",
        "+export EDITOR=vim",
    ], p.stdout


def test_a_mode_edit_is_an_edit(sysenv) -> None:
    apply_ok(sysenv, V1)
    os.chmod(sysenv.home / ".inputrc", 0o600)
    p = sysenv.run("plan", "--diff")
    line = plan_line(p, "~/.inputrc")
    assert line.startswith("  ! file ~/.inputrc: " + EDITED), line
    assert "mode changed from 0644 to 0600" in line, line
    assert "old mode 0644" in p.stdout and "new mode 0600" in p.stdout


def test_a_file_replaced_by_a_symlink_is_an_edit(sysenv) -> None:
    apply_ok(sysenv, V1)
    put(sysenv.home / "dotfiles" / "bashrc", "# mine\n")
    os.unlink(sysenv.home / ".bashrc")
    os.symlink("dotfiles/bashrc", sysenv.home / ".bashrc")
    p = sysenv.run("plan")
    assert "replaced by a symlink to dotfiles/bashrc" in plan_line(p, "~/.bashrc"), p.stdout
    assert sysenv.run("apply").returncode == 2
    assert os.readlink(sysenv.home / ".bashrc") == "dotfiles/bashrc"


def test_what_is_not_an_edit(sysenv) -> None:
    """A deleted file, a file edited to what the config now says, and a config
    change over an untouched file overwrite nothing by hand."""
    apply_ok(
        sysenv,
        V1
        + 'file { path = "~/.gone", content = "x\\n" }\nfile { path = "~/.same", content = "a\\n" }\n',
    )
    os.unlink(sysenv.home / ".gone")
    (sysenv.home / ".same").write_text("b\n")
    sysenv.write(
        "sys.lua",
        HEADER
        + V1.replace("set bell-style none", "set bell-style visible")
        + 'file { path = "~/.gone", content = "x\\n" }\nfile { path = "~/.same", content = "b\\n" }\n',
    )
    p = sysenv.run("plan", "-v")  # -v: the unchanged ~/.same is listed too
    assert p.returncode == 0, out(p)
    assert EDITED not in p.stdout, p.stdout
    assert plan_line(p, "~/.gone").startswith("  + ")
    assert plan_line(p, "~/.inputrc").startswith("  ~ ")
    assert plan_line(p, "~/.same").startswith("  = ")
    assert sysenv.run("apply").returncode == 0


def test_a_file_managed_from_a_source_whose_source_changed_is_not_edited(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, 'file { path = "~/.vimrc", source = "dotfiles/vimrc" }\n')
    (sysenv.work / "dotfiles" / "vimrc").write_text("set nu\nset ai\n")  # edited in the repository
    p = sysenv.run("plan")
    assert plan_line(p, "~/.vimrc").startswith("  ~ "), p.stdout
    apply_ok(sysenv, 'file { path = "~/.vimrc", source = "dotfiles/vimrc" }\n')
    (sysenv.home / ".vimrc").write_text("set nu\nset ai\nset et\n")  # edited in ~
    (sysenv.work / "dotfiles" / "vimrc").write_text("set nu\n")
    assert plan_line(sysenv.run("plan"), "~/.vimrc").startswith("  ! file ~/.vimrc: " + EDITED)


# -- sys apply refuses ------------------------------------------------------------
def test_apply_refuses_to_overwrite_an_edit_and_changes_nothing(sysenv) -> None:
    apply_ok(sysenv, V1)
    (sysenv.home / ".bashrc").write_text("export EDITOR=emacs\n")
    sysenv.write("sys.lua", HEADER + V1.replace("set bell-style none", "set bell-style visible"))
    home, state = tree(sysenv.home), state_of(sysenv)
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert p.stdout.splitlines() == [
        REFUSE_1,
        "  ~/.bashrc",
        "Nothing was changed. Either:",
        KEEP_BASHRC,
        OVERWRITE_IT,
    ], out(p)
    assert "Traceback" not in out(p)
    # nothing changed: not even the other file, which was not edited
    assert tree(sysenv.home) == home
    assert state_of(sysenv) == state


def test_refusal_counts_every_edited_path(sysenv) -> None:
    apply_ok(sysenv, V1)
    (sysenv.home / ".bashrc").write_text("mine\n")
    os.chmod(sysenv.home / ".inputrc", 0o640)
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert p.stdout.splitlines() == [
        "Refusing to overwrite 2 paths edited since the last apply:",
        "  ~/.bashrc",
        "  ~/.inputrc",
        "Nothing was changed. Either:",
        KEEP_BASHRC,
        KEEP_INPUTRC,
        "  overwrite them (kept in a snapshot first: `sys rollback` brings them back): "
        "sys apply --force",
    ], out(p)
    assert tree(sysenv.home) == before


def test_apply_json_refusal(sysenv) -> None:
    apply_ok(sysenv, V1)
    (sysenv.home / ".bashrc").write_text("mine\n")
    p = sysenv.run("apply", "--json")
    assert p.returncode == 2, out(p)
    [summary] = [json.loads(ln) for ln in p.stdout.splitlines()]
    assert summary["result"] == "refused"
    assert [e["label"] for e in summary["edited"]] == ["~/.bashrc"]
    assert summary["edited"][0]["edited"] == "content edited"


def test_noop_apply_does_not_refuse(sysenv) -> None:
    apply_ok(sysenv, V1)
    (sysenv.home / ".bashrc").write_text("mine\n")
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--noop")
    assert p.returncode == 0, out(p)
    assert tree(sysenv.home) == before


def test_removing_the_declaration_of_an_edited_file_is_refused_too(sysenv) -> None:
    put(sysenv.home / ".bashrc", "# hand-made original\n")
    apply_ok(sysenv, V1)
    (sysenv.home / ".bashrc").write_text("# edited after the apply\n")
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/.inputrc", content = "set bell-style none\\n" }\n'
    )
    p = sysenv.run("plan")
    assert "  ! file ~/.bashrc: " + EDITED in p.stdout, p.stdout
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 2 and REFUSE_1 in p.stdout, out(p)
    assert tree(sysenv.home) == before
    # forced: the original comes back, and a rollback brings the edit back
    apply_ok(
        sysenv, 'file { path = "~/.inputrc", content = "set bell-style none\\n" }\n', "--force"
    )
    assert (sysenv.home / ".bashrc").read_text() == "# hand-made original\n"
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert (sysenv.home / ".bashrc").read_text() == "# edited after the apply\n"


# -- --force and rollback -----------------------------------------------------------
def test_force_keeps_the_edit_and_rollback_brings_it_back(sysenv) -> None:
    apply_ok(sysenv, V1)
    (sysenv.home / ".bashrc").write_text("export EDITOR=emacs\n")
    os.chmod(sysenv.home / ".bashrc", 0o600)
    edited = tree(sysenv.home)
    v2 = V1.replace("set bell-style none", "set bell-style visible")
    p = apply_ok(sysenv, v2, "--force")
    assert "Kept 1 path edited since the last apply in snapshot" in p.stdout, out(p)
    assert "`sys rollback` brings it back." in p.stdout
    assert tree(sysenv.home)[".bashrc"] == ("file", 0o644, b"export EDITOR=vi\n")
    assert (sysenv.home / ".inputrc").read_text() == "set bell-style visible\n"
    h = history(sysenv)
    assert [s["kind"] for s in h] == ["apply", "edits", "apply"]
    assert h[1]["message"] == "edits kept before apply --force: ~/.bashrc"
    assert h[0]["current"]
    # the snapshot just before the forced apply has the edit: rollback returns to it
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert f"Rolling back to snapshot {h[1]['id']}" in out(r)
    assert tree(sysenv.home) == edited
    # ... and a hand edit again, which status reports (issue 23, point 5)
    assert "M! file ~/.bashrc" in sysenv.run("status").stdout.splitlines()
    # what the rollback wrote back is a hand edit again (issue 21): the plan marks it
    p = sysenv.run("plan")
    assert plan_line(p, "~/.bashrc").startswith("  ! file ~/.bashrc: " + EDITED), p.stdout


def test_force_with_a_source_file(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    body = 'file { path = "~/.vimrc", source = "dotfiles/vimrc" }\n'
    apply_ok(sysenv, body)
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    assert sysenv.run("apply").returncode == 2
    apply_ok(sysenv, body, "--force")
    assert (sysenv.home / ".vimrc").read_text() == "set nu\n"
    (sysenv.work / "dotfiles" / "vimrc").unlink()  # a rollback needs only the store
    assert sysenv.run("rollback").returncode == 0
    assert (sysenv.home / ".vimrc").read_text() == "set nu\nset hls\n"


def test_rollback_over_an_edit_keeps_it(sysenv) -> None:
    apply_ok(sysenv, V1)
    apply_ok(sysenv, V1.replace("EDITOR=vi", "EDITOR=vim"))
    (sysenv.home / ".bashrc").write_text("export EDITOR=ed\n")
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert "Kept 1 path edited since the last apply" in r.stdout, out(r)
    assert (sysenv.home / ".bashrc").read_text() == "export EDITOR=vi\n"
    assert [s["kind"] for s in history(sysenv)] == ["rollback", "edits", "apply", "apply"]
    assert sysenv.run("rollback").returncode == 0  # back to the kept edits
    assert (sysenv.home / ".bashrc").read_text() == "export EDITOR=ed\n"


def test_a_forced_apply_killed_before_its_commit_records_no_edits(sysenv) -> None:
    apply_ok(sysenv, V1)
    (sysenv.home / ".bashrc").write_text("mine\n")
    before, snapshots = tree(sysenv.home), history(sysenv)
    sysenv.write("sys.lua", HEADER + V1.replace("vi", "vim"))
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "apply", "--force"],
        cwd=sysenv.work,
        env=dict(sysenv.env, SYSLUA_CRASH_AT="before-commit"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == -signal.SIGKILL, out(p)
    assert (sysenv.home / ".bashrc").read_text() == "export EDITOR=vim\n"
    s = sysenv.run("status")
    assert "rolled back an interrupted apply" in out(s), out(s)
    assert tree(sysenv.home) == before
    assert history(sysenv) == snapshots  # the edits snapshot went with it
