"""`sys init [DIR]`: a starter sys.lua, and editor support for lua-language-server:
type stubs copied into DIR/.syslua/types and a .luarc.json that points there
(`syslua/execute/starter.py` writes them). `sys init --stubs [DIR]` refreshes
the stubs beside an existing config; `sys init --from URL` clones a config
repository instead (`cli/commands/repo.py`).

Nothing that exists is overwritten (the stubs, syslua's own copies, are
refreshed): each file is written, or left alone because it exists, and the
output says which, file by file."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import FactOpt, JobsOpt, NoColorOpt, QuietOpt, VerboseOpt, dry_run_option

if TYPE_CHECKING:
    from syslua.cli.output import Terminal


def command(
    directory: Annotated[
        Path | None,
        typer.Argument(metavar="DIR", help="Where to write sys.lua (default: ~/.config/syslua)."),
    ] = None,
    stubs: Annotated[
        bool,
        typer.Option(
            "--stubs",
            help="Only refresh the type stubs in DIR/.syslua/types (after an upgrade); "
            "sys.lua is not touched.",
        ),
    ] = False,
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="URL",
            help="Clone this git repository into DIR (missing or empty) with the system git, "
            "then show its plan.",
            show_default=False,
        ),
    ] = None,
    apply_: Annotated[
        bool,
        typer.Option("--apply", help="With --from: apply the cloned config instead of planning."),
    ] = False,
    noop: Annotated[
        bool, dry_run_option("Only say what would be written (or cloned); change nothing.")
    ] = False,
    fact: FactOpt = None,
    jobs: JobsOpt = None,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Write a starter sys.lua, type stubs and a .luarc.json for lua-language-server;
    files that exist are left alone, and each file is listed as written or left alone.
    With --from URL: clone a config repository instead, and plan or --apply it.

    \b
    Examples:
      sys init
      sys init ~/dotfiles && sys plan ~/dotfiles/sys.lua
      sys init --stubs ~/dotfiles         # after upgrading syslua
      sys init --from https://example.org/me/dotfiles.git --apply
    """
    from syslua.errors import UsageError

    term = terminal(False, verbose, quiet, no_color)
    if from_ is None:
        if apply_:
            raise UsageError("--apply goes with --from URL: `sys init --from URL --apply`")
        raise typer.Exit(run(term, directory, stubs_only=stubs, dry_run=noop))
    if stubs:
        raise UsageError("--stubs and --from cannot be used together")
    from syslua.cli.commands import repo

    raise typer.Exit(
        repo.init_from(
            term, from_, directory, apply=apply_, facts=fact or [], jobs=jobs, dry_run=noop
        )
    )


def run(
    term: "Terminal", directory: Path | None, *, stubs_only: bool = False, dry_run: bool = False
) -> int:
    """Write each file that is not there yet and leave every existing one alone,
    saying which is which: a line per file, `written: PATH` or
    `left alone because it exists: PATH`. The type stubs are syslua's own
    copies and are refreshed every time; `stubs_only` refreshes just them."""
    from syslua.execute.config import default_dir
    from syslua.execute.starter import STUBS, names_stubs, write_starter

    def said(path: Path, written: bool) -> None:
        term.line(f"written: {path}" if written else f"left alone because it exists: {path}")

    target = Path(directory) if directory else default_dir()
    if dry_run:
        return _would_write(term, target, stubs_only)
    done = write_starter(target, stubs_only=stubs_only, on_file=said)
    term.line(f"{'refreshed' if stubs_only else 'written'}: {done.stubs}/ (type stubs)")
    if not done.rc_written and not names_stubs(done.rc):
        term.line(
            f"Left {done.rc} as it was; it does not list {STUBS} in workspace.library: "
            "add it there for completion."
        )
    if not stubs_only:
        term.line(f"Next: sys plan {done.config}")
    return 0


def _would_write(term: "Terminal", target: Path, stubs_only: bool) -> int:
    """`sys init --dry-run`: each file it would write or leave alone; nothing written."""
    from syslua.execute.starter import STUBS

    term.line("Dry run: nothing was written. `sys init` would do this:")
    for name in () if stubs_only else ("sys.lua",):
        _would(term, target / name)
    _would(term, target / ".luarc.json")
    term.line(f"  {'refresh' if stubs_only else 'write'}: {target / STUBS}/ (type stubs)")
    return 0


def _would(term: "Terminal", path: Path) -> None:
    there = path.is_symlink() or path.exists()
    term.line(f"  leave alone because it exists: {path}" if there else f"  write: {path}")
