"""Guards (issue 22, points 6 and 9).

Point 6: `ensure = "absent"` on `/`, the home, a directory above the home or
a system directory is a configuration error at the declaration, whatever
`force` says, in a Lua config and in a CCM manifest; nothing is changed.

Point 9: no litter, no tracebacks, no empty messages.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import HEADER, out, tree

HINT = "Declare the paths inside it that should go"


def refused(p, line: int, label: str, why: str, name: str = "sys.lua") -> None:  # type: ignore[no-untyped-def]
    assert p.returncode == 2, out(p)
    assert "Traceback" not in out(p)
    assert (
        f'Error: {name}:{line}: file {label}: ensure = "absent" is refused here: {why} '
        "(`force` does not change this)"
    ) in p.stderr, out(p)
    assert HINT in p.stderr, out(p)


# -- protected paths -----------------------------------------------------------
@pytest.mark.parametrize("force", ["true", "false"])
def test_the_home_declared_absent_is_a_config_error_and_nothing_changes(sysenv, force) -> None:
    (sysenv.home / "keep.txt").write_text("mine\n")
    (sysenv.home / ".config" / "app").mkdir(parents=True)
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER + f'file {{ path = "~", ensure = "absent", force = {force} }}\n',
    )
    p = sysenv.run("apply")
    refused(p, 3, "~", "it is your home directory")
    assert tree(sysenv.home) == before
    assert not (sysenv.root / "state" / "snapshots").exists() or not list(
        (sysenv.root / "state" / "snapshots").glob("*.json*")
    )


def test_a_directory_above_the_home_is_refused(sysenv) -> None:
    above = sysenv.home.parent
    before = tree(above)
    sysenv.write(
        "sys.lua",
        HEADER + f"file {{ path = {json.dumps(str(above))}, ensure = 'absent', force = true }}\n",
    )
    p = sysenv.run("apply")
    refused(p, 3, str(above), "your home directory is inside it")
    assert tree(sysenv.home) == before_home(before, sysenv)


def before_home(before, sysenv):  # type: ignore[no-untyped-def]
    """The home's part of a tree taken above it."""
    prefix = str(sysenv.home.relative_to(sysenv.home.parent)) + "/"
    return {k[len(prefix) :]: v for k, v in before.items() if k.startswith(prefix)}


@pytest.mark.parametrize(
    "path, why",
    [
        ("/", "it is the root directory"),
        ("/etc", "it is a system directory"),
        ("/usr", "it is a system directory"),
        ("/var/lib", "it is a system directory"),
        ("/tmp", "it is a system directory"),
        ("/home", "it is a system directory"),
    ],
)
def test_root_and_system_directories_are_refused(sysenv, path, why) -> None:
    # `plan` only: nothing runs, whatever the check says
    sysenv.write(
        "sys.lua", HEADER + f'file {{ path = "{path}", ensure = "absent", force = true }}\n'
    )
    p = sysenv.run("plan")
    refused(p, 3, path, why)


def test_a_path_inside_a_system_directory_may_still_be_absent(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "/etc/syslua-test-never-there.conf", ensure = "absent" }\n'
        + 'file { path = "~/old", ensure = "absent" }\n',
    )
    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)


def test_a_ccm_manifest_gets_the_same_rule(sysenv) -> None:
    (sysenv.home / "keep.txt").write_text("mine\n")
    before = tree(sysenv.home)
    sysenv.write(
        "m.yaml",
        f"""\
        ccm:
          resources:
            - file:
                - {sysenv.home}:
                    ensure: absent
                    force: true
        """,
    )
    p = sysenv.run("apply", "m.yaml")
    assert p.returncode == 2, out(p)
    assert "Traceback" not in out(p)
    assert "m.yaml:4:" in p.stderr, out(p)
    assert 'ensure = "absent" is refused here: it is your home directory' in p.stderr, out(p)
    assert tree(sysenv.home) == before


# -- no litter -----------------------------------------------------------------
def dead_pid() -> int:
    """The pid of a process that has ended."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_update_removes_the_lock_temp_file_a_killed_update_left(sysenv) -> None:
    """A SIGKILLed `sys update` leaves `.syslua.lock.syslua-<pid>-<hex>` beside
    the config (made here as the killed writer would have); the next update
    removes it, and keeps one a live process may still be writing."""
    sysenv.write("cfg/vendor/tools/lua/tools/init.lua", "return { name = 'tools' }\n")
    sysenv.write(
        "cfg/init.lua",
        'return {\n  inputs = { tools = "path:./vendor/tools" },\n'
        "  setup = function(inputs) end,\n}\n",
    )
    cfg = sysenv.work / "cfg"
    dead = cfg / f".syslua.lock.syslua-{dead_pid()}-0badf00d"
    live = cfg / f".syslua.lock.syslua-{os.getppid()}-0badf00d"
    for leftover in (dead, live):
        leftover.write_text("half a lock")
    p = sysenv.run("update", "--config", str(cfg / "init.lua"))
    assert p.returncode == 0, out(p)
    assert "Traceback" not in out(p)
    assert not dead.exists()
    assert live.exists()
    assert (cfg / "syslua.lock").is_file()


# -- no tracebacks, no empty messages ------------------------------------------
def test_a_directory_in_place_of_the_snapshot_index_is_a_clear_error(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
    assert sysenv.run("apply").returncode == 0
    index = sysenv.root / "state" / "snapshots" / "index.json"
    index.unlink()
    index.mkdir()
    before = tree(sysenv.home), tree(sysenv.root)
    for command in (["apply"], ["status"], ["history"], ["plan"], ["gc"]):
        p = sysenv.run(*command)
        assert p.returncode == 2, (command, out(p))
        assert "Traceback" not in out(p) and "Internal error" not in out(p), out(p)
        assert f"Error: {index} is a directory, where syslua keeps its snapshot index" in (
            p.stderr
        ), out(p)
    assert (tree(sysenv.home), tree(sysenv.root)) == before


@pytest.mark.parametrize(
    "body, message",
    [
        (
            'error(setmetatable({}, {__tostring = function() error("x") end}))',
            "sys.lua:2: error called with a table value whose __tostring failed",
        ),
        (
            'error(setmetatable({}, {__tostring = function() return "" end}))',
            "sys.lua:2: error called with a table value whose __tostring failed",
        ),
        ("local function f() return f() + 1 end f()", "sys.lua:2: stack overflow"),
        (
            "local t = setmetatable({}, {})\n"
            "getmetatable(t).__index = function(s, k) return s[k] end\nlocal _ = t.x",
            # LuaJIT names either stack, by where the call from the metamethod ran
            ("sys.lua:3: stack overflow", "sys.lua:3: C stack overflow"),
        ),
        ('error("no place given", 0)', "sys.lua:2: no place given"),
        ("error()", "sys.lua:2: error called with nil"),
        ("coroutine.yield(1)", "sys.lua:2: coroutine.yield outside of a coroutine"),
    ],
    ids=[
        "tostring-fails",
        "tostring-empty",
        "recursion",
        "index-recursion",
        "level-0",
        "nil",
        "top-level-yield",
    ],
)
def test_an_error_without_usable_text_still_says_something(sysenv, body, message) -> None:
    sysenv.write("sys.lua", "local a = 1\n" + body + "\n")
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert "Traceback" not in out(p)
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("Error:")]
    assert errors and errors[0].strip() != "Error:", out(p)
    alternatives = (message,) if isinstance(message, str) else message
    assert any(m in p.stderr for m in alternatives), out(p)


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
@pytest.mark.parametrize(
    "command",
    [
        ["history"],
        ["status"],
        ["plan"],
        ["diff"],
        ["env"],
        ["snapshot", "show"],
        ["rollback", "--noop"],
        ["gc", "--dry-run"],
        ["info"],
        ["doctor"],
    ],
    ids=lambda c: " ".join(c),
)
def test_another_user_reading_state_it_cannot_read_gets_a_clear_error(command) -> None:
    """Root applied; `nobody`, pointed at root's state, runs a read-only
    command: a message naming what it cannot read, never a traceback, and
    nothing changes."""
    import pwd
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from conftest import new_env, tree

    nobody = pwd.getpwnam("nobody")
    base = Path(tempfile.mkdtemp(prefix="syslua-other-", dir="/tmp"))
    try:
        base.chmod(0o711)
        env = new_env(base)
        env.root.rmdir()
        for d in (env.home, env.work):
            d.chmod(0o755)
        env.write("sys.lua", 'file { path = "~/a", content = "x\\n" }\n')
        (env.work / "sys.lua").chmod(0o644)
        p = env.run("apply")
        assert p.returncode == 0, out(p)
        before = tree(base)
        p = subprocess.run(
            [sys.executable, str(Path(__file__).parent / "as_user.py"), *command],
            cwd=env.work,
            capture_output=True,
            text=True,
            timeout=60,
            env={
                "PATH": os.environ["PATH"],
                "HOME": str(env.home),
                "SYSLUA_ROOT": str(env.root),
                "NO_COLOR": "1",
                "PYTHONPATH": str(Path(__file__).parent.parent),
                "AS_UID": str(nobody.pw_uid),
                "AS_GID": str(nobody.pw_gid),
            },
        )
        said = p.stdout + p.stderr
        assert "Traceback" not in said and "Internal error" not in said, said
        if command == ["info"]:
            assert p.returncode == 0, said
            assert "Current snapshot:\n  cannot be read: " in said, said
        elif command == ["doctor"]:
            assert p.returncode == 1 and "not yours" in said, said
        else:
            assert p.returncode == 1, said
            error = next(ln for ln in said.splitlines() if ln.startswith("Error: "))
            assert "not readable by nobody" in error or "Permission denied" in error, said
        assert tree(base) == before
    finally:
        shutil.rmtree(base, ignore_errors=True)
