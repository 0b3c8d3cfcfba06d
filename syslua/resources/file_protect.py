"""Paths a file declaration may never remove (issue 22, point 6).

`ensure = "absent"` on `/`, on the home or a directory above it, or on one
of the system's own top-level directories would wipe the machine or the
user's whole home; `force` only lets syslua take over what is already
there, it never makes such a removal possible. The file kind's schema
(`_FileSchema.finish`) turns what `refusal` says into a configuration error
at the declaration, for Lua and CCM manifests alike, before anything runs.
"""

from __future__ import annotations

import os

from syslua.paths import home

# The system's own directories: the top level of Linux (FHS) and macOS, and
# the standard directories just under /usr and /var. A path below these
# (`/etc/app.conf`, `/opt/tool`) may still be declared absent.
SYSTEM_DIRS = frozenset(
    {
        *(
            f"/{name}"
            for name in (
                "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32",
                "lost+found", "media", "mnt", "nix", "opt", "proc", "root", "run", "sbin",
                "snap", "srv", "sys", "tmp", "usr", "var",
                # macOS
                "Applications", "Library", "System", "Users", "Volumes", "cores", "private",
            )
        ),
        *(
            f"/usr/{name}"
            for name in ("bin", "include", "lib", "lib32", "lib64", "libexec", "local", "sbin", "share", "src")
        ),
        *(
            f"/var/{name}"
            for name in ("cache", "db", "empty", "lib", "local", "lock", "log", "mail", "opt", "run", "spool", "tmp")
        ),
    }
)  # fmt: skip


def refusal(path: str) -> str | None:
    """Why `path` may never be removed, or None when it may."""
    if path == "/":
        return "it is the root directory"
    if path in SYSTEM_DIRS:
        return "it is a system directory"
    for top in _homes():
        if path == top:
            return "it is your home directory"
        if top.startswith(path + "/"):
            return "your home directory is inside it"
    return None


def _homes() -> set[str]:
    """The home as the config names it (`~`), and as it really is (through links)."""
    top = home().rstrip("/")
    if not top:
        return set()
    try:
        real = os.path.realpath(top)
    except (OSError, ValueError):
        real = top
    return {top, real.rstrip("/") or top}
