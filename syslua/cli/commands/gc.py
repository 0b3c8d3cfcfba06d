"""`sys gc [--keep N] [--dry-run]`: drop old snapshots, then store objects nothing refers to.

Kept: the current snapshot, tagged snapshots, and the N newest others. Then
every blob and tree no kept snapshot (nor the live profile) refers to is
removed from the store.
"""

from __future__ import annotations

from syslua.cli.commands.common import state
from syslua.cli.machine import JSON_FORMAT
from syslua.cli.output import Terminal
from syslua.paths import Paths
from syslua.state.originals import Originals, load_unrestored
from syslua.state.snapshots import Snapshots
from syslua.state.store import Store


def run(term: Terminal, *, keep: int, dry_run: bool, wait: bool) -> int:
    paths = Paths.from_env()
    with state(paths, term, exclusive=True, wait=wait):
        snapshots = Snapshots(paths)
        index = snapshots.index()
        current = index.get("current")
        tagged = {i for i, names in index.get("tags", {}).items() if names}
        others = [i for i in reversed(index["order"]) if i != current and i not in tagged]
        drop = others[keep:]
        for ident in drop:
            if not dry_run:
                snapshots.delete(ident)
        store = Store(paths.store)
        kept = [s for s in snapshots.all() if s.id not in drop]
        blobs = set().union(*(s.blobs() for s in kept)) if kept else set()
        blobs |= Originals.load(paths.state).blobs()  # what syslua took over is never collected
        blobs |= {r["prev"]["blob"] for r in load_unrestored(paths.state) if r["prev"].get("blob")}
        trees = set().union(*(s.trees() for s in kept)) if kept else set()
        trees |= _profile_trees(paths)
        dead_blobs = [b for b in store.all_objects() if b not in blobs]
        dead_trees = [t for t in store.all_trees() if t not in trees]
        freed = sum(store.size(b) for b in dead_blobs)
        corrupt: list[str] = []
        if not dry_run:
            # Corrupt packed blobs go too (doctor sends the user here): they
            # cannot be read back, and a later apply stores what it declares again.
            corrupt = [b for b in store.corrupt_packed() if b not in dead_blobs]
            store.remove_objects([*dead_blobs, *corrupt])
            store.compact()
            store.tidy()
        for t in dead_trees:
            if not dry_run:
                store.remove_tree(t)
    result = {
        "snapshots_removed": drop,
        "objects_removed": len(dead_blobs),
        "trees_removed": dead_trees,
        "bytes_freed": freed,
        "dry_run": dry_run,
    }
    if term.json_mode:
        term.json({"format": JSON_FORMAT, **result})
        return 0
    verb = "Would remove" if dry_run else "Removed"
    term.line(
        f"{verb} {len(drop)} snapshot(s), {len(dead_blobs)} store object(s) ({freed} bytes) "
        f"and {len(dead_trees)} store tree(s) (packages and builds)."
    )
    for ident in drop:
        term.line(f"  - snapshot {ident}")
    if corrupt:
        term.line(
            f"  - {len(corrupt)} corrupt store object(s) (they did not match their hash): "
            + ", ".join(b[:12] for b in corrupt)
        )
    for t in dead_trees:
        term.line(f"  - tree {t}")
    return 0


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
