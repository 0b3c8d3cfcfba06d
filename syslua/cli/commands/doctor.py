"""`sys doctor [--quick] [--repair] [--json]`: is this machine ready for syslua?

One line per check, ✓ or ✗, and for a ✗ the fix: the Lua runtime,
permissions, the lock, failed journals, the store, the env line, PATH and
the config (`syslua/execute/doctor.py` says what each looks at).

Doctor only looks: it takes no lock, rolls nothing back, and tightens no
permissions (other commands do that). It exits 1 when any check fails.
`--repair` first repairs what it can, under the state lock, saying what it
does: a current snapshot whose file is corrupt or missing is replaced by the
newest readable one.
"""

from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import JsonOpt, NoColorOpt

if TYPE_CHECKING:
    from syslua.cli.output import Terminal

FAILED = 1


def command(
    quick: Annotated[
        bool,
        typer.Option("--quick", help="Hash a sample of the store's objects, not every one."),
    ] = False,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="First make the newest readable snapshot current when the current one "
            "is corrupt or missing, saying so.",
        ),
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
      sys doctor --repair         # a corrupt current snapshot: use the newest readable one
    """
    raise typer.Exit(run(terminal(json_, 0, False, no_color), quick=quick, repair=repair))


def run(term: "Terminal", *, quick: bool, repair: bool = False) -> int:
    from dataclasses import asdict

    from syslua.execute.doctor import run_checks
    from syslua.paths import Paths

    paths = Paths.from_env()
    repaired: list[str] = []
    if repair:
        from syslua.cli.commands.common import state
        from syslua.execute.doctor import repair_current

        with state(paths, term, exclusive=True):
            repaired = repair_current(paths)
        if not term.json_mode:
            for text in repaired or ["Nothing to repair."]:
                term.lines(text, always=True)
            term.line()
    checks = run_checks(paths, quick=quick)
    failed = [c for c in checks if not c.ok]
    if term.json_mode:
        data = {
            "format": 1,
            "ok": not failed,
            "checks": [{k: v for k, v in asdict(c).items() if k != "title"} for c in checks],
        }
        if repair:
            data["repaired"] = repaired  # what --repair did, as lines (none: nothing)
        term.json(data)
        return FAILED if failed else 0
    for c in checks:
        mark, style = ("✓", "green") if c.ok else ("✗", "bold red")
        term.lines(f"{mark} {c.title}: {c.detail}", style, indent="    ", always=True)
        if c.fix:
            term.line(f"    fix: {c.fix}", always=True)
    term.line()
    if failed:
        term.line(f"{len(failed)} of {len(checks)} checks failed.", always=True)
    else:
        term.line(f"All {len(checks)} checks passed.")
    return FAILED if failed else 0
