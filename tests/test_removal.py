"""Declarative removal and takeover of existing files (SPEC section 6; issue 4, item 5).

Items of the current snapshot that the config no longer declares are removed:
a file syslua created is deleted, a directory it created is removed when
empty (a non-empty one is left), an exec's `undo` runs. A path that existed
before syslua first managed it is "taken over": the plan says so, the
original is kept in the store, and removing the declaration restores it.
"""

from __future__ import annotations

import json
import os
import re

from conftest import HEADER, out, put, tree

TAKEOVER = "takes over an existing file; the original is kept"


def apply_ok(sysenv, body: str):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    # removing everything on purpose is what these tests do
    p = sysenv.run("apply", "--allow-empty")
    assert p.returncode == 0, out(p)
    assert "Traceback" not in out(p)
    return p


def plan_line(p, label: str) -> str:  # type: ignore[no-untyped-def]
    for ln in p.stdout.splitlines():
        if re.search(rf"file {re.escape(label)}:", ln):
            return ln
    raise AssertionError(f"no plan line for {label}:\n{p.stdout}")


# -- takeover ----------------------------------------------------------------------
def test_plan_marks_a_takeover(sysenv) -> None:
    put(sysenv.home / ".bashrc", "# mine\n", 0o600)
    put(sysenv.home / ".inputrc", "set bell-style none\n")  # already exactly as declared
    sysenv.write(
        "sys.lua",
        HEADER
        + """
file { path = "~/.bashrc", content = "# managed\\n" }
file { path = "~/.inputrc", content = "set bell-style none\\n" }
file { path = "~/.new", content = "new\\n" }
""",
    )
    before = tree(sysenv.home)
    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)
    assert TAKEOVER in plan_line(p, "~/.bashrc")
    assert TAKEOVER not in plan_line(p, "~/.new")
    items = {
        i["label"]: i for i in json.loads(sysenv.run("plan", "--json").stdout)["plan"]["items"]
    }
    assert items["~/.bashrc"].get("takeover") is True
    assert not items["~/.new"].get("takeover")
    assert tree(sysenv.home) == before


def test_removing_a_taken_over_file_restores_the_original(sysenv) -> None:
    put(sysenv.home / ".bashrc", "# my own bashrc\nexport EDITOR=vi\n", 0o600)
    put(sysenv.home / ".config" / "git" / "config", "[user]\n\tname = me\n", 0o640)
    put(sysenv.home / "dotfiles" / "tmux.conf", "set -g mouse on\n")
    os.symlink("dotfiles/tmux.conf", sysenv.home / ".tmux.conf")  # a hand-made symlink
    original = tree(sysenv.home)
    apply_ok(
        sysenv,
        """
file { path = "~/.bashrc", content = "# managed by syslua\\n" }
file { path = "~/.config/git/config", content = "[core]\\n\\tpager = less\\n", mode = "0644" }
file { path = "~/created.txt", content = "syslua made me\\n" }
file { path = "~/.tmux.conf", content = "managed tmux\\n" }
""",
    )
    assert (sysenv.home / ".bashrc").read_text() == "# managed by syslua\n"
    assert not (sysenv.home / ".tmux.conf").is_symlink()
    assert (
        sysenv.home / "dotfiles" / "tmux.conf"
    ).read_text() == "set -g mouse on\n"  # not written through
    show = sysenv.run("snapshot", "show")
    assert "(original kept)" in show.stdout, out(show)
    # change it once more: the original must survive a second managed version
    apply_ok(
        sysenv,
        """
file { path = "~/.bashrc", content = "# managed v2\\n" }
file { path = "~/.config/git/config", content = "[core]\\n\\tpager = less\\n", mode = "0644" }
file { path = "~/created.txt", content = "syslua made me\\n" }
""",
    )
    sysenv.write("sys.lua", HEADER + "-- nothing declared\n")
    plan = sysenv.run("plan")
    assert re.search(r"- file ~/\.bashrc", plan.stdout) and re.search(
        r"- file ~/created\.txt", plan.stdout
    ), out(plan)
    assert (sysenv.home / ".bashrc").read_text() == "# managed v2\n"  # plan changes nothing
    p = apply_ok(sysenv, "-- nothing declared\n")
    assert "restored the original" in out(p), out(p)
    # originals back with content and mode; the file syslua created is gone
    assert tree(sysenv.home) == original


def test_takeover_of_a_file_already_as_declared_is_kept_on_removal(sysenv) -> None:
    put(sysenv.home / ".inputrc", "set bell-style none\n", 0o600)
    original = tree(sysenv.home)
    apply_ok(
        sysenv, 'file { path = "~/.inputrc", content = "set bell-style none\\n", mode = "0600" }\n'
    )
    apply_ok(sysenv, "-- nothing declared\n")
    assert tree(sysenv.home) == original


def test_takeover_survives_rollback_round_trip(sysenv) -> None:
    put(sysenv.home / ".zshrc", "# hand-made\n", 0o600)
    original = tree(sysenv.home)
    apply_ok(sysenv, 'file { path = "~/.zshrc", content = "# managed\\n" }\n')
    managed = tree(sysenv.home)
    apply_ok(sysenv, "-- nothing declared\n")
    assert tree(sysenv.home) == original
    p = sysenv.run("rollback")  # back to the managed version
    assert p.returncode == 0, out(p)
    assert tree(sysenv.home) == managed
    apply_ok(sysenv, "-- nothing declared\n")  # and removing it again still restores the original
    assert tree(sysenv.home) == original


def test_taken_over_directory_is_kept_on_removal(sysenv) -> None:
    (sysenv.home / "existing-empty").mkdir(mode=0o700)
    os.chmod(sysenv.home / "existing-empty", 0o700)
    original = tree(sysenv.home)
    apply_ok(sysenv, 'file { path = "~/existing-empty", ensure = "directory", mode = "0755" }\n')
    assert tree(sysenv.home)["existing-empty"] == ("dir", 0o755, None)
    apply_ok(sysenv, "-- nothing declared\n")
    assert tree(sysenv.home) == original


# -- removal of what syslua created ----------------------------------------------------
def test_created_files_and_directories_are_removed(sysenv) -> None:
    original = tree(sysenv.home)
    apply_ok(
        sysenv,
        """
file { path = "~/tools", ensure = "directory", mode = "0755" }
file { path = "~/tools/run.sh", content = "#!/bin/sh\\n", mode = "0755" }
file { path = "~/notes.txt", content = "n\\n" }
""",
    )
    assert {"tools", "tools/run.sh", "notes.txt"} <= set(tree(sysenv.home))
    p = apply_ok(sysenv, "-- nothing declared\n")
    assert "removed" in out(p)
    # the file inside goes first (reverse dependency order), so the directory is empty and goes too
    assert tree(sysenv.home) == original


def test_implicitly_created_parent_directories_are_removed(sysenv) -> None:
    """Creating ~/a/b/c also created ~/a and ~/a/b; removal leaves the home as it was."""
    original = tree(sysenv.home)
    apply_ok(sysenv, 'file { path = "~/a/b/c", ensure = "directory", mode = "0755" }\n')
    assert (sysenv.home / "a" / "b" / "c").is_dir()
    apply_ok(sysenv, "-- nothing declared\n")
    assert tree(sysenv.home) == original


def test_non_empty_created_directory_is_left(sysenv) -> None:
    apply_ok(
        sysenv,
        """
file { path = "~/cache", ensure = "directory", mode = "0755" }
file { path = "~/empty", ensure = "directory", mode = "0755" }
""",
    )
    put(sysenv.home / "cache" / "user-data.db", "precious\n")
    p = apply_ok(sysenv, "-- nothing declared\n")
    assert "not empty" in out(p), out(p)
    assert (sysenv.home / "cache" / "user-data.db").read_text() == "precious\n"
    assert not (sysenv.home / "empty").exists()


def test_removal_runs_exec_undo(sysenv) -> None:
    flag = sysenv.home / "service-enabled"
    apply_ok(
        sysenv,
        f"""
exec {{ name = "enable", command = "touch {flag}", undo = "rm -f {flag}", creates = "{flag}" }}
exec {{ name = "hello", command = "true" }}
""",
    )
    assert flag.exists()
    p = apply_ok(sysenv, "-- nothing declared\n")
    assert not flag.exists()
    assert "exec enable: undone" in out(p), out(p)


def test_takeover_original_survives_self_healing(sysenv) -> None:
    put(sysenv.home / ".bashrc", "# the user's own\n", 0o600)
    original = tree(sysenv.home)
    managed = 'file { path = "~/.bashrc", content = "# managed\\n" }\n'
    apply_ok(sysenv, managed)
    sysenv.write(
        "sys.lua",
        HEADER
        + managed
        + """
local bad = exec { name = "badundo", command = "true", undo = "false", depends_on = { "file#~/.bashrc" } }
exec { name = "boom", command = "false", depends_on = { bad } }
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 1 and "pointer was cleared" in out(p), out(p)
    apply_ok(sysenv, managed)  # self-healing apply
    apply_ok(sysenv, "-- nothing declared\n")
    assert tree(sysenv.home) == original


def test_plan_after_self_healing_does_not_claim_a_takeover(sysenv) -> None:
    managed = 'file { path = "~/.profile", content = "# managed\\n" }\n'
    apply_ok(sysenv, managed)
    sysenv.write(
        "sys.lua",
        HEADER
        + managed
        + """
local bad = exec { name = "badundo", command = "true", undo = "false", depends_on = { "file#~/.profile" } }
exec { name = "boom", command = "false", depends_on = { bad } }
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 1 and "pointer was cleared" in out(p), out(p)
    (sysenv.home / ".profile").write_text("# edited by hand\n")
    sysenv.write("sys.lua", HEADER + managed)
    plan = sysenv.run("plan")
    assert plan.returncode == 0, out(plan)
    assert "~ file ~/.profile" in plan.stdout
    assert "takes over an existing file" not in plan.stdout  # syslua managed it before
