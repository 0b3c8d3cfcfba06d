"""`sys facts`: the facts a config or CCM manifest sees (`sys.*`, `Facts`),
read-only: the machine's, then the user facts file in the config
directory, then `--facts FILE`, then `--fact k=v`, each merged over the ones
before (eval/facts.py). One `dotted.name = value` line each, sorted; with
`--json`, `{"format": 1, "facts": {...}}`.
"""

import json
from typing import TYPE_CHECKING, Any

import typer

from syslua.cli import terminal
from syslua.cli.options import FactOpt, FactsFileOpt, JsonOpt, NoColorOpt

if TYPE_CHECKING:
    from pathlib import Path

    from syslua.cli.output import Terminal


def command(
    json_: JsonOpt = False,
    fact: FactOpt = None,
    facts_file: FactsFileOpt = None,
    no_color: NoColorOpt = False,
) -> None:
    """Print the facts a config or manifest sees, with --fact and --facts merged in.

    \b
    Examples:
      sys facts
      sys facts --json --facts site.yaml --fact role=web
    """
    raise typer.Exit(run(terminal(json_, 0, False, no_color), fact or [], facts_file))


def run(term: "Terminal", facts: list[str], facts_file: "Path | None") -> int:
    from syslua.cli.machine import JSON_FORMAT
    from syslua.eval import facts as factlib
    from syslua.paths import Paths

    cli_facts = factlib.parse_fact_args(facts)
    from_file = factlib.read_facts_file(facts_file.absolute()) if facts_file else None
    found = factlib.gather(Paths.from_env().config, cli_facts, from_file)
    if term.json_mode:
        term.json({"format": JSON_FORMAT, "facts": found})
        return 0
    for name, value in _flat(found):
        term.line(f"{name} = {value}")
    return 0


def _flat(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted name, value as text) of each leaf, sorted by name; a list, or
    an empty map, is one value written as JSON."""
    if isinstance(value, dict) and value:
        out: list[tuple[str, str]] = []
        for key in sorted(value, key=str):
            out += _flat(value[key], f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(value, str):
        return [(prefix, value)]
    return [(prefix, json.dumps(value, default=str, ensure_ascii=False))]
