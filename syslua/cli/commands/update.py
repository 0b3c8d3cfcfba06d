"""`sys update [NAME...]`: resolve the inputs of a config in the original's
entry form again, and rewrite `syslua.lock` beside it.

Without names every input (and every input of an input) is resolved anew;
with names only those. A name the config does not declare is a usage error.
Arguments that look like paths (`x.lua`, `a/b`, `.`, or a file or a
directory holding a config here) name the config, as in the original's
`sys update [CONFIG] [-i NAME]`."""

from __future__ import annotations

import os
from pathlib import Path

from syslua.cli.machine import JSON_FORMAT
from syslua.cli.output import Terminal
from syslua.errors import UsageError
from syslua.eval.facts import parse_fact_args
from syslua.execute.config import GitInputs, find_config
from syslua.manifest.resolve import Options, resolve_inputs
from syslua.paths import Paths, config_in


def _is_path(arg: str) -> bool:
    """A config file or directory, not an input name: `x.lua`, `a/b`, `.`, `~...`,
    a file here, or a directory here that holds a config."""
    if arg.endswith(".lua") or os.sep in arg or arg in (".", "..") or arg.startswith("~"):
        return True
    p = Path(arg)
    return p.is_file() or (p.is_dir() and config_in(p) is not None)


def run(
    term: Terminal,
    args: list[str],
    *,
    config: Path | None,
    names: list[str],
    dry_run: bool,
    facts: list[str],
    commit: bool = False,
) -> int:
    wanted = list(names)
    for arg in args:
        if _is_path(arg):
            if config is not None:
                raise UsageError(f"two configs given: {config} and {arg}")
            config = Path(os.path.expanduser(arg))
        else:
            wanted.append(arg)
    paths = Paths.from_env()
    path = find_config(config, paths, term.log, example="sys update --config path/to/init.lua")
    if commit:
        if dry_run:
            raise UsageError("--commit and --dry-run do not go together")
        _git(path.parent, "rev-parse", "--show-toplevel", what="--commit")
    term.log(f"Resolving the inputs of {path.name}...")
    options = Options(cli_facts=parse_fact_args(facts))
    options.git = GitInputs()
    options.update = frozenset(wanted)
    options.write_lock = not dry_run
    resolution = resolve_inputs(path, options, paths)
    if resolution is None:
        if wanted:
            raise UsageError(
                f"unknown input {wanted[0]!r}: {path.name} declares no inputs "
                "(it does not return { inputs = ..., setup = ... })"
            )
        if term.json_mode:
            term.json({"format": JSON_FORMAT, "config": str(path), "lock": None, "inputs": []})
        else:
            term.line(f"{path.name} declares no inputs; nothing to update.")
        return 0
    rows = []
    for change in resolution.changes:
        if change.old is None:
            state = "added"
        elif change.old != change.new:
            state = "updated"
        else:
            state = "unchanged"
        rows.append({"name": change.name, "change": state, "old": change.old, "new": change.new})
    rows += [{"name": n, "change": "removed", "old": None, "new": None} for n in resolution.removed]
    changed = [r for r in rows if r["change"] != "unchanged"]
    if term.json_mode:
        term.json(
            {
                "format": JSON_FORMAT,
                "config": str(path),
                "lock": str(resolution.lock),
                "dry_run": dry_run,
                "written": resolution.lock_written,
                "inputs": rows,
            }
        )
        return 0
    would = "Would update" if dry_run else "Updated"
    for r in rows:
        if r["change"] == "updated":
            term.line(f"  ~ {would} {r['name']}: {_short(r['old'])} -> {_short(r['new'])}")
        elif r["change"] == "added":
            term.line(f"  + {'Would add' if dry_run else 'Added'} {r['name']} ({_short(r['new'])})")
        elif r["change"] == "removed":
            term.line(f"  - {'Would remove' if dry_run else 'Removed'} {r['name']}")
    same = [str(r["name"]) for r in rows if r["change"] == "unchanged"]
    if same:
        term.line(f"  = Unchanged: {', '.join(same)}")
    if dry_run:
        term.line("Dry run: the lock file was not written.")
    elif not changed and not resolution.lock_written:
        term.line("All inputs are up to date.")
    else:
        term.line(f"Lock file updated: {resolution.lock}")
    if commit:
        _commit(term, resolution.lock, rows)
    return 0


def _git(where: Path, *args: str, what: str) -> str:
    """Run git in `where` through the process runner; a failure is a usage error."""
    import shutil

    from syslua.resources.process import Runner

    git = shutil.which("git")
    if git is None:
        raise UsageError(f"{what} needs git, which is not installed")
    done = Runner().run_argv([git, "-C", str(where), *args], timeout=120)
    if done.exit_code != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise UsageError(f"{what}: git {args[0]} failed in {where}: {lines[-1] if lines else ''}")
    return done.stdout


def _commit(term: Terminal, lock: Path, rows: list[dict[str, str | None]]) -> None:
    """`--commit`: commit the lock file alone, when it differs from the last commit."""
    if not _git(lock.parent, "status", "--porcelain", "--", lock.name, what="--commit").strip():
        term.line("Nothing to commit: the lock file is as committed.")
        return
    moved = [r for r in rows if r["change"] != "unchanged"]
    subject = "sys update: " + (
        ", ".join(f"{r['name']} {_short(r['new']) or r['change']}" for r in moved) or "syslua.lock"
    )
    _git(lock.parent, "add", "--", lock.name, what="--commit")
    _git(lock.parent, "commit", "-q", "-m", subject, "--", lock.name, what="--commit")
    term.line(f"Committed {lock.name}: {subject}")


def _short(rev: str | None) -> str:
    return (rev or "")[:8] if rev and rev != "local" else (rev or "")
