"""`lookup(path, default)`: a GJSON path over the roots an expression sees.

The first part of the path names a root (`facts`, `data`, `env`, or
`environ`); the rest walks maps by key (with `*` and `?` wildcards) and
arrays by index, `#` being an array's length or, before more parts, the
values found in each element. GJSON's queries and modifiers are refused.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from syslua.eval.expr.values import Env, ExprError, type_name

_MISSING = object()
ROOTS_HELP = "use facts., data. or env."


def _path_parts(path: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(path):
        c = path[i]
        if c == "\\" and i + 1 < len(path):
            cur.append(path[i + 1])
            i += 2
            continue
        if c == ".":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def gjson(value: Any, parts: list[str]) -> Any:
    """The value at `parts` (a GJSON path split on unescaped dots), or _MISSING."""
    for n, part in enumerate(parts):
        if part.startswith("#(") or part.startswith("@"):
            raise ExprError(f"GJSON queries and modifiers (`{part}`) are not supported")
        if isinstance(value, (list, tuple)):
            if part == "#":
                rest = parts[n + 1 :]
                if not rest:
                    return len(value)
                found = [gjson(v, rest) for v in value]
                return [f for f in found if f is not _MISSING]
            if part.isdigit() and int(part) < len(value):
                value = value[int(part)]
                continue
            return _MISSING
        if isinstance(value, Mapping):
            if part in value:
                value = value[part]
                continue
            if "*" in part or "?" in part:
                match = next((k for k in value if fnmatch.fnmatchcase(str(k), part)), None)
                if match is not None:
                    value = value[match]
                    continue
            return _MISSING
        return _MISSING
    return value


def lookup(env: Env, key: Any, default: Any = _MISSING) -> Any:
    """The value at the path `key`: else `default`, else "" where a missing key
    is allowed (`env.missing_ok`), else an error."""
    if not isinstance(key, str):
        raise ExprError(f"lookup() needs a string path, got {type_name(key)}")
    parts = _path_parts(key)
    root = parts[0]
    if root == "environ":
        root = "env"
    if root not in env.roots:
        raise ExprError(f"lookup('{key}'): unknown root `{parts[0]}` ({ROOTS_HELP})")
    value = gjson(env.roots[root], parts[1:])
    if value is _MISSING:
        if default is _MISSING:
            if env.missing_ok:
                return ""
            raise ExprError(f"lookup('{key}'): no such key")
        return default
    return value
