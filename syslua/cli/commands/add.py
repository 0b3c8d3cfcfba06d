"""`sys add PATH...`: take files edited by hand back into the configuration.

Steps:
1. Evaluate the config (`--config`, found as `sys plan` finds it) and list
   the files under each PATH (a directory adds every file below it, `.git`
   skipped).
2. Under the state lock, ask for each file how it is taken back: the type of
   the item managing it (`TakesBack.take_back`: a file copied from a
   `source` is copied over that source; a link needs nothing; inline
   `content` is refused, naming the declaration), or, for a file nothing
   manages, the registry's path type (`take_in`: copied to
   `<config dir>/dotfiles/<path under ~>`, or `--to DIR`, with the
   declaration to add printed; the config itself is never edited).
3. If any file is refused, stop: exit 2, nothing changed.
4. Keep the previous content of every configuration file about to be
   overwritten in the store, then copy.
5. Record a snapshot (kind `add`) that says the content taken back is what
   the last apply left, so that a later change of the source is not taken
   for an edit of the live file; it also keeps the overwritten contents.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from syslua.cli.commands.common import load_manifest, state
from syslua.cli.machine import JSON_FORMAT
from syslua.cli.output import Terminal
from syslua.errors import UsageError
from syslua.manifest.model import Item, Manifest
from syslua.paths import Paths, abbreviate, home
from syslua.resources import capability, path_taker
from syslua.resources import get as get_type
from syslua.resources.base import TakeBack
from syslua.resources.kind import Journaled, TakesBack
from syslua.state.journal import capture
from syslua.state.snapshots import Snapshot, Snapshots
from syslua.state.store import Store

REFUSED = 2


def run(
    term: Terminal,
    targets: list[Path],
    *,
    config: Path | None,
    to: Path | None,
    facts: list[str],
    impure: bool,
    max_depth: int,
    wait: bool,
) -> int:
    paths = Paths.from_env()
    manifest = load_manifest(
        term,
        config,
        facts=facts,
        impure=impure,
        max_depth=max_depth,
        paths=paths,
        # a config given as an argument would be taken for a path to add
        example="sys add --config path/to/sys.lua PATH",
    )
    config_dir = os.path.dirname(manifest.config or os.path.abspath("sys.lua"))
    dest_root = os.path.abspath(to) if to is not None else os.path.join(config_dir, "dotfiles")
    managed = _managed(manifest)
    files, skipped = _files(targets, managed)
    with state(paths, term, exclusive=True, wait=wait):
        snapshots = Snapshots(paths)
        current, warning = snapshots.usable_current()
        for note in (snapshots.rebuilt, warning):
            if note:
                term.warn(note)
        if warning:
            current = None  # a corrupt snapshot's stand-in: nothing to record against
        store = Store(paths.store)
        steps = [
            (path, item, _step(path, item, manifest, current, store, config_dir, dest_root))
            for path, item in ((p, managed.get(p)) for p in files)
        ]
        refused = [step for _, _, step in steps if step.refused]
        if refused:
            for step in refused:
                term.error(step.message)
            term.line("Nothing was changed.", always=True)
            return REFUSED
        # The configuration's files are the user's: keep what is overwritten.
        records = [
            {"op": "path", "path": w, "prev": capture(w, store)}
            for _, _, s in steps
            for w in s.writes
        ]
        store.sync()
        states: dict[str, dict[str, Any]] = {}
        for _, item, step in steps:
            new = step.act() if step.act is not None else None
            if new is not None and item is not None:
                states[item.id] = new
        store.sync()  # the contents the new states name, before the snapshot names them
        snapshot = None
        if current is not None and (states or records):
            taken = [path for path, item, _ in steps if item is not None]
            snapshot = _record(snapshots, current, states, records, taken)
    return _report(term, steps, skipped, snapshot)


def _managed(manifest: Manifest) -> dict[str, Item]:
    """Items by the path they manage."""
    out = {}
    for item in manifest:
        kind = capability(get_type(item.type), Journaled)
        path = kind.managed_path(item) if kind is not None else None
        if path is not None:
            out[path] = item
    return out


def _files(targets: list[Path], managed: dict[str, Item]) -> tuple[list[str], list[str]]:
    """The files to add, in order, without repeats; and what a directory walk skipped."""
    files: list[str] = []
    skipped: list[str] = []
    for target in targets:
        path = os.path.normpath(os.path.abspath(os.path.expanduser(str(target))))
        if not os.path.lexists(path):
            raise UsageError(f"{target}: no such file or directory")
        if os.path.isdir(path) and not os.path.islink(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d != ".git")
                for d in dirs:
                    full = os.path.join(root, d)
                    if os.path.islink(full):
                        (files if full in managed else skipped).append(full)
                for name in sorted(names):
                    full = os.path.join(root, name)
                    mode = os.lstat(full).st_mode
                    if stat.S_ISREG(mode) or full in managed:
                        files.append(full)
                    else:
                        skipped.append(full)
        else:
            files.append(path)
    return list(dict.fromkeys(files)), skipped


def _step(
    path: str,
    item: Item | None,
    manifest: Manifest,
    current: Snapshot | None,
    store: Store,
    config_dir: str,
    dest_root: str,
) -> TakeBack:
    """How one file is taken back (checked; nothing done yet)."""
    label = abbreviate(path)
    if item is not None:
        recorded = current.items.get(item.id) if current is not None else None
        kind = capability(get_type(item.type), TakesBack)
        if kind is None:
            return TakeBack(f"`sys add` cannot take back a {item.type}", refused=True)
        return kind.take_back(item, path, manifest.source_of(item.id) or "?", recorded, store)
    h = home().rstrip("/")
    if not path.startswith(h + "/"):
        return TakeBack(
            f"{label} is not under your home directory ({h}): only paths under ~ can be added",
            refused=True,
        )
    if path == config_dir or path.startswith(config_dir.rstrip("/") + "/"):
        return TakeBack(
            f"{label} is inside the configuration's directory: declare it there", refused=True
        )
    dest = os.path.join(dest_root, os.path.relpath(path, h))
    inside = dest.startswith(config_dir.rstrip("/") + "/")
    source = os.path.relpath(dest, config_dir) if inside else abbreviate(dest)
    return path_taker().take_in(path, dest, source)


def _record(
    snapshots: Snapshots,
    current: Snapshot,
    states: dict[str, dict[str, Any]],
    records: list[dict[str, Any]],
    files: list[str],
) -> str:
    """A snapshot like the current one, in which the content taken back is what was applied."""
    shown = ", ".join(abbreviate(f) for f in files[:3])
    if len(files) > 3:
        shown += f" and {len(files) - 3} more"
    snap = current.amended(
        kind="add", message=f"add {shown}", items={**current.items, **states}, records=records
    )
    snapshots.save(snap)
    return snap.id


def _report(
    term: Terminal,
    steps: list[tuple[str, Item | None, TakeBack]],
    skipped: list[str],
    snapshot: str | None,
) -> int:
    declarations = [s.declaration for _, _, s in steps if s.declaration]
    if term.json_mode:
        term.json(
            {
                "format": JSON_FORMAT,
                "added": [
                    {"path": path, "managed": item is not None, "message": step.message}
                    | ({"declaration": step.declaration} if step.declaration else {})
                    for path, item, step in steps
                ],
                "skipped": skipped,
                "snapshot": snapshot,
            }
        )
        return 0
    for _, _, step in steps:
        term.line(step.message)
    for path in skipped:
        term.line(f"{abbreviate(path)}: skipped (not a regular file)")
    if declarations:
        term.line()
        term.line(
            "Add this declaration to your config:"
            if len(declarations) == 1
            else "Add these declarations to your config:"
        )
        for text in declarations:
            term.line(f"  {text}")
    if snapshot:
        term.line(f"Recorded snapshot {snapshot}: what was taken back counts as applied.")
    return 0
