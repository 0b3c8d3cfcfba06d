"""git with the system git, through the one process runner: checkouts at an
exact revision for `lib.fetchGit` packages (no `.git` kept), and clones of
config repositories for `sys init --from` and `sys pull`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from syslua.errors import SysluaError
from syslua.fetch import FetchError
from syslua.resources.process import ProcessResult, Runner


def checkout(source: dict[str, Any], dest: Path, runner: Runner, *, timeout: float = 600) -> str:
    """Clone with the system git and check out `rev` exactly; returns the commit.

    git runs through the caller's process runner (the one subprocess runner).
    """
    git = shutil.which("git")
    if git is None:
        raise FetchError("lib.fetchGit needs git, which is not installed")
    url, rev = source["url"], source["rev"]

    def run(*args: str, cwd: Path | None = None) -> str:
        done = runner.run_argv(
            [git, *args],
            cwd=str(cwd) if cwd is not None else None,
            environment=["GIT_TERMINAL_PROMPT=0"],
            timeout=timeout,
        )
        if done.timed_out:
            raise FetchError(f"git {args[0]} of {url} timed out")
        if done.exit_code != 0:
            lines = done.stderr.strip().splitlines()
            raise FetchError(
                f"git {args[0]} of {url} failed: {lines[-1] if lines else f'exit {done.exit_code}'}"
            )
        return done.stdout.strip()

    run("clone", "--quiet", "--no-checkout", url, str(dest))
    run("-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", rev, cwd=dest)
    commit = run("rev-parse", "HEAD", cwd=dest)
    if all(c in "0123456789abcdefABCDEF" for c in rev) and not commit.lower().startswith(
        rev.lower()
    ):
        raise FetchError(f"git checkout of {url} gave {commit}, not {rev}")
    shutil.rmtree(dest / ".git")
    return commit


# Config repositories: `sys init --from URL` clones one, `sys pull` fast-forwards it.
# Unlike `checkout` these keep `.git`: the directory stays a working clone.


class GitError(SysluaError):
    """git could not clone or update a config repository; nothing was changed."""

    exit_code = 2


def _git(
    runner: Runner, args: list[str], *, cwd: Path | None = None, timeout: float = 600
) -> ProcessResult:
    git = shutil.which("git")
    if git is None:
        raise GitError("git is not installed: `sys init --from` and `sys pull` need it")
    return runner.run_argv(
        [git, *args],
        cwd=str(cwd) if cwd is not None else None,
        # never ask on a terminal: a missing credential is an error, not a hang
        environment=["GIT_TERMINAL_PROMPT=0", "LC_ALL=C"],
        timeout=timeout,
    )


def _last_line(done: ProcessResult) -> str:
    lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit {done.exit_code}"


def clone(url: str, dest: Path, runner: Runner, *, timeout: float = 600) -> str:
    """`git clone URL DEST` (DEST missing or empty); returns the commit checked out."""
    done = _git(runner, ["clone", "--quiet", "--", url, str(dest)], timeout=timeout)
    if done.timed_out:
        raise GitError(f"git clone of {url} timed out after {timeout:g}s")
    if done.exit_code != 0:
        raise GitError(f"git clone of {url} failed: {_last_line(done)}")
    return head(dest, runner)


def head(repo: Path, runner: Runner) -> str:
    done = _git(runner, ["rev-parse", "HEAD"], cwd=repo, timeout=60)
    if done.exit_code != 0:
        raise GitError(f"{repo}: git rev-parse HEAD failed: {_last_line(done)}")
    return done.stdout.strip()


def toplevel(directory: Path, runner: Runner) -> Path | None:
    """The work tree `directory` belongs to, or None when it is not in one."""
    done = _git(runner, ["rev-parse", "--show-toplevel"], cwd=directory, timeout=60)
    if done.exit_code != 0:
        return None
    return Path(done.stdout.strip())


def pull(repo: Path, runner: Runner, *, timeout: float = 600) -> tuple[str, str]:
    """`git pull --ff-only` in `repo`; returns the commits before and after.
    A pull that cannot fast-forward (local commits, a diverged branch) fails
    and leaves the clone as it was."""
    before = head(repo, runner)
    done = _git(runner, ["pull", "--ff-only", "--quiet"], cwd=repo, timeout=timeout)
    if done.timed_out:
        raise GitError(f"git pull in {repo} timed out after {timeout:g}s")
    if done.exit_code != 0:
        raise GitError(
            f"git pull --ff-only in {repo} failed: {_last_line(done)}",
            hint="Nothing was changed. Merge or rebase by hand, then run `sys pull` again.",
        )
    return before, head(repo, runner)


def log_lines(repo: Path, before: str, after: str, runner: Runner) -> list[str]:
    """`abbrev subject` per commit between `before` and `after`, newest first."""
    done = _git(runner, ["log", "--format=%h %s", f"{before}..{after}"], cwd=repo, timeout=60)
    return done.stdout.splitlines() if done.exit_code == 0 else []
