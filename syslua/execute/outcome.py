"""What an apply is asked (`ApplyOptions`), whom it tells (`Reporter`), and what it gives back (`ApplyOutcome`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from syslua.execute.item import FAILED, SKIPPED, ItemResult
from syslua.execute.stop import Stop
from syslua.plan.planner import Entry, Plan

if TYPE_CHECKING:
    from syslua.resources.base import UndoReport


# Why an apply refused before anything ran (`ApplyOutcome.refusal`; the
# `refused` field of `--json`, docs/json.md).
CANNOT_APPLY = "cannot_apply"
EDITED_PATHS = "edited_paths"


class Reporter(Protocol):
    def planned(self, plan: Plan) -> None: ...
    def started(self, ident: str, label: str) -> None: ...
    def finished(self, result: ItemResult) -> None: ...
    def rolling_back(self, interrupted: bool = False) -> None: ...
    # What undoing an item did (`Removed ~/a`, `Restored ~/b`): the `done`th of `total`.
    def undone(self, lines: list[str], done: int, total: int) -> None: ...
    def note(self, text: str) -> None: ...
    def output(self, ident: str, stream: str, line: str) -> None: ...
    def close(self) -> None: ...


@dataclass
class ApplyOptions:
    noop: bool = False
    health_check_only: bool = False
    jobs: int | None = None
    message: str | None = None
    kind: str = "apply"  # apply | rollback | destroy
    # Overwrite paths edited by hand since the last apply, keeping the edits in
    # a snapshot first; otherwise the apply refuses and changes nothing.
    keep_edits: bool = False
    # `--overwrite PATH...`: overwrite only these edited paths (absolute); the
    # other edits are left as they are, and the rest of the apply goes ahead.
    overwrite: frozenset[str] = frozenset()
    verbose: bool = False
    on_output: Callable[[str, str, str], None] | None = None
    # What a running item does now (item id, "command" or "output", text), for a live display.
    on_activity: Callable[[str, str, str], None] | None = None
    progress: Callable[[str], Callable[[int, int | None], None]] | None = None
    max_unpack: int | None = None  # bytes an archive may unpack to; None: the default
    allow_empty: bool = True  # False: refuse to remove every managed item (`sys apply`)
    # `--from-snapshot ID`: the snapshot removals are planned against when the
    # current one is corrupt or missing (otherwise the apply refuses to remove).
    from_snapshot: str | None = None
    stop: Stop = field(default_factory=Stop)  # Ctrl-C / SIGTERM, set by the CLI's handler
    # Told "run", then "record", as the apply reaches those phases (`-vv`'s timings).
    phase: Callable[[str], None] | None = None

    @property
    def read_only(self) -> bool:
        """A run that changes nothing: `--noop` (a plan run item by item) or `--health-check-only`."""
        return self.noop or self.health_check_only


@dataclass
class ApplyOutcome:
    plan: Plan | None
    results: list[ItemResult] = field(default_factory=list)
    ok: bool = True
    no_changes: bool = False
    rolled_back: bool = False
    undo: UndoReport | None = None
    restore_failed: bool = False
    snapshot_id: str | None = None
    env_line: str | None = None  # a generated output's note (the env scripts' first write)
    refused: list[Entry] = field(default_factory=list)  # edits it would have overwritten
    # The items the plan marked `!` as unable to be applied: the apply
    # refused before anything ran (with `refused`, the edits beside them).
    cannot_apply: list[Entry] = field(default_factory=list)
    kept_edits: str | None = None  # the snapshot that keeps the edits it overwrote
    kept: list[str] = field(default_factory=list)  # labels of those edits
    held: list[str] = field(default_factory=list)  # labels of edits left as they are (--overwrite)
    error: str | None = None  # why a run without failed items failed (recording it)
    interrupted: bool = False  # stopped by Ctrl-C or SIGTERM, then rolled back
    # Items that completed and whose effects the rollback could not undo.
    not_undone: list[str] = field(default_factory=list)

    @property
    def refusal(self) -> str | None:
        """Why the run refused before anything ran (`"cannot_apply"`: items the
        plan marked `!`; `"edited_paths"`: edits it would overwrite), or None."""
        if self.cannot_apply:
            return CANNOT_APPLY
        if self.refused:
            return EDITED_PATHS
        return None

    @property
    def failures(self) -> list[ItemResult]:
        return [r for r in self.results if r.status == FAILED]

    def counts(self) -> dict[str, int]:
        """What the run did, item by item as the plan counts them: a tree once
        (its members are not counted); the paths `--overwrite` left as they
        are as `held` (a tree's member too), never as a change or a skip."""
        out = {"changed": 0, "unchanged": 0, "failed": 0, "skipped": 0, "noop": 0}
        plan = self.plan
        members = plan.members if plan is not None else frozenset()
        held = plan.held if plan is not None else frozenset()
        for r in self.results:
            if r.id in held and r.status == SKIPPED:
                out["held"] = out.get("held", 0) + 1  # a path, as the plan counts it
            elif r.id not in members:
                out[r.status] = out.get(r.status, 0) + 1
        return out
