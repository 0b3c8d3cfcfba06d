"""Originals survive everything (issue 9): the record of what was at a path before
syslua first took it over is kept apart from snapshots, written once, never
replaced by content syslua wrote, and survives a failed undo.

The failing undo is real: an exec makes some of the files immutable
(`chattr +i`, root on a filesystem that supports it) and then fails, so the
rollback cannot put them back.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import HEADER, out, put, tree

N = 200


def _chattr_works(where: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    probe = where / ".chattr-probe"
    probe.write_text("x")
    try:
        ok = subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode == 0
        subprocess.run(["chattr", "-i", str(probe)], capture_output=True)
        return ok
    finally:
        probe.unlink(missing_ok=True)


@pytest.fixture
def immutable(sysenv):  # type: ignore[no-untyped-def]
    """Skip where chattr cannot work; make sure nothing stays immutable afterwards."""
    if not _chattr_works(sysenv.home):
        pytest.skip("chattr +i needs root and a filesystem that supports it")
    yield
    subprocess.run(["chattr", "-R", "-i", str(sysenv.home)], capture_output=True)


def declarations(new: int = 10) -> str:
    files = "".join(
        f'file {{ path = "~/h/f{i:03}", content = "managed {i}\\n" }}\n' for i in range(N)
    )
    return files + "".join(
        f'file {{ path = "~/h/new{i}", content = "new {i}\\n" }}\n' for i in range(new)
    )


def originals(sysenv) -> dict:  # type: ignore[no-untyped-def]
    return json.loads((sysenv.root / "state" / "originals.json").read_text())["originals"]


@pytest.mark.root
def test_a_failed_undo_loses_no_original(sysenv, immutable) -> None:
    for i in range(N):
        put(
            sysenv.home / "h" / f"f{i:03}",
            f"hand-made {i}\n" + "x" * (i * 7),
            0o600 if i % 2 else 0o644,
        )
    before = tree(sysenv.home)
    locked = [f"~/h/f{i:03}" for i in range(0, N, 20)] + ["~/h/new0", "~/h/new1"]
    breaker = (
        'exec { name = "break", provider = "shell", depends_on = { '
        + ", ".join(f'"file#~/h/f{i:03}"' for i in range(N))
        + ', "file#~/h/new0", "file#~/h/new1" }, command = "chattr +i '
        + " ".join(p.replace("~", str(sysenv.home)) for p in locked)
        + ' && exit 1" }\n'
    )
    sysenv.write("sys.lua", HEADER + declarations() + breaker)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "Traceback" not in out(p)
    # the immutable files still hold what syslua wrote: the undo could not reach them
    assert (sysenv.home / "h" / "f000").read_text() == "managed 0\n"

    st = sysenv.run("status")
    assert st.returncode == 0, out(st)
    assert "A failed rollback could not put these paths back:" in st.stdout
    assert "~/h/f000: its previous content is kept in " in st.stdout
    assert "~/h/new0: it did not exist before" in st.stdout
    kept = json.loads(sysenv.run("status", "--json").stdout)["unrestored"]
    f000 = next(k for k in kept if k["path"].endswith("/h/f000"))
    assert Path(sysenv.root, "store").exists() and f000["blob"]
    blob_file = f000["before"].split("kept in ", 1)[1].split(" (", 1)[0]
    assert Path(blob_file).read_bytes() == b"hand-made 0\n"

    # The user clears the cause and applies again: nothing is taken over twice.
    subprocess.run(["chattr", "-R", "-i", str(sysenv.home)], check=True)
    sysenv.write("sys.lua", HEADER + declarations())
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert "A failed rollback" not in sysenv.run("status").stdout
    recorded = originals(sysenv)
    assert recorded["file#" + str(sysenv.home / "h" / "f000")]["kind"] == "file"
    assert recorded["file#" + str(sysenv.home / "h" / "new0")] == {"kind": "absent"}

    # Later the declarations go: every hand-made byte is back, nothing syslua made stays.
    sysenv.write("sys.lua", HEADER + 'file { path = "~/other", content = "o\\n" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    after = tree(sysenv.home)
    after.pop("other")
    assert after == before
    assert set(originals(sysenv)) == {"file#" + str(sysenv.home / "other")}


def test_clean_rollback_forgets_what_it_took_over(sysenv) -> None:
    """A rolled-back first apply leaves no original behind: a later edit is what is kept."""
    put(sysenv.home / "a.txt", "first\n")
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/a.txt", content = "managed\\n" }\nexec { name = "boom", command = "false", depends_on = { "file#~/a.txt" } }\n',
    )
    assert sysenv.run("apply").returncode == 1
    assert (sysenv.home / "a.txt").read_text() == "first\n"
    assert originals(sysenv) == {}

    put(sysenv.home / "a.txt", "edited later\n")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "managed\\n" }\n')
    assert sysenv.run("apply").returncode == 0
    sysenv.write("sys.lua", HEADER + 'file { path = "~/other", content = "o\\n" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "a.txt").read_text() == "edited later\n"


def test_originals_survive_lost_snapshots(sysenv) -> None:
    """With every snapshot gone (and so no current pointer), the next apply finds the
    path holding syslua's content; it must not take that over as the original."""
    put(sysenv.home / "b.txt", "hand\n")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/b.txt", content = "managed\\n" }\n')
    assert sysenv.run("apply").returncode == 0
    shutil.rmtree(sysenv.root / "state" / "snapshots")
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert originals(sysenv)["file#" + str(sysenv.home / "b.txt")]["kind"] == "file"
    sysenv.write("sys.lua", HEADER + 'file { path = "~/c.txt", content = "c\\n" }\n')
    assert sysenv.run("apply").returncode == 0
    assert (sysenv.home / "b.txt").read_text() == "hand\n"
