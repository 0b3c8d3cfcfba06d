"""`sys init [DIR]`: a starter sys.lua and a .luarc.json for lua-language-server.

Nothing that exists is overwritten: each file is written, or left alone
because it exists, and the output says which, file by file."""

from __future__ import annotations

import json
from pathlib import Path

from syslua.cli.output import Terminal
from syslua.errors import UsageError
from syslua.fsutil import atomic_write
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
-- exec { name = "setup", command = "touch ~/.setup-done", creates = "~/.setup-done" }
"""


def _declarations() -> list[str]:
    """The declarations a config calls as Lua globals (`sys.build`/`sys.bind` live under `sys`)."""
    from syslua.manifest.primitives import PRIMITIVES
    from syslua.manifest.schema import SCHEMAS

    return [name for name in SCHEMAS if name not in PRIMITIVES]


def run(term: Terminal, directory: Path | None) -> int:
    """Write each file that is not there yet and leave every existing one alone,
    saying which is which: a line per file, `written: PATH` or
    `left alone because it exists: PATH`."""
    target = Path(directory) if directory else Path(home()) / ".config" / "syslua"
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is not a directory")
    config = target / "sys.lua"
    lua_dir, _ = shipped_dirs()
    luarc = {
        "runtime.version": "LuaJIT",
        "workspace.library": [str(Path(lua_dir) / "types")],
        "diagnostics.globals": ["sys", "lib", *_declarations()],
    }
    files = [(config, STARTER), (target / ".luarc.json", json.dumps(luarc, indent=2) + "\n")]
    target.mkdir(parents=True, exist_ok=True)
    for path, text in files:
        _write_new(term, path, text)
    term.line(f"Next: sys plan {config}")
    return 0


def _write_new(term: Terminal, path: Path, text: str) -> bool:
    """Write `path` unless something is there (a file, a link, even a broken one)."""
    if path.is_symlink() or path.exists():
        term.line(f"left alone because it exists: {path}")
        return False
    atomic_write(path, text.encode("utf-8"), 0o644)
    term.line(f"written: {path}")
    return True
