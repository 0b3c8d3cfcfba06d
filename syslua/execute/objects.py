"""What a snapshot needs of the store, asked of each kind.

A snapshot refers to store objects: the config files it was made from, the
env scripts, what syslua took over (originals), what the apply's journal
recorded of every path before it changed it (the pre-apply records), and
what each item's state keeps. The last is the kind's to say
(`Recorded.blobs`, `Recorded.trees`): the engine does not know its state's
keys. `sys gc` keeps what this gives for every snapshot it keeps, and
`sys status` and `sys doctor` check that the current snapshot's are there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from syslua.resources import capability, has
from syslua.resources import get as get_type
from syslua.resources.kind import Recorded
from syslua.state.records import original_blobs
from syslua.state.snapshots import ADD, Snapshot


def needed(snap: Snapshot) -> tuple[set[str], set[str]]:
    """(blobs, trees) the snapshot refers to."""
    blobs = set(snap.inputs.values()) | set(snap.env.values())
    trees: set[str] = set()
    kinds: dict[str, Recorded | None] = {}
    for ident, state in snap.items.items():
        name = ident.partition("#")[0]  # an item's id is `kind#key`
        if name not in kinds:
            kinds[name] = _recorded(name)
        more_blobs, more_trees = _kept(name, kinds[name], state.own)
        blobs |= more_blobs
        trees |= more_trees
    for original in snap.originals.values():
        blobs |= original_blobs(original)
    blobs |= {r.prev.blob for r in snap.pre_records() if r.prev.blob}
    blobs |= _home_blobs(snap.pre.get(ADD))
    return blobs, trees


def _home_blobs(added: Any) -> set[str]:
    """The contents a `sys add` (or a rollback of one) kept of the home files it
    replaced (`take_back.replaced_homes`): a rollback of it writes them back."""
    homes = added.get("homes") if isinstance(added, dict) else None
    if not isinstance(homes, dict):
        return set()
    return {
        side["blob"]
        for home in homes.values()
        if isinstance(home, dict)
        for side in (home.get("before"), home.get("after"))
        if isinstance(side, dict) and isinstance(side.get("blob"), str)
    }


def content_of(snap: Snapshot, ident: str) -> str | None:
    """The blob of the content an item's state keeps, when it keeps one (a
    file's), for showing and comparing snapshots; None otherwise."""
    state = snap.items.get(ident)
    if state is None:
        return None
    name = ident.partition("#")[0]
    blobs = _kept(name, _recorded(name), state.own)[0]
    # A state that keeps a hand edit keeps the content it was made over too:
    # its own `blob` is the content.
    own = state.own.get("blob")
    if isinstance(own, str) and own in blobs:
        return own
    return next(iter(blobs)) if len(blobs) == 1 else None


def _recorded(name: str) -> Recorded | None:
    """The kind `name` as `Recorded`; None when it keeps no state or is unknown."""
    return capability(get_type(name), Recorded) if has(name) else None


def _kept(name: str, kind: Recorded | None, state: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """(blobs, trees) an item's state keeps, as its kind says; a kind that
    records no state keeps none."""
    if kind is not None:
        return kind.blobs(state), kind.trees(state)
    blobs: set[str] = set()
    trees: set[str] = set()
    if not has(name):
        _unknown(state, blobs, trees)
    return blobs, trees


def _unknown(state: Mapping[str, Any], blobs: set[str], trees: set[str]) -> None:
    """The state of a kind this syslua does not know (a kind a plugin or a
    test registered, absent now): what it names in the way the shipped kinds
    do (`blob`, `records`' blobs, `tree`) is kept, so that gc never drops
    what a kind it cannot ask may need."""
    if isinstance(state.get("blob"), str):
        blobs.add(state["blob"])
    for r in state.get("records", ()):
        if isinstance(r, dict) and isinstance(r.get("blob"), str):
            blobs.add(r["blob"])
    if isinstance(state.get("tree"), str):
        trees.add(state["tree"])
