"""`sys` makes each command only when it is used (cli.click_app); what it shows
must be what typer's own, eagerly built group shows.

Every help page, the command list, usage errors and the "did you mean"
suggestions are compared, text and exit code, between the real command line
(`sysenv.run`) and the group `typer.main.get_command(app)` builds with every
command made up front.
"""

from __future__ import annotations

import io
import sys

import click
import pytest
import typer.main

from syslua.cli import app, click_app

PROG = "python -m syslua"  # how click names the program of `sysenv.run` and `spawn`

ARGS = [
    (),
    ("--help",),
    ("-h",),
    ("snapshot",),
    ("snapshot", "--help"),
    ("snapshot", "shwo"),
    ("snapshot", "tag"),
    ("age",),
    ("age", "--help"),
    ("age", "keygn"),
    ("age", "encrypt", "--bogus"),
    ("plna",),
    ("nosuch",),
    ("plan", "--bogus"),
    ("apply", "--jobs", "0"),
    *[(name, "--help") for name in typer.main.get_command(app).commands],  # type: ignore[attr-defined]
    *[("snapshot", name, "--help") for name in ("show", "tag", "delete")],
    *[("age", name, "--help") for name in ("keygen", "encrypt", "decrypt")],
]


def eager(args: tuple[str, ...]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of typer's own group, every command built first."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        typer.main.get_command(app).main(list(args), prog_name=PROG)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        sys.stdout, sys.stderr = saved
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("args", ARGS, ids=lambda a: " ".join(a) or "no-args")
def test_lazy_group_answers_as_typer_does(sysenv, args):
    r = sysenv.run(*args)
    assert (r.returncode, r.stdout, r.stderr) == eager(args)


def test_commands_are_listed_in_declaration_order_and_made_on_first_use():
    group = click_app(app)
    typers = typer.main.get_command(app)
    assert isinstance(typers, click.Group)
    assert list(group.commands) == list(typers.commands)
    plan = group.commands["plan"]
    assert plan.name == "plan" and group.commands["plan"] is plan  # made once
    assert group.commands.get("nosuch") is None
    snapshot = group.commands["snapshot"]
    assert isinstance(snapshot, click.Group)
    assert sorted(snapshot.commands) == ["delete", "show", "tag"]


def test_each_summary_is_what_click_would_list_of_its_command():
    """`sys --help` lists a command not made yet by its summary: at any width
    that must read as the command's own docstring would."""
    from syslua.cli import SUMMARIES

    typers = typer.main.get_command(app)
    assert isinstance(typers, click.Group)
    made: dict[str, click.Command] = {}
    for name, command in typers.commands.items():
        if isinstance(command, click.Group):  # snapshot, age: their commands
            made |= {f"{name} {sub}": c for sub, c in command.commands.items()}
        else:
            made[name] = command
    assert set(SUMMARIES) == set(made)
    for name, command in made.items():
        stand_in = click.Command(name, help=SUMMARIES[name])
        for width in (20, 45, 66, 10_000):
            assert stand_in.get_short_help_str(width) == command.get_short_help_str(width), name


def test_help_imports_no_command_module():
    """The command list is written without making (importing) any command."""
    import subprocess

    code = (
        "import sys\n"
        "from syslua import cli\n"
        "sys.argv = ['sys', '--help']\n"
        "try:\n"
        "    cli.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('syslua.cli.commands.')))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "[]"
    assert "plan      Show what `sys apply` would change" in p.stdout
