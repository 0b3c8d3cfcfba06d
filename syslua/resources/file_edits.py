"""Edits made by hand to managed files: found, shown, kept, and taken back.

The file kind's capabilities for edits (`Edited.edited`, `edit_diff`;
`TakesBack.adopt`, `take_back`, `take_in`) live here, beside the kind
rather than in it. A managed file is *edited* when its live content or mode differs from
what the last apply recorded (`snapshot_state`: the content's blob and the
mode), or when a symlink replaced it. A file that was deleted is not edited:
writing it again loses nothing.

A managed link is edited when it points elsewhere than the last apply made
it point, or when a regular file replaced it (an editor that saves by
writing a new file): overwriting that file would lose what was written.

A state that keeps a hand edit (`adopt`: the edits an apply `--force`
overwrote, which `sys rollback` writes back) names, under `edited_from`,
the content and mode the config had applied before the edit. Edits are
found against those: an edit a rollback brought back is an edit again.

`sys add` takes a live file back into the configuration: over the `source`
file it is copied from, keeping that file's own mode and owner; never into
a declaration's inline `content`, which only the user edits, nor over a
template, which the live file is only a rendering of. It never loses the
repository's side: a source that changed since the last apply too (or a
file never applied that differs from it) is refused with both diffs unless
forced, and a mode edit is never taken back (the declaration sets the
mode: a mode-only edit is refused, naming the line that sets it).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from syslua.errors import Source, StateError, display_path
from syslua.fsutil import sha256_file
from syslua.manifest.model import Item
from syslua.paths import abbreviate
from syslua.resources import file_posix
from syslua.resources.base import ResourceError, TakeBack
from syslua.resources.file_posix import LINK, PRESENT, FileState
from syslua.resources.private import content_diff, is_private
from syslua.state import records
from syslua.state.records import PathState

if TYPE_CHECKING:
    from syslua.resources.providers import FileProvider
    from syslua.state.stat_index import StatIndex

# The file kind's provider, reached only through its protocol (as in `file.py`).
posix: FileProvider = file_posix

PLACEHOLDER = "$${"
# In a state: what the config applied before the hand edit the state keeps.
EDITED_FROM = "edited_from"


def _live(path: str) -> FileState | None:
    try:
        return posix.status(path)
    except ResourceError:
        return None  # unreadable: nothing can be said about it


def _checks_content(item: Item) -> bool:
    """Whether the recorded blob is what the apply wrote: content holding
    placeholders is recorded as declared, before they were resolved."""
    content = item.get("content")
    return content is None or PLACEHOLDER not in content


def applied(recorded: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the config last applied: the recorded state, or, when it keeps a
    hand edit, the content and mode that edit was made over."""
    before = recorded.get(EDITED_FROM)
    return {**recorded, **before} if isinstance(before, Mapping) else recorded


def _recorded_blob(item: Item, recorded: Mapping[str, Any], store: Any) -> str | None:
    """The digest of the content the last apply recorded, when it can be compared."""
    blob = recorded.get("blob")
    if not blob or store is None or not _checks_content(item) or not store.has(blob):
        return None
    return str(blob)


def _same_as_blob(state: FileState, blob: str, store: Any, index: StatIndex | None = None) -> bool:
    """Does the file `state` says is there hold the content `blob`? A blob is
    named by its hash: hashing the file answers, without reading the stored
    copy (and so says the same of a damaged one); so does the stat index,
    without reading the file, when its `lstat` is as an entry recorded
    (`state/stat_index`: a hash is recorded there for the next run). A file
    that went, or whose directory changed, while it was read is not (an
    edit: the apply refuses rather than act on it)."""
    path, key = state.path, state.stat_key
    try:
        try:
            size = store.size(blob)
        except StateError:
            return True  # not in the store: nothing to compare with (no edit said)
        if size != state.size:
            return False
        known = index.digest(path, key) if index is not None and key is not None else None
        if known is not None:
            return known.hex() == blob
        digest = sha256_file(path)
        if index is not None and key is not None:
            index.observe(path, key, bytes.fromhex(digest))
        return digest == blob
    except (FileNotFoundError, NotADirectoryError):
        return False


def _link_edited(item: Item) -> str | None:
    state = _live(item.key)
    if state is None or _as_declared(item, state):
        return None
    if state.ensure == LINK:
        return f"link target changed from {item.get('target')} to {state.link_target}"
    if state.ensure == PRESENT:
        return f"a file replaced the link to {item.get('target')}"
    return None


def _as_declared(item: Item, state: FileState) -> bool:
    """Does the path still lead where its declared link does: a link to the
    same entry (`file_posix.points_to`: stow's relative link to the source
    the config names), or the source itself, seen through a fold the link
    tree keeps?"""
    target = item.get("target")
    if not isinstance(target, str):
        return state.ensure == LINK and state.link_target == target
    if state.ensure == LINK and file_posix.points_to(item.key, state.link_target, target):
        return True
    return state.ensure == PRESENT and file_posix.same_entry(item.key, target)


def edited(
    item: Item, recorded: Mapping[str, Any], store: Any, index: StatIndex | None = None
) -> str | None:
    """What was changed by hand since the last apply, or None. `index`: the
    stat index that may say what the file holds (never for a secret)."""
    if item.get("ensure") == "link":
        return _link_edited(item)
    recorded = applied(recorded)
    if item.get("ensure") != "present" or not (recorded.get("blob") or recorded.get("mode")):
        return None
    state = _live(item.key)
    if state is None:
        return None
    if state.ensure == LINK:
        return f"replaced by a symlink to {state.link_target}"
    if state.ensure != PRESENT:
        return None
    out = []
    blob = recorded.get("blob")  # one store look-up, `_same_as_blob`'s, not two
    if (
        blob
        and store is not None
        and _checks_content(item)
        and not _same_as_blob(state, str(blob), store, index)
    ):
        out.append("content edited")
    mode = recorded.get("mode")
    if mode and state.mode != mode:
        out.append(f"mode changed from {mode} to {state.mode}")
    return ", ".join(out) or None


def edit_diff(item: Item, recorded: Mapping[str, Any], store: Any) -> str | None:
    """From what the last apply left to what is there now: mode lines, then the content."""
    if item.get("ensure") == "link":
        return _link_diff(item)
    if item.get("ensure") != "present":
        return None
    state = _live(item.key)
    if state is None or state.ensure != PRESENT:
        return None
    recorded = applied(recorded)
    text = ""
    mode = recorded.get("mode")
    if mode and mode != state.mode:
        text += f"old mode {mode}\nnew mode {state.mode}\n"
    blob = _recorded_blob(item, recorded, store)
    if blob is not None:
        try:
            before, after = store.read(blob), _read(item.key)
        except (OSError, StateError):
            return text or None
        label = abbreviate(item.key)
        text += unified(
            before,
            after,
            f"{label} (last applied)",
            f"{label} (live)",
            paths=(item.key,),
            modes=(item.get("mode"), mode),
        )
    return text or None


def _link_diff(item: Item) -> str | None:
    state = _live(item.key)
    if state is None:
        return None
    target = item.get("target")
    if _as_declared(item, state):
        return None
    if state.ensure == LINK:
        return f"old target {target}\nnew target {state.link_target}\n"
    if state.ensure == PRESENT:
        try:
            after = _read(item.key)
        except OSError:
            return None
        label = abbreviate(item.key)
        return f"old target {target}\n" + unified(
            b"", after, f"{label} (a link)", f"{label} (live file)", paths=(item.key, target)
        )
    return None


def unified(
    before: bytes,
    after: bytes,
    fromfile: str,
    tofile: str,
    *,
    paths: tuple[str | None, ...],
    modes: tuple[str | None, ...] = (),
) -> str:
    """A unified diff of two contents ('' when equal); only how many lines
    changed when the file is private (`paths`: the files the contents are
    of; `modes`: their declared and recorded modes; see `private.py`)."""
    private = is_private(paths, modes)
    return content_diff(before, after, fromfile, tofile, private=private)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def adopt(item: Item, recorded: Mapping[str, Any], live: PathState) -> dict[str, Any] | None:
    """A state recording the live file (content and mode) as what the last apply
    left; for a link, the target it had, or the file that replaced it."""
    if item.get("ensure") == "link":
        if live.kind == records.LINK:
            return {**recorded, "target": live.target}
        if live.kind == records.FILE:
            return {**recorded, "blob": live.blob, "mode": f"{live.mode:04o}"}
        return None
    if item.get("ensure") != "present" or live.kind != records.FILE:
        return None
    mode = f"{live.mode:04o}"
    before = recorded.get(EDITED_FROM) or {
        k: recorded[k] for k in ("blob", "mode") if recorded.get(k)
    }
    state = {k: v for k, v in recorded.items() if k != EDITED_FROM}
    state.update(blob=live.blob, mode=mode)
    if before and (before.get("blob"), before.get("mode")) != (live.blob, mode):
        state[EDITED_FROM] = before  # what the config applied before the edit
    return state


def adopted_link(item: Item, state: Mapping[str, Any]) -> dict[str, Any] | None:
    """The properties `materialise` gives a link whose state adopted a hand
    edit: another target, or the file that replaced it. None: as declared."""
    if item.get("ensure") != "link":
        return None
    if state.get("blob"):
        props = {k: v for k, v in item.props.items() if k != "target"}
        return {**props, "ensure": "present", "source": state["blob"], "mode": state["mode"]}
    target = state.get("target")
    if target and target != item.get("target"):
        return {**item.props, "target": target}
    return None


def adopted_blob(item: Item, state: Mapping[str, Any]) -> str | None:
    """The blob `materialise` writes instead of the inline `content`: the one a
    state recorded when it adopted a hand edit (it differs from the
    declaration's). None: the declaration stands."""
    blob, content = state.get("blob"), item.get("content")
    if not blob or content is None or PLACEHOLDER in content:
        return None
    declared = hashlib.sha256(content.encode("utf-8", "surrogateescape")).hexdigest()
    return None if blob == declared else str(blob)


# -- sys add ---------------------------------------------------------------------
def take_back(
    item: Item,
    path: str,
    where: str,
    recorded: Mapping[str, Any] | None,
    store: Any,
    *,
    force: bool = False,
    declared: Sequence[Source] = (),
    kept: bool = True,
) -> TakeBack:
    """Copy the live file over the `source` it is managed from (see `_over_source`);
    `kept`: a snapshot keeps the source's content first (False: none yet)."""
    label = abbreviate(path)
    ensure = item.get("ensure")
    if ensure == "link" or item.get("link"):
        # A link's edits were made in the file it points to: already in place.
        target = item.get("target") or item.get("source") or "its target"
        if (
            ensure == "link"
            and os.path.isfile(path)
            and not os.path.islink(path)
            and not file_posix.same_entry(path, str(target))  # the source, through a fold
        ):
            return _relink(item, path, where, str(target), force, kept)
        now = _live(path) if ensure == "link" else None
        if now is not None and now.ensure == LINK and not _as_declared(item, now):
            return TakeBack(
                f"{label}: the link was pointed to {now.link_target} by hand, and `sys add` "
                f"does not take a link's target back: change its declaration ({where}) to keep "
                f"it, or point it back with `sys apply --overwrite {label}`",
                refused=True,
                conflict=True,
            )
        return TakeBack(
            f"{label} is managed as a link to {abbreviate(str(target))}: "
            "edits made through it are already there; nothing to do"
        )
    if ensure != "present":
        return TakeBack(
            f'{label} is declared with ensure = "{ensure}" at {where}: there is no content to take back',
            refused=True,
        )
    if item.get("template"):
        return TakeBack(
            f"{label} is rendered from the template {display_path(str(item.get('source')))} "
            f"(declared at {where}): edit the template (`sys add` does not copy a rendering over it)",
            refused=True,
        )
    if item.get("content") is not None:
        return TakeBack(
            f"{label} is declared with inline `content` at {where}: edit it there "
            "(`sys add` copies edits only into `source` files)",
            refused=True,
            ways=(
                (
                    f"keep the edit: make the declaration at {where} say what {label} holds now, then run",
                    (),
                ),
                (
                    "or drop it (kept in a snapshot first: `sys rollback` brings it back)",
                    ("--overwrite", label),
                ),
            ),
        )
    source = item.get("source")
    if source is None:
        return TakeBack(
            f"{label} is declared without `content` or `source` at {where}: its content is not managed",
            refused=True,
        )
    try:
        live = os.lstat(path)
        src = os.stat(source)
    except FileNotFoundError as e:
        return TakeBack(f"{label}: {e.filename} does not exist", refused=True)
    if not stat.S_ISREG(live.st_mode):
        return TakeBack(f"{label} is not a regular file", refused=True)
    if not stat.S_ISREG(src.st_mode):
        return TakeBack(f"{label}: its source {source} is not a regular file", refused=True)
    sides = _Sides(item, path, str(source), live, recorded, declared or ())
    return _over_source(sides, where, recorded, store, force, kept)


class _Sides:
    """A file `sys add` takes back and its source, each compared with what the
    last apply left (`applied`: the content and mode the config applied)."""

    def __init__(
        self,
        item: Item,
        path: str,
        source: str,
        live: os.stat_result,
        recorded: Mapping[str, Any] | None,
        declared: Sequence[Source],
    ) -> None:
        self.item, self.path, self.source = item, path, source
        self.label, self.shown = abbreviate(path), display_path(source)
        self.target = os.path.realpath(source)  # a source that is a symlink keeps being one
        self.live_hash, self.source_hash = sha256_file(path), sha256_file(self.target)
        self.same = self.live_hash == self.source_hash
        base = applied(recorded) if recorded is not None else {}
        self.blob: str | None = base.get("blob")  # None: never applied, nothing to compare
        self.declared_mode: str | None = item.get("mode")
        self.live_mode = f"{stat.S_IMODE(live.st_mode):04o}"
        applied_mode = base.get("mode") or self.declared_mode
        self.applied_mode = applied_mode
        # A mode changed by hand that the declaration sets otherwise: never taken back.
        self.mode_edit = bool(self.declared_mode) and self.live_mode not in (
            self.declared_mode,
            applied_mode,
        )
        self.declared = declared

    @property
    def home_changed(self) -> bool:
        return self.blob is None or self.live_hash != self.blob

    @property
    def source_changed(self) -> bool:
        return self.blob is None or self.source_hash != self.blob

    def mode_at(self, where: str) -> str:
        """Where the mode is set: the line to change to keep the live mode."""
        at = mode_declared_at(self.declared) or f"{where} (its declaration)"
        return f"the config declares its mode, {self.declared_mode}, at {at}"


def _over_source(
    sides: _Sides,
    where: str,
    recorded: Mapping[str, Any] | None,
    store: Any,
    force: bool,
    kept: bool,
) -> TakeBack:
    """How the live file goes over its source: refused when only its mode
    changed (the declaration sets it), when the source changed since the last
    apply too (unless `force`), or when it was never applied and differs;
    nothing to do when it is what the last apply left."""
    label, shown = sides.label, sides.shown
    if sides.mode_edit and not (sides.home_changed if sides.blob else not sides.same):
        return TakeBack(
            f"{label}: only its mode changed ({sides.applied_mode} to {sides.live_mode}), and "
            f"`sys add` does not take a mode back: {sides.mode_at(where)}. Change that line "
            f"to keep {sides.live_mode}, or put {sides.declared_mode} back with "
            f"`sys apply --overwrite {label}`",
            refused=True,
            conflict=True,
        )
    if not sides.same and not sides.home_changed and not force:
        return TakeBack(
            f"{label}: nothing to take back, it is as the last apply left it; its source "
            f"{shown} changed since (the next sys apply copies that change)"
        )
    if not sides.same and sides.source_changed and not force:
        return _both_changed(sides, where, store, kept)
    if sides.same:
        message = f"{label}: already the same as its source {shown}"
    else:
        message = f"{label}: copied over its source {shown} (declared at {where})"
    if sides.mode_edit:
        message += (
            f"; its mode {sides.live_mode} is not taken back: {sides.mode_at(where)} "
            f"(change that line to keep {sides.live_mode})"
        )
    src = os.stat(sides.target)

    def act() -> dict[str, Any] | None:
        if not sides.same:
            posix.copy_content(
                sides.path,
                sides.target,
                mode=stat.S_IMODE(src.st_mode),
                owner=(src.st_uid, src.st_gid),
            )
        if recorded is None:
            return None
        # The content is the one applied now; the mode stays what was applied.
        state = {k: v for k, v in applied(recorded).items() if k != EDITED_FROM}
        state["blob"] = store.put_file(sides.path)
        return None if state == dict(recorded) else state

    return TakeBack(message, writes=() if sides.same else (sides.target,), act=act)


def _both_changed(sides: _Sides, where: str, store: Any, kept: bool) -> TakeBack:
    """Refused: copying the live file over its source would lose the source's
    own change (or, never applied, its content); both diffs and the way out."""
    label, shown = sides.label, sides.shown
    both = (sides.path, sides.target)
    try:
        before = store.read(sides.blob) if sides.blob else None
        home_now, source_now = _read(sides.path), _read(sides.target)
    except (OSError, StateError):
        before, home_now, source_now = None, b"", b""
    if sides.blob is None:
        why = (
            f"{label} was never applied, and its content differs from its source {shown} "
            f"(declared at {where})"
        )
        detail = unified(source_now, home_now, f"{shown} (source)", f"{label} (live)", paths=both)
    else:
        why = (
            f"{label} and its source {shown} (declared at {where}) both changed since the "
            "last apply: copying it over the source would lose the source's change"
        )
        detail = ""
        if before is not None:
            detail = unified(
                before, source_now, f"{shown} (last applied)", f"{shown} (now)", paths=both
            )
            detail += unified(
                before, home_now, f"{label} (last applied)", f"{label} (now)", paths=both
            )
    # Never applied, the path is not an edit: a plain apply takes it over.
    apply = (
        f"`sys apply --overwrite {label}`"
        if sides.blob
        else f"`sys apply` (it keeps {label} as the original it takes over)"
    )
    hint = resolve(label, shown, apply, kept)
    return TakeBack(why, refused=True, conflict=True, detail=detail + hint)


def resolve(label: str, shown: str, apply: str, kept: bool) -> str:
    """How to resolve a refused take-back: `sys add --force`, which keeps the
    source's content first (when a snapshot can: `kept`; else git, once it is
    committed), or the source's side with `apply`."""
    if kept:
        return (
            f"Merge them into {label} and run `sys add --force {label}` (the source's content "
            f"is kept first: `sys rollback` brings it back), or merge them into {shown} and "
            f"run {apply}."
        )
    return (
        f"Commit {shown}, merge them into {label} and run `sys add --force {label}` (there "
        "is no snapshot yet to keep the source's content in: git brings it back), or merge "
        f"them into {shown} and run {apply}."
    )


def mode_declared_at(declared: Sequence[Source]) -> str | None:
    """`file:line` of the line that sets the mode of an item declared at
    `declared`: its own `mode = ...`, or that of the `defaults {}` before it in
    the same file (which gives a file's declarations their defaults). None when
    no such line is found (a mode computed elsewhere)."""
    for where in declared:
        try:
            with open(where.file, encoding="utf-8", errors="replace") as f:
                lines = [_code(line) for line in f]
        except OSError:
            continue
        at = _mode_in_call(lines, where.line - 1)
        n = where.line - 2
        while at is None and n >= 0:
            if _DEFAULTS.search(lines[n]):
                at = _mode_in_call(lines, n)
            n -= 1
        if at is not None:
            return f"{display_path(where.file)}:{at + 1}"
    return None


_MODE = re.compile(r"\bmode\s*=")
_DEFAULTS = re.compile(r"\bdefaults\s*[({]")


def _code(line: str) -> str:
    """A Lua line without its comment (a `--` inside a string is rare in a declaration)."""
    return line.split("--", 1)[0]


def _mode_in_call(lines: list[str], start: int) -> int | None:
    """The line setting `mode` in the call that starts at line `start` (0-based),
    read until its braces close."""
    depth = 0
    for n in range(start, min(len(lines), start + 200)):
        if _MODE.search(lines[n]):
            return n
        depth += lines[n].count("{") - lines[n].count("}")
        if depth <= 0 and "{" in "".join(lines[start : n + 1]):
            return None
    return None


def _relink(item: Item, path: str, where: str, target: str, force: bool, kept: bool) -> TakeBack:
    """A regular file replaced a managed link (an editor saving by writing a
    new file): its content goes over what the link points to, and the link is
    made again. Refused (unless `force`) when what the link pointed to was
    written since the file replaced it (a pull, an edit in the repository):
    the file was made from what the link showed before, so copying it would
    lose that change. The timestamps say so; the same tick counts as after."""
    label = abbreviate(path)
    dest = os.path.realpath(target)
    if os.path.exists(dest) and not os.path.isfile(dest):
        return TakeBack(
            f"{label}: a file replaced the link to {abbreviate(target)}, which is not a regular file",
            refused=True,
        )
    live = os.lstat(path)
    try:
        old = os.stat(dest)
    except FileNotFoundError:
        old = None
    same = (
        old is not None
        and old.st_size == live.st_size
        and posix.same_content(path, dest, live.st_size)
    )
    if not same and old is not None and old.st_mtime_ns >= live.st_mtime_ns and not force:
        shown = display_path(target)
        detail = unified(
            _read(dest),
            _read(path),
            f"{shown} (source, now)",
            f"{label} (live)",
            paths=(path, dest),
        )
        return TakeBack(
            f"{label}: a file replaced the link to {shown} (declared at {where}), and {shown} "
            "changed after that: copying the file over it would lose that change",
            refused=True,
            conflict=True,
            detail=detail + resolve(label, shown, f"`sys apply --overwrite {label}`", kept),
        )
    message = (
        f"{label}: a file replaced the link to {abbreviate(target)} (declared at {where}); "
        + ("its content is already there" if same else "its content was copied there")
        + ", and the link is made again"
    )

    def act() -> None:
        if not same:
            mode = stat.S_IMODE((old or live).st_mode)
            owner = (old.st_uid, old.st_gid) if old is not None else None
            posix.copy_content(path, dest, mode=mode, owner=owner)
        posix.make_link(
            path, target, uid=live.st_uid, gid=live.st_gid, before_change=lambda _: None
        )

    return TakeBack(message, writes=() if same else (dest,), act=act)


def take_in(path: str, dest: str, source: str) -> TakeBack:
    """Copy a file nothing manages into the configuration, and give its declaration."""
    label = abbreviate(path)
    try:
        live = os.lstat(path)
    except FileNotFoundError:
        return TakeBack(f"{label} does not exist", refused=True)
    if stat.S_ISLNK(live.st_mode):
        return TakeBack(
            f"{label} is a symlink to {os.readlink(path)}: `sys add` copies regular files",
            refused=True,
        )
    if not stat.S_ISREG(live.st_mode):
        return TakeBack(f"{label} is not a regular file", refused=True)
    same = False
    if os.path.lexists(dest):
        try:
            existing = os.lstat(dest)
            same = (
                stat.S_ISREG(existing.st_mode)
                and existing.st_size == live.st_size
                and posix.same_content(path, dest, live.st_size)
            )
        except OSError:
            same = False
        if not same:
            return TakeBack(
                f"{label}: {abbreviate(dest)} already exists with other content; "
                "move it away, or copy to another directory with --to DIR",
                refused=True,
            )
    mode = stat.S_IMODE(live.st_mode)
    declaration = declare(label, source, mode, usual=0o644)

    def act() -> None:
        if not same:
            posix.copy_content(path, dest, mode=mode, owner=None)

    message = f"{label}: {'already in' if same else 'copied to'} {source}"
    return TakeBack(message, act=act, declaration=declaration)


def declare(label: str, source: str, mode: int, *, usual: int) -> str:
    """The `file {}` that `sys add` prints for a path it took in from `source`;
    `mode` only when it is not the `usual` one such a file gets."""
    text = f"file {{ path = {lua_string(label)}, source = {lua_string(source)}"
    if mode != usual:
        text += f', mode = "{mode:04o}"'
    return text + " }"


def lua_string(text: str) -> str:
    """A Lua string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
