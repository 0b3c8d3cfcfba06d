"""The line that loads syslua's env script from a shell's rc file (issue 21, point 7).

- It names the script from `$HOME` when the state is under the home, so the
  same line works on every machine and may be committed with the rc file;
  a `SYSLUA_ROOT` outside the home is named as it is (the user chose it).
- It works in the real shells (zsh and fish are skipped when not
  installed): the variables, and the aliases of the original sys.lua's
  library, come with the one line; on a machine without syslua it is quiet.
- Only a config that declares something the shell needs (variables,
  packages, aliases) is told to add it; `sys doctor` on a config of dotfiles
  only passes, its env line and PATH checks `not needed`.
- When the config manages the rc file from a source (a copy, a link, a
  member of a tree), the advice names that source and `sys env --append`
  writes it there, directly, once; the home's file or link is not touched.
- Once the rc file or its source has the line, nothing more is said.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import HEADER, _in_process, new_env, ok, out, put, tree
from test_doctor import doctor, line_of

BASE_PATH = "/usr/bin:/bin"
SH_LINE = '[ -f "$HOME/.syslua/state/env.sh" ] && . "$HOME/.syslua/state/env.sh"'
FISH_LINE = 'test -f "$HOME/.syslua/state/env.fish"; and source "$HOME/.syslua/state/env.fish"'
APPENDED = "# Loads syslua's environment, tools and aliases (sys env --append).\n"
NOT_NEEDED = "not needed (the config declares no variables, packages or aliases)"
SHELL_NEEDS = """
env { GREETING = "hello" }
require("syslua.environment.aliases").setup { hi = "echo hi from an alias" }
"""


def advice(where: str, line: str, append: bool = True) -> str:
    more = ", or run `sys env --append`" if append else ""
    return f"Add this line to {where} for your environment and tools{more}:\n  {line}\n"


@pytest.fixture
def at_home(sysenv, monkeypatch):
    """The state under the home (`SYSLUA_ROOT=~/.syslua`), as it is by default."""
    sysenv.root = sysenv.home / ".syslua"
    monkeypatch.setenv("SYSLUA_ROOT", str(sysenv.root))
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("ZDOTDIR", raising=False)
    return sysenv


def shell_run(sysenv, shell: str, script: str, home: Path | None = None):
    """`script` in an interactive `shell` that reads its rc file from the home."""
    argv = {
        "bash": ["bash", "-i", "-c", script],
        "zsh": ["zsh", "-i", "-c", script],
        "fish": ["fish", "-c", script],
    }[shell]
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{shell} is not installed")
    env = dict(sysenv.env, PATH=BASE_PATH, HOME=str(home or sysenv.home))
    for name in ("XDG_CONFIG_HOME", "ZDOTDIR", "GREETING"):
        env.pop(name, None)
    return subprocess.run(
        argv,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=sysenv.work,
        timeout=60,
    )


# -- only when the config needs it -----------------------------------------------------


def test_a_dotfiles_only_config_is_told_nothing_and_doctor_passes(at_home) -> None:
    sysenv = at_home
    put(sysenv.work / "dotfiles" / "bashrc", "export MINE=1\n")
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/.bashrc", source = "dotfiles/bashrc", link = true }\n'
        + 'file { path = "~/.gitconfig", content = "[user]\\n" }\n',
    )
    # Before the first apply, doctor asks the config it finds.
    for when in ("before", "after"):
        if when == "after":
            p = sysenv.run("apply")
            ok(p)
            assert "Add this line" not in p.stdout and "sys env" not in p.stdout, p.stdout
        d = doctor(sysenv, path_bin=False)
        assert d.returncode == 0, out(d)
        assert line_of(d, "env line") == f"✓ env line: {NOT_NEEDED}", when
        assert line_of(d, "PATH") == f"✓ PATH: {NOT_NEEDED}", when
    # A variable is something the shell needs: the advice comes, doctor checks.
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/.bashrc", source = "dotfiles/bashrc", link = true }\n'
        + 'env { EDITOR = "vi" }\n',
    )
    p = sysenv.run("apply")
    ok(p)
    assert p.stdout.endswith(advice("dotfiles/bashrc (the source of ~/.bashrc)", SH_LINE))
    d = doctor(sysenv, path_bin=False)
    assert d.returncode == 1 and line_of(d, "env line").startswith("✗ env line: "), out(d)
    assert line_of(d, "PATH").startswith("✗ PATH: "), out(d)
    # A rollback to the dotfiles-only snapshot: nothing to say again, doctor passes.
    back = sysenv.run("rollback")
    ok(back)
    assert "Add this line" not in back.stdout, back.stdout
    assert doctor(sysenv, path_bin=False).returncode == 0


@pytest.mark.parametrize(
    "declared",
    [
        'require("syslua.environment.aliases").setup { ll = "ls -l" }\n',
        'env { EDITOR = "vi" }\n',
    ],
    ids=["aliases", "env"],
)
def test_aliases_or_variables_alone_need_the_line(at_home, declared) -> None:
    at_home.write("sys.lua", declared)
    p = at_home.run("apply")
    ok(p)
    assert p.stdout.endswith(advice("~/.bashrc", SH_LINE)), p.stdout


# -- a line for every machine ------------------------------------------------------------


def test_the_line_names_the_state_from_home(at_home, tmp_path) -> None:
    sysenv = at_home
    sysenv.write("sys.lua", SHELL_NEEDS)
    p = sysenv.run("apply")
    ok(p)
    assert p.stdout.endswith(advice("~/.bashrc", SH_LINE)), p.stdout
    assert str(sysenv.home) not in p.stdout.splitlines()[-1]
    assert sysenv.run("env", "--shell", "bash").stdout == SH_LINE + "\n"
    assert sysenv.run("env", "--shell", "zsh").stdout == SH_LINE + "\n"
    assert sysenv.run("env", "--shell", "fish").stdout == FISH_LINE + "\n"
    # Another machine (another home) of the same user prints the same line.
    other = new_env(tmp_path / "other")
    env = dict(other.env, SYSLUA_ROOT=str(other.home / ".syslua"))
    again = _in_process(["env", "--shell", "bash"], env, other.work, timeout=60, input=None)
    assert again.stdout == SH_LINE + "\n", out(again)


def test_the_default_state_dir_is_named_from_home(sysenv) -> None:
    """Without SYSLUA_ROOT the state is platformdirs' (~/.local/state/syslua on Linux)."""
    env = dict(sysenv.env)
    for name in ("SYSLUA_ROOT", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env.pop(name, None)
    p = _in_process(["env", "--shell", "bash"], env, sysenv.work, timeout=60, input=None)
    ok(p)
    state = '"$HOME/.local/state/syslua/env.sh"'
    assert p.stdout == f"[ -f {state} ] && . {state}\n"
    assert tree(sysenv.home) == {}  # printing the line writes nothing


def test_a_syslua_root_outside_the_home_is_named_as_it_is(sysenv) -> None:
    script = sysenv.root / "state" / "env.sh"
    assert sysenv.run("env", "--shell", "bash").stdout == f"[ -f '{script}' ] && . '{script}'\n"
    fish = sysenv.root / "state" / "env.fish"
    assert sysenv.run("env", "--shell", "fish").stdout == (
        f"test -f '{fish}'; and source '{fish}'\n"
    )


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_line_brings_variables_and_aliases_into_a_real_shell(at_home, shell) -> None:
    sysenv = at_home
    sysenv.write("sys.lua", SHELL_NEEDS)
    ok(sysenv.run("apply"))
    ok(sysenv.run("env", "--shell", shell, "--append"))
    script = 'printf "%s\\n" "$GREETING"; hi'
    r = shell_run(sysenv, shell, script)
    assert r.stdout == "hello\nhi from an alias\n", r
    if shell == "bash":  # a script, not a terminal: aliases once expand_aliases is set
        r = subprocess.run(
            ["bash", "--norc", "-c", f"shopt -s expand_aliases\n. ~/.bashrc\n{script}"],
            env=dict(sysenv.env, PATH=BASE_PATH),
            capture_output=True,
            text=True,
        )
        assert r.stdout == "hello\nhi from an alias\n", r
    # The same rc file on a machine syslua has not set up: the shell starts quietly.
    bare = sysenv.work / "bare-home"
    rc = {"bash": ".bashrc", "zsh": ".zshrc", "fish": ".config/fish/config.fish"}[shell]
    put(bare / rc, (sysenv.home / rc).read_text())
    r = shell_run(sysenv, shell, "echo started", home=bare)
    assert r.stdout == "started\n", r
    assert "env." not in r.stderr, r.stderr


# -- a managed rc file -------------------------------------------------------------------


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_a_managed_rc_gets_the_line_in_its_source(at_home, link) -> None:
    sysenv = at_home
    source = put(sysenv.work / "dotfiles" / "bashrc", "export MINE=1\n")
    how = ", link = true" if link else ""
    sysenv.write(
        "sys.lua",
        HEADER + f'file {{ path = "~/.bashrc", source = "dotfiles/bashrc"{how} }}\n' + SHELL_NEEDS,
    )
    p = sysenv.run("apply")
    ok(p)
    where = "dotfiles/bashrc (the source of ~/.bashrc)"
    assert p.stdout.endswith(advice(where, SH_LINE)), p.stdout
    d = doctor(sysenv)
    assert line_of(d, "env line") == "✗ env line: ~/.bashrc does not load syslua's env script"
    assert f"run `sys env --append`, or add this line to {where}: {SH_LINE}" in d.stdout
    printed = sysenv.run("env")
    assert printed.stdout == SH_LINE + "\n"
    assert "Note: your config makes ~/.bashrc from dotfiles/bashrc" in printed.stderr
    home = tree(sysenv.home)

    added = sysenv.run("env", "--append")
    ok(added)
    said = [f"Added to {where}: {SH_LINE}"]
    if not link:
        said.append("The next `sys apply` copies it to ~/.bashrc.")
    assert added.stdout.splitlines() == said
    assert source.read_text() == f"export MINE=1\n{APPENDED}{SH_LINE}\n"
    assert tree(sysenv.home) == home  # not written in the home, nor through its link
    assert (sysenv.home / ".bashrc").is_symlink() == link

    again = sysenv.run("env", "--append")
    ok(again)
    assert again.stdout == f"Nothing added: {where} already loads syslua's env script.\n"
    assert source.read_text().count(SH_LINE) == 1
    # No more advice, before the copy is updated and after.
    p = sysenv.run("apply")
    ok(p)
    assert "Add this line" not in p.stdout, p.stdout
    assert (sysenv.home / ".bashrc").read_text() == source.read_text()
    assert "Add this line" not in sysenv.run("apply").stdout
    assert (
        line_of(doctor(sysenv), "env line") == "✓ env line: ~/.bashrc loads ~/.syslua/state/env.sh"
    )
    r = shell_run(sysenv, "bash", 'printf "%s %s\\n" "$MINE" "$GREETING"; hi')
    assert r.stdout == "1 hello\nhi from an alias\n", r


def test_a_member_of_a_managed_tree_gets_the_line_in_its_source(at_home, monkeypatch) -> None:
    sysenv = at_home
    monkeypatch.setenv("SHELL", "/usr/bin/fish")
    source = put(sysenv.work / "dotfiles" / "fish" / "config.fish", "set -gx MINE 1\n")
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/.config/fish", source = "dotfiles/fish", link = true }\n'
        + SHELL_NEEDS,
    )
    p = sysenv.run("apply")
    ok(p)
    where = "dotfiles/fish/config.fish (the source of ~/.config/fish/config.fish)"
    assert p.stdout.endswith(advice(where, FISH_LINE)), p.stdout
    home = tree(sysenv.home)
    ok(sysenv.run("env", "--append"))
    assert source.read_text() == f"set -gx MINE 1\n{APPENDED}{FISH_LINE}\n"
    assert tree(sysenv.home) == home
    assert "Add this line" not in sysenv.run("apply").stdout
    r = shell_run(sysenv, "fish", 'printf "%s %s\\n" "$MINE" "$GREETING"; hi')
    assert r.stdout == "1 hello\nhi from an alias\n", r


def test_an_rc_declared_inline_is_left_to_the_config(at_home) -> None:
    sysenv = at_home
    sysenv.write(
        "sys.lua",
        HEADER + 'file { path = "~/.bashrc", content = "export MINE=1\\n" }\n' + SHELL_NEEDS,
    )
    p = sysenv.run("apply")
    ok(p)
    where = "the content of ~/.bashrc (sys.lua:3)"
    assert p.stdout.endswith(advice(where, SH_LINE, append=False)), p.stdout
    before = tree(sysenv.home), tree(sysenv.work)
    refused = sysenv.run("env", "--append")
    assert refused.returncode == 2, out(refused)
    assert (
        "your config declares the content of ~/.bashrc: add this line to it there: " + SH_LINE
    ) in out(refused)
    assert (tree(sysenv.home), tree(sysenv.work)) == before
    # The line in the declared content: nothing more is said.
    content = "export MINE=1\\n" + SH_LINE.replace('"', '\\"') + "\\n"
    sysenv.write(
        "sys.lua", HEADER + f'file {{ path = "~/.bashrc", content = "{content}" }}\n' + SHELL_NEEDS
    )
    p = sysenv.run("apply")
    ok(p)
    assert "Add this line" not in p.stdout, p.stdout


# -- an rc file of one's own -------------------------------------------------------------


def test_append_adds_the_line_to_an_rc_file_once_keeping_it(at_home) -> None:
    sysenv = at_home
    bashrc = put(sysenv.home / ".bashrc", "alias ll='ls -l'", 0o600)  # no newline at the end
    added = sysenv.run("env", "--append")
    ok(added)
    assert added.stdout == f"Added to ~/.bashrc: {SH_LINE}\n"
    assert bashrc.read_text() == f"alias ll='ls -l'\n{APPENDED}{SH_LINE}\n"
    assert stat.S_IMODE(bashrc.stat().st_mode) == 0o600
    again = sysenv.run("env", "--append")
    assert again.stdout == "Nothing added: ~/.bashrc already loads syslua's env script.\n"
    assert bashrc.read_text().count(SH_LINE) == 1
    # A missing rc file is created.
    zshrc = sysenv.home / ".zshrc"
    ok(sysenv.run("env", "--append", "--shell", "zsh"))
    assert zshrc.read_text() == f"{APPENDED}{SH_LINE}\n"


def test_append_writes_the_file_an_unmanaged_link_names(at_home) -> None:
    """An rc file linked by another tool (stow): its target is written, the link stays."""
    sysenv = at_home
    real = put(sysenv.home / "dots" / "bashrc", "export MINE=1\n")
    (sysenv.home / ".bashrc").symlink_to(os.path.join("dots", "bashrc"))
    ok(sysenv.run("env", "--append"))
    assert (sysenv.home / ".bashrc").is_symlink()
    assert os.readlink(sysenv.home / ".bashrc") == os.path.join("dots", "bashrc")
    assert real.read_text() == f"export MINE=1\n{APPENDED}{SH_LINE}\n"
