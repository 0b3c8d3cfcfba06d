"""git checkouts at an exact revision, with the system git through the one process runner.

Used by `lib.fetchGit` packages; a checkout keeps no `.git` directory.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from syslua.fetch import FetchError
from syslua.resources.process import Runner


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
