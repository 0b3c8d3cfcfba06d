"""`sys add PATH...`: take files edited by hand back into the configuration.

It evaluates the config (`--config`, found as `sys plan` finds it), then,
under the state lock, takes each file back (`syslua/execute/take_back.py`
says how): a refusal of any file stops it, nothing changed: exit 1 when the
two sides disagree (the source changed since the last apply too, without
`--force`; or only a mode the declaration sets changed), 2 otherwise (a
path that cannot be taken back). Otherwise it prints what each file became,
the declarations to add for the files nothing managed, and the snapshot it
recorded. Ctrl-C or SIGTERM before it starts copying ends it with nothing
changed; during it, it finishes, then ends (exit 130).
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import (
    DepthOpt,
    FactOpt,
    ImpureOpt,
    JsonOpt,
    NoCacheOpt,
    NoColorOpt,
    QuietOpt,
    VerboseOpt,
    WaitOpt,
    dry_run_option,
)

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.manifest.model import Item
    from syslua.resources.base import TakeBack

REFUSED = 2
CONFLICT = 1  # the source changed too, or a mode the declaration sets: not a usage error


def command(
    targets: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATH...",
            help="Files or directories (every file below) to take back into the config.",
            show_default=False,
        ),
    ],
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="Config file (default: ./sys.lua, ./init.lua, the same in ~/.config/syslua/, "
            "then the config of the current snapshot).",
            show_default=False,
        ),
    ] = None,
    to: Annotated[
        Path | None,
        typer.Option(
            "--to",
            metavar="DIR",
            help="Where files nothing manages are copied, under their path below ~ "
            "(default: <config dir>/dotfiles).",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Copy over a source that changed since the last apply too; its content "
            "is kept first, and `sys rollback` brings it back.",
        ),
    ] = False,
    noop: Annotated[
        bool, dry_run_option("Only show what would be taken back, and where; change nothing.")
    ] = False,
    encrypt: Annotated[
        bool,
        typer.Option(
            "--encrypt",
            help="Encrypt files nothing manages with age into the config (NAME.age), "
            "for -r recipients, else the config's age_recipients, else your identity's public key.",
        ),
    ] = False,
    recipient: Annotated[
        list[str] | None,
        typer.Option(
            "--recipient",
            "-r",
            metavar="RECIPIENT",
            help="With --encrypt: an age recipient (age1... or an SSH public key); repeatable.",
            show_default=False,
        ),
    ] = None,
    json_: JsonOpt = False,
    fact: FactOpt = None,
    impure: ImpureOpt = False,
    max_depth: DepthOpt = 10,
    wait: WaitOpt = False,
    verbose: VerboseOpt = 0,
    no_cache: NoCacheOpt = False,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Take files edited by hand back into the config (over their source files).

    \b
    Examples:
      sys add ~/.gitconfig
      sys add ~/.config/nvim ~/.tmux.conf --to ~/dotfiles/home
      sys add --force ~/.vimrc            # its source changed too: copy over it anyway
      sys add --encrypt ~/.netrc          # into the config as dotfiles/.netrc.age
    """
    term = terminal(json_, verbose, quiet, no_color)
    if recipient and not encrypt:
        from syslua.errors import UsageError

        raise UsageError("-r/--recipient goes with --encrypt: sys add --encrypt -r RECIPIENT PATH")
    raise typer.Exit(
        run(
            term,
            targets,
            config=config,
            to=to,
            force=force,
            noop=noop,
            encrypt_for=recipient or [] if encrypt else None,
            facts=fact or [],
            impure=impure,
            max_depth=max_depth,
            wait=wait,
        )
    )


def run(
    term: "Terminal",
    targets: list[Path],
    *,
    config: Path | None,
    to: Path | None,
    facts: list[str],
    impure: bool,
    max_depth: int,
    wait: bool,
    force: bool = False,
    noop: bool = False,
    encrypt_for: list[str] | None = None,
) -> int:
    from syslua.cli import signals
    from syslua.cli.commands.common import load_manifest, state
    from syslua.execute.take_back import Adding
    from syslua.paths import Paths

    paths = Paths.from_env()
    manifest = load_manifest(
        term,
        config,
        facts=facts,
        impure=impure,
        max_depth=max_depth,
        paths=paths,
        # a config given as an argument would be taken for a path to add
        example="sys add --config path/to/sys.lua PATH",
        # --dry-run changes nothing: like `sys plan`, it uses a config found here
        changes=None if noop else "sys add --config {} PATH",
    )
    if encrypt_for is not None:
        from syslua.execute.take_back import recipients

        encrypt_for = recipients(manifest, encrypt_for)
    adding = Adding(manifest, targets, to, force=force, encrypt_for=encrypt_for)
    with state(paths, term, exclusive=not noop, wait=wait):
        for note in adding.read_current(paths):
            term.warn(note)
        refused = adding.check()
        if refused:
            return _refused(term, refused, config)
        if noop:
            return _report(term, adding.steps, adding.skipped, None, dry_run=True)
        with signals.current().critical():  # Ctrl-C waits for its end
            snapshot = adding.act()
    return signals.stopped_after(_report(term, adding.steps, adding.skipped, snapshot))


def _refused(term: "Terminal", refused: "list[TakeBack]", config: Path | None) -> int:
    """Why nothing was taken back, then the ways on, each a command that works
    as printed (a `sys apply` of the same config)."""
    from syslua.cli.again import command

    for step in refused:
        term.error(step.message)
        if step.detail:
            term.lines(step.detail, always=True)
    term.line("Nothing was changed.", always=True)
    given = (str(config),) if config is not None else ()
    for step in refused:
        for what, words in step.ways:
            term.line(f"  {what}: {command('apply', *given, *words)}", always=True)
    return CONFLICT if all(step.conflict for step in refused) else REFUSED


def _report(
    term: "Terminal",
    steps: "list[tuple[str, Item | None, TakeBack]]",
    skipped: list[str],
    snapshot: str | None,
    *,
    dry_run: bool = False,
) -> int:
    from syslua.cli.machine import JSON_FORMAT
    from syslua.paths import abbreviate

    declarations = [s.declaration for _, _, s in steps if s.declaration]
    if term.json_mode:
        term.json(
            {
                "format": JSON_FORMAT,
                "added": [
                    {"path": path, "managed": item is not None, "message": step.message}
                    | ({"declaration": step.declaration} if step.declaration else {})
                    for path, item, step in steps
                ],
                "skipped": skipped,
                "snapshot": snapshot,
                "dry_run": dry_run,
            }
        )
        return 0
    if dry_run:
        term.line("Dry run: nothing was changed. Without --dry-run, sys add would do this:")
    for _, _, step in steps:
        term.line(f"  {step.message}" if dry_run else step.message)
    for path in skipped:
        term.line(f"{abbreviate(path)}: skipped (not a regular file)")
    if declarations:
        term.line()
        term.line(
            "Add this declaration to your config:"
            if len(declarations) == 1
            else "Add these declarations to your config:"
        )
        for text in declarations:
            term.line(f"  {text}")
    if snapshot:
        term.line(f"Recorded snapshot {snapshot}: what was taken back counts as applied.")
    return 0
