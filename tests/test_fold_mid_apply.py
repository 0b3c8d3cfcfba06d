"""A directory the user folds into a repository (stow's way: moved there, a
link in its place) while an apply runs is never written through: an item
after the fold refuses, and the apply rolls back."""

from __future__ import annotations

import os

import pytest
from conftest import HEADER, SysEnv, put, tree

from syslua import safe_fs


def test_a_fold_made_between_two_items_is_never_written_through(sysenv: SysEnv) -> None:
    repo = sysenv.work / "repo"
    repo.mkdir()
    put(sysenv.home / ".config" / "app" / "keep.txt", "mine\n")
    fold = f"mv {sysenv.home}/.config {repo}/.config && ln -s {repo}/.config {sysenv.home}/.config"
    sysenv.write(
        "sys.lua",
        HEADER
        + 'local a = file { path = "~/.config/app/a.conf", content = "a\\n" }\n'
        + f'local e = exec {{ name = "fold", command = "{fold}", depends_on = {{ a }} }}\n'
        + 'file { path = "~/.config/app/b.conf", content = "b\\n", depends_on = { e } }\n',
    )
    res = sysenv.run("apply")
    assert res.returncode != 0, res.stdout + res.stderr
    assert not (repo / ".config" / "app" / "b.conf").exists()
    assert tree(repo / ".config" / "app").keys() <= {"keep.txt", "a.conf"}


def test_a_kept_directory_is_not_reused_through_a_link_above_it(sysenv: SysEnv) -> None:
    """The apply's directory cache (`safe_fs.cached`): a directory kept open
    whose parent was since moved into a repository and linked back (the same
    inode, reached through the link) is walked again, and refused."""
    app = sysenv.home / ".config" / "app"
    app.mkdir(parents=True)
    repo = sysenv.work / "repo"
    repo.mkdir()
    with safe_fs.cached():
        with safe_fs.at(str(app / "a.conf")) as (fd, name):
            os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.rename(sysenv.home / ".config", repo / ".config")
        os.symlink(repo / ".config", sysenv.home / ".config")
        with pytest.raises(safe_fs.UnsafePath), safe_fs.at(str(app / "b.conf"), {}):
            pass  # planning saw no link: the walk refuses the one it meets
    assert not (repo / ".config" / "app" / "b.conf").exists()
