"""The posix account provider: reads accounts and changes them with the shadow tools.

Accounts are read from the system databases (pwd, grp), or, under
SYSLUA_ACCOUNTS_PREFIX, from that directory's etc/passwd and etc/group.
Changes go through useradd / usermod / userdel / groupadd, run by the one
process runner (with `--prefix` under a prefix). `restore` puts an account
back as a journal record describes it, changing only what differs.
"""

from __future__ import annotations

import grp
import os
import pwd
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from syslua.resources.base import ResourceError
from syslua.resources.process import CannotStart, Runner

TOOL_TIMEOUT = 120.0
# Declared properties and the useradd/usermod flag that sets each.
FLAGS = (("uid", "-u"), ("gid", "-g"), ("home", "-d"), ("shell", "-s"), ("comment", "-c"))


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
            return [
                line.rstrip("\n").split(":")
                for line in f
                if line.strip() and not line.startswith("#")
            ]
    except FileNotFoundError:
        return []


def groups() -> list[tuple[str, int, list[str]]]:
    """Every group as (name, gid, members)."""
    if _prefix():
        return [
            (e[0], int(e[2]), [m for m in e[3].split(",") if m])
            for e in _entries("group")
            if len(e) >= 4
        ]
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
    all_groups = groups()
    member_of = tuple(sorted(g for g, _, members in all_groups if name in members))
    primary = next((g for g, gid_, _ in all_groups if gid_ == gid), "")
    return Account(True, uid, gid, home, shell, gecos, member_of, primary)


def group_id(value: str) -> int | None:
    """The gid of a group name or number, when such a group exists."""
    for g, gid, _ in groups():
        if g == value or (value.isdigit() and gid == int(value)):
            return gid
    return None


def _flags(props: Mapping[str, str | int | None]) -> list[str]:
    """useradd/usermod flags for the properties that are set (not None)."""
    args: list[str] = []
    for key, flag in FLAGS:
        if props.get(key) is not None:
            args += [flag, str(props[key])]
    return args


def create(
    name: str, props: Mapping[str, str | int | None], member_of: Sequence[str], runner: Runner
) -> None:
    """useradd: a new account with these properties and supplementary groups."""
    _run(
        ["useradd", *_flags(props), *(["-G", ",".join(member_of)] if member_of else []), name],
        runner,
    )


def modify(
    name: str, props: Mapping[str, str | int | None], member_of: Sequence[str], runner: Runner
) -> None:
    """usermod: set these properties; the supplementary groups become exactly `member_of`."""
    _run(["usermod", *_flags(props), "-G", ",".join(member_of), name], runner)


def delete(name: str, runner: Runner) -> None:
    """userdel: the account goes, its home directory stays."""
    _run(["userdel", name], runner)


def _run(argv: list[str], runner: Runner) -> None:
    prefix = _prefix()
    if prefix:
        argv = [argv[0], "--prefix", prefix, *argv[1:]]
    try:
        done = runner.run_argv(argv, timeout=TOOL_TIMEOUT)
    except CannotStart:
        raise ResourceError(f"{argv[0]} is not installed") from None
    if done.timed_out:
        raise ResourceError(f"{argv[0]} timed out after {TOOL_TIMEOUT:g}s")
    if done.exit_code != 0:
        raise ResourceError(f"{argv[0]} failed (exit {done.exit_code}): {done.stderr.strip()}")


def restore(record: Mapping[str, Any], runner: Runner | None = None) -> None:
    """Put an account back as a journal record describes it (only what differs)."""
    runner = runner if runner is not None else Runner()
    name, prev = record["name"], record["prev"]
    now = read_account(name)
    if not prev["exists"]:
        if now.exists:
            delete(name, runner)
        return
    if not now.exists:
        if not any(gid == prev["gid"] for _, gid, _ in groups()) and prev.get("group"):
            # userdel removed the user's private group: bring it back first.
            _run(["groupadd", "-g", str(prev["gid"]), prev["group"]], runner)
        args = [
            "-M",
            "-u",
            str(prev["uid"]),
            "-g",
            str(prev["gid"]),
            "-d",
            prev["home"],
            "-s",
            prev["shell"],
            "-c",
            prev["comment"],
        ]
        if prev["groups"]:
            args += ["-G", ",".join(prev["groups"])]
        _run(["useradd", *args, name], runner)
        return
    args = []
    for flag, key, have in (
        ("-u", "uid", now.uid),
        ("-g", "gid", now.gid),
        ("-d", "home", now.home),
        ("-s", "shell", now.shell),
        ("-c", "comment", now.comment),
    ):
        if prev[key] != have:
            args += [flag, str(prev[key])]
    if sorted(prev["groups"]) != sorted(now.groups):
        args += ["-G", ",".join(prev["groups"])]
    if args:
        _run(["usermod", *args, name], runner)
