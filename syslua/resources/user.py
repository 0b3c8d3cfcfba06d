"""The user type: an OS account, through useradd / usermod / userdel (root only).

Supplementary groups that are not declared are kept unless `purge_groups =
true`. Every change records the account as it was (journal op `user`), so a
failed apply puts it back; removing a user declaration deletes the account
(never its home directory).
"""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
from dataclasses import dataclass
from typing import Any

from syslua.manifest.model import Item
from syslua.resources.base import (
    CREATE,
    FAIL,
    NONE,
    REMOVE,
    UPDATE,
    Context,
    Decision,
    Removal,
    ResourceError,
    ResourceType,
    UndoContext,
)


@dataclass(frozen=True)
class Account:
    exists: bool
    uid: int = -1
    gid: int = -1
    home: str = ""
    shell: str = ""
    comment: str = ""
    groups: tuple[str, ...] = ()
    group: str = ""  # name of the primary group (a private group dies with userdel)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, groups=list(self.groups))


def _prefix() -> str | None:
    """SYSLUA_ACCOUNTS_PREFIX: manage the account files under this directory
    (its etc/passwd, etc/group...) instead of /etc: for containers, images and tests."""
    return os.environ.get("SYSLUA_ACCOUNTS_PREFIX") or None


def _entries(name: str) -> list[list[str]]:
    prefix = _prefix()
    assert prefix is not None
    try:
        with open(os.path.join(prefix, "etc", name), encoding="utf-8") as f:
            return [line.rstrip("\n").split(":") for line in f if line.strip() and not line.startswith("#")]
    except FileNotFoundError:
        return []


def _groups() -> list[tuple[str, int, list[str]]]:
    if _prefix():
        return [(e[0], int(e[2]), [m for m in e[3].split(",") if m]) for e in _entries("group") if len(e) >= 4]
    return [(g.gr_name, g.gr_gid, list(g.gr_mem)) for g in grp.getgrall()]


def read_account(name: str) -> Account:
    if _prefix():
        found = next((e for e in _entries("passwd") if e[0] == name and len(e) >= 7), None)
        if found is None:
            return Account(False)
        uid, gid, gecos, home, shell = int(found[2]), int(found[3]), found[4], found[5], found[6]
    else:
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            return Account(False)
        uid, gid, gecos, home, shell = pw.pw_uid, pw.pw_gid, pw.pw_gecos, pw.pw_dir, pw.pw_shell
    all_groups = _groups()
    groups = tuple(sorted(g for g, _, members in all_groups if name in members))
    primary = next((g for g, gid_, _ in all_groups if gid_ == gid), "")
    return Account(True, uid, gid, home, shell, gecos, groups, primary)


def _gid(value: str) -> int | None:
    """The gid of a group name or number, when such a group exists."""
    for g, gid, _ in _groups():
        if g == value or (value.isdigit() and gid == int(value)):
            return gid
    return None


def _run(argv: list[str]) -> None:
    prefix = _prefix()
    if prefix:
        argv = [argv[0], "--prefix", prefix, *argv[1:]]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise ResourceError(f"{argv[0]} is not installed") from None
    if done.returncode != 0:
        raise ResourceError(f"{' '.join(argv[:1])} failed (exit {done.returncode}): {done.stderr.strip()}")


def restore(record: dict[str, Any]) -> None:
    """Put an account back as a journal record describes it (only what differs)."""
    name, prev = record["name"], record["prev"]
    now = read_account(name)
    if not prev["exists"]:
        if now.exists:
            _run(["userdel", name])
        return
    if not now.exists:
        if not any(gid == prev["gid"] for _, gid, _ in _groups()) and prev.get("group"):
            # userdel removed the user's private group: bring it back first.
            _run(["groupadd", "-g", str(prev["gid"]), prev["group"]])
        args = ["-M", "-u", str(prev["uid"]), "-g", str(prev["gid"]), "-d", prev["home"], "-s", prev["shell"],
                "-c", prev["comment"]]
        if prev["groups"]:
            args += ["-G", ",".join(prev["groups"])]
        _run(["useradd", *args, name])
        return
    args = []
    for flag, key, have in (("-u", "uid", now.uid), ("-g", "gid", now.gid), ("-d", "home", now.home),
                            ("-s", "shell", now.shell), ("-c", "comment", now.comment)):
        if prev[key] != have:
            args += [flag, str(prev[key])]
    if sorted(prev["groups"]) != sorted(now.groups):
        args += ["-G", ",".join(prev["groups"])]
    if args:
        _run(["usermod", *args, name])


class UserType(ResourceType):
    name = "user"
    in_dag = True

    def label(self, item: Item) -> str:
        return item.key

    def status(self, item: Item, ctx: Context) -> Account:
        return read_account(item.key)

    def _wanted_groups(self, item: Item, current: Account) -> list[str]:
        declared = list(item.get("groups", ()))
        if item.get("purge_groups"):
            return sorted(set(declared))
        return sorted(set(declared) | set(current.groups))

    def _differences(self, item: Item, acct: Account) -> list[str]:
        out = []
        if item.get("uid") is not None and acct.uid != item.get("uid"):
            out.append(f"uid {acct.uid} -> {item.get('uid')}")
        if item.get("gid") is not None and acct.gid != _gid(str(item.get("gid"))):
            out.append(f"gid {acct.gid} -> {item.get('gid')}")
        for prop, have in (("home", acct.home), ("shell", acct.shell), ("comment", acct.comment)):
            if item.get(prop) is not None and have != item.get(prop):
                out.append(f"{prop} {have or '(none)'} -> {item.get(prop)}")
        wanted = self._wanted_groups(item, acct)
        if wanted != sorted(acct.groups):
            out.append(f"groups {','.join(acct.groups) or '(none)'} -> {','.join(wanted) or '(none)'}")
        return out

    def decide(self, item: Item, status: Account, ctx: Context, triggered: bool = False) -> Decision:
        for g in item.get("groups", ()):
            if _gid(g) is None:
                return Decision(FAIL, f"group `{g}` does not exist")
        if item.get("gid") is not None and _gid(str(item.get("gid"))) is None:
            return Decision(FAIL, f"group `{item.get('gid')}` does not exist")
        if item.get("ensure") == "absent":
            decision = Decision(REMOVE, "the account exists", "Would have removed the user") if status.exists \
                else Decision(NONE, "absent")
        elif not status.exists:
            decision = Decision(CREATE, "", "Would have created the user")
        else:
            diffs = self._differences(item, status)
            decision = Decision(UPDATE, ", ".join(diffs), "Would have updated the user") if diffs \
                else Decision(NONE, "unchanged")
        if decision.changes and not ctx.noop and os.geteuid() != 0:
            return Decision(FAIL, "managing users needs root: run `sys apply` as root")
        return decision

    def apply(self, item: Item, decision: Decision, ctx: Context) -> None:
        if os.geteuid() != 0:
            raise ResourceError("managing users needs root: run `sys apply` as root")
        before = read_account(item.key)
        if ctx.note is not None:
            ctx.note({"op": "user", "name": item.key, "prev": before.to_dict()})
        if item.get("ensure") == "absent":
            _run(["userdel", item.key])
            return
        args: list[str] = []
        if item.get("uid") is not None:
            args += ["-u", str(item.get("uid"))]
        if item.get("gid") is not None:
            args += ["-g", str(item.get("gid"))]
        if item.get("home") is not None:
            args += ["-d", item.get("home")]
        if item.get("shell") is not None:
            args += ["-s", item.get("shell")]
        if item.get("comment") is not None:
            args += ["-c", item.get("comment")]
        groups = self._wanted_groups(item, before)
        if before.exists:
            _run(["usermod", *args, "-G", ",".join(groups), item.key])
        else:
            _run(["useradd", *args, *(["-G", ",".join(groups)] if groups else []), item.key])

    def verify(self, item: Item, decision: Decision, ctx: Context) -> str | None:
        acct = read_account(item.key)
        if item.get("ensure") == "absent":
            return "the account still exists" if acct.exists else None
        if not acct.exists:
            return "the account does not exist"
        return ", ".join(self._differences(item, acct)) or None

    def diff(self, item: Item, status: Any, ctx: Context) -> str | None:
        return None

    def remove(self, item: Item, ctx: Context, original: dict[str, Any] | None, state: dict[str, Any]) -> Removal:
        acct = read_account(item.key)
        if not acct.exists:
            return Removal("already gone")
        if os.geteuid() != 0:
            raise ResourceError("removing a user needs root: run `sys apply` as root")
        if ctx.note is not None:
            ctx.note({"op": "user", "name": item.key, "prev": acct.to_dict()})
        _run(["userdel", item.key])
        return Removal("account deleted (its home directory is kept)")

    def undo(self, record: dict[str, Any], uctx: UndoContext) -> None:
        restore(record)
        uctx.report.restored.append(f"user {record['name']}")
