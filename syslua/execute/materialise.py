"""Turn a snapshot back into a manifest that can run using only what the store holds.

Each kind says what that means for its items (`Recorded.materialise`):
a file that copied a `source` gets the store's copy of the content the
snapshot recorded, so rollback and drift checks work after the config's
source files changed or vanished.
"""

from __future__ import annotations

from syslua.errors import StateError
from syslua.manifest.model import Item, Manifest
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.kind import Recorded
from syslua.resources.placeholders import has_placeholder
from syslua.state.snapshots import Snapshot
from syslua.state.store import Store


def materialise(snap: Snapshot, store: Store, problems: dict[str, str] | None = None) -> Manifest:
    """The snapshot's manifest, running from the store. When `problems` is
    given, an item whose stored copy is missing is kept as declared and its
    problem recorded there (by id) instead of raising."""
    manifest = snap.load_manifest()
    items = tuple(_one(item, snap, store, problems) for item in manifest)
    # Said once here, so that the run resolves nothing when nothing holds a placeholder.
    placeholders = any(has_placeholder(item.props) for item in items)
    return Manifest(items=items, config=snap.config, placeholders=placeholders)


def _one(item: Item, snap: Snapshot, store: Store, problems: dict[str, str] | None) -> Item:
    kind = capability(get_type(item.type), Recorded)
    if kind is None:
        return item
    try:
        return kind.materialise(item, snap.items.get(item.id, {}), store, snap.id)
    except StateError as e:
        if problems is None:
            raise
        problems[item.id] = e.message
        return item
