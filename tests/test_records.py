"""The typed records of syslua's state and their codecs (`syslua/state/records.py`).

Each record reads what syslua wrote before records were typed and writes it
back unchanged: every journal line, record of originals, unrestored path and
snapshot in tests/data/state-v1 (written by that version) decodes without
damage and encodes to the same JSON. Records that are JSON but not what a
journal holds decode as `Damaged`, which undo reports instead of crashing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from syslua.state.records import (
    ABSENT,
    DIR,
    FILE,
    LINK,
    OTHER,
    Begin,
    Commit,
    Damaged,
    ItemState,
    KindRecord,
    OriginalsAdded,
    PathAt,
    PathRecord,
    PathState,
    SnapshotNamed,
    TreeOriginal,
    Unrestored,
    original_blobs,
    original_from_json,
    record_from_json,
)
from syslua.state.snapshots import Snapshot

FIXTURE = Path(__file__).parent / "data" / "state-v1"
B = "ab" * 32  # a blob's name

PATH_STATES: list[tuple[dict[str, Any], PathState]] = [
    ({"kind": ABSENT}, PathState(ABSENT)),
    (
        {"kind": FILE, "blob": B, "mode": 0o600, "uid": 1, "gid": 2},
        PathState(FILE, B, 0o600, 1, 2),
    ),
    ({"kind": DIR, "mode": 0o755, "uid": 0, "gid": 0}, PathState(DIR, mode=0o755, uid=0, gid=0)),
    (
        {"kind": LINK, "target": "../x", "uid": 1, "gid": 1},
        PathState(LINK, uid=1, gid=1, target="../x"),
    ),
    (
        {"kind": OTHER, "mode": 0o644, "uid": 3, "gid": 3},
        PathState(OTHER, mode=0o644, uid=3, gid=3),
    ),
]


@pytest.mark.parametrize(("raw", "state"), PATH_STATES, ids=lambda v: str(v)[:20])
def test_a_path_state_reads_and_writes_its_json(raw: dict[str, Any], state: PathState) -> None:
    assert PathState.from_json(raw) == state
    assert state.to_json() == raw
    assert list(state.to_json()) == list(raw)  # in the order it was written
    assert state.exists == (raw["kind"] != ABSENT)


@pytest.mark.parametrize(
    "raw",
    [
        {"kind": FILE},
        {"kind": FILE, "blob": B, "mode": "0644", "uid": 0, "gid": 0},
        {"kind": LINK, "uid": 0, "gid": 0},
        {"kind": "fifo", "mode": 0o644, "uid": 0, "gid": 0},
        {},
    ],
)
def test_a_damaged_path_state_is_refused(raw: dict[str, Any]) -> None:
    with pytest.raises((KeyError, TypeError, ValueError)):
        PathState.from_json(raw)


def test_originals_read_both_forms_and_name_their_blobs() -> None:
    tree = {
        "kind": "tree",
        "records": [
            {"path": "/h/d", "kind": DIR, "mode": 0o750, "uid": 0, "gid": 0},
            {"path": "/h/d/a", "kind": FILE, "blob": B, "mode": 0o644, "uid": 0, "gid": 0},
        ],
    }
    decoded = original_from_json(tree)
    assert isinstance(decoded, TreeOriginal)
    assert [r.path for r in decoded.records] == ["/h/d", "/h/d/a"]
    assert decoded.to_json() == tree
    assert original_blobs(decoded) == {B}
    single = original_from_json(PATH_STATES[1][0])
    assert single == PATH_STATES[1][1] and original_blobs(single) == {B}
    assert original_blobs(PathState(ABSENT)) == set()


JOURNAL: list[tuple[dict[str, Any], type]] = [
    (
        {"op": "begin", "pid": 7, "time": 1.5, "kind": "apply", "previous": None, "digest": "d"},
        Begin,
    ),
    ({"op": "path", "item": "file#/h/a", "path": "/h/a", "prev": {"kind": "absent"}}, PathRecord),
    ({"op": "path", "path": "/h/c", "prev": {"kind": "absent"}}, PathRecord),  # sys add's
    (
        {"op": "exec", "undo": "rm x", "provider": "posix", "item": "exec#x", "type": "exec"},
        KindRecord,
    ),
    ({"op": "profile", "link": "/p", "prev": None, "item": "package#rg"}, KindRecord),  # no type
    ({"op": "originals", "added": ["file#/h/a"]}, OriginalsAdded),
    ({"op": "snapshot", "snapshot": "s1"}, SnapshotNamed),
    ({"op": "commit", "snapshot": "s1", "removed": []}, Commit),
]


@pytest.mark.parametrize(("raw", "cls"), JOURNAL, ids=lambda v: str(v)[:24])
def test_a_journal_record_reads_and_writes_its_json(raw: dict[str, Any], cls: type) -> None:
    record = record_from_json(raw)
    assert isinstance(record, cls)
    assert record.to_json() == raw


def test_a_kind_record_is_the_kinds_to_read() -> None:
    record = record_from_json(JOURNAL[3][0])
    assert isinstance(record, KindRecord)
    assert (record.op, record.item, record.kind) == ("exec", "exec#x", "exec")
    assert record["undo"] == "rm x" and record.get("cwd") is None
    legacy = record_from_json(JOURNAL[4][0])
    assert isinstance(legacy, KindRecord) and legacy.kind is None  # the op names its kind


@pytest.mark.parametrize(
    "raw",
    [
        {"op": "path", "item": "file#x"},
        {"op": "path", "path": "/nonexistent/x", "prev": {"kind": "file"}},
        {"op": "snapshot"},
        {"op": 3},
        {"no": "op"},
    ],
)
def test_a_record_that_is_no_journal_record_is_damaged(raw: dict[str, Any]) -> None:
    record = record_from_json(raw)
    assert isinstance(record, Damaged)
    assert record.to_json() == raw and record.why


def test_an_item_state_keeps_how_it_ran_apart_from_its_kinds_state() -> None:
    raw = {
        "blob": B,
        "mode": "0644",
        "exit_code": 0,
        "stdout": "o",
        "stderr": "",
        "status": "changed",
    }
    state = ItemState.from_json(raw)
    assert state.own == {"blob": B, "mode": "0644"}
    assert (state.status, state.exit_code, state.stdout, state.stderr) == ("changed", 0, "o", "")
    assert state.to_json() == raw
    assert state["blob"] == B and state["status"] == "changed" and dict(state) == raw
    assert ItemState({"tree": "t"}).to_json() == {"tree": "t"}


def test_an_unrestored_path_reads_and_writes_its_json() -> None:
    raw = {"path": "/h/a", "prev": PATH_STATES[1][0], "why": "Permission denied"}
    record = Unrestored.from_json(raw)
    assert record == Unrestored("/h/a", PATH_STATES[1][1], "Permission denied")
    assert record.to_json() == raw
    assert PathAt.from_json({"path": "/h/a", **PATH_STATES[0][0]}).to_json() == {
        "path": "/h/a",
        "kind": ABSENT,
    }


# -- everything the previous version wrote ---------------------------------------------


def test_every_journal_line_it_wrote_reads_back_as_it_was() -> None:
    lines = [
        json.loads(line)
        for f in sorted(FIXTURE.glob("*/root/state/journal/journal.jsonl"))
        for line in f.read_text().splitlines()
    ]
    assert len(lines) > 10
    for raw in lines:
        record = record_from_json(raw)
        assert not isinstance(record, Damaged), (raw, record)
        assert record.to_json() == raw


def test_every_record_of_originals_and_unrestored_path_reads_back_as_it_was() -> None:
    originals = [
        e
        for f in sorted(FIXTURE.glob("*/root/state/originals.json"))
        for e in json.loads(f.read_text())["originals"].values()
    ]
    unrestored = [
        e
        for f in sorted(FIXTURE.glob("*/root/state/unrestored.json"))
        for e in json.loads(f.read_text())["unrestored"]
    ]
    assert originals and unrestored
    for raw in originals:
        assert original_from_json(raw).to_json() == raw
    for raw in unrestored:
        assert Unrestored.from_json(raw).to_json() == raw


def test_every_snapshot_it_wrote_reads_back_as_it_was() -> None:
    files = sorted(FIXTURE.glob("*/root/state/snapshots/2*.json"))
    assert len(files) >= 14
    for f in files:
        raw = json.loads(f.read_text())
        snap = Snapshot.from_dict(raw)
        assert snap.to_dict() == raw, f
        for ident, state in snap.items.items():
            assert isinstance(state, ItemState) and state.to_json() == raw["items"][ident]
        assert all(isinstance(r, PathRecord) for r in snap.pre_records())
        assert len(snap.pre_records()) == len(raw["pre"]["records"])
