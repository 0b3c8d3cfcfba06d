"""Nothing is ever written into the repository through a link (issue 21, point 1).

GNU stow folds a directory that only one package owns into one link into the
repository (`~/.config/git -> ../../dotfiles/git/.config/git`). A declared
path below such a fold would be written through it, into the repository. The
fold is unfolded instead: it becomes a real directory whose entries are links
to where the fold pointed, and then the declared entries are managed; the
fold comes back, as the same link, on rollback and destroy.

The tests install the home with the real `stow` (skipped without it) and
check after every step that each file of the repository is byte-identical
and `git status` is clean.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import out, tree

STOW = shutil.which("stow")
needs_stow = pytest.mark.skipif(STOW is None, reason="needs GNU stow (Debian package stow)")

PACKAGES = {
    "nvim/.config/nvim/init.lua": "require('plugins')\n",
    "nvim/.config/nvim/lua/plugins/init.lua": "return {}\n",
    "nvim/.config/nvim/lua/plugins/git.lua": "return { 'fugitive' }\n",
    "git/.config/git/config": "[user]\n\tname = A\n",
    "git/.config/git/ignore": "*.swp\n",
    "bin/.local/bin/hello": "#!/bin/sh\necho hello\n",
    "fun/.local/bin/fortune": "#!/bin/sh\necho luck\n",
    "bash/.bashrc": "PS1='$ '\n",
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def fingerprint(repo: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry of the repository but .git: kind, mode, content hash or link target."""
    found = {}
    for top, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            p = os.path.join(top, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, repo)
            if os.path.islink(p):
                found[rel] = ("link", 0, os.readlink(p))
            elif os.path.isdir(p):
                found[rel] = ("dir", st.st_mode & 0o7777, "")
            else:
                found[rel] = (
                    "file",
                    st.st_mode & 0o7777,
                    hashlib.sha256(Path(p).read_bytes()).hexdigest(),
                )
    return found


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.before = fingerprint(path)

    def intact(self) -> None:
        assert fingerprint(self.path) == self.before
        assert _git(self.path, "status", "--porcelain") == ""


def stowed(sysenv, config: str, packages=("nvim", "git", "bin", "fun", "bash")) -> Repo:  # type: ignore[no-untyped-def]
    repo = sysenv.home / "dotfiles"
    for rel, text in PACKAGES.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        if "/bin/" in rel:
            p.chmod(0o755)
    (repo / "sys.lua").write_text(config)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "dotfiles")
    assert STOW is not None
    subprocess.run([STOW, "-d", str(repo), "-t", str(sysenv.home), *packages], check=True)
    return Repo(repo)


def home_only(entries: dict) -> dict:
    return {k: v for k, v in entries.items() if k != "dotfiles" and not k.startswith("dotfiles/")}


FOLDS = """\
file { path = "~/.config/git/config", source = "git/.config/git/config", link = true }
file { path = "~/.config/nvim/lua/plugins/git.lua", content = "return {}\\n" }
"""


@needs_stow
def test_stow_made_the_folds_these_tests_are_about(sysenv):
    stowed(sysenv, FOLDS)
    home = sysenv.home
    assert os.readlink(home / ".config/git") == "../dotfiles/git/.config/git"
    assert os.readlink(home / ".config/nvim") == "../dotfiles/nvim/.config/nvim"
    assert not (home / ".config").is_symlink()
    assert not (home / ".local/bin").is_symlink()  # two packages share it: stow unfolded it


@needs_stow
def test_a_fold_is_shown_in_the_plan_and_unfolded_by_the_apply(sysenv):
    repo = stowed(sysenv, FOLDS)
    home = sysenv.home
    installed = tree(home)
    p = sysenv.run("plan", cwd=repo.path)
    assert p.returncode == 0, out(p)
    assert "~/.config/git: a link into the repository (stow?); will become a directory" in p.stdout
    assert "~/.config/nvim: a link into the repository (stow?); will become a directory" in p.stdout
    repo.intact()
    assert tree(home) == installed

    a = sysenv.run("apply", cwd=repo.path)
    assert a.returncode == 0, out(a)
    repo.intact()
    # The folds are real directories now; what they showed is still there.
    git = home / ".config/git"
    assert git.is_dir() and not git.is_symlink()
    assert os.readlink(git / "config") == str(repo.path / "git/.config/git/config")
    assert os.readlink(git / "ignore") == "../../dotfiles/git/.config/git/ignore"
    assert (git / "ignore").read_text() == "*.swp\n"
    nvim = home / ".config/nvim"
    assert not nvim.is_symlink() and not (nvim / "lua").is_symlink()
    assert not (nvim / "lua/plugins").is_symlink()
    assert (nvim / "lua/plugins/git.lua").read_text() == "return {}\n"
    assert not (nvim / "lua/plugins/git.lua").is_symlink()
    assert (nvim / "lua/plugins/init.lua").read_text() == "return {}\n"
    assert (nvim / "init.lua").read_text() == "require('plugins')\n"
    assert os.readlink(nvim / "init.lua") == "../../dotfiles/nvim/.config/nvim/init.lua"

    again = sysenv.run("plan", cwd=repo.path)
    assert "No changes" in again.stdout, out(again)
    s = sysenv.run("status", cwd=repo.path)
    assert s.returncode == 0, out(s)

    d = sysenv.run("destroy", "--yes", cwd=repo.path)
    assert d.returncode == 0, out(d)
    repo.intact()
    assert tree(home) == installed  # the folds are links again, as stow made them


@needs_stow
def test_rollback_puts_the_fold_back(sysenv):
    repo = stowed(sysenv, 'file { path = "~/.bashrc", source = "bash/.bashrc", link = true }\n')
    home = sysenv.home
    assert sysenv.run("apply", cwd=repo.path).returncode == 0
    after_first = home_only(tree(home))
    (repo.path / "sys.lua").write_text(FOLDS)
    _git(repo.path, "commit", "-qam", "more")
    repo = Repo(repo.path)
    a = sysenv.run("apply", cwd=repo.path)
    assert a.returncode == 0, out(a)
    repo.intact()
    assert not (home / ".config/git").is_symlink()
    r = sysenv.run("rollback", cwd=repo.path)
    assert r.returncode == 0, out(r)
    repo.intact()
    assert home_only(tree(home)) == after_first


@needs_stow
def test_a_dropped_declaration_folds_the_directory_again(sysenv):
    repo = stowed(sysenv, FOLDS)
    home = sysenv.home
    installed = tree(home)
    assert sysenv.run("apply", cwd=repo.path).returncode == 0
    (repo.path / "sys.lua").write_text(
        'file { path = "~/.bashrc", source = "bash/.bashrc", link = true }\n'
    )
    _git(repo.path, "commit", "-qam", "less")
    repo = Repo(repo.path)
    a = sysenv.run("apply", cwd=repo.path)
    assert a.returncode == 0, out(a)
    repo.intact()
    now = tree(home)
    assert now[".config/git"] == installed[".config/git"]
    assert now[".config/nvim"] == installed[".config/nvim"]


@needs_stow
def test_a_file_of_ours_in_an_unfolded_directory_keeps_it_unfolded_on_removal(sysenv):
    repo = stowed(sysenv, FOLDS)
    home = sysenv.home
    assert sysenv.run("apply", cwd=repo.path).returncode == 0
    (home / ".config/git/credentials").write_text("mine\n")
    d = sysenv.run("destroy", "--yes", cwd=repo.path)
    assert d.returncode == 0, out(d)
    repo.intact()
    assert (home / ".config/git/credentials").read_text() == "mine\n"
    # Nothing the fold showed is gone.
    assert (home / ".config/git/config").read_text() == "[user]\n\tname = A\n"
    assert (home / ".config/git/ignore").read_text() == "*.swp\n"


def test_a_link_that_would_point_to_itself_is_refused(sysenv):
    repo = sysenv.home / "dotfiles"
    repo.mkdir()
    (repo / "vimrc").write_text("set nu\n")
    (repo / "sys.lua").write_text(
        'file { path = "~/dotfiles/vimrc", source = "vimrc", link = true }\n'
    )
    before = tree(sysenv.home)
    p = sysenv.run("plan", cwd=repo)
    assert "! file ~/dotfiles/vimrc" in p.stdout, out(p)
    assert "would point to itself" in p.stdout
    a = sysenv.run("apply", cwd=repo)
    assert a.returncode == 1, out(a)
    assert "would point to itself" in out(a)
    assert tree(sysenv.home) == before


def test_a_link_to_a_loop_is_refused(sysenv):
    repo = sysenv.home / "dotfiles"
    repo.mkdir()
    os.symlink("b", repo / "a")
    os.symlink("a", repo / "b")
    (repo / "sys.lua").write_text('file { path = "~/.a", source = "a", link = true }\n')
    before = tree(sysenv.home)
    p = sysenv.run("plan", cwd=repo)
    assert "! file ~/.a" in p.stdout, out(p)
    assert "is a symlink loop" in p.stdout
    a = sysenv.run("apply", cwd=repo)
    assert a.returncode == 1, out(a)
    assert tree(sysenv.home) == before


def test_a_directory_link_made_by_dotbot_is_kept_under_a_link_tree_of_what_it_shows(
    sysenv,
):
    """dotbot links a directory with one absolute link. A link tree of that
    very directory finds it converged (issue 24, point 2): kept, nothing
    written; destroy leaves it, and the members behind it are the
    repository's, never removed."""
    repo = sysenv.home / "dotfiles"
    kitty = repo / "config" / "kitty"
    kitty.mkdir(parents=True)
    (kitty / "kitty.conf").write_text("font_size 12\n")
    (kitty / "theme.conf").write_text("dark\n")
    (repo / "sys.lua").write_text(
        'file { path = "~/.config/kitty", source = "config/kitty", link = true }\n'
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "dotfiles")
    checked = Repo(repo)
    (sysenv.home / ".config").mkdir()
    os.symlink(kitty, sysenv.home / ".config" / "kitty")
    installed = home_only(tree(sysenv.home))
    a = sysenv.run("apply", cwd=repo)
    assert a.returncode == 0, out(a)
    checked.intact()
    assert home_only(tree(sysenv.home)) == installed
    assert os.readlink(sysenv.home / ".config/kitty") == str(kitty)
    d = sysenv.run("destroy", "--yes", cwd=repo)
    assert d.returncode == 0, out(d)
    checked.intact()
    assert home_only(tree(sysenv.home)) == installed


def _destroyed(sysenv, repo: Repo, installed: dict) -> None:  # type: ignore[no-untyped-def]
    """`sys destroy` leaves the repository as it was and the home as stow made it."""
    d = sysenv.run("destroy", "--yes", cwd=repo.path)
    assert d.returncode == 0, out(d)
    repo.intact()
    assert home_only(tree(sysenv.home)) == installed


def _apply(sysenv, repo: Repo, config: str):  # type: ignore[no-untyped-def]
    (repo.path / "sys.lua").write_text(config)
    _git(repo.path, "commit", "-q", "--allow-empty", "-am", "config")
    repo.before = fingerprint(repo.path)
    a = sysenv.run("apply", cwd=repo.path)
    assert a.returncode == 0, out(a)
    repo.intact()
    return a


@needs_stow
def test_an_absent_path_under_a_fold_goes_from_the_home_only(sysenv):
    repo = stowed(sysenv, 'file { path = "~/.bashrc", source = "bash/.bashrc", link = true }\n')
    home = sysenv.home
    installed = home_only(tree(home))
    _apply(
        sysenv,
        repo,
        'file { path = "~/.config/nvim/init.lua", ensure = "absent" }\n'
        'file { path = "~/.config/nvim/lua", ensure = "absent", force = true }\n'
        'file { path = "~/.config/git/nothing", ensure = "absent" }\n',
    )
    nvim = home / ".config/nvim"
    assert nvim.is_dir() and not nvim.is_symlink()
    assert not os.path.lexists(nvim / "init.lua") and not os.path.lexists(nvim / "lua")
    assert (home / ".config/git").is_symlink()  # nothing to remove there: left folded
    _destroyed(sysenv, repo, installed)


@needs_stow
def test_files_declared_one_after_another_under_a_fold_leave_it_folded_in_the_end(sysenv):
    a = 'file { path = "~/.config/nvim/a.lua", content = "a\\n" }\n'
    b = 'file { path = "~/.config/nvim/b.lua", content = "b\\n" }\n'
    repo = stowed(sysenv, a)
    home = sysenv.home
    installed = home_only(tree(home))
    _apply(sysenv, repo, a)
    _apply(sysenv, repo, a + b)
    _apply(sysenv, repo, b)  # a goes; the directory stays unfolded for b
    assert (home / ".config/nvim/b.lua").read_text() == "b\n"
    assert not os.path.lexists(home / ".config/nvim/a.lua")
    _destroyed(sysenv, repo, installed)


@needs_stow
def test_one_file_swapped_for_another_under_a_fold_and_rolled_back(sysenv):
    a = 'file { path = "~/.config/nvim/a.lua", content = "a\\n" }\n'
    b = 'file { path = "~/.config/nvim/b.lua", content = "b\\n" }\n'
    repo = stowed(sysenv, a)
    home = sysenv.home
    installed = home_only(tree(home))
    _apply(sysenv, repo, a)
    _apply(sysenv, repo, b)
    assert not os.path.lexists(home / ".config/nvim/a.lua")
    r = sysenv.run("rollback", cwd=repo.path)
    assert r.returncode == 0, out(r)
    repo.intact()
    assert (home / ".config/nvim/a.lua").read_text() == "a\n"
    assert not os.path.lexists(home / ".config/nvim/b.lua")
    _destroyed(sysenv, repo, installed)


@needs_stow
def test_a_config_outside_the_repository_never_writes_into_it_through_a_fold(sysenv):
    repo = stowed(sysenv, "-- the config lives in ~/sysconf\n")
    home = sysenv.home
    installed = home_only(tree(home))
    conf = home / "sysconf"
    conf.mkdir()
    (conf / "sys.lua").write_text(
        'file { path = "~/.bashrc", source = "../dotfiles/bash/.bashrc", link = true }\n'
        'file { path = "~/.config/nvim/new.lua", content = "x\\n" }\n'
    )
    p = sysenv.run("plan", cwd=conf)
    assert (
        "~/.config/nvim: a link into the repository (stow?); will become a directory" in p.stdout
    ), out(p)
    a = sysenv.run("apply", cwd=conf)
    assert a.returncode == 0, out(a)
    repo.intact()
    assert (home / ".config/nvim/new.lua").read_text() == "x\n"
    d = sysenv.run("destroy", "--yes", cwd=conf)
    assert d.returncode == 0, out(d)
    repo.intact()
    assert {
        k: v for k, v in home_only(tree(home)).items() if not k.startswith("sysconf")
    } == installed


@needs_stow
def test_a_dangling_fold_becomes_an_empty_directory_and_comes_back(sysenv):
    repo = stowed(sysenv, 'file { path = "~/.config/nvim/init.lua", content = "new\\n" }\n')
    home = sysenv.home
    _git(repo.path, "rm", "-rq", "nvim")
    _git(repo.path, "commit", "-qm", "no nvim")
    repo = Repo(repo.path)
    installed = home_only(tree(home))
    assert not (home / ".config/nvim").exists()  # stow's link dangles
    a = sysenv.run("apply", cwd=repo.path)
    assert a.returncode == 0, out(a)
    repo.intact()
    assert not (home / ".config/nvim").is_symlink()
    assert (home / ".config/nvim/init.lua").read_text() == "new\n"
    _destroyed(sysenv, repo, installed)


@needs_stow
def test_a_directory_declared_on_a_fold_keeps_what_it_showed(sysenv):
    repo = stowed(sysenv, 'file { path = "~/.config/nvim", ensure = "directory" }\n')
    home = sysenv.home
    installed = home_only(tree(home))
    a = sysenv.run("apply", cwd=repo.path)
    assert a.returncode == 0, out(a)
    repo.intact()
    nvim = home / ".config/nvim"
    assert nvim.is_dir() and not nvim.is_symlink()
    assert (nvim / "init.lua").read_text() == "require('plugins')\n"
    _destroyed(sysenv, repo, installed)


def test_a_link_holding_a_protected_path_counts_as_showing_the_repository() -> None:
    """`Protected.holds`: inside a root, or above one (a stow fold of the folder
    that holds a declared source); a name that only starts the same does not."""
    from syslua.resources.file_folds import Protected

    protected = Protected.of({"/r/dotfiles/desktop/.local/share/applications", "/r/other"})
    assert protected.holds("/r/dotfiles/desktop/.local/share")  # above a root
    assert protected.holds("/r/dotfiles/desktop/.local/share/applications/x")  # inside
    assert protected.holds("/r/other")
    assert not protected.holds("/r/dotfiles/desktop/.local/shared")  # a prefix, not a parent
    assert not protected.holds("/r/oth")
    assert not protected.holds("/elsewhere")
