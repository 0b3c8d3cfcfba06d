"""The content-addressed store: small blobs in packs, large ones loose.

Units on a real directory (a Store is a few files: a process adds nothing),
then the CLI: what a clean apply of many files leaves in the store, and that
rollback, gc and doctor work from packs.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from conftest import HEADER, corrupt_object, delete_object, ok, out, store_objects, tree

from syslua.errors import StateError
from syslua.state import store as store_mod
from syslua.state.store import PACK_MAX, Store


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def packs(store: Store) -> list[str]:
    return sorted(p.name for p in store.packs.iterdir()) if store.packs.is_dir() else []


def loose(store: Store) -> list[str]:
    return sorted(p.parent.name + p.name for p in store.objects.glob("*/*"))


# -- units ----------------------------------------------------------------------
def test_small_blobs_wait_in_memory_then_become_one_pack(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    blobs = [f"file {i}\n".encode() * (i + 1) for i in range(200)]
    digests = [store.put_bytes(b) for b in blobs]
    assert digests == [sha(b) for b in blobs]
    # Readable in this process before anything is on disk.
    assert packs(store) == [] and loose(store) == []
    assert all(store.has(d) for d in digests)
    assert store.read(digests[7]) == blobs[7] and store.size(digests[7]) == len(blobs[7])
    store.sync()
    [idx, pack] = packs(store)
    assert idx.endswith(".idx") and pack.endswith(".pack") and idx[:-4] == pack[:-5]
    assert loose(store) == []
    for p in store.packs.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o400
    assert stat.S_IMODE(store.packs.stat().st_mode) == 0o700
    # Another process (a new Store) finds every one of them in the pack.
    again = Store(tmp_path / "store")
    assert sorted(again.all_objects()) == sorted(set(digests))
    for d, b in zip(digests, blobs, strict=True):
        assert again.has(d) and again.read(d) == b and again.size(d) == len(b)
    assert not again.has(sha(b"never stored"))
    assert not again.has("not-hex")


def test_the_same_content_is_kept_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    a = store.put_bytes(b"same\n")
    store.sync()
    again = Store(tmp_path / "store")
    assert again.put_bytes(b"same\n") == a
    again.sync()
    assert len(packs(again)) == 2  # nothing new: no second pack


def test_large_blobs_are_loose_objects(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    big = os.urandom(PACK_MAX + 1)
    src = tmp_path / "big"
    src.write_bytes(big * 20)  # more than a chunk: streamed
    d1 = store.put_bytes(big)
    d2 = store.put_file(src)
    assert loose(store) == sorted([d1, d2])
    assert store.loose(d1) == store.path(d1) and store.read(d2) == big * 20
    assert stat.S_IMODE(store.path(d1).stat().st_mode) == 0o400
    store.sync()
    assert packs(store) == []


def test_a_pack_cut_short_is_not_trusted(tmp_path: Path) -> None:
    """A crash that kept the names but not the bytes: the index records the
    pack's size, and a pack of another size is ignored (its blobs are written
    again rather than named while missing)."""
    store = Store(tmp_path / "store")
    d = store.put_bytes(b"content\n")
    store.sync()
    [pack] = store.packs.glob("*.pack")
    os.chmod(pack, 0o600)
    os.truncate(pack, 4)
    again = Store(tmp_path / "store")
    assert not again.has(d) and again.all_objects() == []
    assert again.put_bytes(b"content\n") == d
    again.sync()
    assert Store(tmp_path / "store").read(d) == b"content\n"


def test_a_corrupt_packed_blob_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    d = store.put_bytes(b"content\n")
    other = store.put_bytes(b"other\n")
    store.sync()
    [pack, idx] = corrupt_object(tmp_path, d)  # the store of SYSLUA_ROOT tmp_path
    assert pack.endswith(".pack") and idx.endswith(".idx")
    again = Store(tmp_path / "store")
    with pytest.raises(StateError, match="is corrupt"):
        again.read(d)
    assert not again.verify(d) and again.verify(other)


def test_remove_since_drops_what_an_abandoned_apply_stored(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    kept = store.put_bytes(b"kept\n")
    store.sync()
    mark = store.mark()
    synced = store.put_bytes(b"synced\n")
    store.sync()
    waiting = store.put_bytes(b"waiting\n")
    big = store.put_bytes(b"x" * (PACK_MAX + 1))
    store.remove_since(mark)
    assert store.has(kept)
    assert not store.has(synced) and not store.has(waiting) and not store.has(big)
    assert len(packs(store)) == 2 and loose(store) == []
    store.sync()
    assert sorted(Store(tmp_path / "store").all_objects()) == [kept]


def test_remove_objects_rewrites_the_packs_that_hold_them(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    a, b = store.put_bytes(b"a\n"), store.put_bytes(b"b\n")
    store.sync()
    c = store.put_bytes(b"c\n")
    store.sync()
    big = store.put_bytes(b"x" * (PACK_MAX + 1))
    store.sync()
    store.remove_objects([a, c, big])
    again = Store(tmp_path / "store")
    assert again.all_objects() == [b] and again.read(b) == b"b\n"
    assert len(packs(again)) == 2 and loose(again) == []


def test_many_packs_are_merged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_mod, "MAX_PACKS", 3)
    store = Store(tmp_path / "store")
    digests = []
    for i in range(4):
        digests.append(store.put_bytes(f"blob {i}\n".encode()))
        store.sync()
    assert len(packs(store)) == 2  # the fourth sync found four packs: one now
    again = Store(tmp_path / "store")
    assert sorted(again.all_objects()) == sorted(digests)
    assert [again.read(d) for d in digests] == [f"blob {i}\n".encode() for i in range(4)]


def test_a_packed_blob_gets_a_file_of_its_own_when_one_is_needed(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    d = store.put_bytes(b"#!/bin/sh\necho hi\n")
    store.sync()
    assert store.loose(d) is None
    p = store.loose_path(d)
    assert p.read_bytes() == b"#!/bin/sh\necho hi\n" and store.loose(d) == p
    assert stat.S_IMODE(p.stat().st_mode) == 0o400
    assert store.all_objects().count(d) == 1


def test_a_small_blob_kept_loose_alone_is_not_stored_again(tmp_path: Path) -> None:
    # Deduplication lists `objects/` once instead of a `stat` per blob; a
    # blob there (listed, or made by this Store since) is still found.
    first = Store(tmp_path / "store")
    d = first.put_bytes(b"loose only\n")
    first.sync()
    first.loose_path(d)
    for p in first.packs.iterdir():
        p.unlink()  # as an older store kept it: a loose object alone
    store = Store(tmp_path / "store")
    assert store.put_bytes(b"other\n") != d  # lists objects/
    assert store.put_bytes(b"loose only\n") == d
    assert d not in store._pending
    big = os.urandom(PACK_MAX + 1)
    b = store.put_bytes(big)  # a loose object, maybe in a directory new since the listing
    assert store.put_bytes(big) == b and store.loose(b) is not None
    assert store._created.count(b) == 1


def test_lookups_in_a_large_pack(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    blobs = {store.put_bytes(str(i).encode()): str(i).encode() for i in range(5000)}
    store.sync()
    again = Store(tmp_path / "store")
    assert all(again.read(d) == b for d, b in blobs.items())
    assert not any(again.has(sha(str(i).encode() + b"!")) for i in range(200))


# -- through the CLI ------------------------------------------------------------
def files_config(n: int, text: str) -> str:
    return HEADER + "".join(
        f'file {{ path = "~/d/f{i:03d}", content = "{text} {i}\\n" }}\n' for i in range(n)
    )


def test_a_clean_apply_of_many_files_writes_one_pack(sysenv) -> None:
    sysenv.write("sys.lua", files_config(150, "v1"))
    ok(sysenv.run("apply"))
    store = Store(sysenv.root / "store")
    assert loose(store) == []
    assert len([p for p in packs(store) if p.endswith(".pack")]) == 1
    assert len(store_objects(sysenv.root)) == 153  # the contents, sys.lua, env.sh and env.fish


def test_rollback_and_status_read_contents_from_packs(sysenv) -> None:
    src = sysenv.work / "src"
    src.mkdir()
    for i in range(30):
        (src / f"s{i}").write_text(f"first {i}\n")
    body = "".join(f'file {{ path = "~/s{i}", source = "./src/s{i}" }}\n' for i in range(30))
    sysenv.write("sys.lua", HEADER + body)
    ok(sysenv.run("apply"))
    for i in range(30):
        (src / f"s{i}").write_text(f"second {i}\n")
    ok(sysenv.run("apply"))
    for i in range(30):
        (src / f"s{i}").unlink()  # the sources are gone: only the store has the contents
    p = sysenv.run("rollback")
    assert p.returncode == 0, out(p)
    assert all((sysenv.home / f"s{i}").read_text() == f"first {i}\n" for i in range(30))
    assert loose(Store(sysenv.root / "store")) == []  # nothing copied out of the pack
    (sysenv.home / "s3").write_text("edited by hand\n")
    p = sysenv.run("status", "-v")
    assert "M! file ~/s3\n    in the home: content edited\n" in p.stdout, out(p)


def test_gc_removes_dead_blobs_from_packs(sysenv) -> None:
    for version in ("one", "two", "three"):
        sysenv.write("sys.lua", files_config(20, version))
        ok(sysenv.run("apply"))
    before = store_objects(sysenv.root)
    p = sysenv.run("gc", "--keep", "0", "--json")
    assert p.returncode == 0, out(p)
    result = json.loads(p.stdout)
    after = store_objects(sysenv.root)
    # The first snapshot's contents and two sys.lua versions; the second's
    # contents stay: the current snapshot keeps what its apply overwrote.
    assert result["objects_removed"] == len(before) - len(after) == 22
    assert result["bytes_freed"] > 0
    store = Store(sysenv.root / "store")
    assert len([p for p in packs(store) if p.endswith(".pack")]) == 1  # merged
    assert all(store.read(d) for d in after)
    p = sysenv.run("doctor")
    assert f"✓ store: {len(after)} objects: every hash matches" in p.stdout, out(p)


def test_doctor_names_the_pack_of_a_corrupt_blob_and_rollback_refuses_a_missing_one(
    sysenv,
) -> None:
    src = sysenv.work / "src"
    src.mkdir()
    body = "".join(f'file {{ path = "~/d/f{i}", source = "./src/f{i}" }}\n' for i in range(3))
    sysenv.write("sys.lua", HEADER + body)
    for version in ("v1", "v2"):
        for i in range(3):
            (src / f"f{i}").write_text(f"{version} {i}\n")
        ok(sysenv.run("apply"))
    digest = sha(b"v1 0\n")
    files = corrupt_object(sysenv.root, digest)
    p = sysenv.run("doctor")
    assert p.returncode == 1, out(p)
    assert f"(object {digest[:12]})" in p.stdout and "run `sys gc`" in p.stdout, out(p)
    assert files[0].endswith(".pack") and f"rm {files[0]}" not in p.stdout
    delete_object(sysenv.root, digest)
    before = {f: (sysenv.home / "d" / f).read_bytes() for f in os.listdir(sysenv.home / "d")}
    p = sysenv.run("rollback")
    assert p.returncode == 1, out(p)
    assert f"store object {digest[:12]}" in p.stderr and "missing" in p.stderr
    assert {f: (sysenv.home / "d" / f).read_bytes() for f in before} == before


@pytest.mark.parametrize("damage", ["outside the pack", "out of order"])
def test_an_index_whose_records_are_garbage_is_not_trusted(sysenv, damage: str) -> None:
    """An index whose head is whole but whose records are garbage (a disk
    that returned other bytes): its pack is ignored, as one cut short is,
    never read where its offsets say nor listed; doctor reports the blobs
    the snapshot names as missing, and gc works around it."""
    sysenv.write("sys.lua", files_config(5, "v1"))
    ok(sysenv.run("apply"))
    store = Store(sysenv.root / "store")
    [idx] = store.packs.glob("*.idx")
    data = idx.read_bytes()
    os.chmod(idx, 0o600)
    head = store_mod._IDX_HEAD.size
    records = [
        store_mod._IDX_REC.unpack_from(data, at)
        for at in range(head, len(data), store_mod._IDX_REC.size)
    ]
    if damage == "outside the pack":
        records = [(k, 1 << 62, 1 << 62) for k, _o, _n in records]
    else:
        records.reverse()  # every offset in the pack, but a bisect finds nothing
    idx.write_bytes(data[:head] + b"".join(store_mod._IDX_REC.pack(*r) for r in records))
    again = Store(sysenv.root / "store")
    digest = records[0][0].hex()
    assert not again.has(digest) and again.all_objects() == []
    with pytest.raises(StateError, match="is missing"):
        again.read(digest)
    p = sysenv.run("doctor")
    assert p.returncode == 1 and "Traceback" not in out(p), out(p)
    assert "the current snapshot refers to are missing" in p.stdout, out(p)
    assert "do not match their hash" not in p.stdout, out(p)
    ok(sysenv.run("gc"))


def test_a_sync_that_merges_packs_makes_the_merged_pack_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blobs written as a pack before `sync()` (more than PACK_FLUSH waited)
    may be merged by the compaction that sync starts: syncing must not then
    look for the pack that merging removed."""
    monkeypatch.setattr(store_mod, "MAX_PACKS", 3)
    monkeypatch.setattr(store_mod, "PACK_FLUSH", 100)
    store = Store(tmp_path / "store")
    digests = []
    for i in range(3):
        digests.append(store.put_bytes(f"blob {i}\n".encode()))
        store.sync()
    digests.append(store.put_bytes(b"x" * 200))  # over PACK_FLUSH: a pack now, synced later
    digests.append(store.put_bytes(b"waiting\n"))
    store.sync()
    again = Store(tmp_path / "store")
    assert sorted(again.all_objects()) == sorted(digests)
    assert len(packs(again)) == 2


def test_the_file_of_its_own_a_packed_blob_gets_is_durable_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sys status` names it to a user whose files a failed undo could not
    put back (unrestored.json is durable right after), and rollback copies
    from it rather than from the pack: it must not wait for a sync that
    may never come in the Store that made it."""
    store = Store(tmp_path / "store")
    d = store.put_bytes(b"the original\n")
    store.sync()
    synced: list[int] = []  # inodes
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the real fsync, remembering what it synced
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    p = store.loose_path(d)
    assert p.stat().st_ino in synced and p.parent.stat().st_ino in synced


def test_a_corrupt_packed_blob_is_dropped_alone_never_its_whole_pack(sysenv) -> None:
    """After gc every blob shares one pack: deleting the pack that holds a
    corrupt blob would delete every original with it. doctor sends the user
    to `sys gc`, which writes the pack again without the corrupt blob."""
    for i in range(3):
        (sysenv.home / f"f{i}").write_text(f"hand-made {i}\n")
    originals = tree(sysenv.home)
    sysenv.write("sys.lua", files_config(3, "v1").replace("~/d/f00", "~/f"))
    ok(sysenv.run("apply"))
    sysenv.write("sys.lua", files_config(3, "v2").replace("~/d/f00", "~/f"))
    ok(sysenv.run("apply"))
    ok(sysenv.run("gc"))
    store = Store(sysenv.root / "store")
    assert len([p for p in packs(store) if p.endswith(".pack")]) == 1
    digest = sha(b"v1 1\n")
    corrupt_object(sysenv.root, digest)
    p = sysenv.run("doctor")
    assert p.returncode == 1, out(p)
    assert f"(object {digest[:12]})" in p.stdout and "rm " not in p.stdout, out(p)
    assert "run `sys gc`" in p.stdout, out(p)
    p = sysenv.run("gc")
    assert f"1 corrupt store object(s) (they did not match their hash): {digest[:12]}" in p.stdout
    assert digest not in store_objects(sysenv.root)
    # Missing now, as a deleted loose object was: only it.
    p = sysenv.run("doctor")
    assert "do not match their hash" not in p.stdout, out(p)
    assert "1 of " in p.stdout and "the current snapshot refers to are missing" in p.stdout
    p = sysenv.run("destroy", "--yes")
    assert p.returncode == 0, out(p)
    assert tree(sysenv.home) == originals


def test_a_reader_finds_blobs_whose_pack_another_store_merged(tmp_path: Path) -> None:
    """`sys status` takes no lock: an apply (or gc) may merge the packs it
    listed before it reads from them. It looks again, not crash."""
    writer = Store(tmp_path / "store")
    a = writer.put_bytes(b"a\n")
    writer.sync()
    b = writer.put_bytes(b"b\n")
    writer.sync()
    reader = Store(tmp_path / "store")
    assert reader.has(a) and reader.has(b)  # the two packs are listed
    writer.compact()
    assert len(packs(writer)) == 2  # one pack now
    assert reader.read(a) == b"a\n" and reader.read(b) == b"b\n"


def test_gc_removes_what_a_killed_pack_writer_left(sysenv) -> None:
    sysenv.write("sys.lua", files_config(5, "v1"))
    ok(sysenv.run("apply"))
    packs_dir = sysenv.root / "store" / "packs"
    kept = sorted(p.name for p in packs_dir.iterdir())
    (packs_dir / "0123456789abcdef0123456789abcdef.pack").write_bytes(b"sluapak1 half")
    (packs_dir / ".0123.pack.syslua-1-deadbeef").write_bytes(b"temp")
    ok(sysenv.run("gc"))
    assert sorted(p.name for p in packs_dir.iterdir()) == kept
    assert len(store_objects(sysenv.root)) == 8  # 5 contents, sys.lua, env.sh, env.fish


def test_blobs_are_found_in_the_packs_this_store_wrote_and_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pack this process wrote answers a miss from its set of digests, a
    # hit by its index; both stay right once packs are merged.
    monkeypatch.setattr(store_mod, "MAX_PACKS", 2)
    store = Store(tmp_path / "store")
    digests = []
    for i in range(4):
        digests.append(store.put_bytes(f"blob {i}\n".encode()))
        store.sync()
    assert all(store.packed(d) for d in digests)
    assert [store.read(d) for d in digests] == [f"blob {i}\n".encode() for i in range(4)]
    assert not store.packed(sha(b"never stored\n"))
    assert store.put_bytes(b"blob 2\n") == digests[2] and not store._pending
