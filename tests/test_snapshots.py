"""Snapshots and the commands around them (SPEC section 6; issue 4, items 6 and 7).

`sys history`, `sys rollback [ID]`, `sys snapshot show|tag|delete`,
`sys status`, `sys diff`, `sys gc`, and what happens when the state on disk
is damaged by hand: a corrupt snapshot file, a corrupt or missing index, a
store object deleted by hand. All through the real command line.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from conftest import HEADER, delete_object, history, out, store_objects, tree


def ids(h: list[dict]) -> list[str]:
    """Snapshot ids, oldest first."""
    return [x["id"] for x in reversed(h)]


def current_of(h: list[dict]) -> str | None:
    cur = [x["id"] for x in h if x["current"]]
    assert len(cur) <= 1
    return cur[0] if cur else None


def apply_ok(sysenv, body: str, *args: str) -> str:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply", *args)
    assert p.returncode == 0, out(p)
    m = re.search(r"Apply complete: snapshot (\S+)\.", p.stdout)
    assert m, out(p)
    return m.group(1)


def rollback_ok(sysenv, *args: str) -> str:  # type: ignore[no-untyped-def]
    p = sysenv.run("rollback", *args)
    assert p.returncode == 0, out(p)
    m = re.search(r"Rollback complete: snapshot (\S+)\.", p.stdout)
    assert m, out(p)
    return m.group(1)


def snapshot_file(sysenv, ident: str) -> Path:  # type: ignore[no-untyped-def]
    return sysenv.root / "state" / "snapshots" / f"{ident}.json"


def index_file(sysenv) -> Path:  # type: ignore[no-untyped-def]
    return sysenv.root / "state" / "snapshots" / "index.json"


def objects(sysenv) -> set[str]:  # type: ignore[no-untyped-def]
    return store_objects(sysenv.root)


def no_traceback(p) -> None:  # type: ignore[no-untyped-def]
    assert "Traceback" not in out(p), out(p)


def make_snapshots(sysenv, n: int) -> list[str]:  # type: ignore[no-untyped-def]
    """n applies: a.txt = a1, a2 (+ b.txt), a3, ..."""
    made = []
    for i in range(1, n + 1):
        extra = 'file { path = "~/b.txt", content = "b\\n" }\n' if i == 2 else ""
        made.append(apply_ok(sysenv, f'file {{ path = "~/a.txt", content = "a{i}\\n" }}\n' + extra))
    return made


# -- history ---------------------------------------------------------------------
def test_history_json_and_plain(sysenv) -> None:
    s1 = apply_ok(sysenv, 'file { path = "~/a.txt", content = "a1\\n" }\n', "-m", "first dotfiles")
    s2 = apply_ok(sysenv, 'file { path = "~/a.txt", content = "a2\\n" }\n')
    h = history(sysenv)
    assert [x["id"] for x in h] == [s2, s1]  # newest first
    for x in h:
        assert {"id", "time", "message", "current"} <= set(x)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", x["time"]), x["time"]
        assert isinstance(x["current"], bool)
    assert [x["current"] for x in h] == [True, False]
    assert h[1]["message"] == "first dotfiles"
    assert h[0]["message"]
    plain = sysenv.run("history")
    lines = plain.stdout.splitlines()
    assert any(ln.startswith("* #2  " + s2[-4:]) for ln in lines), plain.stdout
    assert any(
        ln.startswith("  #1  " + s1[-4:]) and ln.endswith("first dotfiles") for ln in lines
    ), plain.stdout


def test_no_change_apply_adds_no_snapshot(sysenv) -> None:
    body = 'file { path = "~/a.txt", content = "a\\n" }\nenv { EDITOR = "vim" }\n'
    s1 = apply_ok(sysenv, body)
    p = sysenv.run("apply")
    assert p.returncode == 0 and "No changes" in p.stdout, out(p)
    h = history(sysenv)
    assert ids(h) == [s1] and h[0]["current"]


# -- rollback --------------------------------------------------------------------
def test_rollback_previous_and_by_id_after_sources_changed_and_deleted(sysenv) -> None:
    src = sysenv.work / "dotfiles" / "vimrc"
    src.parent.mkdir()
    src.write_text("set number\n")
    s1 = apply_ok(
        sysenv,
        """
file { path = "~/.vimrc", source = "./dotfiles/vimrc" }
file { path = "~/a.txt", content = "a1\\n", mode = "0600" }
""",
    )
    state1 = tree(sysenv.home)
    src.write_text("set relativenumber\n")
    s2 = apply_ok(
        sysenv,
        """
file { path = "~/.vimrc", source = "./dotfiles/vimrc" }
file { path = "~/a.txt", content = "a2\\n" }
file { path = "~/b.txt", content = "b\\n" }
""",
    )
    state2 = tree(sysenv.home)
    assert state2 != state1
    src.write_text("changed again, never applied\n")

    # default: the previous snapshot, content from the store, not from ./dotfiles
    s3 = rollback_ok(sysenv)
    assert tree(sysenv.home) == state1
    h = history(sysenv)
    assert ids(h) == [s1, s2, s3] and current_of(h) == s3
    assert h[0]["message"] == "rollback to #1"

    # by id, after the source file is gone altogether
    src.unlink()
    src.parent.rmdir()
    s4 = rollback_ok(sysenv, s2)
    assert tree(sysenv.home) == state2
    assert (sysenv.home / ".vimrc").read_text() == "set relativenumber\n"
    h = history(sysenv)
    assert ids(h) == [s1, s2, s3, s4] and current_of(h) == s4
    st = sysenv.run("status")
    assert "No drift" in st.stdout, out(st)


def test_rollback_to_unknown_id_changes_nothing(sysenv) -> None:
    (s1,) = make_snapshots(sysenv, 1)
    before, index = tree(sysenv.home), index_file(sysenv).read_bytes()
    p = sysenv.run("rollback", "20990101-000000-dead")
    assert p.returncode == 2, out(p)
    assert "no snapshot 20990101-000000-dead" in p.stderr, out(p)
    no_traceback(p)
    assert tree(sysenv.home) == before
    assert index_file(sysenv).read_bytes() == index
    assert ids(history(sysenv)) == [s1]


def test_rollback_that_fails_is_rolled_back(sysenv) -> None:
    guard = sysenv.work / "fail-now"
    s1 = apply_ok(
        sysenv,
        f"""
local a = file {{ path = "~/a.txt", content = "a1\\n" }}
exec {{ name = "check", command = "test ! -e {guard}", undo = "true", depends_on = {{ a }} }}
""",
    )
    s2 = apply_ok(
        sysenv,
        'file { path = "~/a.txt", content = "a2\\n" }\nfile { path = "~/b.txt", content = "b\\n" }\n',
    )
    before = tree(sysenv.home)
    guard.write_text("")
    p = sysenv.run("rollback")
    assert p.returncode == 1, out(p)
    assert "Rollback failed. System unchanged." in out(p), out(p)
    assert "exec check failed" in out(p), out(p)
    assert tree(sysenv.home) == before
    h = history(sysenv)
    assert ids(h) == [s1, s2] and current_of(h) == s2


def test_rollback_with_no_previous_snapshot(sysenv) -> None:
    p = sysenv.run("rollback")
    assert p.returncode == 2 and "no snapshots yet" in p.stderr, out(p)
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "a\\n" }\n')
    before = tree(sysenv.home)
    p = sysenv.run("rollback")
    assert p.returncode == 2 and "no previous snapshot" in p.stderr, out(p)
    assert tree(sysenv.home) == before


# -- snapshot show | tag | delete, gc -----------------------------------------------
def test_snapshot_show_tag_delete(sysenv) -> None:
    s1, s2 = make_snapshots(sysenv, 2)
    assert sysenv.run("snapshot", "tag", s1, "laptop-ok").returncode == 0
    p = sysenv.run("snapshot", "show")  # default: the current one
    assert p.returncode == 0 and f"Snapshot #2 {s2}" in p.stdout, out(p)
    assert "    file ~/b.txt (content " in p.stdout and "sys.lua" in p.stdout, p.stdout
    pj = sysenv.run("snapshot", "show", s1, "--json")
    assert pj.returncode == 0, out(pj)
    shown = json.loads(pj.stdout)
    assert shown["id"] == s1 and shown["tags"] == ["laptop-ok"]
    assert [i["key"] for i in shown["manifest"]["items"]] == [f"{sysenv.home}/a.txt"]

    p = sysenv.run("snapshot", "delete", s2)
    assert p.returncode == 2 and "current" in p.stderr and "cannot be deleted" in p.stderr, out(p)
    assert snapshot_file(sysenv, s2).exists()
    p = sysenv.run("snapshot", "delete", s1)
    assert p.returncode == 0, out(p)
    assert not snapshot_file(sysenv, s1).exists()
    h = history(sysenv)
    assert ids(h) == [s2] and h[0]["current"]


def test_gc_keep_and_dry_run(sysenv) -> None:
    src = sysenv.work / "rc"
    made = []
    for i in range(4):
        src.write_text(f"version {i}\n")
        made.append(apply_ok(sysenv, f'-- config {i}\nfile {{ path = "~/rc", source = "./rc" }}\n'))
    s0, s1, s2, s3 = made
    assert sysenv.run("snapshot", "tag", s0, "first").returncode == 0
    before_objects, before_home = objects(sysenv), tree(sysenv.home)
    before_state = tree(sysenv.root / "state" / "snapshots")

    p = sysenv.run("gc", "--keep", "1", "--dry-run")
    assert p.returncode == 0, out(p)
    assert "Would remove 1 snapshot(s)" in p.stdout and s1 in p.stdout, p.stdout
    assert tree(sysenv.root / "state" / "snapshots") == before_state
    assert objects(sysenv) == before_objects

    p = sysenv.run("gc", "--keep", "1", "--json")
    assert p.returncode == 0, out(p)
    result = json.loads(p.stdout)
    assert result["snapshots_removed"] == [s1] and result["dry_run"] is False
    assert ids(history(sysenv)) == [s0, s2, s3]  # tagged, the newest other, and the current one
    assert objects(sysenv) < before_objects  # config 1's sys.lua went with its snapshot
    assert tree(sysenv.home) == before_home
    # what is kept still works, content from the store: roll back to the tagged one by its tag
    src.unlink()
    rollback_ok(sysenv, "first")
    assert (sysenv.home / "rc").read_text() == "version 0\n"


# -- status, diff -------------------------------------------------------------------
def test_status_reports_edited_deleted_and_mode_changed(sysenv) -> None:
    apply_ok(
        sysenv,
        """
file { path = "~/edited.txt", content = "original\\n" }
file { path = "~/deleted.txt", content = "x\\n" }
file { path = "~/mode.txt", content = "m\\n", mode = "0600" }
file { path = "~/fine.txt", content = "fine\\n" }
""",
    )
    p = sysenv.run("status")
    assert p.returncode == 0 and "No drift" in p.stdout, out(p)
    (sysenv.home / "edited.txt").write_text("changed by hand\n")
    (sysenv.home / "deleted.txt").unlink()
    os.chmod(sysenv.home / "mode.txt", 0o644)
    before = tree(sysenv.home)
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    lines = p.stdout.splitlines()
    assert any("~/edited.txt" in ln and "edited" in ln for ln in lines), p.stdout
    assert any("~/deleted.txt" in ln and "deleted" in ln for ln in lines), p.stdout
    assert any("~/mode.txt" in ln and "mode" in ln for ln in lines), p.stdout
    assert "fine.txt" not in p.stdout
    pj = sysenv.run("status", "--json")
    kinds = {os.path.basename(d["path"]): d["kind"] for d in json.loads(pj.stdout)["drift"]}
    assert kinds == {"edited.txt": "edited", "deleted.txt": "deleted", "mode.txt": "mode"}
    assert tree(sysenv.home) == before  # status changes nothing


def test_diff_between_snapshots(sysenv) -> None:
    s1 = apply_ok(
        sysenv,
        """
file { path = "~/a.txt", content = "line one\\nline two\\n" }
file { path = "~/gone.txt", content = "bye\\n" }
""",
    )
    s2 = apply_ok(
        sysenv,
        """
file { path = "~/a.txt", content = "line one\\nline 2\\n", mode = "0640" }
file { path = "~/new.txt", content = "hi\\n" }
""",
    )
    p = sysenv.run("diff", s1)  # A alone: A and the current one
    assert p.returncode == 0, out(p)
    text = p.stdout
    assert f"From {s1} to {s2}" in text, text
    assert "+ file ~/new.txt: added" in text, text
    assert "- file ~/gone.txt: removed" in text, text
    assert "~ file ~/a.txt: content changed" in text and "mode" in text, text
    assert "-line two" in text and "+line 2" in text, text
    pj = sysenv.run("diff", s2, s1, "--json")
    changes = {c["id"].rsplit("/", 1)[-1]: c["symbol"] for c in json.loads(pj.stdout)["changes"]}
    assert changes == {"a.txt": "~", "gone.txt": "+", "new.txt": "-"}


# -- damaged state --------------------------------------------------------------------
def test_corrupt_snapshot_file_is_reported_clearly(sysenv) -> None:
    s1, s2 = make_snapshots(sysenv, 2)
    snapshot_file(sysenv, s1).write_bytes(b"\x00garbage{{{")
    before = tree(sysenv.home)
    p = sysenv.run("rollback", s1)
    assert p.returncode == 1, out(p)  # the state is unusable, not the command
    assert f"snapshot {s1} is corrupt" in p.stderr, out(p)
    no_traceback(p)
    assert tree(sysenv.home) == before
    # the other snapshots still work
    st = sysenv.run("status")
    assert st.returncode == 0 and f"No drift: the machine matches snapshot {s2}" in st.stdout, out(
        st
    )


def test_corrupt_current_snapshot_is_reported_and_the_newest_readable_one_used(sysenv) -> None:
    s1, s3 = make_snapshots(sysenv, 2)
    snapshot_file(sysenv, s3).write_text('{"id": "truncat')
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert f"snapshot {s3} is corrupt" in p.stderr and s1 in p.stderr, out(p)
    no_traceback(p)
    before = tree(sysenv.home)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a4\\n" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert f"snapshot {s3} is corrupt" in out(p), out(p)
    no_traceback(p)
    after = tree(sysenv.home)
    assert after["a.txt"][2] == b"a4\n"
    assert {k: v for k, v in after.items() if k != "a.txt"} == {
        k: v for k, v in before.items() if k != "a.txt"
    }


def test_history_reports_a_corrupt_snapshot(sysenv) -> None:
    s1, s2 = make_snapshots(sysenv, 2)
    snapshot_file(sysenv, s1).write_text("garbage")
    p = sysenv.run("history")
    assert p.returncode == 0, out(p)
    assert s1 in out(p) and "corrupt" in out(p), out(p)


def test_corrupt_current_snapshot_has_a_way_out(sysenv) -> None:
    s1, s2 = make_snapshots(sysenv, 2)
    snapshot_file(sysenv, s2).write_text("garbage")
    r = sysenv.run("rollback", s1)
    a = sysenv.run("apply")
    assert r.returncode == 0 or a.returncode == 0, out(r) + out(a)


def test_corrupt_index_is_reported_and_rebuilt(sysenv) -> None:
    s1, s2, s3 = make_snapshots(sysenv, 3)
    index_file(sysenv).write_text("{ this is not json")
    p = sysenv.run("history", "--json")
    assert p.returncode == 0, out(p)
    assert "index" in p.stderr and "rebuilt" in p.stderr, out(p)
    h = json.loads(p.stdout)
    assert ids(h) == [s1, s2, s3] and current_of(h) == s3
    json.loads(index_file(sysenv).read_text())  # valid again
    p = sysenv.run("history")
    assert "rebuilt" not in out(p)  # rebuilt once, reported once


def test_missing_index_is_rebuilt_by_apply(sysenv) -> None:
    s1, s2 = make_snapshots(sysenv, 2)
    index_file(sysenv).unlink()
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a4\\n" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert "index was missing" in out(p) and "rebuilt" in out(p), out(p)
    h = history(sysenv)
    assert ids(h)[:2] == [s1, s2] and len(h) == 3 and h[0]["current"]


def test_missing_index_is_reported_by_status(sysenv) -> None:
    make_snapshots(sysenv, 1)
    index_file(sysenv).unlink()
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert "rebuilt" in out(p), out(p)


def test_tags_survive_an_index_rebuild(sysenv) -> None:
    s1, s2 = make_snapshots(sysenv, 2)
    assert sysenv.run("snapshot", "tag", s1, "keep-me").returncode == 0
    index_file(sysenv).write_text("garbage")
    p = sysenv.run("gc", "--keep", "0")
    assert p.returncode == 0, out(p)
    assert s1 in ids(history(sysenv))


def test_store_object_deleted_by_hand(sysenv) -> None:
    src = sysenv.work / "zshrc"
    src.write_text("export A=1\n")
    s1 = apply_ok(sysenv, 'file { path = "~/.zshrc", source = "./zshrc" }\n')
    blob = json.loads(snapshot_file(sysenv, s1).read_text())["items"][f"file#{sysenv.home}/.zshrc"][
        "blob"
    ]
    src.write_text("export A=2\n")
    s2 = apply_ok(
        sysenv,
        'file { path = "~/.zshrc", source = "./zshrc" }\nfile { path = "~/x", content = "x\\n" }\n',
    )
    delete_object(sysenv.root, blob)
    before, index = tree(sysenv.home), index_file(sysenv).read_bytes()
    p = sysenv.run("rollback", s1)
    assert p.returncode == 1, out(p)  # the store is unusable, not the command
    assert f"store object {blob[:12]}" in p.stderr and "missing" in p.stderr, out(p)
    assert "~/.zshrc" in p.stderr or ".zshrc" in p.stderr
    no_traceback(p)
    assert tree(sysenv.home) == before
    assert index_file(sysenv).read_bytes() == index
    h = history(sysenv)
    assert ids(h) == [s1, s2] and current_of(h) == s2


def test_rollback_shows_command_output_like_apply(sysenv) -> None:
    sysenv.write(
        "sys.lua", 'exec { name = "say", command = "echo said-by-exec", logoutput = true }\n'
    )
    first = sysenv.run("apply")
    assert first.returncode == 0 and "said-by-exec" in first.stdout, out(first)
    sysenv.write("sys.lua", 'env { A = "1" }\n')
    assert sysenv.run("apply").returncode == 0
    back = sysenv.run("rollback")
    assert back.returncode == 0, out(back)
    assert "said-by-exec" in back.stdout, out(back)  # the exec ran again, with its output shown
