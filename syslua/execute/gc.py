"""Garbage collection: drop old snapshots, then the store objects nothing refers to.

Kept: the current snapshot, tagged snapshots, and the `keep` newest others.
Then every blob and tree that nothing still needs (`live_objects`) is
removed from the store, and so are packed blobs that no longer match their
hash. The caller holds the state lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from syslua import secrets
from syslua.execute.objects import needed
from syslua.paths import Paths
from syslua.state.originals import Originals, load_unrestored
from syslua.state.snapshots import Snapshot, Snapshots
from syslua.state.store import Store


@dataclass
class Collected:
    """What a gc removed (or, in a dry run, would remove)."""

    snapshots: list[str]  # snapshot ids
    blobs: list[str]  # store objects nothing refers to
    trees: list[str]  # store trees nothing refers to (packages and builds)
    bytes_freed: int  # the size of those blobs
    corrupt: list[str] = field(default_factory=list)  # packed blobs removed for a bad hash
    # Sealed secret values (state/secrets/) no kept snapshot uses.
    secrets: list[str] = field(default_factory=list)


def collect(paths: Paths, *, keep: int, dry_run: bool) -> Collected:
    """Drop old snapshots, then what nothing refers to; with `dry_run`, only say what."""
    snapshots = Snapshots(paths)
    drop = _old_snapshots(snapshots.index(), keep)
    for ident in drop:
        if not dry_run:
            snapshots.delete(ident)
    store = Store(paths.store)
    kept = [s for s in snapshots.all() if s.id not in drop]
    blobs, trees = live_objects(paths, kept)
    dead_blobs = [b for b in store.all_objects() if b not in blobs]
    dead_trees = [t for t in store.all_trees() if t not in trees]
    done = Collected(drop, dead_blobs, dead_trees, sum(store.size(b) for b in dead_blobs))
    done.secrets = sorted(secrets.sealed_ids() - _sealed_in(kept))
    if not dry_run:
        _remove(store, done)
        secrets.forget_sealed(done.secrets)
    return done


def _sealed_in(kept: list[Snapshot]) -> set[str]:
    """The sealed secrets the `kept` snapshots use: in their manifests'
    placeholders, and as the sealed content of their items."""
    out: set[str] = set()
    for snap in kept:
        out |= secrets.ids_in(snap.manifest)
        out |= {state.own["sealed"] for state in snap.items.values() if state.own.get("sealed")}
    return out


def _old_snapshots(index: dict[str, Any], keep: int) -> list[str]:
    """The snapshots past the `keep` newest, but for the current and tagged ones."""
    current = index.get("current")
    tagged = {i for i, names in index.get("tags", {}).items() if names}
    others = [i for i in reversed(index["order"]) if i != current and i not in tagged]
    return others[keep:]


def live_objects(paths: Paths, kept: list[Snapshot]) -> tuple[set[str], set[str]]:
    """Every blob and tree something still needs: the `kept` snapshots, the
    record of originals (what syslua took over is never collected), the
    paths a failed rollback could not put back, and the trees the live
    profile links into."""
    blobs: set[str] = set()
    trees: set[str] = set()
    for snap in kept:  # each kind says what its items' states keep
        more_blobs, more_trees = needed(snap)
        blobs |= more_blobs
        trees |= more_trees
    blobs |= Originals.load(paths.state).blobs()
    blobs |= {r.prev.blob for r in load_unrestored(paths.state) if r.prev.blob}
    trees |= _profile_trees(paths)
    return blobs, trees


def _remove(store: Store, done: Collected) -> None:
    # Corrupt packed blobs go too (doctor sends the user here): they cannot
    # be read back, and a later apply stores what it declares again.
    done.corrupt = [b for b in store.corrupt_packed() if b not in done.blobs]
    store.remove_objects([*done.blobs, *done.corrupt])
    store.compact()
    store.tidy()
    for t in done.trees:
        store.remove_tree(t)


def _profile_trees(paths: Paths) -> set[str]:
    """Trees the live profile links into (never collected while in use)."""
    out: set[str] = set()
    bin_dir = paths.profile / "bin"
    if not bin_dir.is_dir():
        return out
    trees_root = str(paths.store / "trees") + "/"
    for link in bin_dir.iterdir():
        try:
            target = str(link.resolve())
        except OSError:
            continue
        if target.startswith(trees_root):
            out.add(target[len(trees_root) :].split("/", 1)[0])
    return out
