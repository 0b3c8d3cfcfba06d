"""`sys --version`: syslua's version and the runtimes a config depends on."""

from __future__ import annotations

import platform

from syslua.eval.lua import luajit_version


def package_version() -> str:
    """The installed distribution's version (the one pyproject.toml gave it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("syslua")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def version_line() -> str:
    """`syslua 0.1.0 (LuaJIT 2.1.1774896198, Python 3.11.9)`."""
    return f"syslua {package_version()} ({luajit_version()}, Python {platform.python_version()})"
