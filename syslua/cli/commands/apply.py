"""`sys apply`: converge the machine to the config, atomically.

Evaluation errors exit 2 before any state is touched; then the state lock is
taken (exit 3 when held), an interrupted apply is rolled back, and the apply
runs. Exit 0 when every item converged, 1 when the apply failed (and was
rolled back, or refused before anything ran because the plan marks items `!`
as unable to be applied), 2 when it refused to overwrite files edited by hand since the
last apply (without `--force`, or `--overwrite PATH` naming them; nothing
was changed), when it would remove
every managed item and `--allow-empty` was not given, or when the current
snapshot is corrupt or missing and it would remove items an older snapshot
manages (`--from-snapshot ID` names the snapshot to plan them against), 130 when Ctrl-C or
SIGTERM stopped it (rolled back too).

How the run ends on the terminal (the summary, the verdict and the exit
code) is `cli/outcome.py`'s, shared with `sys rollback` and `sys destroy`.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import (
    COMPATIBILITY,
    DEFAULT_EVAL_TIMEOUT,
    ConfigArg,
    DepthOpt,
    EvalTimeoutOpt,
    FactOpt,
    FactsFileOpt,
    HieraOpt,
    ImpureOpt,
    JobsOpt,
    JsonOpt,
    MaxUnpackOpt,
    NoCacheOpt,
    NoColorOpt,
    NoopOpt,
    QuietOpt,
    ReadEnvOpt,
    VerboseOpt,
    WaitOpt,
)

if TYPE_CHECKING:
    from syslua.cli.commands.common import DataFlags
    from syslua.cli.output import Terminal


# Options declared here to keep `command` short.
_MonitorOnly = Annotated[
    bool,
    typer.Option(
        "--monitor-only",
        help="CCM's name for --health-check-only.",
        rich_help_panel=COMPATIBILITY,
    ),
]
_Repair = Annotated[
    bool,
    typer.Option(
        "--repair",
        help="Accepted for the original sys.lua's CLI: every apply repairs drift, "
        "converging each item that no longer matches the config.",
        rich_help_panel=COMPATIBILITY,
    ),
]
_AllowEmpty = Annotated[
    bool,
    typer.Option(
        "--allow-empty",
        help="Apply a config that declares nothing, removing every managed item.",
    ),
]


def command(
    config: ConfigArg = None,
    message: Annotated[
        str | None, typer.Option("--message", "-m", help="Message recorded with the snapshot.")
    ] = None,
    noop: NoopOpt = False,
    verbose: VerboseOpt = 0,
    no_cache: NoCacheOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Overwrite files edited by hand since the last apply; the edits are kept "
            "in a snapshot that `sys rollback` returns to.",
        ),
    ] = False,
    overwrite: Annotated[
        list[Path] | None,
        typer.Option(
            "--overwrite",
            metavar="PATH",
            help="Overwrite this path edited by hand since the last apply (repeatable); "
            "other edited paths are left as they are, and the rest is applied.",
            show_default=False,
        ),
    ] = None,
    health_check_only: Annotated[
        bool,
        typer.Option("--health-check-only", help="Run only health checks; change nothing."),
    ] = False,
    wait: WaitOpt = False,
    jobs: JobsOpt = None,
    fact: FactOpt = None,
    facts_file: FactsFileOpt = None,
    hiera: HieraOpt = None,
    read_env: ReadEnvOpt = True,
    impure: ImpureOpt = False,
    allow_empty: _AllowEmpty = False,
    from_snapshot: Annotated[
        str | None,
        typer.Option(
            "--from-snapshot",
            metavar="ID",
            help="When the current snapshot is corrupt or missing, plan removals against "
            "snapshot ID (paths changed since it are edits); without it, such an apply "
            "refuses to remove anything.",
            show_default=False,
        ),
    ] = None,
    max_unpack: MaxUnpackOpt = "4GiB",
    eval_timeout: EvalTimeoutOpt = DEFAULT_EVAL_TIMEOUT,
    no_color: NoColorOpt = False,
    monitor_only: _MonitorOnly = False,
    repair: _Repair = False,
    max_depth: DepthOpt = 10,
) -> None:
    """Make the machine match the config, atomically.

    \b
    Examples:
      sys apply
      sys apply --noop
      sys apply -m "new vimrc" ~/dotfiles/sys.lua
    """
    from syslua.cli.commands.common import DataFlags

    term = terminal(json_, verbose, quiet, no_color)
    raise typer.Exit(
        run(
            term,
            config,
            noop=noop,
            health_check_only=health_check_only or monitor_only,
            jobs=jobs,
            facts=fact or [],
            impure=impure,
            max_depth=max_depth,
            message=message,
            wait=wait,
            force=force,
            overwrite=overwrite or [],
            max_unpack=max_unpack,
            eval_timeout=eval_timeout,
            allow_empty=allow_empty,
            from_snapshot=from_snapshot,
            flags=DataFlags(facts_file, hiera, read_env),
        )
    )


def run(
    term: "Terminal",
    config: Path | None,
    *,
    noop: bool,
    health_check_only: bool,
    jobs: int | None,
    facts: list[str],
    impure: bool,
    max_depth: int,
    message: str | None,
    wait: bool,
    force: bool = False,
    overwrite: list[Path] | None = None,
    max_unpack: str = "4GiB",
    eval_timeout: float | None = None,
    allow_empty: bool = False,
    from_snapshot: str | None = None,
    flags: "DataFlags | None" = None,
) -> int:
    import os
    import time

    from syslua.cli import phases, signals
    from syslua.cli.again import again
    from syslua.cli.commands.common import load_manifest, parse_size, show_skipped, state
    from syslua.cli.outcome import interrupted_early, late, report, reporter_for
    from syslua.errors import Interrupted, UsageError
    from syslua.execute.apply import ApplyOptions, apply_manifest
    from syslua.paths import Paths

    started = time.monotonic()
    unpack_limit = parse_size(max_unpack, "--max-unpack")
    paths = Paths.from_env()
    try:
        with signals.farewell(lambda: interrupted_early(term)):
            manifest = load_manifest(
                term,
                config,
                facts=facts,
                impure=impure,
                max_depth=max_depth,
                paths=paths,
                noop=noop,
                health_check_only=health_check_only,
                eval_timeout=eval_timeout,
                # --noop and --health-check-only change nothing: like `sys plan`,
                # they use a config found here and say so
                changes=None if noop or health_check_only else "sys apply {}",
                flags=flags,
            )
        for kind, text in manifest.messages:
            if kind == "pre_message":
                term.lines(text)
        show_skipped(term, manifest)
        options = ApplyOptions(
            noop=noop,
            health_check_only=health_check_only,
            jobs=jobs,
            message=message,
            allow_empty=allow_empty,
            keep_edits=force,
            overwrite=frozenset(
                os.path.normpath(os.path.abspath(os.path.expanduser(str(p))))
                for p in overwrite or ()
            ),
            max_unpack=unpack_limit,
            stop=signals.current(),
            from_snapshot=from_snapshot,
            phase=phases.mark,
        )
        read_only = noop or health_check_only
        phases.mark("plan")
        term.log("Building execution plan...")
        reporter = reporter_for(term, options)
        with state(paths, term, exclusive=not read_only, wait=wait):
            try:
                outcome = apply_manifest(manifest, paths, options, reporter, config=manifest.config)
            finally:
                reporter.close()
    except Interrupted:
        return interrupted_early(term)
    except UsageError as e:
        if e.reason == "empty_config":  # the next step, as a command that works as printed
            allow = again("apply", _given(config), "--allow-empty")
            e.hint = f"To remove every managed item, run: {allow}"
        raise
    late(term, outcome, options)
    for kind, text in manifest.messages:
        if kind == "post_message" and outcome.ok:
            term.lines(text)
    return report(
        term,
        outcome,
        time.monotonic() - started,
        noop=noop,
        hc=health_check_only,
        config=_given(config),
    )


def _given(config: Path | None) -> str | None:
    """CONFIG as given, for the commands a refusal or a failure suggests."""
    return str(config) if config is not None else None
