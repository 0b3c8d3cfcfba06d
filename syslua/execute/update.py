"""Resolving the inputs of a config in the original's entry form again
(`sys update`), and committing the `syslua.lock` it rewrites.

`update_inputs` resolves the inputs `wanted` names (all when it names none)
to what their refs name now and writes the lock beside the config (not with
`dry_run`); `changes` says, input by input, whether it was added, updated,
unchanged or removed. `commit_lock` commits the lock file alone in the
config's git repository, through the process runner; `check_repository`
refuses before anything is resolved when there is no repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from syslua.errors import UsageError
from syslua.eval.facts import parse_fact_args
from syslua.execute.config import GitInputs
from syslua.manifest.resolve import Options, resolve_inputs
from syslua.paths import Paths

if TYPE_CHECKING:
    from syslua.eval.input_options import Guard
    from syslua.eval.inputs import Resolution

Row = dict[str, str | None]  # name, change (added|updated|unchanged|removed), old, new


def update_inputs(
    path: Path,
    paths: Paths,
    *,
    wanted: list[str],
    facts: list[str],
    dry_run: bool,
    guard: Guard | None = None,
) -> Resolution | None:
    """Resolve the inputs of the config at `path` again (those `wanted`, or
    all); None when the config is not in the entry form. A name it does not
    declare is a usage error. The lock is written inside `guard` (the CLI's
    critical section: a signal waits for the rename)."""
    options = Options(cli_facts=parse_fact_args(facts), guard=guard)
    options.git = GitInputs()
    options.update = frozenset(wanted)
    options.write_lock = not dry_run
    resolution = resolve_inputs(path, options, paths)
    if resolution is None and wanted:
        raise UsageError(
            f"unknown input {wanted[0]!r}: {path.name} declares no inputs "
            "(it does not return { inputs = ..., setup = ... })"
        )
    return resolution


def changes(resolution: Resolution) -> list[Row]:
    """One row per input: what the update did to it."""
    rows: list[Row] = []
    for change in resolution.changes:
        if change.old is None:
            state = "added"
        elif change.old != change.new:
            state = "updated"
        else:
            state = "unchanged"
        rows.append({"name": change.name, "change": state, "old": change.old, "new": change.new})
    rows += [{"name": n, "change": "removed", "old": None, "new": None} for n in resolution.removed]
    return rows


def check_repository(config_dir: Path) -> None:
    """`--commit` needs the config in a git repository: refuse before updating."""
    _git(config_dir, "rev-parse", "--show-toplevel", what="--commit")


def commit_lock(lock: Path, rows: list[Row]) -> str | None:
    """Commit the lock file alone, when it differs from the last commit;
    returns the commit's subject (None: nothing to commit)."""
    if not _git(lock.parent, "status", "--porcelain", "--", lock.name, what="--commit").strip():
        return None
    moved = [r for r in rows if r["change"] != "unchanged"]
    subject = "sys update: " + (
        ", ".join(f"{r['name']} {short(r['new']) or r['change']}" for r in moved) or "syslua.lock"
    )
    _git(lock.parent, "add", "--", lock.name, what="--commit")
    _git(lock.parent, "commit", "-q", "-m", subject, "--", lock.name, what="--commit")
    return subject


def short(rev: str | None) -> str:
    """A revision as shown: a commit's first 8 characters, `local` as it is."""
    return (rev or "")[:8] if rev and rev != "local" else (rev or "")


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
