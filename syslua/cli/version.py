"""`sys --version`: syslua's version and the runtimes a config depends on."""

from __future__ import annotations

import platform

from syslua import __version__
from syslua.eval.lua import luajit_version


def version_line() -> str:
    """`syslua 0.1.0 (LuaJIT 2.1.1774896198, Python 3.11.9)`."""
    return f"syslua {__version__} ({luajit_version()}, Python {platform.python_version()})"
