"""`sys import rcm` and `sys import yadm` over a home the real tool installed (issue 24).

Each fixture is installed with the real tool (rcm's `rcup`, `yadm clone`;
skipped when it is not installed), imported with the CLI, then walked: the
first `sys apply` writes nothing (every entry, mode, link target and mtime of
the home as the tool left it), an edit of the config, `sys rollback`, and
`sys destroy`, after which the home is the tool's again, byte for byte and
link for link.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, out, put, tree

NO_CHANGES = "No changes. The machine matches the configuration."
USER_FILES = {".config/user-dirs.dirs": 'XDG_DOWNLOAD_DIR="$HOME/dl"\n', ".profile.local": "x=1\n"}


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def _git(cwd: Path, *args: str, home: Path) -> None:
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    cmd = ["git", "-c", "user.name=T", "-c", "user.email=t@example.org"]
    cmd += ["-c", "init.defaultBranch=main", *args]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, (args, p.stdout + p.stderr)


def _home(home: Path, skip: tuple[str, ...]) -> dict:
    """The home as `tree()` sees it, without the entries under `skip`."""
    return {k: v for k, v in tree(home).items() if not k.startswith(skip)}


def _times(home: Path, skip: tuple[str, ...]) -> dict[str, int]:
    """The mtime of every entry of the home (links their own), without those under `skip`."""
    return {k: (home / k).lstat().st_mtime_ns for k in _home(home, skip)}


def _same(now: dict, then: dict, step: str) -> None:
    if now != then:
        keys = sorted(set(now) | set(then))
        diff = {k: (then.get(k), now.get(k)) for k in keys if now.get(k) != then.get(k)}
        pytest.fail(f"after {step}, the home is not the tool's (tool's, now): {diff}")


def _import(sysenv, repo: Path, fmt: str, *, takes_over: bool = True) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """`sys import FMT REPO`: the sys.lua beside the repository, and its plan (with
    `takes_over`: nothing to do)."""
    p = sysenv.run("import", fmt, str(repo))
    assert p.returncode == 0, out(p)
    assert "Traceback" not in out(p), out(p)
    if takes_over:
        assert NO_CHANGES in p.stdout, out(p)
    lua = (repo / "sys.lua").read_text()
    n = int(p.stdout.split(": ", 1)[1].split(" declarations")[0])
    return lua, n


def _walk(sysenv, repo: Path, skip: tuple[str, ...], *, churn_ok: bool) -> None:  # type: ignore[no-untyped-def]
    """First apply (no writes), an edit, rollback, destroy: the tool's home again."""
    home = sysenv.home
    installed, times = _home(home, skip), _times(home, skip)
    p = sysenv.run("apply", cwd=repo)
    assert p.returncode == 0 and "Apply complete: snapshot" in p.stdout, out(p)
    first = _home(home, skip)
    if not churn_ok:
        _same(first, installed, "the first apply")
        _same(_times(home, skip), times, "the first apply (mtimes)")
    p = sysenv.run("plan", cwd=repo)
    assert NO_CHANGES in p.stdout, out(p)
    # an edit of the config: one more file
    with open(repo / "sys.lua", "a") as f:
        f.write('file { path = "~/.hushlogin", content = "quiet\\n" }\n')
    p = sysenv.run("apply", cwd=repo)
    assert p.returncode == 0, out(p)
    assert (home / ".hushlogin").read_text() == "quiet\n"
    p = sysenv.run("rollback", cwd=repo)
    assert "Rollback complete: snapshot" in p.stdout, out(p)
    _same(_home(home, skip), first, "sys rollback")
    p = sysenv.run("apply", cwd=repo)
    assert p.returncode == 0 and (home / ".hushlogin").exists(), out(p)
    p = sysenv.run("destroy", "--yes", cwd=repo)
    assert "Destroy complete: snapshot" in p.stdout, out(p)
    _same(_home(home, skip), installed, "sys destroy")


# -- rcm ----------------------------------------------------------------------------
def _rcm_home(sysenv) -> Path:  # type: ignore[no-untyped-def]
    """tests/data/dotfiles/rcm at ~/dotfiles (without its hand-written sys.lua), installed by rcup."""
    rcup = _tool("rcup")
    home = sysenv.home
    for rel, text in USER_FILES.items():
        put(home / rel, text)
    put(home / ".config/syslua/facts.json", '{ "hostname": "laptop" }\n')
    repo = home / "dotfiles"
    shutil.copytree(ROOT / "tests/data/dotfiles/rcm", repo)
    (repo / "sys.lua").unlink()
    env = {**os.environ, "HOME": str(home), "RCRC": str(repo / "rcrc")}
    p = subprocess.run([rcup, "-B", "laptop"], cwd=repo, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert os.readlink(home / ".rcrc") == str(repo / "rcrc")  # rcrc itself is ~/.rcrc
    return repo


def test_rcm_import_takes_over_what_rcup_linked(sysenv):
    repo = _rcm_home(sysenv)
    lua, n = _import(sysenv, repo, "rcm")
    assert 'if sys.facts.hostname == "laptop" then' in lua, lua
    assert 'file { path = "~/.config/git", source = "./tag-git/config/git", link = true }' in lua, (
        lua
    )
    assert '"aliases", "rcrc", "vimrc", "zshrc"' in lua, lua  # README.md excluded in rcrc
    assert n == 7, lua
    _walk(sysenv, repo, ("dotfiles",), churn_ok=False)


def test_rcm_import_links_what_rcup_links(sysenv, tmp_path):
    """A repository using UNDOTTED, EXCLUDES, a tag left out, hooks, SYMLINK_DIRS and a
    host file over a top-level one: the imported config applied to an empty home makes
    exactly the home rcup makes."""
    rcup = _tool("rcup")
    repo = tmp_path / "rc"
    settings = 'TAGS="work"\nEXCLUDES="*.md"\nUNDOTTED="bin"\nSYMLINK_DIRS="emacs.d"\n'
    put(repo / "rcrc", f'DOTFILES_DIRS="{repo}"\n' + settings)
    put(repo / "zshrc", "top\n")
    put(repo / "host-box/zshrc", "box\n")
    put(repo / "README.md", "readme\n")
    put(repo / "bin/hello", "#!/bin/sh\n", mode=0o755)
    put(repo / "bin/.hidden", "no\n")
    put(repo / "bin/notes.md", "no\n")
    put(repo / "emacs.d/init.el", "(x)\n")
    put(repo / "config/kitty/kitty.conf", "k\n")
    put(repo / "tag-work/ssh/config", "Host w\n")
    put(repo / "tag-home/ssh/config", "Host h\n")
    put(repo / "hooks/post-up", "#!/bin/sh\n", mode=0o755)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    env = {**os.environ, "HOME": str(theirs), "RCRC": str(repo / "rcrc")}
    p = subprocess.run([rcup, "-K", "-B", "box"], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    p = sysenv.run("import", "rcm", str(repo), "--to", str(sysenv.work))
    assert p.returncode == 0, out(p)
    assert "hooks/post-up: rcup runs it" in p.stdout, out(p)
    lua = (sysenv.work / "sys.lua").read_text()
    assert 'source = "../rc/' in lua or 'source = "' + str(repo) in lua, lua
    p = sysenv.run("apply", "--fact", "hostname=box")
    assert p.returncode == 0, out(p)
    ours = {k: v for k, v in tree(sysenv.home).items() if not k.startswith(".local/state")}
    want = {k: v for k, v in tree(theirs).items()}
    assert set(ours) == set(want), lua
    for k, (kind, mode, data) in want.items():
        if kind == "link":
            assert ours[k] == (kind, mode, data), k
        else:
            assert ours[k][0] == kind, k


# -- yadm ---------------------------------------------------------------------------
YADM_SKIP = (".local/share/yadm",)  # yadm's own bare repository


def _yadm_home(sysenv) -> Path:  # type: ignore[no-untyped-def]
    """tests/data/import/yadm cloned into the home by `yadm clone`, this machine the laptop;
    and a clone of the same repository to import."""
    yadm = _tool("yadm")
    home, work = sysenv.home, sysenv.work
    for rel, text in USER_FILES.items():
        put(home / rel, text)
    put(home / ".config/syslua/facts.json", '{ "hostname": "laptop" }\n')
    src = work / "src"
    shutil.copytree(ROOT / "tests/data/import/yadm", src)
    _git(src, "init", "-q", home=work)
    _git(src, "add", "-A", home=work)
    _git(src, "commit", "-q", "-m", "my dotfiles", home=work)
    _git(work, "clone", "-q", "--bare", str(src), "repo.git", home=work)
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    for cmd in (
        [yadm, "clone", "--no-bootstrap", f"file://{work}/repo.git"],
        [yadm, "config", "local.hostname", "laptop"],
        [yadm, "config", "local.os", "Linux"],
        [yadm, "alt"],
    ):
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, (cmd, p.stdout + p.stderr)
    assert os.readlink(home / ".profile") == ".profile##os.Linux,hostname.laptop"
    assert os.readlink(home / ".gitconfig") == ".gitconfig##default"
    assert (home / ".config/starship.toml").is_file()  # from yadm's template
    repo = work / "dotfiles-yadm"
    _git(work, "clone", "-q", f"{work}/repo.git", str(repo), home=work)
    return repo


def test_yadm_import_translates_alternates_and_notes_the_rest(sysenv):
    repo = _yadm_home(sysenv)
    p = sysenv.run("import", "yadm", str(repo), "--dry-run")
    assert p.returncode == 0, out(p)
    for note in (
        ".config/starship.toml##template: a yadm template",
        ".config/yadm/encrypt: yadm encrypts .ssh/id_ed25519, .gnupg/*.gpg",
        ".config/yadm/bootstrap: yadm's bootstrap script",
    ):
        assert note in p.stdout, out(p)
    assert not (repo / "sys.lua").exists()
    lua, n = _import(sysenv, repo, "yadm", takes_over=False)
    assert 'if sys.facts.os == "linux" and sys.facts.hostname == "laptop" then' in lua, lua
    assert 'target = "~/.gitconfig##default"' in lua, lua
    assert n == 19, lua


def test_yadm_import_walk_back_to_yadms_home(sysenv):
    repo = _yadm_home(sysenv)
    _import(sysenv, repo, "yadm")
    _walk(sysenv, repo, YADM_SKIP, churn_ok=False)


def test_yadm_first_apply_writes_nothing(sysenv):
    """yadm's alternate links are relative (`.profile -> .profile##...`); the config's
    point to the same file: taken over as they are."""
    repo = _yadm_home(sysenv)
    _import(sysenv, repo, "yadm")
    home = sysenv.home
    installed, times = _home(home, YADM_SKIP), _times(home, YADM_SKIP)
    p = sysenv.run("apply", cwd=repo)
    assert p.returncode == 0, out(p)
    _same(_home(home, YADM_SKIP), installed, "the first apply")
    _same(_times(home, YADM_SKIP), times, "the first apply (mtimes)")
