"""An OS error anywhere in an apply's commit path (issue 22, point 5).

Writing the env scripts, the snapshot or the index may fail after every item
ran: a directory in place of `env.sh`, an immutable file or directory. The
apply then rolls itself back in the same run, says what failed and where,
and exits 1: the machine and syslua's state are as they were, no journal is
left, and once the cause is gone the same config applies.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HEADER, apply_ok, current, history, out, tree

V2 = """
file { path = "~/a.txt", content = "a v2\\n" }
file { path = "~/b.txt", content = "b\\n" }
env { FOO = "two" }
"""


def state(sysenv) -> Path:  # type: ignore[no-untyped-def]
    return sysenv.root / "state"


def journal(sysenv) -> Path:  # type: ignore[no-untyped-def]
    return state(sysenv) / "journal" / "journal.jsonl"


@pytest.fixture
def immutable() -> Iterator:  # type: ignore[type-arg]
    """Make paths immutable (chattr +i); skipped where the filesystem or user cannot."""
    made: list[Path] = []

    def make(path: Path) -> None:
        if shutil.which("chattr") is None:
            pytest.skip("no chattr")
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i does not work here: {done.stderr.decode().strip()}")
        made.append(path)

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def failed_apply(sysenv, what: str, path: Path) -> None:  # type: ignore[no-untyped-def]
    """`sys apply` of V2 fails while writing `what`, naming `path`, and changes nothing."""
    s1 = current(sysenv)
    sysenv.write("sys.lua", HEADER + V2)
    home, root = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert "Traceback" not in text and "UnboundLocalError" not in text, text
    assert "Rolling back..." in text, text
    assert f"while writing {what} under {state(sysenv)}: {path}" in text, text
    assert "Apply failed. System unchanged." in text, text
    assert tree(sysenv.home) == home
    assert tree(sysenv.root) == root
    assert current(sysenv) == s1
    assert not journal(sysenv).exists()


def test_a_directory_in_place_of_env_sh_fails_the_apply_and_rolls_back(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "a v1\\n" }\nenv { FOO = "one" }\n')
    env_sh = state(sysenv) / "env.sh"
    env_sh.unlink()
    env_sh.mkdir()
    failed_apply(sysenv, "the env scripts", env_sh)
    env_sh.rmdir()  # fixed: the same config applies
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "a.txt").read_text() == "a v2\n"
    assert "FOO='two'" in env_sh.read_text() or 'FOO="two"' in env_sh.read_text()


def test_a_directory_in_place_of_env_sh_on_the_first_apply(sysenv) -> None:
    """Nothing applied yet: no snapshot, and the home stays empty."""
    env_sh = state(sysenv) / "env.sh"
    env_sh.mkdir(parents=True)
    sysenv.write("sys.lua", HEADER + V2)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert "Traceback" not in text, text
    assert f"while writing the env scripts under {state(sysenv)}: {env_sh}" in text, text
    assert "Apply failed. System unchanged." in text, text
    assert tree(sysenv.home) == {}
    assert history(sysenv) == []
    assert not journal(sysenv).exists()
    env_sh.rmdir()
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)


def test_an_immutable_env_sh_fails_the_apply_and_rolls_back(sysenv, immutable) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "a v1\\n" }\nenv { FOO = "one" }\n')
    env_sh = state(sysenv) / "env.sh"
    immutable(env_sh)
    failed_apply(sysenv, "the env scripts", env_sh)


def test_an_immutable_snapshots_dir_fails_the_apply_and_rolls_back(sysenv, immutable) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "a v1\\n" }\nenv { FOO = "one" }\n')
    snapshots = state(sysenv) / "snapshots"
    immutable(snapshots)
    s1 = current(sysenv)
    sysenv.write("sys.lua", HEADER + V2)
    home = tree(sysenv.home)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert "Traceback" not in text, text
    assert f"while writing the snapshot under {state(sysenv)}: {snapshots}" in text, text
    assert "Apply failed. System unchanged." in text, text
    assert tree(sysenv.home) == home
    assert current(sysenv) == s1
    assert not journal(sysenv).exists()
