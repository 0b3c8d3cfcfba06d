"""The process groups of the commands a run started: who they are, and stopping them.

Every command runs in a process group of its own (`process.Runner`). While
an apply's journal is open, each command is recorded there before it runs
(`records.Started`): the group's id, the start time of its leader (field 22
of `/proc/<pid>/stat`, clock ticks since boot) and the boot id. When an
apply was killed, recovery stops every group still alive before it undoes
anything (`stop`), so that nothing the dead run started writes into the
machine after recovery has put it back.

A group is the one recorded when:
- the boot is the same (`/proc/sys/kernel/random/boot_id`): after a
  reboot, no process of the dead run is left;
- its leader, when it still exists, started at the recorded time: a pid is
  reused only once its group is gone, so a leader with another start time
  is some other program's;
- when the leader has exited (the command ended and left something running
  in the background), its members are in the session it opened (session id
  = group id) and none started before it.

Linux only: without /proc nothing is recorded as checkable, and nothing is
stopped.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable, Sequence

PROC = "/proc"
GRACE = 2.0  # seconds between SIGTERM and SIGKILL
_POLL = 0.02


class Proc:
    """What `/proc/<pid>/stat` says of a process (the fields syslua reads)."""

    __slots__ = ("pid", "state", "pgid", "sid", "start")

    def __init__(self, pid: int, state: str, pgid: int, sid: int, start: int) -> None:
        self.pid = pid
        self.state = state  # R, S, D, Z (a zombie: dead, waiting to be reaped) ...
        self.pgid = pgid
        self.sid = sid
        self.start = start  # clock ticks after boot


def read_proc(pid: int) -> Proc | None:
    """The process `pid`, or None when there is none (or no /proc)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold anything,
    # spaces and parentheses too: the fields after it follow the last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split()
    try:
        return Proc(pid, rest[0].decode(), int(rest[2]), int(rest[3]), int(rest[19]))
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    found = read_proc(pid)
    return found.start if found is not None else None


def boot_id() -> str | None:
    try:
        with open(f"{PROC}/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _all() -> Iterable[Proc]:
    try:
        names = os.listdir(PROC)
    except OSError:
        return
    for name in names:
        if name.isdigit():
            found = read_proc(int(name))
            if found is not None:
                yield found


def members(pgid: int, start: int) -> list[Proc]:
    """The live processes of the group `pgid` whose leader started at
    `start`; none when the group is gone, or is another one now."""
    found = [p for p in _all() if p.pgid == pgid]
    leader = next((p for p in found if p.pid == pgid), None)
    if leader is not None and leader.start != start:
        return []  # the pid was reused: another program's group
    return [
        p
        for p in found
        if p.state != "Z" and (p.pid == pgid or (p.sid == pgid and p.start >= start))
    ]


class Stopped:
    """What `stop` did: the groups it stopped, and those it could not."""

    def __init__(self) -> None:
        self.stopped: list[int] = []
        self.failed: list[str] = []

    def describe(self, whose: str) -> str:
        """`after stopping 2 commands it left running (process groups 12, 34)`, or ""."""
        if not self.stopped and not self.failed:
            return ""
        parts = []
        if self.stopped:
            n = len(self.stopped)
            groups = ", ".join(str(g) for g in self.stopped)
            noun = "command" if n == 1 else "commands"
            parts.append(
                f"after stopping {n} {noun} {whose} left running "
                f"(process group{'s' if n > 1 else ''} {groups})"
            )
        if self.failed:
            parts.append("could not stop " + "; ".join(self.failed))
        return ", ".join(parts)


def stop(started: Sequence[tuple[int, int | None, str | None]], ended: set[int]) -> Stopped:
    """SIGTERM every recorded group that is still alive and the same one,
    then SIGKILL what is left after `GRACE`; returns once they are gone.
    `started`: (group, its leader's start time, boot id) as recorded."""
    done = Stopped()
    boot = boot_id()
    alive: dict[int, int] = {}  # group -> its leader's start time
    for pgid, start, their_boot in started:
        if pgid in ended or start is None or boot is None or their_boot != boot:
            continue  # ended, not checkable, or from an earlier boot: nothing of it is left
        if pgid <= 1 or pgid == os.getpgrp():
            continue  # never init's, nor this process's own group
        if members(pgid, start):
            alive[pgid] = start
    # The group as a whole (what it forks meanwhile too): its id cannot name
    # another group while one of the members just checked is alive.
    for pgid in list(alive):
        why = _signal(pgid, signal.SIGTERM)
        if why is not None:
            done.failed.append(f"process group {pgid}: {why}")
            del alive[pgid]
    done.stopped = sorted(alive)
    signum, deadline = signal.SIGTERM, time.monotonic() + GRACE
    while alive:
        time.sleep(_POLL)
        alive = {g: s for g, s in alive.items() if members(g, s)}
        if time.monotonic() > deadline:
            if signum == signal.SIGKILL:
                break  # unkillable (stuck in the kernel): nothing more to do
            signum, deadline = signal.SIGKILL, time.monotonic() + GRACE
        if signum == signal.SIGKILL:
            for pgid in alive:
                _signal(pgid, signal.SIGKILL)
    return done


def _signal(pgid: int, signum: int) -> str | None:
    """Why the group could not be signalled, or None."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass  # gone meanwhile
    except PermissionError:
        return "permission denied"
    return None
