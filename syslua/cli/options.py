"""The options several commands share, declared once for typer.

Each command declares its own options in its module under
`syslua.cli.commands`, beside its body; these are the ones they have in
common (`--json`, `--jobs`, `-v`, `--no-color`...), and the completion of
snapshot ids.

No `from __future__ import annotations` here or in the command modules:
typer reads each command's signature (twice), and string annotations would
be compiled and evaluated each time, some ten milliseconds for `--help`.
"""

from pathlib import Path
from typing import Annotated

import typer

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
FactsFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--facts",
        metavar="FILE",
        help="More facts from a YAML or JSON file, merged over the system and user facts "
        "(--fact wins over it).",
        show_default=False,
    ),
]
HieraOpt = Annotated[
    Path | None,
    typer.Option(
        "--hiera",
        metavar="FILE",
        help="A CCM manifest: hiera data (data, hierarchy, overrides) from FILE, "
        "resolved against the facts and merged over the manifest's own data.",
        show_default=False,
    ),
]
ReadEnvOpt = Annotated[
    bool,
    typer.Option(
        "--read-env/--no-read-env",
        help="A CCM manifest: read the .env file beside it into Environ.",
    ),
]
VerboseOpt = Annotated[
    int,
    typer.Option(
        "--verbose",
        "-v",
        count=True,
        show_default=False,
        help="Show command output and more detail; -vv also the time of each phase and the "
        "files the config read.",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Only show errors.")]
NoColorOpt = Annotated[
    bool, typer.Option("--no-color", help="Disable colour (NO_COLOR is respected too).")
]
NoPagerOpt = Annotated[
    bool,
    typer.Option(
        "--no-pager",
        help="Do not send the output through a pager ($SYS_PAGER, $PAGER, less -FRX) on a "
        "terminal.",
    ),
]
ImpureOpt = Annotated[
    bool,
    typer.Option("--impure", help="Allow os.execute, io.popen and writing files while evaluating."),
]
# `--no-cache`: read by `commands.common.load_manifest` (set by the option's
# callback, which click calls for every run, given or not).
no_cache = False


def _no_cache(value: bool) -> bool:
    global no_cache
    no_cache = bool(value)
    return value


NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Evaluate the config even when the evaluation cache holds its manifest "
        "and nothing it read changed.",
        callback=_no_cache,
    ),
]
NoopOpt = Annotated[
    bool,
    typer.Option("--noop", "--dry-run", help="Show what would change; change nothing."),
]


def dry_run_option(help: str) -> typer.models.OptionInfo:
    """`--dry-run` (also `--noop`, as on `sys apply`) of a command that changes something."""
    return typer.Option("--dry-run", "--noop", help=help)


WaitOpt = Annotated[
    bool, typer.Option("--wait", help="Wait for another syslua run to finish instead of failing.")
]
# The help group of options kept for CCM's and the original sys.lua's command
# lines: listed after the others (`cli._Command`).
COMPATIBILITY = "Compatibility options"
DepthOpt = Annotated[
    int,
    typer.Option(
        "--max-depth",
        min=1,
        help="Maximum nesting of apply children.",
        rich_help_panel=COMPATIBILITY,
    ),
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


def complete_snapshot(incomplete: str) -> list[tuple[str, str]]:
    """Snapshot ids and tags for the shell's completion (`sys rollback <TAB>`)."""
    from syslua.cli.completion import snapshot_ids

    return snapshot_ids(incomplete)
