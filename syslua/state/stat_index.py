"""The stat index: what `lstat` said of each managed file and each source
when its content was last hashed, so that a run where nothing changed
decides every file from `lstat` alone, as git's index does.

`state/stat-index` belongs to one snapshot: the current one when it was
written. Each entry is a path, what `lstat` gave (`stat` for a source, whose
content is read through links): size, mtime_ns, ctime_ns, inode, device,
mode, owner and group, and the SHA-256 of the content it had then. A file
whose `lstat` still gives exactly that has the same content: any write
changes its ctime, which nothing but the kernel sets (`touch` and
`os.utime` can put an mtime back; the ctime then moves).

Trust, in order (`digest`):

1. the index names the current snapshot, is whole (its checksum), and no
   journal is present: an apply, rollback or destroy deletes the index
   before its journal begins (`discard`), so one interrupted by a crash
   leaves none, and recovery runs with none;
2. the entry's `lstat` fields are all equal to the path's now;
3. it is not *racily clean*: a timestamp is only as fine as the filesystem's
   clock (a tick of a few milliseconds on ext4, 2 s on FAT), so a write in
   the same tick as the observation can leave every field equal. An entry
   is trusted only when its mtime and ctime are older than the start of the
   run that recorded it by more than `MARGIN` (2 s, the coarsest common
   granularity); the run's start (`since`) is taken before anything is
   looked at or written, so every change that could race with an
   observation is later than it. Entries that would be racy are not
   written at all: a file written a moment ago is hashed by the next run,
   which records it once it is old enough.

An entry is recorded with the `lstat` taken before its content was read:
a change after that `lstat` moves the ctime, so the entry stops matching.
A run that hashed anything it can record, or found entries that no longer
hold, writes the index again (temp file and rename, owner only); a run
that trusted everything writes nothing. Losing the index costs a rehash,
never a wrong answer.

File layout (little-endian): `MAGIC`, a header (`_HEAD`: since, entry
count, length of the snapshot id), the snapshot id, the entries' fixed
fields (`_ENTRY` each), their paths, each ended by a NUL (UTF-8, surrogate
escapes for undecodable bytes), and a CRC-32 of all between the header and
it. 10,000 files with their sources are 20,000 entries, 2.7 MB, loaded in
about 10 ms.
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from syslua.fsutil import AtomicFile

NAME = "stat-index"
MAGIC = b"sysluaSI2\n"
MARGIN = 2_000_000_000  # ns: see the module's docstring
JOURNAL = "journal/journal.jsonl"  # `Paths.journal` / `journal.JOURNAL`, not imported for it
_HEAD = struct.Struct("<qIH")  # since, entry count, length of the snapshot id
_CRC = struct.Struct("<I")  # the last 4 bytes: CRC-32 of everything between the header and it
_TIMES = struct.Struct("<8xqq")  # an entry's mtime_ns and ctime_ns
_BATCH = 1024  # entries written at a time
# size, mtime_ns, ctime_ns, inode, device, mode, uid, gid; then the SHA-256.
# In memory an entry stays as it is in the file (84 bytes): a few MB fewer
# at 10,000 files than tuples of ints, and compared with one `pack`.
KEY = struct.Struct("<QqqQQIII")  # the no-change proof packs `lstat` so too
_ENTRY = struct.Struct("<QqqQQIII32s")
_DIGEST = KEY.size  # where an entry's digest starts

Fields = tuple[int, int, int, int, int, int, int, int, bytes]


def key(st: os.stat_result) -> bytes:
    """The fields of `st` an entry records, packed as it packs them."""
    return KEY.pack(
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
        st.st_dev,
        st.st_mode,
        st.st_uid,
        st.st_gid,
    )


def fields(entry: bytes) -> Fields:  # for tests and debugging
    """An entry's fields: size, mtime_ns, ctime_ns, inode, device, mode, uid, gid, digest."""
    return _ENTRY.unpack(entry)  # type: ignore[return-value]


def discard(state: Path) -> None:
    """Delete the index (before a journal begins: see the module's docstring)."""
    try:
        os.unlink(state / NAME)
    except FileNotFoundError:
        pass


class StatIndex:
    """The index of one run: the entries it loaded, what it trusted, and
    what it hashed (`observe`); `save` writes what still holds. An entry is
    kept as the file packs it (84 bytes); a path's `lstat` is compared as
    `key` packs it, which a `FileState` carries (`stat_key`)."""

    def __init__(self, snapshot: str | None, since: int, entries: dict[str, bytes]) -> None:
        self.snapshot = snapshot  # the snapshot the loaded entries belong to
        self.since = since  # the start of the run that recorded them (ns)
        self.entries = entries
        # Taken before this run looks at anything: the `since` of what it records.
        self.started = time.time_ns()
        self.used: set[str] = set()  # loaded entries that held
        self.fresh: dict[str, bytes] = {}  # hashed by this run, old enough to keep

    @classmethod
    def load(cls, state: Path, snapshot: str | None) -> StatIndex:
        """The index of `snapshot` (the current one); an empty one when there
        is none, it names another snapshot, it is damaged, or a journal is
        present (an interrupted run)."""
        empty = cls(snapshot, 0, {})
        if snapshot is None or os.path.lexists(state / JOURNAL):
            return empty
        try:
            with open(state / NAME, "rb") as f:
                data = f.read()
        except OSError:
            return empty
        try:
            return _decode(data, snapshot) or empty
        except (struct.error, UnicodeDecodeError, ValueError):  # a damaged file
            return empty

    def digest(self, path: str, stat_key: bytes) -> bytes | None:
        """The SHA-256 of the content at `path`, when the index may say it
        without reading it: `stat_key` (its `lstat` now, as `key` packs it)
        is what an entry recorded, and that entry is not racy. None: hash it."""
        fresh = self.fresh.get(path)
        if fresh is not None:  # hashed by this run: newer than what was loaded
            return fresh[_DIGEST:] if fresh[:_DIGEST] == stat_key else None
        entry = self.entries.get(path)
        if entry is None or entry[:_DIGEST] != stat_key:
            return None
        if max(_TIMES.unpack_from(entry)) >= self.since - MARGIN:
            return None  # racily clean: never written so, checked all the same
        self.used.add(path)
        return entry[_DIGEST:]

    def observe(self, path: str, stat_key: bytes, digest: bytes) -> None:
        """`path` had content `digest` when its `lstat` gave `stat_key` (taken
        before it was read). Kept only when not racy (see the module's docstring)."""
        if max(_TIMES.unpack_from(stat_key)) < self.started - MARGIN:
            self.fresh[path] = stat_key + digest

    @property
    def changed(self) -> bool:
        """Is there anything to write: entries hashed this run, or loaded
        ones that no longer hold?"""
        return bool(self.fresh) or len(self.used) != len(self.entries)

    def save(self, state: Path, snapshot: str) -> None:
        """Write what held and what was hashed, as the index of `snapshot`
        (made current by the caller, who holds the state lock). Errors are
        left to the caller, who may ignore them: the index is a cache.
        Written a batch of entries at a time, its checksum last: the file
        is never held whole in memory."""
        fresh, entries = self.fresh, self.entries
        kept = [p for p in self.used if p not in fresh]
        count = len(kept) + len(fresh)
        if not count:
            discard(state)  # none is as good as an empty one, and keeps the state dir as it was
            return
        ident = snapshot.encode()
        crc = 0
        with AtomicFile(state / NAME, 0o600, durable=False) as f:
            f.write(MAGIC + _HEAD.pack(self.started, count, len(ident)))
            for chunk in _chunks(ident, kept, entries, fresh):
                crc = zlib.crc32(chunk, crc)
                f.write(chunk)
            f.write(_CRC.pack(crc))


def _chunks(
    ident: bytes, kept: list[str], entries: dict[str, bytes], fresh: dict[str, bytes]
) -> Iterator[bytes]:
    """The body of the file, after its header: the snapshot id, the entries'
    fixed fields, then their paths, each ended by a NUL, in batches."""
    yield ident
    paths = [*kept, *fresh]
    for i in range(0, len(paths), _BATCH):
        batch = paths[i : i + _BATCH]
        yield b"".join(fresh.get(p) or entries[p] for p in batch)
    for i in range(0, len(paths), _BATCH):
        yield "".join(p + "\0" for p in paths[i : i + _BATCH]).encode("utf-8", "surrogateescape")


def _decode(data: bytes, snapshot: str) -> StatIndex | None:
    """The index in `data`, when it is whole and belongs to `snapshot`."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _HEAD.size + _CRC.size:
        return None
    since, count, idlen = _HEAD.unpack_from(data, len(MAGIC))
    at = len(MAGIC) + _HEAD.size
    body = memoryview(data)[at : len(data) - _CRC.size]
    (crc,) = _CRC.unpack_from(data, len(data) - _CRC.size)
    if zlib.crc32(body) != crc or bytes(body[:idlen]).decode() != snapshot:
        return None
    size = _ENTRY.size
    start = at + idlen  # entries are sliced from `data` itself: no copy of the whole block
    end = start + count * size
    if end > len(data) - _CRC.size:
        return None
    paths = data[end : len(data) - _CRC.size].decode("utf-8", "surrogateescape").split("\0")
    if len(paths) != count + 1 or paths.pop():
        return None
    entries = dict(zip(paths, [data[i : i + size] for i in range(start, end, size)], strict=True))
    return StatIndex(snapshot, since, entries)
