"""The archive type: CCM's `archive`, downloaded, verified and extracted.

status reads the archive file at `name` (exists, SHA-256 when a checksum is
declared, owner, group) and whether `creates` exists; it never touches the
network. decide follows CCM's documentation: the archive is as desired when
`creates` (if set) exists, whatever the file; without `creates`, when the
file is there with the declared owner, group and checksum. When it is not, the
steps are CCM's too: download unless the file is there with the declared
checksum, extract into `extract_parent` when the archive was downloaded or
`creates` is missing, then remove the file when `cleanup` says so.

The provider (`archive_http`) does the work: the download is verified
before anything is written at `name` or extracted, the archive is unpacked
by `syslua.unpack` into a staging directory (no path escapes, bombs
refused), and every path it then writes is journaled first, so a failed
apply puts back what was there. The snapshot keeps what each extracted
path was before, so that removing the declaration restores it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from syslua.fsutil import sha256_file
from syslua.manifest.checks import (
    abs_path,
    archive_kind,
    archive_path,
    archive_url,
    boolean,
    choice,
    http_headers,
    name_or_id,
    nonempty_string,
    sha256,
    string,
)
from syslua.manifest.model import Item, Manifest
from syslua.manifest.schema import Finishing, Prop, TypeSchema, schema
from syslua.paths import abbreviate
from syslua.resources.base import (
    CREATE,
    FAIL,
    NONE,
    NOTHING,
    REMOVE,
    UPDATE,
    Applied,
    Context,
    Decision,
    Removal,
    ResourceError,
    SnapshotContext,
    group_name,
    user_name,
)
from syslua.resources.kind import (
    Drifts,
    Edited,
    Explained,
    Journaled,
    Kind,
    Ordered,
    Recorded,
    Removable,
)
from syslua.state.records import Original, PathAt, PathRecord, PathState
from syslua.state.store import Store

DOWNLOAD = "Would have downloaded"
EXTRACT = "Would have extracted"
CLEANUP = "Would have cleaned up"
REMOVED = "Would have removed"
OWNER = "Would have set the owner"


@dataclass(frozen=True, slots=True)
class Status:
    exists: bool  # a regular file is at `name`
    other: str | None  # what is at `name` when it is not a regular file
    checksum: str | None  # its SHA-256, read only when a checksum is declared
    uid: int | None
    gid: int | None
    creates_exists: bool


@dataclass(frozen=True, slots=True)
class Steps:
    """What converging a present archive takes, in CCM's order."""

    download: bool
    owner: bool  # the file is right but its owner or group is not: chown it
    extract: bool
    cleanup: bool


def read_status(item: Item) -> Status:
    name = item.key
    creates = item.get("creates")
    creates_exists = bool(creates) and os.path.lexists(creates)
    try:
        st = os.lstat(name)
    except (FileNotFoundError, NotADirectoryError):
        return Status(False, None, None, None, None, creates_exists)
    if not stat.S_ISREG(st.st_mode):
        other = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        if stat.S_ISLNK(st.st_mode):
            other = "a symlink"
        return Status(False, other, None, st.st_uid, st.st_gid, creates_exists)
    checksum = sha256_file(name) if item.get("checksum") else None
    return Status(True, None, checksum, st.st_uid, st.st_gid, creates_exists)


def owner_ids(item: Item, ctx: Context) -> tuple[int, int]:
    """The declared owner and group as ids; an unknown name is the item's failure."""
    uid = ctx.uid(item.get("owner"))
    if uid is None:
        raise ResourceError(f"owner {item.get('owner')} does not exist")
    gid = ctx.gid(item.get("group"))
    if gid is None:
        raise ResourceError(f"group {item.get('group')} does not exist")
    return uid, gid


def unstable(item: Item, st: Status, ctx: Context) -> str | None:
    """Why a present archive is not as declared (CCM's checks, in its order), or None."""
    name = item.key
    if st.other is not None:
        return f"{name} is {st.other}"
    creates = item.get("creates")
    if creates:
        # As CCM documents it: while `creates` exists, nothing is downloaded
        # or extracted, whatever the archive file.
        return None if st.creates_exists else f"creates path missing: {abbreviate(creates)}"
    if not item.get("cleanup") and not st.exists:
        return "archive file missing"
    if st.exists:
        uid, gid = owner_ids(item, ctx)
        if st.uid != uid:
            return f"owner is {user_name(st.uid or 0)}, not {item.get('owner')}"
        if st.gid != gid:
            return f"group is {group_name(st.gid or 0)}, not {item.get('group')}"
        if item.get("checksum") and st.checksum != item.get("checksum"):
            return "checksum differs"
    return None


def steps(item: Item, st: Status) -> Steps:
    checksum = item.get("checksum")
    download = not (st.exists and checksum and st.checksum == checksum)
    extract = bool(item.get("extract_parent")) and (download or not st.creates_exists)
    return Steps(
        download=download,
        owner=not download,  # the provider checks whether it really differs
        extract=extract,
        cleanup=bool(item.get("cleanup")),
    )


def _overlap(a: str, b: str) -> bool:
    """Is one of two directories the other, or inside it?"""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


# -- the declaration -----------------------------------------------------------


class _ArchiveSchema(TypeSchema):
    def finish(self, key: str, props: dict[str, Any], finishing: Finishing) -> None:
        """CCM's rules for an archive: a url of the same kind as the file, owner
        and group for one that is present, and what `cleanup` needs."""
        fail = finishing.fail
        if "url" not in props:
            raise fail("missing required property `url`")
        name_kind = archive_kind(key)
        url_kind = archive_kind(props["url"].split("?", 1)[0].split("#", 1)[0])
        if name_kind != url_kind:
            raise fail(
                f"url and name must be the same kind of archive: url is {url_kind}, "
                f"name is {name_kind}"
            )
        if props["ensure"] == "present":
            for prop in ("owner", "group"):
                if prop not in props:
                    raise fail(f"missing required property `{prop}`")
        if props["cleanup"]:
            if "extract_parent" not in props:
                raise fail("cleanup requires extract_parent to be set")
            if "creates" not in props:
                raise fail("cleanup requires creates to be set")
        if "password" in props and "username" not in props:
            raise fail("`password` needs a `username` (HTTP basic authentication)")


SCHEMA = schema(
    "archive",
    "name",
    [
        Prop(
            "name",
            archive_path,
            doc="absolute path where the archive is saved (.tar.gz, .tgz, .tar or .zip)",
        ),
        Prop(
            "ensure",
            choice("present", "absent"),
            doc="present: downloaded (and extracted); absent: the archive file removed",
        ),
        Prop("url", archive_url, doc="http://, https:// or file:// URL of the archive"),
        Prop(
            "checksum",
            sha256,
            doc="SHA-256 of the archive, verified before anything is extracted",
        ),
        Prop("extract_parent", abs_path, doc="directory the archive is extracted into"),
        Prop(
            "creates",
            abs_path,
            doc="when this path exists, nothing is downloaded or extracted",
        ),
        Prop(
            "cleanup",
            boolean,
            doc="remove the archive file once extracted (needs extract_parent and creates)",
        ),
        Prop("owner", name_or_id, doc="owner of the archive file and of what is extracted"),
        Prop("group", name_or_id, doc="group of the archive file and of what is extracted"),
        Prop("username", nonempty_string, doc="user for HTTP basic authentication"),
        Prop(
            "password",
            string,
            doc="password for HTTP basic authentication (a secret: never shown or stored)",
            secret="always",
        ),
        Prop(
            "headers",
            http_headers,
            doc="extra HTTP headers: { Name = value } (secret: never shown or stored)",
            secret="always",
        ),
        Prop("provider", choice("http"), doc="accepted for CCM compatibility; the only one"),
    ],
    defaults={"ensure": "present", "cleanup": False, "provider": "http"},
    doc="An archive downloaded and extracted (docs/resources/archive.md).",
    cls=_ArchiveSchema,
)


class ArchiveType(Kind[Status], Journaled, Removable, Recorded, Edited, Drifts, Ordered, Explained):
    name = "archive"
    schema = SCHEMA

    def label(self, item: Item) -> str:
        return item.key

    def status(self, item: Item, ctx: Context) -> Status:
        return read_status(item)

    def decide(self, item: Item, status: Status, ctx: Context, triggered: bool = False) -> Decision:
        if item.get("ensure") == "absent":
            if status.exists or status.other == "a symlink":
                return Decision(REMOVE, "the archive file exists", REMOVED)
            if status.other is not None:
                return Decision(FAIL, f"{item.key} is {status.other}, not an archive file")
            return Decision(NONE, "absent")
        why = unstable(item, status, ctx)
        if why is None:
            if item.get("creates") and status.creates_exists:
                return Decision(NONE, f"{abbreviate(item.get('creates'))} exists")
            return Decision(NONE, "downloaded")
        if status.other == "a directory":
            return Decision(FAIL, f"{item.key} is a directory, not an archive file")
        todo = steps(item, status)
        words, noop = [], []
        if todo.download:
            words.append("download")
            noop.append(DOWNLOAD)
        elif why.startswith(("owner ", "group ")):
            words.append("set the owner of the archive file")
            noop.append(OWNER)
        if todo.extract:
            words.append(f"extract into {abbreviate(item.get('extract_parent'))}")
            noop.append(EXTRACT)
        if todo.cleanup:
            words.append("remove the archive file")
            noop.append(CLEANUP)
        verb = "will " + (
            words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
        )
        action = CREATE if not status.exists and not status.creates_exists else UPDATE
        return Decision(action, why, ". ".join(noop), verb=verb)

    def apply(
        self, item: Item, decision: Decision, planned: Status | None, ctx: Context
    ) -> Applied:
        from syslua.resources import archive_http

        st = read_status(item)
        if item.get("ensure") == "absent":
            archive_http.remove_file(item.key, ctx)
            return NOTHING
        uid, gid = owner_ids(item, ctx)
        archive_http.converge(item, steps(item, st), uid, gid, ctx)
        return NOTHING

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        st = read_status(item)
        if item.get("ensure") == "absent":
            return None if not os.path.lexists(item.key) else "the archive file still exists"
        return unstable(item, st, ctx)

    # -- capabilities ----------------------------------------------------------
    def diff(self, item: Item, status: Any, ctx: Context) -> str | None:
        return None

    def notes(self, item: Item, status: Any) -> list[str]:
        if item.get("ensure") == "present" and not item.get("checksum"):
            return ["no checksum: the download is not verified"]
        return []

    def created_parents(self, item: Item, status: Any) -> list[tuple[str, str]]:
        """Missing directories the download and the extraction create on their way."""
        from syslua.resources.file_posix import missing_parents

        if not isinstance(status, Status) or item.get("ensure") != "present":
            return []
        if item.get("creates") and status.creates_exists:
            return []
        todo = steps(item, status)
        found = missing_parents(item.key) if todo.download else []
        if todo.extract:
            found += [
                p for p in missing_parents(item.get("extract_parent") + "/x") if p not in found
            ]
        return [(p, f"dir {abbreviate(p)}") for p in found]

    def takes_over(self, item: Item, status: Any) -> bool:
        return isinstance(status, Status) and status.exists and item.get("ensure") == "present"

    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        return Decision(
            REMOVE, "no longer declared; what it extracted is put back as it was", REMOVED
        )

    def provides(self, item: Item) -> tuple[str, ...]:
        return ()

    def requires(self, item: Item) -> tuple[str, ...]:
        return ()

    def predecessors(self, item: Item, manifest: Manifest) -> Iterator[str]:
        """The directories declared as `file` items that the archive file or
        the extraction goes into (the nearest one of each path): they are
        made first, with their declared owner and mode."""
        seen = set()
        for path in (os.path.dirname(item.key), item.get("extract_parent")):
            while path and path != "/":
                owner = manifest.get(f"file#{path}")
                if owner is not None:
                    if owner.get("ensure") == "directory" and owner.id not in seen:
                        seen.add(owner.id)
                        yield owner.id
                    break
                path = os.path.dirname(path)
        # Archives extracting into the same tree run one after the other (in
        # the order of their names), so that neither writes over the other
        # half-way and the outcome does not depend on timing.
        mine = item.get("extract_parent")
        if mine:
            for other in manifest.of_type(self.name):
                theirs = other.get("extract_parent")
                if other.key < item.key and theirs and _overlap(mine, theirs):
                    yield other.id

    def why_before(self, item: Item, before: str, manifest: Manifest) -> str:
        """A directory it goes into, or an archive extracting into the same tree."""
        other = manifest.get(before)
        if other is not None and other.type == self.name:
            return "same extraction tree"
        return "parent directory"

    def key_label(self, key: str) -> str:
        return key

    def managed_path(self, item: Item) -> str | None:
        return item.key

    def original(self, item: Item, prev: PathState, records: list[PathAt]) -> Original | None:
        return prev if prev.exists else None

    def touched_paths(self, item: Item, manifest: Manifest | None, planned: object) -> list[str]:
        """The archive file and its missing parents; what it extracts is
        recorded as it is written (nothing says what before the download)."""
        from syslua.resources.file_posix import missing_parents

        name = item.key
        if item.get("ensure") == "absent" or os.path.lexists(name):
            return [name]
        return [*missing_parents(name), name]

    def removal_paths(self, item: Item) -> list[str]:
        return [item.key]

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        from syslua.resources import archive_http

        return Removal(archive_http.put_back(item, ctx, original, state))

    def snapshot_state(self, item: Item, sctx: SnapshotContext) -> dict[str, Any]:
        """What each path the archive wrote was before (`records`, whose blobs
        the snapshot keeps) and what it wrote there (`wrote`), so that removing
        the declaration puts back exactly what it changed."""
        if not sctx.changed and sctx.declared_as_before():
            return {k: sctx.previous[k] for k in ("records", "wrote") if k in sctx.previous}
        from syslua.resources import archive_http

        earlier = {r["path"]: r for r in sctx.previous.get("records", ())}
        records = dict(earlier)
        for r in sctx.records:
            if isinstance(r, PathRecord) and r.path not in records:
                records[r.path] = PathAt(r.path, r.prev).to_json()
        ordered = sorted(records.values(), key=lambda r: r["path"])
        return {
            "records": ordered,
            "wrote": {r["path"]: archive_http.fingerprint(r["path"]) for r in ordered},
        }

    def materialise(
        self, item: Item, state: Mapping[str, Any], store: Store, snapshot: str
    ) -> Item:
        return item

    def blobs(self, state: Mapping[str, Any]) -> set[str]:
        """The previous content of each path it wrote (`records`)."""
        return {
            r["blob"] for r in state.get("records", ()) if isinstance(r, dict) and r.get("blob")
        }

    def trees(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    def edited(self, item: Item, recorded: Mapping[str, Any], ctx: Context) -> str | None:
        """Extracted files changed by hand since the last apply, which extracting
        again would overwrite. A removal never overwrites them (it leaves them,
        and says so), so only a declaration that is still there is asked about."""
        if ctx.manifest is not None and item.id not in ctx.manifest:
            return None
        from syslua.resources import archive_http

        changed = []
        for path, wrote in recorded.get("wrote", {}).items():
            if path == item.key or not wrote.startswith(("file:", "link:")):
                continue  # the download itself is checked by its checksum
            now = archive_http.fingerprint(path)
            if now not in (wrote, "absent"):
                changed.append(abbreviate(path))
        if not changed:
            return None
        shown = ", ".join(changed[:3]) + (
            f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        )
        return f"extracted {'file' if len(changed) == 1 else 'files'} changed: {shown}"

    def edit_diff(self, item: Item, recorded: Mapping[str, Any], ctx: Context) -> str | None:
        return None

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        try:
            st = read_status(item)
            if item.get("ensure") == "absent":
                return ("changed", "archive file exists") if st.exists else None
            why = unstable(item, st, ctx)
        except ResourceError as e:
            return "changed", str(e)
        return ("changed", why) if why else None
