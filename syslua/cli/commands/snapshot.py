"""`sys snapshot show|tag|delete` (arrives with a later issue)."""

from __future__ import annotations

from typing import Any

from syslua.errors import UsageError


def _later(*args: Any, **kwargs: Any) -> int:
    raise UsageError("`sys snapshot` is not available yet in this version")


show = tag = delete = _later
