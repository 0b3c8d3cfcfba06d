"""Taking over the home a dotfiles tool installed, without churn (issue 24, point 2).

On a home where stow or dotbot already made the links, the first `sys apply`
of a config declaring the same links (as `sys import` writes it: the
repositories' `imported.lua` in tests/data/dotfiles/, written by hand in the
importers' shape) finds them converged:

- a link whose target is the same entry as the source the config names is
  `= unchanged`, even when the tool made it relative (stow's
  `dotfiles/bash/.bashrc`), and it is kept as it is: recorded as managed and
  as an original;
- a folded directory link (stow's `~/.config/nvim -> ../dotfiles/nvim/.config/nvim`,
  dotbot's link to a whole directory) under a link tree of exactly the
  directory it shows is kept: no unfolding, no writes. When the config needs
  something else there, it is unfolded with a journal, as before;
- that first apply writes nothing at all (every entry of the home, with its
  mode, owner, link target, size and mtime, is the same afterwards), and
  `sys destroy` leaves the home exactly as the tool installed it, relative
  links relative and folds folded.

Each test installs the home with the real tool (skipped without it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, out, put

DATA = ROOT / "tests" / "data" / "dotfiles"
NO_CHANGES = "No changes. The machine matches the configuration."
STOW_PACKAGES = ("nvim", "git", "bash", "bin", "fun", "desktop")


def lstat_tree(top: Path) -> dict[str, tuple[str, int, int, str | None, int, int]]:
    """Every entry under `top` (the top itself as "."): kind, mode, owner,
    link target, size and mtime in nanoseconds. A write of any kind shows."""
    found = {}
    for here, dirs, files in os.walk(top):
        for name in [".", *dirs, *files] if Path(here) == top else [*dirs, *files]:
            path = os.path.join(here, name)
            st = os.lstat(path)
            kind = (
                "link"
                if stat.S_ISLNK(st.st_mode)
                else "dir"
                if stat.S_ISDIR(st.st_mode)
                else "file"
            )
            target = os.readlink(path) if kind == "link" else None
            size = 0 if kind == "dir" else st.st_size
            rel = os.path.normpath(os.path.relpath(path, top))
            found[rel] = (kind, stat.S_IMODE(st.st_mode), st.st_uid, target, size, st.st_mtime_ns)
    return found


def home_only(entries: dict) -> dict:
    """Without the repository (which the test itself may have changed)."""
    return {k: v for k, v in entries.items() if k.split("/")[0] != "dotfiles"}


def without_mtimes(entries: dict) -> dict:
    return {k: v[:-1] for k, v in entries.items()}


def repo_files(repo: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry of the repository but .git: kind, mode, content hash or link target."""
    found = {}
    for here, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            path = os.path.join(here, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                what = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                what = ("dir", stat.S_IMODE(st.st_mode), "")
            else:
                what = (
                    "file",
                    stat.S_IMODE(st.st_mode),
                    hashlib.sha256(Path(path).read_bytes()).hexdigest(),
                )
            found[os.path.relpath(path, repo)] = what
    return found


def _git(repo: Path, *args: str) -> None:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*cmd, *args], cwd=repo, check=True, capture_output=True)


def repository(sysenv, name: str, *, git: bool = True) -> Path:  # type: ignore[no-untyped-def]
    """The fixture at ~/dotfiles with its `imported.lua` as `sys.lua`, under git
    unless `git` is false."""
    put(sysenv.home / ".config/user-dirs.dirs", 'XDG_DESKTOP_DIR="$HOME/Desktop"\n')
    repo = sysenv.home / "dotfiles"
    shutil.copytree(DATA / name, repo, symlinks=True)
    for top, dirs, files in os.walk(repo):
        for d in dirs:
            os.chmod(os.path.join(top, d), 0o755)
        for f in files:
            p = os.path.join(top, f)
            os.chmod(p, 0o755 if os.stat(p).st_mode & 0o111 else 0o644)
    os.replace(repo / "imported.lua", repo / "sys.lua")
    if git:
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "dotfiles")
    return repo


def stowed(sysenv, *, git: bool = True) -> Path:  # type: ignore[no-untyped-def]
    stow = shutil.which("stow")
    if stow is None:
        pytest.skip("stow is not installed")
    repo = repository(sysenv, "stow", git=git)
    subprocess.run([stow, "-d", str(repo), "-t", str(sysenv.home), *STOW_PACKAGES], check=True)
    home = sysenv.home
    # what stow made: relative links, folds where one package owns a directory
    assert os.readlink(home / ".bashrc") == "dotfiles/bash/.bashrc"
    assert os.readlink(home / ".config/nvim") == "../dotfiles/nvim/.config/nvim"
    assert os.readlink(home / ".config/git") == "../dotfiles/git/.config/git"
    assert os.readlink(home / ".local/share") == "../dotfiles/desktop/.local/share"
    assert os.readlink(home / ".local/bin/coin") == "../../dotfiles/fun/.local/bin/coin"
    return repo


def dotbotted(sysenv) -> Path:  # type: ignore[no-untyped-def]
    if importlib.util.find_spec("dotbot") is None:
        pytest.skip("dotbot is not installed (pip install dotbot)")
    repo = repository(sysenv, "dotbot")
    cmd = [sys.executable, "-c", "import sys; from dotbot.cli import main; sys.exit(main())"]
    env = {**os.environ, "HOME": str(sysenv.home)}
    p = subprocess.run(
        [*cmd, "-c", "install.conf.yaml", "-d", str(repo)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert os.readlink(sysenv.home / ".config/kitty") == str(repo / "config/kitty")
    return repo


def first_apply_writes_nothing(sysenv, repo: Path) -> dict:  # type: ignore[no-untyped-def]
    """The plan is all `=`, the apply changes nothing on disk, and then there
    is nothing to do, no drift, no edit. Returns the home as installed."""
    installed = lstat_tree(sysenv.home)
    p = sysenv.run("plan", cwd=repo)
    assert p.returncode == 0, out(p)
    assert NO_CHANGES in p.stdout, p.stdout
    for word in ("will become a directory", "will update", "takes over", "writing through"):
        assert word not in p.stdout, p.stdout
    a = sysenv.run("apply", cwd=repo)
    assert a.returncode == 0, out(a)
    assert "Apply complete: snapshot" in a.stdout, out(a)
    assert lstat_tree(sysenv.home) == installed, "the first apply wrote into the home"
    again = sysenv.run("plan", cwd=repo)
    assert NO_CHANGES in again.stdout, again.stdout
    s = sysenv.run("status", cwd=repo)
    assert s.returncode == 0 and "No drift" in s.stdout, out(s)
    d = sysenv.run("doctor", cwd=repo)
    assert d.returncode == 0, out(d)
    return installed


def destroyed(sysenv, repo: Path, installed: dict) -> None:  # type: ignore[no-untyped-def]
    """`sys destroy` leaves the home as the tool installed it, and the repository as it is."""
    files = repo_files(repo)
    d = sysenv.run("destroy", "--yes", cwd=repo)
    assert d.returncode == 0, out(d)
    assert "Destroy complete" in d.stdout, out(d)
    assert repo_files(repo) == files, "sys destroy changed the repository"
    now = home_only(lstat_tree(sysenv.home))
    installed = home_only(installed)
    assert without_mtimes(now) == without_mtimes(installed), {
        k: (installed.get(k), now.get(k))
        for k in sorted(set(now) | set(installed))
        if (now.get(k) or ())[:-1] != (installed.get(k) or ())[:-1]
    }


def test_a_home_stow_installed_is_taken_over_without_a_write(sysenv):
    repo = stowed(sysenv)
    installed = first_apply_writes_nothing(sysenv, repo)
    home = sysenv.home
    p = sysenv.run("plan", "-v", cwd=repo)
    for line in (
        "= file ~/.bashrc: unchanged",
        "= file ~/.config/nvim/init.lua: unchanged",
        "= file ~/.local/share/applications/notes.desktop: unchanged",
    ):
        assert line in p.stdout, (line, p.stdout)
    # an edit through the kept fold lands in the repository, and is no edit for syslua
    with open(home / ".config/nvim/init.lua", "a") as f:
        f.write("-- more\n")
    p = sysenv.run("plan", cwd=repo)
    assert NO_CHANGES in p.stdout, p.stdout
    a = sysenv.run("add", "~/.bashrc", cwd=repo)
    assert "nothing to do" in a.stdout, out(a)
    destroyed(sysenv, repo, installed)
    assert home_only(lstat_tree(home)) == home_only(installed)  # destroy wrote nothing either


def test_a_home_dotbot_installed_is_taken_over_without_a_write(sysenv):
    repo = dotbotted(sysenv)
    installed = first_apply_writes_nothing(sysenv, repo)
    destroyed(sysenv, repo, installed)


def test_a_relative_link_to_the_same_file_is_unchanged_and_kept_relative(sysenv):
    repo = sysenv.home / "dotfiles"
    put(repo / "bashrc", "PS1='$ '\n")
    put(repo / "other", "x\n")
    (repo / "sys.lua").write_text(
        'file { path = "~/.bashrc", source = "bashrc", link = true }\n'
        'file { path = "~/.profile", source = "bashrc", link = true }\n'
    )
    os.symlink("dotfiles/bashrc", sysenv.home / ".bashrc")
    os.symlink("dotfiles/./../dotfiles/other", sysenv.home / ".profile")  # elsewhere
    p = sysenv.run("plan", "-v", cwd=repo)
    assert "= file ~/.bashrc: unchanged" in p.stdout, p.stdout
    assert "~ file ~/.profile: will update (target dotfiles/./../dotfiles/other -> " in p.stdout
    a = sysenv.run("apply", cwd=repo)
    assert a.returncode == 0, out(a)
    assert os.readlink(sysenv.home / ".bashrc") == "dotfiles/bashrc"
    assert os.readlink(sysenv.home / ".profile") == str(repo / "bashrc")
    d = sysenv.run("destroy", "--yes", cwd=repo)
    assert d.returncode == 0, out(d)
    assert os.readlink(sysenv.home / ".bashrc") == "dotfiles/bashrc"
    assert os.readlink(sysenv.home / ".profile") == "dotfiles/./../dotfiles/other"


def test_a_fold_the_config_must_change_is_unfolded_and_comes_back(sysenv):
    repo = stowed(sysenv)
    installed = without_mtimes(lstat_tree(sysenv.home))
    with open(repo / "sys.lua", "a") as f:
        f.write('file { path = "~/.config/nvim/local.lua", content = "-- this machine\\n" }\n')
    _git(repo, "commit", "-qam", "a file of this machine")
    p = sysenv.run("plan", cwd=repo)
    assert "~/.config/nvim: a link into the repository (stow?); will become a directory" in (
        p.stdout
    ), p.stdout
    assert "~/.config/git: a link" not in p.stdout  # kept: nothing to write there
    a = sysenv.run("apply", cwd=repo)
    assert a.returncode == 0, out(a)
    nvim = sysenv.home / ".config/nvim"
    assert nvim.is_dir() and not nvim.is_symlink()
    assert (nvim / "local.lua").read_text() == "-- this machine\n"
    assert os.readlink(sysenv.home / ".config/git") == "../dotfiles/git/.config/git"
    p = sysenv.run("plan", cwd=repo)
    assert NO_CHANGES in p.stdout, p.stdout
    destroyed(sysenv, repo, {k: (*v, 0) for k, v in installed.items()})


@pytest.mark.parametrize("where", ["the repository", "elsewhere"])
def test_destroy_never_removes_through_a_kept_fold_of_a_repository_without_git(sysenv, where):
    """A fold kept as stow made it (`~/.local/share -> ../dotfiles/desktop/.local/share`)
    shows the repository itself: a destroy, which plans without the config and
    finds no git work tree to protect, must not remove the tree behind it.
    (Found by hand: it deleted desktop/.local/share/applications from the repository.)"""
    repo = stowed(sysenv, git=False)
    (repo / "sys.lua").unlink()  # as `sys import stow` writes it: a tree per folder of a package
    imported = sysenv.run("import", "stow", str(repo), cwd=repo)
    assert imported.returncode == 0, out(imported)
    assert 'path = "~/.local/share/applications"' in (repo / "sys.lua").read_text()
    installed = first_apply_writes_nothing(sysenv, repo)
    destroyed_from = repo if where == "the repository" else sysenv.home
    files = repo_files(repo)
    d = sysenv.run("destroy", "--yes", cwd=destroyed_from)
    assert d.returncode == 0, out(d)
    assert repo_files(repo) == files, "sys destroy changed the repository"
    assert (repo / "desktop/.local/share/applications/notes.desktop").is_file()
    now = home_only(lstat_tree(sysenv.home))
    assert without_mtimes(now) == without_mtimes(home_only(installed))
