"""A removal stores before it deletes, and never deletes what syslua did not
write (issue 22, point 2).

Removing a path (no longer declared, `sys destroy`) first checks that it
still holds what syslua last wrote there; a path changed since is an edit:
kept, marked `!`, and refused as an edited declared path is (`--force` keeps
it in a snapshot first). A damaged current snapshot is reported, and
`sys apply` does not plan removals from an older snapshot until the user
says so: `sys apply --from-snapshot ID`, or `sys doctor --repair`.
"""

from __future__ import annotations

import json

from conftest import HEADER, apply_ok, history, out, put, state_of, tree

EDITED = "edited since the last apply"
REFUSE_1 = "Refusing to overwrite 1 path edited since the last apply:"

BOTH = """
file { path = "~/.bashrc", content = "# managed\\n" }
file { path = "~/.inputrc", content = "set bell-style none\\n" }
"""
ONE = 'file { path = "~/.inputrc", content = "set bell-style none\\n" }\n'


def snapshot_file(sysenv, ident: str):  # type: ignore[no-untyped-def]
    return sysenv.root / "state" / "snapshots" / f"{ident}.json"


def index(sysenv) -> dict:  # type: ignore[no-untyped-def]
    return json.loads((sysenv.root / "state" / "snapshots" / "index.json").read_text())


# -- a removal whose path was edited by hand ------------------------------------------
def test_removing_an_edited_file_is_refused_and_force_stores_it_first(sysenv) -> None:
    apply_ok(sysenv, BOTH)
    (sysenv.home / ".bashrc").write_text("# my own lines\n")
    sysenv.write("sys.lua", HEADER + ONE)
    p = sysenv.run("plan")
    assert p.returncode == 1, out(p)  # an edit: `sys apply` would refuse (issue 23)
    assert f"  ! file ~/.bashrc: {EDITED} (content edited)" in p.stdout, out(p)
    home, state = tree(sysenv.home), state_of(sysenv)
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert REFUSE_1 in p.stdout and "  ~/.bashrc" in p.stdout, out(p)
    assert tree(sysenv.home) == home and state_of(sysenv) == state
    # --force keeps the edit in a snapshot first, then removes the file
    p = sysenv.run("apply", "--force")
    assert p.returncode == 0, out(p)
    assert "Kept 1 path edited since the last apply in snapshot" in p.stdout, out(p)
    assert not (sysenv.home / ".bashrc").exists()
    assert [s["kind"] for s in history(sysenv)] == ["apply", "edits", "apply"]
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert tree(sysenv.home) == home


def test_removing_a_link_pointed_elsewhere_is_refused(sysenv) -> None:
    put(sysenv.work / "a", "a\n")
    put(sysenv.work / "b", "b\n")
    apply_ok(sysenv, f'file {{ path = "~/l", ensure = "link", target = "{sysenv.work / "a"}" }}\n')
    (sysenv.home / "l").unlink()
    (sysenv.home / "l").symlink_to(sysenv.work / "b")
    sysenv.write("sys.lua", HEADER + ONE)
    home = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 2 and REFUSE_1 in p.stdout and "  ~/l" in p.stdout, out(p)
    assert tree(sysenv.home) == home


def test_overwrite_names_one_edited_removal(sysenv) -> None:
    apply_ok(sysenv, BOTH)
    (sysenv.home / ".bashrc").write_text("# my own lines\n")
    sysenv.write("sys.lua", HEADER + ONE)
    p = sysenv.run("apply", "--overwrite", str(sysenv.home / ".bashrc"))
    assert p.returncode == 0, out(p)
    assert not (sysenv.home / ".bashrc").exists()
    assert sysenv.run("rollback").returncode == 0
    assert (sysenv.home / ".bashrc").read_text() == "# my own lines\n"


def test_destroy_of_an_edited_path_is_refused(sysenv) -> None:
    apply_ok(sysenv, BOTH)
    (sysenv.home / ".bashrc").write_text("# my own lines\n")
    home, state = tree(sysenv.home), state_of(sysenv)
    p = sysenv.run("destroy", "--yes")
    assert p.returncode == 2, out(p)
    assert "Refusing to remove 1 path edited since the last apply:" in p.stdout
    assert "  ~/.bashrc" in p.stdout, out(p)
    assert "sys destroy --yes --force" in p.stdout, out(p)
    assert tree(sysenv.home) == home and state_of(sysenv) == state
    p = sysenv.run("destroy", "--yes", "--force")
    assert p.returncode == 0, out(p)
    assert "Kept 1 path edited since the last apply in snapshot" in p.stdout, out(p)
    assert not (sysenv.home / ".bashrc").exists()
    assert sysenv.run("rollback").returncode == 0
    assert tree(sysenv.home) == home


# -- a damaged current snapshot ----------------------------------------------------
def originals_put_back(sysenv) -> tuple[str, str, dict]:  # type: ignore[no-untyped-def]
    """The issue's case: ~/.bashrc, hand-made, taken over by a first apply and
    put back by a second that no longer declares it. Returns both snapshots
    and the home as the second apply left it."""
    put(sysenv.home / ".bashrc", "# hand-made original\n")
    first = apply_ok(sysenv, BOTH)
    second = apply_ok(sysenv, ONE)
    assert (sysenv.home / ".bashrc").read_text() == "# hand-made original\n"
    return first, second, tree(sysenv.home)


def test_a_corrupt_current_snapshot_stops_removals_from_an_older_one(sysenv) -> None:
    first, second, home = originals_put_back(sysenv)
    snapshot_file(sysenv, second).write_bytes(b"\x00garbage{{{")
    state = state_of(sysenv)
    p = sysenv.run("apply")  # the config is unchanged
    assert p.returncode == 2, out(p)
    text = out(p)
    assert f"snapshot {second} is corrupt" in text, text
    assert f"sys apply --from-snapshot {first}" in text, text
    assert "sys doctor --repair" in text, text
    assert "Traceback" not in text
    assert tree(sysenv.home) == home and state_of(sysenv) == state
    # read-only commands still show the older snapshot standing in, with a warning
    p = sysenv.run("plan")
    assert p.returncode == 0 and f"snapshot {second} is corrupt" in out(p), out(p)
    assert tree(sysenv.home) == home


def test_a_missing_current_snapshot_stops_removals_too(sysenv) -> None:
    first, second, home = originals_put_back(sysenv)
    snapshot_file(sysenv, second).unlink()
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert f"sys apply --from-snapshot {first}" in out(p), out(p)
    assert tree(sysenv.home) == home


def test_from_snapshot_plans_removals_against_it_and_keeps_what_syslua_did_not_write(
    sysenv,
) -> None:
    first, second, home = originals_put_back(sysenv)
    snapshot_file(sysenv, second).write_text("garbage")
    # ~/.bashrc holds the original put back, not what the first apply wrote: an edit
    p = sysenv.run("apply", "--from-snapshot", first)
    assert p.returncode == 2 and REFUSE_1 in p.stdout and "  ~/.bashrc" in p.stdout, out(p)
    assert tree(sysenv.home) == home
    # --force removes it, kept in a snapshot first: a rollback brings it back
    p = sysenv.run("apply", "--from-snapshot", first, "--force")
    assert p.returncode == 0, out(p)
    assert "Kept 1 path edited since the last apply in snapshot" in p.stdout, out(p)
    assert not (sysenv.home / ".bashrc").exists()
    assert index(sysenv)["current"] not in (first, second)
    assert sysenv.run("rollback").returncode == 0
    assert tree(sysenv.home) == home


def test_from_snapshot_removes_what_is_still_as_syslua_wrote_it(sysenv) -> None:
    first = apply_ok(sysenv, BOTH)
    second = apply_ok(sysenv, BOTH + 'file { path = "~/c", content = "c\\n" }\n')
    snapshot_file(sysenv, second).write_text("garbage")
    sysenv.write("sys.lua", HEADER + ONE)
    assert sysenv.run("apply").returncode == 2
    p = sysenv.run("apply", "--from-snapshot", first)
    assert p.returncode == 0, out(p)
    assert not (sysenv.home / ".bashrc").exists()
    assert (sysenv.home / "c").read_text() == "c\n"  # first never managed it: left alone


def test_from_snapshot_is_refused_when_the_current_snapshot_is_readable(sysenv) -> None:
    first = apply_ok(sysenv, BOTH)
    apply_ok(sysenv, ONE)
    home = tree(sysenv.home)
    p = sysenv.run("apply", "--from-snapshot", first)
    assert p.returncode == 2 and "--from-snapshot" in out(p), out(p)
    assert tree(sysenv.home) == home


def test_doctor_repair_makes_the_newest_readable_snapshot_current(sysenv) -> None:
    first, second, home = originals_put_back(sysenv)
    snapshot_file(sysenv, second).write_text("garbage")
    p = sysenv.run("doctor", "--repair")
    text = out(p)
    assert f"snapshot {second} is corrupt" in text, text
    assert f"Made snapshot {first} current" in text, text
    assert index(sysenv)["current"] == first
    assert tree(sysenv.home) == home
    # now the apply plans against it, and finds the original put back an edit
    p = sysenv.run("apply")
    assert p.returncode == 2 and REFUSE_1 in p.stdout and "  ~/.bashrc" in p.stdout, out(p)
    assert tree(sysenv.home) == home
    p = sysenv.run("apply", "--force")
    assert p.returncode == 0, out(p)
    assert "Kept 1 path edited since the last apply in snapshot" in p.stdout, out(p)
    assert sysenv.run("rollback").returncode == 0
    assert tree(sysenv.home) == home


# -- whatever is removed is in the store first ---------------------------------------
def test_an_edited_tree_member_is_refused_and_force_stores_it_first(sysenv) -> None:
    put(sysenv.work / "dots" / "a.conf", "a\n")
    put(sysenv.work / "dots" / "sub" / "b.conf", "b\n")
    apply_ok(sysenv, 'file { path = "~/.cfg", source = "dots" }\n' + ONE)
    (sysenv.home / ".cfg" / "sub" / "b.conf").write_text("b, edited\n")
    home = tree(sysenv.home)
    sysenv.write("sys.lua", HEADER + ONE)
    p = sysenv.run("plan")
    assert f"! file ~/.cfg/sub/b.conf: {EDITED}" in p.stdout, out(p)
    p = sysenv.run("apply")
    assert p.returncode == 2 and "  ~/.cfg/sub/b.conf" in p.stdout, out(p)
    assert tree(sysenv.home) == home
    p = sysenv.run("apply", "--force")
    assert p.returncode == 0, out(p)
    assert not (sysenv.home / ".cfg").exists()
    assert sysenv.run("rollback").returncode == 0
    assert tree(sysenv.home) == home


def test_a_directory_removed_with_force_comes_back_whole(sysenv) -> None:
    put(sysenv.home / "junk" / "notes.txt", "mine\n", 0o600)
    put(sysenv.home / "junk" / "deep" / "more.txt", "more\n")
    (sysenv.home / "junk" / "deep" / "link").symlink_to("../notes.txt")
    before = tree(sysenv.home)
    apply_ok(sysenv, 'file { path = "~/junk", ensure = "absent", force = true }\n' + ONE)
    assert not (sysenv.home / "junk").exists()
    # no longer declared: what it removed comes back from the store
    apply_ok(sysenv, ONE)
    assert {k: v for k, v in tree(sysenv.home).items() if k != ".inputrc"} == before
