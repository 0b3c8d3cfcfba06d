"""`sys import stow` and `sys import mirror` (issue 24, "Done when").

Each fixture repository is copied to ~/dotfiles and installed with the
real tool (GNU stow, `cp -a`, the holman-style bootstrap), then imported
with the real CLI and walked: the first apply over the tool's home writes
nothing (every entry's kind, mode, content or link target, and mtime, the
same), an edit in the repository is applied and rolled back, and destroy
leaves the home the tool installed, byte for byte and link for link.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, out, tree

from syslua.importers.mirror import furniture
from syslua.importers.stow import DEFAULT_IGNORE, to_globs

DOTFILES = ROOT / "tests" / "data" / "dotfiles"
IMPORT = ROOT / "tests" / "data" / "import"


def _stow() -> str:
    path = shutil.which("stow")
    if path is None:
        pytest.skip("stow is not installed")
    return path


def _home(sysenv, *, mtimes: bool = True) -> dict:  # type: ignore[no-untyped-def]
    """The home without the repository: kind, mode, content or target (and mtime)."""
    now: dict[str, tuple] = {
        k: v for k, v in tree(sysenv.home).items() if k.split("/")[0] != "dotfiles"
    }
    if mtimes:
        now = {k: (*v, os.lstat(sysenv.home / k).st_mtime_ns) for k, v in now.items()}
        st = os.lstat(sysenv.home)
        now["."] = ("dir", stat.S_IMODE(st.st_mode), None, st.st_mtime_ns)
    return now


def _diff(before: dict, after: dict) -> dict:
    return {
        k: (before.get(k), after.get(k))
        for k in sorted(set(before) | set(after))
        if before.get(k) != after.get(k)
    }


def _install(sysenv, fixture: Path, *cmd: str) -> Path:  # type: ignore[no-untyped-def]
    """Copy `fixture` to ~/dotfiles, commit it, and run the tool's install command there."""
    repo = sysenv.home / "dotfiles"
    shutil.copytree(fixture, repo, symlinks=True)
    git = [
        "git",
        "-c",
        "user.name=T",
        "-c",
        "user.email=t@example.org",
        "-c",
        "init.defaultBranch=main",
    ]
    env = {**os.environ, "HOME": str(sysenv.work), "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "dotfiles"]):
        subprocess.run([*git, *args], cwd=repo, env=env, check=True, capture_output=True)
    if os.path.lexists(repo / "sys.lua"):
        os.remove(repo / "sys.lua")  # the hand-written one of docs/dotfiles.md
    p = subprocess.run(
        cmd, cwd=repo, env={**os.environ, "HOME": str(sysenv.home)}, capture_output=True, text=True
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return repo


def _import(sysenv, repo: Path, *args: str, cwd: Path | None = None) -> str:  # type: ignore[no-untyped-def]
    """`sys import ARGS` (from `cwd`, default the repository): the home is
    unchanged; returns the sys.lua written in `repo`."""
    before = _home(sysenv)
    p = sysenv.run("import", *args, cwd=cwd or repo)
    assert p.returncode == 0 and "Traceback" not in out(p), out(p)
    assert "Wrote " in p.stdout, out(p)
    assert _home(sysenv) == before
    lua = (repo / "sys.lua").read_text()
    code = [ln for ln in lua.splitlines() if ln.strip() and not ln.startswith("--")]
    declarations = sum(1 for ln in code if ln.startswith("file {"))
    print(f"{args[0]}: {len(lua.splitlines())} lines, {declarations} declarations\n{lua}")
    written = repo / "sys.lua"
    if written.is_relative_to(sysenv.home):  # shown as the user writes it
        shown = f"~/{written.relative_to(sysenv.home)}"
    else:
        shown = str(written)
    assert f"Wrote {shown}: {declarations} declaration" in p.stdout, out(p)
    return lua


def _walk(sysenv, repo: Path, edit: str, *, churn_needs_j5: bool, copied_to: str = "") -> None:  # type: ignore[no-untyped-def]
    """First apply writes nothing; an edit (of the repository's file `edit`, and
    a line added to sys.lua) is applied, then rolled back; destroy gives back
    the tool's home."""
    installed = _home(sysenv)
    p = sysenv.run("apply", cwd=repo)
    assert p.returncode == 0 and "Apply complete" in p.stdout, out(p)
    churn = _diff(installed, _home(sysenv))
    if not churn_needs_j5:
        assert churn == {}, f"the first apply over the tool's home wrote: {churn}"
    p = sysenv.run("plan", cwd=repo)
    assert "No changes." in p.stdout, out(p)

    # an edit in the repository: applied, then rolled back
    applied = _home(sysenv, mtimes=False)
    path = repo / edit
    path.write_text(path.read_text() + "# one more line\n")
    with open(repo / "sys.lua", "a") as f:
        f.write('file { path = "~/.hushlogin", content = "" }\n')
    p = sysenv.run("apply", cwd=repo)
    assert p.returncode == 0, out(p)
    assert (sysenv.home / ".hushlogin").is_file()
    if copied_to:  # a copy: the edit is in ~ too
        assert (sysenv.home / copied_to).read_text().endswith("# one more line\n")
    p = sysenv.run("rollback", cwd=repo)
    assert p.returncode == 0 and "Rollback complete" in p.stdout, out(p)
    assert _diff(applied, _home(sysenv, mtimes=False)) == {}

    p = sysenv.run("destroy", "--yes", cwd=repo)
    assert p.returncode == 0 and "Destroy complete" in p.stdout, out(p)
    plain = {k: v[:3] for k, v in installed.items() if k != "."}
    assert _diff(plain, _home(sysenv, mtimes=False)) == {}, "destroy: not the tool's home"
    assert not churn, f"the first apply over the tool's home wrote {churn}"


# -- stow ----------------------------------------------------------------------------
def test_stow_packages_of_the_dotfiles_fixture(sysenv):
    stow = _stow()
    packages = ("nvim", "git", "bash", "bin", "fun", "desktop")
    repo = _install(sysenv, DOTFILES / "stow", stow, "-t", str(sysenv.home), *packages)
    lua = _import(sysenv, repo, "stow", ".")
    for line in (
        'file { path = "~/.bashrc", source = "./bash/.bashrc", link = true }',
        # two packages share ~/.local/bin: two trees of one path, which merge
        'file { path = "~/.local/bin", source = "./bin/.local/bin", link = true, ignore = stow_ignore }',
        'file { path = "~/.local/bin", source = "./fun/.local/bin", link = true, ignore = stow_ignore }',
        'file { path = "~/.config/nvim", source = "./nvim/.config/nvim", link = true, ignore = stow_ignore }',
        "local stow_ignore = {",
    ):
        assert line in lua, line
    assert "README" not in lua.split("local stow_ignore")[1]  # only the package's top README
    _walk(sysenv, repo, "nvim/.config/nvim/init.lua", churn_needs_j5=True)


def test_stow_dotfiles_and_a_local_ignore_list(sysenv):
    stow = _stow()
    repo = _install(
        sysenv, IMPORT / "stow", stow, "--dotfiles", "-t", str(sysenv.home), "zsh", "git", "tmux"
    )
    lua = _import(sysenv, repo, "stow", ".", "--dotfiles")
    for line in (
        'file { path = "~/.zshrc", source = "./zsh/dot-zshrc", link = true }',
        'file { path = "~/.zsh", source = "./zsh/dot-zsh", link = true, ignore = stow_ignore }',
        'file { path = "~/.config/git", source = "./git/dot-config/git", link = true, ignore = stow_ignore }',
        # tmux's .stow-local-ignore replaces stow's list
        'file { path = "~/.tmux", source = "./tmux/.tmux", link = true, ignore = { "README*", "install.sh", "*.log" } }',
    ):
        assert line in lua, line
    for left_out in ('install.sh"', "README.md", "tmux-server.log", 'stow-local-ignore"'):
        assert f'source = "./tmux/{left_out}' not in lua
    _walk(sysenv, repo, "zsh/dot-zsh/aliases.zsh", churn_needs_j5=True)


def test_stow_named_packages_only_and_target(sysenv):
    stow = _stow()
    target = sysenv.home / "t"
    target.mkdir()
    repo = _install(sysenv, DOTFILES / "stow", stow, "-t", str(target), "bash")
    lua = _import(sysenv, repo, "stow", ".", "bash", "-t", str(target))
    assert "`stow -t ~/t bash`" in lua
    code = [ln for ln in lua.splitlines() if ln.startswith("file")]
    assert code == [
        'file { path = "~/t/.bash_profile", source = "./bash/.bash_profile", link = true }',
        'file { path = "~/t/.bashrc", source = "./bash/.bashrc", link = true }',
    ]


@pytest.mark.parametrize(
    "args,message",
    [
        (("stow", "README.md"), "is not a directory: stow reads a directory of packages"),
        (("stow", ".", "nosuch"), "'nosuch' is not a package of"),
        (("stow", ".", ".git"), "'.git' is not a package of"),
        (("mirror", "README.md"), "is not a directory: mirror reads a repository"),
    ],
)
def test_what_is_not_a_stow_or_mirror_repository(sysenv, args, message):
    repo = sysenv.home / "dotfiles"
    shutil.copytree(DOTFILES / "stow", repo)
    (repo / "sys.lua").unlink()
    before = tree(sysenv.home)
    p = sysenv.run("import", *args, cwd=repo)
    assert p.returncode == 2, out(p)
    assert message in out(p), out(p)
    assert tree(sysenv.home) == before


@pytest.mark.parametrize(
    "regex,globs",
    [
        ("RCS", ["RCS"]),
        (".+,v", ["*,v"]),
        (r"\.\#.+", [".#*"]),
        (".+~", ["*~"]),
        (r"\#.*\#", ["\\#*#"]),  # a leading # is a comment in gitignore
        ("^/README.*", ["/README*"]),
        (r"install\.sh", ["install.sh"]),
        (r"\.tmux/resurrect", ["**/.tmux/resurrect"]),  # a path regex, from any folder
        ("/notes$", ["/notes"]),
        (r"(foo|bar)\.txt", ["foo.txt", "bar.txt"]),
        ("x|y", ["x", "y"]),
        ("[^a]bc", ["[!a]bc"]),
        ("a+", None),
        (r"\d+", None),
        ("a{2}", None),
    ],
)
def test_stow_regexes_as_gitignore_patterns(regex, globs):
    assert to_globs(regex) == globs


def test_every_builtin_stow_regex_has_a_pattern():
    assert all(to_globs(rx) for rx in DEFAULT_IGNORE)


# -- mirror ---------------------------------------------------------------------------
def test_mirror_of_a_home_shaped_repository(sysenv):
    fixture = IMPORT / "mirror"
    entries = [e for e in sorted(os.listdir(fixture)) if not furniture(e)]
    repo = _install(sysenv, fixture, "cp", "-a", *entries, str(sysenv.home))
    os.chmod(repo / ".ssh", 0o700)
    os.chmod(repo / ".ssh/config", 0o600)
    shutil.rmtree(sysenv.home / ".ssh")
    subprocess.run(["cp", "-a", str(repo / ".ssh"), str(sysenv.home)], check=True)
    lua = _import(sysenv, repo, "mirror", ".")
    code = [ln for ln in lua.splitlines() if ln.startswith("file")]
    assert code == [
        'file { path = "~/.bashrc", source = "./.bashrc" }',
        'file { path = "~/.vimrc", source = "./.vimrc" }',
        'file { path = "~/.config/kitty", source = "./.config/kitty" }',
        'file { path = "~/.local/bin", source = "./.local/bin" }',
        'file { path = "~/.ssh", source = "./.ssh", dir_mode = "0700" }',
    ]
    assert "-- Left out as the repository's own: .git, LICENSE, README.md." in lua
    _walk(sysenv, repo, ".bashrc", churn_needs_j5=False, copied_to=".bashrc")


def test_mirror_of_the_rsync_fixture_into_another_folder(sysenv):
    repo = _install(sysenv, DOTFILES / "rsync", "true")
    os.chmod(repo / "home/.ssh", 0o700)
    os.chmod(repo / "home/.ssh/config", 0o600)
    subprocess.run(["cp", "-a", f"{repo}/home/.", str(sysenv.home)], check=True)
    lua = _import(sysenv, repo, "mirror", ".", "--to", str(repo), cwd=repo / "home")
    assert not (repo / "home/sys.lua").exists()
    assert 'file { path = "~/.ssh", source = "./home/.ssh", dir_mode = "0700" }' in lua
    assert 'file { path = "~/.config/htop", source = "./home/.config/htop" }' in lua
    _walk(sysenv, repo, "home/.profile", churn_needs_j5=False, copied_to=".profile")


def test_mirror_suffix_holman_links(sysenv):
    repo = _install(sysenv, DOTFILES / "symlink", "sh", "script/bootstrap")
    lua = _import(sysenv, repo, "mirror", ".", "--suffix", ".symlink")
    code = [ln for ln in lua.splitlines() if ln.startswith("file")]
    assert code == [
        'file { path = "~/.gitconfig", source = "./git/gitconfig.symlink", link = true }',
        'file { path = "~/.gitignore", source = "./git/gitignore.symlink", link = true }',
        'file { path = "~/.tmux.conf", source = "./tmux/tmux.conf.symlink", link = true }',
        'file { path = "~/.vimrc", source = "./vim/vimrc.symlink", link = true }',
        'file { path = "~/.zshrc", source = "./zsh/zshrc.symlink", link = true }',
    ]
    _walk(sysenv, repo, "zsh/zshrc.symlink", churn_needs_j5=False)


def test_mirror_suffix_folders_are_one_link_at_any_depth(sysenv):
    repo = sysenv.home / "dotfiles"
    (repo / "vim/vim.symlink/colors").mkdir(parents=True)
    (repo / "vim/vim.symlink/colors/dark.vim").write_text("hi Normal ctermbg=0\n")
    (repo / "config/nvim").mkdir(parents=True)
    (repo / "config/nvim/nvimrc.symlink").write_text("set number\n")
    (repo / "config/nvim/init.lua").write_text("-- not linked\n")
    os.symlink(repo / "vim/vim.symlink", sysenv.home / ".vim")  # what `ln -s` made
    os.symlink(repo / "config/nvim/nvimrc.symlink", sysenv.home / ".nvimrc")
    lua = _import(sysenv, repo, "mirror", ".", "--suffix", ".symlink")
    code = [ln for ln in lua.splitlines() if ln.startswith("file")]
    assert code == [
        'file { path = "~/.nvimrc", source = "./config/nvim/nvimrc.symlink", link = true }',
        'file { path = "~/.vim", ensure = "link", target = "./vim/vim.symlink" }  -- a folder: one link',
    ]
    before = _home(sysenv)
    p = sysenv.run("apply", cwd=repo)
    assert p.returncode == 0, out(p)
    assert _diff(before, _home(sysenv)) == {}
    assert stat.S_ISLNK(os.lstat(sysenv.home / ".vim").st_mode)
