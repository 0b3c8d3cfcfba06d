"""`sys update [NAME...]`: resolve the inputs of a config in the original's
entry form again, and rewrite `syslua.lock` beside it.

Without names every input (and every input of an input) is resolved anew;
with names only those. A name the config does not declare is a usage error.
Arguments that look like paths (`x.lua`, `a/b`, `.`, or a file or a
directory holding a config here) name the config, as in the original's
`sys update [CONFIG] [-i NAME]`."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import FactOpt, JsonOpt, NoColorOpt, QuietOpt, VerboseOpt, dry_run_option

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.eval.inputs import Resolution
    from syslua.execute.update import Row


def command(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[NAME...]",
            help="Inputs to resolve again (default: all). A path (x.lua, a/b, .) names the config.",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Config file (default: as for sys plan)."),
    ] = None,
    input_: Annotated[
        list[str] | None,
        typer.Option(
            "--input", "-i", metavar="NAME", help="An input to resolve again (repeatable)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, dry_run_option("Show what would change; do not write the lock.")
    ] = False,
    commit: Annotated[
        bool,
        typer.Option(
            "--commit", help="Then commit syslua.lock (alone) in the config's git repository."
        ),
    ] = False,
    json_: JsonOpt = False,
    fact: FactOpt = None,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Resolve the inputs of a config in the original sys.lua's entry form again
    (git inputs to the commit their ref names now) and rewrite syslua.lock beside it.

    \b
    Examples:
      sys update                  # every input
      sys update dotfiles         # only this one
      sys update --dry-run
    """
    raise typer.Exit(
        run(
            terminal(json_, verbose, quiet, no_color),
            names or [],
            config=config,
            names=input_ or [],
            dry_run=dry_run,
            facts=fact or [],
            commit=commit,
        )
    )


def _is_path(arg: str) -> bool:
    """A config file or directory, not an input name: `x.lua`, `a/b`, `.`, `~...`,
    a file here, or a directory here that holds a config."""
    from syslua.paths import config_in

    if arg.endswith(".lua") or os.sep in arg or arg in (".", "..") or arg.startswith("~"):
        return True
    p = Path(arg)
    return p.is_file() or (p.is_dir() and config_in(p) is not None)


def run(
    term: "Terminal",
    args: list[str],
    *,
    config: Path | None,
    names: list[str],
    dry_run: bool,
    facts: list[str],
    commit: bool = False,
) -> int:
    from syslua.cli import signals
    from syslua.cli.commands.common import config_found
    from syslua.cli.machine import JSON_FORMAT
    from syslua.errors import UsageError
    from syslua.execute.update import changes, check_repository, commit_lock, update_inputs
    from syslua.paths import Paths

    config, wanted = _config_and_names(args, config, names)
    paths = Paths.from_env()
    # It rewrites syslua.lock beside the config: a file found here that is
    # not the current snapshot's config is refused, but for a dry run.
    path = config_found(
        term,
        config,
        paths,
        example="sys update --config path/to/init.lua",
        changes=None if dry_run else "sys update --config {}",
    )
    if commit:
        if dry_run:
            raise UsageError("--commit and --dry-run do not go together")
        check_repository(path.parent)
    term.log(f"Resolving the inputs of {path.name}...")
    # a signal before the lock's rename stops with nothing written; one
    # during its write waits for the rename (then exit 130, the lock kept)
    stop = signals.current()
    resolution = update_inputs(
        path, paths, wanted=wanted, facts=facts, dry_run=dry_run, guard=stop.critical
    )
    if resolution is None:
        if term.json_mode:
            term.json({"format": JSON_FORMAT, "config": str(path), "lock": None, "inputs": []})
        else:
            term.line(
                f"{path.name} declares no inputs; nothing to update. (`sys update` resolves "
                "the inputs syslua.lock pins; to fetch new commits of the config's repository, "
                "run `sys pull`, or `sys pull --apply` to apply them too.)"
            )
        return 0
    rows = changes(resolution)
    if term.json_mode:
        term.json(
            {
                "format": JSON_FORMAT,
                "config": str(path),
                "lock": str(resolution.lock),
                "dry_run": dry_run,
                "written": resolution.lock_written,
                "inputs": rows,
            }
        )
        return signals.stopped_after(0)
    _show(term, rows, resolution, dry_run)
    if commit and not stop.requested:
        with stop.critical():  # a commit a signal stopped half-way would leave index.lock
            subject = commit_lock(resolution.lock, rows)
        if subject is None:
            term.line("Nothing to commit: the lock file is as committed.")
        else:
            term.line(f"Committed {resolution.lock.name}: {subject}")
    return signals.stopped_after(0)


def _config_and_names(
    args: list[str], config: Path | None, names: list[str]
) -> tuple[Path | None, list[str]]:
    """The config and the input names the arguments give (see `_is_path`)."""
    from syslua.errors import UsageError

    wanted = list(names)
    for arg in args:
        if _is_path(arg):
            if config is not None:
                raise UsageError(f"two configs given: {config} and {arg}")
            config = Path(os.path.expanduser(arg))
        else:
            wanted.append(arg)
    return config, wanted


def _show(term: "Terminal", rows: "list[Row]", resolution: "Resolution", dry_run: bool) -> None:
    from syslua.execute.update import short

    would = "Would update" if dry_run else "Updated"
    for r in rows:
        if r["change"] == "updated":
            term.line(f"  ~ {would} {r['name']}: {short(r['old'])} -> {short(r['new'])}")
        elif r["change"] == "added":
            term.line(f"  + {'Would add' if dry_run else 'Added'} {r['name']} ({short(r['new'])})")
        elif r["change"] == "removed":
            term.line(f"  - {'Would remove' if dry_run else 'Removed'} {r['name']}")
    same = [str(r["name"]) for r in rows if r["change"] == "unchanged"]
    if same:
        term.line(f"  = Unchanged: {', '.join(same)}")
    changed = [r for r in rows if r["change"] != "unchanged"]
    if dry_run:
        term.line("Dry run: the lock file was not written.")
    elif not changed and not resolution.lock_written:
        term.line("All inputs are up to date.")
    else:
        term.line(f"Lock file updated: {resolution.lock}")
