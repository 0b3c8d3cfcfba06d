"""Config repositories: a config cloned with the system git (`sys init --from
URL [DIR]`) and fast-forwarded later (`sys pull [DIR]`).

Both refuse rather than guess: a clone goes only into a directory that is
missing or empty, and what a failed clone left is taken back; the clone to
pull is DIR, else the current directory when it holds a config, else the
directory of the config `sys plan` would use.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from syslua.errors import UsageError
from syslua.execute.config import default_dir, find_config
from syslua.paths import Paths, config_in
from syslua.resources import git
from syslua.resources.process import Runner


def clone_target(directory: Path | None) -> tuple[Path, bool]:
    """Where `sys init --from` clones (default ~/.config/syslua), and whether
    that directory exists already (empty, else it is refused)."""
    target = Path(directory) if directory else default_dir()
    target = Path(target).expanduser()
    if target.is_symlink() and not target.exists():
        raise UsageError(f"{target} is a broken symlink: `sys init --from` clones into a directory")
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is not a directory: `sys init --from` clones into a directory")
    existed = target.is_dir()
    if existed and any(target.iterdir()):
        raise UsageError(
            f"{target} is not empty: `sys init --from` clones into a new or empty directory",
            hint=f"Pass another DIR, or update an existing clone with `sys pull {target}`.",
        )
    return target, existed


def clone_into(url: str, target: Path, existed: bool, runner: Runner) -> str:
    """Clone `url` into `target` (checked by `clone_target`); returns the
    commit. A clone that fails (or is interrupted) leaves nothing behind."""
    try:
        return git.clone(url, target, runner)
    except BaseException:
        _clean(target, existed)
        raise


def _clean(target: Path, existed: bool) -> None:
    """Take back what a failed clone left: the directory it made, or what it
    wrote into the empty one it was given."""
    if not target.is_dir():
        return
    if not existed:
        shutil.rmtree(target, ignore_errors=True)
        return
    for child in target.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def clone_to_pull(
    directory: Path | None, runner: Runner, log: Callable[[str], None] | None = None
) -> tuple[Path, Path, Path | None]:
    """The clone `sys pull` updates: where it starts (DIR, else the current
    directory when it holds a config, else the directory of the config
    `sys plan` would use: `log` is told when that is the current
    snapshot's), the top of its git repository, and the config found on the
    way (None when found by directory)."""
    config: Path | None = None
    if directory is not None:
        start = Path(directory).expanduser()
        if not start.is_dir():
            raise UsageError(f"{start} is not a directory")
    elif config_in(Path.cwd()) is not None:
        start = Path.cwd()
    else:
        config = find_config(None, Paths.from_env(), log, "sys pull path/to/clone")
        start = config.parent
    repo = git.toplevel(start, runner)
    if repo is None:
        raise UsageError(
            f"{start} is not in a git repository: `sys pull` updates a config cloned "
            "with `sys init --from URL`"
        )
    return start, repo, config
