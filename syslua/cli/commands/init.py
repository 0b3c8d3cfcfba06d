"""`sys init [DIR]`: a starter sys.lua, and editor support for lua-language-server:
type stubs copied into DIR/.syslua/types and a .luarc.json that points there.
`sys init --stubs [DIR]` refreshes the stubs beside an existing config."""

from __future__ import annotations

import json
from pathlib import Path

from syslua.cli.output import Terminal
from syslua.errors import UsageError
from syslua.paths import home, shipped_dirs

STARTER = """\
-- sys.lua: describe this machine. Preview with `sys plan`, converge with `sys apply`.
local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP, mode = "0644" } }

-- A dotfile written from inline content:
-- file { path = "~/.gitconfig", content = "[user]\\n\\tname = Your Name\\n" }

-- A directory, and a file copied from beside this config:
-- file { path = "~/.config/nvim", ensure = "directory", mode = "0755" }
-- file { path = "~/.config/nvim/init.lua", source = "nvim/init.lua" }

-- Environment variables for `sys env`'s shell line; PATH entries merge:
env { EDITOR = "vi" }
-- env { PATH = lib.mkBefore("~/.local/bin") }

-- A command that runs once, until the file it creates exists:
-- exec { name = "setup", command = "touch ~/.setup-done", provider = "shell", creates = "~/.setup-done" }
"""


def _declarations() -> list[str]:
    """The declarations a config calls as Lua globals (`sys.build`/`sys.bind` live under `sys`)."""
    from syslua.manifest.primitives import PRIMITIVES
    from syslua.manifest.schema import SCHEMAS

    return [name for name in SCHEMAS if name not in PRIMITIVES]


# Where the type stubs are copied, relative to the config's directory; the
# .luarc.json written beside the config names it relatively, so the pair
# works wherever the directory is moved or cloned.
STUBS = ".syslua/types"


def copy_stubs(target: Path) -> Path:
    """Copy the shipped lua-language-server stubs into `target`/.syslua/types
    (replacing older copies) and return that directory."""
    from syslua.fsutil import atomic_write

    lua_dir, _ = shipped_dirs()
    dest = target / STUBS
    for stub in sorted((Path(lua_dir) / "types").glob("*.lua")):
        atomic_write(dest / stub.name, stub.read_bytes(), durable=False)
    return dest


def write_luarc(rc: Path) -> bool:
    """Write .luarc.json pointing at the copied stubs; an existing one is left alone (False)."""
    if rc.exists() or rc.is_symlink():
        return False
    from syslua.fsutil import atomic_write

    luarc = {
        "runtime.version": "LuaJIT",
        "workspace.library": [STUBS],
        "diagnostics.globals": ["sys", "lib", *_declarations()],
    }
    atomic_write(rc, (json.dumps(luarc, indent=2) + "\n").encode("utf-8"), durable=False)
    return True


def _names_stubs(rc: Path) -> bool:
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


def run(term: Terminal, directory: Path | None, *, stubs_only: bool = False) -> int:
    target = Path(directory) if directory else Path(home()) / ".config" / "syslua"
    config = target / "sys.lua"
    if stubs_only:
        if not target.is_dir():
            raise UsageError(
                f"{target} is not a directory: `sys init --stubs` refreshes the stubs "
                "beside an existing config (`sys init` writes a new one)"
            )
    else:
        if config.exists():
            raise UsageError(f"{config} already exists; not overwriting it")
        target.mkdir(parents=True, exist_ok=True)
        config.write_text(STARTER, encoding="utf-8")
    rc = target / ".luarc.json"
    try:
        stubs = copy_stubs(target)
        rc_written = write_luarc(rc)
    except OSError as e:
        raise UsageError(
            f"cannot write the editor support into {target}: {e.strerror or e}: {e.filename}"
        ) from e
    if stubs_only:
        term.line(f"Refreshed the type stubs in {stubs}.")
        if rc_written:
            term.line(f"Wrote {rc}.")
    else:
        wrote = f"{config}, {rc} and" if rc_written else f"{config} and"
        term.line(f"Wrote {wrote} the type stubs in {stubs}.")
    if not rc_written and not _names_stubs(rc):
        term.line(
            f"Left {rc} as it was; it does not list {STUBS} in workspace.library: "
            "add it there for completion."
        )
    if not stubs_only:
        term.line(f"Next: sys plan {config}")
    return 0
