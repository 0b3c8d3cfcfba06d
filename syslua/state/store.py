"""Content-addressed store: blobs and trees by SHA-256 under the data dir.

Blobs live at `objects/<2 hex>/<62 hex>`, trees (unpacked packages, build
outputs) at `trees/<name>`. An object is written to a temp file in the store's
`tmp/` (`fsutil.AtomicFile`), hashed while written, made read-only for its
owner alone (0400: blobs hold originals, secrets and config sources), then
renamed into place, so an object either exists whole or not at all; writing
the same content twice keeps one copy. `sync()` makes everything written so far durable at once,
which lets the journal batch many backups under one flush.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from syslua.errors import StateError
from syslua.fsutil import CHUNK, AtomicFile, fsync_dir, make_dir
from syslua.state.layout import BLOB, PASSAGE, PRIVATE_DIR

SYNC_ONE_BY_ONE = 16


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.objects = root / "objects"
        self.trees = root / "trees"
        self.tmp = root / "tmp"
        self._unsynced: list[Path] = []  # blobs written since the last sync
        self._created: list[Path] = []  # every blob this Store wrote (see `mark`)
        self._dirs: set[Path] = (
            set()
        )  # directories known to exist (a thousand blobs, one check each)

    def _ensure(self) -> None:
        if self.tmp in self._dirs:
            return
        make_dir(self.root, PASSAGE, parents_mode=PASSAGE)
        make_dir(self.objects, PRIVATE_DIR)
        make_dir(self.trees, PASSAGE)  # package trees are reached through the profile
        make_dir(self.tmp, PRIVATE_DIR)
        self._dirs.add(self.tmp)

    def path(self, digest: str) -> Path:
        return self.objects / digest[:2] / digest[2:]

    def has(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def _put(self, fill: Callable[[AtomicFile], str]) -> str:
        """Write an object with `fill` (which returns its digest), then name it by its digest.

        The temp file lives in `tmp/`, never among the objects; an object that
        is already there is kept and the new copy dropped.
        """
        self._ensure()
        with AtomicFile(None, BLOB, durable=False, temp_dir=self.tmp) as f:
            digest = fill(f)
            target = self.path(digest)
            if target.exists():
                f.discard()
            else:
                if target.parent not in self._dirs:
                    make_dir(target.parent, PRIVATE_DIR)
                    self._dirs.add(target.parent)
                f.target = target
        if f.committed:
            self._unsynced.append(target)  # made durable by sync(), in one batch
            self._created.append(target)
        return digest

    def put_bytes(self, data: bytes) -> str:
        import hashlib  # on first use, not at import: loading OpenSSL costs a run that hashes nothing

        digest = hashlib.sha256(data).hexdigest()
        if self.has(digest):
            return digest

        def fill(f: AtomicFile) -> str:
            f.write(data)
            return digest

        return self._put(fill)

    def put_file(self, source: str | os.PathLike[str]) -> str:
        """Copy a file into the store, hashing while copying.

        A file of up to one chunk is read whole and hashed first: when the
        store already has it (the old content an update replaces, every file
        of a rollback), nothing is written at all."""

        import hashlib

        with open(source, "rb") as src:
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

    def read(self, digest: str) -> bytes:
        import hashlib

        try:
            data = self.path(digest).read_bytes()
        except FileNotFoundError:
            raise StateError(f"store object {digest[:12]} is missing from {self.objects}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise StateError(
                f"store object {digest[:12]} is corrupt (its content does not match its hash)"
            )
        return data

    def mark(self) -> int:
        """A point to `remove_since` (objects this Store wrote after it)."""
        return len(self._created)

    def remove_since(self, mark: int) -> None:
        """Remove the objects written since `mark`: they are new (an object
        already there is never written again), and the caller knows nothing
        refers to them (an apply that stopped before changing anything, a
        snapshot that could not be recorded)."""
        gone, self._created = self._created[mark:], self._created[:mark]
        for path in gone:
            try:
                path.unlink()
                path.parent.rmdir()  # only when it held nothing else
                self._dirs.discard(path.parent)
            except OSError:
                pass
        self._unsynced = [p for p in self._unsynced if p not in set(gone)]

    def sync(self) -> None:
        """Make every blob written since the last sync durable (one batch).

        A few blobs are fsynced one by one; a large batch (an apply that backs
        up hundreds of files) takes a single system-wide sync instead.
        """
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
        if not self.objects.is_dir():
            return []
        return [d.name + f.name for d in self.objects.iterdir() if d.is_dir() for f in d.iterdir()]

    def all_trees(self) -> list[str]:
        if not self.trees.is_dir():
            return []
        return [t.name for t in self.trees.iterdir()]

    def remove_object(self, digest: str) -> None:
        p = self.path(digest)
        try:
            os.chmod(p, 0o644)
            p.unlink()
        except FileNotFoundError:
            pass
