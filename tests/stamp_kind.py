"""A toy resource kind, `stamp`, written as a new kind is (docs/architecture.md, "Adding a kind").

    stamp { name = "hello", text = "hi", dir = "~/stamps" }

writes `<dir>/<name>.stamp` holding `text`, and counts in `<dir>/applies`
how many stamps it wrote. It is one module: its schema (with a rule of its
own: `text` may not be empty unless `blank = true`), its core (label,
status, decide, apply, verify) and the capabilities it opts into:

- `Journaled`: the stamp file is a path; the engine journals it before it
  changes and keeps what was there before syslua (the original);
- `Removable`: a stamp no longer declared is deleted, or its original put back;
- `Undoes`: the counter is undone through a journal record of its own;
- `Recorded`: the snapshot keeps the text it wrote;
- `Drifts`: `sys status` says when the stamp was edited or deleted.

Nothing in syslua names it: a test registers it (`register_stamp`) and a Lua
config declares it, and the engine plans, applies, records, removes, rolls
back and reports drift through the kind's core and capabilities alone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from syslua.manifest.checks import boolean, file_path, nonempty_string, string
from syslua.manifest.model import Item, Manifest
from syslua.manifest.schema import Finishing, Prop, TypeSchema, schema
from syslua.resources import register, unregister
from syslua.resources.base import (
    CREATE,
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
    UndoContext,
)
from syslua.resources.kind import Drifts, Journaled, Kind, Recorded, Removable, Undoes
from syslua.state.records import KindRecord, Original, PathAt, PathState
from syslua.state.restore import restore_path
from syslua.state.store import Store


class _StampSchema(TypeSchema):
    def finish(self, key: str, props: dict[str, Any], finishing: Finishing) -> None:
        if not props["text"] and not props.get("blank"):
            raise finishing.fail("`text` is empty; set blank = true for an empty stamp")


SCHEMA = schema(
    "stamp",
    "name",
    [
        Prop("name", nonempty_string, doc="the stamp's name: <dir>/<name>.stamp"),
        Prop("text", string, required=True, doc="what the stamp says"),
        Prop("dir", file_path, required=True, doc="where the stamp goes"),
        Prop("blank", boolean, doc="allow an empty text"),
        Prop("fail", boolean, doc="fail when applied (for tests of rollback)"),
    ],
    doc="A stamp file (a toy kind, for tests).",
    cls=_StampSchema,
)


def _count(directory: str) -> int:
    try:
        return int(Path(directory, "applies").read_text())
    except FileNotFoundError:
        return 0


class StampKind(Kind[str | None], Journaled, Removable, Undoes, Recorded, Drifts):
    name = "stamp"
    schema = SCHEMA
    lock = threading.Lock()  # stamps run in parallel and share the counter

    def path(self, item: Item) -> str:
        return os.path.join(item.get("dir"), f"{item.key}.stamp")

    # -- the core ----------------------------------------------------------------
    def label(self, item: Item) -> str:
        return f"<{item.key}>"

    def status(self, item: Item, ctx: Context) -> str | None:
        try:
            return Path(self.path(item)).read_text()
        except FileNotFoundError:
            return None

    def decide(
        self, item: Item, status: str | None, ctx: Context, triggered: bool = False
    ) -> Decision:
        if status is None:
            return Decision(CREATE, "", "Would have stamped")
        if status != item.get("text"):
            return Decision(UPDATE, "text differs", "Would have restamped")
        return Decision(NONE, "stamped")

    def apply(self, item: Item, decision: Decision, planned: str | None, ctx: Context) -> Applied:
        if item.get("fail"):
            raise ResourceError(f"{item.key} was told to fail")
        with self.lock:
            counter = _count(item.get("dir"))
            ctx.note({"op": "count", "dir": item.get("dir"), "prev": counter})
            Path(item.get("dir"), "applies").write_text(str(counter + 1))
        ctx.before_change(self.path(item))
        Path(self.path(item)).write_text(item.get("text"))
        return NOTHING

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        return None if self.status(item, ctx) == item.get("text") else "the stamp is not there"

    # -- Journaled ---------------------------------------------------------------
    def key_label(self, key: str) -> str:
        return f"<{key}>"

    def managed_path(self, item: Item) -> str | None:
        return self.path(item)

    def touched_paths(self, item: Item, manifest: Manifest | None, planned: object) -> list[str]:
        return [self.path(item)]

    def original(self, item: Item, prev: PathState, records: list[PathAt]) -> Original | None:
        return prev if prev.exists else None

    def removal_paths(self, item: Item) -> list[str]:
        return [self.path(item)]

    # -- Removable ---------------------------------------------------------------
    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        return Decision(REMOVE, "no longer declared; its stamp goes")

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        path = self.path(item)
        ctx.before_change(path)
        if isinstance(original, PathState) and original.exists:
            assert ctx.store is not None
            restore_path(path, original, ctx.store)
            return Removal("restored the stamp it took over")
        os.unlink(path)
        return Removal(f"unstamped (it said {state['text']!r})")

    # -- Undoes ------------------------------------------------------------------
    def undo(self, record: KindRecord, uctx: UndoContext) -> None:
        Path(record["dir"], "applies").write_text(str(record["prev"]))
        uctx.report.restored.append(f"stamp counter in {record['dir']}")

    # -- Recorded ----------------------------------------------------------------
    def snapshot_state(self, item: Item, sctx: SnapshotContext) -> dict[str, Any]:
        return {"text": item.get("text")}

    def materialise(
        self, item: Item, state: Mapping[str, Any], store: Store, snapshot: str
    ) -> Item:
        return item

    def blobs(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    def trees(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    # -- Drifts ------------------------------------------------------------------
    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        now = self.status(item, ctx)
        if now is None:
            return "deleted", "stamp deleted"
        return None if now == item.get("text") else ("edited", "stamp edited")


def register_stamp() -> None:
    """Make `stamp` known: the registry entry is read off the kind (its name,
    its schema's key), so registering is all a new kind needs."""
    register(StampKind())


def unregister_stamp() -> None:
    unregister(StampKind.name)
