"""git with the system git, through the one process runner: checkouts at an
exact revision for `lib.fetchGit` packages (no `.git` kept), and clones of
config repositories for `sys init --from` and `sys pull`.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

from syslua.errors import ConfigError, SysluaError
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


class InputFetcher:
    """The network side of the inputs of a config in the original's entry
    form (`eval.inputs.GitFetcher`): the system git, through the process runner.

    Failures are configuration errors: the config named something git
    cannot reach, and nothing has been changed yet."""

    def __init__(self, runner: Runner | None = None, *, timeout: float = 600) -> None:
        self.runner = runner or Runner()
        self.timeout = timeout

    def _git(self, *args: str, cwd: Path | None = None) -> str:
        if shutil.which("git") is None:  # said here as a config error, not as `_git` says it
            raise ConfigError("git inputs need git, which is not installed")
        done = _git(self.runner, list(args), cwd=cwd, timeout=self.timeout)
        if done.timed_out:
            raise ConfigError(f"git {args[0]} timed out after {self.timeout:g} s")
        if done.exit_code != 0:
            raise ConfigError(f"git {args[0]} failed: {_last_line(done)}")
        return done.stdout

    def latest(self, url: str, ref: str | None) -> str:
        if ref is not None and _is_commit(ref) and len(ref) == 40:
            return ref.lower()  # checked when checked out
        wanted = ref or "HEAD"
        names = (
            [wanted]
            if wanted == "HEAD" or wanted.startswith("refs/")
            else [f"refs/heads/{wanted}", f"refs/tags/{wanted}^{{}}", f"refs/tags/{wanted}"]
        )
        found: dict[str, str] = {}
        for line in self._git("ls-remote", "--", url, *names).splitlines():
            rev, _, name = line.partition("\t")
            found[name.strip()] = rev.strip()
        # A branch first, then a tag's commit (an annotated tag's peeled `^{}`).
        for name in names:
            if name in found:
                return found[name]
        if ref is not None and _is_commit(ref):
            return self._full_commit(url, ref)
        raise ConfigError(
            f"{url} has no branch or tag {wanted!r}" if ref else f"{url} has no HEAD (empty?)"
        )

    def _full_commit(self, url: str, short: str) -> str:
        """The full id of an abbreviated commit: fetch everything and ask."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="syslua-git-") as tmp:
            self._git("init", "--quiet", "--bare", cwd=Path(tmp))
            self._git("fetch", "--quiet", "--", url, "+refs/*:refs/remotes/input/*", cwd=Path(tmp))
            try:
                return self._git(
                    "rev-parse", "--verify", f"{short}^{{commit}}", cwd=Path(tmp)
                ).strip()
            except ConfigError:
                raise ConfigError(f"{url} has no branch, tag or commit {short!r}") from None

    def checkout(self, url: str, rev: str, dest: Path) -> None:
        dest.mkdir(parents=True)
        self._git("init", "--quiet", cwd=dest)
        try:
            self._git("fetch", "--quiet", "--depth=1", "--", url, rev, cwd=dest)
        except ConfigError:
            # Servers that refuse to fetch a commit by id: all of it, then the commit.
            self._git("fetch", "--quiet", "--", url, "+refs/*:refs/remotes/input/*", cwd=dest)
        self._git(
            "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", rev, cwd=dest
        )
        commit = self._git("rev-parse", "HEAD", cwd=dest).strip()
        if not commit.lower().startswith(rev.lower()):
            raise ConfigError(f"the checkout of {url} gave {commit}, not {rev}")
        shutil.rmtree(dest / ".git")


def _is_commit(ref: str) -> bool:
    return 7 <= len(ref) <= 40 and all(c in "0123456789abcdefABCDEF" for c in ref)


# Config repositories: `sys init --from URL` clones one, `sys pull` fast-forwards it.
# Unlike `checkout` these keep `.git`: the directory stays a working clone.


class GitError(SysluaError):
    """git could not clone or update a config repository; nothing was changed."""

    exit_code = 2
    reason = "git_error"


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
    """git's reason: its first `fatal:`/`error:` line (what follows is advice such
    as "Please make sure ... and the repository exists."), else its last line."""
    lines = [ln.strip() for ln in done.stderr.strip().splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
    return (fatal or lines[-1:] or [f"exit {done.exit_code}"])[0]


def clone(url: str, dest: Path, runner: Runner, *, timeout: float = 600) -> str:
    """`git clone URL DEST` (DEST missing or empty); returns the commit checked out."""
    done = _git(runner, ["clone", "--quiet", "--", url, str(dest)], timeout=timeout)
    if done.timed_out:
        raise GitError(f"git clone of {url} timed out after {timeout:g}s")
    if done.exit_code != 0:
        raise GitError(f"git clone of {url} failed: {_last_line(done)}")
    try:
        return head(dest, runner)
    except GitError:
        # git clones an empty repository without complaint, and then has no HEAD
        raise GitError(f"{url} is an empty repository (no commits): nothing to clone") from None


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


def fetch(repo: Path, runner: Runner, *, timeout: float = 600) -> None:
    """`git fetch` of the current branch's upstream in `repo`: it changes no
    work tree file, so it may be interrupted (its process group is killed)."""
    done = _git(runner, ["fetch", "--quiet"], cwd=repo, timeout=timeout)
    if done.timed_out:
        raise GitError(f"git fetch in {repo} timed out after {timeout:g}s")
    if done.exit_code != 0:
        raise GitError(
            f"git fetch in {repo} failed: {_last_line(done)}",
            hint="Nothing was changed.",
        )


class LocalChanges(GitError):
    """The pull would overwrite changes not committed in the clone (git
    refused it, changing nothing); `said`: git's lines saying which files."""

    def __init__(self, message: str, said: list[str]) -> None:
        super().__init__(message)
        self.said = said


# What git says when a merge would overwrite uncommitted or untracked files.
_LOCAL_CHANGES = (
    "Your local changes to the following files would be overwritten",
    "untracked working tree files would be overwritten",
)


def fast_forward(repo: Path, runner: Runner, *, timeout: float = 600) -> None:
    """`git merge --ff-only FETCH_HEAD` in `repo`, after `fetch`. One that
    cannot fast-forward (local commits, a diverged branch, no upstream)
    fails and leaves the clone as it was; one that would overwrite changes
    not committed raises `LocalChanges`, with git's reason."""
    done = _git(runner, ["merge", "--ff-only", "--quiet", "FETCH_HEAD"], cwd=repo, timeout=timeout)
    if done.timed_out:
        raise GitError(f"git merge --ff-only in {repo} timed out after {timeout:g}s")
    if done.exit_code != 0 and any(m in done.stderr for m in _LOCAL_CHANGES):
        # git's reason is its error line and the files under it; its advice
        # ("Please commit your changes or stash them") the caller makes exact.
        reason = [
            ln.rstrip()
            for ln in done.stderr.splitlines()
            if ln.startswith(("error:", "\t", " ")) and ln.strip()
        ]
        raise LocalChanges(
            f"git pull --ff-only in {repo} failed: the clone has changes not committed "
            "that the pull would overwrite",
            reason,
        )
    if done.exit_code != 0:
        hint = "Nothing was changed. Merge or rebase by hand, then run `sys pull` again."
        if "not possible to fast-forward" in done.stderr.lower():
            # Diverged: the clone has commits the remote does not. One command
            # puts them on top of the remote's, which is what `sys pull` wanted.
            hint = (
                "Nothing was changed. The clone has commits the remote does not: put them on "
                "top of the remote's (then `sys plan` shows the result): "
                f"git -C {shlex.quote(str(repo))} pull --rebase"
            )
        raise GitError(f"git pull --ff-only in {repo} failed: {_last_line(done)}", hint=hint)


def log_lines(repo: Path, before: str, after: str, runner: Runner) -> list[str]:
    """`abbrev subject` per commit between `before` and `after`, newest first."""
    done = _git(runner, ["log", "--format=%h %s", f"{before}..{after}"], cwd=repo, timeout=60)
    return done.stdout.splitlines() if done.exit_code == 0 else []


def upstream_head(repo: Path, runner: Runner, *, timeout: float = 600) -> tuple[str, str]:
    """`sys pull --dry-run`: the current branch's upstream (`origin/main`) and
    the commit it names on the remote now, asked with `git ls-remote`, which
    writes nothing (no fetch, no ref moved)."""
    branch = _git(runner, ["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=repo, timeout=60)
    name = branch.stdout.strip()
    remote = _git(runner, ["config", f"branch.{name}.remote"], cwd=repo, timeout=60)
    ref = _git(runner, ["config", f"branch.{name}.merge"], cwd=repo, timeout=60)
    if branch.exit_code or remote.exit_code or ref.exit_code:
        raise GitError(
            f"{repo}: the branch {name or '(detached HEAD)'} has no upstream to pull from",
            hint="Nothing was changed.",
        )
    where, merge = remote.stdout.strip(), ref.stdout.strip()
    done = _git(runner, ["ls-remote", "--quiet", "--", where, merge], cwd=repo, timeout=timeout)
    if done.timed_out:
        raise GitError(f"git ls-remote in {repo} timed out after {timeout:g}s")
    rows = [ln.split("\t") for ln in done.stdout.splitlines() if "\t" in ln]
    if done.exit_code != 0 or not rows:
        raise GitError(
            f"git ls-remote {where} {merge} in {repo} failed: {_last_line(done)}",
            hint="Nothing was changed.",
        )
    return f"{where}/{merge.removeprefix('refs/heads/')}", rows[0][0]


def is_ancestor(repo: Path, older: str, newer: str, runner: Runner) -> bool | None:
    """Whether commit `older` is an ancestor of (or is) `newer`; None when
    `repo` does not have both (not fetched yet)."""
    done = _git(runner, ["merge-base", "--is-ancestor", older, newer], cwd=repo, timeout=60)
    return {0: True, 1: False}.get(done.exit_code)


def remote_head(url: str, runner: Runner, *, timeout: float = 600) -> str:
    """`sys init --from URL --dry-run`: the commit HEAD names at `url`
    (`git ls-remote`, which writes nothing)."""
    done = _git(runner, ["ls-remote", "--quiet", "--", url, "HEAD"], timeout=timeout)
    if done.timed_out:
        raise GitError(f"git ls-remote {url} timed out after {timeout:g}s")
    rows = [ln.split("\t") for ln in done.stdout.splitlines() if "\t" in ln]
    if done.exit_code != 0 or not rows:
        reason = _last_line(done) if done.exit_code else "it has no HEAD (an empty repository?)"
        raise GitError(f"git ls-remote {url} failed: {reason}", hint="Nothing was changed.")
    return rows[0][0]
