"""Writes and removals never follow a link swapped in after planning (issue 22, point 1).

Root applies files under `~/race/sub`, where `~/race` belongs to another
user (`nobody`), who swaps `sub` for a symlink to a directory outside the
home, over and over, while the apply runs and rolls back. Every change
reaches its directory component by component without following such a
link (`syslua/safe_fs.py`), so nothing outside the home changes: the item
fails, the apply rolls back, and the rollback does not write through the
link either.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from conftest import new_env, tree

ROUNDS = int(os.environ.get("SYSLUA_RACE_ROUNDS", "3"))
FILES = 300


def _nobody() -> tuple[int, int] | None:
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or _nobody() is None,
    reason="needs root, setpriv and the nobody user",
)


@pytest.mark.root
@needs_root
def test_a_directory_another_user_swaps_for_a_link_is_never_written_through() -> None:
    nobody = _nobody()
    assert nobody is not None
    base = Path(tempfile.mkdtemp(prefix="syslua-race-", dir="/tmp"))
    try:
        os.chmod(base, 0o711)
        env = new_env(base)
        os.chmod(env.home, 0o711)
        outside = base / "outside"
        outside.mkdir()
        (outside / "f0").write_text("precious\n")
        race = env.home / "race"
        (race / "sub").mkdir(parents=True)
        for d in (race, race / "sub"):
            os.chown(d, *nobody)
        before_outside = tree(outside)
        body = "".join(
            f'file {{ path = "~/race/sub/f{i}", content = "mine {i}\\n" }}\n' for i in range(FILES)
        )
        # A last item that fails: every apply also rolls back.
        body += 'exec { name = "last", command = "false", depends_on = { "file#~/race/sub/f0" } }\n'
        env.write("sys.lua", body)
        swap = (
            f"cd {race} && while :; do mv sub real 2>/dev/null && ln -s {outside} sub "
            "&& rm -f sub && mv real sub; done"
        )
        swapper = subprocess.Popen(
            ["setpriv", f"--reuid={nobody[0]}", f"--regid={nobody[1]}", "--clear-groups"]
            + ["sh", "-c", swap],
            start_new_session=True,
        )
        try:
            time.sleep(0.1)
            for _ in range(ROUNDS):
                p = env.spawn("apply", timeout=120)
                assert p.returncode in (0, 1), p.stdout + p.stderr
                assert "Internal error" not in p.stdout + p.stderr
                assert tree(outside) == before_outside, p.stdout + p.stderr
        finally:
            os.killpg(swapper.pid, 9)
            swapper.wait()
        assert tree(outside) == before_outside
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.root
@needs_root
def test_destroy_under_a_directory_another_user_swaps_never_removes_through_it() -> None:
    nobody = _nobody()
    assert nobody is not None
    base = Path(tempfile.mkdtemp(prefix="syslua-race-", dir="/tmp"))
    try:
        os.chmod(base, 0o711)
        env = new_env(base)
        os.chmod(env.home, 0o711)
        outside = base / "outside"
        outside.mkdir()
        for i in range(FILES):  # what a removal through the link would delete
            (outside / f"f{i}").write_text("precious\n")
        race = env.home / "race"
        (race / "sub").mkdir(parents=True)
        for d in (race, race / "sub"):
            os.chown(d, *nobody)
        before_outside = tree(outside)
        env.write(
            "sys.lua",
            "".join(
                f'file {{ path = "~/race/sub/f{i}", content = "mine {i}\\n" }}\n'
                for i in range(FILES)
            ),
        )
        for _ in range(ROUNDS):
            a = env.spawn("apply", timeout=120)
            assert a.returncode == 0, a.stdout + a.stderr
            swap = (
                f"cd {race} && while :; do mv sub real 2>/dev/null && ln -s {outside} sub "
                "&& rm -f sub && mv real sub; done"
            )
            swapper = subprocess.Popen(
                ["setpriv", f"--reuid={nobody[0]}", f"--regid={nobody[1]}", "--clear-groups"]
                + ["sh", "-c", swap],
                start_new_session=True,
            )
            try:
                time.sleep(0.05)
                gone = env.spawn("destroy", "--yes", "--force", timeout=120)
                assert "Internal error" not in gone.stdout + gone.stderr
            finally:
                os.killpg(swapper.pid, 9)
                swapper.wait()
            if (race / "real").exists():  # the swap was cut short: put sub back
                if os.path.islink(race / "sub"):
                    os.unlink(race / "sub")
                elif (race / "sub").is_dir():  # made again meanwhile, in the home
                    shutil.rmtree(race / "sub")
                os.rename(race / "real", race / "sub")
            assert tree(outside) == before_outside, gone.stdout + gone.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.root
@needs_root
def test_what_is_behind_a_link_another_user_made_is_never_read_into_the_store(sysenv) -> None:
    """The journal keeps what a change replaces; it reads it as the change
    is made, through `safe_fs`: a file behind another user's link (here a
    root-only secret) is neither read nor kept, and the item fails."""
    nobody = _nobody()
    assert nobody is not None
    outside = sysenv.home.parent / "outside"  # not in the config's directory: no stow fold
    outside.mkdir()
    secret = outside / "f"
    secret.write_text("root's secret 7c1f\n")
    os.chmod(secret, 0o600)
    shared = sysenv.home / "shared"
    shared.mkdir()
    os.symlink(outside, shared / "opt")
    os.chown(shared / "opt", *nobody, follow_symlinks=False)
    os.chown(shared, *nobody)
    before = tree(sysenv.home)
    sysenv.write("sys.lua", 'file { path = "~/shared/opt/f", content = "mine\\n" }\n')
    p = sysenv.run("apply")
    said = p.stdout + p.stderr
    assert p.returncode == 1, said
    assert "~/shared/opt is a symlink another user could have made" in said
    assert "Internal error" not in said
    assert secret.read_text() == "root's secret 7c1f\n"
    assert tree(sysenv.home) == before
    for path in sysenv.root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert b"7c1f" not in path.read_bytes(), path
