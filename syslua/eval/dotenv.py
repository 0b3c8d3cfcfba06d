"""`.env` beside a CCM manifest: variables added to `Environ` (CCM's `--read-env`).

One `KEY=value` a line. Blank lines and lines starting with `#` are
skipped; `export KEY=value` is read as `KEY=value`; a value wrapped in one
pair of matching quotes (`"..."` or `'...'`) loses them, and nothing in it
is expanded or unescaped. A value from `.env` wins over the process
environment's, as in CCM. A line that is none of these is an error naming
it (CCM skips it silently).
"""

from __future__ import annotations

import os
from pathlib import Path

from syslua.errors import ConfigError, Source

NAME = ".env"


def read(path: Path) -> dict[str, str]:
    """The variables of the `.env` file at `path`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise ConfigError(f"cannot read {path}: {reason}") from None
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key or any(c.isspace() for c in key):
            raise ConfigError(
                "a .env line must be KEY=value (or a # comment)", Source(str(path), n)
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key] = value
    return out


def environ(dotenv: str | None) -> dict[str, str]:
    """The process environment, with the variables of the `.env` at `dotenv` (if any) over it."""
    env = dict(os.environ)
    if dotenv:
        env.update(read(Path(dotenv)))
    return env
