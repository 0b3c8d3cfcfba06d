"""Every command's help shows how it is used, with an example (`sys COMMAND -h`)."""

from __future__ import annotations

import click
import pytest
import typer

from syslua.cli import app


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


COMMANDS = _commands(typer.main.get_command(app))  # type: ignore[arg-type]


def test_the_commands_are_found():
    assert {("plan",), ("apply",), ("init",), ("snapshot", "tag")} <= set(COMMANDS)


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_command_help_has_an_example(sysenv, words):
    p = sysenv.run(*words, "--help")
    assert p.returncode == 0, p.stderr
    text = p.stdout
    assert "Example:" in text or "Examples:" in text, text
    # the examples are whole command lines, one per line, kept as written
    example = text.split("Example", 1)[1]
    assert f"\n    sys {' '.join(words)}" in example, text
