"""Safe unpacking of downloaded archives into a staging directory.

Formats: .tar.gz, .tar.xz, .tar.bz2, .zip, and a single binary (placed at
`bin/<name>`). Every member is checked: absolute names, `..` components,
links that point outside the tree, device files and fifos are rejected, and
so is an archive truncated or corrupt. A zip is checked whole before anything
is written; a tar is checked member by member as it streams past (one
decompression pass). Either way the target is a fresh staging directory that
`unpack` empties again on rejection (and the caller deletes on any error), so
a rejected archive leaves nothing behind, and nothing is ever written outside
that directory: each member's real destination is checked before writing.

An archive may not unpack to more than 200 times its own size, nor to more
than `max_unpack` bytes (`--max-unpack`, default 4 GiB): a decompression
bomb is refused, with the sizes, as soon as its members pass the limit (a
zip's declared sizes are checked before anything is decompressed).
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

from syslua.errors import ResourceError
from syslua.fsutil import write_back_soon

ARCHIVES = {
    ".tar.gz": "tar.gz",
    ".tgz": "tar.gz",
    ".tar.xz": "tar.xz",
    ".txz": "tar.xz",
    ".tar.bz2": "tar.bz2",
    ".tbz2": "tar.bz2",
    ".tbz": "tar.bz2",
    ".zip": "zip",
}
UNSUPPORTED = (
    ".7z",
    ".rar",
    ".tar.zst",
    ".zst",
    ".tar.lz",
    ".lz",
    ".tar",
    ".gz",
    ".xz",
    ".bz2",
    ".deb",
    ".rpm",
    ".dmg",
    ".pkg",
    ".msi",
    ".cab",
    ".tar.lzma",
    ".lzma",
    ".Z",
)
# `tar` (uncompressed) only when asked for by name: CCM's archives use it,
# while a package URL ending in .tar is refused as before.
FORMATS = ("tar.gz", "tar.xz", "tar.bz2", "zip", "binary", "tar")


MAX_RATIO = 200  # unpacked size / archive size
DEFAULT_MAX_UNPACK = 4 << 30  # 4 GiB


class UnpackError(ResourceError):
    pass


def human_size(n: int) -> str:
    """`512 bytes`, `10.0 KiB`, `4.0 GiB`."""
    if n < 1024:
        return f"{n} bytes"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"


class _Budget:
    """How much an archive may unpack to; `take` refuses as soon as it is passed."""

    def __init__(self, archive_size: int, max_unpack: int) -> None:
        self.archive_size = archive_size
        by_ratio = MAX_RATIO * archive_size
        self.limit = min(by_ratio, max_unpack)
        self.by_ratio = by_ratio <= max_unpack
        self.used = 0

    def take(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            if self.by_ratio:
                why = f"{MAX_RATIO} times its size: refused as a decompression bomb"
            else:
                why = "the --max-unpack limit: refused (a larger --max-unpack allows it)"
            raise UnpackError(
                f"the archive ({human_size(self.archive_size)}) unpacks to more than "
                f"{human_size(self.limit)}, {why}"
            )


def detect_format(name: str, declared: str | None = None) -> str:
    if declared:
        if declared not in FORMATS:
            raise UnpackError(
                f"unknown archive format `{declared}` (supported: {', '.join(FORMATS)})"
            )
        return declared
    lower = name.lower()
    for suffix, fmt in ARCHIVES.items():
        if lower.endswith(suffix):
            return fmt
    for suffix in UNSUPPORTED:
        if lower.endswith(suffix.lower()):
            raise UnpackError(
                f"unknown archive format for {name} (supported: .tar.gz, .tar.xz, .tar.bz2, .zip, "
                "or a single binary)"
            )
    return "binary"


def _clean(name: str, strip: int) -> str | None:
    """The member's path inside the tree after strip_components, or None to skip it."""
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnpackError(f"archive member {name!r} has an absolute path")
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnpackError(f"archive member {name!r} points outside the archive (..)")
    parts = parts[strip:]
    return "/".join(parts) if parts else None


def _inside(rel_link_dir: str, target: str) -> bool:
    if target.startswith("/"):
        return False
    joined = posixpath.normpath(posixpath.join(rel_link_dir, target))
    return not (joined == ".." or joined.startswith("../"))


class _Tree:
    """The staging directory being filled, and the real path of each of its
    directories already checked, so that a member's destination costs a
    lookup rather than a realpath of every component of its path."""

    def __init__(self, dest: Path) -> None:
        self.root = os.path.realpath(dest)
        self.dirs = {"": self.root}  # relative directory -> its real path, inside

    def inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root + os.sep)

    def target(self, rel: str, name: str) -> Path:
        """Where `rel` really lands, following links already unpacked: it must stay in the tree.

        Checking the member's name is not enough: `x -> .` then `x/x/l -> ../..`
        passes a name check while `l` points out of the tree.
        """
        parent_rel, base = posixpath.split(rel)
        parent = self.dirs.get(parent_rel)
        if parent is None:
            parent = os.path.realpath(os.path.join(self.root, parent_rel))
            if not self.inside(parent):
                raise UnpackError(
                    f"archive member {name!r} would be written outside the archive (through a link)"
                )
        return Path(parent) / base

    def mkdirs(self, rel: str, name: str) -> None:
        """Create the directories of `rel` one by one, never through a link that leaves the tree."""
        current = ""
        for part in [p for p in rel.split("/") if p]:
            current = f"{current}/{part}" if current else part
            if current in self.dirs:
                continue
            target = self.target(current, name)
            if os.path.isdir(target):
                real = os.path.realpath(target)  # a link to a directory unpacked earlier
                if not self.inside(real):
                    raise UnpackError(
                        f"archive member {name!r} would be written outside the archive (through a link)"
                    )
            else:
                if os.path.lexists(target):
                    raise UnpackError(f"archive member {name!r} needs a directory where a file is")
                target.mkdir()
                real = str(target)
            # Nothing replaces it later: a member never lands where something already is.
            self.dirs[current] = real

    def check_link(self, where: Path, target: str, name: str) -> None:
        resolved = os.path.realpath(os.path.join(where.parent, target))
        if target.startswith("/") or not self.inside(resolved):
            raise UnpackError(f"archive member {name!r} links outside the archive ({target})")

    def destination(self, rel: str, name: str, is_dir: bool) -> Path | None:
        """Create what a member needs and return where it is written (None for a directory)."""
        if is_dir:
            self.mkdirs(rel, name)
            return None
        self.mkdirs(posixpath.dirname(rel), name)
        out = self.target(rel, name)
        if os.path.lexists(out):
            raise UnpackError(f"archive member {name!r} appears twice or replaces a link")
        return out


def unpack(
    archive: Path,
    dest: Path,
    fmt: str,
    *,
    strip: int = 0,
    binary_name: str = "program",
    max_unpack: int = DEFAULT_MAX_UNPACK,
) -> None:
    """Unpack into `dest` (an empty staging directory); on rejection `dest` is emptied again."""
    try:
        budget = _Budget(archive.stat().st_size, max_unpack)
        _unpack(archive, dest, fmt, strip, binary_name, budget)
    except UnpackError:
        for entry in dest.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        raise


def _unpack(
    archive: Path, dest: Path, fmt: str, strip: int, binary_name: str, budget: _Budget
) -> None:
    try:
        if fmt == "binary":
            budget.take(budget.archive_size)
            (dest / "bin").mkdir(parents=True, exist_ok=True)
            target = dest / "bin" / binary_name
            shutil.copyfile(archive, target)
            os.chmod(target, 0o755)
        elif fmt == "zip":
            _unzip(archive, dest, strip, budget)
        else:
            _untar(archive, dest, strip, fmt, budget)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError) as e:
        raise UnpackError(f"the archive is truncated or corrupt: {e}") from None
    except (OSError, ValueError) as e:
        if isinstance(e, UnpackError):
            raise
        raise UnpackError(f"cannot unpack the archive: {e}") from None


def _copy(src: IO[bytes], out: Path, budget: _Budget) -> None:
    """Write a member, counting what it really unpacks to."""
    with open(out, "wb") as f:
        while chunk := src.read(1 << 20):
            budget.take(len(chunk))
            f.write(chunk)


class _Forward:
    """The uncompressed bytes of a tar archive, read strictly forward.

    tarfile's random-access mode (`r:`) only reads, tells and seeks ahead when
    members are taken in order, so this is all it needs; member data bypasses
    tarfile (`copy_to`), decompressed once and written from the decompressor's
    own buffers. tarfile's stream mode (`r|gz`) joins and slices every chunk
    several times while holding the GIL, which made unpacking the slowest
    part of installing packages in parallel.

    A compressed stream that ends before its end marker is an error
    (`EOFError`); concatenated streams (pigz, pbzip2, multi-stream xz) are
    read one after the other.
    """

    def __init__(self, raw: IO[bytes], fmt: str, budget: _Budget) -> None:
        self.raw = raw
        self.fmt = fmt
        self.budget = budget
        self.pos = 0  # offset in the uncompressed data
        self.pending = memoryview(b"")  # decompressed, not yet handed out
        self.feed = b""  # compressed input not yet given to the decompressor
        self.dec: Any = self._decompressor()

    def _decompressor(self) -> Any:
        if self.fmt == "tar.gz":
            return zlib.decompressobj(31)  # the gzip header and trailer, checked by zlib
        if self.fmt == "tar.xz":
            return lzma.LZMADecompressor()
        if self.fmt == "tar.bz2":
            return bz2.BZ2Decompressor()
        return None  # an uncompressed tar

    def _input(self) -> bytes:
        data, self.feed = self.feed or self.raw.read(_CHUNK), b""
        return data

    def _more(self, want: int) -> bytes:
        """Up to `want` (> 0) more uncompressed bytes; b"" where the data ends."""
        while True:
            dec = self.dec
            if dec is None:
                return self.raw.read(want)
            if dec.eof:
                # Zeros between streams are padding (xz's stream padding, gzip's too).
                rest = (self.feed or self.raw.read(_CHUNK)).lstrip(b"\0")
                while not rest and (chunk := self.raw.read(_CHUNK)):
                    rest = chunk.lstrip(b"\0")
                if not rest:
                    return b""
                self.feed, self.dec = rest, self._decompressor()
                continue
            # zlib takes its unconsumed input back each time; lzma and bz2 keep
            # theirs and say when they need more.
            zlib_like = isinstance(dec, _ZLIB_DECOMPRESS)
            asked = zlib_like or dec.needs_input
            data = self._input() if asked else b""
            try:
                out = dec.decompress(data, want)
            except (zlib.error, lzma.LZMAError, OSError) as e:  # bz2 raises OSError
                raise tarfile.ReadError(f"invalid compressed data ({e})") from None
            if dec.eof:
                self.feed = dec.unused_data
            elif zlib_like:
                self.feed = dec.unconsumed_tail
            if out:
                return out
            if asked and not data and not dec.eof:
                raise EOFError("the compressed data ends early")

    def _take(self, n: int) -> memoryview:
        """Up to `n` bytes, as a view (no copy): buffered ones first."""
        if not self.pending:
            self.pending = memoryview(self._more(_CHUNK))
        part, self.pending = self.pending[:n], self.pending[n:]
        self.pos += len(part)
        return part

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            raise io.UnsupportedOperation("reading a tar archive to its end at once")
        if n > _BIG_HEADER:  # only a huge pax or GNU long-name header asks for this much
            self.budget.take(n)
        parts = []
        while n > 0:
            part = self._take(n)
            if not part:
                break
            parts.append(part)
            n -= len(part)
        return b"".join(parts)

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence != 0 or offset < self.pos:
            raise io.UnsupportedOperation("a compressed tar archive is read forward only")
        self.skip(offset - self.pos)
        return self.pos

    def skip(self, n: int) -> None:
        while n > 0:
            part = self._take(n)
            if not part:
                raise EOFError("unexpected end of data")
            n -= len(part)

    def copy_to(self, out: IO[bytes], n: int) -> None:
        """Write the next `n` bytes to `out`."""
        while n > 0:
            part = self._take(n)
            if not part:
                raise EOFError("unexpected end of data")
            out.write(part)
            n -= len(part)


# Pieces of 128 KiB: the allocator reuses memory this size, while pieces of
# 1 MiB came fresh from the kernel each time (a page fault every 4 KiB, about
# a third of unpacking's CPU time with eight installs at once).
_CHUNK = 128 << 10
_BIG_HEADER = 1 << 20
_ZLIB_DECOMPRESS = type(zlib.decompressobj())


def _untar(archive: Path, dest: Path, strip: int, fmt: str, budget: _Budget) -> None:
    """One forward pass: each member is checked, then written inside `dest`.

    Writing as we go is safe because `dest` is a fresh staging directory that
    `unpack` empties again when any member is rejected; reading the archive once
    (rather than listing it, then seeking back for each member) halves the
    decompression work.
    """
    with open(archive, "rb") as raw:
        stream = _Forward(raw, fmt, budget)
        tree = _Tree(dest)
        with tarfile.open(fileobj=stream, mode="r:") as tar:  # type: ignore[call-overload]
            for m in tar:
                _untar_member(tar, stream, m, tree, strip, budget)
        # A download just written to the cache and read once: its writeback
        # can start now (not before it was read: its pages would be dropped).
        write_back_soon(raw.fileno())


def _untar_member(
    tar: tarfile.TarFile,
    stream: _Forward,
    m: tarfile.TarInfo,
    tree: _Tree,
    strip: int,
    budget: _Budget,
) -> None:
    # Counted before anything is written (a member's data is exactly m.size
    # bytes), skipped members too: they are decompressed all the same.
    if m.isreg():
        budget.take(m.size)
    rel = _clean(m.name, strip)
    if rel is None:
        return
    if m.ischr() or m.isblk() or m.isfifo() or m.isdev():
        raise UnpackError(f"archive member {m.name!r} is a device or fifo")
    if m.issym() and not _inside(posixpath.dirname(rel), m.linkname):
        raise UnpackError(f"archive member {m.name!r} links outside the archive ({m.linkname})")
    out = tree.destination(rel, m.name, m.isdir())
    if out is None:
        return
    if m.issym():
        tree.check_link(out, m.linkname, m.name)
        os.symlink(m.linkname, out)
    elif m.islnk():
        target = _clean(m.linkname, strip)
        if target is None:
            raise UnpackError(f"archive member {m.name!r} is a hard link outside the archive")
        source = tree.target(target, m.name)
        if os.path.islink(source) or not source.is_file():
            raise UnpackError(
                f"archive member {m.name!r} is a hard link to something that is not a file in the archive"
            )
        budget.take(source.stat().st_size)
        shutil.copyfile(source, out)
        os.chmod(out, (m.mode or 0o644) & 0o755)
    else:
        # Created here, never through whatever might be at `out` (O_EXCL | O_NOFOLLOW).
        fd = os.open(
            out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        with open(fd, "wb") as f:
            if m.issparse():
                src = tar.extractfile(m)
                if src is None:
                    raise UnpackError(f"archive member {m.name!r} cannot be read")
                shutil.copyfileobj(src, f, _CHUNK)
            else:
                stream.seek(m.offset_data)
                stream.copy_to(f, m.size)
            f.flush()
            write_back_soon(fd)
            os.fchmod(fd, (m.mode or 0o644) & 0o755 | 0o400)


def _unzip(archive: Path, dest: Path, strip: int, budget: _Budget) -> None:
    with zipfile.ZipFile(archive) as zf:
        # Declared sizes first: zipfile never decompresses a member past its
        # declared size, so this bounds the work of the CRC check below too.
        declared = _Budget(budget.archive_size, budget.limit)
        for info in zf.infolist():
            declared.take(info.file_size)
        bad = zf.testzip()
        if bad is not None:
            raise UnpackError(f"the archive is corrupt: member {bad!r} fails its CRC check")
        plan = []
        tree = _Tree(dest)
        for info in zf.infolist():
            rel = _clean(info.filename, strip)
            if rel is None:
                continue
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                target = zf.read(info).decode("utf-8", "replace")
                if not _inside(posixpath.dirname(rel), target):
                    raise UnpackError(
                        f"archive member {info.filename!r} links outside the archive ({target})"
                    )
            elif mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise UnpackError(f"archive member {info.filename!r} is a device or fifo")
            plan.append((info, rel, mode))
        for info, rel, mode in plan:
            out = tree.destination(rel, info.filename, info.is_dir())
            if out is None:
                continue
            if stat.S_ISLNK(mode):
                target = zf.read(info).decode("utf-8", "replace")
                tree.check_link(out, target, info.filename)
                os.symlink(target, out)
                continue
            with zf.open(info) as src:
                _copy(src, out, budget)
            os.chmod(out, (stat.S_IMODE(mode) or 0o644) & 0o755 | 0o400)
