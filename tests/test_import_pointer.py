"""A pointer where people look (issue 24, point 3).

Given as CONFIG, another dotfiles manager's file or directory says what it
looks like and which `sys import` command writes a `sys.lua` from it: a
dotbot `install.conf.yaml` (which was read as a CCM manifest and refused
as `a YAML manifest must be a map ...`), a stow directory, a chezmoi source
directory, an rcm directory, a yadm work tree, a repository of `*.symlink`
files or one mirroring `~`. Exit 2 (a usage error), nothing changed, for
`sys plan` and `sys apply` alike; in such a directory without CONFIG, the
"no config file" error points there too. Every CCM manifest of the corpus
is still read as one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import HEADER, ROOT, ok, out, put, tree

from syslua.importers.detect import foreign_dir, foreign_file

DATA = ROOT / "tests" / "data" / "dotfiles"
CCM = ROOT / "tests" / "data" / "ccm"
HINT = "To write a sys.lua from it (and see its plan): "


def fixture(sysenv, name: str, to: str = "dotfiles") -> Path:  # type: ignore[no-untyped-def]
    """tests/data/dotfiles/NAME at ~/TO, without the sys.lua written for it by hand."""
    dest = sysenv.home / to
    shutil.copytree(DATA / name, dest, symlinks=True)
    (dest / "sys.lua").unlink()
    return dest


def refused(sysenv, *args: str, cwd: Path | None = None) -> str:  # type: ignore[no-untyped-def]
    """Run `sys ARGS`: exit 2, no traceback, and the home and state untouched; its stderr."""
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run(*args, cwd=cwd)
    assert p.returncode == 2, out(p)
    assert "Traceback" not in out(p)
    assert "Evaluating" not in out(p)
    assert (tree(sysenv.home), tree(sysenv.root)) == before
    return str(p.stderr)


def chezmoi_source(sysenv) -> Path:  # type: ignore[no-untyped-def]
    src = sysenv.home / ".local" / "share" / "chezmoi"
    put(src / "dot_bashrc", "alias ll='ls -l'\n")
    put(src / "private_dot_ssh" / "config", "Host *\n  ServerAliveInterval 60\n")
    put(src / "dot_gitconfig.tmpl", '[user]\n  email = "{{ .email }}"\n')
    put(src / ".chezmoiignore", "README.md\n")
    put(src / "run_once_install-packages.sh", "#!/bin/sh\n", 0o755)
    return src


# -- dotbot: a YAML list of tasks is not a CCM manifest ------------------------------
@pytest.mark.parametrize("command", ["plan", "apply"])
def test_a_dotbot_config_given_as_config_points_at_sys_import(sysenv, command: str) -> None:
    repo = fixture(sysenv, "dotbot")
    err = refused(sysenv, command, "install.conf.yaml", cwd=repo)
    assert err.startswith(
        "Error: install.conf.yaml looks like a dotbot config, not a syslua config\n"
    ), err
    assert HINT + "sys import dotbot ~/dotfiles/install.conf.yaml\n" in err
    assert "YAML manifest" not in err


def test_a_hidden_dotbot_config_by_its_full_path(sysenv) -> None:
    """The issue's own example: `.install.conf.yaml`, given from elsewhere."""
    repo = fixture(sysenv, "dotbot")
    (repo / "install.conf.yaml").rename(repo / ".install.conf.yaml")
    err = refused(sysenv, "plan", str(repo / ".install.conf.yaml"))
    assert "Error: ~/dotfiles/.install.conf.yaml looks like a dotbot config" in err
    assert HINT + "sys import dotbot ~/dotfiles/.install.conf.yaml\n" in err


def test_a_dotbot_json_config_too(sysenv) -> None:
    put(sysenv.work / "install.conf.json", '[{"link": {"~/.vimrc": "vimrc"}}]\n')
    err = refused(sysenv, "plan", "install.conf.json")
    assert "install.conf.json looks like a dotbot config" in err


def test_a_dotbot_repository_given_as_a_directory_points_at_its_config(sysenv) -> None:
    fixture(sysenv, "dotbot")
    err = refused(sysenv, "plan", "dotfiles", cwd=sysenv.home)
    assert err.startswith(
        "Error: dotfiles has no sys.lua or init.lua: "
        "it looks like a dotbot repository (install.conf.yaml)\n"
    ), err
    assert HINT + "sys import dotbot ~/dotfiles/install.conf.yaml\n" in err


# -- directories ---------------------------------------------------------------------
def test_a_stow_directory_points_at_sys_import_stow(sysenv) -> None:
    fixture(sysenv, "stow")
    for command in ("plan", "apply"):
        err = refused(sysenv, command, "~/dotfiles".replace("~", str(sysenv.home)))
        assert err.startswith(
            "Error: ~/dotfiles has no sys.lua or init.lua: it looks like a GNU stow directory\n"
        ), err
        assert HINT + "sys import stow ~/dotfiles\n" in err


def test_a_stow_directory_of_dot_names_adds_dotfiles(sysenv) -> None:
    stow = sysenv.home / "dotfiles"
    put(stow / "zsh" / "dot-zshrc", "setopt autocd\n")
    put(stow / "git" / "dot-config" / "git" / "config", "[user]\n")
    put(stow / "README.md", "my dotfiles\n")
    err = refused(sysenv, "plan", str(stow))
    assert HINT + "sys import stow ~/dotfiles --dotfiles\n" in err


def test_a_chezmoi_source_directory_points_at_sys_import_chezmoi(sysenv) -> None:
    src = chezmoi_source(sysenv)
    err = refused(sysenv, "plan", str(src))
    assert "it looks like a chezmoi source directory\n" in err, err
    assert HINT + "sys import chezmoi ~/.local/share/chezmoi\n" in err


def test_an_rcm_directory_points_at_sys_import_rcm(sysenv) -> None:
    fixture(sysenv, "rcm", ".dotfiles")
    err = refused(sysenv, "apply", str(sysenv.home / ".dotfiles"))
    assert "it looks like an rcm dotfiles directory\n" in err, err
    assert HINT + "sys import rcm ~/.dotfiles\n" in err


def test_a_yadm_work_tree_points_at_sys_import_yadm(sysenv) -> None:
    tree_ = sysenv.work / "yadm home"
    put(tree_ / ".bashrc##os.Linux", "export EDITOR=vim\n")
    put(tree_ / ".bashrc##default", "export EDITOR=vi\n")
    put(tree_ / ".config" / "yadm" / "bootstrap", "#!/bin/sh\n", 0o755)
    err = refused(sysenv, "plan", str(tree_))
    assert "it looks like a yadm work tree\n" in err, err
    assert HINT + f"sys import yadm '{tree_}'\n" in err  # quoted: it has a space


def test_a_home_managed_by_yadm_points_at_sys_import_yadm(sysenv) -> None:
    (sysenv.home / ".local" / "share" / "yadm" / "repo.git").mkdir(parents=True)
    put(sysenv.home / ".bashrc", "export EDITOR=vim\n")
    err = refused(sysenv, "plan", str(sysenv.home))
    assert HINT + "sys import yadm ~\n" in err, err


def test_a_plain_home_is_not_called_a_mirror(sysenv) -> None:
    put(sysenv.home / ".bashrc", "export EDITOR=vim\n")
    put(sysenv.home / "projects" / "app" / ".gitignore", "*.pyc\n")
    err = refused(sysenv, "plan", str(sysenv.home))
    assert err.startswith(f"Error: no sys.lua or init.lua in {sysenv.home}\n"), err
    assert "sys import" not in err


def test_a_symlink_repository_points_at_mirror_with_its_suffix(sysenv) -> None:
    fixture(sysenv, "symlink")
    err = refused(sysenv, "plan", str(sysenv.home / "dotfiles"))
    assert "it looks like a dotfiles repository of *.symlink files\n" in err, err
    assert HINT + "sys import mirror ~/dotfiles --suffix .symlink\n" in err


def test_a_repository_mirroring_the_home_points_at_mirror(sysenv) -> None:
    repo = sysenv.home / "dotfiles"
    put(repo / ".bashrc", "export EDITOR=vim\n")
    put(repo / ".config" / "nvim" / "init.lua", "vim.opt.number = true\n")
    put(repo / "README.md", "mine\n")
    err = refused(sysenv, "plan", str(repo))
    assert "it looks like a dotfiles repository mirroring ~\n" in err, err
    assert HINT + "sys import mirror ~/dotfiles\n" in err


def test_a_directory_of_nothing_known_keeps_its_error(sysenv) -> None:
    put(sysenv.work / "notes" / "todo.txt", "milk\n")
    err = refused(sysenv, "plan", "notes")
    assert err.startswith("Error: no sys.lua or init.lua in notes\n"), err
    assert "sys import" not in err


# -- without CONFIG ------------------------------------------------------------------
def test_no_config_in_a_stow_directory_points_at_sys_import(sysenv) -> None:
    repo = fixture(sysenv, "stow")
    err = refused(sysenv, "plan", cwd=repo)
    assert err.startswith("Error: no config file: "), err
    assert "This directory looks like a GNU stow directory. " + HINT in err
    assert "sys import stow ~/dotfiles\n" in err


# -- what stays as it was ------------------------------------------------------------
def test_a_directory_with_a_sys_lua_is_used_as_always(sysenv) -> None:
    repo = fixture(sysenv, "stow")
    (repo / "sys.lua").write_text(HEADER)
    ok(sysenv.run("plan", str(repo)))


def test_a_ccm_map_manifest_is_still_read_as_one(sysenv) -> None:
    sysenv.write("m.yaml", "ccm:\n  resources: []\n")
    ok(sysenv.run("plan", "m.yaml"))
    sysenv.write("bad.yaml", "- just\n- a list\n")  # not dotbot's: CCM's own error
    p = sysenv.run("plan", "bad.yaml")
    assert p.returncode != 0
    assert "a YAML manifest must be a map" in out(p)


def test_no_manifest_of_the_ccm_corpus_looks_foreign() -> None:
    manifests = [p for p in sorted(CCM.rglob("*")) if p.suffix in (".yaml", ".yml", ".json")]
    assert len(manifests) > 50
    assert [p.name for p in manifests if foreign_file(p) is not None] == []
    folders = [CCM, *(p for p in CCM.rglob("*") if p.is_dir())]
    assert [str(d) for d in folders if foreign_dir(d) is not None] == []


def test_the_syslua_examples_do_not_look_foreign() -> None:
    for example in (ROOT / "examples").iterdir():
        if example.is_dir():
            assert foreign_dir(example) is None or (example / "sys.lua").exists(), example
