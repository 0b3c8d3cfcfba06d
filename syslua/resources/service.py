"""The service kind: a unit of the service manager, running or stopped,
enabled or not (CCM's `service`; docs/resources/service.md).

Decision table (CCM's design, checked in this order), where *watched* means
that an item it subscribes to, or the file of its unit declared in the same
config, changed in this apply:

| ensure  | now     | watched | action  |
|---------|---------|---------|---------|
| running | stopped | any     | start   |
| running | running | yes     | restart |
| running | running | no      | none    |
| stopped | running | any     | stop    |
| stopped | stopped | any     | none    |

then, independently:

| enable        | now      | action  |
|---------------|----------|---------|
| true          | disabled | enable  |
| false         | enabled  | disable |
| true / false  | as wanted| none    |
| not given     | any      | none    |

A first apply that starts a service does not also restart it, and a
service declared stopped is never restarted. A unit that does not exist yet
is not an error when the config declares its file (it is written first).

The manager reads changed unit files again (`daemon-reload`) before a
change of a service, when a unit file changed in this apply since it last
read them (or, the first time in a run, when the manager says one changed
on disk): once per apply when, as usual, the unit files come first. Each
change is journaled first (the state found: active, enabled, and the paths it
watches); a failed apply puts back both states, reloads the manager when a
unit file was put back, and restarts a service that was running when what
it watches was put back. A service that leaves the config goes back to the
state syslua found it in when it first managed it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from syslua.manifest.checks import LUA_TYPES, boolean, choice, nonempty_string
from syslua.manifest.model import Item, Manifest
from syslua.manifest.schema import Invalid, Prop, schema
from syslua.paths import abbreviate, home
from syslua.resources import service_systemd as systemd
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
    UndoContext,
)
from syslua.resources.kind import Drifts, Kind, Ordered, Recorded, Removable, Undoes
from syslua.state.records import KindRecord, Original

if TYPE_CHECKING:
    from syslua.state.store import Store

# Systemd's unit names: letters, digits and `:-_.\@` (an instance after `@`);
# CCM adds `+` and `~`. Nothing a shell or systemctl would read as more.
_NAME = r"^[A-Za-z0-9:_.\\@+~-]+$"
OPS_PAST = {
    "start": "started",
    "stop": "stopped",
    "restart": "restarted",
    "enable": "enabled",
    "disable": "disabled",
}


def service_name(v: Any, ctx: Any) -> str:
    import re

    name = nonempty_string(v, ctx)
    if not re.match(_NAME, name) or name.startswith("-"):
        raise Invalid(
            f"{name!r} is not a unit name (letters, digits and :-_.@\\+~; e.g. nginx or "
            "syncthing.service)"
        )
    return name


SCHEMA = schema(
    "service",
    "name",
    [
        Prop("name", service_name, doc="the unit: nginx (nginx.service), or with its suffix"),
        Prop("ensure", choice("running", "stopped"), doc="running (the default) or stopped"),
        Prop(
            "enable",
            boolean,
            doc="start it at boot (true) or not (false); not given: left as it is",
        ),
        Prop(
            "scope",
            choice("system", "user"),
            doc="the system's manager (default, needs root) or your own (systemctl --user)",
        ),
        Prop("provider", choice("systemd"), doc="the service manager (only systemd)"),
    ],
    defaults={"ensure": "running", "scope": "system", "provider": "systemd"},
    doc="A service of the service manager: running or stopped, enabled or not (docs/resources/service.md).",
)


LUA_TYPES[service_name] = "string"


class Status:
    """What the manager says of the service now, or why it cannot say."""

    __slots__ = ("state", "error", "coming")

    def __init__(
        self, state: systemd.State | None, error: str | None = None, coming: str | None = None
    ) -> None:
        self.state = state
        self.error = error
        self.coming = coming  # a unit that does not exist yet: its declared file


class ServiceDecision(Decision):
    """A decision that knows the systemctl verbs it runs, in order."""

    __slots__ = ("ops",)
    _names = (*Decision._names, "ops")
    ops: tuple[str, ...]

    def __init__(
        self,
        action: str,
        reason: str,
        noop_message: str | None = None,
        verb: str | None = None,
        ops: tuple[str, ...] = (),
    ) -> None:
        super().__init__(action, reason, noop_message, verb)
        object.__setattr__(self, "ops", ops)

    @property
    def past(self) -> str:
        return _past(self.ops)


class ServiceType(Kind[Status], Removable, Undoes, Recorded, Drifts, Ordered):
    name = "service"
    schema = SCHEMA

    def label(self, item: Item) -> str:
        return f"{item.key} (user)" if item.get("scope") == "user" else item.key

    # -- status and decision ---------------------------------------------------
    def status(self, item: Item, ctx: Context) -> Status:
        scope = item.get("scope")
        try:
            state = systemd.status(ctx.runner, item.key, scope)
        except ResourceError as e:
            return Status(None, str(e))
        if not state.exists:
            unit = _unit_file(item, ctx.manifest)
            if unit is None:
                return Status(state, f"no unit {systemd.unit_name(item.key)} ({scope} scope)")
            return Status(state, coming=unit.key)
        return Status(state)

    def decide(self, item: Item, status: Status, ctx: Context, triggered: bool = False) -> Decision:
        if status.error or status.state is None:
            return Decision(FAIL, status.error or "no state")
        state = status.state
        watched = _changed_watched(item, ctx, item.noop) if item.get("ensure") == "running" else []
        ops = _ops(item, state, bool(watched) or triggered)
        if not ops:
            return Decision(NONE, state.shown() if state.exists else "its unit file comes first")
        if item.get("scope") == "system" and not ctx.noop and os.geteuid() != 0:
            return Decision(FAIL, "managing system services needs root: run `sys apply` as root")
        reason = ""
        if "restart" in ops:
            reason = _why_restart(watched) if watched else "what it subscribes to changed"
        elif status.coming is not None:
            reason = f"its unit file {abbreviate(status.coming)} is written first"
        action = CREATE if "start" in ops else UPDATE
        return ServiceDecision(
            action,
            reason,
            f"Would have {_past(ops)} the service",
            "will " + " and ".join(ops),
            ops,
        )

    # -- act --------------------------------------------------------------------
    def apply(
        self, item: Item, decision: Decision, planned: Status | None, ctx: Context
    ) -> Applied:
        ops = decision.ops if isinstance(decision, ServiceDecision) else ()
        return _change(item, ops, ctx)

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        try:
            state = systemd.status(ctx.runner, item.key, item.get("scope"))
        except ResourceError as e:
            return str(e)
        return _differs(item, state)

    # -- removal -----------------------------------------------------------------
    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        before = recorded.get("before")
        if not before:
            return Decision(REMOVE, "no longer declared; left as it is", verb="")
        return Decision(
            REMOVE,
            f"no longer declared; back to {_shown(before)}, as syslua found it",
            verb="",
        )

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        before = state.get("before")
        if not before:
            return Removal("left as it is", changed=False)
        try:
            now = systemd.status(ctx.runner, item.key, item.get("scope"))
        except ResourceError as e:
            return Removal(str(e), failed=True)
        if not now.exists:
            return Removal("its unit is gone", changed=False)
        ops = _back_to(now, before, watched_changed=False)
        if not ops:
            return Removal(f"already {_shown(before)}", changed=False)
        try:
            _change(item, ops, ctx)
        except ResourceError as e:
            return Removal(str(e), failed=True)
        return Removal(_past(ops) + ", as syslua found it")

    # -- undo ---------------------------------------------------------------------
    def undo(self, record: KindRecord, uctx: UndoContext) -> None:
        """Kept until every record is undone (`after_undo`): the unit files and
        configs it watches are put back after it, being older records."""
        pending = uctx.memo(_Pending)
        pending.records[(record["scope"], record["name"])] = record  # the oldest wins

    def after_undo(self, uctx: UndoContext) -> None:
        """Reload the managers whose unit files were put back, then bring each
        service back to the state it was found in, restarting one that runs
        when what it watches was put back."""
        pending = uctx.memo(_Pending)
        if not pending.records:
            return
        runner = uctx.runner
        put_back = set(uctx.report.restored) | set(uctx.report.removed)
        for scope in sorted({s for s, _ in pending.records}):
            dirs = systemd.unit_dirs(scope, home())
            if any(p.startswith(tuple(d + "/" for d in dirs)) for p in put_back):
                try:
                    systemd.reload(runner, scope)
                except ResourceError as e:  # still put each service back
                    uctx.report.failed.append(f"{scope} services: {e}")
        for (scope, name), record in sorted(pending.records.items()):
            try:
                now = systemd.status(runner, name, scope)
                watched = any(p in put_back for p in record.get("watched") or ())
                ops = _back_to(now, record.data, watched_changed=watched)
                for op in ops:
                    systemd.act(runner, name, scope, op)
                if ops:
                    uctx.report.restored.append(f"service {name}")
            except ResourceError as e:
                uctx.report.failed.append(f"service {name}: {e}")
        pending.records.clear()

    # -- snapshots ---------------------------------------------------------------
    def snapshot_state(self, item: Item, sctx: SnapshotContext) -> dict[str, Any]:
        """The state now, and the state syslua first found it in (to go back to)."""
        from syslua.resources.process import Runner

        try:
            now = systemd.status(Runner(), item.key, item.get("scope"))
            current = {"active": now.running, "enabled": now.enabled}
        except ResourceError:
            current = {}
        before = sctx.previous.get("before")
        if before is None:
            ours = [r for r in sctx.records if isinstance(r, KindRecord) and r.op == "service"]
            before = (
                {"active": ours[0]["active"], "enabled": ours[0]["enabled"]} if ours else current
            )
        return {**current, "before": before}

    def materialise(
        self, item: Item, state: Mapping[str, Any], store: Store, snapshot: str
    ) -> Item:
        return item  # the declaration says what a rollback brings it back to

    def blobs(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    def trees(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        try:
            state = systemd.status(ctx.runner, item.key, item.get("scope"))
        except ResourceError as e:
            return "error", str(e)
        if not state.exists:
            return "deleted", "its unit is gone"
        problem = _differs(item, state)
        return ("changed", problem) if problem else None

    # -- ordering -------------------------------------------------------------------
    def provides(self, item: Item) -> Iterable[str]:
        return ()

    def requires(self, item: Item) -> Iterable[str]:
        return ()

    def predecessors(self, item: Item, manifest: Manifest) -> Iterator[str]:
        """The files of its unit (and drop-ins) that the config declares."""
        for unit in _unit_files(item, manifest):
            yield unit.id

    def why_before(self, item: Item, before: str, manifest: Manifest) -> str:
        return "its unit file"


class _Pending:
    """Service records met while undoing, by (scope, name): the oldest state."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], KindRecord] = {}


def _past(ops: Iterable[str]) -> str:
    """`started and enabled`: what the verbs did, as reports say it."""
    return " and ".join(OPS_PAST[o] for o in ops)


def _ops(item: Item, state: systemd.State, watched: bool) -> tuple[str, ...]:
    """The verbs that bring the service to its declaration (the tables above)."""
    ops: list[str] = []
    running = state.running or state.active in systemd.STARTING
    if item.get("ensure") == "running":
        if not running:
            ops.append("start")
        elif watched:
            ops.append("restart")
    elif running:
        ops.append("stop")
    enable = item.get("enable")
    if enable is True and not state.is_enabled:
        ops.append("enable")
    elif enable is False and state.exists and state.is_enabled:
        ops.append("disable")
    return tuple(ops)


def _back_to(now: systemd.State, was: Mapping[str, Any], *, watched_changed: bool) -> list[str]:
    """The verbs that put a service back to a recorded state. A unit whose
    file is gone may still be loaded and running: it is stopped all the same."""
    ops = []
    running = now.running or now.active in systemd.STARTING
    if was.get("active"):
        if not running and now.exists:
            ops.append("start")
        elif running and watched_changed:
            ops.append("restart")
    elif running:
        ops.append("stop")
    if not now.exists:
        return ops  # no unit file: nothing to enable or disable
    enabled = was.get("enabled")
    if enabled in systemd.ENABLED and not now.is_enabled:
        ops.append("enable")
    elif (
        enabled in systemd.DISABLED and now.is_enabled and now.enabled not in ("static", "indirect")
    ):
        ops.append("disable")
    return ops


def _change(item: Item, ops: Iterable[str], ctx: Context) -> Applied:
    """Journal the state found, then run each verb; wait for a start to settle."""
    scope, name = item.get("scope"), item.key
    _reload_once(scope, ctx)
    found = systemd.status(ctx.runner, name, scope)
    ctx.note(
        {
            "op": "service",
            "scope": scope,
            "name": name,
            "active": found.running,
            "enabled": found.enabled,
            "watched": _watched_paths(item, ctx.manifest),
        }
    )
    result = None
    for op in ops:
        if ctx.doing is not None:
            ctx.doing("command", f"systemctl {'--user ' if scope == 'user' else ''}{op} {name}")
        result = systemd.act(ctx.runner, name, scope, op)
        if op in ("start", "restart"):
            limit = systemd.start_timeout(ctx.runner, name, scope)
            state = systemd.settle(ctx.runner, name, scope, limit)
            if not state.running:
                raise ResourceError(
                    f"systemctl {op} {systemd.unit_name(name)} returned, but the unit is "
                    f"{state.active} (see `journalctl{' --user' if scope == 'user' else ''} "
                    f"-u {systemd.unit_name(name)}`)"
                )
    return Applied(output=result) if result is not None else NOTHING


class _Reloaded:
    """What this run's reloads covered, by scope: the unit files changed so far
    when the manager last read them (`daemon-reload`)."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.asked: set[str] = set()  # scopes whose manager was asked once
        self.covered: dict[str, set[str]] = {}  # scope -> unit files it has read


def _reload_once(scope: str, ctx: Context) -> None:
    """Reload the scope's manager before a service change when a unit file
    changed in this run since its last reload (or, the first time, when the
    manager says one changed on disk)."""
    memo = ctx.memo(_Reloaded)
    with memo.lock:
        changed = _unit_files_changed(scope, ctx)
        covered = memo.covered.get(scope, set())
        first = scope not in memo.asked
        if changed - covered or (first and _manager_needs_reload(scope, ctx)):
            systemd.reload(ctx.runner, scope)
        memo.asked.add(scope)
        memo.covered[scope] = covered | changed


def _unit_files_changed(scope: str, ctx: Context) -> set[str]:
    """The unit files of `scope` this run changed so far."""
    if ctx.manifest is None:
        return set()
    dirs = tuple(d + "/" for d in systemd.unit_dirs(scope, home()))
    return {
        f.id
        for f in ctx.manifest.of_type("file")
        if f.key.startswith(dirs) and ctx.outcomes.changed(f.id)
    }


def _manager_needs_reload(scope: str, ctx: Context) -> bool:
    if ctx.manifest is None:
        return False
    return any(
        systemd.needs_reload(ctx.runner, s.key, scope)
        for s in ctx.manifest.of_type("service")
        if s.get("scope") == scope
    )


def _unit_files(item: Item, manifest: Manifest | None) -> list[Item]:
    """The declared files of the service's unit: the unit file and its drop-ins."""
    if manifest is None:
        return []
    unit = systemd.unit_name(item.key)
    out = []
    for d in systemd.unit_dirs(item.get("scope"), home()):
        base = f"{d}/{unit}"
        for f in manifest.of_type("file"):
            if f.key == base or (f.key.startswith(base + ".d/") and f.key.endswith(".conf")):
                out.append(f)
    return out


def _unit_file(item: Item, manifest: Manifest | None) -> Item | None:
    units = [f for f in _unit_files(item, manifest) if not f.key.endswith(".conf")]
    return units[0] if units else None


def _watched(item: Item, manifest: Manifest | None) -> list[Item]:
    """What restarts it: the items it subscribes to, and its unit's declared files."""
    if manifest is None:
        return []
    out = [manifest.get(ref) for ref in item.get("subscribe", ())]
    found = [i for i in out if i is not None]
    return found + [f for f in _unit_files(item, manifest) if f not in found]


def _watched_paths(item: Item, manifest: Manifest | None) -> list[str]:
    return sorted(w.key for w in _watched(item, manifest) if w.type == "file")


def _changed_watched(item: Item, ctx: Context, noop: bool) -> list[Item]:
    return [w for w in _watched(item, ctx.manifest) if ctx.outcomes.triggered((w.id,), noop)]


def _why_restart(changed: list[Item]) -> str:
    """`its config ~/etc/nginx.conf changes`, `its unit file ... changes`, `package hello changes`."""
    first = changed[0]
    if first.type == "file":
        what = (
            "unit file"
            if first.key.endswith(systemd.UNIT_SUFFIXES + (".conf",)) and "/systemd/" in first.key
            else "config"
        )
        text = f"its {what} {abbreviate(first.key)} changes"
    else:
        text = f"{first.type} {first.key} changes"
    more = len(changed) - 1
    return text + (f", and {more} more" if more else "")


def _differs(item: Item, state: systemd.State) -> str | None:
    problems = []
    if item.get("ensure") == "running" and not state.running:
        problems.append(f"it is {state.active}, not running")
    if item.get("ensure") == "stopped" and state.running:
        problems.append("it is running, not stopped")
    enable = item.get("enable")
    if enable is True and not state.is_enabled:
        problems.append(f"it is {state.enabled}, not enabled")
    if enable is False and state.exists and state.is_enabled:
        problems.append(f"it is {state.enabled}, not disabled")
    return ", ".join(problems) or None


def _shown(state: Mapping[str, Any]) -> str:
    run = "running" if state.get("active") else "stopped"
    enabled = state.get("enabled")
    return f"{run}, {enabled}" if enabled and enabled != systemd.NOT_FOUND else run
