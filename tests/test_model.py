"""The frozen manifest model: the canonical JSON the digest is taken from (on
the path of every apply, and made faster: this checks it still means the same)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from syslua.manifest.model import (
    MANIFEST_VERSION,
    Item,
    Manifest,
    canonical_json,
    freeze,
    thaw,
)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_like = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
props = st.dictionaries(st.text(min_size=1), json_like, max_size=6)


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
