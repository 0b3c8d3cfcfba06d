"""What every resource type provides, and the context it runs in.

A type decides; a provider acts. Each type follows the same steps:
`status` reads the machine (never mutates), `decide` compares it with the
item and gives a `Decision` with a reason, `apply` acts through the provider
unless noop, and the executor reads `status` again to verify convergence.
The engine only knows types through the registry in `syslua.resources`.
"""

from __future__ import annotations

import grp
import pwd
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from syslua.errors import ResourceError

__all__ = ["CREATE", "Context", "Decision", "ResourceError", "ResourceType"]

if TYPE_CHECKING:
    from syslua.manifest.model import Item, Manifest
    from syslua.resources.process import Runner

# Decision actions, and how plan output marks them.
CREATE, UPDATE, REMOVE, NONE, RUN, SKIP, FAIL = "create", "update", "remove", "none", "run", "skip", "fail"
SYMBOLS = {CREATE: "+", UPDATE: "~", REMOVE: "-", NONE: "=", RUN: "+", SKIP: "=", FAIL: "!"}
CHANGES = frozenset({CREATE, UPDATE, REMOVE, RUN})


@dataclass(frozen=True, slots=True)
class Decision:
    """What a resource would do, and why."""

    action: str
    reason: str
    noop_message: str | None = None

    @property
    def symbol(self) -> str:
        return SYMBOLS[self.action]

    @property
    def changes(self) -> bool:
        return self.action in CHANGES

    @property
    def message(self) -> str:
        """The line shown to the user: the noop message with its reason, or the reason."""
        if self.noop_message and self.reason:
            return f"{self.noop_message} ({self.reason})"
        return self.noop_message or self.reason


@dataclass
class Context:
    """Run-wide facilities handed to resource types (plain sequential code)."""

    runner: Runner
    noop: bool = True
    manifest: Manifest | None = None
    # Items changed (or that would change, in a noop run) so far in this run.
    changed: set[str] = field(default_factory=set)
    # Items of noop children that would have changed in a real run: they
    # trigger only subscribers that are noop themselves.
    would_change: set[str] = field(default_factory=set)
    verbose: bool = False
    on_output: Any = None  # callable(item_id, stream, line) for live command output
    store: Any = None  # the content store, when the executor has one
    paths: Any = None  # syslua.paths.Paths, for the cache and the profile
    record: Any = None  # callable(path) before a path changes (the journal)
    note: Any = None  # callable(record) for other undo records (profile swaps, binds, users)
    progress: Any = None  # callable(label) -> callable(done, total) for downloads
    resolver: Any = None  # syslua.resources.placeholders.Resolver, for placeholders
    previous: Any = None  # the current snapshot's manifest, when there is one
    outputs: dict[str, Any] = field(default_factory=dict)  # item id -> command result
    failed: set[str] = field(default_factory=set)
    _uids: dict[str, int | None] = field(default_factory=dict)
    _gids: dict[str, int | None] = field(default_factory=dict)

    def before_change(self, path: str) -> None:
        """Called by providers before they change or remove `path` (the journal hook)."""
        if self.record is not None:
            self.record(path)

    def uid(self, owner: str) -> int | None:
        """uid for a user name or numeric id (None when no such user)."""
        if owner not in self._uids:
            if owner.isdigit():
                self._uids[owner] = int(owner)
            else:
                try:
                    self._uids[owner] = pwd.getpwnam(owner).pw_uid
                except KeyError:
                    self._uids[owner] = None
        return self._uids[owner]

    def gid(self, group: str) -> int | None:
        if group not in self._gids:
            if group.isdigit():
                self._gids[group] = int(group)
            else:
                try:
                    self._gids[group] = grp.getgrnam(group).gr_gid
                except KeyError:
                    self._gids[group] = None
        return self._gids[group]


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


class ResourceType(Protocol):
    """A resource type: decides and verifies; its provider does the work."""

    name: str
    in_dag: bool

    def label(self, item: Item) -> str: ...

    def status(self, item: Item, ctx: Context) -> Any: ...

    def decide(self, item: Item, status: Any, ctx: Context, triggered: bool = False) -> Decision: ...

    def apply(self, item: Item, decision: Decision, ctx: Context) -> None: ...

    def verify(self, item: Item, decision: Decision, ctx: Context) -> str | None:
        """None when the item reached its desired state, else the reason it did not."""
        ...

    def diff(self, item: Item, status: Any, ctx: Context) -> str | None: ...
