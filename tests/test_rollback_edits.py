"""An edit that `sys rollback` brought back is an edit again (issue 21, point 3).

`sys apply --force` keeps the hand edits it overwrites in a snapshot of
kind `edits`; `sys rollback` returns to it and writes the edits back. The
next `sys apply` must then refuse to overwrite them as it refuses any hand
edit: the rollback's snapshot remembers that the content is a hand edit,
not what the config applied. After any rollback, the output says when the
config still declares what was rolled back (`the next sys apply will redo
it`). `sys apply --overwrite PATH` (repeatable) overwrites only the named
edited paths: the others are left as they are and stay marked, and the rest
of the apply goes ahead.
"""

from __future__ import annotations

import os

from conftest import HEADER, history, out, plan_line, put, state_of, tree

EDITED = "edited since the last apply"
REDO = "the next sys apply will redo it"

V1 = """
file { path = "~/.bashrc", content = "export EDITOR=vi\\n" }
file { path = "~/.vimrc", source = "dotfiles/vimrc" }
"""


def apply_ok(sysenv, body: str, *args: str):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply", *args)
    assert p.returncode == 0, out(p)
    assert "Traceback" not in out(p)
    return p


# -- point 3: an edit brought back by a rollback -------------------------------------
def test_force_then_rollback_then_apply_refuses(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, V1)
    (sysenv.home / ".bashrc").write_text("export EDITOR=emacs\n")
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    apply_ok(sysenv, V1, "--force")  # the edits are kept in an `edits` snapshot
    assert (sysenv.home / ".bashrc").read_text() == "export EDITOR=vi\n"
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert (sysenv.home / ".bashrc").read_text() == "export EDITOR=emacs\n"
    assert (sysenv.home / ".vimrc").read_text() == "set nu\nset hls\n"
    # what the rollback wrote back are hand edits: status says so (issue 23, point 5)
    st = sysenv.run("status", "-v")
    assert "No drift" not in st.stdout, out(st)
    for label in ("~/.bashrc", "~/.vimrc"):
        assert f"M! file {label}" in st.stdout.splitlines(), out(st)
    assert "    in the home: content edited (a hand edit a rollback brought back)" in st.stdout
    # ... but what it wrote back are hand edits: the plan marks them, as any edit
    p = sysenv.run("plan", "--diff")
    for label in ("~/.bashrc", "~/.vimrc"):
        line = plan_line(p, label)
        assert line.startswith(f"  ! file {label}: {EDITED} (content edited)"), p.stdout
    assert "+export EDITOR=emacs" in p.stdout and "+set hls" in p.stdout
    # and the next apply refuses to overwrite them, changing nothing
    home, state = tree(sysenv.home), state_of(sysenv)
    a = sysenv.run("apply")
    assert a.returncode == 2, out(a)
    assert a.stdout.splitlines()[:3] == [
        "Refusing to overwrite 2 paths edited since the last apply:",
        "  ~/.bashrc",
        "  ~/.vimrc",
    ], out(a)
    assert tree(sysenv.home) == home and state_of(sysenv) == state
    # taken back with `sys add`, the edit of ~/.vimrc is no longer one
    assert sysenv.run("add", "~/.vimrc").returncode == 0
    assert (sysenv.work / "dotfiles" / "vimrc").read_text() == "set nu\nset hls\n"
    assert plan_line(sysenv.run("plan", "-v"), "~/.vimrc").startswith("  = ")
    # forced again: overwritten, and kept once more
    p = apply_ok(sysenv, V1, "--force")
    assert "Kept 1 path edited since the last apply" in p.stdout, out(p)
    assert (sysenv.home / ".bashrc").read_text() == "export EDITOR=vi\n"
    assert "No changes." in sysenv.run("apply").stdout


def test_an_edit_put_back_by_hand_is_no_edit(sysenv) -> None:
    """The brought-back edit undone by hand (the file is what the config
    applied): nothing to refuse."""
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vi\\n" }\n')
    (sysenv.home / ".bashrc").write_text("emacs\n")
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vi\\n" }\n', "--force")
    assert sysenv.run("rollback").returncode == 0
    (sysenv.home / ".bashrc").write_text("vi\n")
    assert EDITED not in sysenv.run("plan").stdout
    assert sysenv.run("apply").returncode == 0


def test_a_mode_edit_brought_back_is_an_edit(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vi\\n" }\n')
    os.chmod(sysenv.home / ".bashrc", 0o600)
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vi\\n" }\n', "--force")
    assert (sysenv.home / ".bashrc").stat().st_mode & 0o777 == 0o644
    assert sysenv.run("rollback").returncode == 0
    assert (sysenv.home / ".bashrc").stat().st_mode & 0o777 == 0o600
    line = plan_line(sysenv.run("plan"), "~/.bashrc")
    assert line.startswith(f"  ! file ~/.bashrc: {EDITED} (mode changed from 0644 to 0600)"), line
    assert sysenv.run("apply").returncode == 2


def test_destroy_then_rollback_brings_edits_back_as_edits(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vi\\n" }\n')
    (sysenv.home / ".bashrc").write_text("emacs\n")
    assert sysenv.run("destroy", "--yes").returncode == 2  # an edited path is not removed unasked
    d = sysenv.run("destroy", "--yes", "--force")
    assert d.returncode == 0, out(d)
    assert not (sysenv.home / ".bashrc").exists()
    assert sysenv.run("rollback").returncode == 0
    assert (sysenv.home / ".bashrc").read_text() == "emacs\n"
    assert sysenv.run("apply").returncode == 2


# -- the next sys apply will redo it ---------------------------------------------------
def test_rollback_says_when_the_config_still_declares_what_it_rolled_back(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vi\\n" }\n')
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vim\\n" }\n')
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert (sysenv.home / ".bashrc").read_text() == "vi\n"
    [line] = [ln for ln in r.stdout.splitlines() if REDO in ln]
    assert line == (
        "sys.lua still declares what was rolled back (~/.bashrc): the next sys apply will redo it."
    ), line
    # it will: the plan says so
    assert plan_line(sysenv.run("plan"), "~/.bashrc").startswith("  ~ ")
    # once the config declares the state rolled back to, a rollback says nothing of the kind
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vim\\n" }\n')
    sysenv.write("sys.lua", HEADER + 'file { path = "~/.bashrc", content = "vi\\n" }\n')
    r = sysenv.run("rollback")
    assert r.returncode == 0 and REDO not in out(r), out(r)


def test_rollback_of_a_source_change_will_be_redone(sysenv) -> None:
    """The config files did not change, the source file did: the next apply
    copies it again, and the rollback says so."""
    source = put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    body = 'file { path = "~/.vimrc", source = "dotfiles/vimrc" }\n'
    apply_ok(sysenv, body)
    source.write_text("set nu\nset ai\n")
    apply_ok(sysenv, body)
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert (sysenv.home / ".vimrc").read_text() == "set nu\n"
    assert f"(~/.vimrc): {REDO}." in r.stdout, out(r)


def test_rollback_to_kept_edits_says_the_next_apply_refuses(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vi\\n" }\n')
    (sysenv.home / ".bashrc").write_text("emacs\n")
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vi\\n" }\n', "--force")
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert REDO not in r.stdout, out(r)
    assert (
        "~/.bashrc holds an edit made by hand again: the next sys apply refuses to overwrite it "
        "(sys add PATH keeps it, sys apply --overwrite PATH drops it)."
    ) in r.stdout, out(r)


def test_rollback_noop_and_json_say_nothing_of_it(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vi\\n" }\n')
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "vim\\n" }\n')
    n = sysenv.run("rollback", "--noop")
    assert n.returncode == 0 and REDO not in out(n), out(n)
    assert (sysenv.home / ".bashrc").read_text() == "vim\n"


# -- sys apply --overwrite PATH ------------------------------------------------------
THREE = """
file { path = "~/.a", content = "a\\n" }
file { path = "~/.b", content = "b\\n" }
file { path = "~/.c", content = "c\\n" }
"""


def test_overwrite_one_edited_path_leaves_the_other_marked(sysenv) -> None:
    apply_ok(sysenv, THREE)
    (sysenv.home / ".a").write_text("a, edited\n")
    (sysenv.home / ".b").write_text("b, edited\n")
    apply_ok(sysenv, THREE.replace('"c\\n"', '"c2\\n"'), "--overwrite", "~/.a")
    home = sysenv.home
    assert (home / ".a").read_text() == "a\n"  # overwritten
    assert (home / ".b").read_text() == "b, edited\n"  # left as it is
    assert (home / ".c").read_text() == "c2\n"  # the rest of the apply went ahead
    h = history(sysenv)
    assert [s["kind"] for s in h] == ["apply", "edits", "apply"]
    assert h[1]["message"] == "edits kept before apply --overwrite: ~/.a"
    # ~/.b stays marked: the next apply refuses it, naming it alone
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert p.stdout.splitlines()[:2] == [
        "Refusing to overwrite 1 path edited since the last apply:",
        "  ~/.b",
    ], out(p)
    assert "No changes." not in p.stdout
    # the overwritten edit comes back with a rollback; ~/.b, which the apply
    # left as it is, stays as it is, and stays marked
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert "Kept" not in r.stdout, out(r)  # no edit overwritten: nothing to keep
    assert (home / ".a").read_text() == "a, edited\n"
    assert (home / ".b").read_text() == "b, edited\n"
    assert (home / ".c").read_text() == "c\n"
    p = sysenv.run("plan")
    for label in ("~/.a", "~/.b"):
        assert plan_line(p, label).startswith(f"  ! file {label}: {EDITED}"), p.stdout
    files = tree(home)
    a = sysenv.run("apply")
    assert a.returncode == 2, out(a)
    assert a.stdout.splitlines()[:3] == [
        "Refusing to overwrite 2 paths edited since the last apply:",
        "  ~/.a",
        "  ~/.b",
    ], out(a)
    assert tree(home) == files


def test_overwrite_reports_what_it_left(sysenv) -> None:
    apply_ok(sysenv, THREE)
    (sysenv.home / ".a").write_text("a, edited\n")
    (sysenv.home / ".b").write_text("b, edited\n")
    p = sysenv.run("apply", "--overwrite", str(sysenv.home / ".b"), "--overwrite", "~/.a")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / ".a").read_text() == "a\n" and (sysenv.home / ".b").read_text() == "b\n"
    (sysenv.home / ".a").write_text("a, again\n")
    (sysenv.home / ".b").write_text("b, again\n")
    sysenv.write("sys.lua", HEADER + THREE.replace('"c\\n"', '"c3\\n"'))
    p = sysenv.run("apply", "--overwrite", "~/.a")
    assert p.returncode == 0, out(p)
    assert (
        "Left 1 path edited since the last apply as it is: ~/.b "
        "(sys add PATH keeps it, sys apply --overwrite PATH overwrites it)."
    ) in p.stdout, out(p)


def test_overwrite_of_a_path_not_edited_is_refused(sysenv) -> None:
    apply_ok(sysenv, THREE)
    (sysenv.home / ".a").write_text("a, edited\n")
    home, state = tree(sysenv.home), state_of(sysenv)
    p = sysenv.run("apply", "--overwrite", "~/.c")
    assert p.returncode == 2, out(p)
    assert "--overwrite ~/.c: not a path edited since the last apply" in p.stderr, out(p)
    assert tree(sysenv.home) == home and state_of(sysenv) == state


def test_overwrite_holds_an_edited_file_whose_declaration_was_removed(sysenv) -> None:
    put(sysenv.home / ".b", "b, the original\n")
    apply_ok(sysenv, THREE)
    (sysenv.home / ".a").write_text("a, edited\n")
    (sysenv.home / ".b").write_text("b, edited\n")
    without_b = THREE.replace('file { path = "~/.b", content = "b\\n" }\n', "")
    apply_ok(sysenv, without_b, "--overwrite", "~/.a")
    assert (sysenv.home / ".a").read_text() == "a\n"
    assert (sysenv.home / ".b").read_text() == "b, edited\n"  # not removed: left as it is
    p = sysenv.run("plan")
    assert f"  ! file ~/.b: {EDITED}" in p.stdout, p.stdout
    # overwritten at last: its removal puts the original back
    apply_ok(sysenv, without_b, "--overwrite", "~/.b")
    assert (sysenv.home / ".b").read_text() == "b, the original\n"


def test_diff_and_show_read_a_state_that_keeps_an_edit(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, V1)
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    apply_ok(sysenv, V1, "--force")
    [forced, edits, first] = [s["id"] for s in history(sysenv)][:3]
    # the edits snapshot keeps the edit (and what it was made over): its content is the edit
    p = sysenv.run("diff", first, edits)
    assert p.returncode == 0, out(p)
    assert "~ file ~/.vimrc: content changed" in p.stdout, p.stdout
    assert "+set hls" in p.stdout and "-set nu" not in p.stdout, p.stdout
    p = sysenv.run("diff", edits, forced)
    assert "-set hls" in p.stdout and "-set nu" not in p.stdout, p.stdout
    show = sysenv.run("snapshot", "show", edits)
    assert show.returncode == 0, out(show)
    vimrc = [ln for ln in show.stdout.splitlines() if ln.strip().startswith("file ~/.vimrc")]
    assert vimrc and "(content " in vimrc[0], show.stdout
