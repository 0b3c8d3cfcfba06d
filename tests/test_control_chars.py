"""Control characters in paths, names and messages are escaped in human output (issue 9).

A config whose paths hold `\\n`, `\\r` or an ANSI escape must not be able to
forge a line of `sys plan` or `sys apply` (`+ file /etc/passwd`), rewrite one,
or drive the terminal: they are shown as `\\n`, `\\r`, `\\x1b`. `--json`
output keeps them exact.
"""

from __future__ import annotations

import io
import json
import sys

import pytest
from conftest import HEADER, events, out, tree

from syslua.cli.output import Terminal, printable

FORGED = "\n+ file /etc/passwd: Would have created the file"
ANSI = "\x1b[2J\x1b]0;pwned\x07"


def lua(text: str) -> str:
    """A Lua string literal (decimal escapes: LuaJIT has no \\u)."""
    return (
        '"'
        + "".join(c if " " <= c < "\x7f" and c not in '"\\' else f"\\{ord(c)}" for c in text)
        + '"'
    )


def config(sysenv, extra: str = "") -> None:  # type: ignore[no-untyped-def]
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
file {{ path = {lua("~/notes" + FORGED)}, content = "x\\n" }}
file {{ path = {lua("~/esc" + ANSI)}, content = "y\\n" }}
file {{ path = "~/plain.txt", content = "z\\n" }}
{extra}
""",
    )


def no_raw_controls(text: str) -> None:
    for c in ("\x1b", "\r", "\x07"):
        assert c not in text, repr(text)


def test_printable_escapes():
    assert printable("a\nb\rc\x1b[31m\x07\x7f\x9b") == "a\\nb\\rc\\x1b[31m\\x07\\x7f\\x9b"
    assert printable("tab\tstays") == "tab\tstays"
    assert printable("é ✓ ~/ok") == "é ✓ ~/ok"
    assert printable("\u202eevil") == "\\u202eevil"  # a bidi override reorders what is shown
    assert printable("bad\udcffbyte") == "bad\\xffbyte"  # not UTF-8 (surrogateescape)
    assert printable("two\nlines\x1b", newlines=True) == "two\nlines\\x1b"


def test_plan_lines_cannot_be_forged(sysenv) -> None:
    config(sysenv)
    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)
    no_raw_controls(out(p))
    lines = p.stdout.splitlines()
    # one line per item, each starting as a real plan line does
    entries = [ln for ln in lines if ln.startswith(("  + ", "  ! "))]
    # three files, and the two missing parents of ~/notes\n+ file /etc/passwd
    assert len(entries) == 5, p.stdout
    assert not any(ln.lstrip().startswith("+ file /etc/passwd") for ln in lines), p.stdout
    assert "  + dir ~/notes\\n+ file /etc (parent)" in lines, p.stdout
    assert any(
        ln == "  + file ~/notes\\n+ file /etc/passwd: Would have created the file: will create"
        for ln in lines
    )
    assert "  + file ~/esc\\x1b[2J\\x1b]0;pwned\\x07: will create" in lines
    # every mention of /etc/passwd is inside the escaped path
    assert all("~/notes\\n+ file /etc/passwd" in ln for ln in lines if "/etc/passwd" in ln)


def test_apply_lines_and_messages_cannot_be_forged(sysenv) -> None:
    """A file stands where a parent of ~/notes\\n+ file /etc/passwd must be
    created: the failure message quotes the paths, and stays on its line."""
    config(
        sysenv,
        'exec { name = "x\\ry", command = "printf \'a\\\\033[31mb\\\\rc\\\\n\'", logoutput = true }',
    )
    (sysenv.home / "notes\n+ file ").write_text("in the way\n")
    home = tree(sysenv.home)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    no_raw_controls(text)
    assert "Traceback" not in text
    assert all("~/notes\\n+ file /etc" in ln for ln in text.splitlines() if "/etc" in ln), text
    assert "~/notes\\n+ file  is not a directory, so ~/notes\\n+ file /etc/passwd: " in text
    # refused before anything ran (issue 23): the exec is named by the plan
    assert "Refusing to apply" in text and "exec x" not in text
    plan = out(sysenv.run("plan"))
    no_raw_controls(plan)
    assert "exec x\\ry" in plan, plan
    assert tree(sysenv.home) == home


def test_command_output_is_escaped(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        'exec { name = "paint", provider = "shell", logoutput = true,'
        " command = \"printf 'red\\\\033[31mtext\\\\rover\\\\n'\" }\n",
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    no_raw_controls(out(p))
    assert "    exec#paint stdout: red\\x1b[31mtext\\rover" in p.stdout


def test_error_messages_are_escaped(sysenv) -> None:
    sysenv.write("sys.lua", 'error("bad\\27[2J\\rthing")\n')
    p = sysenv.run("plan")
    assert p.returncode == 2
    no_raw_controls(out(p))
    assert "Error: sys.lua:1: bad\\x1b[2J\\rthing" in p.stderr


def test_conflict_and_cycle_errors_quote_paths_on_one_line(sysenv) -> None:
    path = lua("~/x" + FORGED)
    sysenv.write(
        "sys.lua",
        HEADER
        + f'file {{ path = {path}, content = "a" }}\nfile {{ path = {path}, content = "b" }}\n',
    )
    p = sysenv.run("plan")
    assert p.returncode == 2
    assert "Conflicting values for file#~/x\\n+ file /etc/passwd" in p.stderr, p.stderr
    assert not any(ln.startswith("+ file") for ln in p.stderr.splitlines())
    sysenv.write(
        "sys.lua",
        HEADER
        + f'local a = file {{ path = {path}, content = "a", depends_on = {{ "file#~/y" }} }}\n'
        + 'file { path = "~/y", content = "b", depends_on = { a } }\n',
    )
    p = sysenv.run("plan")
    assert p.returncode == 2
    assert "Error: dependency cycle:" in p.stderr
    assert not any(ln.startswith("+ file") for ln in p.stderr.splitlines()), p.stderr


def test_status_and_history_are_escaped(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + f"file {{ path = {lua('~/esc' + ANSI)}, content = 'y' }}\n")
    p = sysenv.run("apply", "-m", "first\nline\x1b[31m")
    assert p.returncode == 0, out(p)
    (sysenv.home / ("esc" + ANSI)).write_text("edited")
    p = sysenv.run("status", "-v")
    no_raw_controls(out(p))
    assert "M! file ~/esc\\x1b[2J\\x1b]0;pwned\\x07" in p.stdout.splitlines(), p.stdout
    p = sysenv.run("history")
    no_raw_controls(out(p))
    assert "first\\nline\\x1b[31m" in p.stdout


def test_json_output_stays_exact(sysenv) -> None:
    config(sysenv)
    p = sysenv.run("plan", "--json")
    assert p.returncode == 0, out(p)
    ids = {f"{i['type']}#{i['key']}" for i in json.loads(p.stdout)["manifest"]["items"]}
    assert f"file#{sysenv.home}/notes{FORGED}" in ids
    assert f"file#{sysenv.home}/esc{ANSI}" in ids
    p = sysenv.run("apply", "--json")
    ev = [e for e in events(p) if e.get("event") == "item"]
    assert f"file#{sysenv.home}/esc{ANSI}" in {e["id"] for e in ev}


def test_multi_line_messages_stay_multi_line_in_a_plain_config(sysenv) -> None:
    """Escaping newlines in messages is only for configs whose names hold control characters."""
    sysenv.write(
        "sys.lua",
        'exec { name = "loud", provider = "shell", command = "echo one >&2; echo two >&2; exit 3" }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert lines.count("          one") == 1 and lines.count("          two") == 1, p.stdout
    assert lines.count("      one") == 1 and lines.count("      two") == 1, p.stdout


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("label", ["~/esc" + ANSI, "~/notes" + FORGED])
def test_rich_reporter_escapes_too(label: str, monkeypatch) -> None:
    from syslua.cli.report import RichReporter
    from syslua.execute.item import FAILED, ItemResult

    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = FakeTTY()
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(sys, "stderr", stream)
    term = Terminal()
    term.distrust([f"file#{label}"])
    try:
        reporter = RichReporter(term)
        reporter.started("file#x", label)
        reporter.finished(
            ItemResult(
                id=f"file#{label}",
                type="file",
                label=label,
                status=FAILED,
                message=f"cannot write {label}",
                action="create",
            )
        )
        reporter.output("exec#x", "stdout", "a\x1b]0;pwned\x07b")
        reporter.close()
    finally:
        Terminal.new_command()
    shown = stream.getvalue()
    assert "pwned\x07" not in shown and "\x1b]0;" not in shown
    assert "/etc/passwd: Would" not in shown.replace("\\n+ file /etc/passwd: Would", "")
