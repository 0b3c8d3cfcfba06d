"""A resource type defined here, in the test, and registered from it, never shipped.

It shows that a new kind is one module: the engine plans, applies, records,
removes, rolls back and reports drift for it through the registry and the
`ResourceType` hooks alone, with no change to execute/, plan/, state/ or cli/.

The toy `stamp` type writes `<dir>/<key>.stamp` with its `text`, and keeps a
counter file `<dir>/applies` of how many times it wrote; the counter is
undone through the type's own journal record (`Context.note` + `undo`), the
stamp through the path hooks (`managed_path`, `touched_paths`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import tree

from syslua.cli.commands import rollback
from syslua.cli.output import Terminal
from syslua.execute.apply import ApplyOptions, apply_manifest
from syslua.execute.drift import drift
from syslua.manifest.model import Item, Manifest, freeze
from syslua.manifest.resolve import resolve
from syslua.paths import Paths
from syslua.plan.planner import make_plan
from syslua.resources import get, has, register, unregister
from syslua.resources.base import (
    CREATE,
    NONE,
    REMOVE,
    UPDATE,
    Context,
    Decision,
    RecordContext,
    Removal,
    ResourceError,
    ResourceType,
    UndoContext,
)
from syslua.resources.process import Runner
from syslua.state.restore import restore_path
from syslua.state.snapshots import Snapshots


def _count(directory: str) -> int:
    try:
        return int(Path(directory, "applies").read_text())
    except FileNotFoundError:
        return 0


class StampType(ResourceType):
    name = "stamp"
    lock = threading.Lock()

    def _path(self, item: Item) -> str:
        return os.path.join(item.get("dir"), f"{item.key}.stamp")

    def label(self, item: Item) -> str:
        return f"<{item.key}>"

    def key_label(self, key: str) -> str:
        return f"<{key}>"

    def status(self, item: Item, ctx: Context) -> str | None:
        try:
            return Path(self._path(item)).read_text()
        except FileNotFoundError:
            return None

    def decide(self, item: Item, status: Any, ctx: Context, triggered: bool = False) -> Decision:
        if status is None:
            return Decision(CREATE, "", "Would have stamped")
        if status != item.get("text"):
            return Decision(UPDATE, "text differs", "Would have restamped")
        return Decision(NONE, "stamped")

    def apply(self, item: Item, decision: Decision, ctx: Context) -> None:
        if item.get("fail"):
            raise ResourceError(f"{item.key} was told to fail")
        with self.lock:  # stamps run in parallel and share the counter
            counter = _count(item.get("dir"))
            if ctx.note is not None:
                ctx.note({"op": "count", "dir": item.get("dir"), "prev": counter})
            Path(item.get("dir"), "applies").write_text(str(counter + 1))
        ctx.before_change(self._path(item))
        Path(self._path(item)).write_text(item.get("text"))

    def verify(self, item: Item, decision: Decision, ctx: Context) -> str | None:
        return None if self.status(item, ctx) == item.get("text") else "the stamp is not there"

    def removal(self, item: Item) -> Decision:
        return Decision(REMOVE, "no longer declared; its stamp goes")

    def managed_path(self, item: Item) -> str | None:
        return self._path(item)

    def touched_paths(self, item: Item) -> list[str]:
        return [self._path(item)]

    def removal_paths(self, item: Item) -> list[str]:
        return [self._path(item)]

    def remove(
        self, item: Item, ctx: Context, original: dict[str, Any] | None, state: dict[str, Any]
    ) -> Removal:
        path = self._path(item)
        ctx.before_change(path)
        if original is not None and original["kind"] != "absent":
            restore_path(path, original, ctx.store)
            return Removal("restored the stamp it took over")
        os.unlink(path)
        return Removal(f"unstamped (it said {state['text']!r})")

    def undo(self, record: dict[str, Any], uctx: UndoContext) -> None:
        Path(record["dir"], "applies").write_text(str(record["prev"]))
        uctx.report.restored.append(f"stamp counter in {record['dir']}")

    def snapshot_state(self, item: Item, rctx: RecordContext) -> dict[str, Any]:
        return {"text": item.get("text")}

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        now = self.status(item, ctx)
        if now is None:
            return "deleted", "stamp deleted"
        return None if now == item.get("text") else ("edited", "stamp edited")


@pytest.fixture
def stamp(sysenv):  # type: ignore[no-untyped-def]
    register(StampType())
    yield sysenv
    unregister("stamp")


class Recorder:
    """A reporter that keeps the results and notes the engine gives it."""

    def __init__(self) -> None:
        self.results: list[Any] = []
        self.notes: list[str] = []

    def planned(self, plan: Any) -> None: ...
    def started(self, ident: str, label: str) -> None: ...
    def rolling_back(self, interrupted: bool = False) -> None: ...
    def output(self, ident: str, stream: str, line: str) -> None: ...
    def close(self) -> None: ...

    def finished(self, result: Any) -> None:
        self.results.append(result)

    def note(self, text: str) -> None:
        self.notes.append(text)


def manifest(sysenv, stamps: dict[str, str], lua: str = "", *, failing: bool = False) -> Manifest:  # type: ignore[no-untyped-def]
    """Real Lua for the shipped types, plus stamp items made here; `failing`
    adds a stamp that fails once every other stamp is done."""
    config = sysenv.write("sys.lua", lua)
    base = resolve(config)
    d = str(sysenv.home)
    extra = [
        Item("stamp", key, freeze({"dir": d, "text": text, "depends_on": ()}))
        for key, text in stamps.items()
    ]
    if failing:
        others = tuple(f"stamp#{key}" for key in stamps)
        extra.append(
            Item("stamp", "zz", freeze({"dir": d, "text": "-", "depends_on": others, "fail": True}))
        )
    return Manifest(
        items=tuple(sorted((*base.items, *extra), key=lambda i: i.id)), config=str(config)
    )


def run_apply(m: Manifest):  # type: ignore[no-untyped-def]
    recorder = Recorder()
    outcome = apply_manifest(m, Paths.from_env(), ApplyOptions(), recorder, config=m.config)
    return outcome, recorder.results


def test_registered_from_the_test_only(stamp):
    assert has("stamp") and get("stamp").name == "stamp"


def test_plans_with_its_labels_and_decisions(stamp):
    m = manifest(stamp, {"a": "hello"})
    ctx = Context(runner=Runner(), noop=True)
    plan = make_plan(m, ctx)
    [entry] = [e for e in plan.entries if e.type == "stamp"]
    assert (entry.label, entry.decision.action, entry.decision.message) == (
        "<a>",
        CREATE,
        "Would have stamped",
    )
    assert plan.waves == [["stamp#a"]]
    assert not (stamp.home / "a.stamp").exists()  # planning changes nothing


def test_applies_records_and_removes_restoring_what_it_took_over(stamp):
    (stamp.home / "b.stamp").write_text("hand-made\n")
    outcome, results = run_apply(manifest(stamp, {"a": "one", "b": "two"}))
    assert outcome.ok, results
    assert (stamp.home / "a.stamp").read_text() == "one"
    assert (stamp.home / "b.stamp").read_text() == "two"
    snap = Snapshots(Paths.from_env()).load(outcome.snapshot_id)
    assert snap.items["stamp#a"]["text"] == "one" and snap.items["stamp#a"]["status"] == "changed"
    assert snap.originals["stamp#b"]["kind"] == "file"  # taken over: kept before it was stamped

    outcome, results = run_apply(manifest(stamp, {}))
    assert outcome.ok, results
    by_id = {r.id: r for r in results}
    assert (
        by_id["stamp#a"].message == "unstamped (it said 'one')" and by_id["stamp#a"].label == "<a>"
    )
    assert by_id["stamp#b"].message == "restored the stamp it took over"
    assert not (stamp.home / "a.stamp").exists()
    assert (stamp.home / "b.stamp").read_text() == "hand-made\n"


def test_failed_apply_rolls_it_back_through_its_hooks(stamp):
    outcome, _ = run_apply(manifest(stamp, {"a": "one"}))
    assert outcome.ok and _count(str(stamp.home)) == 1
    before = tree(stamp.home)
    outcome, results = run_apply(
        manifest(
            stamp,
            {"a": "two"},
            'file { path = "~/f", content = "x", mode = "0600", owner = sys.user.name, group = sys.user.group }',
            failing=True,
        )
    )
    assert not outcome.ok and outcome.rolled_back and outcome.undo is not None and outcome.undo.ok
    status = {r.id: r.status for r in results}
    assert status["stamp#a"] == "changed" and status["stamp#zz"] == "failed"
    assert tree(stamp.home) == before  # the stamp's text and its counter are back
    assert f"stamp counter in {stamp.home}" in outcome.undo.restored


def test_rollback_and_drift(stamp):
    first, _ = run_apply(manifest(stamp, {"a": "one"}))
    second, _ = run_apply(manifest(stamp, {"a": "two"}))
    assert first.ok and second.ok
    (stamp.home / "a.stamp").write_text("edited by hand")
    snap_id, found = drift(Paths.from_env())
    assert snap_id == second.snapshot_id
    assert [(d["id"], d["kind"], d["label"]) for d in found] == [("stamp#a", "edited", "<a>")]

    assert rollback.run(Terminal(), first.snapshot_id, noop=False, jobs=None, wait=False) == 0
    assert (stamp.home / "a.stamp").read_text() == "one"
    assert drift(Paths.from_env())[1] == []
