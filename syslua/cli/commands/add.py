"""`sys add PATH...`: take files edited by hand back into the configuration.

It evaluates the config (`--config`, found as `sys plan` finds it), then,
under the state lock, takes each file back (`syslua/execute/take_back.py`
says how): a refusal of any file stops it (exit 2, nothing changed);
otherwise it prints what each file became, the declarations to add for the
files nothing managed, and the snapshot it recorded.
"""

from __future__ import annotations

from pathlib import Path

from syslua.cli.commands.common import load_manifest, state
from syslua.cli.machine import JSON_FORMAT
from syslua.cli.output import Terminal
from syslua.execute.take_back import Adding
from syslua.manifest.model import Item
from syslua.paths import Paths, abbreviate
from syslua.resources.base import TakeBack

REFUSED = 2


def run(
    term: Terminal,
    targets: list[Path],
    *,
    config: Path | None,
    to: Path | None,
    facts: list[str],
    impure: bool,
    max_depth: int,
    wait: bool,
) -> int:
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
    )
    adding = Adding(manifest, targets, to)
    with state(paths, term, exclusive=True, wait=wait):
        for note in adding.read_current(paths):
            term.warn(note)
        refused = adding.check()
        if refused:
            for step in refused:
                term.error(step.message)
            term.line("Nothing was changed.", always=True)
            return REFUSED
        snapshot = adding.act()
    return _report(term, adding.steps, adding.skipped, snapshot)


def _report(
    term: Terminal,
    steps: list[tuple[str, Item | None, TakeBack]],
    skipped: list[str],
    snapshot: str | None,
) -> int:
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
            }
        )
        return 0
    for _, _, step in steps:
        term.line(step.message)
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
