"""The frozen manifest model: freezing JSON-like data, and the canonical JSON
the digest is taken from (both are on the path of every apply, and were made
faster: these check that they still mean the same)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from syslua.manifest.model import (
    MANIFEST_VERSION,
    Item,
    Manifest,
    canonical_json,
    freeze,
    freeze_owned,
    thaw,
)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_like = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
props = st.dictionaries(st.text(min_size=1), json_like, max_size=6)


def mutable_inside(value: Any) -> bool:
    if isinstance(value, dict | list):
        return True
    if isinstance(value, Mapping):
        return any(mutable_inside(v) for v in value.values())
    if isinstance(value, tuple):
        return any(mutable_inside(v) for v in value)
    return False


@given(json_like)
def test_freeze_makes_read_only_data_that_thaws_back(value):
    before = copy.deepcopy(value)
    frozen = freeze(value)
    assert not mutable_inside(frozen)
    assert thaw(frozen) == value
    assert value == before  # the input is not touched
    assert freeze(frozen) == frozen


@given(props)
def test_freeze_owned_freezes_the_same_data_in_place(value):
    owned = copy.deepcopy(value)
    frozen = freeze_owned(owned)
    assert isinstance(frozen, MappingProxyType)
    assert not mutable_inside(frozen)
    assert thaw(frozen) == thaw(freeze(value)) == value


class Text(str):
    """A str subclass: frozen as it is, like any value that is neither a dict nor a list."""


def test_subclasses_of_scalars_are_kept_as_they_are():
    frozen = freeze({"a": Text("x"), "b": [Text("y")], "c": True, "d": None})
    assert type(frozen["a"]) is Text and type(frozen["b"][0]) is Text
    assert frozen == {"a": "x", "b": ("y",), "c": True, "d": None}


@given(st.lists(st.tuples(st.sampled_from(["file", "exec", "env"]), st.text(), props), max_size=8))
def test_canonical_json_is_that_of_the_plain_items(entries):
    items = {
        (t, k): Item(t, k, freeze(p), parent="apply#/x" if len(k) % 2 else None)
        for t, k, p in entries
    }
    manifest = Manifest(items=tuple(sorted(items.values(), key=lambda i: i.id)))
    plain = {
        "version": MANIFEST_VERSION,
        "items": [
            {
                "type": i.type,
                "key": i.key,
                "props": thaw(i.props),
                "parent": i.parent,
                "noop": i.noop,
                "health_check_only": i.health_check_only,
            }
            for i in manifest
        ],
    }
    assert manifest.canonical() == canonical_json(plain)
    again = Manifest.from_dict(manifest.to_dict())
    assert again == manifest and again.digest == manifest.digest


def test_the_digest_is_taken_in_pieces_of_the_same_text():
    """The digest hashes the canonical JSON in batches of items; the bytes are
    those of the whole text, at a batch's edge and past it."""
    import hashlib

    from syslua.manifest.model import CANONICAL_BATCH

    for n in (0, 1, CANONICAL_BATCH, CANONICAL_BATCH + 1, 2 * CANONICAL_BATCH + 3):
        items = tuple(
            Item("file", f"/h/f{i:05}", freeze({"content": f"é{i}", "mode": "0644", "x": [i]}))
            for i in range(n)
        )
        manifest = Manifest(items=items)
        whole = canonical_json({"version": MANIFEST_VERSION, "items": [i.to_dict() for i in items]})
        assert manifest.canonical() == whole
        assert manifest.digest == hashlib.sha256(whole.encode()).hexdigest()
