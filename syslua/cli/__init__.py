"""The `sys` command line (typer). One module per command under `syslua.cli.commands`.

This module only declares commands and their options; each command body
imports its implementation lazily, so `sys --help` stays fast. Failures are
data until they reach `main`, which maps `SysluaError`s to their message and
exit code (0 ok, 1 apply failed, 2 usage/configuration, 3 lock held,
4 `plan --exit-code` with pending changes, 130 interrupted); anything else
is a bug, printed as `Internal error: ...` with its traceback, exit 70.
`main` also installs the SIGINT/SIGTERM handler (`cli/signals.py`).
"""

# No `from __future__ import annotations` here: typer reads the commands'
# signatures, and string annotations would be compiled and evaluated again
# each time it does (twice per command, a millisecond of every start).
import gc as _gc  # the module: `gc` below is the command
import os
import sys
import time
from collections.abc import Callable, Iterator, MutableMapping
from functools import partial
from pathlib import Path
from typing import Annotated, Any

# A run allocates many small, short-lived, acyclic objects (declarations,
# items): collecting cycles less often saves a tenth of a large evaluation.
# Importing this module is how `sys` starts, so the threshold is raised here,
# before typer and click are imported: their import alone would otherwise
# trigger some thirty collections (about 4 ms of every command).
GC_THRESHOLD = (100_000, 50, 100)
_gc.set_threshold(*GC_THRESHOLD)

import click  # noqa: E402  (after the threshold, on purpose; for annotations)
import typer  # noqa: E402  (after the threshold, on purpose)

app = typer.Typer(
    name="sys",
    help="syslua: describe your machine in Lua, preview with `sys plan`, converge with `sys apply`.",
    no_args_is_help=True,
    # Our own --install-completion / --show-completion (cli/completion.py):
    # typer's take no shell name and edit rc files in place.
    add_completion=False,
    # click itself says "Did you mean ...?" once; typer's would add it again.
    suggest_commands=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
snapshot_app = typer.Typer(
    help="Show, tag and delete snapshots.",
    no_args_is_help=True,
    suggest_commands=False,
    rich_markup_mode=None,
)
app.add_typer(snapshot_app, name="snapshot")

ConfigArg = Annotated[
    Path | None,
    typer.Argument(
        help="Config file, or a directory holding sys.lua or init.lua (default: ./sys.lua, "
        "./init.lua, the same in ~/.config/syslua/, then the config of the current snapshot).",
        show_default=False,
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json", help="Machine output on stdout; logs go to stderr. `-o json` is the same."
    ),
]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        help="Parallel workers (default: enough for I/O-bound work, at least 4).",
    ),
]
FactOpt = Annotated[
    list[str] | None, typer.Option("--fact", help="Extra fact k=v (repeatable; dotted keys nest).")
]
VerboseOpt = Annotated[
    int, typer.Option("--verbose", "-v", count=True, help="Show command output and more detail.")
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Only show errors.")]
NoColorOpt = Annotated[
    bool, typer.Option("--no-color", help="Disable colour (NO_COLOR is respected too).")
]
ImpureOpt = Annotated[
    bool,
    typer.Option("--impure", help="Allow os.execute, io.popen and writing files while evaluating."),
]
NoopOpt = Annotated[
    bool, typer.Option("--noop", help="Noop mode: show what would change, change nothing.")
]
WaitOpt = Annotated[
    bool, typer.Option("--wait", help="Wait for another syslua run to finish instead of failing.")
]
DepthOpt = Annotated[
    int, typer.Option("--max-depth", min=1, help="Maximum nesting of apply children.")
]
MaxUnpackOpt = Annotated[
    str,
    typer.Option(
        "--max-unpack",
        metavar="SIZE",
        help="Largest size a package archive may unpack to (e.g. 4GiB, 500M, bytes); "
        "an archive also may not unpack to more than 200 times its size.",
    ),
]
EvalTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--eval-timeout",
        min=0,
        help="Stop evaluating the config after this many seconds (0: no limit).",
    ),
]
DEFAULT_EVAL_TIMEOUT = 60.0  # syslua.eval.lua.DEFAULT_EVAL_TIMEOUT, without importing it here


def _complete_snapshot(incomplete: str) -> list[tuple[str, str]]:
    """Snapshot ids and tags for the shell's completion (`sys rollback <TAB>`)."""
    from syslua.cli.completion import snapshot_ids

    return snapshot_ids(incomplete)


def _version(value: bool) -> None:
    if value:
        from syslua.cli.version import version_line

        typer.echo(version_line())
        raise typer.Exit()


def _show_completion(value: bool) -> None:
    if value:
        from syslua.cli import completion

        raise typer.Exit(completion.show(_common(), completion.shell_after("--show-completion")))


def _install_completion(value: bool) -> None:
    if value:
        from syslua.cli import completion

        raise typer.Exit(
            completion.install(_common(), completion.shell_after("--install-completion"))
        )


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            is_eager=True,
            callback=_version,
            help="Print the versions of syslua, LuaJIT and Python, and exit.",
        ),
    ] = False,
    show_completion: Annotated[
        bool,
        typer.Option(
            "--show-completion",
            is_eager=True,
            callback=_show_completion,
            help="Print the completion script of a shell, named after the option (bash, zsh or "
            'fish; default: $SHELL\'s), e.g. eval "$(sys --show-completion bash)".',
        ),
    ] = False,
    install_completion: Annotated[
        bool,
        typer.Option(
            "--install-completion",
            is_eager=True,
            callback=_install_completion,
            help="Install completion for a shell, named after the option (bash, zsh or fish; "
            "default: $SHELL's).",
        ),
    ] = False,
) -> None:
    pass  # the options above act on their own and exit; the help is the app's


_no_color = False  # --no-color of this command, for the error line `main` prints
started: float | None = None  # when `main` began: the lock records it


def _common(json_: bool = False, verbose: int = 0, quiet: bool = False, no_color: bool = False):  # type: ignore[no-untyped-def]
    from syslua.cli.output import Terminal

    global _no_color
    _no_color = no_color
    Terminal.new_command()
    return Terminal(
        json_mode=json_, verbosity=-1 if quiet else verbose, color=False if no_color else None
    )


@app.command()
def plan(
    config: ConfigArg = None,
    diff: Annotated[
        bool, typer.Option("--diff", help="Show unified diffs of file content.")
    ] = False,
    json_: JsonOpt = False,
    exit_code: Annotated[
        bool, typer.Option("--exit-code", help="Exit with 4 when changes are pending.")
    ] = False,
    fact: FactOpt = None,
    impure: ImpureOpt = False,
    max_depth: DepthOpt = 10,
    eval_timeout: EvalTimeoutOpt = DEFAULT_EVAL_TIMEOUT,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Show what `sys apply` would change, and why, without touching anything.

    \b
    Examples:
      sys plan
      sys plan --diff ~/dotfiles/sys.lua
      sys plan --exit-code -q             # exit 4 when changes are pending
    """
    from syslua.cli.commands import plan as cmd

    term = _common(json_, verbose, quiet, no_color)
    raise typer.Exit(
        cmd.run(
            term,
            config,
            diff=diff,
            exit_code=exit_code,
            facts=fact or [],
            impure=impure,
            max_depth=max_depth,
            eval_timeout=eval_timeout,
        )
    )


@app.command()
def apply(
    config: ConfigArg = None,
    noop: NoopOpt = False,
    health_check_only: Annotated[
        bool,
        typer.Option(
            "--health-check-only",
            "--monitor-only",
            help="Run only health checks; change nothing (--monitor-only: CCM's name).",
        ),
    ] = False,
    json_: JsonOpt = False,
    jobs: JobsOpt = None,
    fact: FactOpt = None,
    impure: ImpureOpt = False,
    max_depth: DepthOpt = 10,
    message: Annotated[
        str | None, typer.Option("--message", "-m", help="Message recorded with the snapshot.")
    ] = None,
    wait: WaitOpt = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Overwrite files edited by hand since the last apply; the edits are kept "
            "in a snapshot that `sys rollback` returns to.",
        ),
    ] = False,
    max_unpack: MaxUnpackOpt = "4GiB",
    eval_timeout: EvalTimeoutOpt = DEFAULT_EVAL_TIMEOUT,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty",
            help="Apply a config that declares nothing, removing every managed item.",
        ),
    ] = False,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Accepted for the original sys.lua's CLI: every apply repairs drift, "
            "converging each item that no longer matches the config.",
        ),
    ] = False,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Make the machine match the config, atomically.

    \b
    Examples:
      sys apply
      sys apply --noop
      sys apply -m "new vimrc" ~/dotfiles/sys.lua
    """
    from syslua.cli.commands import apply as cmd

    term = _common(json_, verbose, quiet, no_color)
    raise typer.Exit(
        cmd.run(
            term,
            config,
            noop=noop,
            health_check_only=health_check_only,
            jobs=jobs,
            facts=fact or [],
            impure=impure,
            max_depth=max_depth,
            message=message,
            wait=wait,
            force=force,
            max_unpack=max_unpack,
            eval_timeout=eval_timeout,
            allow_empty=allow_empty,
        )
    )


@app.command()
def rollback(
    snapshot_id: Annotated[
        str | None,
        typer.Argument(
            metavar="ID",
            help="Snapshot to return to (default: the previous one).",
            autocompletion=_complete_snapshot,
        ),
    ] = None,
    noop: NoopOpt = False,
    json_: JsonOpt = False,
    jobs: JobsOpt = None,
    wait: WaitOpt = False,
    max_unpack: MaxUnpackOpt = "4GiB",
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Return the machine to an earlier snapshot.

    \b
    Examples:
      sys rollback                        # to the snapshot before the current one
      sys rollback 20261126-001820-5869
      sys rollback good                   # a tagged snapshot
    """
    from syslua.cli.commands import rollback as cmd

    term = _common(json_, verbose, quiet, no_color)
    raise typer.Exit(
        cmd.run(term, snapshot_id, noop=noop, jobs=jobs, wait=wait, max_unpack=max_unpack)
    )


@app.command()
def add(
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
    json_: JsonOpt = False,
    fact: FactOpt = None,
    impure: ImpureOpt = False,
    max_depth: DepthOpt = 10,
    wait: WaitOpt = False,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Take files edited by hand back into the config (over their source files).

    \b
    Examples:
      sys add ~/.gitconfig
      sys add ~/.config/nvim ~/.tmux.conf --to ~/dotfiles/home
    """
    from syslua.cli.commands import add as cmd

    term = _common(json_, 0, quiet, no_color)
    raise typer.Exit(
        cmd.run(
            term,
            targets,
            config=config,
            to=to,
            facts=fact or [],
            impure=impure,
            max_depth=max_depth,
            wait=wait,
        )
    )


@app.command()
def destroy(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be removed and restored.")
    ] = False,
    json_: JsonOpt = False,
    jobs: JobsOpt = None,
    wait: WaitOpt = False,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Remove everything syslua manages and restore every original (`sys rollback` undoes it).

    \b
    Examples:
      sys destroy --dry-run
      sys destroy
    """
    from syslua.cli.commands import destroy as cmd

    term = _common(json_, verbose, quiet, no_color)
    raise typer.Exit(cmd.run(term, dry_run=dry_run, jobs=jobs, wait=wait))


@app.command()
def history(
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """List snapshots, newest first.

    \b
    Examples:
      sys history
      sys history --json
    """
    from syslua.cli.commands import history as cmd

    raise typer.Exit(cmd.run(_common(json_, 0, False, no_color)))


@app.command()
def status(
    json_: JsonOpt = False,
    exit_code: Annotated[
        bool, typer.Option("--exit-code", help="Exit with 4 when something drifted.")
    ] = False,
    no_color: NoColorOpt = False,
    verbose: VerboseOpt = 0,
) -> None:
    """Show what drifted from the current snapshot (edited, deleted, mode changed).

    \b
    Examples:
      sys status
      sys status -v
      sys status --exit-code || echo "the machine drifted"
    """
    from syslua.cli.commands import status as cmd

    raise typer.Exit(cmd.run(_common(json_, verbose, False, no_color), exit_code=exit_code))


@app.command()
def diff(
    a: Annotated[
        str | None,
        typer.Argument(
            metavar="A",
            help="Snapshot id (default: the previous snapshot).",
            autocompletion=_complete_snapshot,
        ),
    ] = None,
    b: Annotated[
        str | None,
        typer.Argument(
            metavar="B",
            help="Snapshot id (default: the current snapshot).",
            autocompletion=_complete_snapshot,
        ),
    ] = None,
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Compare two snapshots.

    \b
    Examples:
      sys diff                            # the previous snapshot with the current one
      sys diff 20261126-001820-5869 good
    """
    from syslua.cli.commands import diff as cmd

    raise typer.Exit(cmd.run(_common(json_, 0, False, no_color), a, b))


@snapshot_app.command("show")
def snapshot_show(
    snapshot_id: Annotated[
        str | None,
        typer.Argument(
            metavar="ID", help="Snapshot id (default: current).", autocompletion=_complete_snapshot
        ),
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Show one snapshot.

    \b
    Examples:
      sys snapshot show
      sys snapshot show 20261126-001820-5869 --json
    """
    from syslua.cli.commands import snapshot as cmd

    raise typer.Exit(cmd.show(_common(json_), snapshot_id))


@snapshot_app.command("tag")
def snapshot_tag(
    snapshot_id: Annotated[str, typer.Argument(metavar="ID", autocompletion=_complete_snapshot)],
    tag: Annotated[
        str, typer.Argument(metavar="TAG", help="A name; tagged snapshots are kept by gc.")
    ],
) -> None:
    """Tag a snapshot so gc keeps it.

    \b
    Example:
      sys snapshot tag 20261126-001820-5869 good
    """
    from syslua.cli.commands import snapshot as cmd

    raise typer.Exit(cmd.tag(_common(), snapshot_id, tag))


@snapshot_app.command("delete")
def snapshot_delete(
    snapshot_id: Annotated[str, typer.Argument(metavar="ID", autocompletion=_complete_snapshot)],
) -> None:
    """Delete a snapshot (not the current one).

    \b
    Example:
      sys snapshot delete 20261126-001820-5869
    """
    from syslua.cli.commands import snapshot as cmd

    raise typer.Exit(cmd.delete(_common(), snapshot_id))


@app.command()
def gc(
    keep: Annotated[
        int,
        typer.Option(
            "--keep", min=0, help="Snapshots to keep besides the current and tagged ones."
        ),
    ] = 10,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be removed.")
    ] = False,
    json_: JsonOpt = False,
    wait: WaitOpt = False,
) -> None:
    """Drop old snapshots, then store objects nothing refers to.

    \b
    Examples:
      sys gc --dry-run
      sys gc --keep 3
    """
    from syslua.cli.commands import gc as cmd

    raise typer.Exit(cmd.run(_common(json_), keep=keep, dry_run=dry_run, wait=wait))


@app.command()
def init(
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

    term = _common(False, verbose, quiet, no_color)
    if from_ is None:
        if apply_:
            raise UsageError("--apply goes with --from URL: `sys init --from URL --apply`")
        from syslua.cli.commands import init as cmd

        raise typer.Exit(cmd.run(term, directory, stubs_only=stubs))
    if stubs:
        raise UsageError("--stubs and --from cannot be used together")
    from syslua.cli.commands import repo

    raise typer.Exit(
        repo.init_from(term, from_, directory, apply=apply_, facts=fact or [], jobs=jobs)
    )


@app.command()
def pull(
    directory: Annotated[
        Path | None,
        typer.Argument(
            metavar="DIR",
            help="The clone to update (default: the current directory when it holds a config, "
            "else the directory of the config `sys plan` uses).",
            show_default=False,
        ),
    ] = None,
    fact: FactOpt = None,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Update a config cloned with `sys init --from` (git pull --ff-only), then show the new plan.

    \b
    Examples:
      sys pull                            # in the clone, or for ~/.config/syslua
      sys pull ~/dotfiles && sys apply ~/dotfiles/sys.lua
    """
    from syslua.cli.commands import repo

    term = _common(False, verbose, quiet, no_color)
    raise typer.Exit(repo.pull(term, directory, facts=fact or []))


@app.command()
def env(
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
    from syslua.cli.commands import env as cmd

    raise typer.Exit(cmd.run(_common(), shell))


@app.command()
def doctor(
    quick: Annotated[
        bool,
        typer.Option("--quick", help="Hash a sample of the store's objects, not every one."),
    ] = False,
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Check that syslua can work here: the Lua runtime, permissions, the lock, failed
    journals, the store, the shell's env line, PATH and the config. Exit 1 when a check fails.

    \b
    Examples:
      sys doctor
      sys doctor --quick          # hash a sample of the store, not all of it
    """
    from syslua.cli.commands import doctor as cmd

    raise typer.Exit(cmd.run(_common(json_, 0, False, no_color), quick=quick))


@app.command()
def info(
    config: ConfigArg = None,
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Show what syslua sees here: the platform, user and paths, the config it
    would use (and the inputs its syslua.lock pins), and the current snapshot.
    Reads only.

    \b
    Examples:
      sys info
      sys info --json
    """
    from syslua.cli.commands import info as cmd

    raise typer.Exit(cmd.run(_common(json_, 0, False, no_color), config))


@app.command()
def update(
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
        bool, typer.Option("--dry-run", help="Show what would change; do not write the lock.")
    ] = False,
    commit: Annotated[
        bool,
        typer.Option(
            "--commit", help="Then commit syslua.lock (alone) in the config's git repository."
        ),
    ] = False,
    json_: JsonOpt = False,
    fact: FactOpt = None,
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
    from syslua.cli.commands import update as cmd

    raise typer.Exit(
        cmd.run(
            _common(json_, 0, quiet, no_color),
            names or [],
            config=config,
            names=input_ or [],
            dry_run=dry_run,
            facts=fact or [],
            commit=commit,
        )
    )


def _output_synonym(argv: list[str], group: click.Group) -> list[str]:
    """The original sys.lua's `-o json` / `--output json`: `--json`, on the
    commands that have `--json` (elsewhere the option is left for click to refuse).
    Its default, `-o text`, is the plain output: the option is dropped."""
    joined = {f"{o}{v}" for o in ("-o", "-o=", "--output=") for v in ("json", "text")}
    if not any(a in joined or a in ("-o", "--output") for a in argv):
        return argv
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out += argv[i:]
            break
        if a in ("-o", "--output") and i + 1 < len(argv) and argv[i + 1] in ("json", "text"):
            out += ["--json"] if argv[i + 1] == "json" else []
            i += 2
            continue
        if a in joined:
            out += ["--json"] if a.endswith("json") else []
        else:
            out.append(a)
        i += 1
    if out != argv and not _has_json(out, group):
        return argv
    return out


def _has_json(argv: list[str], group: click.Group) -> bool:
    """Whether the command these arguments name (in `group`) takes `--json`."""
    import click

    command: click.Command = group
    for word in argv:
        if word.startswith("-"):
            continue
        if not isinstance(command, click.Group):
            break
        sub = command.get_command(click.Context(command), word)
        if sub is None:
            break
        command = sub
    return any("--json" in getattr(p, "opts", ()) for p in command.params)


COMPLETE_VAR = "_SYS_COMPLETE"  # set by the completion scripts (cli/completion.py)


def main() -> None:
    """Entry point of `sys` and `python -m syslua`."""
    _gc.set_threshold(*GC_THRESHOLD)  # again: a caller may have changed it since the import
    from syslua.cli import signals
    from syslua.errors import Interrupted, SysluaError

    global _no_color, started
    _no_color = False
    started = time.time()
    if os.environ.get(COMPLETE_VAR):
        # The completion script asks for candidates: typer's handlers for bash, zsh and fish.
        from typer.completion import completion_init

        completion_init()
    try:
        with signals.handling():
            group = click_app(app)
            group(args=_output_synonym(sys.argv[1:], group), complete_var=COMPLETE_VAR)
    except Interrupted as e:  # Ctrl-C or SIGTERM before anything changed
        sys.stderr.write(e.message + "\n")
        sys.exit(e.exit_code)
    except SysluaError as e:
        from syslua.cli.output import Terminal

        Terminal(color=False if _no_color else None).error(e.render())
        sys.exit(e.exit_code)
    except Exception as e:  # a bug: say so, with everything needed to report it
        internal_error(e)
        sys.exit(INTERNAL_ERROR)


def click_app(typer_app: typer.Typer) -> click.Group:
    """The click group of `typer_app`, as typer makes it, except that each command
    is made only when click asks for it: `sys plan` then inspects one function's
    signature instead of all of them (a few ms of every run). `--help` lists
    every command, so it makes them all, in the same order."""
    import copy

    from typer.main import get_command_name, get_group, solve_typer_info_defaults

    def group_of(commands: list[Any], groups: list[Any], top: bool = False) -> click.Group:
        # `typer_app` with only these commands and sub-groups, made by typer itself.
        # Only the top group keeps the app's options (--version...): a command is
        # taken out of its group, and making the options again would be wasted.
        shell = copy.copy(typer_app)
        shell.registered_commands, shell.registered_groups = commands, groups
        if not top:
            shell.registered_callback = None
        return get_group(shell)

    makers: dict[str, Callable[[], click.Group]] = {}
    for command in typer_app.registered_commands:
        name = command.name or get_command_name(command.callback.__name__)  # type: ignore[union-attr]
        makers[name] = partial(group_of, [command], [])
    for group in typer_app.registered_groups:
        group_name = solve_typer_info_defaults(group).name
        assert group_name, "a sub-group without a name would merge its commands into the top"
        makers[group_name] = partial(group_of, [], [group])
    top = group_of([], [], top=True)
    top.commands = _LazyCommands(makers)
    return top


class _LazyCommands(MutableMapping[str, click.Command]):
    """A group's commands by name, in declaration order. `makers[name]()` gives a
    group holding the command `name`; it is called the first time `name` is looked up."""

    def __init__(self, makers: dict[str, Callable[[], click.Group]]) -> None:
        self._makers = makers
        self._commands: dict[str, click.Command | None] = dict.fromkeys(makers)

    def __getitem__(self, name: str) -> click.Command:
        command = self._commands[name]
        if command is None:
            command = self._commands[name] = self._makers[name]().commands[name]
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)


INTERNAL_ERROR = 70  # EX_SOFTWARE: a bug in syslua, not in the user's config


def internal_error(e: BaseException) -> None:
    import traceback

    sys.stderr.write(f"Internal error: {type(e).__name__}: {e}\n")
    sys.stderr.write("".join(traceback.format_exception(e)))
    sys.stderr.write(
        "This is a bug in syslua. Please report it with the traceback above and the command you ran.\n"
    )
    sys.stderr.flush()
