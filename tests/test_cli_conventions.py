"""The habits of a command line (issue 12, "Conventions"): `--version`, shell
completion, `--no-color` on error lines, one "Did you mean", whom `--wait`
waits for, `status --exit-code`, and the current snapshot's config as the
last default CONFIG. (`sys init`'s report is in test_init.py.)

Completion is checked twice: the scripts as `--show-completion` prints them,
and each real shell (bash, zsh, fish, where installed) sourcing its script
and asking a `sys` on PATH for candidates.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import HEADER, ROOT, history, ok, out, tree
from ptyrun import run_in_pty
from test_lock import Holder

from syslua import __version__

SHELLS = ("bash", "zsh", "fish")


def _in_process(
    args: list[str], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """`sys *args` in this process with another environment than the world's (`$SHELL`...)."""
    from conftest import _in_process as run

    return run(args, env, cwd, timeout=60, input=None)


# -- --version --------------------------------------------------------------
def test_version_names_syslua_luajit_and_python(sysenv) -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert __version__ == project["version"] == version("syslua")  # the same everywhere
    for flag in ("--version", "-V"):
        p = sysenv.run(flag)
        ok(p)
        line = p.stdout.strip()
        assert re.fullmatch(
            rf"syslua {re.escape(__version__)} \(LuaJIT 2\.1\.\d+, Python \d+\.\d+\.\d+\)", line
        ), line
        assert f"Python {platform.python_version()})" in line
        assert p.stderr == ""


def test_version_of_the_real_entry_point(sysenv) -> None:
    p = sysenv.spawn("--version")
    ok(p)
    assert p.stdout.startswith(f"syslua {__version__} (LuaJIT 2.1.")


# -- usage errors -----------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "suggestion"),
    [(("aply",), "Did you mean 'apply'?"), (("snapshot", "shw"), "Did you mean 'show'?")],
)
def test_a_typo_suggests_the_command_once(sysenv, args, suggestion) -> None:
    p = sysenv.run(*args)
    assert p.returncode == 2
    assert p.stderr.count("Did you mean") == 1, p.stderr
    assert f"Error: No such command '{args[-1]}'. {suggestion}" in p.stderr


def _on_a_terminal(sysenv, *args: str) -> tuple[int, str]:
    """`sys *args` with stdout and stderr on a pseudo-terminal, colour allowed."""
    env = dict(sysenv.env, TERM="xterm-256color")
    env.pop("NO_COLOR")
    code, data, _ = run_in_pty([sys.executable, "-m", "syslua", *args], env=env, cwd=sysenv.work)
    return code, data.decode()


def test_no_color_reaches_error_lines(sysenv) -> None:
    code, coloured = _on_a_terminal(sysenv, "plan", "missing.lua")
    assert code == 2 and "Error: config file not found: missing.lua" in coloured
    assert "\x1b[" in coloured  # on a terminal, an error is red...
    code, plain = _on_a_terminal(sysenv, "plan", "missing.lua", "--no-color")
    assert code == 2, plain
    assert "Error: config file not found: missing.lua" in plain
    assert "\x1b[" not in plain  # ...but not with --no-color


# -- completion -------------------------------------------------------------
def test_show_completion_prints_a_script_for_each_shell(sysenv) -> None:
    expected = {
        "bash": "complete -o default -F _sys_completion sys",
        "zsh": "compdef _sys_completion sys",
        "fish": "complete --command sys",
    }
    for shell, marker in expected.items():
        p = sysenv.run("--show-completion", shell)
        ok(p)
        assert marker in p.stdout and "_SYS_COMPLETE=complete_" + shell in p.stdout, p.stdout
    # without a name, the shell of $SHELL
    p = _in_process(["--show-completion"], dict(sysenv.env, SHELL="/usr/bin/zsh"), sysenv.work)
    ok(p)
    assert "compdef _sys_completion sys" in p.stdout


def test_completion_for_an_unknown_shell_is_a_usage_error(sysenv) -> None:
    p = sysenv.run("--show-completion", "tcsh")
    assert p.returncode == 2 and "Error: unknown shell `tcsh` (use bash, zsh or fish)" in p.stderr
    env = dict(sysenv.env, SHELL="/bin/ksh")
    p = _in_process(["--install-completion"], env, sysenv.work)
    assert p.returncode == 2, out(p)
    assert "cannot tell your shell from $SHELL (/bin/ksh)" in p.stderr
    assert tree(sysenv.home) == {}


def _two_snapshots_one_tagged(sysenv) -> tuple[str, str]:
    sysenv.write("sys.lua", 'env { A = "1" }\n')
    ok(sysenv.run("apply"))
    sysenv.write("sys.lua", 'env { A = "2" }\n')
    ok(sysenv.run("apply"))
    new, old = (s["id"] for s in history(sysenv))
    ok(sysenv.run("snapshot", "tag", old, "good"))
    return old, new


def _complete(sysenv, line: str) -> list[str]:
    """What bash would be offered for `line` (the word being completed is its last)."""
    words = line.split(" ")
    env = dict(sysenv.env, COMP_WORDS=line, COMP_CWORD=str(len(words) - 1))
    env["_SYS_COMPLETE"] = "complete_bash"
    p = _in_process([], env, sysenv.work)
    assert p.returncode == 0, out(p)
    return p.stdout.split()


def test_snapshot_ids_complete_for_rollback_diff_and_snapshot(sysenv) -> None:
    old, new = _two_snapshots_one_tagged(sysenv)
    everything = [new, old, "good"]  # newest first, tags after their snapshot
    for line in (
        "sys rollback ",
        "sys diff ",
        f"sys diff {old} ",
        "sys snapshot show ",
        "sys snapshot tag ",
        "sys snapshot delete ",
    ):
        assert _complete(sysenv, line) == everything, line
    assert _complete(sysenv, f"sys rollback {old[:-2]}") == [old]
    assert _complete(sysenv, "sys rollback go") == ["good"]
    assert _complete(sysenv, "sys ro") == ["rollback"]
    # reading candidates writes nothing, even where the index is gone
    index = sysenv.root / "state" / "snapshots" / "index.json"
    index.unlink()
    before = tree(sysenv.root)
    assert _complete(sysenv, "sys rollback ") == []
    assert tree(sysenv.root) == before


def _sys_on_path(tmp: Path) -> Path:
    """A `sys` command running this checkout, as an installed one would."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "sys"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m syslua "$@"\n')
    exe.chmod(0o755)
    return bin_dir


# Each shell sources the script as `eval` would, then asks for the candidates
# after `sys rollback ` the way its completion system does.
ASK = {
    "bash": 'eval "$(sys --show-completion bash)"; COMP_WORDS=(sys rollback ""); COMP_CWORD=2; '
    '_sys_completion sys; printf "%s\\n" "${COMPREPLY[@]}"',
    "zsh": 'autoload -Uz compinit && compinit -u; eval "$(sys --show-completion zsh)"; '
    'print -r -- "${_comps[sys]}"; env _TYPER_COMPLETE_ARGS="sys rollback " '
    "_SYS_COMPLETE=complete_zsh sys",
    "fish": 'sys --show-completion fish | source; complete -C "sys rollback "',
}


@pytest.mark.parametrize("shell", SHELLS)
def test_a_real_shell_completes_snapshot_ids(sysenv, tmp_path, shell) -> None:
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed")
    old, new = _two_snapshots_one_tagged(sysenv)
    env = dict(sysenv.env, PATH=f"{_sys_on_path(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    env["ZDOTDIR"] = str(sysenv.home)
    p = subprocess.run(
        [exe, "-c", ASK[shell]],
        cwd=sysenv.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 0, out(p)
    assert new in p.stdout and old in p.stdout and "good" in p.stdout, out(p)
    if shell == "zsh":
        assert "_sys_completion" in p.stdout  # compdef registered the function
    if shell == "fish":
        assert f"{new}\tcurrent" in p.stdout  # with what each one is


def _install(sysenv, shell: str) -> subprocess.CompletedProcess[str]:
    """`sys --install-completion SHELL`, with the XDG dirs at their defaults under the home."""
    env = {k: v for k, v in sysenv.env.items() if k not in ("XDG_DATA_HOME", "XDG_CONFIG_HOME")}
    return _in_process(["--install-completion", shell], env, sysenv.work)


def test_install_completion_writes_the_script_and_one_rc_line(sysenv) -> None:
    bashrc = sysenv.home / ".bashrc"
    bashrc.write_text("alias ll='ls -l'")  # no newline at the end
    bashrc.chmod(0o600)
    p = _install(sysenv, "bash")
    ok(p)
    script = sysenv.home / ".local/share/bash-completion/completions/sys"
    line = f"[ -f '{script}' ] && . '{script}'"
    assert p.stdout.splitlines()[:2] == [
        "written: ~/.local/share/bash-completion/completions/sys",
        f"added to ~/.bashrc: {line}",
    ]
    assert "complete -o default -F _sys_completion sys" in script.read_text()
    assert bashrc.read_text() == (
        f"alias ll='ls -l'\n# shell completion for sys (sys --install-completion)\n{line}\n"
    )
    assert bashrc.stat().st_mode & 0o777 == 0o600  # its mode is kept
    again = _install(sysenv, "bash")
    ok(again)
    assert "left alone because it already loads the script: ~/.bashrc" in again.stdout
    assert bashrc.read_text().count(line) == 1


def test_install_completion_follows_a_linked_rc_file_and_knows_zsh_and_fish(sysenv) -> None:
    dotfiles = sysenv.work / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "zshrc").write_text("setopt autocd\n")
    (sysenv.home / ".zshrc").symlink_to(dotfiles / "zshrc")
    p = _install(sysenv, "zsh")
    ok(p)
    assert (sysenv.home / ".zshrc").is_symlink()  # the link stays; its target gets the line
    zfunc = sysenv.home / ".zfunc/_sys"
    assert f". '{zfunc}'" in (dotfiles / "zshrc").read_text()
    assert (dotfiles / "zshrc").read_text().startswith("setopt autocd\n")
    assert "compdef _sys_completion sys" in zfunc.read_text()
    fish = _install(sysenv, "fish")
    ok(fish)
    assert (
        "complete --command sys" in (sysenv.home / ".config/fish/completions/sys.fish").read_text()
    )
    assert "fish loads it by itself" in fish.stdout
    assert not (sysenv.home / ".config/fish/config.fish").exists()


def test_completion_options_do_not_slow_the_help(sysenv) -> None:
    """`sys --help` imports neither the completion module nor lupa (for --version), nor rich.
    (typer imports its own completion module whatever the app asks for.)"""
    code = (
        "import sys; sys.argv = ['sys', '--help']\n"
        "from syslua.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('syslua.cli.completion', 'syslua.cli.version', 'lupa', "
        "'rich.console') if m in sys.modules), file=sys.stderr)"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], env=sysenv.env, capture_output=True, text=True, timeout=60
    )
    assert "--show-completion" in p.stdout and "--version" in p.stdout
    assert p.stderr.strip().splitlines()[-1] == "[]", p.stderr


# -- the lock ----------------------------------------------------------------
def test_wait_says_whom_it_waits_for(sysenv) -> None:
    h = Holder(sysenv)
    try:
        record = json.loads((sysenv.root / "state" / "lock").read_text())
        assert record["pid"] == h.proc.pid and record["command"] == "sys apply"
        assert record["line"] == "sys apply hold.lua"
        started = time.strftime("%H:%M:%S", time.localtime(record["started"]))
        sysenv.write("sys.lua", HEADER + 'file { path = "~/other.txt", content = "other\\n" }\n')
        waiter = h.popen("apply", "--wait")
        assert waiter.stderr is not None
        seen = []  # the config is evaluated and planned before the lock is taken
        while not (line := waiter.stderr.readline()).startswith("Waiting") and line:
            seen.append(line)
        assert seen == ["Evaluating sys.lua...\n", "Building execution plan...\n"]
        assert line == (
            f"Waiting for the lock held by pid {h.proc.pid} (sys apply, started {started})...\n"
        )
        assert waiter.poll() is None  # still waiting
        first = h.release()
        assert first.returncode == 0, out(first)
        o, e = waiter.communicate(timeout=60)
        assert waiter.returncode == 0, o + e
        assert (sysenv.home / "other.txt").read_text() == "other\n"
    finally:
        h.stop()


def test_lock_held_names_the_whole_command_and_its_start(sysenv) -> None:
    h = Holder(sysenv)
    try:
        sysenv.write("sys.lua", HEADER)
        p = sysenv.spawn("gc")
        assert p.returncode == 3
        assert re.search(
            rf"holds the state lock: pid {h.proc.pid} \(sys apply hold\.lua, started \d\d:\d\d:\d\d\)",
            p.stderr,
        ), p.stderr
    finally:
        h.stop()


def test_the_lock_of_a_subcommand_names_it(sysenv) -> None:
    """`sys snapshot tag` holds the lock as `sys snapshot tag`; a stale record is replaced."""
    _, new = _two_snapshots_one_tagged(sysenv)
    lock = sysenv.root / "state" / "lock"
    ok(sysenv.run("snapshot", "tag", new, "newest"))
    assert lock.read_text() == ""  # released
    from syslua.state.lock import StateLock

    held = StateLock(lock).acquire(command="sys snapshot tag", started=0.0)
    try:
        info = StateLock(lock).holder_info()
        assert info is not None and info.command == "sys snapshot tag"
        assert info.describe() == (
            f"pid {os.getpid()} (sys snapshot tag, started {time.strftime('%H:%M:%S', time.localtime(0))})"
        )
    finally:
        held.release()


# -- status --exit-code --------------------------------------------------------
def test_status_exit_code_is_4_when_something_drifted(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
    ok(sysenv.run("apply"))
    clean = sysenv.run("status", "--exit-code")
    assert clean.returncode == 0 and "No drift" in clean.stdout, out(clean)
    (sysenv.home / "a.txt").write_text("edited\n")
    assert sysenv.run("status").returncode == 0  # without the flag, drift is not a failure
    p = sysenv.run("status", "--exit-code")
    assert p.returncode == 4, out(p)
    assert "M! file ~/a.txt" in p.stdout.splitlines(), out(p)
    j = sysenv.run("status", "--exit-code", "--json")
    assert j.returncode == 4 and json.loads(j.stdout)["drift"][0]["kind"] == "edited"
    plan = sysenv.run("plan", "--exit-code")
    # an edit the apply would overwrite: the plan exits 1, as for any `!` (issue 23)
    assert plan.returncode == 1, out(plan)


# -- CONFIG defaults to the current snapshot's config -------------------------
def test_plan_without_config_uses_the_current_snapshots_config(sysenv) -> None:
    elsewhere = sysenv.work / "elsewhere"
    config = sysenv.write(
        "elsewhere/machine.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n'
    )
    ok(sysenv.run("apply", str(config)))
    away = sysenv.home  # no ./sys.lua here, no ~/.config/syslua/sys.lua
    p = sysenv.run("plan", cwd=away)
    ok(p)
    assert f"Using {config}, the config of the current snapshot." in p.stderr
    assert "No changes" in p.stdout
    # read again from disk: an edit since the apply shows in the plan
    config.write_text(HEADER + 'file { path = "~/a.txt", content = "b\\n" }\n')
    p = sysenv.run("plan", "--exit-code", cwd=away)
    assert p.returncode == 4 and "~ file ~/a.txt" in p.stdout, out(p)
    # ./sys.lua and ~/.config/syslua/sys.lua come first
    (sysenv.home / ".config" / "syslua").mkdir(parents=True)
    (sysenv.home / ".config" / "syslua" / "sys.lua").write_text(HEADER)
    p = sysenv.run("plan", cwd=away)
    assert "the config of the current snapshot" not in p.stderr
    assert "- file ~/a.txt" in p.stdout, out(p)
    (sysenv.home / ".config" / "syslua" / "sys.lua").unlink()
    # gone from disk: not used, and the error says so
    config.unlink()
    before = tree(sysenv.root)
    p = sysenv.run("plan", cwd=away)
    assert p.returncode == 2
    assert f"the current snapshot's config {config} no longer exists" in p.stderr, p.stderr
    assert tree(sysenv.root) == before
    assert elsewhere.is_dir()
