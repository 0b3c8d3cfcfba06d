"""`sys edit PATH [--apply]`: open what a managed path comes from in the
user's editor (`$VISUAL`, then `$EDITOR`, then `vi`): its source file, or
for inline content its declaration, at its line (`+LINE` for editors that
take it); `syslua/execute/editing.py` says which. With `--apply`, the config
is applied once the editor exits, unless it exits with an error."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import FactOpt, NoCacheOpt, NoColorOpt, QuietOpt, VerboseOpt

if TYPE_CHECKING:
    from syslua.cli.output import Terminal

# Editors that open a file at a line given as `+LINE` before it.
LINE_FIRST = frozenset(
    {"vi", "vim", "nvim", "gvim", "view", "vis", "nano", "pico", "emacs", "emacsclient",
     "mg", "jed", "joe", "ne", "micro", "kak", "ed", "ex", "elvis", "nvi", "mvim"}
)  # fmt: skip
EDITOR_FAILED = 1  # the editor exited with an error: nothing applied


def command(
    path: Annotated[
        Path, typer.Argument(metavar="PATH", help="A path the config manages (~/.gitconfig).")
    ],
    apply_: Annotated[
        bool,
        typer.Option("--apply", help="Apply the config once the editor exits without error."),
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Config file (default: as for sys plan)."),
    ] = None,
    fact: FactOpt = None,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """Open the source of a managed file in your editor ($VISUAL, $EDITOR, vi).

    \b
    A file copied or linked from a source opens that source; one with inline
    content opens its declaration in the config, at its line.

    \b
    Examples:
      sys edit ~/.gitconfig
      sys edit ~/.bashrc --apply          # then apply, if the editor exits without error
    """
    term = terminal(False, verbose, quiet, no_color)
    raise typer.Exit(run(term, path, config=config, apply=apply_, facts=fact or []))


def run(term: "Terminal", path: Path, *, config: Path | None, apply: bool, facts: list[str]) -> int:
    from syslua.cli.commands.common import config_found, load_manifest
    from syslua.execute.editing import edit_target
    from syslua.paths import Paths, abbreviate

    paths = Paths.from_env()
    found = config_found(
        term,
        config,
        paths,
        example="sys edit --config path/to/sys.lua PATH",
        changes="sys edit --apply --config {} PATH" if apply else None,
    )
    manifest = load_manifest(term, found, facts=facts, impure=False, max_depth=10, paths=paths)
    wanted = os.path.normpath(os.path.abspath(os.path.expanduser(str(path))))
    target = edit_target(manifest, wanted)
    at = f" at line {target.line}" if target.line else ""
    term.log(
        f"Opening {abbreviate(target.file)}{at} (the {target.what} of {abbreviate(wanted)})..."
    )
    code = _edit(target.file, target.line)
    if code != 0:
        term.error(
            f"the editor exited with {code}"
            + (": nothing was applied (run `sys apply` when ready)" if apply else "")
        )
        return EDITOR_FAILED
    if not apply:
        return 0
    from syslua.cli.commands import apply as apply_cmd

    return apply_cmd.run(
        term,
        found,
        noop=False,
        health_check_only=False,
        jobs=None,
        facts=facts,
        impure=False,
        max_depth=10,
        message=None,
        wait=False,
    )


def editor_argv(file: str, line: int | None) -> list[str]:
    """The command that opens `file` (at `line`) in the user's editor."""
    import shlex

    from syslua.errors import UsageError

    spec = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        argv = shlex.split(spec)
    except ValueError as e:
        raise UsageError(f"cannot read the editor command {spec!r}: {e}") from e
    if not argv:
        argv = ["vi"]
    if line and os.path.basename(argv[0]) in LINE_FIRST:
        argv.append(f"+{line}")
    return [*argv, file]


def _edit(file: str, line: int | None) -> int:
    """Run the editor on the terminal and return its exit code."""
    import subprocess

    from syslua.errors import UsageError

    argv = editor_argv(file, line)
    try:
        return subprocess.run(argv, check=False).returncode
    except FileNotFoundError as e:
        raise UsageError(
            f"the editor {argv[0]!r} was not found: set VISUAL or EDITOR to one that is installed"
        ) from e
    except PermissionError as e:
        raise UsageError(f"the editor {argv[0]!r} cannot be run: {e.strerror}") from e
