"""`sys env [--shell bash|zsh|fish]`: the line to add to a shell's rc file."""

from __future__ import annotations

import os

from syslua.cli.output import Terminal
from syslua.errors import UsageError
from syslua.paths import Paths
from syslua.shellrc import rc_line

SHELLS = ("bash", "zsh", "fish", "sh")


def run(term: Terminal, shell: str | None) -> int:
    shell = shell or os.path.basename(os.environ.get("SHELL", "") or "bash")
    if shell not in SHELLS:
        raise UsageError(f"unknown shell `{shell}` (use bash, zsh or fish)")
    paths = Paths.from_env()
    term.line(rc_line(paths, "fish" if shell == "fish" else "sh"))
    if not paths.env_sh.exists():
        term.log("Note: the env scripts are written by the first `sys apply`.")
    return 0
