"""Output made for people (issue 23, point 3): long output through a pager on
a terminal, lines no wider than the terminal, and private file contents kept
out of every human output.

The pager and wrapping tests run a real `python -m syslua` in a
pseudo-terminal (`pty`) 100 and 60 columns wide; the pager is a fake one
(`SYS_PAGER`) that records what it was given.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HEADER, history, ok, out, put, tree
from ptyrun import Pty, run_in_pty

ANSI = re.compile(r"\x1b\[[?0-9;]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)")
LONG = "~/a-directory-with-a-rather-long-name/and-a-file-with-a-long-name-too.txt"


def on_pty(
    sysenv, args: list[str], columns: int, env: dict[str, str] | None = None, **kw
) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """`sys *args` on a terminal `columns` wide (the terminal's own size; COLUMNS
    only when `env` sets it): its exit code and what the terminal showed
    (escape sequences removed, CRLF as LF). `sigint_after`: a text after which
    Ctrl-C is pressed (SIGINT to the terminal's foreground group)."""
    code, raw = on_pty_raw(sysenv, args, columns, env, **kw)
    text = raw.decode("utf-8", "replace")
    return code, ANSI.sub("", text).replace("\r\n", "\n")


def on_pty_raw(
    sysenv,
    args: list[str],
    columns: int,
    env: dict[str, str] | None = None,
    *,
    sigint_after: str | None = None,
    unset: tuple[str, ...] = (),
) -> tuple[int, bytes]:  # type: ignore[no-untyped-def]
    """As `on_pty`, with what the terminal got as it came."""
    env = dict(env or {})
    size = int(env.pop("_PTY_COLUMNS", columns))
    full = dict(sysenv.env, TERM="xterm-256color", LINES="40")
    full.pop("COLUMNS")
    full.update(env or {})
    for name in unset:
        full.pop(name, None)
    pressed = False

    def pressing(pty: Pty, _: bytes) -> None:
        nonlocal pressed
        if sigint_after and not pressed and sigint_after.encode() in pty.seen:
            os.killpg(pty.proc.pid, signal.SIGINT)
            pressed = True

    code, raw, _ = run_in_pty(
        [sys.executable, "-m", "syslua", *args],
        env=full,
        cwd=sysenv.work,
        columns=size,
        each=pressing,
    )
    return code, raw


def too_wide(text: str, columns: int) -> list[str]:
    return [ln for ln in text.split("\n") if len(ln) > columns]


@pytest.fixture
def pager(tmp_path: Path) -> Path:
    """A fake pager: records its input (and whether its stdout is the
    terminal), then says how many lines it got."""
    script = tmp_path / "fake-pager"
    record = tmp_path / "paged.txt"
    script.write_text(
        "#!/bin/sh\n"
        f"cat > '{record}'\n"
        f"[ -t 1 ] && echo tty > '{record}.tty'\n"
        f"echo \"pager got $(wc -l < '{record}') lines\"\n"
    )
    script.chmod(0o755)
    return script


def paged(pager: Path) -> str | None:
    record = pager.parent / "paged.txt"
    return record.read_text() if record.exists() else None


def applied_twice(sysenv) -> None:  # type: ignore[no-untyped-def]
    """Two snapshots, the second with a changed file."""
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "one\\n" }\n')
    ok(sysenv.run("apply"))
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "two\\n" }\n')
    ok(sysenv.run("apply"))


# -- the pager ---------------------------------------------------------------------
@pytest.mark.parametrize("columns", [100, 60])
@pytest.mark.parametrize(
    "args",
    [["history"], ["diff"], ["snapshot", "show"], ["plan", "--diff"], ["plan", "-v"]],
)
def test_long_output_goes_through_the_pager_on_a_terminal(sysenv, pager, columns, args) -> None:
    applied_twice(sysenv)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "three\\n" }\n')
    code, text = on_pty(sysenv, args, columns, {"SYS_PAGER": str(pager)})
    assert code == 0, text
    got = paged(pager)
    assert got is not None, text
    lines = [ln for ln in got.splitlines() if ln.strip()]
    assert lines, got
    assert f"pager got {len(got.splitlines())} lines" in text
    # the pager has the terminal for its own output; what it was given is not shown past it
    assert (pager.parent / "paged.txt.tty").exists()
    assert not any(ln in text for ln in lines if len(ln) > 8), text
    assert not too_wide(got, columns), got
    if args[0] == "plan":
        # stderr is not paged: the log line reached the terminal, not the pager
        assert "Building execution plan..." in text and "Building" not in got


def test_sys_pager_then_pager_then_none(sysenv, pager, tmp_path) -> None:
    applied_twice(sysenv)
    other = tmp_path / "other-pager"
    other.write_text("#!/bin/sh\ncat > /dev/null\necho other pager ran\n")
    other.chmod(0o755)
    # PAGER when SYS_PAGER is not set
    code, text = on_pty(sysenv, ["history"], 100, {"PAGER": str(pager)})
    assert code == 0 and paged(pager) is not None, text
    (pager.parent / "paged.txt").unlink()
    # SYS_PAGER wins
    code, text = on_pty(sysenv, ["history"], 100, {"PAGER": str(pager), "SYS_PAGER": str(other)})
    assert code == 0 and "other pager ran" in text and paged(pager) is None, text
    # an empty SYS_PAGER, `cat` or --no-pager: no pager, the lines on the terminal
    for env, extra in (
        ({"SYS_PAGER": ""}, []),
        ({"SYS_PAGER": "cat"}, []),
        ({"SYS_PAGER": str(pager)}, ["--no-pager"]),
    ):
        code, text = on_pty(sysenv, ["history", *extra], 100, {"PAGER": str(other), **env})
        assert code == 0, text
        assert "other pager ran" not in text and paged(pager) is None, (env, text)
        assert "apply" in text, text


def test_less_is_the_default_pager(sysenv, tmp_path) -> None:
    real = subprocess.run(["sh", "-c", "command -v less"], capture_output=True, text=True)
    if real.returncode:
        pytest.skip("less is not installed")
    applied_twice(sysenv)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    spy = bin_ / "less"
    spy.write_text(
        f'#!/bin/sh\necho "$@" > \'{tmp_path}/less-args\'\nexec {real.stdout.strip()} "$@"\n'
    )
    spy.chmod(0o755)
    path = f"{bin_}{os.pathsep}{os.environ['PATH']}"
    code, text = on_pty(sysenv, ["history"], 100, {"PATH": path}, unset=("PAGER", "SYS_PAGER"))
    assert code == 0, text
    assert (tmp_path / "less-args").read_text().split() == ["-FRX"]
    # `less -FRX` prints output shorter than the screen and quits
    assert text.count("apply") >= 2, text


def test_not_a_terminal_or_json_is_never_paged(sysenv, pager) -> None:
    applied_twice(sysenv)
    env = dict(sysenv.env, SYS_PAGER=str(pager))
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "history"],
        cwd=sysenv.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0 and "apply" in p.stdout and paged(pager) is None
    code, text = on_pty(sysenv, ["history", "--json"], 100, {"SYS_PAGER": str(pager)})
    assert code == 0 and '"id"' in text and paged(pager) is None, text


def test_exit_codes_and_errors_are_kept_with_a_pager(sysenv, pager) -> None:
    applied_twice(sysenv)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "three\\n" }\n')
    code, text = on_pty(sysenv, ["plan", "--diff", "--exit-code"], 100, {"SYS_PAGER": str(pager)})
    assert code == 4, text
    assert "+three" in (paged(pager) or ""), text
    # an error is on stderr, on the terminal, with its exit code
    code, text = on_pty(sysenv, ["diff", "no-such-snapshot"], 100, {"SYS_PAGER": str(pager)})
    assert code == 2, text
    assert "Error:" in text and "no-such-snapshot" in text, text


def test_a_pager_quit_early_ends_the_command_quietly(sysenv) -> None:
    body = "".join(f'file {{ path = "~/f{i:03}", content = "{i}\\n" }}\n' for i in range(300))
    sysenv.write("sys.lua", HEADER + body)
    code, text = on_pty(sysenv, ["plan", "-v", "--exit-code"], 100, {"SYS_PAGER": "true"})
    assert code == 4, text
    assert "Traceback" not in text and "Error" not in text and "f299" not in text, text


def test_ctrl_c_while_the_pager_shows_waits_for_it(sysenv, tmp_path) -> None:
    """Ctrl-C reaches syslua and the pager (one foreground group): syslua
    waits for the pager to quit and keeps its exit code."""
    applied_twice(sysenv)
    slow = tmp_path / "slow-pager"
    slow.write_text(
        "#!/bin/sh\ntrap '' INT\ncat > /dev/null\necho pager-open\nsleep 1\necho pager-closed\n"
    )
    slow.chmod(0o755)
    code, text = on_pty(
        sysenv, ["history"], 100, {"SYS_PAGER": str(slow)}, sigint_after="pager-open"
    )
    assert code == 0, text
    assert text.rstrip().endswith("pager-closed"), text
    assert "Traceback" not in text, text


# -- no line wider than the terminal ------------------------------------------------
def files(n: int) -> str:
    return "".join(f'file {{ path = "~/f{i:02}", content = "{i}\\n" }}\n' for i in range(n))


WIDE_CONFIG = (
    HEADER
    + f'file {{ path = "{LONG}", content = "a\\n" }}\n'
    + files(14)
    + 'exec { name = "a-task-with-a-name-that-goes-on-and-on-for-a-while", command = "true" }\n'
    + 'exec { name = "second", command = "true", depends_on = { "exec#a-task-with-a-name-that-goes-on-and-on-for-a-while" } }\n'
    + 'env { A_VARIABLE_WITH_A_LONG_NAME = "and a value that is rather long as well, too long" }\n'
)


def screen_lines(sysenv, args: list[str], columns: int, env: dict[str, str]) -> list[str]:  # type: ignore[no-untyped-def]
    """The lines a terminal `columns` wide shows for `sys *args`; none may be
    wider than the terminal (the screen records a line the terminal had to wrap)."""
    from test_live_display import Screen

    code, raw = on_pty_raw(sysenv, args, columns, env)
    assert code in (0, 4), raw.decode(errors="replace")
    screen = Screen(columns)
    screen.feed(raw)
    assert screen.overflows == [], "\n".join(screen.lines())
    return screen.lines()


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("how", ["COLUMNS", "pty"])
def test_no_line_is_wider_than_the_terminal(sysenv, columns, how) -> None:
    env = {"COLUMNS": str(columns)} if how == "COLUMNS" else {}
    if how == "COLUMNS":  # the variable wins over the terminal's own size
        env["_PTY_COLUMNS"] = "200"
    sysenv.write("sys.lua", WIDE_CONFIG)
    # its rc file loads the env script: no line to copy (`whole`, below) after the apply
    env["SHELL"] = "/bin/bash"
    (sysenv.home / ".bashrc").write_text(f". '{sysenv.root}/state/env.sh'\n")
    plan = screen_lines(sysenv, ["plan", "--no-pager"], columns, env)
    text = "\n".join(plan)
    # wrapped at spaces: a word stays whole unless it alone is wider than a line
    assert (
        "  [Wave 1] " in text and "exec a-task-with-a-name-that-goes-on-and-on-for-a-while" in text
    )
    assert "unchanged." in plan[-1] or "unchanged." in plan[-2]
    apply = screen_lines(sysenv, ["apply"], columns, env)
    assert any(ln.startswith("Plan: ") for ln in apply), apply
    assert any("Apply complete" in ln for ln in apply), apply
    (sysenv.home / LONG[2:]).write_text("edited by hand\n")
    status = screen_lines(sysenv, ["status", "-v", "--no-pager"], columns, env)
    assert any("content edited" in ln for ln in status), status
    history = screen_lines(sysenv, ["history", "--no-pager"], columns, env)
    assert any("apply" in ln for ln in history), history


def test_the_execution_order_is_summarised_per_wave_when_long(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + files(30)
        + "".join(f'exec {{ name = "e{i}", command = "true" }}\n' for i in range(3)),
    )
    p = sysenv.run("plan")
    ok(p)
    assert "  [Wave 1] 30 files, 3 execs - parallel\n" in p.stdout, p.stdout
    v = sysenv.run("plan", "-v")
    ok(v)
    [wave] = [ln for ln in v.stdout.splitlines() if ln.startswith("  [Wave 1] ")]
    assert "~/f00" in wave and "~/f29" in wave and "e2" in wave, wave
    # a short wave is listed
    sysenv.write("sys.lua", HEADER + files(3))
    assert "  [Wave 1] ~/f00, ~/f01, ~/f02 - parallel\n" in sysenv.run("plan").stdout


def test_a_command_to_copy_is_never_wrapped(sysenv) -> None:
    """A line to paste into a shell stays one line (the terminal may fold it,
    but copying it gives the command back)."""
    code, text = on_pty(sysenv, ["env"], 40, {"SHELL": "/bin/bash"})
    assert code == 0, text
    [line] = [ln for ln in text.split("\n") if "env.sh" in ln]
    assert line.startswith("[ -f ") and line.endswith("env.sh'"), text


@pytest.mark.parametrize("columns", [80, 60])
def test_a_next_step_s_command_goes_whole_on_a_line_of_its_own(sysenv, columns) -> None:
    """A refusal's ways on end with a command: on a narrow terminal, the
    words before it wrap, and the command moves whole to a line of its own."""
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", source = "./a" }\n')
    sysenv.write("a", "one\n")
    ok(sysenv.run("apply"))
    (sysenv.home / "a").write_text("edited\n")
    code, text = on_pty(sysenv, ["apply"], columns, {})
    assert code == 2, text
    lines = [ln.rstrip() for ln in text.split("\n")]
    assert all(len(ln) <= columns for ln in lines), text
    assert "      sys apply --force" in lines, text
    assert any(ln.endswith("sys add ~/a") for ln in lines), text


# -- private files ------------------------------------------------------------------
SECRET = "hunter2"


def secret_file(path: str, text: str, mode: str = "0600") -> str:
    """A file declaration; `text` as a Lua string's body (`\\n` for a newline)."""
    return f'file {{ path = "{path}", content = "{text}", mode = "{mode}" }}\n'


@pytest.mark.parametrize(
    "path,mode",
    [("~/secret.txt", "0600"), ("~/.ssh/config", "0644"), ("~/.gnupg/gpg.conf", "0644")],
)
def test_a_private_file_shows_how_many_lines_changed_never_its_content(sysenv, path, mode) -> None:
    sysenv.write("sys.lua", HEADER + secret_file(path, f"user: me\\npass: {SECRET}\\n", mode))
    # a new file: its lines are all added
    p = sysenv.run("plan", "--diff")
    assert p.returncode == 0, out(p)
    assert "(private file: 2 lines changed)" in p.stdout, p.stdout
    assert SECRET not in out(p)
    ok(sysenv.run("apply"))
    new = f"user: me\\npass: {SECRET}-2\\nhost: {SECRET}-3\\n"
    sysenv.write("sys.lua", HEADER + secret_file(path, new, mode))
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("plan", "--diff")
    assert p.returncode == 0, out(p)
    assert "      (private file: 2 lines changed)" in p.stdout, p.stdout
    assert SECRET not in out(p)
    # --json: the entry's diff says the same (the manifest it prints holds the declaration)
    [entry] = json.loads(sysenv.run("plan", "--json").stdout)["plan"]["items"]
    assert entry["diff"] == "(private file: 2 lines changed)\n", entry
    assert (tree(sysenv.home), tree(sysenv.root)) == before
    # between snapshots, as `sys diff` shows them
    ok(sysenv.run("apply"))
    d = sysenv.run("diff", "-1")
    assert d.returncode == 0, out(d)
    assert "(private file: 2 lines changed)" in d.stdout and SECRET not in out(d), d.stdout


def test_an_edit_of_a_private_file_is_not_shown(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + secret_file("~/secret.txt", "a\\nb\\n"))
    ok(sysenv.run("apply"))
    (sysenv.home / "secret.txt").write_text(f"a\n{SECRET}\n")
    p = sysenv.run("plan", "--diff")
    assert "(private file: 1 line changed)" in p.stdout, p.stdout
    assert SECRET not in out(p)
    s = sysenv.run("status", "-v")
    assert SECRET not in out(s)


def test_a_file_private_on_disk_is_private(sysenv) -> None:
    """Declared readable, but 0600 on disk (chmod by hand): still private."""
    sysenv.write("sys.lua", HEADER + secret_file("~/notes", "one\\n", "0644"))
    ok(sysenv.run("apply"))
    (sysenv.home / "notes").chmod(0o600)
    sysenv.write("sys.lua", HEADER + secret_file("~/notes", f"{SECRET}\\n", "0644"))
    p = sysenv.run("plan", "--diff")
    assert "(private file: 1 line changed)" in p.stdout and SECRET not in out(p), p.stdout


def test_a_readable_file_still_shows_its_diff(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + secret_file("~/open", "one\\n", "0644"))
    ok(sysenv.run("apply"))
    sysenv.write("sys.lua", HEADER + secret_file("~/open", "two\\n", "0644"))
    p = sysenv.run("plan", "--diff")
    assert "      -one" in p.stdout and "      +two" in p.stdout, p.stdout


def test_sys_add_refusal_keeps_private_contents_out(sysenv) -> None:
    """An error's details (both sides changed) go through the same check."""
    source = put(sysenv.work / "dotfiles" / "token", "a\n", 0o600)
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/token", source = "dotfiles/token", mode = "0600" }\n'
    )
    ok(sysenv.run("apply"))
    source.write_text(f"a\n{SECRET}-source\n")
    (sysenv.home / "token").write_text(f"a\n{SECRET}-home\n")
    snaps = history(sysenv)
    p = sysenv.run("add", "~/token")
    assert p.returncode == 1, out(p)
    assert "both changed" in p.stderr and "(private file: 1 line changed)" in p.stdout, out(p)
    assert SECRET not in out(p)
    assert history(sysenv) == snaps
