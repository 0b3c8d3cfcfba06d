"""Which config file a command evaluates, and the git inputs it may fetch.

`find_config` takes CONFIG as given (a file, or a directory holding sys.lua
or init.lua) or, without it, looks for `./sys.lua`, `./init.lua`, the same
in `~/.config/syslua/`, then the config the current snapshot was made from.
`GitInputs` fetches the git inputs of a config in the original's entry
form, loading the git code only when one is fetched. `config_info` says
which config a command would use and what its lock file pins.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from syslua.errors import StateError, UsageError
from syslua.paths import Paths, config_in, default_config, home


def default_dir() -> Path:
    """Where `sys init` writes a config, and `sys init --from` clones one."""
    return Path(home()) / ".config" / "syslua"


def find_config(
    config: Path | None,
    paths: Paths | None = None,
    log: Callable[[str], None] | None = None,
    example: str = "sys plan path/to/sys.lua",
) -> Path:
    """CONFIG as given (a file, or a directory holding sys.lua or init.lua);
    without it, `./sys.lua`, `./init.lua`, `~/.config/syslua/sys.lua`,
    `~/.config/syslua/init.lua`, then the config file the current
    snapshot's apply used, read again from disk, while it still exists
    (`log` is told when that one is used). `example`: how the command is
    given a config, for the error when there is none."""
    if config is not None:
        if not config.exists():
            raise UsageError(f"config file not found: {config}")
        if config.is_dir():
            candidate = config_in(config)
            if candidate is None:
                raise UsageError(f"no sys.lua or init.lua in {config}")
            return candidate
        return config
    found = default_config()
    if found is not None:
        return found
    recorded = snapshot_config(paths or Paths.from_env())
    if recorded is not None and recorded.is_file():
        if log is not None:
            log(f"Using {recorded}, the config of the current snapshot.")
        return recorded
    gone = f"; the current snapshot's config {recorded} no longer exists" if recorded else ""
    raise UsageError(
        f"no config file: pass one ({example}) or create ./sys.lua (or ./init.lua) "
        f"or ~/.config/syslua/sys.lua (or init.lua; sys init writes a starter){gone}"
    )


def config_info(config: Path | None, paths: Paths) -> dict[str, Any]:
    """The config a command would evaluate (`path`), how it was found
    (`found_by`: given, default or current snapshot), and the lock file
    beside it with the inputs it pins (`sys info`); nothing is evaluated."""
    from syslua.eval.inputs import LOCK_NAME

    found, how = None, None
    if config is not None:
        found, how = find_config(config, paths), "given"
    else:
        found = default_config()
        how = "default" if found else None
        if found is None:
            recorded = snapshot_config(paths)
            if recorded is not None and recorded.is_file():
                found, how = recorded, "current snapshot"
    if found is None:
        return {"path": None, "found_by": None, "lock": None, "inputs": {}}
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
    return {"path": str(found), "found_by": how, "lock": lock, "inputs": inputs}


def snapshot_config(paths: Paths) -> Path | None:
    """The config file the current snapshot was made from (None before the
    first apply, or when the snapshot cannot be read: then it names nothing)."""
    from syslua.state.snapshots import Snapshots

    try:
        snap = Snapshots(paths).current()
    except (StateError, UsageError, OSError):
        return None
    return Path(snap.config) if snap is not None and snap.config else None


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
