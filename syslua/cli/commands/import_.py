"""`sys import FORMAT SOURCE`: write a sys.lua from another manager's repository, then plan it."""

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import FactOpt, NoColorOpt, QuietOpt, VerboseOpt, dry_run_option

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.importers import Imported, Options


def command(
    fmt: Annotated[
        str,
        typer.Argument(
            metavar="FORMAT", help="stow, dotbot, chezmoi, rcm, yadm or mirror.", show_default=False
        ),
    ],
    source: Annotated[
        Path,
        typer.Argument(
            metavar="SOURCE",
            help="The repository (dotbot: its install.conf.yaml).",
            show_default=False,
        ),
    ],
    packages: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[PKG]...", help="stow: the packages (default: all).", show_default=False
        ),
    ] = None,
    to: Annotated[
        Path | None,
        typer.Option(
            "--to", metavar="DIR", help="Write sys.lua in DIR (default: at the top of SOURCE)."
        ),
    ] = None,
    target: Annotated[
        Path | None,
        typer.Option(
            "--target", "-t", metavar="DIR", help="stow: the target directory (default: ~)."
        ),
    ] = None,
    dotfiles: Annotated[
        bool, typer.Option("--dotfiles", help="stow: `dot-` in a name is `.` (stow --dotfiles).")
    ] = False,
    suffix: Annotated[
        str | None,
        typer.Option(
            "--suffix", metavar="S", help="mirror: link only files ending in S, without it."
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing sys.lua (kept as sys.lua.orig).")
    ] = False,
    dry_run: Annotated[
        bool, dry_run_option("Print the sys.lua and its plan; write nothing.")
    ] = False,
    fact: FactOpt = None,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Write a sys.lua from a stow, dotbot, chezmoi, rcm, yadm or mirrored repository.

    \b
    The repository's files are never changed. Then the plan against the
    current home is printed: on a home the tool installed, nothing to do.

    \b
    Examples:
      sys import stow ~/dotfiles
      sys import dotbot ~/dotfiles/install.conf.yaml
      sys import chezmoi ~/.local/share/chezmoi --to ~/dotfiles
      sys import mirror ~/dotfiles --suffix .symlink --dry-run
    """
    from syslua.importers import Options

    term = terminal(False, verbose, quiet, no_color)
    src = source.expanduser().absolute()
    top = src.parent if src.is_file() else src
    options = Options(
        base=(to.expanduser().absolute() if to is not None else top),
        target=(target.expanduser().absolute() if target is not None else Path.home()),
        packages=list(packages or []),
        dotfiles=dotfiles,
        suffix=suffix,
    )
    raise typer.Exit(run(term, fmt, src, options, force=force, dry_run=dry_run, facts=fact or []))


def run(
    term: "Terminal",
    fmt: str,
    source: Path,
    options: "Options",
    *,
    force: bool,
    dry_run: bool,
    facts: list[str],
) -> int:
    """Translate, write (unless `dry_run`), then plan. Exit codes as `sys plan`'s."""
    import dataclasses

    from syslua.cli.commands import plan
    from syslua.errors import UsageError
    from syslua.importers import ImportError_, translate

    if not source.exists():
        raise UsageError(f"{source} does not exist")
    out = options.base / "sys.lua"
    if out.exists() and not force and not dry_run:
        raise UsageError(
            f"{out} exists: sys import never overwrites it",
            hint=f"Write elsewhere with --to DIR, or replace it (kept as {out}.orig) with --force.",
        )
    try:
        imported = translate(fmt, source, options)
    except ImportError_ as e:
        raise UsageError(str(e)) from None
    if dry_run:
        for line in imported.lua.rstrip("\n").split("\n"):
            term.line(line, whole=True)
        term.line()
        with tempfile.TemporaryDirectory(prefix="syslua-import-") as tmp:
            # The same translation, its sources relative to where it is planned.
            shown = translate(fmt, source, dataclasses.replace(options, base=Path(tmp)))
            planned = Path(tmp, "sys.lua")
            planned.write_text(shown.lua)
            code = plan.run(
                term, planned, diff=False, exit_code=False, facts=facts, impure=False, max_depth=10
            )
        _untranslated(term, imported)
        term.line(f"Dry run: {out} was not written.")
        return code
    options.base.mkdir(parents=True, exist_ok=True)
    if out.exists():
        os.replace(out, out.with_name("sys.lua.orig"))
    out.write_text(imported.lua)
    term.line(f"Wrote {out}: {imported.declarations} declarations from {fmt} ({source}).")
    code = plan.run(term, out, diff=False, exit_code=False, facts=facts, impure=False, max_depth=10)
    _untranslated(term, imported)
    return code


def _untranslated(term: "Terminal", imported: "Imported") -> None:
    if imported.untranslated:
        term.line(
            f"Not translated ({len(imported.untranslated)}; also noted at the top of sys.lua):"
        )
        for why in imported.untranslated:
            term.line(f"  {why}")
