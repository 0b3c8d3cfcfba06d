"""Turn a snapshot back into a manifest that can run using only what the store holds.

File items that copied a `source` get the store's copy of the content the
snapshot recorded instead, so rollback and drift checks work after the
config's source files changed or vanished.
"""

from __future__ import annotations

from syslua.errors import StateError
from syslua.manifest.model import Item, Manifest, freeze, thaw
from syslua.state.snapshots import Snapshot
from syslua.state.store import Store


def materialise(snap: Snapshot, store: Store) -> Manifest:
    manifest = snap.load_manifest()
    items = []
    for item in manifest:
        if item.type == "file" and item.get("source"):
            blob = snap.items.get(item.id, {}).get("blob")
            if not blob:
                raise StateError(f"snapshot {snap.id} has no stored content for {item.key}")
            if not store.has(blob):
                raise StateError(
                    f"store object {blob[:12]} (content of {item.key} in snapshot {snap.id}) is missing; "
                    "it was deleted from the store by hand"
                )
            props = thaw(item.props)
            props["source"] = str(store.path(blob))
            item = Item(item.type, item.key, freeze(props), item.parent, item.noop, item.health_check_only)
        items.append(item)
    return Manifest(items=tuple(items), config=snap.config)
