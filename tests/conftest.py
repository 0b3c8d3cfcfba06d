"""Shared fixtures: every test runs with a temp HOME, a temp SYSLUA_ROOT and NO_COLOR=1.

`sysenv` gives a fresh world per test; `sysenv.run("plan", ...)` runs the
`sys` command line in it and returns a `subprocess.CompletedProcess`
(`returncode`, `stdout`, `stderr`); `sysenv.write("sys.lua", text)` writes a
config into the work dir; `tree(path)` captures a directory tree (paths,
content, modes) so tests can assert that a failed or rejected run left it
byte-identical.

`run` drives the CLI in this process (`syslua.__main__.main` with argv), which is
most of the suite's speed: starting Python and importing syslua costs more
than most commands. It gives what a `python -m syslua` process would: the
same exit code and the same stdout/stderr text, captured at the file
descriptors (so Lua's `print`, which writes to C's stderr, is caught too),
with the world's environment, cwd and argv set for the call and everything
process-wide it touches restored afterwards (see `_in_process`).
`sysenv.spawn(...)` runs a real `python -m syslua` process instead, for what
needs one: two processes at once, a kill, a signal, the entry point itself.
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

import ctypes
import gc
import io
import json
import locale
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import traceback
import types
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from httpserver import LocalServer
from secret_store import gpg_key, pass_store  # noqa: F401  (fixtures, for every test module)
from systemd_ns import _systemd_boot, systemd_ns  # noqa: F401  (fixtures, for every test module)

if TYPE_CHECKING:
    from syslua.manifest.model import Item, Manifest

ROOT = Path(__file__).resolve().parent.parent
PYCACHE = os.path.join(tempfile.gettempdir(), "syslua-test-pycache")
# In-process runs import this checkout, as the subprocesses do (PYTHONPATH).
if sys.path[0] != str(ROOT):
    sys.path.insert(0, str(ROOT))
with warnings.catch_warnings():
    # typer's own import warns about click APIs; a `sys` process never shows it
    warnings.simplefilter("ignore", DeprecationWarning)
    import syslua.cli  # noqa: F401


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

    def run(
        self, *args: str, cwd: Path | None = None, timeout: float = 120, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`sys *args` in this world, in this process; as `spawn` would, but faster."""
        return _in_process(list(args), self.env, cwd or self.work, timeout=timeout, input=input)

    def modules_after(self, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
        """`sys *args` as a real process, as `spawn` runs it, and the modules
        it had imported when it ended (what a start costs: issue 27)."""
        probe = (
            "import json, runpy, sys\n"
            f"sys.argv = ['sys', *{list(args)!r}]\n"
            "code = 0\n"
            "try:\n"
            "    runpy.run_module('syslua', run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    code = e.code or 0\n"
            "print('MODULES', json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
            "sys.exit(code)\n"
        )
        res = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        line = next(ln for ln in res.stderr.splitlines() if ln.startswith("MODULES "))
        return res, set(json.loads(line.removeprefix("MODULES ")))

    def spawn(
        self, *args: str, cwd: Path | None = None, timeout: float = 120, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`sys *args` as a real `python -m syslua` process, for tests that need one."""
        return subprocess.run(
            [sys.executable, "-m", "syslua", *args],
            cwd=cwd or self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )


# -- the CLI in this process ----------------------------------------------------
MAIN_FILE = str(ROOT / "syslua" / "__main__.py")
# Handlers a command could install; a real process starts with Python's own.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE)
# Variables syslua reads once, when a module is imported: in this process the
# module may already be loaded with another value, so a run that sets one
# must be a real process (`spawn`).
READ_AT_IMPORT = ("SYSLUA_FETCH_TIMEOUT",)  # syslua/fetch.py: DEFAULT_TIMEOUT
_libc = ctypes.CDLL(None)


class _Expired(BaseException):
    """The run outlived its timeout (a BaseException: no `except Exception` in syslua stops it)."""


def _in_process(
    args: list[str], env: dict[str, str], cwd: Path, *, timeout: float | None, input: str | None
) -> subprocess.CompletedProcess[str]:
    """What `python -m syslua *args` with this env and cwd would return, run here.

    Set for the call, then restored: os.environ (exactly `env`), cwd, umask,
    sys.argv and `__main__` (click names the program `python -m syslua` from
    them; the lock records argv), stdin (empty, or `input`), fds 1 and 2 and
    sys.stdout / sys.stderr (captured to temp files, encoded as Python would
    for a pipe), signal handlers, gc thresholds (`main` raises them) and the
    errors module's display root (a real process starts without one). Exit
    codes are Python's: `SystemExit`'s code, or 1 and a traceback on stderr
    for an uncaught exception.
    """
    from syslua import errors
    from syslua.__main__ import main as entry  # as `sys` starts: the no-change proof first

    fixed = [name for name in READ_AT_IMPORT if name in env]
    if fixed:
        raise RuntimeError(
            f"{', '.join(fixed)} is read when syslua is imported: use sysenv.spawn(...)"
        )
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_umask = os.umask(0o022)
    os.umask(saved_umask)
    saved_argv, saved_main = sys.argv, sys.modules["__main__"]
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_signals = {s: signal.getsignal(s) for s in SIGNALS}
    saved_gc = gc.get_threshold()
    out_enc, out_err = _stream_encoding(sys.__stdout__, "strict")
    err_enc, _ = _stream_encoding(sys.__stderr__, "backslashreplace")
    for stream in saved_streams[1:]:
        stream.flush()
    saved_fds = os.dup(1), os.dup(2)
    expired = False
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        try:
            os.environ.clear()
            os.environ.update(env)
            os.chdir(cwd)
            sys.argv = [MAIN_FILE, *args]
            main_module = types.ModuleType("__main__")
            main_module.__file__, main_module.__package__ = MAIN_FILE, "syslua"
            sys.modules["__main__"] = main_module
            errors.set_display_root(None)
            os.dup2(out_f.fileno(), 1)
            os.dup2(err_f.fileno(), 2)
            sys.stdin = io.StringIO(input or "")
            sys.stdout = open(1, "w", encoding=out_enc, errors=out_err, closefd=False)
            sys.stderr = open(
                2, "w", encoding=err_enc, errors="backslashreplace", closefd=False, buffering=1
            )
            try:
                with _deadline(timeout):
                    code = _exit_status(entry)
            except _Expired:
                expired, code = True, -1
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            _libc.fflush(None)  # C stdio (Lua) buffers, as a real process does at exit
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            os.close(saved_fds[0])
            os.close(saved_fds[1])
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            sys.argv = saved_argv
            sys.modules["__main__"] = saved_main
            os.chdir(saved_cwd)
            os.umask(saved_umask)
            os.environ.clear()
            os.environ.update(saved_env)
            if threading.current_thread() is threading.main_thread():
                for signum, handler in saved_signals.items():
                    if signal.getsignal(signum) is not handler and handler is not None:
                        signal.signal(signum, handler)
            gc.set_threshold(*saved_gc)
            errors.set_display_root(None)
        stdout, stderr = _read_text(out_f), _read_text(err_f)
    argv = [sys.executable, "-m", "syslua", *args]
    if expired:
        raise subprocess.TimeoutExpired(argv, timeout or 0, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(argv, code, stdout, stderr)


def _exit_status(main) -> int:  # type: ignore[no-untyped-def]
    """Run `main` and give the exit status the interpreter would give."""
    try:
        main()
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code & 0xFF
        print(e.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        raise  # Ctrl-C on pytest itself
    except Exception:
        traceback.print_exc()
        return 1
    return 0


@contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise `_Expired` in the run after `seconds` (subprocess.run's timeout)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):  # type: ignore[no-untyped-def]
        raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _stream_encoding(stream, errors: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """The encoding (and error handler) a child Python would give this stream: this one's."""
    return getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or errors


def _read_text(f) -> str:  # type: ignore[no-untyped-def]
    """A captured stream decoded as `subprocess.run(text=True)` does (locale encoding, universal newlines)."""
    f.seek(0)
    data = f.read().decode(locale.getpreferredencoding(False))
    return data.replace("\r\n", "\n").replace("\r", "\n")


def new_env(base: Path) -> SysEnv:
    """A world (home, root, work) under `base`, without touching this process's environment."""
    env = SysEnv(base / "home", base / "root", base / "work")
    for d in (env.home, env.root, env.work):
        d.mkdir(parents=True)
    return env


@contextmanager
def machine_lock(group: str) -> Iterator[None]:
    """Hold the lock of `group` across test processes: tests that change what
    the whole machine shares (real accounts; dpkg, whose lock admits one
    apt-get at a time) take turns, whichever xdist worker runs them."""
    import fcntl

    path = os.path.join(tempfile.gettempdir(), f"syslua-tests-{group}.lock")
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _machine_group(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked `xdist_group(NAME)` runs holding `machine_lock(NAME)`."""
    mark = request.node.get_closest_marker("xdist_group")
    if mark is None:
        yield
        return
    with machine_lock(str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))):
        yield


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
        rel = str(p.relative_to(path))
        if p.name == "cache" and p.parent.name != ".cache" or "cache/eval" in rel:
            continue  # the evaluation cache (manifest/evalcache.py): written by any plan
        st = p.lstat()
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


def current(sysenv) -> str | None:  # type: ignore[no-untyped-def]
    """The id of the current snapshot, from `sys history --json`."""
    ids = [h["id"] for h in history(sysenv) if h["current"]]
    return ids[0] if ids else None


def state_of(sysenv) -> dict:  # type: ignore[no-untyped-def]
    """Everything syslua keeps on disk but the lock: snapshots, journal, env scripts."""
    return {k: v for k, v in tree(sysenv.root / "state").items() if k != "lock"}


def plan_line(p, label: str) -> str:  # type: ignore[no-untyped-def]
    """The line of the plan `p` printed for `file LABEL`."""
    for ln in p.stdout.splitlines():
        if f" file {label}:" in ln:
            return ln
    raise AssertionError(f"no plan line for {label}:\n{p.stdout}")


def apply_ok(sysenv, body: str, name: str = "sys.lua") -> str:  # type: ignore[no-untyped-def]
    """Write HEADER + `body` to `name`, apply it, and return the new snapshot's id."""
    sysenv.write(name, HEADER + body)
    p = sysenv.run("apply", name)
    assert p.returncode == 0, out(p)
    m = re.search(r"(?:Apply|Rollback) complete: snapshot (\S+)\.", p.stdout)
    assert m, out(p)
    return m.group(1)


# -- the store, as a user's hands reach it -------------------------------------------
def store_objects(root: Path) -> set[str]:
    """Every blob in the store under SYSLUA_ROOT `root` (loose or packed)."""
    from syslua.state.store import Store

    return set(Store(root / "store").all_objects())


def store_read(root: Path, digest: str) -> bytes:
    from syslua.state.store import Store

    return Store(root / "store").read(digest)


def delete_object(root: Path, digest: str) -> None:
    """A blob deleted by hand: its loose file, or its bytes cut out of its pack."""
    from syslua.state.store import Store

    store = Store(root / "store")
    assert store.has(digest), digest
    store.remove_objects([digest])
    assert not Store(root / "store").has(digest)


def corrupt_object(root: Path, digest: str) -> list[str]:
    """Overwrite the first byte of a blob where it is kept; returns the files that hold it."""
    from syslua.state.store import Store

    store = Store(root / "store")
    found = store._find(digest)
    path, offset = (found[0].path, found[1]) if found else (store.path(digest), 0)
    os.chmod(path, 0o600)
    with open(path, "r+b") as f:
        f.seek(offset)
        first = f.read(1)
        f.seek(offset)
        f.write(bytes([first[0] ^ 0xFF]))
    os.chmod(path, 0o400)
    return store.files_of([digest])
