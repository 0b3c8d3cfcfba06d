"""Shared fixtures: every test runs with a temp HOME, a temp SYSLUA_ROOT and NO_COLOR=1.

`sysenv` gives a fresh world per test; `sysenv.run("plan", ...)` runs the real
`sys` command line (as `python -m syslua`) in it and returns the completed
process; `sysenv.write("sys.lua", text)` writes a config into the work dir;
`tree(path)` captures a directory tree (paths, content, modes) so tests can
assert that a failed or rejected run left it byte-identical.

The `sys` subprocesses keep their bytecode in a cache outside the repository
(PYTHONPYCACHEPREFIX, pure speed: ~0.2 s per run); they never write it into
the checkout.

Small helpers shared by the test modules (`from conftest import ...`): `q`, a
Lua string literal; `out`, a run's stdout + stderr; `ok`, a run succeeded
without a traceback; `events` / `items`, the `--json` events of a run (items
by id); `history`, `sys history --json`; `put`, write a file with a mode;
`new_env`, a second world beside `sysenv`; `aid` / `fid`, item ids;
`item_of`, a manifest's item that must be there.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from httpserver import LocalServer

if TYPE_CHECKING:
    from syslua.manifest.model import Item, Manifest

ROOT = Path(__file__).resolve().parent.parent
PYCACHE = os.path.join(tempfile.gettempdir(), "syslua-test-pycache")


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
        # cache the CLI's bytecode, outside the repository
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = PYCACHE
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


def new_env(base: Path) -> SysEnv:
    """A world (home, root, work) under `base`, without touching this process's environment."""
    env = SysEnv(base / "home", base / "root", base / "work")
    for d in (env.home, env.root, env.work):
        d.mkdir(parents=True)
    return env


@pytest.fixture
def sysenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SysEnv:
    env = new_env(tmp_path)
    monkeypatch.setenv("HOME", str(env.home))
    monkeypatch.setenv("SYSLUA_ROOT", str(env.root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(env.work)
    return env


@pytest.fixture
def server(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A loopback HTTP server (tests/httpserver.py) serving from a temp dir."""
    srv = LocalServer(tmp_path / "srv")
    yield srv
    srv.close()


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


# -- helpers shared by the test modules ---------------------------------------
def q(s: str | Path) -> str:
    """A Lua string literal."""
    return json.dumps(str(s))


def out(p) -> str:  # type: ignore[no-untyped-def]
    return p.stdout + p.stderr


def ok(res) -> None:  # type: ignore[no-untyped-def]
    assert res.returncode == 0, out(res)
    assert "Traceback" not in out(res)


def events(p) -> list[dict]:  # type: ignore[no-untyped-def]
    """The events of a `--json` run (blank lines skipped)."""
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def items(p) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    """Item events of a `--json` run, by id."""
    return {e["id"]: e for e in events(p) if e.get("event") == "item"}


def history(sysenv) -> list[dict]:  # type: ignore[no-untyped-def]
    """`sys history --json`: the snapshots, newest first."""
    p = sysenv.run("history", "--json")
    assert p.returncode == 0, out(p)
    return json.loads(p.stdout)


def put(path: Path, text: str = "", mode: int = 0o644) -> Path:
    """Write `text` to `path` (parents made) with `mode`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


def aid(sysenv, rel: str) -> str:  # type: ignore[no-untyped-def]
    return f"apply#{sysenv.work}/{rel}"


def fid(sysenv, rel: str) -> str:  # type: ignore[no-untyped-def]
    return f"file#{sysenv.home}/{rel}"


def item_of(manifest: Manifest, ident: str) -> Item:
    """The item `ident`; fails the test, listing the ids there are, when it is missing."""
    found = manifest.get(ident)
    assert found is not None, f"{ident} not in {[i.id for i in manifest]}"
    return found
