"""`sys cd [--print]`: a shell (`$SHELL`, else /bin/sh) in the directory of
the config `sys plan` would use, as `chezmoi cd` starts one in its source
directory; `--print` prints the directory instead. The exit code is the
shell's."""

from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import NoColorOpt, QuietOpt

if TYPE_CHECKING:
    from syslua.cli.output import Terminal


def command(
    print_: Annotated[
        bool, typer.Option("--print", help="Print the config's directory; start no shell.")
    ] = False,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Start a shell in the config's directory ($SHELL; exit it to come back).

    \b
    Examples:
      sys cd
      cd "$(sys cd --print)"
    """
    raise typer.Exit(run(terminal(False, 0, quiet, no_color), print_only=print_))


def run(term: "Terminal", *, print_only: bool) -> int:
    import os
    import subprocess

    from syslua.errors import UsageError
    from syslua.execute.config import locate_config
    from syslua.paths import Paths

    found = locate_config(None, Paths.from_env(), term.log, "sys plan path/to/sys.lua")
    where = str(found.path.resolve().parent)
    if print_only:
        term.line(where, always=True)
        return 0
    shell = os.environ.get("SHELL") or "/bin/sh"
    term.log(f"Starting {shell} in {where}; exit it to come back.")
    try:
        return subprocess.run([shell], cwd=where, check=False).returncode
    except OSError as e:
        raise UsageError(f"cannot start the shell {shell!r}: {e.strerror}") from e
