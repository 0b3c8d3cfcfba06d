"""The os_package type: a package of the operating system, through apt or dnf (root only).

CCM's `package` (in YAML manifests), `os_package {}` in Lua. `ensure` is
`present`, `absent`, `latest` or a version. This module decides; the
providers (`os_package_apt`, `os_package_dnf`) read and act:

1. status: the installed version (dpkg-query / rpm); when the item is not
   in its desired state, the version it would get (the archive's candidate,
   or the one asked for), and what the package manager would change to get
   there, every dependency included (`apt-get -s`), read-only (planning
   only: an item about to run leaves the simulation to step 3);
2. decide: install, upgrade, downgrade or remove, with the versions; whether
   the change can be undone (every version it replaces is still offered by
   the archive) or is irreversible, like an exec without `undo`;
3. apply: under one lock (one package manager run at a time), simulate
   again, journal the version each affected package had before (its own
   record: `undo` puts them all back in one transaction), then act;
4. verify: read the installed version again.

A snapshot records the version installed, so `sys rollback` brings it back
(`materialise` pins it), and what was there before syslua first managed the
package: removing the declaration uninstalls a package that syslua
installed and leaves one that was there before.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from syslua.manifest.checks import choice, package_ensure, package_name
from syslua.manifest.model import Item, freeze, thaw
from syslua.manifest.schema import Prop, schema
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
from syslua.resources.kind import Drifts, Irreversible, Kind, Recorded, Removable, Undoes
from syslua.state.records import KindRecord, Original
from syslua.state.store import Store

if TYPE_CHECKING:
    from syslua.resources.providers import OnLine, PackageProvider

PROVIDERS = ("apt", "dnf")
# The platforms and families (os-release ID and ID_LIKE) each provider serves.
_FAMILIES = {
    "apt": ("debian", "ubuntu", "linuxmint", "raspbian", "pop", "elementary", "kali"),
    "dnf": ("rhel", "fedora", "centos", "rocky", "almalinux", "ol", "amzn", "redhat"),
}
# One package manager run at a time: dpkg and rpm lock their database anyway.
LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Installed:
    """What the package manager says of a package: its version when installed."""

    version: str | None
    state: str = "not-installed"  # dpkg's word for it: installed, config-files, ...


@dataclass(frozen=True, slots=True)
class Change:
    """One package a transaction touches: its version before and after (None: absent)."""

    name: str
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class Restore:
    """Versions to put back (None: remove), and which were dependencies (auto)."""

    versions: Mapping[str, str | None]
    auto: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Status:
    provider: str | None
    installed: Installed = Installed(None)
    target: str | None = None  # the version a change would install; None: removal or none
    changes: tuple[Change, ...] = ()  # the whole transaction a change would make
    lost: Mapping[str, str] = field(default_factory=dict)  # versions an undo could not get back
    error: str | None = None


class PackageDecision(Decision):
    """A decision that knows whether undoing it can bring back what it replaces."""

    __slots__ = ("irreversible_because",)
    _names = (*Decision._names, "irreversible_because")
    irreversible_because: str

    def __init__(
        self,
        action: str,
        reason: str,
        noop_message: str | None = None,
        verb: str | None = None,
        irreversible_because: str = "",
    ) -> None:
        super().__init__(action, reason, noop_message, verb)
        object.__setattr__(self, "irreversible_because", irreversible_because)


def choose_provider(platform: str, family: str) -> str:
    """The provider for a machine: by its os-release ID and ID_LIKE, else by
    the tools found on PATH. Raises ResourceError when none fits."""
    for name in PROVIDERS:
        if platform in _FAMILIES[name] or family in _FAMILIES[name]:
            return name
    for name in PROVIDERS:
        if all(shutil.which(tool) for tool in provider(name).TOOLS):
            return name
    raise ResourceError(
        f"no OS package provider for this machine (platform {platform or 'unknown'}, "
        f"family {family or 'unknown'}, neither apt-get nor dnf found); "
        "set `provider` to apt or dnf"
    )


def provider(name: str) -> PackageProvider:
    """The provider module, imported when a package is planned (never before:
    a plan of plain files does not pay for it). Returned as a `PackageProvider`,
    so mypy checks each module against the protocol."""
    if name == "apt":
        from syslua.resources import os_package_apt

        return os_package_apt
    if name == "dnf":
        from syslua.resources import os_package_dnf

        return os_package_dnf
    raise ResourceError(f"unknown OS package provider {name!r} (known: {', '.join(PROVIDERS)})")


def _machine_provider() -> str:
    from syslua.eval.facts import machine_facts

    info = machine_facts()["host"]["info"]
    return choose_provider(info.get("platform", ""), info.get("platformFamily", ""))


def provider_of(item: Item) -> PackageProvider:
    """The item's provider: declared, or the one that fits the machine; its tools must be there."""
    name = item.get("provider") or _machine_provider()
    prov = provider(name)
    missing = [tool for tool in prov.TOOLS if shutil.which(tool) is None]
    if missing:
        raise ResourceError(f"provider {name} needs {', '.join(missing)}, not found on PATH")
    return prov


def wanted(ensure: str, have: str | None, compare: Callable[[str, str], int]) -> bool:
    """Whether an installed version `have` (None: absent) satisfies `ensure`,
    before asking the archive (`latest` needs the candidate too)."""
    if ensure == "absent":
        return have is None
    if have is None:
        return False
    if ensure in ("present", "latest"):
        return True
    return compare(have, ensure) == 0


# -- the declaration -----------------------------------------------------------

SCHEMA = schema(
    "os_package",
    "name",
    [
        Prop("name", package_name, doc="the package's name, as apt or dnf knows it"),
        Prop(
            "ensure",
            package_ensure,
            doc='"present", "absent", "latest" or a version such as "2.10-3"',
        ),
        Prop(
            "provider",
            choice("apt", "dnf"),
            doc="the package manager; chosen from the machine when not given",
        ),
    ],
    defaults={"ensure": "present"},
    doc="A package of the operating system, through apt or dnf; needs root (docs/resources/os_package.md).",
)


class OsPackageType(Kind[Status], Removable, Undoes, Recorded, Drifts, Irreversible):
    name = "os_package"
    schema = SCHEMA

    def label(self, item: Item) -> str:
        return item.key

    # -- decide ---------------------------------------------------------------
    def status(self, item: Item, ctx: Context) -> Status:
        # Planning simulates the transaction; an item about to run leaves that
        # to `apply`, which simulates under the lock just before it acts.
        return self._read(item, ctx, simulate=ctx.noop)

    def _read(self, item: Item, ctx: Context, *, simulate: bool) -> Status:
        try:
            prov = provider_of(item)
        except ResourceError as e:
            return Status(item.get("provider"), error=str(e))
        name, ensure = item.key, item.get("ensure")
        try:
            have = prov.installed(ctx.runner, name)
            target: str | None = None
            if ensure == "latest":
                target = prov.candidate(ctx.runner, name)
                if target is None:
                    return Status(prov.NAME, have, error=self._missing(name, None))
                if have.version is not None and prov.compare(have.version, target) >= 0:
                    return Status(prov.NAME, have)  # the newest there is, or newer
            elif wanted(ensure, have.version, prov.compare):
                return Status(prov.NAME, have)
            elif ensure == "present":
                target = prov.candidate(ctx.runner, name)
                if target is None:
                    return Status(prov.NAME, have, error=self._missing(name, None))
            elif ensure != "absent":
                offered = prov.available(ctx.runner, [name]).get(name, set())
                # as the archive spells it: `2.10-3` for `0:2.10-3`
                target = next((v for v in offered if prov.compare(v, ensure) == 0), None)
                if target is None:
                    if item.get("rollback"):
                        return Status(prov.NAME, have, error=f"version {ensure} is gone")
                    return Status(prov.NAME, have, error=self._missing(name, ensure, offered))
            if not simulate:
                after = None if ensure == "absent" else target
                return Status(prov.NAME, have, target, (Change(name, have.version, after),))
            changes = tuple(prov.simulate(ctx.runner, name, target, remove=ensure == "absent"))
            lost = prov.unavailable(ctx.runner, changes)
        except ResourceError as e:
            return Status(prov.NAME, error=str(e))
        return Status(prov.NAME, have, target, changes, lost)

    @staticmethod
    def _missing(name: str, version: str | None, offered: Any = ()) -> str:
        if version is None:
            return (
                f"{name} has no installable version in the archive (syslua never updates "
                "the package index itself: `apt-get update` or `dnf makecache` may be needed)"
            )
        has = f" (it has {', '.join(sorted(offered))})" if offered else ""
        return f"version {version} of {name} is not in the archive{has}"

    def decide(self, item: Item, status: Status, ctx: Context, triggered: bool = False) -> Decision:
        if status.error:
            if item.get("rollback") and status.installed.version is not None:
                # A rollback to a version the archive dropped keeps the one there is.
                return Decision(
                    NONE, f"{status.error} from the archive; {status.installed.version} stays"
                )
            return Decision(FAIL, status.error)
        have = status.installed.version
        if not status.changes and not (status.target and status.target != have):
            if item.get("ensure") == "absent" or have is None:
                return Decision(NONE, "absent")
            return Decision(NONE, have)
        decision = self._change(item, status, have)
        if decision.changes and not ctx.noop and os.geteuid() != 0:
            return Decision(FAIL, "managing OS packages needs root: run `sys apply` as root")
        return decision

    def _change(self, item: Item, status: Status, have: str | None) -> PackageDecision:
        others = [c for c in status.changes if c.name != item.key]
        also = _also(others)
        lost = ", ".join(f"{n} {v}" for n, v in sorted(status.lost.items()))
        blocked = f"the archive no longer has {lost}" if lost else ""
        if item.get("ensure") == "absent":
            return PackageDecision(
                REMOVE, f"{have}{also}", "Would have uninstalled", "will uninstall", blocked
            )
        target = status.target or next(
            (c.after for c in status.changes if c.name == item.key and c.after), "?"
        )
        if have is None:
            return PackageDecision(
                CREATE,
                f"{target}{also}",
                "Would have installed",
                "will install",
                blocked,
            )
        prov = provider(status.provider or "apt")
        down = prov.compare(have, target) > 0
        return PackageDecision(
            UPDATE,
            f"{have} -> {target}{also}",
            f"Would have {'downgraded' if down else 'upgraded'}",
            "will downgrade" if down else "will upgrade",
            blocked,
        )

    def apply(
        self, item: Item, decision: Decision, planned: Status | None, ctx: Context
    ) -> Applied:
        if os.geteuid() != 0:
            raise ResourceError("managing OS packages needs root: run `sys apply` as root")
        prov = provider_of(item)
        name, ensure = item.key, item.get("ensure")
        with LOCK:
            # The plan's view may be stale: simulate again, and journal what
            # the transaction really replaces before it starts.
            status = self._read(item, ctx, simulate=True)
            if status.error:
                raise ResourceError(status.error)
            if not status.changes and not status.target:
                return NOTHING  # converged since the plan (another item pulled it in)
            if ctx.journal is not None:
                before = {c.name: c.before for c in status.changes}
                auto = prov.auto_installed(ctx.runner, [n for n, v in before.items() if v])
                ctx.note(
                    {
                        "op": "os_package",
                        "provider": prov.NAME,
                        "prev": before,
                        "auto": auto,
                        "lost": dict(status.lost),
                    }
                )
            on_line = _on_line(item.id, ctx)
            if ctx.doing is not None:
                ctx.doing("command", f"{prov.NAME}: {decision.plan_line}")
            if ensure == "absent":
                result = prov.uninstall(ctx.runner, name, on_line)
            else:
                have = status.installed.version
                target = status.target
                down = have is not None and target is not None and prov.compare(have, target) > 0
                pinned = target if ensure not in ("present",) else None
                result = prov.install(ctx.runner, name, pinned, down, on_line)
            return Applied(output=result)

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        prov = provider_of(item)
        have = prov.installed(ctx.runner, item.key)
        ensure = item.get("ensure")
        if ensure == "absent":
            return f"{have.version} is still installed" if have.version else None
        if have.version is None:
            return "the package is not installed"
        if ensure not in ("present", "latest") and prov.compare(have.version, ensure) != 0:
            return f"{have.version} is installed, not {ensure}"
        return None

    # -- capabilities ----------------------------------------------------------
    def irreversible(self, item: Item, decision: Decision) -> bool | str:
        return getattr(decision, "irreversible_because", "") or False

    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        """The removal as the plan shows it, knowing what the last apply recorded."""
        if _installed_by_syslua(recorded):
            return Decision(
                REMOVE,
                "no longer declared; syslua installed it",
                "Would have uninstalled",
                "will uninstall",
            )
        if "version" in recorded and recorded["version"] is None:
            return Decision(REMOVE, "no longer declared; it is not installed", verb="")
        return Decision(
            REMOVE,
            "no longer declared; it was installed before syslua managed it, so it stays",
            verb="",
        )

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        if not _installed_by_syslua(state):
            return Removal(self.removal(item, state).reason, changed=False)
        absent = Item(
            item.type, item.key, freeze({**thaw(item.props), "ensure": "absent"}), item.parent
        )
        status = self._read(absent, ctx, simulate=False)
        if status.installed.version is None and not status.error:
            return Removal("already uninstalled", changed=False)
        decision = self.decide(absent, status, ctx)
        if decision.action == FAIL:
            return Removal(decision.reason, failed=True)
        applied = self.apply(absent, decision, status, ctx)
        return Removal(f"uninstalled {status.installed.version}", output=applied.output)

    def undo(self, record: KindRecord, uctx: UndoContext) -> None:
        """Put every package the transaction touched back at its version; those
        whose version the archive lost stay as they are, reported as not undone."""
        prov = provider(record.get("provider", "apt"))
        lost = record.get("lost") or {}
        versions = {n: v for n, v in record["prev"].items() if n not in lost}
        with LOCK:
            prov.restore(uctx.runner, Restore(versions, tuple(record.get("auto", ()))))
        label = (record.item or "os_package").split("#", 1)[-1]
        if versions:
            uctx.report.restored.append(f"os_package {label}")
        for name, version in sorted(lost.items()):
            uctx.report.not_undone.append(
                f"os_package {label}: {name} not undone (the archive no longer has {version})"
            )

    # -- snapshots -------------------------------------------------------------
    def snapshot_state(self, item: Item, sctx: SnapshotContext) -> dict[str, Any]:
        """The version installed now, and what there was before syslua first managed it."""
        from syslua.resources.process import Runner

        try:
            have = provider_of(item).installed(Runner(), item.key).version
        except ResourceError:
            have = None
        if "before" in sctx.previous:
            before = sctx.previous["before"]
        else:
            ours = [r for r in sctx.records if isinstance(r, KindRecord) and r.op == "os_package"]
            before = ours[0]["prev"].get(item.key) if ours else have
        return {"version": have, "before": before}

    def materialise(
        self, item: Item, state: Mapping[str, Any], store: Store, snapshot: str
    ) -> Item:
        """Pinned at the version the snapshot recorded, so a rollback brings it back."""
        version = state.get("version")
        ensure = item.get("ensure")
        if "version" not in state or ensure == "absent":
            return item
        props = thaw(item.props)
        props["ensure"] = version if version else "absent"
        props["rollback"] = True
        return Item(
            item.type, item.key, freeze(props), item.parent, item.noop, item.health_check_only
        )

    def blobs(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    def trees(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        try:
            prov = provider_of(item)
            have = prov.installed(ctx.runner, item.key).version
        except ResourceError as e:
            return "changed", str(e)
        ensure = item.get("ensure")
        if wanted(ensure, have, prov.compare):
            return None  # `latest` is not compared with the archive: drift is about the machine
        if have is None:
            return "deleted", "package uninstalled"
        if ensure == "absent":
            return "changed", f"package installed ({have})"
        return "changed", f"package at {have}, not {ensure}"


def _on_line(ident: str, ctx: Context) -> OnLine:
    """What the package manager prints goes to the live display, and with -v
    to the output, as an exec's does."""
    show = ctx.on_output if ctx.verbose else None
    doing = ctx.doing
    if show is None and doing is None:
        return None

    def on_line(stream: str, line: str) -> None:
        if doing is not None and line.strip():
            doing("output", line)
        if show is not None:
            show(ident, stream, line)

    return on_line


def _installed_by_syslua(recorded: Mapping[str, Any]) -> bool:
    """Whether the snapshot state says the package is installed and was not
    before syslua first managed it."""
    return "before" in recorded and recorded["before"] is None and bool(recorded.get("version"))


def _also(others: list[Change]) -> str:
    """`; also installs libfoo 1.2, removes bar`: the rest of the transaction."""
    groups: dict[str, list[str]] = {}
    for c in others:
        if c.before is None:
            verb, what = "installs", f"{c.name} {c.after}"
        elif c.after is None:
            verb, what = "removes", c.name
        else:
            verb, what = "changes", f"{c.name} {c.before} -> {c.after}"
        groups.setdefault(verb, []).append(what)
    if not groups:
        return ""
    return "; also " + ", ".join(f"{verb} {', '.join(w)}" for verb, w in groups.items())
