"""`sys import FORMAT SOURCE`: write a sys.lua from another manager's repository, then plan it."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.again import again
from syslua.cli.again import command as sys_command
from syslua.cli.options import FactOpt, NoColorOpt, QuietOpt, VerboseOpt, dry_run_option
from syslua.errors import UsageError
from syslua.paths import abbreviate

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.importers import Imported, Options

ORIG = "sys.lua.orig"  # where --force keeps the sys.lua it replaces


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
    FORMAT SOURCE:
      stow DIR [PKG]...   DIR's packages (all by default), linked into -t DIR (~)
      dotbot CONFIG       the install.conf.yaml (links, create, shell)
      chezmoi DIR         the source directory (dot_ names, templates, scripts)
      rcm DIR             with its rcrc, tag-* and host-* folders
      yadm REPO           its alternate files (##os.Linux) as conditions
      mirror DIR          a repository whose top level mirrors ~

    \b
    The sys.lua goes at the top of SOURCE, or in --to DIR; one already
    there is never overwritten (--force keeps it as sys.lua.orig). The
    repository's files are never changed, and nothing is applied: the plan
    against the current home is printed (on a home the tool installed,
    nothing to do), then what could not be translated, with file and line.
    See docs/import.md.

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
    """Translate, write (unless `dry_run`), then plan. Exit codes as `sys plan`'s.
    Steps: check the command line (nothing read yet), translate (the
    repository is only read), write the sys.lua (the old one kept as
    sys.lua.orig with --force), plan it, list what was not translated."""
    from syslua.importers import ImportError_, translate

    out = _checked(fmt, source, options, force=force, dry_run=dry_run)
    try:
        imported = translate(fmt, source, options)
    except ImportError_ as e:
        raise UsageError(str(e)) from None
    if dry_run:
        return _dry_run(term, fmt, source, options, imported, facts, force=force)
    _write(out, imported.lua)
    count = f"{imported.declarations} declaration{'s' if imported.declarations != 1 else ''}"
    term.line(f"Wrote {_shown(out)}: {count} from {fmt} ({_shown(source)}).")
    code = _plan(term, out, out, facts)
    _untranslated(term, imported)
    term.line()
    term.line(f"Next: {sys_command('apply', _shown(out))}", whole=True)
    return code


def _shown(path: Path) -> str:
    return abbreviate(str(path))


def _checked(fmt: str, source: Path, options: "Options", *, force: bool, dry_run: bool) -> Path:
    """The sys.lua to write, once the command line is known to be usable:
    a known FORMAT, an existing SOURCE, a directory to write in, and no
    sys.lua there (a link to one counts) unless --force (or --dry-run,
    which writes nothing), nor a sys.lua.orig that --force would replace."""
    from syslua.importers import FORMATS

    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    if not os.path.lexists(source):
        raise UsageError(f"{_shown(source)} does not exist: nothing to import")
    base = options.base
    if base.exists() and not base.is_dir():
        raise UsageError(f"{_shown(base)} is not a directory: sys.lua cannot be written in it")
    out = base / "sys.lua"
    if not os.path.lexists(out) or dry_run:
        return out
    if not force:
        raise UsageError(
            f"{_shown(out)} exists: sys import never overwrites it",
            hint=f"Write elsewhere with --to DIR, or replace it (kept as sys.lua.orig) with "
            f"--force: {again('import', None, '--force')}",
        )
    orig = out.with_name(ORIG)
    if os.path.lexists(orig):
        raise UsageError(
            f"{_shown(orig)} exists too: --force keeps the current sys.lua there, "
            "so move that one away first"
        )
    return out


def _write(out: Path, text: str) -> None:
    """Write `out`; an existing one (or a link) is first renamed to sys.lua.orig,
    so its content is never lost, and nothing is written through a link."""
    from syslua.fsutil import atomic_write

    if os.path.lexists(out):
        os.replace(out, out.with_name(ORIG))
    atomic_write(out, text.encode())


def _plan(term: "Terminal", planned: Path, shown: Path, facts: list[str]) -> int:
    from syslua.cli.commands import plan

    return plan.run(
        term,
        planned,
        diff=False,
        exit_code=False,
        facts=facts,
        impure=False,
        max_depth=10,
        shown=shown,
    )


def _dry_run(
    term: "Terminal",
    fmt: str,
    source: Path,
    options: "Options",
    imported: "Imported",
    facts: list[str],
    *,
    force: bool,
) -> int:
    """Print the sys.lua and its plan; write nothing in the repository, in
    --to DIR or in the state. The plan is of the same translation written
    in a temporary directory (its sources relative to it), and names the
    sys.lua that would be written wherever it names the config."""
    import tempfile

    from syslua.importers import translate

    out = options.base / "sys.lua"
    for line in imported.lua.rstrip("\n").split("\n"):
        term.line(line, whole=True)  # Lua to copy: never wrapped
    with tempfile.TemporaryDirectory(prefix="syslua-import-") as tmp:
        shown = translate(fmt, source, options.replace(base=Path(tmp)))
        planned = Path(tmp, "sys.lua")
        planned.write_text(shown.lua)
        code = _plan(term, planned, out, facts)
    _untranslated(term, imported)
    term.line()
    term.line(f"Dry run: {_shown(out)} was not written.")
    if os.path.lexists(out) and not force:
        term.line(f"It exists: sys import replaces it only with --force (keeping it as {ORIG}).")
    return code


def _untranslated(term: "Terminal", imported: "Imported") -> None:
    if imported.untranslated:
        term.line()
        term.line(
            f"Not translated ({len(imported.untranslated)}; also noted at the top of sys.lua):"
        )
        for why in imported.untranslated:
            term.line(f"  {why}")
