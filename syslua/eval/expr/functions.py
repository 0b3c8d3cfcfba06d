"""The Expr language's built-in functions, as CCM documents them.

`FUNCTIONS` maps each name to a function of the `Env` and the already
evaluated arguments; each checks its arguments' number and types first
(`_want`). `PREDICATES` are the functions whose second argument is a
predicate run once per element (`#`): the evaluator hands them the list and
the predicate as a function of one element. `REJECTED` are CCM's functions
that syslua does not offer, named so that a call says so instead of
"unknown".
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from syslua.eval.expr.lookup import lookup
from syslua.eval.expr.values import (
    LIMIT,
    Env,
    ExprError,
    equal,
    is_num,
    json_default,
    limited,
    show,
    text,
    type_name,
)

# Functions CCM offers that syslua does not: a clear error instead of "unknown".
REJECTED = {
    "jet": "Jet templates",
    "template": "nested templates",
    "kvGet": "NATS key-value lookups",
    "registrations": "service registrations",
}


def _want(name: str, args: list[Any], *kinds: Any, at_least: int | None = None) -> None:
    """`name` got one argument per kind (or from `at_least` on), each of its
    kind: a type, "number", or None for any."""
    low = len(kinds) if at_least is None else at_least
    if not low <= len(args) <= len(kinds):
        count = str(low) if low == len(kinds) else f"{low} to {len(kinds)}"
        raise ExprError(f"{name}() takes {count} argument(s), got {len(args)}")
    for i, (a, k) in enumerate(zip(args, kinds, strict=False)):
        if k is None:
            continue
        ok = (
            is_num(a)
            if k == "number"
            else (isinstance(a, k) and not (k is int and isinstance(a, bool)))
        )
        if not ok:
            want = {str: "string", int: "int", list: "array", "number": "number"}.get(k, "map")
            raise ExprError(f"{name}() argument {i + 1} must be {want}, got {type_name(a)}")


def _fn(name: str, kinds: tuple, f: Callable[..., Any]) -> Callable[[Env, list[Any]], Any]:
    """A function of plain arguments whose types `_want` checks first."""

    def call(env: Env, args: list[Any]) -> Any:
        _want(name, args, *kinds)
        return f(*args)

    return call


def _len(env: Env, args: list[Any]) -> int:
    _want("len", args, None)
    v = args[0]
    if isinstance(v, (str, list, tuple, Mapping)):
        return len(v)
    raise ExprError(f"len() needs a string, array or map, got {type_name(v)}")


def _read_file(env: Env, args: list[Any], name: str) -> str:
    if not env.files:
        raise ExprError(f"{name}() is not available here (hierarchy data may only use lookup())")
    _want(name, args, str)
    path = os.path.expanduser(args[0])
    if not os.path.isabs(path) and env.base_dir:
        path = os.path.join(env.base_dir, path)
    path = os.path.normpath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ExprError(f"{name}(): file not found: {path}") from None
    except OSError as e:
        raise ExprError(f"{name}(): cannot read {path}: {e.strerror}") from None
    if env.reads is not None and path not in env.reads:
        env.reads.append(path)
    return data.decode("utf-8", "surrogateescape")


def _to_int(env: Env, args: list[Any]) -> int:
    _want("int", args, None)
    v = args[0]
    if isinstance(v, bool):
        raise ExprError("int() cannot convert bool")
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ExprError(f"int() cannot convert {v}")
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip().replace("_", ""), 10)
        except ValueError:
            raise ExprError(f"int() cannot convert {show(v)}") from None
    raise ExprError(f"int() cannot convert {type_name(v)}")


def _to_float(env: Env, args: list[Any]) -> float:
    _want("float", args, None)
    v = args[0]
    if isinstance(v, bool):
        raise ExprError("float() cannot convert bool")
    if is_num(v):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            raise ExprError(f"float() cannot convert {show(v)}") from None
    raise ExprError(f"float() cannot convert {type_name(v)}")


def _numbers(name: str, args: list[Any]) -> list[Any]:
    items = args[0] if len(args) == 1 and isinstance(args[0], list) else args
    if not items:
        raise ExprError(f"{name}() needs at least one number")
    for v in items:
        if not is_num(v):
            raise ExprError(f"{name}() needs numbers, got {type_name(v)}")
    return list(items)


def _from_json(env: Env, args: list[Any]) -> Any:
    _want("fromJSON", args, str)
    try:
        return json.loads(args[0])
    except ValueError as e:
        raise ExprError(f"fromJSON(): invalid JSON: {e}") from None


def _to_json(env: Env, args: list[Any]) -> str:
    _want("toJSON", args, None)
    try:
        return json.dumps(args[0], indent=2, sort_keys=True, default=json_default)
    except (TypeError, ValueError) as e:
        raise ExprError(f"toJSON(): {e}") from None


def _split(env: Env, args: list[Any], after: bool = False) -> list[str]:
    name = "splitAfter" if after else "split"
    _want(name, args, str, str, int, at_least=2)
    s, sep = args[0], args[1]
    n = args[2] if len(args) == 3 else -1
    if n == 0:
        return []
    if sep == "":
        parts = list(s)
        if n > 0 and len(parts) > n:
            parts = parts[: n - 1] + ["".join(parts[n - 1 :])]
        return parts
    parts = s.split(sep, n - 1) if n > 0 else s.split(sep)
    if after:
        parts = [p + sep for p in parts[:-1]] + [parts[-1]]
    return parts


def _join(env: Env, args: list[Any]) -> str:
    _want("join", args, list, str, at_least=1)
    sep = args[1] if len(args) == 2 else ""
    return sep.join(text(v) for v in args[0])


def _trim(name: str, side: str) -> Callable[[Env, list[Any]], str]:
    def call(env: Env, args: list[Any]) -> str:
        _want(name, args, str, str, at_least=1)
        chars = args[1] if len(args) == 2 else None
        s = args[0]
        return (
            s.strip(chars)
            if side == "both"
            else s.lstrip(chars)
            if side == "left"
            else s.rstrip(chars)
        )

    return call


def _keys(env: Env, args: list[Any]) -> list[Any]:
    _want("keys", args, Mapping)
    return list(args[0].keys())


def _values(env: Env, args: list[Any]) -> list[Any]:
    _want("values", args, Mapping)
    return list(args[0].values())


def _first_last(name: str) -> Callable[[Env, list[Any]], Any]:
    def call(env: Env, args: list[Any]) -> Any:
        _want(name, args, None)
        v = args[0]
        if not isinstance(v, (list, str)):
            raise ExprError(f"{name}() needs an array, got {type_name(v)}")
        if not v:
            return None
        return v[0] if name == "first" else v[-1]

    return call


def _sort(env: Env, args: list[Any]) -> list[Any]:
    _want("sort", args, list, str, at_least=1)
    order = args[1] if len(args) == 2 else "asc"
    if order not in ("asc", "desc"):
        raise ExprError(f'sort() order must be "asc" or "desc", got {show(order)}')
    items = args[0]
    if all(is_num(v) for v in items) or all(isinstance(v, str) for v in items):
        return sorted(items, reverse=order == "desc")
    raise ExprError("sort() needs an array of numbers or of strings")


def _uniq(env: Env, args: list[Any]) -> list[Any]:
    _want("uniq", args, list)
    out: list[Any] = []
    for v in args[0]:
        if not any(equal(v, o) for o in out):
            out.append(v)
    return out


def _flatten(env: Env, args: list[Any]) -> list[Any]:
    _want("flatten", args, list)

    def flat(items: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in items:
            out.extend(flat(v) if isinstance(v, list) else [v])
        return out

    return flat(args[0])


def _concat(env: Env, args: list[Any]) -> list[Any]:
    out: list[Any] = []
    for i, a in enumerate(args):
        if not isinstance(a, list):
            raise ExprError(f"concat() argument {i + 1} must be array, got {type_name(a)}")
        out.extend(a)
    return limited(out)


def _round(name: str, f: Callable[[float], Any]) -> Callable[[Env, list[Any]], Any]:
    def call(env: Env, args: list[Any]) -> Any:
        _want(name, args, "number")
        x = args[0]
        return float(f(x)) if math.isfinite(x) else float(x)

    return call


def _to_string(env: Env, args: list[Any]) -> str:
    _want("string", args, None)
    v = args[0]
    return "nil" if v is None else text(v)


def _type_fn(env: Env, args: list[Any]) -> str:
    _want("type", args, None)
    return type_name(args[0])


def _b64(env: Env, args: list[Any], decode: bool) -> str:
    name = "fromBase64" if decode else "toBase64"
    _want(name, args, str)
    if not decode:
        return base64.b64encode(args[0].encode("utf-8", "surrogateescape")).decode()
    try:
        return base64.b64decode(args[0], validate=True).decode("utf-8", "surrogateescape")
    except ValueError as e:
        raise ExprError(f"fromBase64(): {e}") from None


def _repeat(env: Env, args: list[Any]) -> str:
    _want("repeat", args, str, int)
    if args[1] < 0:
        raise ExprError("repeat() count must not be negative")
    if len(args[0]) * args[1] > LIMIT:
        raise ExprError("value too large")
    return str(args[0] * args[1])


def _get_fn(env: Env, args: list[Any]) -> Any:
    _want("get", args, None, None)
    base, key = args
    if isinstance(base, Mapping):
        return base.get(key) if isinstance(key, str) else None
    if isinstance(base, list) and isinstance(key, int) and not isinstance(key, bool):
        i = key + len(base) if key < 0 else key
        return base[i] if 0 <= i < len(base) else None
    return None


def _now(env: Env, args: list[Any]) -> dt.datetime:
    _want("now", args)
    return dt.datetime.now(dt.UTC).astimezone()


def _take(env: Env, args: list[Any]) -> list[Any]:
    _want("take", args, list, int)
    return args[0][: max(args[1], 0)]


def _reverse(env: Env, args: list[Any]) -> list[Any]:
    _want("reverse", args, list)
    return list(reversed(args[0]))


def _sum_mean(name: str) -> Callable[[Env, list[Any]], Any]:
    def call(env: Env, args: list[Any]) -> Any:
        _want(name, args, list)
        items = args[0]
        for v in items:
            if not is_num(v):
                raise ExprError(f"{name}() needs numbers, got {type_name(v)}")
        if name == "sum":
            return sum(items)
        if not items:
            return 0.0
        if name == "mean":
            return sum(items) / len(items)
        s = sorted(items)
        mid = len(s) // 2
        return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2

    return call


def _pairs(env: Env, args: list[Any], to: bool) -> Any:
    if to:
        _want("toPairs", args, Mapping)
        return [[k, v] for k, v in args[0].items()]
    _want("fromPairs", args, list)
    out = {}
    for p in args[0]:
        if not isinstance(p, list) or len(p) != 2 or not isinstance(p[0], str):
            raise ExprError("fromPairs() needs [key, value] pairs with string keys")
        out[p[0]] = p[1]
    return out


def _lookup_fn(env: Env, args: list[Any]) -> Any:
    _want("lookup", args, None, None, at_least=1)
    return lookup(env, *args)


def _index_of(name: str) -> Callable[[Env, list[Any]], int]:
    def call(env: Env, args: list[Any]) -> int:
        _want(name, args, str, str)
        return args[0].find(args[1]) if name == "indexOf" else args[0].rfind(args[1])

    return call


FUNCTIONS: dict[str, Callable[[Env, list[Any]], Any]] = {
    "lookup": _lookup_fn,
    "readFile": lambda env, a: _read_file(env, a, "readFile"),
    "file": lambda env, a: _read_file(env, a, "file"),
    # strings
    "upper": _fn("upper", (str,), lambda s: s.upper()),
    "lower": _fn("lower", (str,), lambda s: s.lower()),
    "trim": _trim("trim", "both"),
    "trimLeft": _trim("trimLeft", "left"),
    "trimRight": _trim("trimRight", "right"),
    "trimPrefix": _fn("trimPrefix", (str, str), lambda s, p: s[len(p) :] if s.startswith(p) else s),
    "trimSuffix": _fn(
        "trimSuffix", (str, str), lambda s, p: s[: -len(p)] if p and s.endswith(p) else s
    ),
    "split": _split,
    "splitAfter": lambda env, a: _split(env, a, after=True),
    "replace": _fn("replace", (str, str, str), lambda s, old, new: limited(s.replace(old, new))),
    "repeat": _repeat,
    "indexOf": _index_of("indexOf"),
    "lastIndexOf": _index_of("lastIndexOf"),
    "hasPrefix": _fn("hasPrefix", (str, str), lambda s, p: s.startswith(p)),
    "hasSuffix": _fn("hasSuffix", (str, str), lambda s, p: s.endswith(p)),
    "contains": _fn("contains", (str, str), lambda s, p: p in s),
    "join": _join,
    "toBase64": lambda env, a: _b64(env, a, False),
    "fromBase64": lambda env, a: _b64(env, a, True),
    # conversion
    "len": _len,
    "string": _to_string,
    "int": _to_int,
    "float": _to_float,
    "type": _type_fn,
    "toJSON": _to_json,
    "fromJSON": _from_json,
    "now": _now,
    # numbers
    "abs": _fn("abs", ("number",), abs),
    "ceil": _round("ceil", math.ceil),
    "floor": _round("floor", math.floor),
    "round": _round("round", lambda x: math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)),
    "min": lambda env, a: min(_numbers("min", a)),
    "max": lambda env, a: max(_numbers("max", a)),
    "sum": _sum_mean("sum"),
    "mean": _sum_mean("mean"),
    "median": _sum_mean("median"),
    # arrays and maps
    "keys": _keys,
    "values": _values,
    "first": _first_last("first"),
    "last": _first_last("last"),
    "take": _take,
    "reverse": _reverse,
    "sort": _sort,
    "uniq": _uniq,
    "flatten": _flatten,
    "concat": _concat,
    "get": _get_fn,
    "toPairs": lambda env, a: _pairs(env, a, True),
    "fromPairs": lambda env, a: _pairs(env, a, False),
}


# ---------------------------------------------------------------------------
# predicates: a list, and a predicate run once per element
# ---------------------------------------------------------------------------

Each = Callable[[Any], Any]  # the predicate's value for one element
Test = Callable[[Any], bool]  # the same, which must be a bool


def _find(last: bool, index: bool) -> Callable[[list[Any], Each, Test], Any]:
    def call(items: list[Any], each: Each, test: Test) -> Any:
        for i in range(len(items) - 1, -1, -1) if last else range(len(items)):
            if test(items[i]):
                return i if index else items[i]
        return -1 if index else None

    return call


def _sort_by(items: list[Any], each: Each, test: Test, order: Any = "asc") -> list[Any]:
    if order not in ("asc", "desc"):
        raise ExprError(f'sortBy() order must be "asc" or "desc", got {show(order)}')
    keyed = [(each(v), v) for v in items]
    ks = [k for k, _ in keyed]
    if not (all(is_num(k) for k in ks) or all(isinstance(k, str) for k in ks)):
        raise ExprError("sortBy() keys must all be numbers or all strings")
    return [v for _, v in sorted(keyed, key=lambda kv: kv[0], reverse=order == "desc")]


def _group_by(items: list[Any], each: Each, test: Test) -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = {}
    for v in items:
        groups.setdefault(text(each(v)), []).append(v)
    return groups


# Called as f(items, each, test, *the arguments after the predicate).
PREDICATES: dict[str, Callable[..., Any]] = {
    "all": lambda items, each, test: all(test(v) for v in items),
    "any": lambda items, each, test: any(test(v) for v in items),
    "none": lambda items, each, test: not any(test(v) for v in items),
    "one": lambda items, each, test: sum(1 for v in items if test(v)) == 1,
    "filter": lambda items, each, test: [v for v in items if test(v)],
    "map": lambda items, each, test: [each(v) for v in items],
    "count": lambda items, each, test: sum(1 for v in items if test(v)),
    "find": _find(last=False, index=False),
    "findIndex": _find(last=False, index=True),
    "findLast": _find(last=True, index=False),
    "findLastIndex": _find(last=True, index=True),
    "sortBy": _sort_by,
    "groupBy": _group_by,
}
