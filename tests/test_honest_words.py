"""Honest words (issue 21, point 10).

`sys destroy` names the one-time commands it could not undo (execs without
an `undo` command: their kind says running them is irreversible) instead
of claiming that everything syslua managed is removed, and its last line is
true. A `SYSLUA_ROOT` that cannot be used (under a regular file, a regular
file itself, a directory the user cannot write) is a clear error naming the
path and the cause, exit 1, never `Internal error`, and nothing is written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import HEADER, ROOT, SysEnv, ok, out, tree

CONFIG = """
file { path = "~/a.txt", content = "a\\n" }
exec { name = "setup", command = "true" }
exec { name = "marker", command = "touch ~/.marked", provider = "shell",
       creates = "~/.marked", undo = "rm -f ~/.marked" }
"""
CLAIM = "Everything syslua managed is removed and the originals it took over are restored"


def applied(sysenv, body: str = CONFIG) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    ok(sysenv.run("apply"))


# -- sys destroy names what it could not undo ------------------------------------
def test_destroy_names_the_commands_it_could_not_undo(sysenv) -> None:
    applied(sysenv)
    p = sysenv.run("destroy", "--yes")
    ok(p)
    lines = p.stdout.splitlines()
    assert "Not undone (no undo command): exec setup" in lines, p.stdout
    assert CLAIM not in p.stdout
    assert lines[-1] == (
        "Everything else syslua managed is removed and the originals it took over are "
        "restored; `sys rollback` undoes this."
    ), p.stdout
    # the exec with an undo command was undone, and is not listed
    assert not (sysenv.home / ".marked").exists() and not (sysenv.home / "a.txt").exists()
    assert "marker" not in "\n".join(ln for ln in lines if ln.startswith("Not undone"))


def test_destroy_without_such_commands_says_everything(sysenv) -> None:
    applied(sysenv, CONFIG.replace('command = "true" }', 'command = "true", undo = "true" }'))
    p = sysenv.run("destroy", "--yes")
    ok(p)
    assert "Not undone" not in p.stdout
    assert p.stdout.splitlines()[-1] == f"{CLAIM}; `sys rollback` undoes this."


def test_destroy_dry_run_and_json_name_them_too(sysenv) -> None:
    applied(
        sysenv,
        CONFIG + 'exec { name = "second", command = "true" }\n',
    )
    before = tree(sysenv.home)
    p = sysenv.run("destroy", "--dry-run")
    ok(p)
    assert "Would not be undone (no undo command): exec second" in p.stdout, p.stdout
    assert "Would not be undone (no undo command): exec setup" in p.stdout, p.stdout
    assert p.stdout.splitlines()[-1] == "Dry run: nothing was changed."
    assert tree(sysenv.home) == before
    j = sysenv.run("destroy", "--yes", "--json")
    ok(j)
    summary = [json.loads(ln) for ln in j.stdout.splitlines() if ln.strip()][-1]
    assert summary["result"] == "ok"
    assert sorted(summary["not_undone"]) == ["exec#second", "exec#setup"], summary


# -- an unusable SYSLUA_ROOT is a clear error -------------------------------------
# Every command that opens the state, and those that do not need it.
STATE_COMMANDS = [
    ("plan",),
    ("apply",),
    ("status",),
    ("history",),
    ("gc",),
    ("destroy", "--yes"),
    ("rollback",),
    ("diff",),
    ("diff", "x"),
    ("add", "../home/a.txt"),
    ("snapshot", "show", "x"),
]


@pytest.mark.parametrize("args", STATE_COMMANDS, ids=lambda a: " ".join(a))
def test_a_root_under_a_regular_file_is_a_clear_error(sysenv, args) -> None:
    applied(sysenv)
    blocker = sysenv.work / "not-a-dir"
    blocker.write_text("a file\n")
    env_root = blocker / "root"
    before = tree(sysenv.work), tree(sysenv.home)
    p = run_with_root(sysenv, env_root, *args)
    assert p.returncode == 1, out(p)
    assert "Internal error" not in out(p) and "Traceback" not in out(p)
    assert f"{blocker} is not a directory" in p.stderr, p.stderr
    assert str(env_root) in p.stderr, p.stderr
    assert (tree(sysenv.work), tree(sysenv.home)) == before


@pytest.mark.parametrize("args", [("apply",), ("gc",), ("history",)], ids=lambda a: a[0])
def test_a_root_that_is_a_regular_file_is_a_clear_error(sysenv, args) -> None:
    applied(sysenv)
    root = sysenv.work / "root-file"
    root.write_text("a file\n")
    p = run_with_root(sysenv, root, *args)
    assert p.returncode == 1, out(p)
    assert "Internal error" not in out(p)
    assert f"{root} is not a directory" in p.stderr, p.stderr
    assert root.read_text() == "a file\n"


def test_doctor_fails_its_permissions_check_and_init_needs_no_state(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + CONFIG)
    blocker = sysenv.work / "not-a-dir"
    blocker.write_text("a file\n")
    p = run_with_root(sysenv, blocker / "root", "doctor", "--json")
    assert p.returncode == 1, out(p)
    check = {c["name"]: c for c in json.loads(p.stdout)["checks"]}["permissions"]
    assert not check["ok"]
    assert f"{blocker} is not a directory" in check["detail"], check
    assert "SYSLUA_ROOT" in (check["fix"] or ""), check
    # sys init writes a config, not state: it works, and says what to run next
    p = run_with_root(sysenv, blocker / "root", "init", str(sysenv.work / "new"))
    ok(p)
    assert (sysenv.work / "new" / "sys.lua").is_file()


def run_with_root(sysenv, root: Path, *args: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """`sys *args` in the world of `sysenv`, but with SYSLUA_ROOT=`root`."""
    return SysEnv(sysenv.home, root, sysenv.work).run(*args)


# -- as another user: a root it cannot write --------------------------------------
def _as_nobody_works() -> bool:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    probe = subprocess.run(
        [*NOBODY, sys.executable, "-c", "import lupa, typer"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.skipif(
    not _as_nobody_works(), reason="needs root, setpriv, and a Python nobody can run"
)
def test_a_root_the_user_cannot_write_is_a_clear_error() -> None:
    base = Path(tempfile.mkdtemp(prefix="syslua-unwritable-", dir="/tmp"))
    try:
        base.chmod(0o755)
        root, home, work = base / "root", base / "home", base / "work"
        for d in (root, home, work):
            d.mkdir()
        os.chown(home, 65534, 65534)
        (work / "sys.lua").write_text(HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
        (work / "sys.lua").chmod(0o644)
        root.chmod(0o555)  # root's, and read-only to everyone else

        def sys_as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
            env = {
                "HOME": str(home),
                "SYSLUA_ROOT": str(root),
                "NO_COLOR": "1",
                "PYTHONPATH": str(ROOT),
                "PYTHONDONTWRITEBYTECODE": "1",
                "PATH": "/usr/bin:/bin",
            }
            return subprocess.run(
                [*NOBODY, sys.executable, "-m", "syslua", *args],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )

        for args in (("apply",), ("gc",), ("destroy", "--yes"), ("rollback",)):
            p = sys_as_nobody(*args)
            assert p.returncode == 1, (args, out(p))
            assert "Internal error" not in out(p), out(p)
            assert f"{root} is not writable by nobody (owned by root)" in p.stderr, (args, p.stderr)
        p = sys_as_nobody("doctor")
        assert p.returncode == 1 and f"{root} is not writable by nobody" in p.stdout, out(p)
        # reading what is not there is fine: nothing was applied
        p = sys_as_nobody("history")
        assert p.returncode == 0 and "No snapshots yet" in p.stdout, out(p)
        assert sorted(os.listdir(root)) == [] and not (home / "a.txt").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_git_input_fetched_into_an_unusable_cache_is_a_clear_error(sysenv) -> None:
    """The cache is under SYSLUA_ROOT too, and a git input is fetched into
    it while the config is evaluated, before the state is opened."""
    repo = sysenv.work / "repo"
    repo.mkdir()
    (repo / "init.lua").write_text("return {}\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    sysenv.write(
        "init.lua",
        f'return {{ inputs = {{ x = "git:file://{repo}" }}, setup = function() end }}\n',
    )
    blocker = sysenv.work / "not-a-dir"
    blocker.write_text("a file\n")
    before = tree(sysenv.work)
    for args in (("plan", "init.lua"), ("update", "-c", "init.lua")):
        p = run_with_root(sysenv, blocker / "root", *args)
        assert p.returncode == 1, out(p)
        assert "Internal error" not in out(p)
        assert (
            f"cannot use syslua's cache {blocker}/root/cache/inputs/store: "
            f"{blocker} is not a directory" in p.stderr
        ), p.stderr
    assert tree(sysenv.work) == before
