"""A starter config and editor support for lua-language-server (`sys init`).

`write_starter` writes a starter `sys.lua`, the type stubs shipped with
syslua (copied into `.syslua/types`) and a `.luarc.json` that names them,
into a directory. Nothing that exists is overwritten: each file is written,
or left alone because it exists, and `on_file` is told which. The stubs are
syslua's own copies and are refreshed every time; `stubs_only` refreshes
just them, beside an existing config.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from syslua.errors import UsageError
from syslua.fsutil import atomic_write
from syslua.paths import shipped_dirs

STARTER = """\
-- sys.lua: describe this machine. Preview with `sys plan`, converge with `sys apply`.
-- Every line below is an example, commented out: as written, this config
-- changes nothing. Uncomment (remove the leading `-- `) what you want.
-- Files under the home are yours: 0644 for inline content, a copy keeps its
-- source's mode, directories 0755 (declare owner, group or mode to change them).

-- A dotfile written from inline content:
-- file { path = "~/.gitconfig", content = "[user]\\n\\tname = Your Name\\n" }

-- A directory, and a file copied from beside this config:
-- file { path = "~/.config/nvim", ensure = "directory" }
-- file { path = "~/.config/nvim/init.lua", source = "nvim/init.lua" }

-- Environment variables for `sys env`'s shell line; PATH entries merge:
-- env { EDITOR = "vi" }
-- env { PATH = lib.mkBefore("~/.local/bin") }

-- A command that runs once, until the file it creates exists:
-- exec { name = "setup", command = "touch ~/.setup-done", provider = "shell", creates = "~/.setup-done" }
"""


def _declarations() -> list[str]:
    """The declarations a config calls as Lua globals (`sys.build`/`sys.bind` live under `sys`)."""
    from syslua import registry

    return [*registry.lua_declarations(), "defaults"]


# Where the type stubs are copied, relative to the config's directory; the
# .luarc.json written beside the config names it relatively, so the pair
# works wherever the directory is moved or cloned.
STUBS = ".syslua/types"


def copy_stubs(target: Path) -> Path:
    """Copy the shipped lua-language-server stubs into `target`/.syslua/types
    (replacing older copies) and return that directory."""
    lua_dir, _ = shipped_dirs()
    dest = target / STUBS
    for stub in sorted((Path(lua_dir) / "types").glob("*.lua")):
        atomic_write(dest / stub.name, stub.read_bytes(), durable=False)
    return dest


def luarc_text() -> str:
    """A .luarc.json naming the copied stubs (relative, so it works wherever the directory goes)."""
    luarc = {
        "runtime.version": "LuaJIT",
        "workspace.library": [STUBS],
        "diagnostics.globals": ["sys", "lib", *_declarations()],
    }
    return json.dumps(luarc, indent=2) + "\n"


def names_stubs(rc: Path) -> bool:
    """Whether an existing .luarc.json lists the copied stubs in workspace.library."""
    try:
        data = json.loads(rc.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict):
        return False
    # lua-language-server reads the key flat, prefixed, or nested
    library = data.get("workspace.library", data.get("Lua.workspace.library"))
    if library is None and isinstance(data.get("workspace"), dict):
        library = data["workspace"].get("library")
    return isinstance(library, list) and any(
        isinstance(p, str) and p.rstrip("/") in (STUBS, "./" + STUBS, str(rc.parent / STUBS))
        for p in library
    )


class Starter:
    """What `write_starter` wrote: where, and whether it wrote the .luarc.json."""

    def __init__(self, config: Path, rc: Path, stubs: Path, rc_written: bool) -> None:
        self.config = config  # the starter sys.lua (written, or left alone)
        self.rc = rc  # the .luarc.json
        self.stubs = stubs  # the directory of the copied stubs
        self.rc_written = rc_written


def write_starter(
    target: Path, *, stubs_only: bool, on_file: Callable[[Path, bool], None]
) -> Starter:
    """Write what is not there yet into `target` (see the module's docstring);
    `on_file(path, written)` is told of each file as it is written or left alone."""
    config = target / "sys.lua"
    rc = target / ".luarc.json"
    if stubs_only and not target.is_dir():
        raise UsageError(
            f"{target} is not a directory: `sys init --stubs` refreshes the stubs "
            "beside an existing config (`sys init` writes a new one)"
        )
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is not a directory")
    try:
        target.mkdir(parents=True, exist_ok=True)
        stubs = copy_stubs(target)  # first: when they cannot be copied, nothing else is written
        if not stubs_only:
            _write_new(config, STARTER, on_file)
        rc_written = _write_new(rc, luarc_text(), on_file)
    except OSError as e:
        raise UsageError(
            f"cannot write the editor support into {target}: {e.strerror or e}: {e.filename}"
        ) from e
    return Starter(config, rc, stubs, rc_written)


def _write_new(path: Path, text: str, on_file: Callable[[Path, bool], None]) -> bool:
    """Write `path` unless something is there (a file, a link, even a broken one)."""
    if path.is_symlink() or path.exists():
        on_file(path, False)
        return False
    atomic_write(path, text.encode("utf-8"), 0o644)
    on_file(path, True)
    return True
