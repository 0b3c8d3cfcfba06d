"""The current snapshot read in its lean form for an apply (`LeanSnapshot`):
it must mean exactly what the whole file decoded means, share the Items
declared as before, find a damaged file corrupt, and hand everything else to
the usual reading."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from conftest import HEADER, apply_ok, out
from hypothesis import given, settings
from hypothesis import strategies as st

from syslua.errors import StateError
from syslua.manifest.model import Item, Manifest, freeze
from syslua.paths import Paths
from syslua.state import snapshot_reader
from syslua.state.snapshot_reader import LeanSnapshot, read_lean
from syslua.state.snapshots import Snapshot, Snapshots

CONFIG = "".join(
    f'file {{ path = "~/d{i}/f.txt", content = "{i}\\n", mode = "0600" }}\n' for i in range(5)
)


def snapshots_of(sysenv) -> Snapshots:  # type: ignore[no-untyped-def]
    return Snapshots(Paths.from_env())  # the fixture's SYSLUA_ROOT


def applied(sysenv) -> tuple[Snapshots, str, Path]:  # type: ignore[no-untyped-def]
    ident = apply_ok(sysenv, CONFIG)
    snapshots = snapshots_of(sysenv)
    return snapshots, ident, snapshots.path(ident)


def test_a_recorded_snapshot_reads_lean_as_the_same_data(sysenv) -> None:
    snapshots, ident, file = applied(sysenv)
    full = snapshots.load(ident)
    like = full.load_manifest()
    lean = snapshots.load(ident, like=like)
    assert isinstance(lean, LeanSnapshot) and not isinstance(full, LeanSnapshot)
    assert lean.to_dict() == full.to_dict() == json.loads(file.read_text())
    assert lean.manifest == full.manifest and lean.pre == full.pre
    assert lean.pre["records"]  # read again from the file when asked for
    assert lean.load_manifest() == like
    # Declared as before: the very same Items, not a second copy.
    assert all(a is b for a, b in zip(lean.load_manifest(), like, strict=True))


def test_items_declared_otherwise_are_read_from_the_snapshot(sysenv) -> None:
    snapshots, ident, _ = applied(sysenv)
    full = snapshots.load(ident)
    first, *rest = full.load_manifest()
    changed = Item(first.type, first.key, freeze({**first.props, "mode": "0644"}))
    like = Manifest(items=(changed, *rest[1:]))  # one changed, one gone
    lean = snapshots.load(ident, like=like)
    mine = lean.load_manifest()
    assert mine == full.load_manifest() and lean.to_dict() == full.to_dict()
    assert mine.get(first.id) is not changed and mine.get(first.id) == first
    assert mine.get(rest[0].id) == rest[0]
    assert all(mine.get(i.id) is i for i in rest[1:])


def test_a_snapshot_cut_short_anywhere_is_corrupt(sysenv) -> None:
    snapshots, ident, file = applied(sysenv)
    text = file.read_text()
    like = snapshots.load(ident).load_manifest()
    # The pre-apply records come last: a file cut there is corrupt too.
    for cut in (len(text) - 1, len(text) - 40, text.index('"pre"') + 30, len(text) // 2, 10):
        file.write_text(text[:cut])
        with pytest.raises(StateError, match=f"snapshot {ident} is corrupt"):
            snapshots.load(ident, like=like)
    file.write_bytes(text.encode()[:-80] + b"\xff\xfe" + text.encode()[-78:])  # not UTF-8
    with pytest.raises(StateError, match=f"snapshot {ident} is corrupt"):
        snapshots.load(ident, like=like)


def test_a_current_snapshot_cut_short_is_replaced_by_the_newest_readable_one(sysenv) -> None:
    first = apply_ok(sysenv, 'file { path = "~/a.txt", content = "1\\n" }\n')
    second = apply_ok(sysenv, 'file { path = "~/a.txt", content = "2\\n" }\n')
    file = snapshots_of(sysenv).path(second)
    file.write_text(file.read_text()[:-3])
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "3\\n" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert f"snapshot {second} is corrupt" in out(p) and first in out(p), out(p)
    assert (sysenv.home / "a.txt").read_text() == "3\n"


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d["manifest"].update(extra=1),  # a key this version does not write
        lambda d: d["manifest"].update(version=2),
        lambda d: d["manifest"]["items"][0].pop("noop"),  # written by an older version
        lambda d: d["manifest"]["items"][0].update(noop=0),
        lambda d: d["manifest"]["items"][0].update(props=[]),
        lambda d: d.update(manifest=[]),
        lambda d: d.pop("manifest"),
        lambda d: d.pop("digest"),
    ],
)
def test_other_forms_are_read_the_usual_way(sysenv, damage) -> None:  # type: ignore[no-untyped-def]
    snapshots, ident, file = applied(sysenv)
    data = json.loads(file.read_text())
    damage(data)
    text = json.dumps(data)
    assert read_lean(text, Manifest(items=()), file) is None
    file.write_text(text)
    try:
        expected = snapshots.load(ident).to_dict()
    except StateError as e:
        with pytest.raises(StateError, match=re.escape(e.message)):
            snapshots.load(ident, like=Manifest(items=()))
    else:
        assert snapshots.load(ident, like=Manifest(items=())).to_dict() == expected


names = st.text(alphabet="abc/.#é", min_size=1, max_size=6)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
items = st.lists(
    st.builds(
        lambda t, k, p, parent, noop, hc: Item(t, k, freeze(p), parent, noop, hc),
        st.sampled_from(["file", "exec", "env"]),
        names,
        st.dictionaries(names, values, max_size=4),
        st.none() | names,
        st.booleans(),
        st.booleans(),
    ),
    max_size=6,
    unique_by=lambda i: i.id,
)


@settings(max_examples=80, deadline=None)
@given(
    items,
    st.dictionaries(names, st.dictionaries(names, values, max_size=3), max_size=3),
    st.lists(values, max_size=3),
    st.sampled_from([None, 0, 2]),
    st.booleans(),
    st.sampled_from([1, 2, 7, 64, 1 << 18]),
)
def test_any_snapshot_reads_lean_as_it_decodes(
    tmp_path_factory, declared, states, records, indent, shared, chunk
) -> None:  # type: ignore[no-untyped-def]
    """From its text, from a stream read `chunk` bytes at a time (so that
    values and characters are cut anywhere), and from a file (item states
    and pre-apply records read again from where they start when used): the
    same data as the file decoded whole."""
    manifest = Manifest(items=tuple(sorted(declared, key=lambda i: i.id)))
    snap = Snapshot(
        id="20260101-000000-abcd",
        time=1.5,
        message="m",
        kind="apply",
        manifest=manifest.to_dict(),
        digest=manifest.digest,
        items=states,
        pre={"previous": None, "records": records},
    )
    text = json.dumps(
        snap.to_dict(),
        indent=indent,
        separators=None if indent else (",", ":"),
        ensure_ascii=indent is None,  # and characters of two bytes
    )
    expected = Snapshot.from_dict(json.loads(text)).to_dict()
    like = manifest if shared else Manifest(items=())
    file = tmp_path_factory.mktemp("snap") / "s.json"
    file.write_text(text, encoding="utf-8")
    saved = snapshot_reader._CHUNK
    snapshot_reader._CHUNK = chunk
    try:
        from_text = read_lean(text, like)
        from_stream = read_lean(io.BytesIO(text.encode()), like)
        with file.open("rb") as f:
            from_file = read_lean(f, like, file)
    finally:
        snapshot_reader._CHUNK = saved
    for lean in (from_text, from_stream, from_file):
        assert lean is not None
        assert lean.load_manifest() == manifest and lean.digest == manifest.digest
    assert from_file is not None and from_text is not None and from_stream is not None
    assert dict(from_file.item_states()) == states  # read again from the file
    assert from_file.pre == {"previous": None, "records": records}
    assert from_file.to_dict() == expected
    for lean in (from_text, from_stream):
        lean.pre = json.loads(text)["pre"]  # no file to read it again from
        assert lean.to_dict() == expected


def test_item_states_are_read_when_first_used(sysenv) -> None:
    snapshots, ident, file = applied(sysenv)
    full = snapshots.load(ident)
    lean = snapshots.load(ident, like=full.load_manifest())
    assert isinstance(lean, LeanSnapshot) and lean._states is None
    states = lean.item_states()
    assert lean._states is None  # nothing looked up yet
    some = next(iter(full.items))
    assert states.get(some) == full.items[some] and states.get("file#/nowhere") is None
    assert lean.items == full.items and lean.item_states() is lean.items
    # A snapshot file gone since it was read: its states cannot be read again.
    again = snapshots.load(ident, like=full.load_manifest())
    file.unlink()
    with pytest.raises(StateError, match=f"snapshot {ident} could not be read again"):
        again.items  # noqa: B018


def test_edits_kept_by_a_forced_apply_record_the_current_manifest(sysenv) -> None:
    """The kept-edits snapshot is the current one amended: its manifest, rebuilt
    from the lean current's Items, is the same JSON data as the current's."""
    snapshots, ident, file = applied(sysenv)
    (sysenv.home / "d0" / "f.txt").write_text("edited by hand\n")
    sysenv.write("sys.lua", HEADER + CONFIG.replace('"0\\n"', '"zero\\n"'))
    p = sysenv.run("apply", "--force")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "d0" / "f.txt").read_text() == "zero\n"
    kept = [s for s in snapshots.all() if s.kind == "edits"]
    assert len(kept) == 1 and kept[0].parent == ident
    recorded = json.loads(snapshots.path(kept[0].id).read_text())
    assert recorded["manifest"] == json.loads(file.read_text())["manifest"]
    assert recorded["digest"] == snapshots.load(ident).digest
