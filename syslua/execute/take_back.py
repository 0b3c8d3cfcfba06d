"""Taking files edited by hand back into the configuration (`sys add PATH...`).

Steps, in order (the caller holds the state lock from step 2 on):
1. `Adding(manifest, targets, to)`: list the files under each target (a
   directory adds every file below it, `.git` skipped, what is not a
   regular file skipped unless an item manages it);
2. `read_current`: the current snapshot (not a stand-in for a corrupt one:
   there is nothing to record against then), and its warnings;
3. `check`: ask for each file how it is taken back: the kind of the item
   managing it (`TakesBack.take_back`: a file copied from a `source` is
   copied over that source; a link needs nothing; inline `content` is
   refused, naming the declaration), or, for a file nothing manages, the
   registry's path type (`take_in`: copied to `<config dir>/dotfiles/<path
   under ~>`, or `to`, with the declaration to add; the config itself is
   never edited). Any refusal stops here, nothing changed;
   A file whose source also changed since the last apply is refused unless
   `force` (copying it would lose the source's change), as is a file whose
   only edit is a mode the declaration sets, and files that would be copied
   over one same file (real paths compared) with different contents, and,
   with no snapshot yet to keep them in, overwrites of files git does not
   keep either (not committed);
4. `act`: keep the previous content of every configuration file about to
   be overwritten in the store, then copy;
5. record a snapshot (kind `add`) that says the content taken back is what
   the last apply left, so that a later change of the source is not taken
   for an edit of the live file; it also keeps the overwritten contents, the
   items taken back and what was written over each source, so that
   `sys rollback` can undo it (`execute/rollback_target.py`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from syslua.errors import UsageError, display_path
from syslua.fsutil import sha256_file
from syslua.manifest.model import Item, Manifest
from syslua.paths import Paths, abbreviate, home
from syslua.resources import capability, path_taker
from syslua.resources import get as get_type
from syslua.resources.base import TakeBack
from syslua.resources.kind import Journaled, TakesBack
from syslua.state.journal import capture
from syslua.state.records import PathRecord, PathState
from syslua.state.snapshots import ADD, Snapshot, Snapshots
from syslua.state.store import Store


class Adding:
    """Files to take back into the config of `manifest` (see the module's docstring)."""

    def __init__(
        self,
        manifest: Manifest,
        targets: list[Path],
        to: Path | None,
        force: bool = False,
        encrypt_for: list[str] | None = None,
    ) -> None:
        self.manifest = manifest
        self.force = force  # over a source that changed since the last apply too
        # `--encrypt`: the age recipients files nothing manages are encrypted for.
        self.encrypt_for = encrypt_for
        self.config_dir = os.path.dirname(manifest.config or os.path.abspath("sys.lua"))
        self.dest_root = (
            os.path.abspath(to) if to is not None else os.path.join(self.config_dir, "dotfiles")
        )
        self.managed = _managed(manifest)
        self.files, self.skipped = _files(targets, self.managed)
        # Set by the steps below.
        self.snapshots: Snapshots | None = None
        self.current: Snapshot | None = None
        self.store: Store | None = None
        self.steps: list[tuple[str, Item | None, TakeBack]] = []

    def read_current(self, paths: Paths) -> list[str]:
        """Read the current snapshot; returns the warnings of reading it."""
        self.snapshots = Snapshots(paths)
        current, warning = self.snapshots.usable_current()
        notes = [n for n in (self.snapshots.rebuilt, warning) if n]
        # A corrupt snapshot's stand-in: nothing to record against.
        self.current = None if warning else current
        self.store = Store(paths.store)
        return notes

    def check(self) -> list[TakeBack]:
        """How each file is taken back (nothing done yet); returns the refusals."""
        assert self.store is not None, "read_current first"
        self.steps = [
            (path, item, self._step(path, item))
            for path, item in ((p, self.managed.get(p)) for p in self.files)
        ]
        refused = [step for _, _, step in self.steps if step.refused]
        refused = refused or _same_target(self.steps)
        if not refused and self.current is None:
            refused = _not_kept(self.steps)
        return refused

    def act(self) -> str | None:
        """Keep what is overwritten, copy, and record the snapshot; returns its id
        (None when there is no current snapshot, or nothing to record)."""
        store, snapshots = self.store, self.snapshots
        assert store is not None and snapshots is not None, "check first"
        # The configuration's files are the user's: keep what is overwritten,
        # each recorded under the item that overwrites it.
        records = [
            PathRecord(item.id if item is not None else "", w, capture(w, store))
            for _, item, s in self.steps
            for w in s.writes
        ]
        # The home files as they were: one the add replaces (a file that had
        # replaced a managed link is made a link again) keeps its content here.
        # Only links are replaced: a copied file (a decrypted secret among
        # them) stays as it is, and nothing of it goes into the store.
        homes = {
            item.id: (path, capture(path, store))
            for path, item, s in self.steps
            if item is not None
            and s.act is not None
            and (item.get("ensure") == "link" or item.get("link"))
            and os.path.isfile(path)
        }
        store.sync()
        states: dict[str, dict[str, Any]] = {}
        for _, item, step in self.steps:
            new = step.act() if step.act is not None else None
            if new is not None and item is not None:
                states[item.id] = new
        store.sync()  # the contents the new states name, before the snapshot names them
        if self.current is None or not (states or records):
            return None
        # What it wrote over each source file: a rollback of the add puts back
        # only a file that still holds it.
        wrote = {r.path: sha256_file(r.path) for r in records if os.path.isfile(r.path)}
        taken = [path for path, item, _ in self.steps if item is not None]
        added = {"items": sorted(states), "wrote": wrote}
        replaced = replaced_homes(homes, store)
        if replaced:
            added["homes"] = replaced
        return _record(snapshots, self.current, states, records, taken, added)

    def _step(self, path: str, item: Item | None) -> TakeBack:
        """How one file is taken back (checked; nothing done yet)."""
        label = abbreviate(path)
        manifest, current, store = self.manifest, self.current, self.store
        assert store is not None, "read_current first"
        config_dir, dest_root = self.config_dir, self.dest_root
        if item is not None:
            if self.encrypt_for is not None and not item.get("decrypt"):
                return TakeBack(
                    f"{label} is managed from the unencrypted {display_path(str(item.get('source') or '?'))} "
                    f"(declared at {manifest.source_of(item.id) or '?'}): `sys add --encrypt` "
                    "takes in files nothing manages; encrypt that source with `sys age encrypt` "
                    "and declare the .age file instead",
                    refused=True,
                )
            recorded = current.items.get(item.id) if current is not None else None
            kind = capability(get_type(item.type), TakesBack)
            if kind is None:
                return TakeBack(f"`sys add` cannot take back a {item.type}", refused=True)
            return kind.take_back(
                item,
                path,
                manifest.source_of(item.id) or "?",
                recorded,
                store,
                force=self.force,
                declared=manifest.sources.get(item.id, ()),
                kept=current is not None,
            )
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
        return path_taker().take_in(path, dest, source, self.encrypt_for or ())


def recipients(manifest: Manifest, given: list[str]) -> list[str]:
    """Who `sys add --encrypt` encrypts for: `given` (-r), else the
    `age_recipients` the config's encrypted files declare, else the public
    key of their identity (or of the default one)."""
    from syslua import age

    if given:
        return given
    decrypted = [i for i in manifest.of_type("file") if i.get("decrypt")]
    declared = sorted({r for i in decrypted for r in i.get("age_recipients") or ()})
    if declared:
        return declared
    configured = next((i.get("age_identity") for i in decrypted if i.get("age_identity")), None)
    return age.recipients_of(age.identity_path(configured))


def _same_target(steps: list[tuple[str, Item | None, TakeBack]]) -> list[TakeBack]:
    """Refusals for files that would be copied over the same file (their real
    paths compared) with different contents: the last copy would win, and the
    snapshot would record the others as applied, so their edits would be lost
    on the next apply."""
    by_target: dict[str, list[str]] = {}
    for path, _, step in steps:
        for write in step.writes:
            by_target.setdefault(os.path.realpath(write), []).append(path)
    refusals = []
    for target, paths in by_target.items():
        contents = {p: sha256_file(p) for p in paths}
        if len(set(contents.values())) < 2:
            continue
        labels = [abbreviate(p) for p in paths]
        shown = ", ".join(labels[:-1]) + " and " + labels[-1]
        refusals.append(
            TakeBack(
                f"{shown} would {'both' if len(labels) == 2 else 'all'} be copied over {display_path(target)}, and their contents "
                "differ: take back one of them (or make them the same first)",
                refused=True,
                conflict=True,
            )
        )
    return refusals


def _not_kept(steps: list[tuple[str, Item | None, TakeBack]]) -> list[TakeBack]:
    """With no snapshot yet, nothing keeps what a copy overwrites (a rollback
    would have nothing to return to): refusals for the configuration's files
    it would overwrite that git does not keep either (not committed as they are)."""
    targets = dict.fromkeys(os.path.realpath(w) for _, _, s in steps for w in s.writes)
    return [
        TakeBack(
            f"{display_path(target)}: there is no snapshot yet to keep its content in, and it "
            "is not committed: commit it first (git then brings it back)",
            refused=True,
            conflict=True,
        )
        for target in targets
        if not _committed(target)
    ]


def _committed(path: str) -> bool:
    """Is the file at `path` committed to git as it is (tracked, no change)?"""
    import shutil

    from syslua.resources.process import Runner

    git = shutil.which("git")
    if git is None:
        return False
    folder, name = os.path.split(path)
    runner = Runner()
    for args in (
        ["ls-files", "--error-unmatch", "--", name],
        ["diff", "--quiet", "HEAD", "--", name],
    ):
        done = runner.run_argv([git, *args], cwd=folder, environment=["LC_ALL=C"], timeout=60)
        if done.exit_code != 0:
            return False
    return True


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


def replaced_homes(
    homes: dict[str, tuple[str, PathState]], store: Store
) -> dict[str, dict[str, Any]]:
    """Of the home paths (item id: path, what was there before), those that
    changed since: what was there before and what is there now, by item id. A
    rollback that finds one still as it is now puts back what was before
    (`rollback_target.returning`)."""
    out = {}
    for ident, (path, before) in homes.items():
        after = capture(path, store)
        if after != before:
            out[ident] = {"before": before.to_json(), "after": after.to_json()}
    return out


def _record(
    snapshots: Snapshots,
    current: Snapshot,
    states: dict[str, dict[str, Any]],
    records: list[PathRecord],
    files: list[str],
    added: dict[str, Any],
) -> str:
    """A snapshot like the current one, in which the content taken back is what
    was applied; its pre-apply record keeps what the sources held before, and
    says what it took back (`rollback_target` undoes it from there)."""
    shown = ", ".join(abbreviate(f) for f in files[:3])
    if len(files) > 3:
        shown += f" and {len(files) - 3} more"
    snap = current.amended(
        kind="add", message=f"add {shown}", items={**current.items, **states}, records=records
    )
    snap.pre[ADD] = added
    snapshots.save(snap)
    return snap.id
