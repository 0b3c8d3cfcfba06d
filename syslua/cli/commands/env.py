"""`sys env [--shell bash|zsh|fish]`: the line to add to a shell's rc file."""

from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal

if TYPE_CHECKING:
    from syslua.cli.output import Terminal

SHELLS = ("bash", "zsh", "fish", "sh")


def command(
    shell: Annotated[
        str | None, typer.Option("--shell", help="bash, zsh or fish (default: from $SHELL).")
    ] = None,
) -> None:
    """Print the line to add to your shell's rc file.

    \b
    Examples:
      sys env >> ~/.bashrc
      sys env --shell fish >> ~/.config/fish/config.fish
    """
    raise typer.Exit(run(terminal(), shell))


def run(term: "Terminal", shell: str | None) -> int:
    from syslua.errors import UsageError
    from syslua.paths import Paths
    from syslua.shellrc import login_shell, rc_line

    shell = shell or login_shell()
    if shell not in SHELLS:
        raise UsageError(f"unknown shell `{shell}` (use bash, zsh or fish)")
    paths = Paths.from_env()
    term.line(rc_line(paths, "fish" if shell == "fish" else "sh"))
    if not paths.env_sh.exists():
        term.log("Note: the env scripts are written by the first `sys apply`.")
    return 0
