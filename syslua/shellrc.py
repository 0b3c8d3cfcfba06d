"""Shell rc files and the line that loads syslua's env scripts from them.

The env type writes `env.sh` (POSIX sh, for bash, zsh and sh-like shells)
and `env.fish`; a shell loads one from its rc file with the line `rc_line`
gives. `rc_file` says which rc file a shell reads, `rc_loads` whether it
already loads a script, and `rc_advice` what `sys apply` suggests while it
does not. The quoting of the scripts and of that line is here too.
"""

from __future__ import annotations

import os
from pathlib import Path

from syslua.paths import Paths, abbreviate, home


def sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def fish_quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def rc_line(paths: Paths, shell: str) -> str:
    if shell == "fish":
        return f"source {fish_quote(str(paths.env_fish))}"
    return f". {sh_quote(str(paths.env_sh))}"


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


def rc_loads(rc: Path, script: Path) -> bool:
    """Whether the rc file loads `script`: a line that is not a comment names
    its path, whole or as `~/...`, `$HOME/...` or `${HOME}/...` (fish also
    reads every `conf.d/*.fish` beside its config.fish)."""
    names = [str(script)]
    short = abbreviate(str(script))
    if short.startswith("~/"):
        names += [short, "$HOME" + short[1:], "${HOME}" + short[1:]]
    files = [rc]
    if rc.name == "config.fish":
        files += sorted((rc.parent / "conf.d").glob("*.fish"))
    for f in files:
        try:
            text = f.read_text("utf-8", "surrogateescape")
        except OSError:
            continue
        for line in text.splitlines():
            if not line.lstrip().startswith("#") and any(n in line for n in names):
                return True
    return False


def rc_advice(paths: Paths, first: bool) -> tuple[str, str] | None:
    """What `sys apply` suggests once it succeeded: (where, line) to add the
    line that loads the env script to the rc file of `$SHELL`, while that file
    does not load it; None when it does. For a shell without a known rc file,
    the sh line for "your shell's rc file", only after the first apply (`first`)."""
    shell = login_shell()
    fish = shell == "fish"
    line = rc_line(paths, "fish" if fish else "sh")
    rc = rc_file(shell)
    if rc is None:
        return ("your shell's rc file", line) if first else None
    if rc_loads(rc, paths.env_fish if fish else paths.env_sh):
        return None
    return abbreviate(str(rc)), line
