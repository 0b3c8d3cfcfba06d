"""`sys init --from URL [DIR] [--apply]` and `sys pull` (issue 15, item 1):
a config repository cloned with the system git, over `file://` from local
bare repositories made by the test."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HEADER, history, out, tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ID = [
    "-c",
    "user.name=Test",
    "-c",
    "user.email=test@example.invalid",
    "-c",
    "init.defaultBranch=main",
]


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    return subprocess.run(
        ["git", *ID, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


CONFIG = HEADER + 'file { path = "~/from-git.txt", content = "version 1\\n" }\n'


@pytest.fixture
def remote(tmp_path: Path) -> tuple[str, Path]:
    """A bare repository holding a sys.lua, and a work clone to push new commits from."""
    bare = tmp_path / "dotfiles.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    work = tmp_path / "author"
    git("clone", "--quiet", bare.as_uri(), str(work), cwd=tmp_path)
    (work / "sys.lua").write_text(CONFIG)
    git("add", "sys.lua", cwd=work)
    git("commit", "--quiet", "-m", "first", cwd=work)
    git("push", "--quiet", "origin", "HEAD:main", cwd=work)
    git("symbolic-ref", "HEAD", "refs/heads/main", cwd=bare)
    return bare.as_uri(), work


def push(work: Path, text: str, message: str) -> None:
    (work / "sys.lua").write_text(text)
    git("commit", "--quiet", "-am", message, cwd=work)
    git("push", "--quiet", "origin", "HEAD:main", cwd=work)


def test_init_from_clones_into_the_default_dir_and_plans(sysenv, remote) -> None:
    url, _ = remote
    p = sysenv.run("init", "--from", url)
    assert p.returncode == 0, out(p)
    clone = sysenv.home / ".config" / "syslua"
    assert (clone / "sys.lua").read_text() == CONFIG and (clone / ".git").is_dir()
    assert f"Cloned {url} into {clone} at " in p.stdout, out(p)
    assert "+ file ~/from-git.txt" in p.stdout, out(p)  # the plan
    assert not (sysenv.home / "from-git.txt").exists()  # only planned
    assert history(sysenv) == []


def test_init_from_with_apply_bootstraps_the_machine(sysenv, remote) -> None:
    url, _ = remote
    target = sysenv.work / "dots"
    p = sysenv.run("init", "--from", url, str(target), "--apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "from-git.txt").read_text() == "version 1\n"
    assert "Apply complete: snapshot" in p.stdout, out(p)
    assert [h["message"] for h in history(sysenv)] == ["apply sys.lua (1 changed)"]


def test_init_from_refuses_a_non_empty_directory(sysenv, remote) -> None:
    url, _ = remote
    target = sysenv.work / "dots"
    (target / "sub").mkdir(parents=True)
    (target / "notes.txt").write_text("mine\n")
    before = tree(target), tree(sysenv.home)
    p = sysenv.run("init", "--from", url, str(target), "--apply")
    assert p.returncode == 2, out(p)
    assert (
        f"{target} is not empty: `sys init --from` clones into a new or empty directory" in p.stderr
    )
    assert (tree(target), tree(sysenv.home)) == before
    assert history(sysenv) == []


def test_init_from_into_an_empty_directory_and_into_a_file(sysenv, remote) -> None:
    url, _ = remote
    empty = sysenv.work / "empty"
    empty.mkdir()
    assert sysenv.run("init", "--from", url, str(empty)).returncode == 0
    assert (empty / "sys.lua").is_file()
    a_file = sysenv.work / "file"
    a_file.write_text("x")
    p = sysenv.run("init", "--from", url, str(a_file))
    assert p.returncode == 2 and "is not a directory" in p.stderr, out(p)
    assert a_file.read_text() == "x"


def test_a_clone_that_fails_leaves_nothing_behind(sysenv, tmp_path) -> None:
    missing = (tmp_path / "no-such.git").as_uri()
    target = sysenv.work / "dots"
    p = sysenv.run("init", "--from", missing, str(target))
    assert p.returncode == 2, out(p)
    assert f"git clone of {missing} failed: " in p.stderr and "Traceback" not in out(p)
    # git's reason, not the advice it prints after it
    assert "does not appear to be a git repository" in p.stderr, out(p)
    assert not target.exists()
    empty = sysenv.work / "empty"
    empty.mkdir()
    p = sysenv.run("init", "--from", missing, str(empty))
    assert p.returncode == 2 and empty.is_dir() and not any(empty.iterdir()), out(p)


def test_an_empty_repository_is_said_so_and_leaves_nothing(sysenv, tmp_path) -> None:
    bare = tmp_path / "nothing.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    target = sysenv.work / "dots"
    p = sysenv.run("init", "--from", bare.as_uri(), str(target))
    assert p.returncode == 2, out(p)
    assert f"{bare.as_uri()} is an empty repository (no commits): nothing to clone" in p.stderr
    assert "Traceback" not in out(p) and not target.exists()


def test_a_repository_without_a_config_is_said_so(sysenv, tmp_path) -> None:
    bare = tmp_path / "empty.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    work = tmp_path / "w"
    git("clone", "--quiet", bare.as_uri(), str(work), cwd=tmp_path)
    (work / "README").write_text("no config here\n")
    git("add", "README", cwd=work)
    git("commit", "--quiet", "-m", "readme", cwd=work)
    git("push", "--quiet", "origin", "HEAD:main", cwd=work)
    git("symbolic-ref", "HEAD", "refs/heads/main", cwd=bare)
    target = sysenv.work / "dots"
    p = sysenv.run("init", "--from", bare.as_uri(), str(target), "--apply")
    assert p.returncode == 2, out(p)
    assert "has no sys.lua or init.lua at its top: nothing to apply (the clone is kept)" in p.stderr
    assert (target / "README").is_file() and history(sysenv) == []


def test_apply_and_stubs_need_from_or_not(sysenv) -> None:
    p = sysenv.run("init", "--apply", str(sysenv.work / "x"))
    assert p.returncode == 2 and "--apply goes with --from URL" in p.stderr, out(p)
    assert not (sysenv.work / "x").exists()
    p = sysenv.run("init", "--stubs", "--from", "file:///nowhere", str(sysenv.work))
    assert p.returncode == 2 and "cannot be used together" in p.stderr, out(p)


def test_pull_fast_forwards_and_prints_the_new_plan(sysenv, remote) -> None:
    url, author = remote
    clone = sysenv.work / "dots"
    assert sysenv.run("init", "--from", url, str(clone), "--apply").returncode == 0
    p = sysenv.run("pull", cwd=clone)
    assert p.returncode == 0, out(p)
    assert f"{clone} is up to date at " in p.stdout and "No changes." in p.stdout, out(p)

    push(author, CONFIG.replace("version 1", "version 2"), "bump to version 2")
    p = sysenv.run("pull", cwd=clone)
    assert p.returncode == 0, out(p)
    assert f"Updated {clone}: " in p.stdout and "(1 commit)." in p.stdout, out(p)
    assert "bump to version 2" in p.stdout
    assert "~ file ~/from-git.txt" in p.stdout, out(p)
    assert "version 2" in (clone / "sys.lua").read_text()
    assert (sysenv.home / "from-git.txt").read_text() == "version 1\n"  # pull only plans


def test_pull_finds_the_default_clone_and_takes_a_dir(sysenv, remote) -> None:
    url, author = remote
    assert sysenv.run("init", "--from", url).returncode == 0
    push(author, CONFIG.replace("version 1", "version 3"), "three")
    p = sysenv.run("pull")  # the work dir has no config: ~/.config/syslua's
    assert p.returncode == 0 and "(1 commit)." in p.stdout, out(p)
    assert "version 3" in (sysenv.home / ".config" / "syslua" / "sys.lua").read_text()
    p = sysenv.run("pull", str(sysenv.home / ".config" / "syslua"))
    assert p.returncode == 0 and "is up to date" in p.stdout, out(p)


def test_pull_refuses_what_does_not_fast_forward(sysenv, remote) -> None:
    url, author = remote
    clone = sysenv.work / "dots"
    assert sysenv.run("init", "--from", url, str(clone)).returncode == 0
    (clone / "sys.lua").write_text(CONFIG + "-- local\n")
    git("commit", "--quiet", "-am", "local change", cwd=clone)
    push(author, CONFIG.replace("version 1", "version 2"), "upstream change")

    def work_tree() -> dict:
        # git fetches before it finds it cannot fast-forward: .git gains objects
        return {k: v for k, v in tree(clone).items() if not k.startswith(".git/")}

    before, head = work_tree(), git("rev-parse", "HEAD", cwd=clone)
    p = sysenv.run("pull", str(clone))
    assert p.returncode == 2, out(p)
    assert (
        f"git pull --ff-only in {clone} failed: " in p.stderr and "Nothing was changed." in p.stderr
    )
    assert work_tree() == before and git("rev-parse", "HEAD", cwd=clone) == head


def test_pull_outside_a_repository(sysenv) -> None:
    sysenv.write("sys.lua", HEADER)
    p = sysenv.run("pull")
    assert p.returncode == 2, out(p)
    assert (
        "is not in a git repository: `sys pull` updates a config cloned with `sys init --from URL`"
        in p.stderr
    )


# -- issue 23, point 5: update points at pull; pull --apply; a dirty clone ---------------
def test_update_without_inputs_points_at_pull(sysenv, remote) -> None:
    url, _ = remote
    clone = sysenv.work / "dots"
    assert sysenv.run("init", "--from", url, str(clone)).returncode == 0
    before = tree(clone)
    p = sysenv.run("update", str(clone / "sys.lua"))
    assert p.returncode == 0, out(p)
    assert "sys.lua declares no inputs; nothing to update." in p.stdout, out(p)
    assert "run `sys pull`, or `sys pull --apply` to apply them too" in p.stdout, out(p)
    assert tree(clone) == before


def test_pull_apply_pulls_then_applies(sysenv, remote) -> None:
    url, author = remote
    clone = sysenv.work / "dots"
    assert sysenv.run("init", "--from", url, str(clone), "--apply").returncode == 0
    push(author, CONFIG.replace("version 1", "version 2"), "bump to version 2")
    p = sysenv.run("pull", "--apply", str(clone))
    assert p.returncode == 0, out(p)
    assert f"Updated {clone}: " in p.stdout and "Apply complete" in p.stdout, out(p)
    assert (sysenv.home / "from-git.txt").read_text() == "version 2\n"
    assert len(history(sysenv)) == 2


def _shell(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A line of commands as a user would paste it into a shell, with `sys` on PATH."""
    bin_dir = cwd / ".bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "sys"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m syslua "$@"\n')
    shim.chmod(0o755)
    ident = {
        "GIT_AUTHOR_NAME": "Me",
        "GIT_AUTHOR_EMAIL": "me@example.invalid",
        "GIT_COMMITTER_NAME": "Me",
        "GIT_COMMITTER_EMAIL": "me@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    full = {**env, **ident, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}
    return subprocess.run(
        ["sh", "-c", line], cwd=cwd, env=full, capture_output=True, text=True, timeout=120
    )


# Lines apart, so that the upstream change and the local one merge cleanly.
PADDED = CONFIG + "-- one\n-- two\n-- three\n-- four\n"
MINE = 'file { path = "~/local.txt", content = "mine\\n" }\n'


@pytest.mark.parametrize("way", ["commit", "stash"])
def test_pull_of_a_dirty_clone_says_why_and_how_on(sysenv, remote, way: str) -> None:
    url, author = remote
    push(author, PADDED, "padding")
    clone = sysenv.work / "dots"
    assert sysenv.run("init", "--from", url, str(clone), "--apply").returncode == 0
    (clone / "sys.lua").write_text(PADDED + MINE)  # an edit not committed
    push(author, PADDED.replace("version 1", "version 2"), "upstream change")

    def work_tree() -> dict:
        # git fetches before it finds the merge would overwrite: .git gains objects
        return {k: v for k, v in tree(clone).items() if not k.startswith(".git/")}

    before, head = work_tree(), git("rev-parse", "HEAD", cwd=clone)
    p = sysenv.run("pull", "--apply", str(clone))
    assert p.returncode == 2, out(p)
    assert "the clone has changes not committed that the pull would overwrite:" in p.stderr
    # git's reason, with the file it names
    assert "error: Your local changes to the following files would be overwritten" in p.stderr
    assert "    sys.lua" in p.stderr, p.stderr
    assert "Nothing was changed." in p.stderr
    assert work_tree() == before and git("rev-parse", "HEAD", cwd=clone) == head
    assert (sysenv.home / "from-git.txt").read_text() == "version 1\n"
    # each way on, run as printed, pulls and applies and keeps the edit
    lines = p.stderr.splitlines()
    intro = {
        "commit": "Keep the changes in a commit, then pull over them:",
        "stash": "or put them aside, pull, and bring them back:",
    }[way]
    command = lines[lines.index(intro) + 1].strip()
    assert command.startswith("cd "), command
    done = _shell(command, sysenv.work, sysenv.env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Apply complete" in done.stdout, done.stdout
    assert (sysenv.home / "from-git.txt").read_text() == "version 2\n"
    text = (clone / "sys.lua").read_text()
    assert "version 2" in text and "~/local.txt" in text, text
