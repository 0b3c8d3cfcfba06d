"""Times as scripts and people read them: ISO 8601 with the local offset in
every `--json` output (`2026-11-26T01:18:20+01:00`), an age in human lines
(`3 min ago`)."""

from __future__ import annotations

import time
from datetime import datetime

_UNITS = (  # (seconds in one, name), largest first
    (365 * 86400, "year"),
    (30 * 86400, "month"),
    (7 * 86400, "week"),
    (86400, "day"),
    (3600, "hour"),
    (60, "min"),
)


def iso(timestamp: float) -> str:
    """`timestamp` (seconds since the epoch) as ISO 8601 in local time, with
    its offset from UTC, to the second."""
    return datetime.fromtimestamp(timestamp).astimezone().isoformat(timespec="seconds")


def local(timestamp: float) -> str:
    """`timestamp` as people read it here: `2026-11-26 01:18:20 +0100`."""
    return time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(timestamp))


def ago(timestamp: float, now: float | None = None) -> str:
    """How long ago `timestamp` was: `just now`, `3 min ago`, `1 hour ago`,
    `2 days ago`, ... (two weeks are `2 weeks ago` until they make a month)."""
    seconds = max(0.0, (time.time() if now is None else now) - timestamp)
    for size, name in _UNITS:
        # Two of a unit before using it (`90 min ago`, not `1 hour ago`), except minutes.
        if seconds >= size * (1 if name in ("min", "year") else 2):
            n = int(seconds // size)
            unit = name if n == 1 or name == "min" else name + "s"
            return f"{n} {unit} ago"
    return "just now"
