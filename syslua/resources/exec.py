"""The exec type: runs a command when its idempotency rules say so.

Decision table (seed exec-resource.md), first match wins:

| condition                          | action  |
|------------------------------------|---------|
| a subscribed item changed          | execute |
| `creates` file exists              | skip    |
| `onlyif` guard exits non-zero      | skip    |
| `unless` guard exits 0             | skip    |
| `refresh_only` and no trigger      | skip    |
| otherwise                          | execute |

Guards share the exec's cwd, environment, path and timeout, and they run in
noop too. After execution the item is in its desired state when the
`creates` file exists or the exit code is in `returns`; guards are not
re-evaluated then. A command that succeeded but left its `creates` path
missing gets a warning: it will run again on the next apply.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from syslua.manifest import shell_syntax
from syslua.manifest.checks import (
    abs_path,
    boolean,
    choice,
    duration,
    environment,
    escaped,
    nonempty_string,
    returns,
    search_path,
)
from syslua.manifest.model import Item, Manifest
from syslua.manifest.schema import Finishing, Prop, TypeSchema, schema
from syslua.paths import abbreviate
from syslua.resources.base import (
    FAIL,
    REMOVE,
    RUN,
    SKIP,
    Applied,
    Context,
    Decision,
    Removal,
    ResourceError,
    UndoContext,
)
from syslua.resources.kind import Irreversible, Kind, Ordered, Removable, Undoes
from syslua.resources.process import CannotStart, ProcessResult, program_name
from syslua.state.records import KindRecord, Original

EXECUTED = "Would have executed"
EXECUTED_SUBSCRIBE = "Would have executed via subscribe"


@dataclass(frozen=True, slots=True)
class Status:
    creates_satisfied: bool = False
    onlyif_satisfied: bool | None = None  # None: no guard, or not evaluated
    unless_satisfied: bool | None = None
    error: str | None = None


def run_options(item: Item) -> dict:  # type: ignore[type-arg]
    return {
        "provider": item.get("provider", "posix"),
        "cwd": item.get("cwd"),
        "environment": item.get("environment", ()),
        "path": item.get("path"),
        "timeout": item.get("timeout"),
    }


def journal_env(item: Item) -> dict:  # type: ignore[type-arg]
    """How the exec's commands run, as a journal record keeps it, so an undo
    (or a re-run) after a crash runs the same way."""
    o = run_options(item)
    return {
        "provider": o["provider"],
        "cwd": o["cwd"],
        "environment": list(o["environment"]),
        "path_env": o["path"],
        "timeout": o["timeout"],
    }


# -- the declaration -----------------------------------------------------------

# The properties that hold a command, in the order they are checked.
COMMANDS = ("command", "onlyif", "unless", "undo")


class _ExecSchema(TypeSchema):
    def finish(self, key: str, props: dict[str, Any], finishing: Finishing) -> None:
        props.setdefault("command", key)
        if props["provider"] == "posix":
            _check_no_shell(props, finishing)


def _check_no_shell(props: dict[str, Any], finishing: Finishing) -> None:
    """With the posix provider no shell reads the commands: shell syntax in
    one would reach the program as arguments, so it is an error here."""
    for name in COMMANDS:
        command = props.get(name)
        token = shell_syntax.find(command) if isinstance(command, str) else None
        if token is not None:
            raise finishing.fail(
                f"{name} uses shell syntax ('{escaped(token)}'); set provider = \"shell\"",
                hint="The posix provider runs the program directly, without a shell, "
                f"so '{escaped(token)}' would reach it as an argument. "
                'provider = "shell" runs the commands with /bin/sh -c; or quote the '
                "characters to pass them as they are.",
            )


SCHEMA = schema(
    "exec",
    "name",
    [
        Prop(
            "name",
            nonempty_string,
            doc="identifies the exec; also the command when `command` is not given",
        ),
        Prop("command", nonempty_string, doc="what to run (defaults to name)"),
        Prop("cwd", abs_path, doc="working directory"),
        Prop(
            "environment",
            environment,
            mergeable=True,
            doc='added to the environment: { "KEY=value" } or { KEY = "value" }',
            secret="sensitive",
        ),
        Prop("path", search_path, doc="PATH for finding the program and for the command"),
        Prop("returns", returns, doc="exit codes that count as success"),
        Prop(
            "timeout",
            duration,
            doc='e.g. 30, "500ms", "5m", "1h30m"; the command is killed on expiry',
        ),
        Prop("creates", abs_path, doc="when this path exists, the command is not run"),
        Prop("onlyif", nonempty_string, doc="run only if this guard command exits 0"),
        Prop("unless", nonempty_string, doc="run only if this guard command exits non-zero"),
        Prop("refresh_only", boolean, doc="run only when an item in subscribe changed"),
        Prop("logoutput", boolean, doc="show the command's output as it runs"),
        Prop(
            "provider",
            choice("posix", "shell"),
            doc="posix runs the program directly; shell runs /bin/sh -c command",
        ),
        Prop(
            "undo",
            nonempty_string,
            doc="a command that reverses this one (rollback and removal)",
        ),
        Prop("ensure", choice("present"), doc="accepted for CCM compatibility; no effect"),
    ],
    aliases={"refreshonly": "refresh_only"},
    defaults={"provider": "posix", "returns": [0], "refresh_only": False, "logoutput": False},
    doc="A command to run (docs/resources/exec.md).",
    cls=_ExecSchema,
)


class ExecType(Kind[Status], Removable, Undoes, Ordered, Irreversible):
    name = "exec"
    schema = SCHEMA

    def label(self, item: Item) -> str:
        return item.key

    def status(self, item: Item, ctx: Context) -> Status:
        creates = item.get("creates")
        if creates and os.path.lexists(creates):
            return Status(creates_satisfied=True)
        onlyif = unless = None
        try:
            if item.get("onlyif"):
                onlyif = self._guard(item, "onlyif", ctx)
            if item.get("unless"):
                unless = self._guard(item, "unless", ctx)
        except ResourceError as e:
            return Status(error=str(e))
        return Status(False, onlyif, unless)

    def _guard(self, item: Item, which: str, ctx: Context) -> bool:
        try:
            result = ctx.runner.run(item.get(which), **run_options(item))
        except CannotStart as e:
            raise ResourceError(f"{which} guard could not start: {e}") from e
        if result.timed_out:
            raise ResourceError(f"{which} guard timed out after {item.get('timeout'):g}s")
        return result.exit_code == 0

    def decide(self, item: Item, status: Status, ctx: Context, triggered: bool = False) -> Decision:
        if status.error:
            return Decision(FAIL, status.error)
        if triggered:
            return Decision(RUN, "a subscribed item changed", EXECUTED_SUBSCRIBE)
        if status.creates_satisfied:
            return Decision(SKIP, f"{item.get('creates')} exists")
        if status.onlyif_satisfied is False:
            return Decision(SKIP, "onlyif guard exited non-zero")
        if status.unless_satisfied is True:
            return Decision(SKIP, "unless guard exited 0")
        if item.get("refresh_only"):
            return Decision(SKIP, "refresh_only: runs only when a subscribed item changes")
        reason = f"{item.get('creates')} is missing" if item.get("creates") else ""
        return Decision(RUN, reason, EXECUTED)

    def apply(
        self, item: Item, decision: Decision, planned: Status | None, ctx: Context
    ) -> Applied:
        # Before it runs: a rollback runs the undo command, or names the
        # exec as not undone.
        ctx.note({"op": "exec", "undo": item.get("undo"), **journal_env(item)})
        show = ctx.on_output if item.get("logoutput") or ctx.verbose else None
        doing, ident, command = ctx.doing, item.id, item.get("command")

        def on_line(stream: str, line: str) -> None:
            if doing is not None and line.strip():
                doing("output", line)
            if show is not None:
                show(ident, stream, line)

        if doing is not None:
            doing("command", command)
        try:
            result = ctx.runner.run(
                command,
                on_line=on_line if show is not None or doing is not None else None,
                **run_options(item),
            )
        except CannotStart as e:
            raise ResourceError(str(e)) from e
        return Applied(output=result, warnings=_warnings(item))

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        creates = item.get("creates")
        if creates and os.path.lexists(creates):
            return None
        result = applied.output
        if result is None:
            return "the command did not run"
        returns = list(
            item.get("returns") or (0,)
        )  # an empty list means the default, as in the seed
        if result.timed_out:
            return f"timed out after {item.get('timeout')}s" + _tail(result)
        if result.exit_code in returns:
            return None
        expected = ", ".join(str(r) for r in returns)
        return f"exit code {result.exit_code} (expected {expected})" + _tail(result)

    # -- capabilities ----------------------------------------------------------
    def irreversible(self, item: Item, decision: Decision) -> bool:
        return decision.action == RUN and not item.get("undo")

    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        if item.get("undo"):
            return Decision(REMOVE, "no longer declared; its undo command runs")
        return Decision(REMOVE, "no longer declared; nothing to undo")

    def provides(self, item: Item) -> tuple[str, ...]:
        return ()

    def requires(self, item: Item) -> tuple[str, ...]:
        """The package whose `bin` it runs, if any."""
        program = program_name(item.get("command", item.key), item.get("provider", "posix"))
        return (f"bin:{program}",) if program else ()

    def predecessors(self, item: Item, manifest: Manifest) -> tuple[str, ...]:
        return ()

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        undo = item.get("undo")
        if not undo:
            return Removal("no longer declared; nothing to undo (no undo command)", changed=False)
        # Rolling back this removal means running the exec's own command again.
        ctx.note({"op": "exec", "undo": item.get("command"), **journal_env(item)})
        run = ctx.runner.run(undo, **run_options(item))
        if run.exit_code != 0 or run.timed_out:
            return Removal(f"undo command failed: {run.describe()}", failed=True, output=run)
        return Removal("undone (undo command ran)", output=run)

    def undo(self, record: KindRecord, uctx: UndoContext) -> None:
        """Run the recorded undo command; without one, the exec is reported as not undone."""
        report = uctx.report
        undo = record.get("undo")
        if not undo:
            report.not_undone.append(
                f"{record.item}: not undone (no undo command; execs are irreversible without one)"
            )
            return
        try:
            result = uctx.runner.run(
                undo,
                provider=record.get("provider", "posix"),
                cwd=record.get("cwd"),
                environment=record.get("environment", ()),
                path=record.get("path_env"),
                timeout=record.get("timeout"),
            )
        except CannotStart as e:
            report.failed.append(f"{record.item}: undo command could not start: {e}")
            return
        if result.exit_code != 0 or result.timed_out:
            report.failed.append(f"{record.item}: undo command failed: {result.describe()}")
        else:
            report.restored.append(record.item)


def _warnings(item: Item) -> tuple[str, ...]:
    """A command that succeeded without creating its `creates` path will run
    again on every apply: say so, since its exit code hid it."""
    creates = item.get("creates")
    if creates and not os.path.lexists(creates):
        return (f"exec {item.key} ran but did not create {abbreviate(creates)}; it will run again",)
    return ()


def _tail(result: ProcessResult) -> str:
    tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-10:]
    return ("\n" + "\n".join("    " + line for line in tail)) if tail else ""
