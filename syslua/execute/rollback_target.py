"""What `sys rollback` returns to beyond its snapshot's manifest, and what it says after.

1. `returning(target, current, store)`: the item states of the snapshot rolled
   back to, which the rollback's own snapshot carries on (a state that keeps
   a hand edit says so, and so the edit stays one). When the current
   snapshot is a `sys add` (or a rollback that undid one, which is undone
   the same way), the rollback undoes it: the source files it
   overwrote are put back, each only while it still holds what `sys add`
   wrote (one changed since is left as it is, and said); the home files it
   took back keep their content, as a hand edit of what the target applied,
   which `sys plan` marks again (a home file the add replaced, a file that
   had replaced a managed link made a link again, is written back as it was
   while the link is still what the add made). This is the one case where a rollback
   writes into the configuration's files: `sys add` wrote there.
2. `after(paths, before, touched)`: once the rollback is recorded, whether the
   config still declares what was rolled back. When the config files are
   those of the snapshot rolled back from, that snapshot's manifest is what
   the config declares: it says which of the items the rollback changed the
   next `sys apply` will redo, and which hold a hand edit again (the next
   apply refuses to overwrite those). A plain file the rollback wrote
   (`_redone`) is answered without a plan: the same kind, path, owner,
   group and mode declared, the content compared by digest (what the
   rollback wrote, against the config's content or source file as it is
   now). When any item is not such a file, the manifest is planned, as the
   next apply would plan it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from syslua.errors import StateError, SysluaError
from syslua.execute.run import Rollback
from syslua.fsutil import sha256_file
from syslua.manifest.model import Item, Manifest
from syslua.paths import Paths, abbreviate
from syslua.resources import capability
from syslua.resources import file_edits as edits
from syslua.resources import get as get_type
from syslua.resources.kind import Journaled, TakesBack
from syslua.state.journal import capture
from syslua.state.records import PathState
from syslua.state.snapshots import ADD, ItemStates, Snapshot
from syslua.state.store import Store


def returning(
    target: Snapshot, current: Snapshot | None, store: Store
) -> tuple[Snapshot, Rollback, list[str]]:
    """The snapshot to materialise, what else the rollback returns to, and notes
    for the user (see the module's docstring)."""
    states: dict[str, Any] = dict(target.items)
    restores: list[tuple[str, PathState]] = []
    kept: list[str] = []
    notes: list[str] = []
    # A `sys add`, or a rollback that undid one, says what it wrote.
    added = current.pre.get(ADD) if current is not None else None
    if current is None or not isinstance(added, dict):
        return target, Rollback(states), notes
    manifest = target.load_manifest()
    found = added.get("homes")
    homes: dict[str, Any] = found if isinstance(found, dict) else {}
    paths: dict[str, str] = {}
    for ident in dict.fromkeys([*added.get("items", ()), *homes]):
        item = manifest.get(ident)
        kind = get_type(item.type) if item is not None else None
        journaled = capability(kind, Journaled) if kind is not None else None
        takes_back = capability(kind, TakesBack) if kind is not None else None
        path = journaled.managed_path(item) if journaled is not None and item else None
        if path is None or takes_back is None or item is None:
            continue
        live = _home_before(capture(path, store), homes.get(ident))
        state = takes_back.adopt(item, target.items.get(ident) or {}, live, store)
        if state is not None:
            states[ident] = state
            kept.append(ident)
            paths[ident] = path
    wrote = added.get("wrote") or {}
    for record in current.pre_records():
        digest = wrote.get(record.path)
        if digest is None:
            continue
        if _holds(record.path, digest):
            restores.append((record.path, record.prev))
        else:
            notes.append(
                f"{abbreviate(record.path)} changed since `sys add` wrote it: left as it is"
            )
    rollback = Rollback(states, tuple(restores), tuple(kept), paths)
    return replace(target, items=ItemStates(states)), rollback, notes


def _home_before(live: PathState, home: Any) -> PathState:
    """What the home path keeps: what is there now, or, when the add (or
    rollback) replaced it and it is still what that made it (a file that had
    replaced a managed link made a link again), what it replaced."""
    if not isinstance(home, dict):
        return live
    try:
        if PathState.from_json(home["after"]) == live:
            return PathState.from_json(home["before"])
    except (KeyError, TypeError, ValueError):
        pass  # a record this syslua cannot read: what is there now
    return live


def _holds(path: str, digest: str) -> bool:
    try:
        return os.path.isfile(path) and sha256_file(path) == digest
    except OSError:
        return False


def after(
    paths: Paths,
    before: Snapshot | None,
    touched: Iterable[str],
    ran: Ran | None = None,
) -> list[str]:
    """What the config still declares of what the rollback changed (`touched`,
    item ids): the lines to print (see the module's docstring). `ran`: the
    manifest the rollback ran, the item states it recorded and its store."""
    touched = set(touched)
    if before is None or not before.config or not touched:
        return []
    name = Path(before.config).name
    if not _same_files(before.inputs):
        return [
            f"{name} changed since snapshot {before.id}: `sys plan` shows what the next "
            "sys apply would do."
        ]
    try:
        redo, edits = _next_apply(paths, before, touched, ran)
    except (SysluaError, OSError):
        return []  # nothing sure to say
    lines = []
    if redo:
        lines.append(
            f"{name} still declares what was rolled back ({_shown(redo)}): "
            "the next sys apply will redo it."
        )
    if edits:
        one = len(edits) == 1
        lines.append(
            f"{_shown(edits)} {'holds an edit' if one else 'hold edits'} made by hand again: "
            f"the next sys apply refuses to overwrite {'it' if one else 'them'} "
            f"(sys add PATH keeps {'it' if one else 'them'}, "
            f"sys apply --overwrite PATH drops {'it' if one else 'them'})."
        )
    return lines


def _same_files(inputs: dict[str, str]) -> bool:
    """Are the config files those the snapshot recorded, byte for byte?"""
    try:
        return bool(inputs) and all(sha256_file(p) == blob for p, blob in inputs.items())
    except OSError:
        return False


@dataclass(frozen=True)
class Ran:
    """What a rollback ran (its manifest: sources are store copies), the item
    states its snapshot recorded, and the store holding their blobs."""

    manifest: Manifest
    states: Mapping[str, Mapping[str, Any]]
    store: Store


def _next_apply(
    paths: Paths, before: Snapshot, touched: set[str], ran: Ran | None
) -> tuple[list[str], list[str]]:
    """Of the items in `touched`, those the next apply of `before`'s
    declarations would change, and those it would refuse to (edited)."""
    from syslua.plan.inputs import PlanInputs
    from syslua.resources.process import Runner

    declared = before.load_manifest()
    quick = _without_plan(declared, before.order, touched, ran) if ran is not None else None
    if quick is not None:
        return quick, []
    inputs = PlanInputs(paths, declared)
    plan = inputs.plan(inputs.context(Runner()))
    redo: list[str] = []
    edits: list[str] = []
    for entry in plan.all_entries:
        if entry.id not in touched or not entry.decision.changes or entry.noop:
            continue
        (edits if entry.edited else redo).append(entry.label)
    return redo, edits


# What a plain file may declare for `_redone` to answer without a plan
# (`dir_mode`, `force` and `provider` have no bearing on a file that exists).
_PLAIN = frozenset(
    ("ensure", "content", "source", "owner", "group", "mode", "dir_mode", "force", "provider")
)
PLACEHOLDER = "$${"


def _without_plan(
    declared: Manifest, order: list[list[int]] | None, touched: set[str], ran: Ran
) -> list[str] | None:
    """The labels of the items in `touched` the next apply redoes, in the
    order its plan lists them (the waves `order` recorded for `declared`, or
    its graph's), when every one is a plain file (`_redone`); None when one
    is not (plan them)."""
    from syslua.plan.planner import label, recorded_waves

    redo = set()
    for ident in touched:
        answer = _redone(
            declared.get(ident), ran.manifest.get(ident), ran.states.get(ident), ran.store
        )
        if answer is None:
            return None
        if answer:
            redo.add(ident)
    if not redo:
        return []
    waves = recorded_waves(declared, order) if order else None
    if waves is None:
        from syslua.plan.dag import Dag

        waves = Dag.from_manifest(declared).waves()
    return [label(item) for wave in waves for i in wave if i in redo and (item := declared.get(i))]


def _redone(
    want: Item | None, wrote: Item | None, state: Mapping[str, Any] | None, store: Store
) -> bool | None:
    """Does the next apply rewrite the plain file the rollback wrote (`wrote`,
    recorded as `state`) to what the config declares (`want`)? None when
    the answer needs a plan: anything but a plain file declared with the
    same path, owner, group and mode on both sides, or content that is
    secret, templated, or a hand edit the state keeps."""
    if want is None or wrote is None or state is None or not _plain(want) or not _plain(wrote):
        return None
    if any(want.get(p) != wrote.get(p) for p in ("owner", "group", "mode")):
        return None
    blob = state.get("blob")
    if not isinstance(blob, str) or edits.EDITED_FROM in state:
        return None
    content = want.get("content")
    try:
        size = store.size(blob)  # a blob missing from the store: planned
        if content is not None:
            import hashlib

            data = content.encode("utf-8", "surrogateescape")
            return len(data) != size or hashlib.sha256(data).hexdigest() != blob
        source = want.get("source")
        return os.stat(source).st_size != size or sha256_file(source) != blob
    except (OSError, StateError):
        return None  # the plan says what a source that cannot be read does


def _plain(item: Item) -> bool:
    """A file declared present with its content or source, nothing more:
    no tree, template, link, secret or placeholder."""
    if item.type != "file" or item.parent is not None or item.noop or item.health_check_only:
        return False
    props = item.props
    if props.get("ensure") != "present" or ("content" in props) == ("source" in props):
        return False
    for name, value in props.items():
        if name not in _PLAIN:
            return False
        if isinstance(value, str) and PLACEHOLDER in value:  # secrets are placeholders too
            return False
    return True


def _shown(labels: list[str]) -> str:
    shown = ", ".join(labels[:3])
    return shown + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
