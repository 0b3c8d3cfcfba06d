"""Write-ahead journal of an apply: the undo record of every mutation, durable before it.

The journal is `state/journal/journal.jsonl`: a `begin` line, then records.
A `path` record holds what a path was before the apply touched it (absent;
a file with its content's blob in the store, mode, owner; a directory; a
symlink). Any other record is a kind's own (an exec's undo command, a
profile swap, an account as it was): its `type` field names the kind, which
undoes it.

Records are batched: `prepare` captures the paths an item is expected to
touch, and `flush` makes a whole batch durable at once: the store writes
and syncs the blobs the records name (a small blob waits in memory until
then), then the records are written and the journal file is fsynced. A path no one predicted is recorded on the spot by
`before_change`, which flushes before returning. The journal is deleted only
after the apply has committed its snapshot; a journal found by a later
command means an apply was interrupted and is rolled back.

A command runs only once a `started` record names its process group
(`process.Runner`, `resources.groups`): recovery stops what is still
alive of it before undoing anything.

New content itself is written without an fsync per file (group commit):
`sync_touched` makes it durable, one `syncfs` per filesystem, just before
the commit record. A crash before that record rolls back to the recorded
bytes, which were durable before anything changed; a crash after it finds
the new content durable (see docs/atomic-apply.md).

Every line is sealed: the journal has a random key of its own, in an
owner-only file beside it (`journal.key`, durable before the `begin`
record), and each record line ends with an HMAC-SHA256 of the record's
bytes under that key (`"mac"`). Recovery (`read_checked`) undoes only
records whose MAC is right, so a line added or edited by hand (a path
outside the apply's, an undo command) is ignored rather than obeyed. A
journal written before lines were sealed (no key, no MAC on its `begin`)
is read as it always was, and says so.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets as random_bytes
import signal
import stat
import threading
import time
from pathlib import Path
from typing import Any

from syslua import safe_fs, secrets
from syslua.errors import StateError
from syslua.fsutil import fsync_dir, make_dir, sync_filesystems
from syslua.state import proof, stat_index
from syslua.state.layout import JOURNAL_FILE, PASSAGE, PRIVATE_DIR, PRIVATE_FILE, journal_left
from syslua.state.records import (
    ABSENT,
    DIR,
    FILE,
    LINK,
    OTHER,
    Begin,
    Commit,
    Ended,
    PathRecord,
    PathState,
    Record,
    Started,
    record_from_json,
)
from syslua.state.store import Store

JOURNAL = JOURNAL_FILE
KEY = "journal.key"  # the journal's own HMAC key, beside it
CRASH_AT = "SYSLUA_CRASH_AT"


def crash_point(name: str) -> None:
    """Fault injection for the crash tests: a real SIGKILL of this process at
    the point called `name`, when the environment variable SYSLUA_CRASH_AT
    names it. Points: `journal-batch` (the first batch of path records
    written to the journal file, not yet fsynced), `before-commit` (every
    change written and the snapshot saved, nothing synced, no commit
    record), `after-commit` (the commit record durable, the snapshot not yet
    current).

    It lives here, not in the tests, because recovery is only proven by
    killing a real `sys apply` between two exact writes, which no signal
    sent from outside can time; it costs one environment lookup per point."""
    if os.environ.get(CRASH_AT) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def capture(path: str, store: Store) -> PathState:
    """What is at `path` now, with a regular file's content copied into the
    store. Read through `safe_fs`, as the change that follows is made: a
    link on the way that may not be followed (`safe_fs.UnsafePath`) fails
    the change before anything is read through it. A path that `lstat`
    finds absent is recorded absent at once (one system call, most of a
    clean apply): nothing is read, so no link is read through."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return PathState(ABSENT)
    except OSError:
        pass  # the walk below says what it is
    try:
        with safe_fs.at(path) as (dfd, name):
            st = safe_fs.lstat_at(dfd, name)
            if st is None:
                return PathState(ABSENT)
            mode, uid, gid = stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid
            if stat.S_ISREG(st.st_mode):
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
                fd = os.open(name, flags, dir_fd=dfd)
                with os.fdopen(fd, "rb") as src:
                    return PathState(FILE, store.put_stream(src), mode, uid, gid)
            if stat.S_ISDIR(st.st_mode):
                return PathState(DIR, mode=mode, uid=uid, gid=gid)
            if stat.S_ISLNK(st.st_mode):
                return PathState(LINK, uid=uid, gid=gid, target=os.readlink(name, dir_fd=dfd))
            return PathState(OTHER, mode=mode, uid=uid, gid=gid)
    except (FileNotFoundError, NotADirectoryError):
        return PathState(ABSENT)  # its directory is not there (or not a directory)


class Journal:
    def __init__(self, directory: Path, store: Store) -> None:
        self.dir = directory
        self.file = directory / JOURNAL
        self.store = store
        self.by_path: dict[str, PathRecord] = {}  # path -> its record (first capture wins)
        self.by_item: dict[str, list[Record]] = {}
        self._pending: list[Record] = []
        self._lock = threading.RLock()
        self._fh: Any = None
        self._key = b""  # set by `begin`: every line written is sealed with it
        self.committed = False  # the commit record is durable: recovery finishes this apply

    # -- lifecycle -----------------------------------------------------------
    @classmethod
    def begin(
        cls, directory: Path, store: Store, kind: str, previous: str | None, digest: str
    ) -> Journal:
        """A new journal, its `begin` record durable: `kind` of run (apply,
        rollback, destroy), from the snapshot `previous`, recording `digest`."""
        if (directory / JOURNAL).exists():
            raise StateError(
                f"a journal already exists at {directory}; an interrupted run must be recovered first"
            )
        # The stat index and the no-change proof go first: one left by a run
        # that dies from here on could claim what this run is about to change
        # (`state/stat_index`, `state/proof`).
        stat_index.discard(directory.parent)
        proof.discard(directory.parent)
        make_dir(directory, PRIVATE_DIR, parents_mode=PASSAGE)
        j = cls(directory, store)
        j._key = _new_key(directory)
        # Owner only: the records hold paths, previous modes and undo commands.
        fd = os.open(j.file, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, PRIVATE_FILE)
        os.fchmod(fd, PRIVATE_FILE)
        j._fh = os.fdopen(fd, "a", encoding="utf-8")
        j._pending.append(Begin(os.getpid(), time.time(), kind, previous, digest))
        try:
            j.flush()
            fsync_dir(directory)
        except OSError:
            j.abandon()  # a full disk: no journal rather than half a begin record
            raise
        return j

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def abandon(self) -> None:
        """Drop a journal that recorded no change (preparing it failed): close
        it and delete it."""
        self._pending.clear()
        try:
            self.close()
        except OSError:
            self._fh = None  # the file is closed; what it failed to write is not needed
        remove(self.dir)

    def commit(self) -> None:
        """The apply is recorded: the journal is no longer needed."""
        self.close()
        remove(self.dir)

    # -- records -------------------------------------------------------------
    def prepare(self, item: str, paths: list[str]) -> None:
        """Capture the previous state of `paths` (buffered; call `flush` before acting)."""
        with self._lock:
            for path in paths:
                if path not in self.by_path:
                    try:
                        prev = capture(path, self.store)
                    except safe_fs.UnsafePath:
                        # Not read through a link that may not be followed:
                        # the change it precedes is made through the same
                        # walk, which fails the item; a `before_change`
                        # then captures it, should the link be gone by then.
                        continue
                    self._add(PathRecord(item, path, prev))

    def before_change(self, item: str, path: str) -> None:
        """Hook for providers: record `path` now if no batch did, durably."""
        with self._lock:
            if path in self.by_path:
                return
            self._add(PathRecord(item, path, capture(path, self.store)))
            self.flush()

    def before_changes(self, item: str, paths: list[str]) -> None:
        """`before_change` for many paths: captured, then made durable in one flush."""
        with self._lock:
            self.prepare(item, paths)
            self.flush()

    def note(self, record: Record, *, durable: bool = True) -> None:
        """Any other record (a kind's own, the originals added, a snapshot, the commit)."""
        with self._lock:
            self._add(record)
            if durable:
                self.flush()
                if isinstance(record, Commit):
                    self.committed = True

    # -- commands (process.Tracker) -----------------------------------------
    def started(self, pgid: int, start: int | None, boot: str | None) -> None:
        """A command is about to run: its process group, written before it
        does (recovery stops it if the run dies). Written, not synced: in the
        kernel's hands, it outlives a killed syslua, and only a crash of the
        machine loses it, which ends the command too (recovery compares boot
        ids). Records waiting for their batch go with it, durably as always.
        Nothing once the journal is closed: there is no run left to recover."""
        with self._lock:
            if self._fh is None:
                return
            record = Started(pgid, start, boot)
            if self._pending:
                self.note(record)
                return
            self.by_item.setdefault(record.item, []).append(record)
            self._fh.write(_seal(record.to_json(), self._key) + "\n")
            self._fh.flush()

    def ended(self, pgid: int) -> None:
        """The command's process group is gone: written with the next batch
        (recovery checks a group's start time anyway)."""
        with self._lock:
            if self._fh is not None:
                self.note(Ended(pgid), durable=False)

    def _add(self, record: Record) -> None:
        if isinstance(record, PathRecord):
            self.by_path[record.path] = record
        self.by_item.setdefault(record.item, []).append(record)
        self._pending.append(record)

    def flush(self) -> None:
        """Make every buffered record (and the blobs they name) durable: one sync."""
        with self._lock:
            if not self._pending:
                return
            if self._fh is None:
                raise StateError("the journal is closed")
            # The blobs these records name are on disk and durable before
            # the records reach the file: a small blob waits in memory until
            # the store syncs, and a record naming it must never outlive a
            # kill that lost it.
            self.store.sync()
            self._fh.write("".join(_seal(r.to_json(), self._key) + "\n" for r in self._pending))
            self._fh.flush()
            if any(isinstance(r, PathRecord) for r in self._pending):
                crash_point("journal-batch")
            self._pending.clear()
            os.fsync(self._fh.fileno())

    def sync_touched(self, *extra: Path) -> None:
        """Make durable everything written on the filesystems of the recorded
        paths (and of `extra`): the group commit before the commit record."""
        with self._lock:
            dirs = {os.path.dirname(p) or "." for p in self.by_path}
        sync_filesystems([*sorted(dirs), *extra])

    def records_for(self, item: str) -> list[Record]:
        return list(self.by_item.get(item, ()))

    def path_records(self) -> list[PathRecord]:
        """Every path record, item by item."""
        return [r for rs in self.by_item.values() for r in rs if isinstance(r, PathRecord)]


# Is a journal left behind (or something where it, or its directory, should be)?
exists = journal_left


def unusable(directory: Path) -> str | None:
    """Why what is at the journal's path cannot be a journal, or None when it can.

    A journal starts with a `begin` record, written and fsynced before the
    first change, so a file whose first line is not one (random bytes, some
    other file) was never written by an apply. An empty file is a journal
    whose run died before its first record: nothing was changed.
    """
    if os.path.lexists(directory) and (directory.is_symlink() or not directory.is_dir()):
        return f"{directory} is not a directory"
    path = directory / JOURNAL
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return f"{path} is a directory"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    with open(path, "rb") as f:
        first = f.readline(1 << 20)
    if not first:
        return None
    if not first.endswith(b"\n"):
        # The only line, torn: a run that died while writing its begin record
        # changed nothing. Anything else without a newline is not a journal.
        begun = first.startswith(b'{"op":"begin"')
        return None if begun else f"{path} is not a journal (its first record is not readable)"
    record = _record(first)
    if record is None or record.get("op") != "begin":
        return f"{path} is not a journal (its first record is not readable)"
    return None


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line.decode("utf-8"))
    except ValueError:  # not UTF-8, or not JSON
        return None
    return value if isinstance(value, dict) else None


# -- sealed lines ----------------------------------------------------------------------
_SEALED = re.compile(rb'(\{.*),"mac":"([0-9a-f]{64})"\}\n?')


def _new_key(directory: Path) -> bytes:
    """A fresh random key for the journal about to begin in `directory`,
    its content durable before its first record; its directory entry is
    made durable with the journal's own, by `begin`, before any change."""
    key = random_bytes.token_bytes(32)
    path = directory / KEY
    try:
        path.unlink()  # a key left by a run that died before its begin record
    except FileNotFoundError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
        os.write(fd, key.hex().encode() + b"\n")
        os.fsync(fd)
    except OSError:
        os.close(fd)
        _forget_key(directory)
        raise
    os.close(fd)
    return key


def _load_key(directory: Path) -> bytes | None:
    """The key of the journal in `directory`, or None when there is none
    that reads as one."""
    try:
        fd = os.open(directory / KEY, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        text = os.read(fd, 256).strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except ValueError:  # not ASCII (UnicodeDecodeError is one), or not hex
        return None
    return key if len(key) == 32 else None


def _forget_key(directory: Path) -> None:
    try:
        (directory / KEY).unlink()
    except (FileNotFoundError, NotADirectoryError):
        pass


def _mac(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def _seal(record: dict[str, Any], key: bytes) -> str:
    """A record's line: its JSON, ending with the HMAC of that JSON."""
    body = secrets.scrub(json.dumps(record, separators=(",", ":")))
    return body[:-1] + ',"mac":"' + _mac(key, body.encode()) + '"}'


def _unseal(line: bytes, key: bytes | None) -> bytes | None:
    """The JSON a sealed line holds, or None when its MAC is missing or wrong."""
    m = _SEALED.fullmatch(line)
    if m is None or key is None:
        return None
    body = m[1] + b"}"
    return body if hmac.compare_digest(_mac(key, body), m[2].decode()) else None


class Reading:
    """What recovery may trust of a journal left behind: its records whose
    seal is right (every record, for a journal from before seals), how many
    lines it ignored, and whether the journal was sealed at all."""

    __slots__ = ("records", "ignored", "sealed")

    def __init__(self, records: list[Record], ignored: int, sealed: bool) -> None:
        self.records = records
        self.ignored = ignored
        self.sealed = sealed


def read_checked(directory: Path) -> Reading:
    """The complete records of a journal left behind (a torn last line is
    ignored; a record that is JSON but not a journal's is `Damaged`).

    The journal is sealed when it has a key or any line carries a MAC (a
    sealed journal whose key is gone trusts nothing: deleting the key does
    not make it an unsealed one); then a line without a right MAC is
    ignored and counted. An unsealed journal, from before seals, is read
    as it always was: up to its first line that is not JSON."""
    try:
        with open(directory / JOURNAL, "rb") as f:
            lines = [line for line in f]
    except (FileNotFoundError, NotADirectoryError):
        return Reading([], 0, sealed=False)
    if lines and not lines[-1].endswith(b"\n"):
        lines.pop()  # torn: the change it would have described had not started
    key = _load_key(directory)
    sealed = os.path.lexists(directory / KEY) or any(_SEALED.fullmatch(x) for x in lines)
    out: list[Record] = []
    ignored = 0
    for line in lines:
        body = _unseal(line, key) if sealed else line
        record = _record(body) if body is not None else None
        if record is None:
            if not sealed:
                break
            ignored += 1
            continue
        record.pop("mac", None)
        out.append(record_from_json(record))
    return Reading(out, ignored, sealed)


def read(directory: Path) -> list[Record]:
    """The records of a journal left behind that `read_checked` trusts."""
    return read_checked(directory).records


def set_aside(source: Path, failed_dir: Path, name: str) -> Path:
    """Move a journal (a file, or whatever is at its path) into `failed_dir`,
    owner-only, where the user can read what happened; returns where it went."""
    make_dir(failed_dir, PRIVATE_DIR, parents_mode=PASSAGE)
    target = failed_dir / name
    n = 1
    while os.path.lexists(target):
        n += 1
        target = failed_dir / f"{n}-{name}"
    os.replace(source, target)
    if source.name == JOURNAL:
        _forget_key(source.parent)  # its lines were judged; the key is of no further use
    if target.is_symlink():
        return target
    os.chmod(target, PRIVATE_DIR if target.is_dir() else PRIVATE_FILE)
    for dirpath, dirs, files in os.walk(target):  # whatever was at a journal's path
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, stat.S_IMODE(os.lstat(p).st_mode) & ~0o077)
    return target


def remove(directory: Path) -> None:
    """Delete the journal in `directory`, and its key."""
    try:
        (directory / JOURNAL).unlink()
    except FileNotFoundError:
        pass
    _forget_key(directory)
    try:
        fsync_dir(directory)
    except OSError:
        pass
