"""`sys graph`: the plan's execution graph, as Graphviz DOT or JSON; never changes anything."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import (
    DEFAULT_EVAL_TIMEOUT,
    ConfigArg,
    DepthOpt,
    EvalTimeoutOpt,
    FactOpt,
    ImpureOpt,
    JsonOpt,
    NoCacheOpt,
    NoColorOpt,
    QuietOpt,
    VerboseOpt,
)

if TYPE_CHECKING:
    from syslua.cli.output import Terminal


def command(
    config: ConfigArg = None,
    json_: JsonOpt = False,
    changes: Annotated[
        bool,
        typer.Option(
            "--changes",
            help="Only the items the plan would change (or cannot apply), and the edges "
            "between them.",
        ),
    ] = False,
    fact: FactOpt = None,
    impure: ImpureOpt = False,
    max_depth: DepthOpt = 10,
    eval_timeout: EvalTimeoutOpt = DEFAULT_EVAL_TIMEOUT,
    verbose: VerboseOpt = 0,
    no_cache: NoCacheOpt = False,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Print the plan as a graph in Graphviz DOT: items, waves, and why each edge exists.

    \b
    Examples:
      sys graph | dot -Tsvg > plan.svg
      sys graph --changes ~/dotfiles/sys.lua | dot -Tpng > changes.png
      sys graph --json                    # nodes (id, label, wave, action), edges (from, to, reason)
    """
    # Machine output either way: stdout holds only the graph, and what the
    # command says on the way (the config it found, warnings) goes to stderr.
    term = terminal(True, verbose, quiet, no_color, error_summary=json_)
    raise typer.Exit(
        run(
            term,
            config,
            as_json=json_,
            changes=changes,
            facts=fact or [],
            impure=impure,
            max_depth=max_depth,
            eval_timeout=eval_timeout,
        )
    )


def run(
    term: "Terminal",
    config: Path | None,
    *,
    as_json: bool,
    changes: bool,
    facts: list[str],
    impure: bool,
    max_depth: int,
    eval_timeout: float | None = None,
) -> int:
    from syslua.cli.commands.plan import planned
    from syslua.cli.machine import JSON_FORMAT
    from syslua.plan.graph import Graph

    _, plan = planned(
        term,
        config,
        facts=facts,
        impure=impure,
        max_depth=max_depth,
        eval_timeout=eval_timeout,
        example="sys graph path/to/sys.lua",
    )
    graph = Graph.of(plan, changes=changes)
    if as_json:
        term.json({"format": JSON_FORMAT, **graph.to_dict()})
    else:
        term.out.write(graph.to_dot())
        term.out.flush()
    return 0
