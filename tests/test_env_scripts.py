"""The generated env scripts: `<state>/env.sh` (sh, bash, zsh) and `<state>/env.fish`.

Values are checked by sourcing the real scripts in the real shells (zsh and
fish are skipped when not installed) and reading the exported variable back
with `printenv`, so quoting bugs show up as wrong values or as side effects.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ok
from conftest import out as out_of

BASE_PATH = "/usr/bin:/bin"


def lua_str(s: str) -> str:
    """A Lua string literal for any text."""
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def env_sh(sysenv) -> Path:
    return sysenv.root / "state" / "env.sh"


def env_fish(sysenv) -> Path:
    return sysenv.root / "state" / "env.fish"


def source_and_run(sysenv, shell: str, cmd: str, extra_env: dict[str, str] | None = None):
    if shell == "fish":
        argv = ["fish", "--no-config", "-c", f"source '{env_fish(sysenv)}'; and {cmd}"]
    elif shell == "sh":
        argv = ["/bin/sh", "-c", f". '{env_sh(sysenv)}' && {cmd}"]
    elif shell == "bash":
        argv = ["bash", "--noprofile", "--norc", "-c", f". '{env_sh(sysenv)}' && {cmd}"]
    else:
        argv = ["zsh", "-f", "-c", f". '{env_sh(sysenv)}' && {cmd}"]
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{shell} is not installed")
    env = dict(sysenv.env, PATH=BASE_PATH)
    for k in ("MANPATH", "XDG_DATA_DIRS", "MY_TOOLPATH"):
        env.pop(k, None)
    env.update(extra_env or {})
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=sysenv.work, timeout=30
    )


def printenv(sysenv, shell: str, name: str, extra_env: dict[str, str] | None = None) -> str | None:
    res = source_and_run(sysenv, shell, f"/usr/bin/env printenv {name}", extra_env)
    if res.returncode == 1 and res.stdout == "":
        return None
    assert res.returncode == 0, out_of(res)
    assert res.stdout.endswith("\n")
    return res.stdout[:-1]


def path_entries(sysenv, shell: str) -> list[str]:
    """PATH as the env script sets it, split at its colons."""
    value = printenv(sysenv, shell, "PATH")
    assert value is not None, f"{shell}: PATH is not set"
    return value.split(":")


SHELLS = ["sh", "bash", "zsh", "fish"]

NASTY = {
    "SPACES": "two  words and   more",
    "SQUOTE": "it's 'quoted'",
    "DQUOTE": 'say "hi"',
    "DOLLAR": "$HOME ${HOME} $(echo no) $1",
    "BACKSLASH": "C:\\path\\to\\ end\\",
    "BACKTICK": "`touch INJECTED-backtick`",
    "SUBST": "$(touch INJECTED-subst)",
    "NEWLINE": "line one\nline two",
    "MIXED": "a'b\"c\\d$e`f\ng\\'h",
    "SEMI": "x; touch INJECTED-semi",
    "UNICODE": "héllo ✓",
    "GLOB": "*",
    "FISHY": "(echo no) {a,b} ~ %self",
}


PATH_CONFIG = """
env { PATH = lib.mkAfter("/opt/bin") }
env { PATH = "~/bin" }
env { PATH = lib.mkBefore("/custom/bin") }
env { MANPATH = "/custom/man" }
env { MY_TOOLPATH = { "/t/one", "/t/two" } }
"""


@pytest.fixture
def nasty_env(sysenv):
    """One apply declaring every awkward value and the path-like variables."""
    body = "\n".join(f"env {{ {k} = {lua_str(v)} }}" for k, v in NASTY.items())
    sysenv.write("sys.lua", body + "\n" + PATH_CONFIG)
    ok(sysenv.run("apply"))
    return sysenv


@pytest.mark.parametrize("shell", SHELLS)
def test_values_survive_quoting(nasty_env, shell):
    sysenv = nasty_env
    names = " ".join(NASTY)
    # one shell run prints every value, NUL-separated, through an external command
    script = (
        "/usr/bin/env python3 -c "
        + '\'import os,sys; sys.stdout.write("\\0".join(os.environ.get(n,"<unset>") for n in sys.argv[1:]))\' '
        + names
    )
    res = source_and_run(sysenv, shell, script)
    assert res.returncode == 0, out_of(res)
    got = dict(zip(NASTY, res.stdout.split("\0")))
    for k, v in NASTY.items():
        assert got[k] == v, f"{shell}: {k}: {got[k]!r} != {v!r}"
    assert not list(sysenv.work.glob("INJECTED*")), "a value was executed"
    assert res.stderr == ""


def test_sh_script_is_posix(nasty_env):
    """The POSIX script parses with sh -n; neither script calls `sys`; paths are absolute."""
    res = subprocess.run(["/bin/sh", "-n", str(env_sh(nasty_env))], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    for script in (env_sh(nasty_env), env_fish(nasty_env)):
        text = script.read_text()
        code = [ln for ln in text.splitlines() if not ln.startswith("#")]
        assert not [ln for ln in code if ln.startswith("sys ") or " sys " in ln]  # never calls sys
        assert str(nasty_env.root / "state" / "profile" / "bin") in text  # absolute paths


@pytest.mark.parametrize("shell", SHELLS)
def test_path_like_order_and_previous_value(nasty_env, shell):
    sysenv = nasty_env
    profile_bin = str(sysenv.root / "state" / "profile" / "bin")
    want = [profile_bin, "/custom/bin", f"{sysenv.home}/bin", "/opt/bin", *BASE_PATH.split(":")]
    assert path_entries(sysenv, shell) == want
    # no previous value: no stray colon
    assert printenv(sysenv, shell, "MANPATH") == "/custom/man"
    assert printenv(sysenv, shell, "MY_TOOLPATH") == "/t/one:/t/two"
    # a previous value is kept at the end
    assert (
        printenv(sysenv, shell, "MANPATH", {"MANPATH": "/usr/share/man"})
        == "/custom/man:/usr/share/man"
    )


def test_path_order_does_not_depend_on_declaration_order(sysenv):
    sysenv.write("sys.lua", PATH_CONFIG)
    ok(sysenv.run("apply"))
    first = env_sh(sysenv).read_bytes(), env_fish(sysenv).read_bytes()
    lines = [ln for ln in PATH_CONFIG.strip().splitlines()]
    sysenv.write("sys.lua", "\n".join(reversed(lines)) + "\n")
    res = sysenv.run("apply")
    ok(res)
    assert (env_sh(sysenv).read_bytes(), env_fish(sysenv).read_bytes()) == first


def test_profile_bin_first_even_when_declared(sysenv):
    profile_bin = str(sysenv.root / "state" / "profile" / "bin")
    sysenv.write(
        "sys.lua",
        f'env {{ PATH = lib.mkForce("/forced/bin") }}\nenv {{ PATH = "{profile_bin}" }}\n',
    )
    ok(sysenv.run("apply"))
    parts = path_entries(sysenv, "sh")
    assert parts[0] == profile_bin
    assert parts.count(profile_bin) == 1
    assert parts[1] == "/forced/bin"


def test_scripts_exist_after_empty_apply(sysenv):
    sysenv.write("sys.lua", "-- nothing declared\n")
    res = sysenv.run("apply")
    ok(res)
    assert env_sh(sysenv).is_file() and env_fish(sysenv).is_file()
    profile_bin = str(sysenv.root / "state" / "profile" / "bin")
    for shell in [s for s in SHELLS if shutil.which(s)]:
        assert path_entries(sysenv, shell) == [profile_bin, *BASE_PATH.split(":")], shell


def sh_line_of(sysenv) -> str:
    """The line `sys env` prints for bash, zsh and sh (the state is outside the home here)."""
    return f"[ -f '{env_sh(sysenv)}' ] && . '{env_sh(sysenv)}'"


def fish_line_of(sysenv) -> str:
    return f"test -f '{env_fish(sysenv)}'; and source '{env_fish(sysenv)}'"


def test_sys_env_prints_the_source_line(sysenv):
    sh_line, fish_line = sh_line_of(sysenv), fish_line_of(sysenv)
    for shell, line in (("bash", sh_line), ("zsh", sh_line), ("fish", fish_line)):
        res = sysenv.run("env", "--shell", shell)
        ok(res)
        assert res.stdout.strip() == line
    bad = sysenv.run("env", "--shell", "tcsh")
    assert bad.returncode == 2
    assert "unknown shell" in out_of(bad) and "Traceback" not in out_of(bad)


def test_sys_env_line_works_when_sourced(sysenv):
    sysenv.write("sys.lua", 'env { GREETING = "hello" }\n')
    ok(sysenv.run("apply"))
    line = sysenv.run("env", "--shell", "bash").stdout.strip()
    res = subprocess.run(
        ["bash", "--norc", "-c", f'{line}; printf %s "$GREETING"'],
        capture_output=True,
        text=True,
        env=dict(sysenv.env, PATH=BASE_PATH),
    )
    assert res.stdout == "hello"
    if shutil.which("fish"):
        fline = sysenv.run("env", "--shell", "fish").stdout.strip()
        res = subprocess.run(
            ["fish", "--no-config", "-c", f'{fline}; printf %s "$GREETING"'],
            capture_output=True,
            text=True,
            env=dict(sysenv.env, PATH=BASE_PATH),
        )
        assert res.stdout == "hello"


def advice(shell: str, rc: str, line: str) -> str:
    """What an apply prints while the rc file of `$SHELL` does not load the env script."""
    return (
        f"Add this line to {rc} for your environment and tools, or run `sys env --append`:\n"
        f"  {line}\n"
    )


@pytest.mark.parametrize(
    "shell,rc", [("/bin/bash", ".bashrc"), ("/usr/bin/zsh", ".zshrc"), ("/bin/sh", ".profile")]
)
def test_apply_prints_the_rc_line_of_shell_until_its_rc_file_has_it(sysenv, monkeypatch, shell, rc):
    monkeypatch.setenv("SHELL", shell)
    line = sh_line_of(sysenv)
    said = advice(shell, f"~/{rc}", line)
    sysenv.write("sys.lua", 'env { A = "1" }\n')
    first = sysenv.run("apply")
    ok(first)
    assert first.stdout.endswith(said), first.stdout
    assert "source " not in first.stdout
    # Still missing from the rc file: said again, after every apply that succeeds.
    sysenv.write("sys.lua", 'env { A = "2" }\n')
    second = sysenv.run("apply")
    ok(second)
    assert said in second.stdout
    # A commented-out line does not load it.
    (sysenv.home / rc).write_text(f"export X=1\n# {line}\n")
    assert said in sysenv.run("apply").stdout
    # Once the rc file has it, nothing more is said.
    with open(sysenv.home / rc, "a") as f:
        f.write(f"{line}\n")
    third = sysenv.run("apply")
    ok(third)
    assert "Add this line" not in third.stdout and line not in third.stdout, third.stdout
    # ... nor after a failed apply, whatever the rc file holds.
    (sysenv.home / rc).unlink()
    sysenv.write("sys.lua", 'env { A = "3" }\nexec { name = "boom", command = "false" }\n')
    failed = sysenv.run("apply")
    assert failed.returncode == 1 and "Add this line" not in failed.stdout, out_of(failed)


def test_fish_gets_its_own_line_in_config_fish(sysenv, monkeypatch):
    monkeypatch.setenv("SHELL", "/usr/bin/fish")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    line = fish_line_of(sysenv)
    sysenv.write("sys.lua", 'env { A = "1" }\n')
    first = sysenv.run("apply")
    ok(first)
    assert first.stdout.endswith(advice("fish", "~/.config/fish/config.fish", line))
    assert "env.sh" not in first.stdout
    # A line in conf.d/, which fish reads too, is as good as one in config.fish.
    confd = sysenv.home / ".config" / "fish" / "conf.d"
    confd.mkdir(parents=True)
    (confd / "syslua.fish").write_text(line + "\n")
    assert "Add this line" not in sysenv.run("apply").stdout
    if shutil.which("fish"):
        # Following the advice works: a fish that reads its config has the variable.
        r = subprocess.run(
            ["fish", "-c", "printenv A"], env=sysenv.env, capture_output=True, text=True
        )
        assert r.stdout == "1\n", r


def test_the_rc_file_may_name_the_script_from_home(sysenv, monkeypatch):
    """`~/...`, `$HOME/...` and `${HOME}/...` name the same script as the absolute path."""
    monkeypatch.setenv("SHELL", "/bin/zsh")
    monkeypatch.setenv("SYSLUA_ROOT", str(sysenv.home / ".syslua"))
    sysenv.root = sysenv.home / ".syslua"
    sysenv.write("sys.lua", 'env { A = "1" }\n')
    ok(sysenv.run("apply"))
    for form in ('. "$HOME/.syslua/state/env.sh"', "source ${HOME}/.syslua/state/env.sh"):
        (sysenv.home / ".zshrc").write_text(f"{form}\n")
        assert "Add this line" not in sysenv.run("apply").stdout, form
    # $ZDOTDIR moves zsh's rc file.
    monkeypatch.setenv("ZDOTDIR", str(sysenv.home / "zsh"))
    said = sysenv.run("apply").stdout
    assert "Add this line to ~/zsh/.zshrc for your environment and tools" in said, said
    assert '  [ -f "$HOME/.syslua/state/env.sh" ] && . "$HOME/.syslua/state/env.sh"\n' in said


def test_the_advised_line_loads_the_environment_in_bash(sysenv, monkeypatch):
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    monkeypatch.setenv("SHELL", "/bin/bash")
    sysenv.write("sys.lua", 'env { A = "from syslua" }\n')
    p = sysenv.run("apply")
    ok(p)
    lines = p.stdout.splitlines()
    said = "Add this line to ~/.bashrc for your environment and tools, or run `sys env --append`:"
    advised = lines[lines.index(said) + 1]
    (sysenv.home / ".bashrc").write_text(advised.strip() + "\n")
    r = subprocess.run(
        ["bash", "-i", "-c", "printenv A"],
        env=sysenv.env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert r.stdout == "from syslua\n", r


def test_scripts_return_with_rollback_and_failed_apply(sysenv):
    sysenv.write("sys.lua", 'env { FOO = "one" }\nenv { PATH = "/first/bin" }\n')
    ok(sysenv.run("apply"))
    sh1, fish1 = env_sh(sysenv).read_bytes(), env_fish(sysenv).read_bytes()
    history = json.loads(sysenv.run("history", "--json").stdout)
    first_id = history[0]["id"]

    sysenv.write("sys.lua", 'env { FOO = "two" }\nenv { BAR = "new" }\n')
    ok(sysenv.run("apply"))
    assert printenv(sysenv, "sh", "FOO") == "two"
    assert printenv(sysenv, "sh", "BAR") == "new"
    sh2, fish2 = env_sh(sysenv).read_bytes(), env_fish(sysenv).read_bytes()

    # a failed apply leaves the scripts as they were
    sysenv.write("sys.lua", 'env { FOO = "three" }\nexec { name = "boom", command = "false" }\n')
    failed = sysenv.run("apply")
    assert failed.returncode == 1, out_of(failed)
    assert (env_sh(sysenv).read_bytes(), env_fish(sysenv).read_bytes()) == (sh2, fish2)

    ok(sysenv.run("rollback", first_id))
    assert (env_sh(sysenv).read_bytes(), env_fish(sysenv).read_bytes()) == (sh1, fish1)
    assert printenv(sysenv, "sh", "FOO") == "one"
    assert printenv(sysenv, "sh", "BAR") is None
    assert "/first/bin" in path_entries(sysenv, "sh")
    if shutil.which("fish"):
        assert printenv(sysenv, "fish", "FOO") == "one"
        assert printenv(sysenv, "fish", "BAR") is None


def test_env_conflict_names_both_declarations(sysenv):
    sysenv.write("sys.lua", 'env { EDITOR = "vim" }\nenv { EDITOR = "emacs" }\n')
    res = sysenv.run("apply")
    assert res.returncode == 2, out_of(res)
    text = out_of(res)
    assert "sys.lua:1" in text and "sys.lua:2" in text
    assert not env_sh(sysenv).exists()


def test_invalid_env_name(sysenv):
    sysenv.write("sys.lua", 'env { ["BAD-NAME"] = "x" }\n')
    res = sysenv.run("plan")
    assert res.returncode == 2, out_of(res)
    assert "BAD-NAME" in out_of(res) and "Traceback" not in out_of(res)
