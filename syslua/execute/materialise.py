"""Turn a snapshot back into a manifest that can run using only what the store holds.

Each type says what that means for its items (`ResourceType.materialise`):
a file that copied a `source` gets the store's copy of the content the
snapshot recorded, so rollback and drift checks work after the config's
source files changed or vanished.
"""

from __future__ import annotations

from syslua.manifest.model import Manifest
from syslua.resources import get as get_type
from syslua.state.snapshots import Snapshot
from syslua.state.store import Store


def materialise(snap: Snapshot, store: Store) -> Manifest:
    manifest = snap.load_manifest()
    items = tuple(
        get_type(item.type).materialise(item, snap.items.get(item.id, {}), store, snap.id)
        for item in manifest
    )
    return Manifest(items=items, config=snap.config)
