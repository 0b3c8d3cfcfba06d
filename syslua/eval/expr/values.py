"""What expressions compute with: the error they raise, the `Env` they see,
and how a value is named, tested, compared and written as text.

Values are plain Python: None, bool, int, float, str, list, dict, and
`datetime` for `now()`. Every other module of the package builds on these.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

VARIABLES = ("Facts", "Data", "Environ")
LIMIT = 1_000_000  # the longest string or list an expression may build


class ExprError(ValueError):
    """Why an expression cannot be read or evaluated."""


@dataclass
class Env:
    """What an expression can see."""

    roots: Mapping[str, Any]  # facts, data, env (as lookup() names them)
    base_dir: str | None = None  # where readFile() resolves relative paths
    reads: list[str] | None = None  # files readFile() read (config inputs)
    files: bool = True  # readFile()/file() allowed (not in hierarchy data)
    missing_ok: bool = False  # lookup() of a missing key without default is ""
    _elems: list[Any] = field(default_factory=list)  # `#` inside predicates

    def variable(self, name: str) -> Any:
        root = {"Facts": "facts", "Data": "data", "Environ": "env"}[name]
        return self.roots.get(root, {})


def type_name(v: Any) -> str:
    """A value's type as Expr names it in messages."""
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "array"
    if isinstance(v, Mapping):
        return "map"
    if isinstance(v, dt.datetime):
        return "time"
    return type(v).__name__


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def as_bool(v: Any, what: str) -> bool:
    """`v`, which `what` (an operator, a predicate) needs to be a bool."""
    if not isinstance(v, bool):
        raise ExprError(f"{what} needs a bool, got {type_name(v)} ({show(v)})")
    return v


def show(v: Any) -> str:
    """A value, shortened, for a message."""
    try:
        text = json.dumps(v, default=str)
    except (TypeError, ValueError):
        text = str(v)
    return text if len(text) <= 40 else text[:37] + "..."


def equal(a: Any, b: Any) -> bool:
    """`==` as Expr has it: 1 == 1.0, but true is not 1."""
    if is_num(a) and is_num(b):
        return bool(a == b)
    if type(a) is bool or type(b) is bool:
        return a is b
    return bool(a == b)


def limited(v: Any) -> Any:
    if len(v) > LIMIT:
        raise ExprError("value too large")
    return v


def text(v: Any) -> str:
    """How a value is written in place inside a longer string."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e21:
            return str(int(v))
        return repr(v)
    if isinstance(v, (dict, list, tuple, Mapping)):
        return json.dumps(v, sort_keys=True, default=json_default)
    if isinstance(v, dt.datetime):
        return v.isoformat()
    return str(v)


def json_default(v: Any) -> Any:
    """What JSON writes for a value it has no form of (a time, a mapping)."""
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, Mapping):
        return dict(v)
    raise TypeError(f"cannot encode {type_name(v)}")
