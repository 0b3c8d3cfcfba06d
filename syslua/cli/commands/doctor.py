"""`sys doctor [--quick] [--json]`: is this machine ready for syslua?

One line per check, ✓ or ✗, and for a ✗ the fix: the Lua runtime,
permissions, the lock, failed journals, the store, the env line, PATH and
the config (`syslua/execute/doctor.py` says what each looks at).

Doctor only looks: it takes no lock, rolls nothing back, and tightens no
permissions (other commands do that). It exits 1 when any check fails.
"""

from __future__ import annotations

from dataclasses import asdict

from syslua.cli.output import Terminal
from syslua.execute.doctor import run_checks
from syslua.paths import Paths

FAILED = 1


def run(term: Terminal, *, quick: bool) -> int:
    paths = Paths.from_env()
    checks = run_checks(paths, quick=quick)
    failed = [c for c in checks if not c.ok]
    if term.json_mode:
        term.json(
            {
                "format": 1,
                "ok": not failed,
                "checks": [{k: v for k, v in asdict(c).items() if k != "title"} for c in checks],
            }
        )
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
