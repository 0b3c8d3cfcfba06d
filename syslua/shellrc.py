"""Shell rc files and the line that loads syslua's env scripts from them.

The env type writes `env.sh` (POSIX sh, for bash, zsh and sh-like shells)
and `env.fish`; a shell loads one from its rc file with the line `rc_line`
gives. The line names the script from `$HOME` when the state is under the
home, so the same line works on every machine of the user and belongs in a
dotfiles repository; a `SYSLUA_ROOT` outside the home is named as it is
(the user chose it). It skips a script that is not there yet, so a shell on
a machine syslua has not set up starts quietly.

`rc_file` says which rc file a shell reads, `rc_loads` whether files
already load a script, and `append_line` adds the line to one without
losing a byte of it. Where the line goes when the config manages the rc
file, and whether the config needs it at all, is the env kind's side
(`syslua/resources/env_line.py`). The quoting of the scripts and of that
line is here too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from syslua.fsutil import atomic_write
from syslua.paths import Paths, abbreviate, home


def sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def fish_quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# Characters that mean something inside double quotes, to sh or to fish.
_DOUBLE_QUOTED = frozenset('"$`\\\n')


def script_ref(script: Path, fish: bool) -> str:
    """How the rc line names a script: `"$HOME/..."` when it is under the
    home (the rest single-quoted if it holds a character special inside
    double quotes), otherwise its quoted absolute path."""
    quote = fish_quote if fish else sh_quote
    h, text = home().rstrip("/"), str(script)
    if not text.startswith(h + "/"):
        return quote(text)
    rest = text[len(h) :]
    if _DOUBLE_QUOTED.isdisjoint(rest):
        return f'"$HOME{rest}"'
    return '"$HOME"' + quote(rest)


def rc_line(paths: Paths, shell: str) -> str:
    """The line for the rc file of `shell` ("fish", or any other for the sh line)."""
    if shell == "fish":
        ref = script_ref(paths.env_fish, fish=True)
        return f"test -f {ref}; and source {ref}"
    ref = script_ref(paths.env_sh, fish=False)
    return f"[ -f {ref} ] && . {ref}"


# Shells that read POSIX sh syntax from ~/.profile (a login shell).
PROFILE_SHELLS = frozenset({"sh", "dash", "ksh", "mksh", "ash"})


def login_shell() -> str:
    """The name of the shell in `$SHELL` (bash when it is not set)."""
    return os.path.basename(os.environ.get("SHELL", "") or "bash")


def rc_file(shell: str) -> Path | None:
    """The rc file that `shell` reads: ~/.bashrc, ~/.zshrc (in `$ZDOTDIR` when
    set), ~/.config/fish/config.fish (under `$XDG_CONFIG_HOME` when set) or,
    for sh-like shells, ~/.profile; None for a shell syslua does not know."""
    h = Path(home())
    if shell == "bash":
        return h / ".bashrc"
    if shell == "zsh":
        return Path(os.environ.get("ZDOTDIR") or h) / ".zshrc"
    if shell == "fish":
        config = os.environ.get("XDG_CONFIG_HOME") or str(h / ".config")
        return Path(config) / "fish" / "config.fish"
    if shell in PROFILE_SHELLS:
        return h / ".profile"
    return None


def loaded_by(rc: Path) -> list[Path]:
    """The files that load what `rc` loads: itself, and for fish's
    config.fish every `conf.d/*.fish` beside it, which fish reads too."""
    files = [rc]
    if rc.name == "config.fish":
        files += sorted((rc.parent / "conf.d").glob("*.fish"))
    return files


def rc_loads(files: Iterable[Path], script: Path, texts: Iterable[str] = ()) -> bool:
    """Whether any of `files` (or `texts`) loads `script`: a line that is not
    a comment names its path, whole, as `~/...`, `$HOME/...` or
    `${HOME}/...`, or as the line of `rc_line` names it."""
    names = [str(script), script_ref(script, fish=False), script_ref(script, fish=True)]
    short = abbreviate(str(script))
    if short.startswith("~/"):
        names += [short, "$HOME" + short[1:], "${HOME}" + short[1:]]
    for text in [*texts, *(_text(f) for f in files)]:
        for line in text.splitlines():
            if not line.lstrip().startswith("#") and any(n in line for n in names):
                return True
    return False


def _text(path: Path) -> str:
    try:
        return path.read_text("utf-8", "surrogateescape")
    except OSError:
        return ""


APPENDED = "# Loads syslua's environment, tools and aliases (sys env --append).\n"


def append_line(path: Path, line: str) -> Path:
    """Add `line` (after a comment saying what it is) at the end of the real
    file `path` names, and return that real path. A link is resolved and
    its target written directly (the link stays a link); the file is
    replaced atomically by its previous bytes plus the line, keeping its
    mode, so nothing it held can be lost. A missing file is created (0644)."""
    real = Path(os.path.realpath(path))
    try:
        data = real.read_bytes()
        mode = real.stat().st_mode & 0o7777
    except FileNotFoundError:
        data, mode = b"", 0o644
    sep = b"" if not data or data.endswith(b"\n") else b"\n"
    atomic_write(real, data + sep + (APPENDED + line + "\n").encode("utf-8"), mode)
    return real
