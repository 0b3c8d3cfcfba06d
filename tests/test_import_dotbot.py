"""`sys import dotbot CONFIG` (issue 24): a sys.lua from an install.conf.yaml that
takes the home the real dotbot installed over as it is.

Two repositories: the small one of issue 21 (tests/data/dotfiles/dotbot) and
a richer one in the shape of popular public dotbot repositories
(tests/data/import/dotbot: defaults, globs, create with modes, `if`,
`relative`, `ignore-missing`, shell commands, clean). Each is installed into
a temp home by the real dotbot (from PyPI, the test extra), imported with
the real CLI, then walked: the first apply writes nothing (the home tree,
mtimes included, is what dotbot left), an edit of the config, a rollback, and
destroy back to dotbot's home byte for byte and link for link.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, out, put, tree

from syslua.importers.dotbot import _condition, _creates

DATA = ROOT / "tests" / "data"
NO_CHANGES = "No changes. The machine matches the configuration."


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent.parent)}
    cmd = ["git", "-c", "user.name=T", "-c", "user.email=t@example.org", *args]
    subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)


def _dotbot(home: Path, repo: Path) -> None:
    """Install the repository into `home` with the real dotbot."""
    if importlib.util.find_spec("dotbot") is None:
        pytest.skip("dotbot is not installed (pip install dotbot)")
    code = "import sys; from dotbot.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, "-c", "install.conf.yaml", "-d", str(repo)]
    env = {**os.environ, "HOME": str(home)}
    p = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def _home(home: Path, *, mtimes: bool = False) -> dict:
    """The home without the repository: `tree()`, and each entry's mtime when asked."""
    now = {k: v for k, v in tree(home).items() if k.split("/")[0] != "dotfiles"}
    if mtimes:
        stamped = {k: (v, (home / k).lstat().st_mtime_ns) for k, v in now.items()}
        return {".": (None, home.stat().st_mtime_ns), **stamped}
    return now


def _repo(sysenv, name: str) -> Path:  # type: ignore[no-untyped-def]
    repo = sysenv.home / "dotfiles"
    shutil.copytree(DATA / name, repo, symlinks=True)
    (repo / "sys.lua").unlink(missing_ok=True)  # issue 21's hand translation
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "my dotfiles")
    return repo


@pytest.mark.parametrize("name,declarations", [("dotfiles/dotbot", 8), ("import/dotbot", 23)])
def test_import_then_apply_over_dotbots_home_writes_nothing_and_destroy_gives_it_back(
    sysenv, name, declarations
):
    repo = _repo(sysenv, name)
    _dotbot(sysenv.home, repo)
    installed, before = _home(sysenv.home), _home(sysenv.home, mtimes=True)

    p = sysenv.run("import", "dotbot", str(repo / "install.conf.yaml"))
    assert p.returncode == 0, out(p)
    wrote = f"~/{(repo / 'sys.lua').relative_to(sysenv.home)}"
    assert f"Wrote {wrote}: {declarations} declarations from dotbot" in p.stdout
    # the repository is untouched but for the new sys.lua
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert status == "?? sys.lua\n", status

    p = sysenv.run("apply", cwd=repo)
    assert p.returncode == 0 and "Apply complete" in p.stdout, out(p)
    after = _home(sysenv.home, mtimes=True)
    churn = {k for k in set(after) | set(before) if after.get(k) != before.get(k)}
    p = sysenv.run("plan", cwd=repo)
    assert NO_CHANGES in p.stdout, out(p)
    taken_over = _home(sysenv.home)

    # an edit of the config: ~/.vimrc a copy instead of a link
    lua = repo / "sys.lua"
    text = lua.read_text()
    line = 'file { path = "~/.vimrc", source = "vimrc", link = true }'
    assert line in text
    lua.write_text(text.replace(line, 'file { path = "~/.vimrc", source = "vimrc" }'))
    p = sysenv.run("apply", cwd=repo)
    assert p.returncode == 0, out(p)
    vimrc = sysenv.home / ".vimrc"
    assert not vimrc.is_symlink() and vimrc.read_bytes() == (repo / "vimrc").read_bytes()
    p = sysenv.run("rollback", cwd=repo)
    assert "Rollback complete" in p.stdout, out(p)
    assert _home(sysenv.home) == taken_over
    lua.write_text(text)

    p = sysenv.run("destroy", "--yes", cwd=repo)
    assert "Destroy complete" in p.stdout, out(p)
    assert _home(sysenv.home) == installed
    # The first apply wrote nothing, dotbot's relative link (`relative: true`) included.
    assert not churn, f"the first apply over dotbot's home changed {sorted(churn)}"


def test_the_import_guide_shows_the_sys_lua_written_for_the_rich_fixture(sysenv):
    """docs/import.md's dotbot before/after is the config and what `sys import` writes."""
    repo = _repo(sysenv, "import/dotbot")
    p = sysenv.run("import", "dotbot", str(repo / "install.conf.yaml"))
    assert p.returncode == 0, out(p)
    guide = (ROOT / "docs" / "import.md").read_text()
    section = guide[guide.index("\n## dotbot\n") :]
    section = section[: section.index("\n## ", 5)]
    assert _block(section, "yaml") == (repo / "install.conf.yaml").read_text()
    assert _block(section, "lua") == (repo / "sys.lua").read_text()


def _block(text: str, lang: str) -> str:
    start = text.index(f"```{lang}\n") + len(lang) + 4
    return text[start : text.index("```", start)]


@pytest.mark.parametrize(
    "test,lua",
    [
        ("[ `uname` = Darwin ]", 'sys.facts.os == "darwin"'),
        ('[ "$(uname)" = "Linux" ]', 'sys.facts.os == "linux"'),
        ("[ $(uname -s) != Darwin ]", 'sys.facts.os ~= "darwin"'),
        ('[[ "$OSTYPE" == darwin* ]]', 'sys.facts.os == "darwin"'),
        ("[[ $OSTYPE == linux-gnu* ]]", 'sys.facts.os == "linux"'),
        ('[ "$(hostname)" = laptop ]', 'sys.facts.hostname == "laptop"'),
        ("test `hostname -s` = work-mac", 'sys.facts.hostname == "work-mac"'),
        ("command -v kinit", None),
        ("[ -f ~/.work ]", None),
        ("[ `uname` = Darwin ] && [ -d /Applications ]", None),
    ],
)
def test_if_conditions_that_name_the_os_or_host_become_facts(test, lua):
    assert _condition(test) == lua


def test_json_config_globs_with_prefix_and_exclude_and_a_hard_link(sysenv):
    repo = sysenv.home / "dots"
    for rel in ("home/bashrc", "home/profile", "home/secret", "bin/a", "etc/x.conf"):
        put(repo / rel, f"{rel}\n")
    (repo / "install.conf.json").write_text(
        '[{"defaults": {"link": {"relink": true}}},\n'
        ' {"link": {"~/": {"glob": true, "path": "home/*", "prefix": ".",'
        ' "exclude": ["home/secret"]},\n'
        '           "~/.x.conf": {"path": "etc/x.conf", "type": "hardlink"},\n'
        '           "~/.gone": {"path": "nothere"}}},\n'
        ' {"brew": ["ripgrep"]}]\n'
    )
    p = sysenv.run("import", "dotbot", str(repo / "install.conf.json"), "--dry-run")
    assert p.returncode == 0, out(p)
    assert 'file { path = "~/.bashrc", source = "home/bashrc", link = true }' in p.stdout
    assert 'file { path = "~/.profile", source = "home/profile", link = true }' in p.stdout
    assert "secret" not in p.stdout.replace("home/*", "")
    assert 'file { path = "~/.x.conf", source = "etc/x.conf" }  -- a hard link' in p.stdout
    assert (
        "-- ~/.gone: left out: its source nothere does not exist (dotbot fails this link"
        in p.stdout
    )
    assert "install.conf.json: `brew`: a plugin's directive, not translated" in p.stdout
    assert not (repo / "sys.lua").exists()


@pytest.mark.parametrize(
    "text,why",
    [
        ("link:\n  ~/.vimrc: vimrc\n", "it must be a list of directives"),
        ("- link: [\n", "is not a dotbot config"),
        ("- ~/.vimrc\n", "entry 1 is not a map of directives"),
    ],
)
def test_not_a_dotbot_config_is_refused_and_nothing_is_written(sysenv, text, why):
    repo = sysenv.home / "dots"
    put(repo / "install.conf.yaml", text)
    before = tree(sysenv.home)
    p = sysenv.run("import", "dotbot", str(repo / "install.conf.yaml"))
    assert p.returncode == 2, out(p)
    assert why in out(p)
    assert tree(sysenv.home) == before


@pytest.mark.parametrize(
    "command,made",
    [
        ("git clone https://example.org/tpm ~/.tmux/plugins/tpm", "~/.tmux/plugins/tpm"),
        ("touch ~/.hushlogin", "~/.hushlogin"),
        ("mkdir -p $HOME/.cache/vim", "~/.cache/vim"),
        (
            "curl -fLo ~/.vim/autoload/plug.vim https://example.org/plug.vim",
            "~/.vim/autoload/plug.vim",
        ),
        ("wget -O ~/.git-prompt.sh https://example.org/p.sh", "~/.git-prompt.sh"),
        ("ln -sf ~/dots/x ~/.x", "~/.x"),
        ("git submodule update --init --recursive", None),
        ("mkdir -p ~/a && touch ~/a/b", None),
        ("touch $HOME/a; rm -rf ~/b", None),
        ("touch $(date)", None),
    ],
)
def test_shell_commands_that_make_one_obvious_path_get_creates(sysenv, command, made):
    got = _creates(command, sysenv.home / "dotfiles")
    assert (got and got.replace(str(sysenv.home), "~", 1)) == made
