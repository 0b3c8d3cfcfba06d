"""Where the line that loads the env scripts goes, and whether a config needs it.

The line itself, and the rc file each shell reads, are `syslua/shellrc.py`'s;
what they mean for one config is here:

- `needs_shell`: the config declares something a shell sees only through
  the env script: an item of a kind the registry marks `shell` (variables;
  packages, whose commands are on PATH through the profile), or the
  aliases of the original sys.lua's library. A config of dotfiles only
  needs nothing, and is told nothing.
- `alias_scripts`: `syslua.environment.aliases` writes its aliases to
  ~/.config/syslua/aliases.sh and aliases.fish (`lua/syslua/environment/
  aliases.lua`); the env scripts load the ones the config declares, so the
  one line in the rc file brings them too.
- `rc_target`: the rc file a shell reads and, when the config manages it,
  where its content comes from: the source file it is a copy of or a link
  to (a single file or a member of a tree): the line goes there, in the
  repository, never through the home's link; or the declaration of its
  inline content: the line goes into the config, by hand.
- `rc_advice`: what `sys apply` and `sys rollback` suggest once they
  succeeded, while neither the rc file nor its source loads the script.
- `applied_manifest`: the current snapshot's manifest, which `sys env` and
  `sys doctor` ask these questions of.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from syslua import registry
from syslua.manifest.model import Manifest
from syslua.paths import Paths, abbreviate, home
from syslua.shellrc import loaded_by, login_shell, rc_file, rc_line, rc_loads

# Where syslua.environment.aliases writes the aliases (its `M.paths`), under ~.
ALIASES = {"sh": ".config/syslua/aliases.sh", "fish": ".config/syslua/aliases.fish"}


def alias_scripts(manifest: Manifest) -> dict[str, Path]:
    """The alias files of `ALIASES` that the config declares ("sh", "fish")."""
    out = {}
    for shell, rel in ALIASES.items():
        path = os.path.join(home(), rel)
        item = manifest.get(f"file#{path}")
        if item is not None and item.get("ensure") in ("present", "link"):
            out[shell] = Path(path)
    return out


def needs_shell(manifest: Manifest) -> bool:
    """Whether anything the config declares reaches a shell only through the env script."""
    kinds = registry.for_the_shell()
    return any(item.type in kinds for item in manifest) or bool(alias_scripts(manifest))


def shown(path: Path) -> str:
    """A path for messages: relative to the current directory when it is
    below it (`dotfiles/.bashrc`, `./.bashrc`), else from `~`, else absolute."""
    text = os.path.normpath(path)
    cwd = os.getcwd().rstrip("/")
    if text.startswith(cwd + "/"):
        rel = text[len(cwd) + 1 :]
        return rel if "/" in rel else "./" + rel
    return abbreviate(text)


@dataclass(frozen=True)
class RcTarget:
    """The rc file a shell reads, and what the config makes of it."""

    rc: Path
    source: Path | None = None  # the file it is a copy of, or a link to
    linked: bool = False  # a link to `source` (else a copy of it)
    inline: bool = False  # its content is declared inline in the config
    content: str = ""  # that content, when it is text
    declared: str = ""  # where the config declares it (`sys.lua:3`), when known

    @property
    def target(self) -> Path:
        """The file the line is added to: the source, or the rc file itself."""
        return self.source or self.rc

    def where(self) -> str:
        rc = abbreviate(str(self.rc))
        if self.source is not None:
            return f"{shown(self.source)} (the source of {rc})"
        if self.inline:
            return f"the content of {rc} ({self.declared or 'declared in the config'})"
        return rc

    def loads(self, script: Path) -> bool:
        """Whether the rc file, its source or its declared content loads `script`."""
        files = loaded_by(self.rc) + ([self.source] if self.source is not None else [])
        return rc_loads(files, script, [self.content] if self.content else [])


def rc_target(manifest: Manifest | None, rc: Path) -> RcTarget:
    """What the config `manifest` makes of the rc file `rc` (module docstring)."""
    rc = Path(os.path.normpath(rc))
    item = manifest.get(f"file#{rc}") if manifest is not None else None
    if item is None:
        return RcTarget(rc)
    ensure = item.get("ensure")
    if ensure == "link" and item.get("target"):
        return RcTarget(rc, rc.parent / item.get("target"), linked=True)
    if ensure != "present":
        return RcTarget(rc)
    if item.get("source"):
        return RcTarget(rc, Path(item.get("source")))
    content = item.get("content")
    assert manifest is not None
    return RcTarget(
        rc,
        inline=True,
        content=content if isinstance(content, str) else "",
        declared=manifest.source_of(item.id),
    )


class Advice(NamedTuple):
    where: str  # `~/.bashrc`, `dotfiles/.bashrc (the source of ~/.bashrc)`, ...
    line: str
    appendable: bool  # `sys env --append` can add it there


def rc_advice(paths: Paths, manifest: Manifest | None, first: bool) -> Advice | None:
    """What to suggest after a successful apply of `manifest`: where to add
    the line that loads the env script of `$SHELL`, while the config needs
    it and neither the rc file nor its source loads it; None otherwise. For
    a shell without a known rc file, the sh line for "your shell's rc
    file", only after the first apply (`first`)."""
    if manifest is not None and not needs_shell(manifest):
        return None
    shell = login_shell()
    fish = shell == "fish"
    line = rc_line(paths, "fish" if fish else "sh")
    rc = rc_file(shell)
    if rc is None:
        return Advice("your shell's rc file", line, False) if first else None
    target = rc_target(manifest, rc)
    if target.loads(paths.env_fish if fish else paths.env_sh):
        return None
    return Advice(target.where(), line, not target.inline)


# What `rc_advice` reads of the environment (with the home, which the
# evaluation cache's key holds): the shell, and where its rc file is.
ADVICE_ENVIRON = ("SHELL", "ZDOTDIR", "XDG_CONFIG_HOME")


def advice_reads(manifest: Manifest) -> list[tuple[Path, bool]]:
    """The files `rc_advice` reads for `manifest`, each with whether it lists
    a directory (fish's conf.d) rather than reading a file: while they and
    `ADVICE_ENVIRON` are the same, so is the advice (`execute/proof.py`)."""
    rc = rc_file(login_shell())
    if rc is None:
        return []
    target = rc_target(manifest, rc)
    out = [(f, False) for f in loaded_by(target.rc)]
    if target.rc.name == "config.fish":
        out.append((target.rc.parent / "conf.d", True))
    if target.source is not None:
        out.append((target.source, False))
    return out


def applied_manifest(paths: Paths) -> Manifest | None:
    """The manifest of the current snapshot (None before the first apply)."""
    from syslua.state.snapshots import Snapshots

    snap, _ = Snapshots(paths).usable_current()
    return snap.load_manifest() if snap is not None else None
