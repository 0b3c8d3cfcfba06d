"""Reading `sys.secret` values from their sources (syslua/eval/secret_sources.py).

`pass` is the real one, on a real gpg key made for the test process
(tests/secret_store.py); a manager `command` is a small shell script the
test writes. Every failure is checked for its message and for the value
not being in it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ptyrun import run_in_pty
from secret_store import need_tools, open_store

from syslua.eval.secret_sources import SecretSourceError, describe, program, read, validate

SECRET = "hunter2-s3cret-Value"


def fails(spec: dict[str, Any], base_dir: str = "/", timeout: float | None = 20) -> str:
    """The message of reading `spec`, which must fail; the secret must not be in it."""
    with pytest.raises(SecretSourceError) as e:
        read(spec, base_dir=base_dir, timeout=timeout)
    message = str(e.value)
    assert SECRET not in message
    assert e.value.message == message
    return message


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def gone(pid: int, within: float = 5.0) -> bool:
    """The process `pid` ended (a zombie waiting for init counts as ended)."""
    deadline = time.monotonic() + within
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


# -- pass, with a real store and key -------------------------------------------


def test_pass_gives_the_first_line_or_the_whole_entry(sysenv, pass_store) -> None:
    pass_store.insert("email/work", f"{SECRET}\nuser: me\n")
    assert read({"pass": "email/work"}, base_dir="/") == SECRET
    assert read({"pass": "email/work", "whole": True}, base_dir="/") == f"{SECRET}\nuser: me\n"


def test_pass_missing_entry_is_an_error_with_pass_s_message(sysenv, pass_store) -> None:
    pass_store.insert("email/work", SECRET + "\n")
    message = fails({"pass": "email/home"})
    assert message.startswith("sys.secret: pass email/home failed (exit 1): ")
    assert "email/home is not in the password store" in message


def test_pass_entry_that_gpg_cannot_decrypt_names_gpg_s_message(sysenv, pass_store) -> None:
    pass_store.insert("email/work", SECRET + "\n")
    # an entry gpg cannot read: pass fails with gpg's exit code and words
    (pass_store.dir / "broken.gpg").write_bytes(b"not an OpenPGP message")
    message = fails({"pass": "broken"})
    assert message.startswith("sys.secret: pass broken failed (exit 2): ")
    assert "gpg" in message


def test_pass_not_on_path(sysenv, monkeypatch, tmp_path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert fails({"pass": "email/work"}) == "sys.secret: the pass command is not on PATH"


# -- a manager command ---------------------------------------------------------


def test_command_gives_its_first_line_or_its_whole_output(tmp_path) -> None:
    tool = script(
        tmp_path,
        "op",
        f'[ "$1 $2" = "read op://v/i/f" ] || exit 9\nprintf "{SECRET}\\nline 2\\n"\n',
    )
    argv = [tool, "read", "op://v/i/f"]
    assert read({"command": argv}, base_dir="/") == SECRET
    assert read({"command": argv, "whole": True}, base_dir="/") == f"{SECRET}\nline 2\n"
    assert read({"command": argv, "whole": False}, base_dir="/") == SECRET


def test_command_output_is_text_even_when_not_utf8(tmp_path) -> None:
    tool = script(tmp_path, "bin", "printf 'a\\377b\\r\\nrest'\n")
    assert read({"command": [tool]}, base_dir="/") == "a\udcffb"
    assert read({"command": [tool], "whole": True}, base_dir="/") == "a\udcffb\r\nrest"


def test_command_failure_names_exit_code_and_stderr_never_stdout(tmp_path) -> None:
    tool = script(
        tmp_path,
        "bw",
        f"echo {SECRET}\necho 'noise first' >&2\necho '' >&2\necho '  [ERROR] item not found  ' >&2\nexit 3\n",
    )
    message = fails({"command": [tool, "get", "password", "x"]})
    assert (
        message
        == f"sys.secret: command {tool} failed (exit 3): noise first; [ERROR] item not found"
    )


def test_command_stderr_repeating_the_value_is_blanked(tmp_path) -> None:
    tool = script(tmp_path, "m", f"echo {SECRET}\necho 'bad value: {SECRET}!' >&2\nexit 1\n")
    assert fails({"command": [tool]}).endswith("failed (exit 1): bad value: (secret)!")


def test_command_stderr_is_cut_to_its_last_lines(tmp_path) -> None:
    tool = script(
        tmp_path, "m", 'for i in $(seq 1 200); do echo "complaint number $i" >&2; done\nexit 1\n'
    )
    message = fails({"command": [tool]})
    said = message.split("failed (exit 1): ", 1)[1]
    assert len(said) <= 300
    assert said.endswith("complaint number 200")
    assert "complaint number 1;" not in said


def test_command_killed_by_a_signal(tmp_path) -> None:
    tool = script(tmp_path, "m", f"echo {SECRET}\nkill -TERM $$\n")
    assert fails({"command": [tool]}) == f"sys.secret: command {tool} failed (killed by SIGTERM)"


def test_command_not_found(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert fails({"command": ["op", "read", SECRET]}) == "sys.secret: the op command is not on PATH"
    missing = str(tmp_path / "nowhere" / "op")
    assert fails({"command": [missing]}) == f"sys.secret: {missing} does not exist"
    script(tmp_path, "odd", "")
    (tmp_path / "odd").write_text("#!/nonexistent/interpreter\n")
    assert "cannot run odd" in fails({"command": ["odd"]})


def test_command_not_executable(tmp_path) -> None:
    tool = tmp_path / "plain"
    tool.write_text("echo hi\n")
    assert fails({"command": [str(tool)]}) == f"sys.secret: cannot run {tool}: Permission denied"


def test_command_stdin_is_not_the_test_s_stdin(tmp_path) -> None:
    # without a terminal the manager reads /dev/null: it cannot hang waiting for input
    tool = script(tmp_path, "m", "cat\necho end\n")
    assert read({"command": [tool], "whole": True}, base_dir="/", timeout=10) == "end\n"


def test_command_asks_on_the_terminal_when_there_is_one(sysenv, tmp_path) -> None:
    # gpg's pinentry, or a manager's own prompt, needs the terminal as stdin
    tool = script(tmp_path, "m", "[ -t 0 ] && echo terminal || echo none\n")
    code = (
        "from syslua.eval.secret_sources import read\n"
        f"print('got', read({{'command': [{tool!r}]}}, base_dir='/'))\n"
    )
    status, shown, ended = run_in_pty(
        [sys.executable, "-c", code], env=sysenv.env, cwd=sysenv.work, timeout=30
    )
    assert (status, ended) == (0, True)
    assert b"got terminal" in shown
    assert read({"command": [tool]}, base_dir="/") == "none"


def test_command_timeout_kills_its_whole_group(tmp_path) -> None:
    pidfile = tmp_path / "child"
    tool = script(tmp_path, "slow", f"echo {SECRET}\nsleep 60 &\necho $! > {pidfile}\nsleep 60\n")
    started = time.monotonic()
    message = fails({"command": [tool]}, timeout=1)
    assert message == f"sys.secret: command {tool} did not finish within 1 s"
    assert time.monotonic() - started < 10
    assert gone(int(pidfile.read_text()))


def test_command_interrupted_kills_its_whole_group(tmp_path) -> None:
    pidfile = tmp_path / "child"
    tool = script(tmp_path, "slow", f"sleep 60 &\necho $! > {pidfile}\nsleep 60\n")

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.7)
        with pytest.raises(KeyboardInterrupt):
            read({"command": [tool]}, base_dir="/", timeout=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert gone(int(pidfile.read_text()))


@pytest.mark.parametrize(
    ("output", "whole", "message"),
    [
        ("", False, "gave an empty value"),
        ("", True, "gave an empty value"),
        (f"\\n{SECRET}\\n", False, "gave an empty first line (`whole = true` takes all the lines)"),
    ],
)
def test_command_empty_value_is_an_error(tmp_path, output: str, whole: bool, message: str) -> None:
    tool = script(tmp_path, "m", f"printf '{output}'\n")
    assert fails({"command": [tool], "whole": whole}) == f"sys.secret: command {tool} {message}"


# -- a file --------------------------------------------------------------------


def test_file_under_home_relative_or_absolute(sysenv, tmp_path) -> None:
    tokens = sysenv.home / ".config" / "tokens"
    tokens.mkdir(parents=True)
    (tokens / "gh").write_text(f"{SECRET}\nmore\n")
    assert read({"file": "~/.config/tokens/gh"}, base_dir="/") == SECRET
    assert read({"file": ".config/tokens/gh"}, base_dir=str(sysenv.home)) == SECRET
    assert (
        read({"file": str(tokens / "gh"), "whole": True}, base_dir="/elsewhere")
        == f"{SECRET}\nmore\n"
    )


def test_file_missing_or_unreadable_names_the_path(sysenv) -> None:
    assert fails({"file": "~/.config/tokens/gh"}) == (
        "sys.secret: cannot read ~/.config/tokens/gh: No such file or directory"
    )
    assert fails({"file": "tokens/gh"}, base_dir="/nonexistent/cfg") == (
        "sys.secret: cannot read /nonexistent/cfg/tokens/gh: No such file or directory"
    )
    assert fails({"file": "~"}) == "sys.secret: cannot read ~: Is a directory"


def test_file_empty(sysenv) -> None:
    (sysenv.home / "empty").write_text("")
    assert fails({"file": "~/empty"}) == "sys.secret: file ~/empty gave an empty value"


# -- a variable ----------------------------------------------------------------


def test_env_set_and_unset(monkeypatch) -> None:
    monkeypatch.setenv("SYSLUA_TEST_TOKEN", SECRET + "\nsecond")
    assert read({"env": "SYSLUA_TEST_TOKEN"}, base_dir="/") == SECRET
    assert read({"env": "SYSLUA_TEST_TOKEN", "whole": True}, base_dir="/") == SECRET + "\nsecond"
    monkeypatch.delenv("SYSLUA_TEST_TOKEN")
    assert fails({"env": "SYSLUA_TEST_TOKEN"}) == (
        "sys.secret: the environment variable SYSLUA_TEST_TOKEN is not set"
    )
    monkeypatch.setenv("SYSLUA_TEST_TOKEN", "")
    assert (
        fails({"env": "SYSLUA_TEST_TOKEN"})
        == "sys.secret: env SYSLUA_TEST_TOKEN gave an empty value"
    )


# -- checking a spec -------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "sys.secret needs exactly one of pass, command, file, env"),
        ({"whole": True}, "sys.secret needs exactly one of pass, command, file, env"),
        (
            {"pass": "a", "env": "B"},
            "sys.secret needs exactly one of pass, command, file, env (got pass and env)",
        ),
        (
            {"pass": "a", "value": SECRET},
            "sys.secret: unknown key value (it takes pass, command, file, env and whole)",
        ),
        ({"pass": 12}, "sys.secret: `pass` must be an entry name (a string), got a number"),
        ({"pass": ""}, "sys.secret: `pass` must be an entry name, got an empty string"),
        (
            {"pass": "--clip"},
            "sys.secret: `pass` must be an entry name, not an option (it starts with -)",
        ),
        ({"file": {"a": 1}}, "sys.secret: `file` must be a path (a string), got a table"),
        ({"env": "A=B"}, "sys.secret: `env` must be a variable name: it contains ="),
        ({"env": True}, "sys.secret: `env` must be a variable name (a string), got a boolean"),
        (
            {"command": "op read x"},
            "sys.secret: `command` must be a list of strings (the program and its arguments), got a string",
        ),
        ({"command": {}}, "sys.secret: `command` must name a program: it is an empty list"),
        ({"command": []}, "sys.secret: `command` must name a program: it is an empty list"),
        ({"command": ["op", 1]}, "sys.secret: `command` word 2 must be a string, got a number"),
        (
            {"command": ["", "x"]},
            "sys.secret: `command` must name a program: its first word is empty",
        ),
        ({"command": ["op", "a\0b"]}, "sys.secret: `command` word 2 must not contain a NUL byte"),
        ({"pass": "a", "whole": "yes"}, "sys.secret: `whole` must be true or false, got a string"),
        (
            "email/work",
            "sys.secret needs a table with one of pass, command, file, env; got a string",
        ),
    ],
)
def test_bad_specs_are_refused(spec: Any, message: str) -> None:
    with pytest.raises(SecretSourceError) as e:
        validate(spec)
    assert str(e.value) == message
    assert fails(spec) == message


@pytest.mark.parametrize(
    ("spec", "normal", "needs", "words"),
    [
        ({"pass": "email/work"}, {"pass": "email/work", "whole": False}, "pass", "pass email/work"),
        (
            {"command": ["op", "read", "op://v/i/f"], "whole": True},
            {"command": ["op", "read", "op://v/i/f"], "whole": True},
            "op",
            "command op",
        ),
        (
            {"file": "~/.config/tokens/gh", "whole": None},
            {"file": "~/.config/tokens/gh", "whole": False},
            None,
            "file ~/.config/tokens/gh",
        ),
        (
            {"env": "GITHUB_TOKEN"},
            {"env": "GITHUB_TOKEN", "whole": False},
            None,
            "env GITHUB_TOKEN",
        ),
    ],
)
def test_valid_specs_their_program_and_description(
    spec: dict[str, Any], normal: dict[str, Any], needs: str | None, words: str
) -> None:
    assert validate(spec) == normal
    assert program(spec) == needs
    assert describe(spec) == words


# -- the store fixture itself ----------------------------------------------------


def agents_of(gnupghome: Path) -> list[int]:
    """The pids of processes whose command line names `gnupghome`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and entry != str(os.getpid()):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    words = f.read().split(b"\0")
            except OSError:
                continue
            if str(gnupghome).encode() in words and not gone(int(entry), within=0):
                found.append(int(entry))
    return found


def test_store_round_trip_and_its_agent_is_stopped(tmp_path, gpg_key) -> None:
    (tmp_path / "home").mkdir()
    store = open_store(tmp_path / "home", gpg_key)
    try:
        store.insert("a/b", b"\xffbytes\nkept\n")
        assert store.show("a/b") == b"\xffbytes\nkept\n"
        assert (store.dir / ".gpg-id").read_text().strip() == gpg_key.fingerprint
        assert agents_of(store.gnupghome)  # pass started one
    finally:
        store.close()
    assert agents_of(store.gnupghome) == []
    assert not store.gnupghome.exists()


def test_store_fixtures_skip_without_the_tools(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match="needs pass, gpg, gpgconf on PATH"):
        need_tools()
