"""Every path syslua uses comes from here.

`SYSLUA_ROOT` puts all state under one directory (`store/`, `state/`,
`cache/`); otherwise the platformdirs user data, state and cache dirs are
used. The shipped Lua code and package catalogue are found beside the
installed package (`syslua/_data/`) or, in a source checkout, at the
repository's top level.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from syslua.record import Frozen

APP = "syslua"


_home_cache: tuple[str | None, str] = (None, "")


def home() -> str:
    """The home of the user running `sys` (`$HOME`; tests point it at a temp dir)."""
    global _home_cache
    raw = os.environ.get("HOME")
    if raw is None or raw != _home_cache[0]:
        _home_cache = (raw, os.path.normpath(raw or os.path.expanduser("~")))
    return _home_cache[1]


def abbreviate(path: str) -> str:
    """Show a path under the home as `~/...` for human output."""
    h = home().rstrip("/")
    if path == h:
        return "~"
    if path.startswith(h) and path[len(h) : len(h) + 1] == "/":
        return "~" + path[len(h) :]
    return path


def root_hint() -> str:
    """How to get out of an unusable store, state or cache directory."""
    root = os.environ.get("SYSLUA_ROOT")
    if root:
        return f"SYSLUA_ROOT is {root}: point it at a directory you can write, or fix the path."
    return "Fix the path, or set SYSLUA_ROOT to a directory you can write."


class Paths(Frozen):
    """Where syslua keeps its store, state and cache. Read-only; equal when the
    four directories are."""

    __slots__ = ("store", "state", "cache", "config")
    _names = __slots__
    store: Path
    state: Path
    cache: Path
    config: Path

    def __init__(self, store: Path, state: Path, cache: Path, config: Path) -> None:
        for name, value in zip(self.__slots__, (store, state, cache, config), strict=True):
            object.__setattr__(self, name, value)

    @classmethod
    def from_env(cls) -> Paths:
        root = os.environ.get("SYSLUA_ROOT")
        config = Path(home()) / ".config" / APP
        if root:
            base = Path(root).absolute()
            return cls(base / "store", base / "state", base / "cache", config)
        import platformdirs

        return cls(
            Path(platformdirs.user_data_dir(APP)) / "store",
            Path(platformdirs.user_state_dir(APP)),
            Path(platformdirs.user_cache_dir(APP)),
            Path(platformdirs.user_config_dir(APP)),
        )

    # state layout
    @property
    def snapshots(self) -> Path:
        return self.state / "snapshots"

    @property
    def journal(self) -> Path:
        return self.state / "journal"

    @property
    def failed_journals(self) -> Path:
        return self.state / "failed-journals"

    @property
    def lock(self) -> Path:
        return self.state / "lock"

    @property
    def profile(self) -> Path:
        return self.state / "profile"

    @property
    def profiles(self) -> Path:
        return self.state / "profiles"

    @property
    def binds(self) -> Path:
        return self.state / "binds"

    @property
    def env_sh(self) -> Path:
        return self.state / "env.sh"

    @property
    def env_fish(self) -> Path:
        return self.state / "env.fish"

    @property
    def env_private_sh(self) -> Path:
        """The variables made with a secret (0600), which `env.sh` loads when it can."""
        return self.state / "env.private.sh"

    @property
    def env_private_fish(self) -> Path:
        return self.state / "env.private.fish"


@cache
def shipped_dirs() -> tuple[str, str]:
    """(lua dir, pkgs dir) shipped with syslua."""
    here = Path(__file__).resolve().parent
    installed = here / "_data"
    if (installed / "lua" / "prelude.lua").is_file():
        return str(installed / "lua"), str(installed / "pkgs")
    top = here.parent
    return str(top / "lua"), str(top / "pkgs")


CONFIG_NAMES = ("sys.lua", "init.lua")  # `init.lua`: the original sys.lua's name


def config_in(directory: Path) -> Path | None:
    """The config file of a directory: its `sys.lua`, else its `init.lua`."""
    for name in CONFIG_NAMES:
        if (directory / name).is_file():
            return directory / name
    return None


def default_config() -> Path | None:
    """`./sys.lua`, `./init.lua`, then the same names in `~/.config/syslua/` (SPEC section 8)."""
    return config_in(Path.cwd()) or config_in(Path(home()) / ".config" / APP)
