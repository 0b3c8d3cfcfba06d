"""Every on-disk format today's syslua writes still loads (tests/data/state-v1).

The fixture is state written by the real `sys` command line of commit
bb82dbe (tests/data/state-v1/make.py says how): snapshots of every kind
(apply, edits, add, rollback, destroy) with the item states of files, trees,
links, execs, env variables, an archive, a package, a build and a bind;
tags; the record of originals (files, a whole directory); `unrestored.json`
and a failed journal; journals left by applies killed before and after their
commit record and in their first batch; the store's packs and loose blobs.
Each test copies one scene into its own temp dir (`install`) and reads it
through the library and the command line, checking exact outcomes: the
bytes and modes of the home against what the scene saw when it ran
(`expect.json`), the snapshots listed, the journal recovered.

When the saved records become typed records with codecs of their own, these
tests must keep passing as they are: files written by this version load.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import HEADER, SysEnv, history, ok, out

from syslua.execute.objects import needed
from syslua.manifest.model import Manifest
from syslua.paths import Paths
from syslua.state import journal
from syslua.state.originals import Originals, load_unrestored
from syslua.state.records import TreeOriginal
from syslua.state.snapshot_reader import LeanSnapshot
from syslua.state.snapshots import Snapshots
from syslua.state.store import PACK_MAX, Store

FIXTURE = Path(__file__).parent / "data" / "state-v1"
EXPECT: dict[str, Any] = json.loads((FIXTURE / "expect.json").read_text())
LAYOUT: dict[str, list[str]] = json.loads((FIXTURE / "layout.json").read_text())
MAIN: dict[str, str] = EXPECT["scenes"]["main"]["steps"]
RECOVERED = "rolled back an interrupted apply"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- the fixture, copied into a test's temp dir ----------------------------------------
def _me() -> dict[str, Any]:
    import grp
    import pwd

    return {
        "name": pwd.getpwuid(os.getuid()).pw_name,
        "group": grp.getgrgid(os.getgid()).gr_name,
        "uid": os.getuid(),
        "gid": os.getgid(),
    }


def _as_user(data: bytes, theirs: dict[str, Any], mine: dict[str, Any]) -> bytes:
    """JSON that declares files as `theirs` (owner and group names in the
    manifest, uid and gid in records) made to declare them as `mine`."""
    for key, field in (("owner", "name"), ("group", "group"), ("uid", "uid"), ("gid", "gid")):
        was = re.escape(json.dumps(theirs[field]).encode())
        data = re.sub(
            rb'("%s":\s*)%s(?=[,}\s])' % (key.encode(), was),
            rb"\g<1>" + json.dumps(mine[field]).encode(),
            data,
        )
    return data


def _here(data: bytes, scene: str, base: Path) -> bytes:
    """A state file's JSON with the scene's paths (and, run by another user
    than make.py was, its owner) made this test's."""
    data = data.replace(f"{EXPECT['mark']}/{scene}".encode(), str(base).encode())
    if os.getuid() != EXPECT["user"]["uid"]:
        data = _as_user(data, EXPECT["user"], _me())
    return data


def install(scene: str, base: Path) -> SysEnv:
    """Scene `scene` of the fixture at `base` (home, root, work), as it was left."""
    prefix = scene + "/"
    entries = sorted((k[len(prefix) :], v) for k, v in LAYOUT.items() if k.startswith(prefix))
    base.mkdir(parents=True, exist_ok=True)
    for rel, entry in entries:
        target = base / rel
        if entry[0] == "dir":
            target.mkdir()
        elif entry[0] == "link":
            os.symlink(entry[1].replace(f"{EXPECT['mark']}/{scene}", str(base)), target)
        else:
            data = (FIXTURE / scene / rel).read_bytes()
            if rel.startswith("root/state/") and rel.endswith((".json", ".jsonl")):
                data = _here(data, scene, base)
            target.write_bytes(data)
    for rel, entry in reversed(entries):  # a directory's mode after what is in it
        if entry[0] != "link":
            os.chmod(base / rel, int(entry[1], 8))
    return SysEnv(base / "home", base / "root", base / "work")


def home_tree(home: Path) -> dict[str, list[str]]:
    """As make.py records it: [kind, mode, sha256] of a file, [kind, mode] of a
    directory, ["link", target] of a symlink, by path under the home."""
    found: dict[str, list[str]] = {}
    for dirpath, dirs, files in os.walk(home):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, home)
            mode = f"{stat.S_IMODE(st.st_mode):04o}"
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ["link", os.readlink(p)]
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ["dir", mode]
            else:
                found[rel] = ["file", mode, sha(Path(p).read_bytes())]
    return dict(sorted(found.items()))


def expected(env: SysEnv, scene: str, step: str) -> dict[str, list[str]]:
    """The home as the scene saw it after `step`, at this test's paths."""
    mark = f"{EXPECT['mark']}/{scene}"
    base = str(env.home.parent)
    return {
        rel: [entry[0], *(x.replace(mark, base) for x in entry[1:])]
        for rel, entry in EXPECT["scenes"][scene]["trees"][step].items()
    }


def paths_of(env: SysEnv) -> Paths:
    return Paths(
        env.root / "store", env.root / "state", env.root / "cache", env.home / ".config" / "syslua"
    )


def run_ok(env: SysEnv, *args: str, input: str | None = None) -> str:
    p = env.run(*args, input=input)
    ok(p)
    return out(p)


# -- the main scene: a history of applies ----------------------------------------------
def test_history_lists_every_snapshot_with_its_kind_and_tags(tmp_path: Path) -> None:
    env = install("main", tmp_path)
    recorded = [  # oldest first: step, kind, message
        ("first", "apply", "first apply"),
        ("second", "apply", "apply sys.lua (11 changed)"),
        ("edits", "edits", "edits kept before apply --force: ~/small.txt"),
        ("third", "apply", "apply sys.lua (3 changed)"),
        ("add", "add", "add ~/copied.txt"),
        ("rollback-first", "rollback", f"rollback to {MAIN['first']}"),
        ("destroy", "destroy", "destroy (19 removed)"),
        ("rollback-destroy", "rollback", f"rollback to {MAIN['rollback-first']}"),
    ]
    listed = history(env)
    assert [(h["id"], h["kind"], h["message"]) for h in listed] == [
        (MAIN[step], kind, message) for step, kind, message in reversed(recorded)
    ]
    assert [h["current"] for h in listed] == [True] + [False] * 7
    assert {h["id"]: h["tags"] for h in listed if h["tags"]} == {
        MAIN["first"]: ["first-apply", "keep"],
        MAIN["second"]: ["second"],
    }
    counts = {h["id"]: h["counts"] for h in listed}
    assert counts[MAIN["first"]] == {
        "changed": 21,
        "unchanged": 0,
        "failed": 0,
        "skipped": 0,
        "noop": 0,
    }
    assert counts[MAIN["edits"]] == counts[MAIN["add"]] == {}  # they ran nothing

    # Snapshots from before generation numbers are numbered by their order.
    assert [h["generation"] for h in listed] == [8, 7, 6, 5, 4, 3, 2, 1]
    text = run_ok(env, "history").splitlines()
    assert text[1].startswith(f"* #8  {MAIN['rollback-destroy'][-4:]}  ")
    assert text[1].endswith("  rollback  19 of 21  rollback to #6")  # the id, by its number
    assert text[-1].startswith(f"  #1  {MAIN['first'][-4:]}  ")
    assert text[-1].endswith("  apply     21 of 21  [first-apply, keep] first apply")
    assert text[-2].endswith("  11 of 22  [second] apply sys.lua")  # its counts said once


def test_snapshot_show_reads_a_snapshot_by_its_tag(tmp_path: Path) -> None:
    env = install("main", tmp_path)
    lines = run_ok(env, "snapshot", "show", "keep").splitlines()
    home = env.home
    recorded = json.loads(
        (FIXTURE / "main/root/state/snapshots" / f"{MAIN['first']}.json").read_text()
    )
    assert lines[0] == f"Snapshot #1 {MAIN['first']} [first-apply, keep]"
    assert lines[1].startswith("  time:     ")  # local time
    assert lines[2:8] == [
        "  message:  first apply",
        "  kind:     apply",
        "  parent:   -",
        f"  config:   {env.work}/sys.lua",
        f"  manifest: {recorded['digest']}",  # as recorded (of the manifest's paths then)
        "  items:    18",  # a tree is one item, its members under it
    ]
    # Named as the plan names them, never by internal id.
    assert not [ln for ln in lines if "#" in ln and ln.startswith("    ")]
    content = (FIXTURE / "main" / "work" / "src" / "big.bin").read_bytes()
    assert len(content) > PACK_MAX  # a loose blob
    bashrc, y = sha(b"export EDITOR=vim\n")[:12], sha(b"y v1\n")[:12]
    for line in (
        f"    file ~/.bashrc (content {bashrc}) (original kept)",
        f"    file ~/big.bin (content {sha(content)[:12]})",
        "    file ~/old-dir (original kept)",
        "    file ~/sym (original kept)",
        "    file ~/tree/ (tree: 2 files, 1 directory)",
        f"      file ~/tree/sub/y.txt (content {y})",
        "    build greet (3c965568e50d)",
        "    bind greet-link",
        "    package hello@1.0",
        f"    archive {home}/dl/app.tar.gz",
        "    exec enable-thing",
        "    env PAGER",
    ):
        assert line in lines, "\n".join(lines)


def assert_no_drift(p: subprocess.CompletedProcess[str], snapshot: str) -> None:
    """`sys status` found no drift from `snapshot` (its first column is empty);
    the config in work/ may have changes pending (the second column)."""
    lines = p.stdout.splitlines()
    assert f"No drift: the machine matches snapshot {snapshot}." in lines, p.stdout
    rows = lines[: lines.index("")] if "" in lines else []
    assert all(row.startswith(" ") for row in rows), p.stdout


def test_status_finds_no_drift_then_a_hand_edit(tmp_path: Path) -> None:
    env = install("main", tmp_path)
    p = env.run("status")
    # the drift (the config in work/ has changes pending too: not what this checks)
    assert p.returncode == 0, out(p)
    assert_no_drift(p, MAIN["rollback-destroy"])
    (env.home / "small.txt").write_text("edited\n")
    p = env.run("status", "--json")
    data = json.loads(p.stdout)
    assert data.pop("config") == str(env.work / "sys.lua")
    assert data.pop("pending"), data
    assert data == {
        "format": 1,
        "snapshot": MAIN["rollback-destroy"],
        "drift": [
            {
                "id": f"file#{env.home}/small.txt",
                "path": f"{env.home}/small.txt",
                "kind": "edited",
                "detail": "content edited",
            }
        ],
        "unrestored": [],
        "store": None,
    }


def test_the_home_is_as_the_current_snapshot_left_it(tmp_path: Path) -> None:
    """The fixture itself: its home is the one make.py saw after its last step."""
    env = install("main", tmp_path)
    assert home_tree(env.home) == expected(env, "main", "rollback-destroy")


def test_rollback_to_older_snapshots_restores_their_exact_bytes(tmp_path: Path) -> None:
    env = install("main", tmp_path)
    hello = env.root / "state" / "profile" / "bin" / "hello"
    assert hello.read_bytes() == b"#!/bin/sh\necho hello\n"

    run_ok(env, "rollback", "second")
    assert home_tree(env.home) == expected(env, "main", "second")
    assert not hello.exists()  # the package left the profile in the second apply

    # The edit kept by `apply --force`, written back over the second apply's file.
    run_ok(env, "rollback", MAIN["edits"])
    edited = expected(env, "main", "second")
    edited["small.txt"] = ["file", "0644", sha(b"edited by hand\n")]
    assert home_tree(env.home) == edited

    run_ok(env, "rollback", "first-apply")
    assert home_tree(env.home) == expected(env, "main", "first")
    assert hello.read_bytes() == b"#!/bin/sh\necho hello\n"  # its tree was still in the store
    assert [h["kind"] for h in history(env)[:3]] == ["rollback"] * 3


def test_destroy_restores_every_original_byte_for_byte(tmp_path: Path) -> None:
    env = install("main", tmp_path)
    originals = Originals.load(env.root / "state")
    bashrc = originals.get(f"file#{env.home}/.bashrc")
    assert bashrc is not None and bashrc.to_json() == {
        "kind": "file",
        "blob": sha(b"hand-made bashrc\n"),
        "mode": 0o600,
        "uid": os.getuid(),
        "gid": os.getgid(),
    }
    old_dir = originals.get(f"file#{env.home}/old-dir")
    assert isinstance(old_dir, TreeOriginal) and old_dir.to_json()["kind"] == "tree"
    assert [r.path for r in old_dir.records] == [
        f"{env.home}/old-dir",
        f"{env.home}/old-dir/ln",
        f"{env.home}/old-dir/a.txt",
        f"{env.home}/old-dir/sub",
        f"{env.home}/old-dir/sub/b.txt",
    ]
    small = originals.get(f"file#{env.home}/small.txt")
    assert small is not None and small.to_json() == {"kind": "absent"}

    run_ok(env, "destroy", "--yes")
    after = home_tree(env.home)
    assert after == expected(env, "main", "destroy")
    assert after[".bashrc"] == ["file", "0600", sha(b"hand-made bashrc\n")]
    assert after["old-dir/ln"] == ["link", "a.txt"]
    assert after["old-dir/sub"] == ["dir", "0750"]
    assert after["old-dir/sub/b.txt"] == ["file", "0600", sha(b"old b\n")]
    assert after["sym"] == ["file", "0644", sha(b"hand-made file where a link goes\n")]
    assert history(env)[0]["kind"] == "destroy"


def test_gc_keeps_every_blob_a_snapshot_or_an_original_needs(tmp_path: Path) -> None:
    env = install("main", tmp_path)
    store = Store(env.root / "store")
    objects = set(store.all_objects())
    assert any(store.loose(d) for d in objects) and any(store.packed(d) for d in objects)

    text = run_ok(env, "gc", "--keep", "0")
    assert text.startswith("Removed 5 snapshot(s), 7 store object(s) ("), text
    kept = [MAIN["rollback-destroy"], MAIN["second"], MAIN["first"]]  # current, tagged
    assert [h["id"] for h in history(env)] == kept

    paths = paths_of(env)
    store = Store(paths.store)
    objects = set(store.all_objects())
    snaps = Snapshots(paths)
    blobs = Originals.load(paths.state).blobs()
    for ident in kept:
        snap_blobs, snap_trees = needed(snaps.load(ident))
        blobs |= snap_blobs
        assert all(store.tree_path(t).is_dir() for t in snap_trees), snap_trees
    assert blobs <= objects and all(store.verify(d) for d in blobs)

    doctor = json.loads(env.run("doctor", "--json").stdout)
    checks = {c["name"]: c for c in doctor["checks"]}
    for name in ("lua", "permissions", "lock", "journals", "store", "config"):
        assert checks[name]["ok"], checks[name]
    assert checks["store"]["detail"] == f"{len(objects)} objects: every hash matches"

    run_ok(env, "rollback", "second")
    assert home_tree(env.home) == expected(env, "main", "second")
    run_ok(env, "destroy", "--yes")
    assert home_tree(env.home) == expected(env, "main", "destroy")


# -- every snapshot file, read lean and whole ------------------------------------------
def test_the_lean_reader_reads_every_snapshot_as_the_full_reader_does(tmp_path: Path) -> None:
    read = 0
    for scene in EXPECT["scenes"]:
        env = install(scene, tmp_path / scene)
        snaps = Snapshots(paths_of(env))
        files = sorted(snaps.dir.glob("2*.json"))
        manifests = [snaps.load(f.stem).load_manifest() for f in files]
        for f in files:
            full = snaps.load(f.stem)
            for like in (full.load_manifest(), Manifest(items=()), manifests[0]):
                lean = snaps.load(f.stem, like=like)
                assert isinstance(lean, LeanSnapshot), f
                assert dict(lean.item_states()) == full.items
                assert lean.to_dict() == full.to_dict()
                assert needed(lean) == needed(full)
            read += 1
    # 8 in main, 2 in crash-before and crash-after (the killed apply saved its
    # own), 1 in crash-batch and in unrestored.
    assert read == 14


# -- journals left by killed applies ---------------------------------------------------
def journal_ops(env: SysEnv) -> Counter[str]:
    directory = env.root / "state" / "journal"
    assert journal.unusable(directory) is None
    return Counter(r.op for r in journal.read(directory))


def test_a_journal_killed_before_its_commit_is_rolled_back(tmp_path: Path) -> None:
    env = install("crash-before", tmp_path)
    steps = EXPECT["scenes"]["crash-before"]["steps"]
    assert journal_ops(env) == {
        "begin": 1,
        "path": 15,
        "originals": 1,
        "bind": 2,
        "exec": 1,
        "profile": 1,
        "snapshot": 1,
    }
    assert home_tree(env.home) == expected(env, "crash-before", "killed")
    assert (env.home / "bound").exists() and (env.home / ".enabled").exists()

    p = env.run("status")
    assert p.returncode == 0, out(p)
    assert RECOVERED in p.stderr
    assert_no_drift(p, steps["applied"])
    # The exec's undo ran, the bind was destroyed, every file is back.
    assert home_tree(env.home) == expected(env, "crash-before", "applied")
    assert [h["id"] for h in history(env)] == [steps["applied"]]
    assert sorted(p.name for p in (env.root / "state" / "snapshots").glob("2*.json")) == [
        f"{steps['applied']}.json"
    ]
    assert not (env.root / "state" / "journal" / "journal.jsonl").exists()
    profile = env.root / "state" / "profile"
    want = EXPECT["scenes"]["crash-before"]["profiles"]["applied"]
    assert (os.readlink(profile) if profile.is_symlink() else None) == want
    assert set(Originals.load(env.root / "state").entries) == {
        f"file#{env.home}/a.txt",
        f"file#{env.home}/d/f.txt",
    }


def test_a_journal_killed_after_its_commit_is_finished(tmp_path: Path) -> None:
    env = install("crash-after", tmp_path)
    steps = EXPECT["scenes"]["crash-after"]["steps"]
    ops = journal_ops(env)
    assert ops["commit"] == 1 and ops["snapshot"] == 1 and ops["profile"] == 1
    killed = expected(env, "crash-after", "killed")

    p = env.run("status")
    assert p.returncode == 0, out(p)
    assert (
        f"finished recording snapshot {steps['committed']} of an apply that was interrupted"
        in p.stderr
    ), out(p)
    assert_no_drift(p, steps["committed"])
    assert home_tree(env.home) == killed
    assert (env.home / "bound").read_text() == "bound\n"
    assert [h["id"] for h in history(env)] == [steps["committed"], steps["applied"]]
    assert not (env.root / "state" / "journal" / "journal.jsonl").exists()
    assert f"file#{env.home}/hand.txt" in Originals.load(env.root / "state")


def test_a_journal_killed_in_its_first_batch_is_rolled_back(tmp_path: Path) -> None:
    env = install("crash-batch", tmp_path)
    steps = EXPECT["scenes"]["crash-batch"]["steps"]
    assert journal_ops(env) == {"begin": 1, "path": 9}
    p = env.run("status")
    assert p.returncode == 0 and RECOVERED in p.stderr, out(p)
    assert_no_drift(p, steps["applied"])
    assert home_tree(env.home) == expected(env, "crash-batch", "applied")


# -- a failed undo ---------------------------------------------------------------------
def test_unrestored_paths_are_listed_and_their_originals_come_back(tmp_path: Path) -> None:
    env = install("unrestored", tmp_path)
    store = env.root / "store" / "objects"
    a, b = sha(b"hand-made a\n"), sha(b"hand-made b\n")
    assert [(r.path, r.prev.blob) for r in load_unrestored(env.root / "state")] == [
        (f"{env.home}/u/a.txt", a),
        (f"{env.home}/u/b.txt", b),
    ]
    p = env.run("status")
    assert p.returncode == 0, out(p)
    why = f"([Errno 17] File exists: '{env.home}/u')"
    assert p.stdout.startswith(
        "A failed rollback could not put these paths back:\n"
        f"  ! ~/u/a.txt: its previous content is kept in {store}/{a[:2]}/{a[2:]} {why}\n"
        f"  ! ~/u/b.txt: its previous content is kept in {store}/{b[:2]}/{b[2:]} {why}\n"
        "Fix what stopped it (the reason is on each line), then run `sys apply`.\n"
        "\n"
        "No current snapshot: nothing to compare with (run `sys apply`).\n"
    )
    assert (store / a[:2] / a[2:]).read_bytes() == b"hand-made a\n"
    doctor = json.loads(env.run("doctor", "--json").stdout)
    journals = next(c for c in doctor["checks"] if c["name"] == "journals")
    failed = sorted((env.root / "state" / "failed-journals").iterdir())
    assert len(failed) == 1 and journals["detail"] == (
        f"1 kept from an undo that could not finish: {failed[0]}"
    )

    # No snapshot is current: what was not put back outlives a gc.
    assert run_ok(env, "gc", "--keep", "0").startswith("Removed 1 snapshot(s), ")
    assert history(env) == []
    assert Store(env.root / "store").read(b) == b"hand-made b\n"

    # Put right by hand, applied again: nothing left to list.
    (env.home / "u").unlink()
    keep = 'file { path = "~/keep.txt", content = "keep\\n" }\n'
    env.write("sys.lua", HEADER + keep)
    run_ok(env, "apply")
    assert load_unrestored(env.root / "state") == []
    # Now only the record of originals names the hand-made contents.
    assert run_ok(env, "gc", "--keep", "0").startswith("Removed 0 snapshot(s), ")
    # The originals recorded before the failed apply were kept: declaring a
    # path and removing it again puts the hand-made bytes back.
    env.write("sys.lua", HEADER + keep + 'file { path = "~/u/a.txt", content = "managed a\\n" }\n')
    run_ok(env, "apply")
    env.write("sys.lua", HEADER + keep)
    run_ok(env, "apply")
    assert home_tree(env.home)["u/a.txt"] == ["file", "0600", a]


def test_run_by_another_user_the_fixture_declares_that_users_files() -> None:
    """`install` by another user than make.py's (CI runs as root, as make.py
    did): every owner, group, uid and gid of make.py's user becomes theirs."""
    theirs = EXPECT["user"]
    other = {"name": "alice", "group": "staff", "uid": theirs["uid"] + 1000, "gid": 4242}

    def owners(value: Any) -> Counter[tuple[str, Any]]:
        if isinstance(value, list):
            return sum((owners(v) for v in value), Counter())
        if not isinstance(value, dict):
            return Counter()
        found = Counter((k, v) for k, v in value.items() if k in ("owner", "group", "uid", "gid"))
        return found + sum((owners(v) for v in value.values()), Counter())

    state = FIXTURE / "main" / "root" / "state"
    for f in (state / "originals.json", state / "snapshots" / f"{MAIN['first']}.json"):
        before = owners(json.loads(f.read_bytes()))
        after = owners(json.loads(_as_user(f.read_bytes(), theirs, other)))
        assert sum(after.values()) == sum(before.values()) > 0
        assert set(after) <= {
            ("owner", "alice"),
            ("group", "staff"),
            ("uid", other["uid"]),
            ("gid", 4242),
        }
