"""`sys init [DIR]`: a starter sys.lua and a .luarc.json for lua-language-server."""

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


def run(term: Terminal, directory: Path | None) -> int:
    target = Path(directory) if directory else Path(home()) / ".config" / "syslua"
    config = target / "sys.lua"
    if config.exists():
        raise UsageError(f"{config} already exists; not overwriting it")
    target.mkdir(parents=True, exist_ok=True)
    config.write_text(STARTER, encoding="utf-8")
    lua_dir, _ = shipped_dirs()
    luarc = {
        "runtime.version": "LuaJIT",
        "workspace.library": [str(Path(lua_dir) / "types")],
        "diagnostics.globals": ["sys", "lib", *_declarations()],
    }
    rc = target / ".luarc.json"
    if not rc.exists():
        rc.write_text(json.dumps(luarc, indent=2) + "\n", encoding="utf-8")
    term.line(f"Wrote {config} and {rc}.")
    term.line(f"Next: sys plan {config}")
    return 0
