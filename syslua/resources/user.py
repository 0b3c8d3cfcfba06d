"""The user type: an OS account, through useradd / usermod / userdel (root only).

This module decides (status, differences, decide, verify); the posix provider
(`user_posix`) reads the account files and runs the shadow tools.

Supplementary groups that are not declared are kept unless `purge_groups =
true`. Every change records the account as it was (journal op `user`), so a
failed apply puts it back; removing a user declaration deletes the account
(never its home directory).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from syslua.manifest.checks import (
    abs_path,
    boolean,
    choice,
    name_or_id,
    non_negative,
    nonempty_string,
    string,
    string_list,
)
from syslua.manifest.model import Item
from syslua.manifest.schema import Prop, schema
from syslua.resources import user_posix
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
    UndoContext,
)
from syslua.resources.kind import Kind, Removable, Undoes
from syslua.resources.user_posix import Account
from syslua.state.records import KindRecord, Original

if TYPE_CHECKING:
    from syslua.resources.providers import UserProvider

__all__ = ["Account", "UserType"]

# Reading accounts and changing them is the provider's work, reached only
# through its protocol: mypy checks user_posix against it.
posix: UserProvider = user_posix


# -- the declaration -----------------------------------------------------------

SCHEMA = schema(
    "user",
    "name",
    [
        Prop("name", nonempty_string, doc="the login name"),
        Prop("ensure", choice("present", "absent"), doc="whether the account should exist"),
        Prop("uid", non_negative, doc="the user id"),
        Prop("gid", name_or_id, doc="the primary group (name or number); must exist"),
        Prop("groups", string_list, mergeable=True, doc="supplementary groups; each must exist"),
        Prop("purge_groups", boolean, doc="also remove the account from groups not listed"),
        Prop("shell", abs_path, doc="the login shell"),
        Prop("home", abs_path, doc="the home directory recorded for the account"),
        Prop("comment", string, doc="the GECOS field"),
    ],
    defaults={"ensure": "present", "purge_groups": False},
    doc="An OS account; applying it needs root (docs/resources/user.md).",
)


class UserType(Kind[Account], Removable, Undoes):
    name = "user"
    schema = SCHEMA

    def label(self, item: Item) -> str:
        return item.key

    def status(self, item: Item, ctx: Context) -> Account:
        return posix.read_account(item.key)

    def _wanted_groups(self, item: Item, current: Account) -> list[str]:
        declared = list(item.get("groups", ()))
        if item.get("purge_groups"):
            return sorted(set(declared))
        return sorted(set(declared) | set(current.groups))

    def _differences(self, item: Item, acct: Account) -> list[str]:
        out = []
        if item.get("uid") is not None and acct.uid != item.get("uid"):
            out.append(f"uid {acct.uid} -> {item.get('uid')}")
        if item.get("gid") is not None and acct.gid != posix.group_id(str(item.get("gid"))):
            out.append(f"gid {acct.gid} -> {item.get('gid')}")
        for prop, have in (("home", acct.home), ("shell", acct.shell), ("comment", acct.comment)):
            if item.get(prop) is not None and have != item.get(prop):
                out.append(f"{prop} {have or '(none)'} -> {item.get(prop)}")
        wanted = self._wanted_groups(item, acct)
        if wanted != sorted(acct.groups):
            out.append(
                f"groups {','.join(acct.groups) or '(none)'} -> {','.join(wanted) or '(none)'}"
            )
        return out

    def decide(
        self, item: Item, status: Account, ctx: Context, triggered: bool = False
    ) -> Decision:
        # In a plan, a group that an item this account waits for would create
        # (syslua.groups' bind, an exec running groupadd) is not there yet:
        # that is no failure, and the apply checks again when the account's
        # turn comes, after those items ran.
        pending = ctx.noop and ctx.outcomes.pending(item.get("depends_on", ()))
        missing = [g for g in item.get("groups", ()) if posix.group_id(g) is None]
        if item.get("gid") is not None and posix.group_id(str(item.get("gid"))) is None:
            missing.append(str(item.get("gid")))
        if missing and not pending:
            return Decision(FAIL, f"group `{missing[0]}` does not exist")
        if item.get("ensure") == "absent":
            decision = (
                Decision(REMOVE, "the account exists", "Would have removed the user")
                if status.exists
                else Decision(NONE, "absent")
            )
        elif not status.exists:
            decision = Decision(CREATE, "", "Would have created the user")
        else:
            diffs = self._differences(item, status)
            decision = (
                Decision(UPDATE, ", ".join(diffs), "Would have updated the user")
                if diffs
                else Decision(NONE, "unchanged")
            )
        if decision.changes and not ctx.noop and os.geteuid() != 0:
            return Decision(FAIL, "managing users needs root: run `sys apply` as root")
        return decision

    def apply(
        self, item: Item, decision: Decision, planned: Account | None, ctx: Context
    ) -> Applied:
        if os.geteuid() != 0:
            raise ResourceError("managing users needs root: run `sys apply` as root")
        before = posix.read_account(item.key)
        ctx.note({"op": "user", "name": item.key, "prev": before.to_dict()})
        if item.get("ensure") == "absent":
            posix.delete(item.key, ctx.runner)
            return NOTHING
        props = {key: item.get(key) for key, _flag in posix.FLAGS}
        groups = self._wanted_groups(item, before)
        if before.exists:
            posix.modify(item.key, props, groups, ctx.runner)
        else:
            posix.create(item.key, props, groups, ctx.runner)
        return NOTHING

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        acct = posix.read_account(item.key)
        if item.get("ensure") == "absent":
            return "the account still exists" if acct.exists else None
        if not acct.exists:
            return "the account does not exist"
        return ", ".join(self._differences(item, acct)) or None

    # -- capabilities ----------------------------------------------------------
    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        return Decision(REMOVE, "no longer declared")

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        acct = posix.read_account(item.key)
        if not acct.exists:
            return Removal("already gone")
        if os.geteuid() != 0:
            raise ResourceError("removing a user needs root: run `sys apply` as root")
        ctx.note({"op": "user", "name": item.key, "prev": acct.to_dict()})
        posix.delete(item.key, ctx.runner)
        return Removal("account deleted (its home directory is kept)")

    def undo(self, record: KindRecord, uctx: UndoContext) -> None:
        posix.restore(record.data, uctx.runner)
        uctx.report.restored.append(f"user {record['name']}")
