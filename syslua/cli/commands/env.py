"""`sys env [--shell bash|zsh|fish] [--append]`: the line that loads syslua's
env script, for a shell's rc file.

The line names the script from `$HOME` when the state is under the home,
so it is the same on every machine and may be committed with the rc file.
`--append` adds it where it belongs: when the current snapshot manages the
rc file from a source (a copy, a link, a member of a tree), to that source
file in the repository, written directly, never through the home's link;
otherwise to the rc file itself (the file a link there points to). It adds
the line once: an rc file that already loads the script is left alone. An
rc file whose content the config declares inline is not written: the line
belongs in the config.
"""

from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import NoColorOpt

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.paths import Paths
    from syslua.resources.env_line import RcTarget

SHELLS = ("bash", "zsh", "fish", "sh")


def command(
    shell: Annotated[
        str | None, typer.Option("--shell", help="bash, zsh or fish (default: from $SHELL).")
    ] = None,
    append: Annotated[
        bool,
        typer.Option(
            "--append",
            help="Add the line to the shell's rc file, or to the file in your repository "
            "it is managed from; once.",
        ),
    ] = False,
    no_color: NoColorOpt = False,
) -> None:
    """Print the line to add to your shell's rc file.

    \b
    Examples:
      sys env --append                  # add it to ~/.bashrc, or to the source it comes from
      sys env --shell fish
    """
    raise typer.Exit(run(terminal(no_color=no_color), shell, append=append))


def run(term: "Terminal", shell: str | None, *, append: bool = False) -> int:
    from syslua.errors import UsageError
    from syslua.paths import Paths
    from syslua.resources.env_line import applied_manifest, rc_target
    from syslua.shellrc import login_shell, rc_file, rc_line

    shell = shell or login_shell()
    if shell not in SHELLS:
        raise UsageError(f"unknown shell `{shell}` (use bash, zsh or fish)")
    paths = Paths.from_env()
    line = rc_line(paths, "fish" if shell == "fish" else "sh")
    rc = rc_file(shell)
    assert rc is not None  # every shell of SHELLS has one
    target = rc_target(applied_manifest(paths), rc)
    if append:
        return _append(term, paths, target, line, fish=shell == "fish")
    term.line(line, whole=True)  # to copy, or to eval
    _notes(term, paths, target)
    return 0


def _notes(term: "Terminal", paths: "Paths", target: "RcTarget") -> None:
    """On stderr: where the line belongs when the config manages the rc file,
    and that the scripts come with the first apply."""
    from syslua.paths import abbreviate
    from syslua.resources.env_line import shown

    rc = abbreviate(str(target.rc))
    if target.source is not None:
        term.log(
            f"Note: your config makes {rc} from {shown(target.source)}: add the line there, "
            "or run `sys env --append`."
        )
    elif target.inline:
        at = f" ({target.declared})" if target.declared else ""
        term.log(f"Note: your config declares the content of {rc}{at}: add the line there.")
    if not paths.env_sh.exists():
        term.log("Note: the env scripts are written by the first `sys apply`.")


def _append(term: "Terminal", paths: "Paths", target: "RcTarget", line: str, *, fish: bool) -> int:
    """Add the line to the rc file, or to the source it is managed from, once."""
    from syslua.errors import UsageError
    from syslua.paths import abbreviate
    from syslua.resources.env_line import shown
    from syslua.shellrc import append_line, loaded_by, rc_loads

    rc = abbreviate(str(target.rc))
    if target.inline:
        at = f" ({target.declared})" if target.declared else ""
        raise UsageError(
            f"your config declares the content of {rc}{at}: add this line to it there: {line}"
        )
    script = paths.env_fish if fish else paths.env_sh
    files = [target.source] if target.source is not None else loaded_by(target.rc)
    if rc_loads(files, script):
        term.line(f"Nothing added: {target.where()} already loads syslua's env script.")
        return 0
    if target.source is not None and not target.source.is_file():
        raise UsageError(
            f"{target.where()} is not a file: add this line where your config takes {rc} "
            f"from: {line}"
        )
    try:
        append_line(target.target, line)
    except OSError as e:
        raise UsageError(
            f"cannot write {shown(target.target)}: {e.strerror}; add this line to it yourself: {line}"
        ) from None
    term.line(f"Added to {target.where()}: {line}")
    if target.source is not None and not target.linked:
        term.line(f"The next `sys apply` copies it to {rc}.")
    return 0
