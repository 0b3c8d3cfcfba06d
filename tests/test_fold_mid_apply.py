"""A directory the user folds into a repository (stow's way: moved there, a
link in its place) while an apply runs is never written through: an item
after the fold refuses, and the apply rolls back."""

from __future__ import annotations

from conftest import HEADER, SysEnv, put, tree


def test_a_fold_made_between_two_items_is_never_written_through(sysenv: SysEnv) -> None:
    repo = sysenv.work / "repo"
    repo.mkdir()
    put(sysenv.home / ".config" / "app" / "keep.txt", "mine\n")
    fold = (
        f"mv {sysenv.home}/.config {repo}/.config && ln -s {repo}/.config {sysenv.home}/.config"
    )
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
