"""`sys plan`: evaluate, merge, and compare with the machine; never changes anything."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from syslua.cli import terminal
from syslua.cli.options import (
    DEFAULT_EVAL_TIMEOUT,
    ConfigArg,
    DepthOpt,
    EvalTimeoutOpt,
    FactOpt,
    FactsFileOpt,
    HieraOpt,
    ImpureOpt,
    JsonOpt,
    NoCacheOpt,
    NoColorOpt,
    NoPagerOpt,
    QuietOpt,
    ReadEnvOpt,
    VerboseOpt,
)

if TYPE_CHECKING:
    from syslua.cli.commands.common import DataFlags
    from syslua.cli.output import Terminal
    from syslua.manifest.model import Manifest
    from syslua.plan.planner import Plan

PENDING = 4
CANNOT_APPLY = 1  # an item marked `!`: `sys apply` would refuse (SPEC section 8)


def command(
    config: ConfigArg = None,
    diff: Annotated[
        bool, typer.Option("--diff", help="Show unified diffs of file content.")
    ] = False,
    json_: JsonOpt = False,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code",
            help="Exit with 4 when changes are pending (1, as without it, when an item cannot be applied).",
        ),
    ] = False,
    fact: FactOpt = None,
    facts_file: FactsFileOpt = None,
    hiera: HieraOpt = None,
    read_env: ReadEnvOpt = True,
    impure: ImpureOpt = False,
    max_depth: DepthOpt = 10,
    eval_timeout: EvalTimeoutOpt = DEFAULT_EVAL_TIMEOUT,
    verbose: VerboseOpt = 0,
    no_cache: NoCacheOpt = False,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
    no_pager: NoPagerOpt = False,
) -> None:
    """Show what `sys apply` would change, and why, without touching anything.

    \b
    Examples:
      sys plan
      sys plan --diff ~/dotfiles/sys.lua
      sys plan --exit-code -q             # exit 4 when changes are pending
    """
    from syslua.cli.commands.common import DataFlags
    from syslua.cli.pager import paging

    term = terminal(json_, verbose, quiet, no_color)
    # Long output (every item, diffs) through a pager on a terminal.
    with paging(term, (diff or verbose > 0) and not no_pager):
        code = run(
            term,
            config,
            diff=diff,
            exit_code=exit_code,
            facts=fact or [],
            impure=impure,
            max_depth=max_depth,
            eval_timeout=eval_timeout,
            flags=DataFlags(facts_file, hiera, read_env),
        )
    raise typer.Exit(code)


def planned(
    term: "Terminal",
    config: Path | None,
    *,
    facts: list[str],
    impure: bool,
    max_depth: int,
    eval_timeout: float | None = None,
    with_diff: bool = False,
    example: str = "sys plan path/to/sys.lua",
    flags: "DataFlags | None" = None,
) -> "tuple[Manifest, Plan]":
    """The config evaluated and planned against this machine, reading the
    state without a lock on it (`sys plan`, `sys graph`)."""
    from syslua.cli import phases
    from syslua.cli.commands.common import load_manifest, state
    from syslua.paths import Paths
    from syslua.plan.inputs import PlanInputs
    from syslua.resources.process import Runner

    paths = Paths.from_env()
    manifest = load_manifest(
        term,
        config,
        facts=facts,
        impure=impure,
        max_depth=max_depth,
        paths=paths,
        eval_timeout=eval_timeout,
        example=example,
        flags=flags,
    )
    phases.mark("plan")
    with state(paths, term, exclusive=False):
        inputs = PlanInputs(paths, manifest)
        originals = inputs.known_originals()
    for note in inputs.warnings:
        term.warn(note)
    term.log("Building execution plan...")
    ctx = inputs.context(Runner(), originals=originals)
    return manifest, inputs.plan(ctx, with_diff=with_diff)


def run(
    term: "Terminal",
    config: Path | None,
    *,
    diff: bool,
    exit_code: bool,
    facts: list[str],
    impure: bool,
    max_depth: int,
    eval_timeout: float | None = None,
    shown: Path | None = None,
    flags: "DataFlags | None" = None,
) -> int:
    """Plan `config` and print it; `shown`: the config the commands printed
    name, when it is not `config` (`sys import --dry-run` plans a copy)."""
    manifest, plan = planned(
        term,
        config,
        facts=facts,
        impure=impure,
        max_depth=max_depth,
        eval_timeout=eval_timeout,
        with_diff=diff or term.json_mode,
        flags=flags,
    )
    refusal = would_refuse(plan)
    if term.json_mode:
        term.json(_json(manifest, plan, refusal))
    else:
        _show(term, manifest, plan, diff, shown or config)
    if refusal is not None:
        return CANNOT_APPLY  # the plan is a promise: `sys apply` would not go ahead
    if exit_code and plan.has_changes:
        return PENDING
    return 0


def would_refuse(plan: "Plan") -> str | None:
    """Why `sys apply` would refuse this plan before anything runs (the
    `refused` of its `--json`), or None: items marked `!` as unable to be
    applied, or else edits made by hand that it would overwrite."""
    from syslua.execute.outcome import CANNOT_APPLY as CANNOT
    from syslua.execute.outcome import EDITED_PATHS

    if plan.failures:
        return CANNOT
    if plan.edited:
        return EDITED_PATHS
    return None


def _json(manifest: "Manifest", plan: "Plan", refusal: str | None) -> dict[str, Any]:
    from syslua.cli.machine import JSON_FORMAT

    out: dict[str, Any] = {
        "format": JSON_FORMAT,
        "manifest": {**manifest.to_dict(), "digest": manifest.digest},
        "plan": plan.to_dict(),
        "waves": plan.waves,
        "refused": refusal,
    }
    if manifest.skipped:
        out["skipped_by_control"] = [
            {"subject": subject, "reason": reason, "declared_at": where}
            for subject, reason, where in manifest.skipped
        ]
    return out


def _show(
    term: "Terminal", manifest: "Manifest", plan: "Plan", diff: bool, config: Path | None
) -> None:
    from syslua.cli.commands.common import show_skipped

    term.line()
    term.plan(plan, show_diff=diff)
    if manifest.skipped:
        # Not items: a CCM resource whose `control` says no is not managed at all.
        term.line()
        show_skipped(term, manifest)
    edited = plan.edited
    if edited:
        _edits_note(term, plan, config)
    failures = len(plan.failures)
    if failures:
        # The last line: `sys apply` refuses such a plan before anything runs.
        term.line(
            f"{failures} item{'s' if failures != 1 else ''} marked ! cannot be applied: "
            "`sys apply` would refuse (exit 1).",
            "bold red",
            always=True,
        )


def _edits_note(term: "Terminal", plan: "Plan", config: Path | None) -> None:
    """The edits the apply would overwrite: both ways on, as commands that work
    as printed, then the line saying the apply would refuse."""
    from syslua.cli.again import command, keep_edits, overwrite_edits
    from syslua.cli.output import count_paths

    edited = plan.edited
    given = str(config) if config is not None else None
    term.line(f"Keep or overwrite the edit{'s' if len(edited) != 1 else ''}:", always=True)
    for line in keep_edits(plan.manifest, edited, given):
        term.line(f"  {line}", always=True)
    force = command("apply", *([given] if given else []), "--force")
    term.line(f"  {overwrite_edits(len(edited), 'overwrite', force)}", always=True)
    term.line(
        f"{count_paths(len(edited))} edited since the last apply would be overwritten: "
        "`sys apply` would refuse (exit 2).",
        "bold red",
        always=True,
    )
