"""`sys init [DIR]`: a starter sys.lua, and editor support for lua-language-server:
type stubs copied into DIR/.syslua/types and a .luarc.json that points there.
`sys init --stubs [DIR]` refreshes the stubs beside an existing config.

Nothing that exists is overwritten (the stubs, syslua's own copies, are
refreshed): each file is written, or left alone because it exists, and the
output says which, file by file."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import FactOpt, JobsOpt, NoColorOpt, QuietOpt, VerboseOpt

if TYPE_CHECKING:
    from syslua.cli.output import Terminal

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


def command(
    directory: Annotated[
        Path | None,
        typer.Argument(metavar="DIR", help="Where to write sys.lua (default: ~/.config/syslua)."),
    ] = None,
    stubs: Annotated[
        bool,
        typer.Option(
            "--stubs",
            help="Only refresh the type stubs in DIR/.syslua/types (after an upgrade); "
            "sys.lua is not touched.",
        ),
    ] = False,
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="URL",
            help="Clone this git repository into DIR (missing or empty) with the system git, "
            "then show its plan.",
            show_default=False,
        ),
    ] = None,
    apply_: Annotated[
        bool,
        typer.Option("--apply", help="With --from: apply the cloned config instead of planning."),
    ] = False,
    fact: FactOpt = None,
    jobs: JobsOpt = None,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Write a starter sys.lua, type stubs and a .luarc.json for lua-language-server;
    files that exist are left alone, and each file is listed as written or left alone.
    With --from URL: clone a config repository instead, and plan or --apply it.

    \b
    Examples:
      sys init
      sys init ~/dotfiles && sys plan ~/dotfiles/sys.lua
      sys init --stubs ~/dotfiles         # after upgrading syslua
      sys init --from https://example.org/me/dotfiles.git --apply
    """
    from syslua.errors import UsageError

    term = terminal(False, verbose, quiet, no_color)
    if from_ is None:
        if apply_:
            raise UsageError("--apply goes with --from URL: `sys init --from URL --apply`")
        raise typer.Exit(run(term, directory, stubs_only=stubs))
    if stubs:
        raise UsageError("--stubs and --from cannot be used together")
    from syslua.cli.commands import repo

    raise typer.Exit(
        repo.init_from(term, from_, directory, apply=apply_, facts=fact or [], jobs=jobs)
    )


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
    from syslua.paths import shipped_dirs

    lua_dir, _ = shipped_dirs()
    dest = target / STUBS
    for stub in sorted((Path(lua_dir) / "types").glob("*.lua")):
        atomic_write(dest / stub.name, stub.read_bytes(), durable=False)
    return dest


def luarc_text() -> str:
    """A .luarc.json naming the copied stubs (relative, so it works wherever the directory goes)."""
    import json

    luarc = {
        "runtime.version": "LuaJIT",
        "workspace.library": [STUBS],
        "diagnostics.globals": ["sys", "lib", *_declarations()],
    }
    return json.dumps(luarc, indent=2) + "\n"


def _names_stubs(rc: Path) -> bool:
    """Whether an existing .luarc.json lists the copied stubs in workspace.library."""
    import json

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


def run(term: "Terminal", directory: Path | None, *, stubs_only: bool = False) -> int:
    """Write each file that is not there yet and leave every existing one alone,
    saying which is which: a line per file, `written: PATH` or
    `left alone because it exists: PATH`. The type stubs are syslua's own
    copies and are refreshed every time; `stubs_only` refreshes just them."""
    from syslua.errors import UsageError
    from syslua.paths import home

    target = Path(directory) if directory else Path(home()) / ".config" / "syslua"
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
            _write_new(term, config, STARTER)
        rc_written = _write_new(term, rc, luarc_text())
    except OSError as e:
        raise UsageError(
            f"cannot write the editor support into {target}: {e.strerror or e}: {e.filename}"
        ) from e
    term.line(f"{'refreshed' if stubs_only else 'written'}: {stubs}/ (type stubs)")
    if not rc_written and not _names_stubs(rc):
        term.line(
            f"Left {rc} as it was; it does not list {STUBS} in workspace.library: "
            "add it there for completion."
        )
    if not stubs_only:
        term.line(f"Next: sys plan {config}")
    return 0


def _write_new(term: "Terminal", path: Path, text: str) -> bool:
    """Write `path` unless something is there (a file, a link, even a broken one)."""
    from syslua.fsutil import atomic_write

    if path.is_symlink() or path.exists():
        term.line(f"left alone because it exists: {path}")
        return False
    atomic_write(path, text.encode("utf-8"), 0o644)
    term.line(f"written: {path}")
    return True
