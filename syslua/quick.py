"""`sys apply` and `sys plan` when nothing changed: answered from `lstat`
alone, before typer, Lua, the merge or the planner are imported.

The last apply that found nothing to do left a no-change proof
(`state/proof.py`, written by `execute/proof.py`). A later `sys apply` or
`sys plan` given nothing but a config (and `-q`, `--no-color`, and for the
plan `--exit-code` or `--no-pager`, which change nothing here) prints what
the full command would, word for word, and ends, when all of these hold:

1. the config it finds is the one the full command would evaluate, found
   without a note to print (`execute.config.locate_config`);
2. its evaluation cache entry still holds (every file, listing and variable
   the evaluation read is as it was: `manifest/evalcache.py`) and is the
   evaluation the proof was made from;
3. the state dir is usable and as tight as the full command would leave it,
   no journal is there, and, for an apply, the state lock is free (it is
   held while the proof is checked);
4. every path of the proof compares equal, and so do the variables it names.

Otherwise, or on any error, it answers nothing (`None`) and the full
command runs (and, for an apply that changes nothing, writes a new proof).
A line the full command would wrap on this terminal, or a name it would
show escaped, also leaves it to the full command. `--no-cache` and `-v`
always do.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from syslua.plan.words import NO_CHANGES, plan_summary

if TYPE_CHECKING:
    from syslua.paths import Paths

_COMMON = {"-q", "--quiet", "--no-color"}
_OPTIONS = {"apply": _COMMON, "plan": _COMMON | {"--exit-code", "--no-pager"}}
_COMPLETE_VAR = "_SYS_COMPLETE"  # `cli.COMPLETE_VAR`: the shell asks for completions


def answer(argv: list[str]) -> int | None:
    """The exit code of `sys ARGV` when it could be answered here (having
    printed what the full command would), else None (nothing printed)."""
    parsed = _parsed(argv)
    if parsed is None or os.environ.get(_COMPLETE_VAR):
        return None
    command, config, quiet = parsed
    try:
        said = _unchanged(command, config)
    except KeyboardInterrupt:  # as the full command says an early Ctrl-C
        if command == "apply":
            sys.stdout.write("Apply interrupted. System unchanged.\n")
        else:
            sys.stderr.write("Interrupted.\n")
        return 130
    except Exception:  # whatever it is, the full command meets it and says it
        return None
    if said is None:
        return None
    err, out = said
    if quiet:
        return 0
    if not (_fits(sys.stderr, err) and _fits(sys.stdout, out)):
        return None
    try:
        sys.stderr.write("".join(f"{line}\n" for line in err))
        sys.stderr.flush()
        sys.stdout.write("".join(f"{line}\n" for line in out))
        sys.stdout.flush()
    except BrokenPipeError:  # `sys plan | head -1`: as the full command, quietly, exit 1
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    return 0


def _parsed(argv: list[str]) -> tuple[str, Path | None, bool] | None:
    """(command, CONFIG, quiet) of a command line this module may answer."""
    names = [a for a in argv if not a.startswith("-")]
    if not names or names[0] not in _OPTIONS or len(names) > 2:
        return None
    command = names[0]
    if argv.index(command) != 0 and any(a not in _COMMON for a in argv[: argv.index(command)]):
        return None  # before the command, only the options every command has
    flags = [a for a in argv if a.startswith("-")]
    if any(f not in _OPTIONS[command] for f in flags) or any(n == "" for n in names):
        return None
    config = Path(names[1]) if len(names) == 2 else None
    return command, config, "-q" in flags or "--quiet" in flags


def _unchanged(command: str, config: Path | None) -> tuple[list[str], list[str]] | None:
    """(stderr lines, stdout lines) of the full command when the proof holds."""
    from syslua.paths import Paths
    from syslua.state import proof

    paths = Paths.from_env()
    found = proof.load(paths.state)
    if found is None:
        return None
    path = _config(config, paths)
    if path is None or not path.name.isprintable():
        return None
    if _evaluation(path, paths, found.followed()) != found.evaluation:
        return None
    from syslua.state import layout

    writing = command == "apply"
    if layout.unusable(paths, writing=writing) is not None or layout.too_open(paths):
        return None
    if writing:
        from syslua.state.lock import StateLock

        lock = StateLock(paths.lock)
        lock.acquire(wait=False, command="sys apply", started=time.time())  # held: raises
        try:
            holds = not layout.journal_left(paths.journal) and found.holds()
        finally:
            lock.release()
    else:
        holds = not layout.journal_left(paths.journal) and found.holds()
    if not holds:
        return None
    err = [f"Evaluating {path.name}...", "Building execution plan..."]
    summary = plan_summary(found.counts)
    out = [summary, NO_CHANGES] if writing else ["", NO_CHANGES, "", summary]
    return err, out


def _config(config: Path | None, paths: Paths) -> Path | None:
    """The config the full command would evaluate, when it finds it without a note."""
    from syslua.execute.config import locate_config

    notes: list[str] = []
    found = locate_config(config, paths, notes.append)
    if notes or found.current is not None:
        return None
    return Path(os.path.abspath(found.path))


def _evaluation(config: Path, paths: Paths, known: frozenset[str]) -> str | None:
    """The id of the cached evaluation of `config` with the default options,
    when everything it read is as it was (`known`: files whose `stat` the
    proof compares, which it need not look at: `evalcache.stale`)."""
    from syslua.manifest import evalcache
    from syslua.manifest.options import Options

    options = Options()
    key = evalcache.key(config, options, evalcache.gathered_facts(options, paths))
    return evalcache.entry(evalcache.cache_file(paths.cache, config), key, known)


def _fits(stream: TextIO, lines: list[str]) -> bool:
    """Would a terminal print each line as it is (no wrapping: `cli.output.wrap`,
    which leaves lines alone on a terminal narrower than 16 columns)?"""
    try:
        if not stream.isatty():
            return True
    except (AttributeError, ValueError):
        return True
    import shutil

    width = shutil.get_terminal_size((80, 24)).columns
    return width < 16 or all(len(line) <= width and line.isascii() for line in lines)
