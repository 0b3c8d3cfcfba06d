"""The no-change proof: what the last apply that found nothing to do looked
at, so that the next `sys apply` or `sys plan` of the same config can say
"no changes" from `lstat` alone, without Lua, the merge or the planner
(`syslua/quick.py`), as git answers `git status` from its index.

`state/no-change-proof` is written by an apply that changed nothing
(`execute/proof.py`), under the state lock, and names:

- the current snapshot and the cached evaluation (`manifest/evalcache.py`)
  whose manifest it planned (its key names the config);
- the counts of its plan (the summary line says them again);
- the environment variables the advice about the shell's rc file read;
- every path whose state the plan depended on, each with what `lstat`
  (or `stat`, for a path read through links) gave, and how it is compared
  (`LSTAT`... below).

It holds while every path compares equal. A path whose timestamps were
within `MARGIN` of the start of the run that wrote the proof is never in
one (the proof is then not written): an edit in the same timestamp tick as
that run's look at it could keep every field equal (git's "racily clean"
rule, as in `state/stat_index.py`). A run that begins a journal deletes the
proof first (`discard`), so an interrupted run leaves none; anything else
that changes what a plan sees changes one of the paths, the config's
evaluation or the current snapshot, and a proof that does not hold is
only a slower run, never a wrong answer.

File layout: `MAGIC`, a JSON header line, then the entries' fixed fields
(`_ENTRY`: the comparison and the packed `lstat`), their paths each ended
by a NUL, and a CRC-32 of everything after `MAGIC` (the header included:
its counts are printed as they are).
"""

from __future__ import annotations

import json
import os
import stat
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from syslua.fsutil import atomic_write
from syslua.state import stat_index

NAME = "no-change-proof"
MAGIC = b"sysluaNP1\n"
MARGIN = 2_000_000_000  # ns: as `state/stat_index.MARGIN`
FORMAT = 1

# How a path is compared:
LSTAT = 0  # every field of its `lstat`: size, times, inode, device, mode, owner
STAT = 1  # the same, through links (a source is read through them)
SHAPE = 2  # the same directory: inode, device, mode, owner (not its times: its entries change)
SHAPE_STAT = 3  # the same, through links (a file that must exist, a link's destination)
ABSENT = 4  # nothing there
_FOLLOW = (STAT, SHAPE_STAT)
_SHAPES = (SHAPE, SHAPE_STAT)

_KEY = stat_index.KEY  # size, mtime_ns, ctime_ns, inode, device, mode, uid, gid
_ENTRY = struct.Struct(f"<B{_KEY.size}s")
NOTHING = bytes(_KEY.size)  # what an `ABSENT` entry records
_CRC = struct.Struct("<I")


def key(st: os.stat_result, how: int) -> bytes:
    """What an entry compared as `how` records of `st`."""
    if how in _SHAPES:
        return _KEY.pack(0, 0, 0, st.st_ino, st.st_dev, st.st_mode, st.st_uid, st.st_gid)
    return stat_index.key(st)


def reshaped(packed: bytes, how: int) -> bytes:
    """A whole packed `lstat` (`stat_index.key`) as an entry compared `how` records it."""
    if how not in _SHAPES:
        return packed
    _, _, _, ino, dev, mode, uid, gid = _KEY.unpack(packed)
    return _KEY.pack(0, 0, 0, ino, dev, mode, uid, gid)


def is_dir(packed: bytes) -> bool:
    """Did the `lstat` packed in `packed` find a directory (not a link to one)?"""
    return stat.S_ISDIR(_KEY.unpack(packed)[5])


def racy(packed: bytes, since: int) -> bool:
    """Are the timestamps of `packed` too close to `since` to prove anything?"""
    _, mtime, ctime, *_ = _KEY.unpack(packed)
    return max(mtime, ctime) >= since - MARGIN


def look(path: str, how: int) -> bytes | None:
    """`path` now, as an entry compared `how` records it; None when nothing is there
    (an `ABSENT` entry records `NOTHING`)."""
    try:
        st = os.stat(path) if how in _FOLLOW else os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return NOTHING if how == ABSENT else None
    except OSError:
        return None
    return None if how == ABSENT else key(st, how)


class Proof:
    """A no-change proof: its header (`snapshot`, `evaluation`, `counts`,
    `environ`) and its entries, path -> (how, packed)."""

    def __init__(
        self,
        snapshot: str,
        evaluation: str,
        counts: Mapping[str, int],
        environ: Mapping[str, str | None],
        entries: dict[str, tuple[int, bytes]],
    ) -> None:
        self.snapshot = snapshot
        self.evaluation = evaluation
        self.counts = dict(counts)
        self.environ = dict(environ)
        self.entries = entries

    def followed(self) -> frozenset[str]:
        """The paths whose `stat` (through links) `holds` compares in full, mode included."""
        return frozenset(p for p, (how, _) in self.entries.items() if how == STAT)

    def holds(self) -> bool:
        """Does every path still compare equal (and the environment read by
        the rc advice say the same)?"""
        for name, value in self.environ.items():
            if os.environ.get(name) != value:
                return False
        return all(look(path, how) == packed for path, (how, packed) in self.entries.items())

    def save(self, state: Path) -> None:
        """Write it (the caller holds the state lock); errors are the caller's
        to ignore: a missing proof costs a slower run."""
        head = {
            "format": FORMAT,
            "snapshot": self.snapshot,
            "evaluation": self.evaluation,
            "counts": self.counts,
            "environ": self.environ,
            "count": len(self.entries),
        }
        paths = list(self.entries)
        body = b"".join(_ENTRY.pack(*self.entries[p]) for p in paths) + "".join(
            p + "\0" for p in paths
        ).encode("utf-8", "surrogateescape")
        line = json.dumps(head, ensure_ascii=False).encode("utf-8", "surrogateescape")
        rest = line + b"\n" + body
        data = MAGIC + rest + _CRC.pack(zlib.crc32(rest))
        atomic_write(state / NAME, data, 0o600, durable=False)


def load(state: Path) -> Proof | None:
    """The proof in the state dir, when there is one, whole and of this format."""
    try:
        with open(state / NAME, "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        return _decode(data)
    except (ValueError, LookupError, TypeError, struct.error):
        return None


def _decode(data: bytes) -> Proof | None:
    if not data.startswith(MAGIC):
        return None
    rest = data[len(MAGIC) : len(data) - _CRC.size]
    if (
        len(data) < len(MAGIC) + _CRC.size
        or zlib.crc32(rest) != _CRC.unpack_from(data, len(data) - _CRC.size)[0]
    ):
        return None  # the header and the entries, whole
    end = rest.index(b"\n")
    head: dict[str, Any] = json.loads(rest[:end])
    if head.get("format") != FORMAT:
        return None
    body = rest[end + 1 :]
    count = head["count"]
    start = count * _ENTRY.size  # the fixed fields, one per path, then the paths
    paths = body[start:].decode("utf-8", "surrogateescape").split("\0")
    if len(paths) != count + 1 or paths.pop():
        return None
    entries = {p: _ENTRY.unpack_from(body, i * _ENTRY.size) for i, p in enumerate(paths)}
    return Proof(
        head["snapshot"],
        head["evaluation"],
        head["counts"],
        head["environ"],
        entries,
    )


def discard(state: Path) -> None:
    """Delete the proof (before a journal begins, and whenever what it names changes)."""
    try:
        os.unlink(state / NAME)
    except FileNotFoundError:
        pass
