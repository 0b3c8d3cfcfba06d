"""Bugs are not hidden: an unexpected exception is reported as one, with its traceback.

Expected errors (configuration, usage, lock) keep their one-line messages and
exit codes; these tests inject a bug, since the shipped code has none to find.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from syslua import cli
from syslua.execute import scheduler
from syslua.execute.item import FAILED, run_item
from syslua.manifest.checks import nonempty_string
from syslua.manifest.model import Item, Manifest, freeze
from syslua.manifest.schema import Prop, schema
from syslua.plan.dag import Dag
from syslua.plan.planner import plan_removals
from syslua.resources import register, unregister
from syslua.resources.base import CREATE, Applied, Context, Decision
from syslua.resources.kind import Kind
from syslua.resources.process import Runner


def test_cli_reports_an_unexpected_exception_as_internal_error(sysenv, monkeypatch, capsys):
    from syslua.cli.commands import plan

    def broken(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("the planner fell over")

    monkeypatch.setattr(plan, "run", broken)
    monkeypatch.setattr(sys, "argv", ["sys", "plan"])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 70
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == "Internal error: RuntimeError: the planner fell over"
    assert "Traceback (most recent call last):" in err and "in broken" in err
    assert lines[-1].startswith("This is a bug in syslua. Please report it")


def test_expected_errors_keep_their_message_and_code(sysenv, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["sys", "plan", "missing.lua"])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Internal error" not in err and "Traceback" not in err


class BrokenType(Kind[None]):
    name = "broken"
    schema = schema("broken", "name", [Prop("name", nonempty_string)])

    def label(self, item: Item) -> str:
        return item.key

    def status(self, item: Item, ctx: Context) -> None:
        return None

    def decide(self, item: Item, status: Any, ctx: Context, triggered: bool = False) -> Decision:
        return Decision(CREATE, "")

    def apply(self, item: Item, decision: Decision, planned: None, ctx: Context) -> Applied:
        raise KeyError("a bug in apply")

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        return None


def test_a_worker_bug_fails_the_item_with_its_traceback():
    register(BrokenType())
    try:
        item = Item("broken", "x", freeze({}))
        manifest = Manifest(items=(item,))
        ctx = Context(runner=Runner(), noop=False, manifest=manifest)
        [result] = scheduler.execute(
            Dag.from_manifest(manifest), manifest, lambda ident: run_item(item, ctx, None)
        )
    finally:
        unregister("broken")
    assert result.status == FAILED and result.mutated
    first, *rest = result.message.splitlines()
    assert first == "internal error: KeyError: 'a bug in apply' (a bug in syslua; please report it)"
    assert rest[0] == "Traceback (most recent call last):" and "in apply" in result.message


def test_removal_order_survives_a_cycle_in_the_previous_manifest():
    """Only a cycle falls back to id order; the old manifest's cycle is no reason to fail."""
    a = Item("exec", "a", freeze({"command": "true", "depends_on": ("exec#b",)}))
    b = Item("exec", "b", freeze({"command": "true", "depends_on": ("exec#a",)}))
    gone = plan_removals(Manifest(items=()), Manifest(items=(a, b)))
    assert [e.id for e in gone] == ["exec#b", "exec#a"]
