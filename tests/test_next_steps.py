"""Next steps that work (issue 23, point 7).

Every refusal and failure ends with the command that, run as printed, makes
progress; where there are two ways on (keep an edit, or overwrite it), both
are printed and each works. Each test takes the command from the output and
runs it as a person would: through a shell, with `sys` on PATH (a `~/` is
the shell's to expand), then checks that it made the progress it promised.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from conftest import HEADER, ROOT, apply_ok, new_env, out, put
from test_init_from import git, push, remote  # noqa: F401  (a fixture)

COMMAND = re.compile(r"(?:^|: )((?:sys|git) \S.*)$")


def printed(text: str) -> list[str]:
    """The commands a run printed, in order: what follows `: ` on a line, from
    `sys ` or `git ` to the end of the line."""
    return [m.group(1) for ln in text.splitlines() if (m := COMMAND.search(ln.rstrip()))]


def shell(sysenv, command: str, *, background: bool = False):  # type: ignore[no-untyped-def]
    """Run `command` as printed through /bin/sh in the world of `sysenv`, a
    `sys` on PATH that is this checkout's."""
    bin_dir = sysenv.root.parent / "bin"
    if not (bin_dir / "sys").exists():
        bin_dir.mkdir(exist_ok=True)
        put(bin_dir / "sys", f'#!/bin/sh\nexec "{sys.executable}" -m syslua "$@"\n', 0o755)
    env = {
        **sysenv.env,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "GIT_CONFIG_NOSYSTEM": "1",
        **{
            f"GIT_{who}_{what}": v
            for who in ("AUTHOR", "COMMITTER")
            for what, v in (("NAME", "Test"), ("EMAIL", "test@example.invalid"))
        },
    }
    argv = ["/bin/sh", "-c", command]
    if background:
        return subprocess.Popen(
            argv,
            cwd=sysenv.work,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    return subprocess.run(
        argv, cwd=sysenv.work, env=env, text=True, capture_output=True, timeout=120
    )


# -- a plan with ! items -----------------------------------------------------------------
def test_a_known_failure_ends_with_the_apply_to_run_once_fixed(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + 'local m = exec { name = "mark", command = "touch " .. sys.user.home .. "/marker" }\n'
        + 'file { path = "~/a", source = "./a.txt", depends_on = { m } }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert p.stdout.splitlines()[-1] == "Fix what is marked !, then run again: sys apply", out(p)
    put(sysenv.work / "a.txt", "now here\n")  # the fix
    [again] = printed(p.stdout)
    done = shell(sysenv, again)
    assert done.returncode == 0, out(done)
    assert (sysenv.home / "a").read_text() == "now here\n" and (sysenv.home / "marker").exists()


def test_a_config_given_is_in_the_command(sysenv) -> None:
    sysenv.write("dots/sys.lua", HEADER + 'file { path = "~/a", source = "./a.txt" }\n')
    p = sysenv.run("apply", "dots/sys.lua")
    assert p.returncode == 1, out(p)
    assert printed(p.stdout) == ["sys apply dots/sys.lua"], out(p)


# -- a failed apply ----------------------------------------------------------------------
def test_a_failed_apply_names_the_apply_to_run_again(sysenv) -> None:
    flag = sysenv.home / "ready"
    sysenv.write(
        "sys.lua",
        HEADER + 'file { path = "~/a", content = "a\\n" }\n'
        f'exec {{ name = "check", command = "test -f {flag}", depends_on = {{ "file#~/a" }} }}\n',
    )
    p = sysenv.run("apply", "-m", "first try")
    assert p.returncode == 1, out(p)
    assert "Fix what failed, then run again: sys apply -m 'first try'" in p.stdout, out(p)
    assert p.stdout.splitlines()[-1] == "Apply failed. System unchanged.", out(p)
    flag.write_text("")  # the fix
    [again] = printed(p.stdout)
    done = shell(sysenv, again)
    assert done.returncode == 0, out(done)
    assert (sysenv.home / "a").read_text() == "a\n"


# -- edits made by hand: both ways work ---------------------------------------------------
SOURCED = 'file { path = "~/.vimrc", source = "dotfiles/vimrc" }\n'


def _edited(sysenv, body: str) -> None:  # type: ignore[no-untyped-def]
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, body)
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")


def test_an_edit_refused_gives_two_ways_and_both_work(sysenv, tmp_path: Path) -> None:
    other = new_env(tmp_path / "other")
    for world in (sysenv, other):
        _edited(world, SOURCED)
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    keep, overwrite = printed(p.stdout)
    assert (keep, overwrite) == ("sys add ~/.vimrc", "sys apply --force"), out(p)
    # keep: the edit goes into the source, and then the apply goes ahead
    done = shell(sysenv, keep)
    assert done.returncode == 0, out(done)
    assert (sysenv.work / "dotfiles" / "vimrc").read_text() == "set nu\nset hls\n"
    assert sysenv.run("apply").returncode == 0
    assert (sysenv.home / ".vimrc").read_text() == "set nu\nset hls\n"
    # overwrite: in the other world, the same refusal, the other command
    p = other.run("apply")
    assert printed(p.stdout)[1] == overwrite
    done = shell(other, overwrite)
    assert done.returncode == 0, out(done)
    assert (other.home / ".vimrc").read_text() == "set nu\n"


def test_the_plan_prints_the_same_two_ways(sysenv) -> None:
    _edited(sysenv, SOURCED)
    p = sysenv.run("plan")
    assert p.returncode == 1, out(p)
    assert printed(p.stdout) == ["sys add ~/.vimrc", "sys apply --force"], out(p)


INLINE = 'file { path = "~/.inputrc", content = "set bell-style none\\n" }\n'


def test_sys_add_of_inline_content_gives_two_ways_and_both_work(sysenv, tmp_path: Path) -> None:
    other = new_env(tmp_path / "other")
    for world in (sysenv, other):
        apply_ok(world, INLINE)
        (world.home / ".inputrc").write_text("set bell-style visible\n")
    p = sysenv.run("add", "~/.inputrc")
    assert p.returncode == 2, out(p)
    assert "is declared with inline `content` at sys.lua:3" in p.stderr, out(p)
    keep, drop = printed(p.stdout)
    assert (keep, drop) == ("sys apply", "sys apply --overwrite ~/.inputrc"), out(p)
    assert "make the declaration at sys.lua:3 say what ~/.inputrc holds now" in p.stdout
    # keep: the declaration made to say it (the person's part), then the command
    sysenv.write("sys.lua", HEADER + INLINE.replace("none", "visible"))
    done = shell(sysenv, keep)
    assert done.returncode == 0, out(done)
    assert (sysenv.home / ".inputrc").read_text() == "set bell-style visible\n"
    assert "No changes" in sysenv.run("plan").stdout
    # drop: in the other world, the edit is overwritten (and kept in a snapshot)
    done = shell(other, drop)
    assert done.returncode == 0, out(done)
    assert (other.home / ".inputrc").read_text() == "set bell-style none\n"


# -- the lock ---------------------------------------------------------------------------
def test_a_held_lock_names_the_same_command_with_wait(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "a\\n" }\n')
    lock = sysenv.root / "state" / "lock"
    lock.parent.mkdir(parents=True)
    code = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        p = sysenv.spawn("apply", "--json")
        assert p.returncode == 3, out(p)
        assert printed(p.stderr) == ["sys apply --wait"], out(p)  # --json dropped
        waiting = shell(sysenv, "sys apply --wait", background=True)
        time.sleep(1.0)
        assert waiting.poll() is None, "it should wait for the holder"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    stdout, stderr = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, stdout + stderr
    assert (sysenv.home / "a").read_text() == "a\n"


# -- a diverged clone -------------------------------------------------------------------
def test_a_diverged_clone_names_the_git_command_that_pulls(sysenv, remote) -> None:  # noqa: F811
    url, author = remote
    clone = sysenv.work / "dots"
    assert sysenv.run("init", "--from", url, str(clone)).returncode == 0
    first = (clone / "sys.lua").read_text()
    (clone / "sys.lua").write_text("-- local\n" + first)  # far from the upstream change
    git("commit", "--quiet", "-am", "local change", cwd=clone)
    push(author, first.replace("version 1", "version 2"), "upstream")
    p = sysenv.run("pull", str(clone))
    assert p.returncode == 2, out(p)
    command = printed(p.stderr)[-1]  # the last line
    assert p.stderr.rstrip().endswith(command)
    assert command == f"git -C {clone} pull --rebase", out(p)
    done = shell(sysenv, command)
    assert done.returncode == 0, out(done)
    assert "version 2" in (clone / "sys.lua").read_text()
    assert (clone / "sys.lua").read_text().startswith("-- local\n")
    p = sysenv.run("pull", str(clone))
    assert p.returncode == 0 and "is up to date" in p.stdout, out(p)


# -- a config that declares nothing ------------------------------------------------------
def test_an_empty_config_names_the_apply_that_removes_everything(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a", content = "a\\n" }\n')
    sysenv.write("sys.lua", "-- nothing any more\n")
    p = sysenv.run("apply")
    assert p.returncode == 2 and (sysenv.home / "a").exists(), out(p)
    [command] = printed(p.stderr)
    assert command == "sys apply --allow-empty", out(p)
    done = shell(sysenv, command)
    assert done.returncode == 0, out(done)
    assert not (sysenv.home / "a").exists()
