"""`sys history` (arrives with a later issue)."""

from __future__ import annotations

from typing import Any

from syslua.errors import UsageError


def run(*args: Any, **kwargs: Any) -> int:
    raise UsageError("`sys history` is not available yet in this version")
