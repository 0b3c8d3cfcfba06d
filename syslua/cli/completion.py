"""Shell completion for bash, zsh and fish: `sys --show-completion [SHELL]`,
`sys --install-completion [SHELL]`, and the snapshot ids completed for
`rollback`, `diff` and `snapshot show|tag|delete`.

The scripts are typer's: they run `sys` with `_SYS_COMPLETE` set, and
`cli.main` then answers with the candidates instead of running a command.
The options are our own rather than typer's `add_completion`, because
typer's take no shell name (they guess it from the parent process) and
rewrite rc files in place. Here the shell is the one named after the option,
or the one in `$SHELL` (as `sys env` and `sys doctor` read it), and
installing writes the script to where the shell or bash-completion looks
for it, then appends one line to the rc file (bash, zsh) with an atomic
write that keeps everything the file held; fish loads the script by itself.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from syslua.cli import COMPLETE_VAR
from syslua.cli.output import Terminal
from syslua.errors import UsageError
from syslua.paths import Paths, abbreviate, home

SHELLS = ("bash", "zsh", "fish")
PROG = "sys"

# Completion needs the completion system of zsh: load it when .zshrc has not.
_ZSH_INIT = "(( $+functions[compdef] )) || { autoload -Uz compinit && compinit }"


def shell_after(flag: str) -> str | None:
    """The word after `flag` on the command line (`sys --show-completion zsh`), if any.

    The completion options are flags to click, which would take `zsh` for a
    command; they act and exit before any command is looked up."""
    args = sys.argv[1:]
    if flag in args:
        i = args.index(flag) + 1
        if i < len(args) and not args[i].startswith("-"):
            return args[i]
    return None


def pick_shell(shell: str | None) -> str:
    """`shell`, or the one `$SHELL` names."""
    if shell is None:
        env = os.environ.get("SHELL", "")
        shell = os.path.basename(env)
        if shell not in SHELLS:
            raise UsageError(
                f"cannot tell your shell from $SHELL ({env or 'not set'}); "
                "name it: bash, zsh or fish (e.g. sys --show-completion bash)"
            )
    if shell not in SHELLS:
        raise UsageError(f"unknown shell `{shell}` (use bash, zsh or fish)")
    return shell


def script(shell: str) -> str:
    from typer._completion_shared import get_completion_script

    text = get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell)
    if shell == "zsh":
        text = text.replace("\ncompdef ", f"\n{_ZSH_INIT}\ncompdef ", 1)
    return text + "\n"


def show(term: Terminal, shell: str | None) -> int:
    text = script(pick_shell(shell))  # several lines, written as they are
    term.out.write(text)
    term.out.flush()
    return 0


def script_path(shell: str) -> Path:
    """Where `--install-completion` puts the script: where each shell (or
    bash-completion) finds completions by itself."""
    h = Path(home())
    if shell == "fish":
        config = os.environ.get("XDG_CONFIG_HOME") or str(h / ".config")
        return Path(config) / "fish" / "completions" / f"{PROG}.fish"
    if shell == "zsh":
        return h / ".zfunc" / f"_{PROG}"
    data = os.environ.get("XDG_DATA_HOME") or str(h / ".local" / "share")
    return Path(data) / "bash-completion" / "completions" / PROG


def rc_file(shell: str) -> Path:
    return Path(home()) / (".zshrc" if shell == "zsh" else ".bashrc")


def source_line(shell: str) -> str:
    from syslua.shellrc import sh_quote

    path = sh_quote(str(script_path(shell)))
    return f"[ -f {path} ] && . {path}"


def install(term: Terminal, shell: str | None) -> int:
    """Write the script; for bash and zsh, add the line that loads it to the rc file."""
    from syslua.fsutil import atomic_write

    shell = pick_shell(shell)
    target = script_path(shell)
    atomic_write(target, script(shell).encode(), 0o644)
    term.line(f"written: {abbreviate(str(target))}")
    if shell == "fish":
        term.line("fish loads it by itself; completion works in new shells.")
        return 0
    rc, line = rc_file(shell), source_line(shell)
    real = Path(os.path.realpath(rc))  # a dotfile may be a link into a repository
    try:
        text = real.read_text(encoding="utf-8", errors="surrogateescape")
        mode = real.stat().st_mode & 0o7777
    except FileNotFoundError:
        text, mode = "", 0o644
    except OSError as e:
        raise UsageError(
            f"cannot read {abbreviate(str(rc))}: {e.strerror}; add this line to it yourself: {line}"
        ) from None
    if line in text.splitlines():
        term.line(f"left alone because it already loads the script: {abbreviate(str(rc))}")
    else:
        sep = "" if not text or text.endswith("\n") else "\n"
        added = f"{sep}# shell completion for sys (sys --install-completion)\n{line}\n"
        atomic_write(real, (text + added).encode("utf-8", "surrogateescape"), mode)
        term.line(f"added to {abbreviate(str(rc))}: {line}")
    term.line(f"Completion works in new shells; in this one, run: {line}")
    return 0


def snapshot_ids(incomplete: str) -> list[tuple[str, str]]:
    """Snapshot ids and tags starting with `incomplete`, newest first, each
    with what it is. Read from the index alone: no lock, no recovery, and
    nothing written (a missing index is not rebuilt here)."""
    snapshots = Paths.from_env().snapshots
    try:
        index = json.loads((snapshots / "index.json").read_text(encoding="utf-8"))
        order = [i for i in index.get("order", []) if isinstance(i, str)]
        current = index.get("current")
    except (OSError, ValueError, AttributeError):
        return []
    try:
        tags = json.loads((snapshots / "tags.json").read_text(encoding="utf-8"))
        if not isinstance(tags, dict):
            tags = {}
    except (OSError, ValueError):
        tags = {}
    out: list[tuple[str, str]] = []
    for ident in reversed(order):
        names = [t for t in tags.get(ident, []) if isinstance(t, str)]
        what = ", ".join((["current"] if ident == current else []) + names)
        if ident.startswith(incomplete):
            out.append((ident, what or "snapshot"))
        out.extend((t, f"tag of {ident}") for t in names if t.startswith(incomplete))
    return out
