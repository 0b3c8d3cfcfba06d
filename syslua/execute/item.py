"""Run one item: decide, act, verify, then its health checks.

Steps for an item:
1. Read its status and decide (a subscriber is triggered when any of its
   targets changed earlier in this run, or would have, in noop). A kind
   that can check cheaply that the status planning read still holds
   (`Rechecked`: a file's one `lstat`) reuses it: the item is read once.
2. Unless noop, act through the kind's provider, recording undo information
   in the journal first; hand what it did (`Applied`) to `verify`, which
   reads status again, and fail with "desired state not reached: <reason>"
   if the item did not converge; the warnings of a converged item go into
   its result.
3. Run its health checks (WARNING is reported; CRITICAL or UNKNOWN fails).

Outcomes are data (`ItemResult`), never exceptions: the scheduler decides what
a failure means for the rest of the run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from syslua.execute.health import CheckResult, run_checks
from syslua.manifest.model import Item
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.base import (
    CREATE,
    DANGLING,
    FAIL,
    REMOVE,
    RUN,
    UPDATE,
    Applied,
    Context,
    Decision,
    Journaling,
    ResourceError,
)
from syslua.resources.kind import Kind, Rechecked
from syslua.resources.process import ProcessResult

CHANGED, UNCHANGED, FAILED, SKIPPED, NOOP = "changed", "unchanged", "failed", "skipped", "noop"
PAST = {CREATE: "created", UPDATE: "updated", REMOVE: "removed", RUN: "executed"}


@dataclass(slots=True)
class ItemResult:
    id: str
    type: str
    label: str
    status: str
    message: str
    action: str = ""
    duration: float = 0.0
    # Tuples when empty, as most are: no two lists per item of a 10,000-item apply.
    checks: Sequence[CheckResult] = ()
    output: ProcessResult | None = None
    warnings: Sequence[str] = ()
    mutated: bool = False  # whether it may have changed the machine (so it needs undoing)
    applied: Applied | None = None  # what its apply did, when it ran to the end

    @property
    def ok(self) -> bool:
        return self.status != FAILED

    def to_event(self) -> dict[str, Any]:
        event: dict[str, Any] = {
            "event": "item",
            "id": self.id,
            "type": self.type,
            "label": self.label,
            "status": self.status,
            "action": self.action,
            "message": self.message,
            "duration": round(self.duration, 3),
        }
        if self.checks:
            event["health_checks"] = [
                {"name": c.name, "state": c.state, "output": c.output, "tries": c.tries}
                for c in self.checks
            ]
        if self.output is not None:
            event["exit_code"] = self.output.exit_code
            event["stdout_tail"] = self.output.stdout
            event["stderr_tail"] = self.output.stderr
        if self.warnings:
            event["warnings"] = list(self.warnings)
        return event


def run_item(
    item: Item,
    ctx: Context,
    journal: Journaling | None,
    *,
    planned: Any = None,
    health_check_only: bool = False,
) -> ItemResult:
    """Run one item. `planned`: what its kind's `status` read while planning
    (handed to its `apply`); `journal`: where its changes are recorded first."""
    start = time.monotonic()
    kind = get_type(item.type)
    label = kind.label(item)

    def result(status: str, message: str, action: str = "", **kw: Any) -> ItemResult:
        return ItemResult(
            item.id, item.type, label, status, message, action, time.monotonic() - start, **kw
        )

    checks_spec = item.get("health_checks", ())
    if health_check_only or item.health_check_only:
        checks = run_checks(checks_spec, ctx.runner)
        return _with_checks(
            result(UNCHANGED, "health checks only" if checks else "no health checks"), checks
        )

    try:
        resolved = ctx.resolver.resolve_item(item) if ctx.resolver is not None else item
        status = _status(kind, resolved, ctx, planned if resolved is item else None)
        item = resolved
        noop = ctx.noop or item.noop
        triggered = ctx.outcomes.triggered(item.get("subscribe", ()), noop)
        decision = kind.decide(item, status, ctx, triggered)
    except ResourceError as e:
        decision = Decision(FAIL, str(e))
    if decision.action == FAIL:
        ctx.outcomes.mark_failed(item.id)
        return result(FAILED, decision.reason, FAIL)
    if not decision.changes:
        outcome = result(UNCHANGED, decision.message or "unchanged", decision.action)
        return (
            _with_checks(outcome, run_checks(checks_spec, ctx.runner))
            if checks_spec and not ctx.noop
            else outcome
        )
    if ctx.noop or item.noop:
        # An item of a noop child would have changed: it triggers only
        # subscribers that are noop themselves.
        ctx.outcomes.mark_changed(item.id, noop=not ctx.noop)
        return result(NOOP, decision.message, decision.action)

    try:
        applied = kind.apply(item, decision, planned, ctx.for_item(item, journal))
    except ResourceError as e:
        ctx.outcomes.mark_failed(item.id)
        return result(FAILED, str(e), decision.action, mutated=True)
    except OSError as e:
        ctx.outcomes.mark_failed(item.id)
        return result(
            FAILED, f"{e.strerror or e}: {e.filename or item.key}", decision.action, mutated=True
        )
    problem = kind.verify(item, decision, applied, ctx)
    if problem:
        ctx.outcomes.mark_failed(item.id)
        return result(
            FAILED,
            f"desired state not reached: {problem}",
            decision.action,
            mutated=True,
            output=applied.output,
        )
    ctx.outcomes.mark_changed(item.id)
    outcome = result(
        CHANGED,
        done(decision),
        decision.action,
        mutated=True,
        output=applied.output,
        warnings=list(applied.warnings) if applied.warnings else (),
        applied=applied,
    )
    return _with_checks(outcome, run_checks(checks_spec, ctx.runner)) if checks_spec else outcome


def _status(kind: Kind[Any], item: Item, ctx: Context, planned: Any) -> Any:
    """The item's status now: what planning read, when its kind finds
    cheaply that it still holds (`Rechecked`), else read again."""
    if planned is not None and not ctx.noop:
        rechecked = capability(kind, Rechecked)
        again = rechecked.recheck(item, planned, ctx) if rechecked is not None else None
        if again is not None:
            return again
    return kind.status(item, ctx)


def done(decision: Decision) -> str:
    """What a change did, as reports say it: `updated (content changed)`, or
    the reason alone when it says it all (`"more" -> "bat"`)."""
    if decision.verb == "":
        return decision.reason
    past = getattr(decision, "past", None)  # a kind's own words (`restarted`)
    if past:
        return f"{past} ({decision.reason})" if decision.reason else past
    message = PAST.get(decision.action, decision.action)
    if decision.reason and (decision.action != CREATE or decision.reason.startswith(DANGLING)):
        message += f" ({decision.reason})"
    return message


def value_result(
    ident: str, type_: str, label: str, decision: Decision, *, noop: bool, health_check_only: bool
) -> ItemResult:
    """The outcome of an item outside the DAG (an env variable), which is
    compared, never run: its change is made when the generated outputs are
    written, and undone with them."""
    if health_check_only:
        return ItemResult(ident, type_, label, UNCHANGED, "no health checks", decision.action)
    if not decision.changes:
        return ItemResult(ident, type_, label, UNCHANGED, decision.message, decision.action)
    if noop:
        return ItemResult(ident, type_, label, NOOP, decision.message, decision.action)
    return ItemResult(ident, type_, label, CHANGED, done(decision), decision.action)


def _with_checks(outcome: ItemResult, checks: list[CheckResult]) -> ItemResult:
    outcome.checks = checks
    bad = [c for c in checks if c.failed]
    warned = [c.describe() for c in checks if c.state == "WARNING"]
    if warned:
        outcome.warnings = [*outcome.warnings, *warned]
    if bad:
        outcome.status = FAILED
        outcome.message = "; ".join(c.describe() for c in bad)
    return outcome


def skipped(item: Item, reason: str) -> ItemResult:
    rtype = get_type(item.type)
    return ItemResult(item.id, item.type, rtype.label(item), SKIPPED, reason)
