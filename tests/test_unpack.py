"""`syslua.unpack` directly: formats, strip_components, and every rejection rule.

Archives are built in the test with tarfile/zipfile. A rejected archive must
be rejected before anything is written, so the staging directory stays empty,
and nothing may ever land outside it. The last tests go through `sys apply`
(file:// sources, no network) to check that a rejected archive leaves no tree
and no staging directory in the store.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import random
import shutil
import stat
import subprocess
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
from conftest import tree
from httpserver import file_url, make_tar, make_zip, sha256, tool

from syslua import unpack
from syslua.unpack import UnpackError, detect_format


@pytest.fixture
def stage(tmp_path: Path) -> Path:
    """A staging dir nested like the real one (store/tmp/pkg-x/tree), with a sentinel around it."""
    d = tmp_path / "root" / "store" / "tmp" / "pkg-x" / "tree"
    d.mkdir(parents=True)
    (tmp_path / "sentinel").write_text("keep\n")
    return d


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / "dl" / name
    p.parent.mkdir(exist_ok=True)
    p.write_bytes(data)
    return p


def everything(tmp_path: Path) -> dict:
    """Everything under tmp_path except the downloaded archives."""
    return {k: v for k, v in tree(tmp_path).items() if not k.startswith("dl")}


def rejected(
    tmp_path: Path, stage: Path, data: bytes, fmt: str, *needles: str, strip: int = 0
) -> str:
    archive = write(tmp_path, "a." + fmt, data)
    before = everything(tmp_path)
    with pytest.raises(UnpackError) as err:
        unpack.unpack(archive, stage, fmt, strip=strip)
    msg = str(err.value)
    for n in needles:
        assert n in msg, msg
    assert list(stage.iterdir()) == [], "a rejected archive wrote into the staging dir"
    assert everything(tmp_path) == before
    return msg


# -- format detection ------------------------------------------------------------


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("rg-15.1.0-x86_64-unknown-linux-musl.tar.gz", "tar.gz"),
        ("x.tgz", "tar.gz"),
        ("x.TAR.GZ", "tar.gz"),
        ("x.tar.xz", "tar.xz"),
        ("x.txz", "tar.xz"),
        ("x.tar.bz2", "tar.bz2"),
        ("x.tbz2", "tar.bz2"),
        ("x.zip", "zip"),
        ("jq-linux-amd64", "binary"),
        ("patchelf-win64-0.18.0.exe", "binary"),
    ],
)
def test_detect_format(name, fmt):
    assert detect_format(name) == fmt


@pytest.mark.parametrize("name", ["x.7z", "x.rar", "x.tar.zst", "x.deb", "x.tar", "x.gz", "x.dmg"])
def test_unknown_formats_are_rejected(name):
    with pytest.raises(UnpackError, match="unknown archive format"):
        detect_format(name)


def test_declared_format_wins_and_must_be_known():
    assert detect_format("download?id=3", "tar.xz") == "tar.xz"
    assert detect_format("x.7z", "zip") == "zip"
    with pytest.raises(UnpackError, match="unknown archive format `rar`"):
        detect_format("x.rar", "rar")


# -- good archives -----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["tar.gz", "tar.xz", "tar.bz2", "zip"])
def test_unpack_with_strip_components(tmp_path, stage, fmt):
    files = {
        "top/bin/tool": tool("t"),
        "top/share/man/man1/tool.1": b".TH tool\n",
        "top-level-file": b"x",
    }
    data = make_zip(files) if fmt == "zip" else make_tar(files, fmt.split(".")[1])
    unpack.unpack(write(tmp_path, "a." + fmt, data), stage, fmt, strip=1)
    got = sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())
    assert got == ["bin/tool", "share/man/man1/tool.1"]  # top-level-file has too few components
    assert (stage / "bin" / "tool").read_bytes() == tool("t")
    assert os.stat(stage / "bin" / "tool").st_mode & 0o100


def test_unpack_without_strip_keeps_layout(tmp_path, stage):
    unpack.unpack(
        write(tmp_path, "a.tar.gz", make_tar({"a/b/c": b"c", "d": b"d"})), stage, "tar.gz"
    )
    assert (stage / "a" / "b" / "c").read_bytes() == b"c"
    assert (stage / "d").read_bytes() == b"d"


def test_single_binary_goes_to_bin_name(tmp_path, stage):
    unpack.unpack(write(tmp_path, "jq-linux-amd64", tool("jq")), stage, "binary", binary_name="jq")
    out = stage / "bin" / "jq"
    assert out.read_bytes() == tool("jq")
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o755


def _tar_bytes(files: dict[str, bytes]) -> bytes:
    return make_tar(files, "")


def test_uncompressed_tar_by_name(tmp_path, stage):
    data = _tar_bytes({"top/bin/tool": tool("t"), "top/big": os.urandom(3 << 20)})
    unpack.unpack(write(tmp_path, "a.tar", data), stage, "tar", strip=1)
    assert (stage / "bin" / "tool").read_bytes() == tool("t")
    assert (stage / "big").stat().st_size == 3 << 20


@pytest.mark.parametrize("fmt", ["tar.gz", "tar.xz", "tar.bz2"])
def test_concatenated_streams_are_read_one_after_the_other(tmp_path, stage, fmt):
    """pigz, pbzip2 and multi-stream xz write several streams: the tar runs across them."""
    big = random.Random(3).randbytes(3 << 20)
    raw = _tar_bytes({"bin/tool": tool("t"), "share/big": big, "share/last": b"end\n"})
    compress = {
        "tar.gz": lambda b: gzip.compress(b, compresslevel=1),
        "tar.xz": lambda b: lzma.compress(b, preset=0),
        "tar.bz2": lambda b: bz2.compress(b, compresslevel=1),
    }[fmt]
    cuts = [0, 700, len(raw) // 2, len(raw)]
    data = b"".join(compress(raw[a:b]) for a, b in zip(cuts, cuts[1:]))
    if fmt != "tar.bz2":
        data += b"\0" * 8  # padding after the last stream is allowed
    unpack.unpack(write(tmp_path, "a." + fmt, data), stage, fmt)
    assert (stage / "share" / "big").read_bytes() == big
    assert (stage / "share" / "last").read_bytes() == b"end\n"


def test_gzip_stream_cut_between_members_is_truncated(tmp_path, stage):
    """Cut where a member ends: the tar alone would look complete, the gzip stream is not."""
    raw = _tar_bytes({"bin/tool": tool("t"), "share/more": os.urandom(20000)})
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    data = comp.compress(raw[:1024]) + comp.flush(zlib.Z_FULL_FLUSH)  # header + bin/tool's data
    rejected(tmp_path, stage, data, "tar.gz", "truncated or corrupt")


def test_garbage_after_a_stream_is_corrupt_when_the_tar_goes_on(tmp_path, stage):
    raw = _tar_bytes({"bin/tool": tool("t"), "share/more": os.urandom(20000)})
    data = gzip.compress(raw[:1024]) + b"<html>not an archive</html>"
    rejected(tmp_path, stage, data, "tar.gz", "truncated or corrupt")


def test_a_huge_pax_header_counts_against_the_limit(tmp_path, stage):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as t:
        info = tarfile.TarInfo("bin/tool")
        info.pax_headers = {"comment": "x" * (3 << 20)}
        data = tool("t")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    archive = write(tmp_path, "a.tar.gz", buf.getvalue())
    with pytest.raises(UnpackError, match="unpacks to more than"):
        unpack.unpack(archive, stage, "tar.gz", max_unpack=2 << 20)
    assert list(stage.iterdir()) == []


def test_sparse_members_are_expanded(tmp_path, stage):
    if not shutil.which("tar"):
        pytest.skip("GNU tar makes the sparse archive")
    src = tmp_path / "src"
    src.mkdir()
    head, tail = os.urandom(8192), os.urandom(8192)
    with open(src / "holes", "wb") as f:
        f.write(head)
        f.seek(64 << 10)
        f.write(tail)
    archive = tmp_path / "dl" / "a.tar.gz"
    archive.parent.mkdir()
    subprocess.run(["tar", "-S", "-czf", str(archive), "-C", str(src), "holes"], check=True)
    unpack.unpack(archive, stage, "tar.gz")
    listing = subprocess.run(
        ["tar", "-tvzf", str(archive)], check=True, capture_output=True, text=True
    ).stdout
    got = (stage / "holes").read_bytes()
    assert got == head + bytes((64 << 10) - 8192) + tail, listing


def test_links_inside_the_tree_are_kept(tmp_path, stage):
    data = make_tar(
        {"libexec/rg": tool("rg")},
        symlinks={"bin/rg": "../libexec/rg", "same": "libexec"},
        dirs=["bin"],
    )
    unpack.unpack(write(tmp_path, "a.tar.gz", data), stage, "tar.gz")
    assert os.readlink(stage / "bin" / "rg") == "../libexec/rg"
    assert (stage / "bin" / "rg").read_bytes() == tool("rg")
    zdata = make_zip({"libexec/rg": tool("rg")}, symlinks={"bin/rg": "../libexec/rg"})
    zstage = stage.parent / "ztree"
    zstage.mkdir()
    unpack.unpack(write(tmp_path, "a.zip", zdata), zstage, "zip")
    assert os.readlink(zstage / "bin" / "rg") == "../libexec/rg"


def test_hard_link_inside_is_copied(tmp_path, stage):
    data = make_tar({"top/a": b"x"}, hardlinks={"top/h": "top/a"})
    unpack.unpack(write(tmp_path, "a.tar.gz", data), stage, "tar.gz", strip=1)
    assert (stage / "h").read_bytes() == b"x"
    assert not (stage / "h").is_symlink()


def test_setuid_and_world_writable_bits_are_dropped(tmp_path, stage):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        info = tarfile.TarInfo("bin/suid")
        data = tool("s")
        info.size, info.mode = len(data), 0o6777
        t.addfile(info, io.BytesIO(data))
    unpack.unpack(write(tmp_path, "a.tar.gz", buf.getvalue()), stage, "tar.gz")
    mode = stat.S_IMODE(os.stat(stage / "bin" / "suid").st_mode)
    assert mode & 0o7000 == 0
    assert mode & 0o022 == 0


# -- rejections ------------------------------------------------------------------------


@pytest.mark.parametrize("comp", ["gz", "xz", "bz2"])
def test_tar_dotdot_member(tmp_path, stage, comp):
    data = make_tar({"ok": b"fine", "../escape": b"evil"}, comp)
    rejected(tmp_path, stage, data, f"tar.{comp}", "../escape", "..")


@pytest.mark.parametrize(
    "name", ["a/../../escape", "a/b/../../../escape", "..\\escape", "./../escape"]
)
def test_tar_hidden_dotdot(tmp_path, stage, name):
    rejected(tmp_path, stage, make_tar({"ok": b"fine", name: b"evil"}), "tar.gz", "outside")


@pytest.mark.parametrize("name", ["/etc/evil", "//evil", "C:/evil", "c:\\evil"])
def test_tar_absolute_member(tmp_path, stage, name):
    rejected(tmp_path, stage, make_tar({"ok": b"fine", name: b"evil"}), "tar.gz", "absolute path")


@pytest.mark.parametrize("target", ["../../etc/passwd", "../..", "/etc/passwd", "a/../../x", ".."])
def test_tar_symlink_outside(tmp_path, stage, target):
    data = make_tar({"ok": b"fine"}, symlinks={"link": target})
    rejected(tmp_path, stage, data, "tar.gz", "links outside", target)


def test_tar_symlink_outside_after_strip(tmp_path, stage):
    # inside the archive as a whole, but outside the tree once the top dir is stripped
    data = make_tar({"top/ok": b"fine", "sibling": b"s"}, symlinks={"top/link": "../sibling"})
    rejected(tmp_path, stage, data, "tar.gz", "links outside", strip=1)


def test_tar_hard_link_outside(tmp_path, stage):
    rejected(
        tmp_path,
        stage,
        make_tar({"ok": b"x"}, hardlinks={"h": "../etc/passwd"}),
        "tar.gz",
        "outside",
    )
    rejected(
        tmp_path,
        stage,
        make_tar({"ok": b"x"}, hardlinks={"h": "/etc/passwd"}),
        "tar.gz",
        "absolute",
    )
    rejected(
        tmp_path,
        stage,
        make_tar({"top/ok": b"x", "other": b"y"}, hardlinks={"top/h": "other"}),
        "tar.gz",
        "hard link outside",
        strip=1,
    )


def test_tar_devices_and_fifos(tmp_path, stage):
    rejected(
        tmp_path, stage, make_tar({"ok": b"x"}, fifos=["pipe"]), "tar.gz", "device or fifo", "pipe"
    )
    rejected(
        tmp_path,
        stage,
        make_tar({"ok": b"x"}, chardevs=["null"]),
        "tar.gz",
        "device or fifo",
        "null",
    )


def test_zip_dotdot_absolute_and_symlink_out(tmp_path, stage):
    rejected(tmp_path, stage, make_zip({"ok": b"x", "../escape": b"evil"}), "zip", "..")
    rejected(
        tmp_path, stage, make_zip({"ok": b"x", "/abs/escape": b"evil"}), "zip", "absolute path"
    )
    rejected(
        tmp_path,
        stage,
        make_zip({"ok": b"x"}, symlinks={"l": "../../etc/passwd"}),
        "zip",
        "links outside",
    )
    rejected(
        tmp_path, stage, make_zip({"ok": b"x"}, symlinks={"l": "/etc"}), "zip", "links outside"
    )


def test_zip_device_member(tmp_path, stage):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ok", b"x")
        info = zipfile.ZipInfo("fifo")
        info.external_attr = (stat.S_IFIFO | 0o644) << 16
        zf.writestr(info, b"")
    rejected(tmp_path, stage, buf.getvalue(), "zip", "device or fifo")


@pytest.mark.parametrize("fmt", ["tar.gz", "tar.xz", "tar.bz2", "zip"])
def test_truncated_archives(tmp_path, stage, fmt):
    files = {"bin/tool": tool("t") + os.urandom(30000), "z/last": os.urandom(30000)}
    data = make_zip(files) if fmt == "zip" else make_tar(files, fmt.split(".")[1])
    for cut in (len(data) // 3, len(data) - 200):
        rejected(tmp_path, stage, data[:cut], fmt, "corrupt")


def test_corrupt_zip_crc(tmp_path, stage):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("a", b"hello world " * 100)
    data = bytearray(buf.getvalue())
    data[100] ^= 0xFF  # inside the stored data of the member: only the CRC notices
    rejected(tmp_path, stage, bytes(data), "zip", "corrupt", "CRC")


def _corrupt(base: bytes, fails) -> bytes:  # type: ignore[no-untyped-def]
    """`base` with one byte flipped such that the stdlib reader raises a raw decompressor error."""
    for off in range(20, len(base) - 20):
        data = bytearray(base)
        data[off] ^= 0xFF
        try:
            fails(bytes(data))
        except (zlib.error, lzma.LZMAError):
            return bytes(data)
        except Exception:  # noqa: BLE001 - other errors are not what this test is after
            continue
    pytest.skip("no corruption found that makes the decompressor itself fail")


def _read_zip(data: bytes) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        zf.testzip()


def _read_txz(data: bytes) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as t:
        for m in t.getmembers():
            if m.isfile():
                t.extractfile(m).read()  # type: ignore[union-attr]


PAYLOAD = random.Random(7).randbytes(3000) + b"hello world " * 1000


def test_corrupt_deflate_stream_in_zip(tmp_path, stage):
    data = _corrupt(make_zip({"bin/tool": PAYLOAD}), _read_zip)
    rejected(tmp_path, stage, data, "zip", "corrupt")


def test_corrupt_lzma_stream_in_tar_xz(tmp_path, stage):
    data = _corrupt(make_tar({"bin/tool": PAYLOAD}, "xz"), _read_txz)
    archive = write(tmp_path, "a.tar.xz", data)
    with pytest.raises(UnpackError, match="corrupt"):
        unpack.unpack(archive, stage, "tar.xz")


@pytest.mark.parametrize("fmt", ["tar.gz", "tar.xz", "tar.bz2", "zip"])
def test_not_an_archive(tmp_path, stage, fmt):
    rejected(tmp_path, stage, b"<html>404 not found</html>", fmt, "truncated or corrupt")


def test_bad_member_after_good_ones_writes_nothing(tmp_path, stage):
    files = {f"f{i}": b"x" * 100 for i in range(20)}
    files["zz/../../late-escape"] = b"evil"
    rejected(tmp_path, stage, make_tar(files), "tar.gz", "outside")
    rejected(tmp_path, stage, make_zip(files), "zip", "outside")


# -- symlink chains: the lexical check alone is not enough ----------------------------


def _chain_tar(levels: int, payload_path: str) -> bytes:
    """`x -> .`, then `x/x/.../l -> ../../..` (lexically inside, really `levels` dirs up), then a file via `l`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:

        def sym(name: str, target: str) -> None:
            i = tarfile.TarInfo(name)
            i.type, i.linkname = tarfile.SYMTYPE, target
            t.addfile(i)

        sym("x", ".")
        sym("/".join(["x"] * levels + ["l"]), "/".join([".."] * levels))
        data = b"written outside the tree\n"
        info = tarfile.TarInfo("l/" + payload_path)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_symlink_chain_cannot_write_outside(tmp_path, stage):
    # stage is tmp_path/root/store/tmp/pkg-x/tree: five levels up is tmp_path
    archive = write(tmp_path, "chain.tar.gz", _chain_tar(5, "pwned"))
    try:
        unpack.unpack(archive, stage, "tar.gz")
    except UnpackError:
        pass
    assert not (tmp_path / "pwned").exists(), "a member was written outside the staging dir"


def test_hard_link_through_symlink_chain_cannot_read_outside(tmp_path, stage):
    (tmp_path / "secret").write_text("secret\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, target in (("x", "."), ("x/x/x/x/x/l", "../../../../..")):
            i = tarfile.TarInfo(name)
            i.type, i.linkname = tarfile.SYMTYPE, target
            t.addfile(i)
        h = tarfile.TarInfo("stolen")
        h.type, h.linkname = tarfile.LNKTYPE, "l/secret"
        t.addfile(h)
    archive = write(tmp_path, "h.tar.gz", buf.getvalue())
    try:
        unpack.unpack(archive, stage, "tar.gz")
    except UnpackError:
        pass
    assert not (stage / "stolen").exists(), "a file from outside the tree was copied in"


# -- through `sys apply`: a rejected archive leaves nothing in the store ----------------


def _apply_archive(sysenv, tmp_path: Path, name: str, data: bytes, bins: str = '"bin/tool"'):
    path = tmp_path / "dl" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    sysenv.write(
        "sys.lua",
        f'''
        package {{ name = "tool", version = "1", bin = {{ {bins} }},
                   source = lib.fetchUrl {{ url = "{file_url(path)}", sha256 = "{sha256(data)}" }} }}
    ''',
    )
    return sysenv.run("apply")


def test_rejected_archive_leaves_no_tree_and_no_staging(sysenv, tmp_path):
    data = make_tar({"bin/tool": tool("t"), "../escape": b"evil"})
    res = _apply_archive(sysenv, tmp_path, "evil.tar.gz", data)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "points outside the archive" in res.stdout + res.stderr
    trees = sysenv.root / "store" / "trees"
    assert not trees.exists() or list(trees.iterdir()) == []
    tmp = sysenv.root / "store" / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []
    assert not list(sysenv.root.rglob("escape"))
    profile_bin = sysenv.root / "state" / "profile" / "bin"
    assert not (profile_bin / "tool").exists()


def test_symlink_chain_archive_cannot_touch_home(sysenv, tmp_path):
    # staging is <tmp>/root/store/tmp/pkg-tool-XXXX/tree: five levels up is <tmp>, then home/
    before = tree(sysenv.home)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, target in (("x", "."), ("x/x/x/x/x/l", "../../../../..")):
            i = tarfile.TarInfo(name)
            i.type, i.linkname = tarfile.SYMTYPE, target
            t.addfile(i)
        for name, data in (("bin/tool", tool("t")), ("l/home/.bashrc-pwned", b"evil\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            t.addfile(info, io.BytesIO(data))
    _apply_archive(sysenv, tmp_path, "chain.tar.gz", buf.getvalue())
    assert tree(sysenv.home) == before
