"""Config repositories: `sys init --from URL [DIR] [--apply]` clones one with
the system git and shows its plan (or applies it), the way a new machine is
bootstrapped; `sys pull [DIR]` fast-forwards the clone and shows the new plan.

Both refuse rather than guess: `init --from` clones only into a directory
that is missing or empty (exit 2, nothing changed), and `pull` only
fast-forwards (a diverged clone is left as it was, exit 2)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import FactOpt, JobsOpt, NoColorOpt, QuietOpt, VerboseOpt, dry_run_option

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.resources.git import GitError, LocalChanges
    from syslua.resources.process import Runner


def pull_command(
    directory: Annotated[
        Path | None,
        typer.Argument(
            metavar="DIR",
            help="The clone to update (default: the current directory when it holds a config, "
            "else the directory of the config `sys plan` uses).",
            show_default=False,
        ),
    ] = None,
    noop: Annotated[
        bool, dry_run_option("Only say what the pull would bring (git ls-remote); change nothing.")
    ] = False,
    apply_: Annotated[
        bool,
        typer.Option("--apply", help="Apply the updated config instead of showing its plan."),
    ] = False,
    fact: FactOpt = None,
    jobs: JobsOpt = None,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Update a config cloned with `sys init --from` (git pull --ff-only), then show the new plan.
    With --apply, apply it.

    \b
    Examples:
      sys pull                            # in the clone, or for ~/.config/syslua
      sys pull --apply ~/dotfiles         # pull, then apply
    """
    from syslua.cli.commands import repo

    term = terminal(False, verbose, quiet, no_color)
    raise typer.Exit(
        repo.pull(term, directory, facts=fact or [], dry_run=noop, apply=apply_, jobs=jobs)
    )


def init_from(
    term: "Terminal",
    url: str,
    directory: Path | None,
    *,
    apply: bool,
    facts: list[str],
    jobs: int | None = None,
    dry_run: bool = False,
) -> int:
    """Clone `url` into `directory` (default ~/.config/syslua), then print the
    plan of the config in it, or apply it with `apply`."""
    from syslua.errors import UsageError
    from syslua.execute.config_repo import clone_into, clone_target
    from syslua.paths import config_in
    from syslua.resources.process import Runner

    target, existed = clone_target(directory)
    if dry_run:
        from syslua.resources import git

        head = git.remote_head(url, Runner())
        term.line(
            f"Dry run: `sys init --from` would clone {url} (HEAD at {head[:12]}) into {target}, "
            f"then {'apply' if apply else 'show the plan of'} its config. Nothing was changed."
        )
        return 0
    term.log(f"Cloning {url} into {target}...")
    commit = clone_into(url, target, existed, Runner())
    term.line(f"Cloned {url} into {target} at {commit[:12]}.")
    config = config_in(target)
    if config is None:
        raise UsageError(
            f"{target} has no sys.lua or init.lua at its top: nothing to "
            f"{'apply' if apply else 'plan'} (the clone is kept)"
        )
    return _plan_or_apply(term, config, apply=apply, facts=facts, jobs=jobs)


def pull(
    term: "Terminal",
    directory: Path | None,
    *,
    facts: list[str],
    dry_run: bool = False,
    apply: bool = False,
    jobs: int | None = None,
) -> int:
    """`git pull --ff-only` in DIR (default: the current directory when it holds
    a config, else the directory of the config `sys plan` would use), then the
    plan of its config, or its apply with `apply`. A clone whose changes not
    committed the pull would overwrite is refused with git's reason and the
    commands that keep them in a commit or put them aside (`_local_changes`).

    The pull is a `git fetch`, which a signal stops with the work tree as it
    was (exit 130), then `git merge --ff-only FETCH_HEAD` in a critical
    section: a signal waits for it, and the command then stops without the
    plan (exit 130, the update kept)."""
    from syslua.cli import signals
    from syslua.errors import UsageError
    from syslua.execute.config_repo import clone_to_pull
    from syslua.paths import config_in
    from syslua.resources import git
    from syslua.resources.process import Runner

    runner = Runner()
    start, repo, config = clone_to_pull(directory, runner, term.log)
    if dry_run:
        return _would_pull(term, repo, runner)
    term.log(f"Pulling {repo}...")
    before = git.head(repo, runner)
    git.fetch(repo, runner)
    with signals.current().critical():  # a merge stopped half-way leaves a torn work tree
        try:
            git.fast_forward(repo, runner)
        except git.LocalChanges as e:
            raise _local_changes(e, start, apply) from e
    after = git.head(repo, runner)
    if before == after:
        term.line(f"{repo} is up to date at {after[:12]}.")
    else:
        changes = git.log_lines(repo, before, after, runner)
        term.line(
            f"Updated {repo}: {before[:12]}..{after[:12]} "
            f"({len(changes)} commit{'s' if len(changes) != 1 else ''})."
        )
        for line in changes[:20]:
            term.line(f"  {line}")
        if len(changes) > 20:
            term.line(f"  ... and {len(changes) - 20} more")
    if signals.current().requested:
        return signals.stopped_after(0)
    if config is None:
        config = config_in(start) or config_in(repo)
    if config is None:
        raise UsageError(f"{start} has no sys.lua or init.lua: nothing to plan")
    return _plan_or_apply(term, config, apply=apply, facts=facts, jobs=jobs)


def _would_pull(term: "Terminal", repo: Path, runner: "Runner") -> int:
    """`sys pull --dry-run`: what the pull would bring, asked without fetching."""
    from syslua.resources import git

    term.log(f"Asking the upstream of {repo}...")
    before = git.head(repo, runner)
    upstream, after = git.upstream_head(repo, runner)
    behind = git.is_ancestor(repo, before, after, runner)
    if after == before or git.is_ancestor(repo, after, before, runner):
        term.line(
            f"Dry run: {repo} is up to date with {upstream}; `sys pull` would change nothing."
        )
    elif behind:
        changes = git.log_lines(repo, before, after, runner)
        term.line(
            f"Dry run: `sys pull` would fast-forward {repo} {before[:12]}..{after[:12]} "
            f"({len(changes)} commit{'s' if len(changes) != 1 else ''} from {upstream}), "
            "then show the new plan. Nothing was changed."
        )
        for line in changes[:20]:
            term.line(f"  {line}")
    elif behind is None:
        term.line(
            f"Dry run: `sys pull` would fetch {upstream} (now at {after[:12]}, not fetched yet), "
            f"fast-forward {repo} from {before[:12]} if it can, then show the new plan. "
            "Nothing was changed."
        )
    else:
        term.line(
            f"Dry run: `sys pull` would refuse: {repo} ({before[:12]}) and {upstream} "
            f"({after[:12]}) have diverged, so it cannot fast-forward. Nothing was changed."
        )
    return 0


def _plan_or_apply(
    term: "Terminal", config: Path, *, apply: bool, facts: list[str], jobs: int | None = None
) -> int:
    if apply:
        from syslua.cli.commands import apply as apply_cmd

        return apply_cmd.run(
            term,
            config,
            noop=False,
            health_check_only=False,
            jobs=jobs,
            facts=facts,
            impure=False,
            max_depth=10,
            message=None,
            wait=False,
        )
    from syslua.cli.commands import plan as plan_cmd

    return plan_cmd.run(
        term, config, diff=False, exit_code=False, facts=facts, impure=False, max_depth=10
    )


def _local_changes(e: "LocalChanges", start: Path, apply: bool) -> "GitError":
    """The refusal of a pull over changes not committed: git's reason, and
    the two ways on, each a line of commands that works as printed (from
    `start`, where `sys pull` finds the config again)."""
    import shlex

    from syslua.resources.git import GitError

    here = f"cd {shlex.quote(str(start.resolve()))}"
    again = f"sys pull{' --apply' if apply else ''}"
    reason = "".join(f"\n  {ln.expandtabs(4)}" for ln in e.said)
    return GitError(
        f"{e.message}:{reason}",
        hint="Nothing was changed.\nKeep the changes in a commit, then pull over them:\n"
        f"  {here} && git add -A && git commit -m 'local changes' && git pull --rebase && {again}"
        "\nor put them aside, pull, and bring them back:\n"
        f"  {here} && git stash push --include-untracked && {again} && git stash pop",
    )
