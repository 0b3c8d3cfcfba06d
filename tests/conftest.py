"""Shared fixtures: every test runs with a temp HOME, a temp SYSLUA_ROOT and NO_COLOR=1.

`sysenv` gives a fresh world per test; `sysenv.run("plan", ...)` runs the real
`sys` command line (as `python -m syslua`) in it and returns the completed
process; `sysenv.write("sys.lua", text)` writes a config into the work dir;
`tree(path)` captures a directory tree (paths, content, modes) so tests can
assert that a failed or rejected run left it byte-identical.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class SysEnv:
    home: Path
    root: Path
    work: Path

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            HOME=str(self.home),
            SYSLUA_ROOT=str(self.root),
            NO_COLOR="1",
            COLUMNS="200",
            PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        )
        env.pop("FORCE_COLOR", None)
        return env

    def write(self, rel: str, text: str, *, dedent: bool = True) -> Path:
        path = self.work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if dedent else text)
        return path

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 120, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "syslua", *args],
            cwd=cwd or self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )


@pytest.fixture
def sysenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SysEnv:
    home, root, work = tmp_path / "home", tmp_path / "root", tmp_path / "work"
    for d in (home, root, work):
        d.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SYSLUA_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(work)
    return SysEnv(home, root, work)


def tree(path: Path) -> dict[str, tuple[str, int, bytes | str | None]]:
    """Every entry under `path`: kind, mode, and content (files) or link target."""
    out: dict[str, tuple[str, int, bytes | str | None]] = {}
    if not path.exists():
        return out
    for p in sorted(path.rglob("*")):
        st = p.lstat()
        rel = str(p.relative_to(path))
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("link", stat.S_IMODE(st.st_mode), os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = ("dir", stat.S_IMODE(st.st_mode), None)
        elif stat.S_ISREG(st.st_mode):
            out[rel] = ("file", stat.S_IMODE(st.st_mode), p.read_bytes())
        else:  # fifo, socket, device: never read them
            out[rel] = ("special", stat.S_IMODE(st.st_mode), None)
    return out


HEADER = """\
local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP, mode = "0644" } }
"""
