"""Content-addressed store: blobs and trees by SHA-256 under the data dir.

A blob of up to `PACK_MAX` bytes (most config files) is kept in a pack:
`packs/<name>.pack` holds the contents one after another, and
`packs/<name>.idx` lists each one's digest, offset and length, sorted by
digest. Small blobs wait in memory until `sync()` (or until `PACK_FLUSH`
bytes wait), which writes them as one pack: an apply of a thousand files
creates two store files, not a thousand, and one of ten thousand holds a
few megabytes of them at a time. Packs are written (and merged) blob by
blob, never read whole into memory. A larger blob is a loose object at
`objects/<2 hex>/<62 hex>`, streamed to a temp file in the store's `tmp/`
(`fsutil.AtomicFile`) and hashed while written. Trees (unpacked packages,
build outputs) live at `trees/<name>`.

Every object is read-only for its owner alone (0400: blobs hold originals,
secrets and config sources), and appears whole or not at all: a pack and
then its index are renamed into place, the index last, and a pack whose
size is not the one its index records (a crash that kept the names but not
the bytes), or whose index is not sorted or points outside it, is ignored.
Writing the same content twice keeps one copy.
`sync()` makes everything written so far durable at once, which lets the
journal batch many backups under one flush. A caller that records a digest
anywhere calls `sync()` first: until then a small blob may exist only in
this process's memory.
"""

from __future__ import annotations

import os
import shutil
import stat
import struct
import threading
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import BinaryIO

from syslua.errors import StateError
from syslua.fsutil import CHUNK, AtomicFile, fsync_dir, make_dir, sha256_file
from syslua.state.layout import BLOB, PASSAGE, PRIVATE_DIR

SYNC_ONE_BY_ONE = 16
PACK_MAX = 64 << 10  # larger blobs are loose objects, streamed, never held in memory
# Bytes waiting in memory that are written as a pack before `sync()`: what a
# large apply holds of the contents it stores (issue 27: a 10,000-file apply
# under 60 MiB at its peak: 4 MiB waiting put it over), in a few packs
# rather than one per file.
PACK_FLUSH = 2 << 20
MAX_PACKS = 32  # more, and `sync()` writes them all as one
_PACK_MAGIC = b"sluapak1"
_IDX_MAGIC = b"sluaidx1"
_IDX_HEAD = struct.Struct("<8sQ")  # magic, size of the pack
_IDX_REC = struct.Struct("<32sQQ")  # digest, offset, length


class _Pack:
    """One pack and its index, read lazily; lookups bisect the sorted index."""

    __slots__ = ("count", "fd", "index", "keys", "name", "path", "size")

    def __init__(self, path: Path, index: bytes, keys: frozenset[str] | None = None) -> None:
        self.path = path
        self.name = path.stem
        self.index = index
        self.count = (len(index) - _IDX_HEAD.size) // _IDX_REC.size
        self.size = _IDX_HEAD.unpack_from(index)[1]
        self.fd: int | None = None
        # The hex digests it holds, for a pack this process wrote (a lookup
        # that misses costs no bisection: an apply looks up every blob it
        # stores in the packs it wrote before).
        self.keys = keys

    def find(self, key: bytes) -> tuple[int, int] | None:
        """Offset and length of the blob whose raw digest is `key`."""
        index, rec, head = self.index, _IDX_REC.size, _IDX_HEAD.size
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            at = head + mid * rec
            here = index[at : at + 32]
            if here < key:
                lo = mid + 1
            elif here > key:
                hi = mid
            else:
                _, offset, length = _IDX_REC.unpack_from(index, at)
                return offset, length
        return None

    def entries(self) -> Iterable[tuple[bytes, int, int]]:
        return _IDX_REC.iter_unpack(self.index[_IDX_HEAD.size :])

    def sound(self) -> bool:
        """Are the index's records sorted, and inside the pack? (False: a
        damaged index, whose offsets must never be read nor its digests listed)"""
        start, end, last = len(_PACK_MAGIC), self.size, b""
        for key, offset, length in self.entries():
            if key <= last or offset < start or offset + length > end:
                return False
            last = key
        return True

    def open(self) -> int:
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        return self.fd

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self.open(), length, offset)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    __del__ = close  # a Store goes with its command: so do the packs it read


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.objects = root / "objects"
        self.packs = root / "packs"
        self.trees = root / "trees"
        self.tmp = root / "tmp"
        self._lock = threading.RLock()  # items of an apply store blobs from worker threads
        self._pending: dict[str, bytes] = {}  # small blobs not yet in a pack
        self._pending_size = 0
        self._loaded: list[_Pack] | None = None  # the packs on disk, read on first lookup
        self._unsynced: list[Path] = []  # loose blobs and packs written since the last sync
        self._created: list[str] = []  # every blob this Store wrote (see `mark`)
        self._made: dict[str, list[str]] = {}  # pack name -> its digests (packs written here)
        self._dirs: set[Path] = set()  # directories known to exist (one check for many blobs)
        # The `objects/<2 hex>` directories there are, listed once (`_may_be_loose`).
        self._prefixes: set[str] | None = None

    def _ensure(self) -> None:
        if self.tmp in self._dirs:
            return
        make_dir(self.root, PASSAGE, parents_mode=PASSAGE)
        make_dir(self.objects, PRIVATE_DIR)
        make_dir(self.packs, PRIVATE_DIR)
        make_dir(self.trees, PASSAGE)  # package trees are reached through the profile
        make_dir(self.tmp, PRIVATE_DIR)
        self._dirs.add(self.tmp)

    def path(self, digest: str) -> Path:
        """Where the loose object `digest` is (or would be)."""
        return Path(f"{self.objects}/{digest[:2]}/{digest[2:]}")  # one parse, not two joins

    def packed(self, digest: str) -> bool:
        """Is `digest` a small blob (in a pack, or waiting for one)? No file system call."""
        with self._lock:
            return digest in self._pending or self._find(digest) is not None

    # -- packs -------------------------------------------------------------------
    def _pack_list(self) -> list[_Pack]:
        with self._lock:
            if self._loaded is None:
                self._loaded = [p for n in self._pack_names() if (p := self._open_pack(n))]
            return self._loaded

    def _pack_names(self) -> list[str]:
        try:
            names = os.listdir(self.packs)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(n[:-4] for n in names if n.endswith(".idx"))

    def _open_pack(self, name: str) -> _Pack | None:
        """The pack `name`, or None when its index or its size is not whole."""
        try:
            index = (self.packs / f"{name}.idx").read_bytes()
            size = os.stat(self.packs / f"{name}.pack").st_size
        except OSError:
            return None
        if len(index) < _IDX_HEAD.size or (len(index) - _IDX_HEAD.size) % _IDX_REC.size:
            return None
        magic, expected = _IDX_HEAD.unpack_from(index)
        if magic != _IDX_MAGIC or size != expected:
            return None
        pack = _Pack(self.packs / f"{name}.pack", index)
        return pack if pack.sound() else None

    def _find(self, digest: str) -> tuple[_Pack, int, int] | None:
        try:
            key = bytes.fromhex(digest)
        except ValueError:
            return None
        for pack in self._pack_list():
            if pack.keys is not None and digest not in pack.keys:
                continue
            found = pack.find(key)
            if found is not None:
                return pack, found[0], found[1]
        return None

    def _write_pack(self, blobs: Mapping[str, Callable[[], bytes]], *, durable: bool) -> _Pack:
        """Write `blobs` (digest -> how to get its bytes, read one at a time
        as written) as one pack, then its index (the index last: a pack is
        found only once it is whole)."""
        import hashlib

        self._ensure()
        keys = sorted(blobs)
        name = hashlib.sha256("".join(keys).encode()).hexdigest()[:32]
        records, offset = [], len(_PACK_MAGIC)
        with AtomicFile(self.packs / f"{name}.pack", BLOB, durable=durable, sync_dir=False) as f:
            f.write(_PACK_MAGIC)
            for key in keys:
                data = blobs[key]()
                f.write(data)
                records.append(_IDX_REC.pack(bytes.fromhex(key), offset, len(data)))
                offset += len(data)
        index = _IDX_HEAD.pack(_IDX_MAGIC, offset) + b"".join(records)
        with AtomicFile(self.packs / f"{name}.idx", BLOB, durable=durable) as f:
            f.write(index)
        pack = _Pack(self.packs / f"{name}.pack", index, frozenset(keys))
        self._made[name] = keys
        if not durable:
            self._unsynced += [pack.path, pack.path.with_suffix(".idx")]
        return pack

    def _flush(self, *, durable: bool) -> bool:
        """Write the blobs waiting in memory as a pack (False: none waited)."""
        with self._lock:
            if not self._pending:
                return False
            pending = self._pending
            pack = self._write_pack(
                {k: partial(pending.__getitem__, k) for k in pending}, durable=durable
            )
            self._pack_list().append(pack)
            self._pending, self._pending_size = {}, 0
            return True

    # -- blobs -------------------------------------------------------------------
    def has(self, digest: str) -> bool:
        return self.packed(digest) or self.loose(digest) is not None

    def loose(self, digest: str) -> Path | None:
        """The loose object's path, when `digest` is one (packed blobs are not).
        Looked for as a string: a Path made for each blob an apply stores
        would intern each digest, and Python's table of interned strings
        grows by a megabyte for 10,000 of them."""
        p = f"{self.objects}/{digest[:2]}/{digest[2:]}"
        return Path(p) if os.path.isfile(p) else None

    def _may_be_loose(self, digest: str) -> bool:
        """Could `digest` be a loose object? False without a system call when
        its `objects/<2 hex>` directory was not there when first listed, nor
        made since by this Store: a new store (a first apply) stores a
        thousand small blobs with one `listdir`, not a thousand `stat`s. Only
        for deduplication, where a wrong False costs a second copy, never a
        blob taken for lost."""
        if self._prefixes is None:
            try:
                self._prefixes = set(os.listdir(self.objects))
            except OSError:
                self._prefixes = set()
        return digest[:2] in self._prefixes and self.loose(digest) is not None

    def size(self, digest: str) -> int:
        with self._lock:
            data = self._pending.get(digest)
            if data is not None:
                return len(data)
            found = self._find(digest)
        if found is not None:
            return found[2]
        try:
            return self.path(digest).stat().st_size
        except FileNotFoundError:
            raise self._missing(digest) from None

    def location(self, digest: str) -> str:
        """Where `digest` is kept, for messages: a loose object's path, or its pack's."""
        found = self._find(digest)
        if found is not None:
            return f"{found[0].path} (object {digest[:12]})"
        return str(self.path(digest))

    def files_of(self, digests: Iterable[str]) -> list[str]:
        """The store files that hold `digests` (a pack and its index, or a loose object)."""
        out: dict[str, None] = {}
        for d in digests:
            found = self._find(d)
            if found is not None:
                out[str(found[0].path)] = None
                out[str(found[0].path.with_suffix(".idx"))] = None
            else:
                out[str(self.path(d))] = None
        return list(out)

    def _put(self, fill: Callable[[AtomicFile], str]) -> str:
        """Write a loose object with `fill` (which returns its digest), then name it by its digest.

        The temp file lives in `tmp/`, never among the objects; an object that
        is already there is kept and the new copy dropped.
        """
        self._ensure()
        with AtomicFile(None, BLOB, durable=False, temp_dir=self.tmp) as f:
            digest = fill(f)
            target = self.path(digest)
            if self.has(digest):
                f.discard()
            else:
                if target.parent not in self._dirs:
                    make_dir(target.parent, PRIVATE_DIR)
                    self._dirs.add(target.parent)
                    if self._prefixes is not None:
                        self._prefixes.add(digest[:2])
                f.target = target
        if f.committed:
            with self._lock:
                self._unsynced.append(target)  # made durable by sync(), in one batch
                self._created.append(digest)
        return digest

    def put_bytes(self, data: bytes) -> str:
        import hashlib  # on first use, not at import: loading OpenSSL costs a run that hashes nothing

        digest = hashlib.sha256(data).hexdigest()
        if len(data) > PACK_MAX:
            if self.has(digest):
                return digest

            def fill(f: AtomicFile) -> str:
                f.write(data)
                return digest

            return self._put(fill)
        with self._lock:
            if self.packed(digest) or self._may_be_loose(digest):
                return digest
            self._pending[digest] = data
            self._pending_size += len(data)
            self._created.append(digest)
            if self._pending_size >= PACK_FLUSH:
                self._flush(durable=False)
        return digest

    def put_file(self, source: str | os.PathLike[str]) -> str:
        """Copy a file into the store, hashing while copying.

        A file of up to one chunk is read whole and hashed first: when the
        store already has it (the old content an update replaces, every file
        of a rollback), nothing is written at all."""

        with open(source, "rb") as src:
            return self.put_stream(src)

    def put_stream(self, src: BinaryIO) -> str:
        """`put_file` of a file already open for reading (from its start)."""
        import hashlib

        first = src.read(CHUNK)
        if len(first) < CHUNK:  # the whole file
            return self.put_bytes(first)

        def fill(f: AtomicFile) -> str:
            h = hashlib.sha256(first)
            f.write(first)
            while chunk := src.read(CHUNK):
                h.update(chunk)
                f.write(chunk)
            return h.hexdigest()

        return self._put(fill)

    def _missing(self, digest: str) -> StateError:
        return StateError(f"store object {digest[:12]} is missing from {self.root}")

    def _raw(self, digest: str) -> bytes:
        with self._lock:
            data = self._pending.get(digest)
            if data is not None:
                return data
            found = self._find(digest)
            if found is not None and not self._readable(found[0]):
                # Merged or rewritten by another command since this Store
                # listed the packs (a reader takes no lock): list them again.
                self._reload()
                found = self._find(digest)
            if found is not None:
                pack, offset, length = found
                data = pack.read(offset, length)
                if len(data) != length:
                    raise StateError(
                        f"store object {digest[:12]} is corrupt (its pack {pack.path} is cut short)"
                    )
                return data
        try:
            return self.path(digest).read_bytes()
        except FileNotFoundError:
            raise self._missing(digest) from None

    def read(self, digest: str) -> bytes:
        import hashlib

        data = self._raw(digest)
        if hashlib.sha256(data).hexdigest() != digest:
            raise StateError(
                f"store object {digest[:12]} is corrupt (its content does not match its hash)"
            )
        return data

    def verify(self, digest: str) -> bool:
        """Does the object hold the content its name says? (False: missing or corrupt)"""
        loose = self.loose(digest) if self._find(digest) is None else None
        if loose is None:
            try:
                self.read(digest)
            except StateError:
                return False
            return True
        try:
            return sha256_file(loose) == digest  # streamed: a loose blob may be large
        except OSError:
            return False

    def loose_path(self, digest: str) -> Path:
        """A loose copy of `digest`, made from its pack when it has none, for
        a caller that needs a path (a link to the content)."""
        p = self.loose(digest)
        if p is not None:
            return p
        data = self.read(digest)
        self._ensure()
        target = self.path(digest)
        # Durable at once: a name for the content is handed out now (status
        # names it, rollback copies from it), and this Store may never sync.
        with AtomicFile(None, BLOB, durable=True, temp_dir=self.tmp) as f:
            f.write(data)
            make_dir(target.parent, PRIVATE_DIR)
            f.target = target
        return target

    def mark(self) -> int:
        """A point to `remove_since` (objects this Store wrote after it)."""
        return len(self._created)

    def remove_since(self, mark: int) -> None:
        """Remove the objects written since `mark`: they are new (an object
        already there is never written again), and the caller knows nothing
        refers to them (an apply that stopped before changing anything, a
        snapshot that could not be recorded). A pack goes when every blob in
        it is one of them."""
        with self._lock:
            gone, self._created = self._created[mark:], self._created[:mark]
            gone_set = set(gone)
            for digest in gone:
                if self._pending.pop(digest, None) is not None:
                    continue
                path = self.path(digest)
                try:
                    path.unlink()
                    path.parent.rmdir()  # only when it held nothing else
                    self._dirs.discard(path.parent)
                except OSError:
                    pass
            self._pending_size = sum(len(d) for d in self._pending.values())
            for name, keys in list(self._made.items()):
                if gone_set.issuperset(keys):
                    self._drop_pack(name)
            self._unsynced = [p for p in self._unsynced if p.exists()]

    def _readable(self, pack: _Pack) -> bool:
        """Can `pack` still be read? (opens it: an open pack stays readable)"""
        try:
            pack.open()
        except FileNotFoundError:
            return False
        return True

    def _reload(self) -> None:
        for pack in self._loaded or ():
            pack.close()
        self._loaded = None

    def _drop_pack(self, name: str) -> None:
        """Remove a pack: its index first, so that it is never found half gone."""
        for pack in self._pack_list():
            if pack.name == name:
                pack.close()
                self._pack_list().remove(pack)
                break
        files = [self.packs / f"{name}{suffix}" for suffix in (".idx", ".pack")]
        for path in files:
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        self._made.pop(name, None)
        # Not synced yet, and gone: what it held is in the pack that replaced it.
        self._unsynced = [p for p in self._unsynced if p not in files]

    def sync(self) -> None:
        """Make every blob written since the last sync durable (one batch).

        The blobs waiting in memory become one pack, fsynced with its index.
        A few loose blobs are fsynced one by one; a large batch (an apply that
        backs up hundreds of large files) takes a single system-wide sync.
        """
        if self._flush(durable=True) and len(self._pack_list()) > MAX_PACKS:
            self.compact()  # lookups bisect every pack: keep them few
        with self._lock:
            pending, self._unsynced = self._unsynced, []
        if len(pending) > SYNC_ONE_BY_ONE:
            os.sync()
            return
        dirs = set()
        for path in pending:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            dirs.add(path.parent)
        for d in dirs:
            fsync_dir(d)

    # -- trees (packages, builds) -------------------------------------------
    def tree_path(self, name: str) -> Path:
        return self.trees / name

    def add_tree(self, staging: Path, name: str) -> Path:
        """Move a finished directory into the store under `name`, read-only,
        and readable by everyone (0555 directories and programs, 0444 other
        files): other users run the tools, whatever umask built the tree."""
        self._ensure()
        target = self.tree_path(name)
        if target.exists():
            shutil.rmtree(staging, ignore_errors=True)
            return target
        for root, _dirs, files in os.walk(staging):
            for f in files:
                p = os.path.join(root, f)
                if not os.path.islink(p):
                    mode = stat.S_IMODE(os.lstat(p).st_mode)
                    os.chmod(p, 0o555 if mode & 0o111 else 0o444)
        os.replace(staging, target)
        for root, dirs, _files in os.walk(target):
            for d in dirs:
                p = os.path.join(root, d)
                if not os.path.islink(p):
                    os.chmod(p, 0o555)
        os.chmod(target, 0o555)
        # Trees are not synced: they are never undo records (the journal's
        # durability does not depend on them), and syncing megabytes of
        # package files would make every install wait for the disk.
        return target

    def remove_tree(self, name: str) -> None:
        target = self.tree_path(name)
        if not target.exists():
            return
        for root, dirs, _files in os.walk(target):
            os.chmod(root, 0o755)
            for d in dirs:
                p = os.path.join(root, d)
                if not os.path.islink(p):
                    os.chmod(p, 0o755)
        shutil.rmtree(target)

    def staging_dir(self, prefix: str) -> Path:
        self._ensure()
        import tempfile

        return Path(tempfile.mkdtemp(dir=self.tmp, prefix=prefix))

    def all_objects(self) -> list[str]:
        """Every blob on disk: loose objects, then the packs' (each digest once)."""
        out: dict[str, None] = {}
        if self.objects.is_dir():
            for d in self.objects.iterdir():
                if d.is_dir():
                    for f in d.iterdir():
                        out[d.name + f.name] = None
        for pack in self._pack_list():
            for key, _offset, _length in pack.entries():
                out[key.hex()] = None
        return list(out)

    def all_trees(self) -> list[str]:
        if not self.trees.is_dir():
            return []
        return [t.name for t in self.trees.iterdir()]

    def remove_objects(self, dead: Iterable[str]) -> None:
        """Remove blobs nothing refers to. A pack that holds any of them is
        written again without them (or removed, when it holds nothing else);
        the new pack is durable before the old one goes."""
        dead = set(dead)
        for digest in dead:
            p = self.path(digest)
            try:
                os.chmod(p, 0o644)
                p.unlink()
            except FileNotFoundError:
                pass
        with self._lock:
            for pack in list(self._pack_list()):
                entries = list(pack.entries())
                if not any(key.hex() in dead for key, _o, _n in entries):
                    continue
                live = {
                    key.hex(): partial(pack.read, offset, length)
                    for key, offset, length in entries
                    if key.hex() not in dead
                }
                if live:
                    self._pack_list().append(self._write_pack(live, durable=True))
                self._drop_pack(pack.name)

    def corrupt_packed(self) -> list[str]:
        """Packed blobs whose bytes no longer match their digest (and that no
        other pack holds whole), for `remove_objects`: a pack holds many
        blobs, and only the corrupt ones may go."""
        import hashlib

        bad: set[str] = set()
        good: set[str] = set()
        with self._lock:
            for pack in self._pack_list():
                for key, offset, length in pack.entries():
                    fine = hashlib.sha256(pack.read(offset, length)).digest() == key
                    (good if fine else bad).add(key.hex())
        return sorted(bad - good)

    def tidy(self) -> list[str]:
        """Remove what a killed writer left in `packs/`: temp files, and a pack
        whose index was never written (nothing can name its blobs). Only under
        the exclusive lock (`sys gc`), when no writer runs. Returns the names."""
        try:
            names = os.listdir(self.packs)
        except (FileNotFoundError, NotADirectoryError):
            return []
        indexed = {n[:-4] for n in names if n.endswith(".idx")}
        gone = [
            n for n in names if n.startswith(".") or (n.endswith(".pack") and n[:-5] not in indexed)
        ]
        for n in gone:
            try:
                os.unlink(self.packs / n)
            except FileNotFoundError:
                pass
        return gone

    def compact(self) -> None:
        """Write every pack's blobs as one pack (durable before the others go)."""
        with self._lock:
            packs = list(self._pack_list())
            if len(packs) < 2:
                return
            # Read blob by blob as the merged pack is written: never all at once.
            blobs: dict[str, Callable[[], bytes]] = {}
            for pack in packs:
                for key, offset, length in pack.entries():
                    blobs.setdefault(key.hex(), partial(pack.read, offset, length))
            merged = self._write_pack(blobs, durable=True)
            self._pack_list().append(merged)
            for pack in packs:
                if pack.name != merged.name:
                    self._drop_pack(pack.name)
