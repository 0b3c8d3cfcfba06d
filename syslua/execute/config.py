"""Which config file a command evaluates, and the git inputs it may fetch.

`find_config` takes CONFIG as given (a file, or a directory holding sys.lua
or init.lua) or, without it, looks for `./sys.lua`, `./init.lua`, the same
in `~/.config/syslua/`, then the config the current snapshot was made from.
A file found that is not the current snapshot's config (a Neovim `init.lua`
in ~/.config/nvim) comes with that config (`locate_config`), before it is
evaluated: a command that changes the machine refuses it, one that only
reads names it (SPEC section 8).
`GitInputs` fetches the git inputs of a config in the original's entry
form, loading the git code only when one is fetched. `config_info` says
which config a command would use and what its lock file pins.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from syslua.errors import StateError, UsageError
from syslua.importers.detect import Foreign, foreign_dir, foreign_file
from syslua.paths import Paths, abbreviate, config_in, default_config, home


def default_dir() -> Path:
    """Where `sys init` writes a config, and `sys init --from` clones one."""
    return Path(home()) / ".config" / "syslua"


class Found(NamedTuple):
    """The config a command evaluates (`path`), how it was found (`how`:
    given, default or current snapshot) and, when discovery found a file
    that is not the current snapshot's config, that config (`current`, as
    the snapshot records it, which may no longer exist)."""

    path: Path
    how: str
    current: Path | None = None

    def shown(self) -> str:
        """`path` as the user would type it here: `./init.lua`, `~/...`."""
        return shown_path(self.path)

    def refusal(self, example: str) -> UsageError:
        """Why a command that changes the machine does not use a found file
        that is not the current snapshot's config. `example`: the command
        given a config, `{}` standing for it (`sys apply {}`)."""
        assert self.current is not None
        current = shown_path(self.current)
        use = f"pass it explicitly to use it ({example.replace('{}', self.shown())})"
        if self.current.exists():
            use += f", or pass the current one ({example.replace('{}', current)})"
        else:
            current += ", which no longer exists"
        return UsageError(
            f"{self.shown()} is not the config of the current snapshot ({current}): {use}",
            reason="not_current_config",
        )

    def note(self) -> str:
        """What a read-only command says when it uses such a file."""
        assert self.current is not None
        return f"Using {self.shown()} (the current snapshot was applied from {shown_path(self.current)})"


def shown_path(path: Path) -> str:
    """A config path as the user would type it: `./init.lua` in the current
    directory, `~/...` under the home, else as it is."""
    if path.parent == Path.cwd():
        return f"./{path.name}"
    return abbreviate(str(path))


def find_config(
    config: Path | None,
    paths: Paths | None = None,
    log: Callable[[str], None] | None = None,
    example: str = "sys plan path/to/sys.lua",
) -> Path:
    """The path of `locate_config`'s config."""
    return locate_config(config, paths, log, example).path


def locate_config(
    config: Path | None,
    paths: Paths | None = None,
    log: Callable[[str], None] | None = None,
    example: str = "sys plan path/to/sys.lua",
) -> Found:
    """CONFIG as given (a file, or a directory holding sys.lua or init.lua);
    without it, `./sys.lua`, `./init.lua`, `~/.config/syslua/sys.lua`,
    `~/.config/syslua/init.lua`, then the config file the current
    snapshot's apply used, read again from disk, while it still exists
    (`log` is told when that one is used). A file found that is not the
    current snapshot's config carries that config (`Found.current`): the
    caller refuses it or names it, before evaluating it. `example`: how the
    command is given a config, for the error when there is none."""
    if config is not None:
        if not config.exists():
            raise UsageError(f"config file not found: {config}")
        if config.is_dir():
            candidate = config_in(config)
            if candidate is None:
                raise _no_config_in(config)
            return Found(candidate, "given")
        _refuse_foreign(config)
        return Found(config, "given")
    found = default_config()
    recorded = snapshot_config(paths or Paths.from_env())
    if found is not None:
        if recorded is not None and not _same_file(found, recorded):
            return Found(found, "default", recorded)
        return Found(found, "default")
    if recorded is not None and recorded.is_file():
        if log is not None:
            log(f"Using {recorded}, the config of the current snapshot.")
        return Found(recorded, "current snapshot")
    gone = f"; the current snapshot's config {recorded} no longer exists" if recorded else ""
    here = foreign_dir(Path.cwd())
    raise UsageError(
        f"no config file: pass one ({example}) or create ./sys.lua (or ./init.lua) "
        f"or ~/.config/syslua/sys.lua (or init.lua; sys init writes a starter){gone}",
        hint=None if here is None else f"This directory looks like {here.what}. {_import(here)}",
    )


# Another manager's config given as CONFIG (issue 24, point 3): what it looks
# like, and the `sys import` that writes a sys.lua from it.
def _import(foreign: Foreign) -> str:
    return f"To write a sys.lua from it (and see its plan): {foreign.command()}"


def _refuse_foreign(config: Path) -> None:
    """A file given as CONFIG that is another manager's (a dotbot
    install.conf.yaml, which would be read as a CCM manifest) is refused."""
    foreign = foreign_file(config)
    if foreign is not None:
        raise UsageError(
            f"{_as_given(config)} looks like {foreign.what}, not a syslua config",
            hint=_import(foreign),
        )


def _as_given(path: Path) -> str:
    """CONFIG as typed, or `~/...` for an absolute path under the home (`.` as its path)."""
    if str(path) in (".", ".."):
        return shown_path(path.absolute())
    return abbreviate(str(path)) if path.is_absolute() else str(path)


def _no_config_in(directory: Path) -> UsageError:
    """A directory given as CONFIG without a sys.lua or init.lua: what it
    looks like when it is another manager's (a stow directory)."""
    foreign = foreign_dir(directory)
    if foreign is None:
        return UsageError(f"no sys.lua or init.lua in {directory}")
    return UsageError(
        f"{_as_given(directory)} has no sys.lua or init.lua: it looks like {foreign.what}",
        hint=_import(foreign),
    )


def _same_file(found: Path, recorded: Path) -> bool:
    """Whether the file found is the recorded one: the same path, or the same
    file through a link (~/.config/syslua -> ~/dotfiles)."""
    if os.path.abspath(found) == os.path.abspath(recorded):
        return True
    try:
        return os.path.samefile(found, recorded)
    except OSError:
        return False


def config_info(config: Path | None, paths: Paths) -> dict[str, Any]:
    """The config a command would evaluate (`path`), how it was found
    (`found_by`: given, default or current snapshot), and the lock file
    beside it with the inputs it pins (`sys info`); nothing is evaluated.
    `_not_current`: the current snapshot's config, when discovery found
    another file (`Found.current`)."""
    from syslua.eval.inputs import LOCK_NAME

    if config is not None:
        located = locate_config(config, paths)
    else:
        try:
            located = locate_config(None, paths)
        except UsageError:
            return {"path": None, "found_by": None, "lock": None, "inputs": {}}
    found, how = located.path, located.how
    found = Path(os.path.abspath(found))
    lock_path = found.parent / LOCK_NAME
    inputs: dict[str, Any] = {}
    lock: str | None = None
    if lock_path.is_file():
        lock = str(lock_path)
        try:
            doc = json.loads(lock_path.read_text(encoding="utf-8"))
            nodes = doc["nodes"]
            for name, node_id in sorted(nodes[doc.get("root", "root")]["inputs"].items()):
                node = nodes.get(node_id, {})
                inputs[name] = {
                    "type": node.get("type"),
                    "url": node.get("url"),
                    "rev": node.get("rev"),
                }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            inputs = {}
    info: dict[str, Any] = {"path": str(found), "found_by": how, "lock": lock, "inputs": inputs}
    if located.current is not None:
        info["_not_current"] = str(located.current)  # for the text only: --json has snapshot.config
    return info


def snapshot_config(paths: Paths) -> Path | None:
    """The config file the current snapshot was made from (None before the
    first apply, after a destroy, or when the snapshot cannot be read: then
    it names nothing)."""
    from syslua.state.snapshots import Snapshots

    try:
        config = Snapshots(paths).current_config()
    except (StateError, UsageError, OSError):
        return None
    return Path(config) if config else None


class GitInputs:
    """Fetches the git inputs of a config in the original's entry form
    (`eval.inputs.GitFetcher`), loading the git code only when one is fetched."""

    def __init__(self) -> None:
        self._fetcher: Any = None

    def _get(self) -> Any:
        if self._fetcher is None:
            from syslua.resources.git import InputFetcher

            self._fetcher = InputFetcher()
        return self._fetcher

    def latest(self, url: str, ref: str | None) -> str:
        return str(self._get().latest(url, ref))

    def checkout(self, url: str, rev: str, dest: Path) -> None:
        self._get().checkout(url, rev, dest)
