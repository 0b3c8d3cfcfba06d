"""One pass per file on an apply (issue 27, point 3).

What planning read of a file is reused when its item runs, once one `lstat`
finds the path as planning saw it (absent still, or the same stamp): the
file's status is read once. A path that changed since (an earlier item of
the same apply made it) is read again in full, and the item decides on what
is there now.
"""

from __future__ import annotations

import hashlib
import json
import time

from conftest import HEADER, items, out

from syslua.resources.file import FileType


def _count_status(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The keys `FileType.status` is asked for, in order (a spy: it still reads)."""
    seen: list[str] = []
    real = FileType.status

    def status(self, item, ctx):  # type: ignore[no-untyped-def]
        seen.append(item.key)
        return real(self, item, ctx)

    monkeypatch.setattr(FileType, "status", status)
    return seen


def test_a_clean_apply_reads_each_file_once(sysenv, monkeypatch) -> None:
    (sysenv.work / "src").mkdir()
    body = ""
    for i in range(5):
        (sysenv.work / "src" / f"s{i}").write_text(f"source {i}\n")
        body += f'file {{ path = "~/d/s{i}", source = "src/s{i}" }}\n'
        body += f'file {{ path = "~/e/c{i}", content = "content {i}\\n" }}\n'
    sysenv.write("sys.lua", HEADER + body)
    seen = _count_status(monkeypatch)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert len(seen) == 10, seen  # planning only: none read again when it runs
    assert sorted(set(seen)) == sorted(seen)
    for i in range(5):
        assert (sysenv.home / "d" / f"s{i}").read_text() == f"source {i}\n"
        assert (sysenv.home / "e" / f"c{i}").read_text() == f"content {i}\n"


def test_an_update_reads_each_changed_file_once(sysenv, monkeypatch) -> None:
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "one\\n" }\n')
    assert sysenv.run("apply").returncode == 0
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "two\\n" }\n')
    seen = _count_status(monkeypatch)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert seen == [str(sysenv.home / "a")]
    assert (sysenv.home / "a").read_text() == "two\n"
    assert sysenv.run("rollback").returncode == 0
    assert (sysenv.home / "a").read_text() == "one\n"


def test_a_path_made_after_planning_is_read_again(sysenv) -> None:
    # An earlier item makes the file exactly as declared: planning saw
    # nothing there, the run finds it made and leaves it unchanged.
    made = sysenv.home / "made.txt"
    sysenv.write(
        "sys.lua",
        HEADER
        + f'exec {{ name = "make", command = "sh -c \'printf mine > {made}\'", '
        + f'creates = "{made}" }}\n'
        + 'file { path = "~/made.txt", content = "mine", depends_on = { "exec#make" } }\n',
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    assert items(p)[f"file#{made}"]["status"] == "unchanged", out(p)
    assert made.read_text() == "mine"


def test_a_file_changed_after_planning_is_read_again(sysenv) -> None:
    # Planning saw the old content (an update); an earlier item wrote the
    # declared content meanwhile, so the run finds nothing left to do.
    target = sysenv.home / "t.txt"
    target.write_text("old and longer\n")
    sysenv.write(
        "sys.lua",
        HEADER
        + f'exec {{ name = "fix", command = "sh -c \'printf new > {target}\'" }}\n'
        + 'file { path = "~/t.txt", content = "new", depends_on = { "exec#fix" } }\n',
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    assert items(p)[f"file#{target}"]["status"] == "unchanged", out(p)
    assert target.read_text() == "new"


def test_a_snapshot_written_a_part_at_a_time_is_the_compact_json_of_it(sysenv) -> None:
    # Point 4: the snapshot is streamed to its file member by member; the
    # text is exactly what one `json.dumps` of it would have written.
    body = "".join(f'file {{ path = "~/m/f{i}", content = "c{i}\\n" }}\n' for i in range(30))
    sysenv.write("sys.lua", HEADER + body)
    assert sysenv.run("apply").returncode == 0
    sysenv.write("sys.lua", HEADER + body.replace("c1\\n", "changed\\n"))
    assert sysenv.run("apply").returncode == 0
    files = sorted((sysenv.root / "state" / "snapshots").glob("2*.json"))
    assert len(files) == 2
    for f in files:
        text = f.read_text()
        assert text == json.dumps(json.loads(text), separators=(",", ":"))
        assert len(json.loads(text)["pre"]["records"]) >= 1
    assert sysenv.run("rollback").returncode == 0
    assert (sysenv.home / "m" / "f1").read_text() == "c1\n"


def test_a_snapshot_written_in_batches_is_the_compact_json_of_what_it_records(
    sysenv, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # Point 4: the manifest, the item states and the journal's records are made
    # plain JSON a batch at a time as the file is written (batches of 4 here,
    # as 512 are in a 10,000-file apply): the text is the one `json.dumps` of
    # the snapshot would have written, and reads back as the same snapshot.
    from syslua.paths import Paths
    from syslua.state import snapshots

    monkeypatch.setattr(snapshots, "_BATCH", 4)
    body = "".join(f'file {{ path = "~/m/f{i}", content = "c{i}\\n" }}\n' for i in range(13))
    sysenv.write("sys.lua", HEADER + body)
    assert sysenv.run("apply").returncode == 0
    sysenv.write("sys.lua", HEADER + body.replace("c1\\n", "changed\\n"))
    assert sysenv.run("apply").returncode == 0
    store = snapshots.Snapshots(Paths.from_env())
    for ident in store.index()["order"]:
        text = store.path(ident).read_text()
        data = json.loads(text)
        assert text == json.dumps(data, separators=(",", ":"))
        assert data == store.load(ident).to_dict()
        assert len(data["manifest"]["items"]) == 13 and len(data["items"]) == 13
        assert len(data["pre"]["records"]) >= 1
    assert sysenv.run("rollback").returncode == 0
    assert (sysenv.home / "m" / "f1").read_text() == "c1\n"


def test_an_evaluation_cache_written_in_parts_is_read_back(sysenv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Point 4: the evaluation cache is written a few items at a time (3 here),
    # never as one text; the cached run plans exactly as the evaluation did.
    from syslua.manifest import evalcache

    monkeypatch.setattr(evalcache, "_BATCH", 3)
    body = "".join(f'file {{ path = "~/e/f{i}", content = "é{i}\\n" }}\n' for i in range(8))
    sysenv.write("sys.lua", HEADER + body)
    time.sleep(0.1)  # past the cache's "changed while evaluating" window (evalcache.SLACK_NS)
    fresh = sysenv.run("plan", "-v", "--json", "sys.lua")
    assert fresh.returncode == 0, out(fresh)
    (cache,) = (sysenv.root / "cache" / "eval").rglob("*.json")
    head, manifest, digest, end = cache.read_text(encoding="utf-8").split("\n")
    for line in (head, manifest):  # compact JSON, as one json.dumps writes it
        assert line == json.dumps(json.loads(line), separators=(",", ":"), ensure_ascii=False)
    assert digest == hashlib.sha256(manifest.encode()).hexdigest() and end == ""
    cached = sysenv.run("plan", "-v", "--json", "sys.lua")
    assert "evaluation cached" in cached.stderr, out(cached)
    assert json.loads(cached.stdout)["plan"] == json.loads(fresh.stdout)["plan"]
