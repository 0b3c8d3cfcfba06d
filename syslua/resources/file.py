"""The file type: decides and verifies; `file_posix` does the work.

Decision table (seed file-resource.md), checked in order: ensure, content
(SHA-256), owner, group, mode.

| desired   | current                     | action                         |
|-----------|-----------------------------|--------------------------------|
| absent    | absent                      | none                           |
| absent    | present / directory / link  | remove                         |
| directory | directory + matching attrs  | none                           |
| directory | absent / link               | create directory               |
| directory | directory + wrong attrs     | create directory (fix attrs)   |
| directory | regular file                | error, or replace with force   |
| present   | present + all matching      | none                           |
| present   | absent / link               | store                          |
| present   | present + wrong content     | store                          |
| present   | present + wrong attrs       | store                          |
| present   | directory                   | error                          |
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from syslua.errors import StateError
from syslua.manifest.model import Item, Manifest, freeze, thaw
from syslua.paths import abbreviate, home
from syslua.resources import file_edits as edits
from syslua.resources import file_posix as posix
from syslua.resources.base import (
    CREATE,
    FAIL,
    NONE,
    REMOVE,
    UPDATE,
    Context,
    Decision,
    RecordContext,
    Removal,
    ResourceError,
    ResourceType,
    TakeBack,
    group_name,
    user_name,
)
from syslua.resources.placeholders import Unresolved
from syslua.state.restore import restore_path

_LINKS = "file:linked-parents"  # ctx.planned: the planning run's cache of parent symlinks
CREATED_FILE = "Would have created the file"
UPDATED_FILE = "Would have updated the file"
CREATED_DIR = "Would have created directory"
REMOVED = "Would have removed the file"


@dataclass(frozen=True, slots=True)
class Status:
    state: posix.FileState
    differences: tuple[str, ...]  # why the item is not in its desired state
    error: str | None = None
    linked_parents: tuple[
        tuple[str, str], ...
    ] = ()  # parent dirs that are symlinks (planning only)


def _desired_bytes(item: Item) -> bytes | None:
    content = item.get("content")
    return None if content is None else content.encode("utf-8", "surrogateescape")


def _file_equals(path: str, data: bytes) -> bool:
    with open(path, "rb") as f:
        return f.read() == data


def _content_differs(item: Item, target: str, target_size: int) -> bool:
    """Does the file at `target` differ from the desired content? (None: content not managed)

    Sizes first, then bytes: comparing the bytes directly costs less than
    hashing both sides, and says the same thing.
    """
    data = _desired_bytes(item)
    source = item.get("source")
    if data is None and source is None:
        return False
    try:
        if data is None:
            if os.stat(source).st_size != target_size:
                return True
            return not posix.same_content(source, target, target_size)
        if len(data) != target_size:
            return True
        return (
            posix.read_small(target, target_size) != data
            if target_size <= posix.CHUNK
            else not _file_equals(target, data)
        )
    except FileNotFoundError:
        raise ResourceError(f"source file not found: {source}") from None
    except PermissionError as e:
        raise ResourceError(f"cannot read {e.filename}: permission denied") from None


class FileType(ResourceType):
    name = "file"
    in_dag = True

    def label(self, item: Item) -> str:
        return abbreviate(item.key)

    def key_label(self, key: str) -> str:
        return abbreviate(key)

    def status(self, item: Item, ctx: Context) -> Status:
        try:
            source = item.get("source")
            if (
                source is not None
                and item.get("ensure") == "present"
                and not os.path.isfile(source)
            ):
                raise ResourceError(
                    f"source file not found: {source}"
                    if not os.path.exists(source)
                    else f"source is not a regular file: {source}"
                )
            state = posix.status(item.key)
            links: tuple[tuple[str, str], ...] = ()
            if ctx.noop:
                # Planning: remember which parents are symlinks now. When the
                # item runs, a parent that turned into one is refused.
                links = posix.linked_parents(item.key, home(), ctx.planned.setdefault(_LINKS, {}))
                ctx.planned.setdefault(item.id, links)
            return Status(state, tuple(self._differences(item, state, ctx)), linked_parents=links)
        except ResourceError as e:
            return Status(posix.FileState(item.key, posix.ABSENT), (), str(e))

    def _differences(self, item: Item, state: posix.FileState, ctx: Context) -> list[str]:
        ensure = item.get("ensure")
        if ensure == "absent":
            return [] if not state.exists else [f"{_kind(state)} exists"]
        want = "directory" if ensure == "directory" else posix.PRESENT
        owner, group = item.get("owner"), item.get("group")
        if ctx.uid(owner) is None:
            raise ResourceError(f"owner `{owner}` does not exist")
        if ctx.gid(group) is None:
            raise ResourceError(f"group `{group}` does not exist")
        if state.ensure == posix.ABSENT:
            return ["does not exist"]
        if state.ensure != want:
            return [f"is {_kind(state)}, should be {_kind_name(want)}"]
        out = []
        if want == posix.PRESENT and _content_differs(item, item.key, state.size):
            out.append("content changed")
        owner, group, mode = item.get("owner"), item.get("group"), item.get("mode")
        uid, gid = ctx.uid(owner), ctx.gid(group)
        if uid is None:
            raise ResourceError(f"owner `{owner}` does not exist")
        if gid is None:
            raise ResourceError(f"group `{group}` does not exist")
        if state.uid != uid:
            out.append(f"owner {user_name(state.uid)} -> {owner}")
        if state.gid != gid:
            out.append(f"group {group_name(state.gid)} -> {group}")
        if state.mode != mode:
            out.append(f"mode {state.mode} -> {mode}")
        return out

    def decide(self, item: Item, status: Status, ctx: Context, triggered: bool = False) -> Decision:
        if status.error:
            return Decision(FAIL, status.error)
        state, diffs = status.state, status.differences
        ensure = item.get("ensure")
        if not diffs:
            return Decision(NONE, "absent" if ensure == "absent" else "unchanged")
        reason = ", ".join(diffs)
        if ensure == "absent":
            if state.ensure == posix.DIRECTORY and not item.get("force") and _non_empty(item.key):
                return Decision(
                    FAIL, "directory is not empty; set force = true to remove it with its contents"
                )
            return Decision(REMOVE, reason, REMOVED)
        if ensure == "directory":
            if state.ensure in (posix.PRESENT, posix.OTHER) and not item.get("force"):
                return Decision(
                    FAIL,
                    "a file exists where a directory is wanted (set force = true to replace it; the file is kept in the store)",
                )
            if state.ensure == posix.DIRECTORY:
                return Decision(UPDATE, reason, "Would have updated directory")
            return Decision(CREATE, "" if state.ensure == posix.ABSENT else reason, CREATED_DIR)
        if state.ensure == posix.DIRECTORY:
            return Decision(FAIL, "a directory exists where a file is wanted")
        if state.ensure == posix.OTHER:
            return Decision(
                FAIL, "a special file (device, socket or pipe) exists where a file is wanted"
            )
        if state.ensure == posix.ABSENT:
            if not os.path.isdir(os.path.dirname(item.key)):
                return (
                    Decision(CREATE, "", CREATED_FILE)
                    if _parent_declared(item, ctx)
                    else Decision(
                        FAIL,
                        f'parent directory does not exist: {abbreviate(os.path.dirname(item.key))} (declare it with ensure = "directory")',
                    )
                )
            return Decision(CREATE, "", CREATED_FILE)
        if state.ensure == posix.LINK:
            return Decision(UPDATE, f"replaces a symlink to {state.link_target}", UPDATED_FILE)
        return Decision(UPDATE, reason, UPDATED_FILE)

    def apply(self, item: Item, decision: Decision, ctx: Context) -> None:
        self._check_parents(item, ctx)
        ensure = item.get("ensure")
        before = ctx.before_change
        if ensure == "absent":
            posix.remove(item.key, force=bool(item.get("force")), before_change=before)
            return
        uid, gid = ctx.uid(item.get("owner")), ctx.gid(item.get("group"))
        if uid is None:
            raise ResourceError(f"owner `{item.get('owner')}` does not exist")
        if gid is None:
            raise ResourceError(f"group `{item.get('group')}` does not exist")
        mode = int(item.get("mode"), 8)
        if ensure == "directory":
            state = posix.status(item.key)
            if state.ensure in (posix.PRESENT, posix.OTHER) and item.get("force"):
                posix.replace_with_directory(item.key, before_change=before)
            posix.create_directory(item.key, uid=uid, gid=gid, mode=mode, before_change=before)
            return
        posix.store(
            item.key,
            content=_desired_bytes(item),
            source=item.get("source"),
            uid=uid,
            gid=gid,
            mode=mode,
            before_change=before,
        )

    def verify(self, item: Item, decision: Decision, ctx: Context) -> str | None:
        status = self.status(item, ctx)
        if status.error:
            return status.error
        return ", ".join(status.differences) or None

    def diff(self, item: Item, status: Status, ctx: Context) -> str | None:
        """A unified diff of the content change, for `sys plan --diff`."""
        if item.get("ensure") != "present" or status.error:
            return None
        if "content changed" not in status.differences and status.state.ensure == posix.PRESENT:
            return None
        desired = _desired_bytes(item)
        if desired is None:
            source = item.get("source")
            if source is None:
                return None
            try:
                with open(source, "rb") as f:
                    desired = f.read()
            except OSError:
                return None
        current = b""
        if status.state.ensure == posix.PRESENT:
            try:
                with open(item.key, "rb") as f:
                    current = f.read()
            except OSError:
                return None
        if b"\0" in current or b"\0" in desired:
            return "Binary files differ"
        label = abbreviate(item.key)
        lines = difflib.unified_diff(
            current.decode("utf-8", "replace").splitlines(keepends=True),
            desired.decode("utf-8", "replace").splitlines(keepends=True),
            fromfile=f"{label} (current)" if status.state.exists else "/dev/null",
            tofile=f"{label} (desired)",
        )
        text = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in lines
        )
        return text or None

    def _check_parents(self, item: Item, ctx: Context) -> None:
        """Never write through a symlink that was not there when the item was planned."""
        planned = ctx.planned.get(item.id)
        if planned is None:
            return
        before = dict(planned)
        for parent, target in posix.linked_parents(item.key, home()):
            if parent not in before:
                raise ResourceError(
                    f"parent directory {abbreviate(parent)} changed into a symlink since planning"
                )
            if before[parent] != target:
                raise ResourceError(
                    f"parent directory {abbreviate(parent)} is a symlink to {target} now, "
                    f"not to {before[parent]} as when planned"
                )

    # -- hooks ---------------------------------------------------------------
    def takes_over(self, item: Item, status: Any) -> bool:
        return isinstance(status, Status) and status.state.exists

    def plan_notes(self, item: Item, status: Any) -> list[str]:
        if not isinstance(status, Status):
            return []
        return [
            f"{abbreviate(p)} is a symlink to {target}; writing through it"
            for p, target in status.linked_parents
        ]

    def removal(self, item: Item) -> Decision:
        return Decision(
            REMOVE, "no longer declared; would be removed (or its original restored)", REMOVED
        )

    def predecessors(self, item: Item, manifest: Manifest) -> Iterator[str]:
        """The nearest declared ancestor, when it is a managed directory."""
        parent = os.path.dirname(item.key)
        while parent != "/" and parent:
            owner = manifest.get(f"{self.name}#{parent}")
            if owner is not None:
                if owner.get("ensure") == "directory":
                    yield owner.id
                return
            parent = os.path.dirname(parent)

    def managed_path(self, item: Item) -> str | None:
        return item.key

    def touched_paths(self, item: Item) -> list[str]:
        """The path and, for a directory, its missing parents, parents first;
        everything under a directory that `ensure = "absent"` removes."""
        path = item.key
        if item.get("ensure") == "directory":
            missing = []
            p = path
            while p and p != "/" and not os.path.lexists(p):
                missing.append(p)
                p = os.path.dirname(p)
            return list(reversed(missing)) or [path]
        if item.get("ensure") == "absent" and os.path.isdir(path) and not os.path.islink(path):
            out = []
            for root, dirs, files in os.walk(path):
                out.append(root)
                out.extend(os.path.join(root, f) for f in files)
                out.extend(
                    os.path.join(root, d) for d in dirs if os.path.islink(os.path.join(root, d))
                )
            return out
        return [path]

    def original(
        self, item: Item, prev: dict[str, Any], records: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        if item.get("ensure") == "absent" and prev["kind"] == "dir":
            # A whole directory syslua removes: keep every entry, parents first.
            return {"kind": "tree", "records": records}
        return prev  # "did not exist" too: what syslua then writes is never an original

    def removal_paths(self, item: Item) -> list[str]:
        return [item.key]

    def remove(
        self, item: Item, ctx: Context, original: dict[str, Any] | None, state: dict[str, Any]
    ) -> Removal:
        """Restore the original syslua took over; otherwise delete the file or
        symlink, and a directory only when empty. Then the parents syslua
        created for it, when they are empty."""
        message = self._remove_path(item, ctx, original)
        for parent in sorted(state.get("created_parents", ()), key=len, reverse=True):
            ctx.before_change(parent)
            try:
                os.rmdir(parent)  # only when empty: anything else in it stays
            except OSError:
                pass
        return Removal(message)

    def _remove_path(self, item: Item, ctx: Context, original: dict[str, Any] | None) -> str:
        path = item.key
        ctx.before_change(path)
        if original is not None and original.get("kind") == "absent":
            original = None  # nothing was there: remove what syslua made
        if original is not None and original.get("kind") == "tree":
            notes = [restore_path(r["path"], r, ctx.store) for r in original["records"]]
            left = [n for n in notes if n]
            return "; ".join(left) if left else "restored the original directory it took over"
        if original is not None:
            note = restore_path(path, original, ctx.store)
            return note or "restored the original it took over"
        state = posix.status(path)
        if not state.exists:
            return "already gone"
        if state.ensure == posix.DIRECTORY:
            try:
                os.rmdir(path)
            except OSError:
                return "left in place: the directory is not empty (it holds files syslua does not manage)"
            return "removed directory"
        os.unlink(path)
        return "removed"

    def snapshot_state(self, item: Item, rctx: RecordContext) -> dict[str, Any]:
        """The parents a directory item created; a file's content, as a blob."""
        state: dict[str, Any] = {}
        ensure = item.get("ensure")
        if ensure == "directory":
            created = [
                r["path"]
                for r in rctx.records
                if r.get("op") == "path" and r["path"] != item.key and r["prev"]["kind"] == "absent"
            ]
            if not created and not rctx.changed:
                created = rctx.previous.get("created_parents", [])
            if created:
                state["created_parents"] = created
        elif ensure == "present":
            if rctx.previous.get("blob") and not rctx.changed and rctx.declared_as_before():
                state["blob"] = rctx.previous["blob"]
            elif item.get("content") is not None:
                state["blob"] = rctx.store.put_bytes(
                    item.get("content").encode("utf-8", "surrogateescape")
                )
            elif item.get("source"):
                state["blob"] = rctx.store.put_file(item.get("source"))
            state["mode"] = item.get("mode")  # what was applied: a later change is an edit
        return state

    def materialise(self, item: Item, state: dict[str, Any], store: Any, snapshot: str) -> Item:
        """A copied `source` becomes the store's copy of the recorded content.
        A state that adopted a hand edit (`adopt`) gives its content and mode."""
        adopted = edits.adopted_blob(item, state)
        mode = state.get("mode") if item.get("ensure") == "present" else None
        if not item.get("source") and adopted is None and (not mode or mode == item.get("mode")):
            return item
        props = thaw(item.props)
        if item.get("source") or adopted is not None:
            blob = state.get("blob")
            if not blob:
                raise StateError(f"snapshot {snapshot} has no stored content for {item.key}")
            if not store.has(blob):
                raise StateError(
                    f"store object {blob[:12]} (content of {item.key} in snapshot {snapshot}) is missing; "
                    "it was deleted from the store by hand"
                )
            props.pop("content", None)
            props["source"] = str(store.path(blob))
        if mode:
            props["mode"] = mode
        return Item(
            item.type, item.key, freeze(props), item.parent, item.noop, item.health_check_only
        )

    def edited(self, item: Item, recorded: dict[str, Any], ctx: Context) -> str | None:
        return edits.edited(item, recorded, ctx.store)

    def edit_diff(self, item: Item, recorded: dict[str, Any], ctx: Context) -> str | None:
        return edits.edit_diff(item, recorded, ctx.store)

    def adopt(
        self, item: Item, recorded: dict[str, Any], live: dict[str, Any], store: Any
    ) -> dict[str, Any] | None:
        return edits.adopt(item, recorded, live)

    def take_back(
        self, item: Item, path: str, where: str, recorded: dict[str, Any] | None, store: Any
    ) -> TakeBack:
        return edits.take_back(item, path, where, recorded, store)

    def take_in(self, path: str, dest: str, source: str) -> TakeBack:
        return edits.take_in(path, dest, source)

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        try:
            if ctx.resolver is not None:
                item = ctx.resolver.resolve_item(item)
        except Unresolved:
            return None
        st = self.status(item, ctx)
        if st.error:
            return "error", st.error
        if not st.differences:
            return None
        ensure = item.get("ensure")
        if ensure != "absent" and st.state.ensure == posix.ABSENT:
            return "deleted", "deleted"
        if ensure == "absent":
            return "recreated", "exists again"
        if "content changed" in st.differences:
            return "edited", ", ".join(st.differences).replace("content changed", "content edited")
        if any(d.startswith("mode") for d in st.differences) and len(st.differences) == 1:
            return "mode", st.differences[0]
        return "changed", ", ".join(st.differences)


def _kind(state: posix.FileState) -> str:
    return {
        posix.PRESENT: "a file",
        posix.DIRECTORY: "a directory",
        posix.ABSENT: "absent",
        posix.LINK: "a symlink",
        posix.OTHER: "a special file",
    }[state.ensure]


def _kind_name(ensure: str) -> str:
    return "a directory" if ensure == "directory" else "a file"


def _non_empty(path: str) -> bool:
    try:
        return bool(os.listdir(path))
    except OSError:
        return False


def _parent_declared(item: Item, ctx: Context) -> bool:
    """The missing parent directory is itself declared, so it is created first."""
    if ctx.manifest is None:
        return False
    parent = ctx.manifest.get(f"file#{os.path.dirname(item.key)}")
    return parent is not None and parent.get("ensure") == "directory"
