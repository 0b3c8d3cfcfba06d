"""The test harness: `sysenv.run` (in this process) answers as `sysenv.spawn` (a real process) does.

Most tests drive the CLI in-process for speed (conftest.py); these check that
doing so changes nothing a test can see: the same exit code and the same
stdout/stderr text as `python -m syslua` for usage errors, configuration
errors, Lua's `print`, `plan --exit-code` and help; and that a run leaves
nothing process-wide behind (environment, cwd, argv, streams, umask, signal
handlers, open fds, threads). The installed `sys` entry point gets one
real-process check too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest
from conftest import HEADER, ROOT, SysEnv, new_env

CONFIG = HEADER + 'file { path = "~/a.txt", content = "a\\n" }\nprint("lua says hi")\n'
BAD = 'file { path = "~/b", contnet = "b" }\n'

COMMANDS = {
    "help": ("--help",),
    "no-command": (),
    "unknown-option": ("plan", "--bogus"),
    "bad-option-value": ("apply", "--jobs", "0"),
    "config-error": ("plan", "bad.lua"),
    "missing-config": ("plan", "nope.lua"),
    "plan-exit-code": ("plan", "--exit-code"),
}


def world(base: Path) -> SysEnv:
    env = new_env(base)
    env.write("sys.lua", CONFIG)
    env.write("bad.lua", BAD)
    return env


def seen(env: SysEnv, text: str) -> str:
    """`text` with the world's own directories named generically."""
    for path, name in ((env.home, "<home>"), (env.root, "<root>"), (env.work, "<work>")):
        text = text.replace(str(path), name)
    return text


@pytest.mark.parametrize("args", COMMANDS.values(), ids=COMMANDS.keys())
def test_in_process_run_matches_a_real_process(tmp_path: Path, args: tuple[str, ...]) -> None:
    here, there = world(tmp_path / "here"), world(tmp_path / "there")
    a, b = here.run(*args), there.spawn(*args)
    assert (a.returncode, seen(here, a.stdout), seen(here, a.stderr)) == (
        b.returncode,
        seen(there, b.stdout),
        seen(there, b.stderr),
    )


def test_exit_codes_of_the_comparison_are_the_interesting_ones(tmp_path: Path) -> None:
    """The commands above cover help (0), usage and config errors (2) and pending changes (4)."""
    env = world(tmp_path)
    codes = {name: env.run(*args).returncode for name, args in COMMANDS.items()}
    assert codes == {
        "help": 0,
        "no-command": 2,
        "unknown-option": 2,
        "bad-option-value": 2,
        "config-error": 2,
        "missing-config": 2,
        "plan-exit-code": 4,
    }
    assert "lua says hi" in env.run("plan").stderr


def process_state() -> tuple[object, ...]:
    """What a `sys` run could change in the process that runs it."""
    umask = os.umask(0o022)
    os.umask(umask)
    return (
        dict(os.environ),
        os.getcwd(),
        list(sys.argv),
        sys.modules["__main__"],
        (sys.stdin, sys.stdout, sys.stderr),
        umask,
        {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)},
        sorted(os.listdir("/proc/self/fd")),  # a leaked fd could be a lock still held
        threading.active_count(),
    )


def test_a_run_leaves_nothing_process_wide_behind(tmp_path: Path) -> None:
    env = world(tmp_path)
    env.write("fails.lua", HEADER + 'exec { name = "bad", command = "false" }\n')
    env.run("plan")  # imports and caches of a first run are not leaks
    before = process_state()
    for args in (
        ("apply",),
        ("apply", "--jobs", "4", "fails.lua"),
        ("plan", "bad.lua"),
        ("plan", "--bogus"),
        ("history", "--json"),
        ("rollback",),
        ("gc",),
    ):
        env.run(*args)
    assert process_state() == before
    assert (env.home / "a.txt").read_text() == "a\n"  # the apply did run


def test_the_sys_entry_point_runs_as_an_installed_script_would(tmp_path: Path) -> None:
    """`[project.scripts] sys = "syslua.cli:main"`, called the way pip's generated `sys` script does."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    module, func = pyproject["project"]["scripts"]["sys"].split(":")
    script = tmp_path / "sys"
    script.write_text(f"import sys\nfrom {module} import {func}\nsys.exit({func}())\n")
    env = world(tmp_path / "w")
    p = subprocess.run(
        [sys.executable, str(script), "plan", "--exit-code"],
        cwd=env.work,
        env=env.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 4, p.stdout + p.stderr
    assert "Plan: 1 to create" in p.stdout
    usage = subprocess.run(
        [sys.executable, str(script), "plan", "--bogus"],
        cwd=env.work,
        env=env.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert usage.returncode == 2 and "Usage: sys plan" in usage.stderr, usage.stderr
