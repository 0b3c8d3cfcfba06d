"""Evaluate an expression: `evaluate(text, env)` walks the tree `parse` builds.

Nothing is compiled to Python and nothing reaches a Python object's
attributes; a call goes to `functions.py`. Types are checked as Expr checks
them: `1 + "a"` is an error, not a string.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

from syslua.eval.expr.functions import FUNCTIONS, PREDICATES
from syslua.eval.expr.parser import parse
from syslua.eval.expr.values import (
    LIMIT,
    Env,
    ExprError,
    as_bool,
    equal,
    is_num,
    limited,
    show,
    text,
    type_name,
)


class _Nil(ExprError):
    """A member or index of nil: `??` and `?.` turn it into nil."""


def evaluate(text: str, env: Env) -> Any:
    """The value of the expression `text`, which can see `env`."""
    try:
        return _eval(parse(text), env)
    except RecursionError:
        raise ExprError("the expression is nested too deeply") from None


def _eval(node: tuple, env: Env) -> Any:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "var":
        return env.variable(node[1])
    if kind == "elem":
        return env._elems[-1]
    if kind == "list":
        return [_eval(n, env) for n in node[1]]
    if kind == "map":
        out = {}
        for k, v in node[1]:
            key = _eval(k, env)
            if not isinstance(key, (str, int, float, bool)):
                raise ExprError(f"a map key must be a string or number, got {type_name(key)}")
            out[key if isinstance(key, str) else str(key)] = _eval(v, env)
        return out
    if kind == "member":
        base = _eval(node[1], env)
        return _get(base, node[2], node[3], member=True)
    if kind == "index":
        base = _eval(node[1], env)
        return _get(base, _eval(node[2], env), node[3], member=False)
    if kind == "slice":
        base = _eval(node[1], env)
        lo = 0 if node[2] is None else _eval(node[2], env)
        hi = None if node[3] is None else _eval(node[3], env)
        if not isinstance(base, (list, str)):
            raise ExprError(f"cannot slice {type_name(base)}")
        for b in (lo, hi):
            if b is not None and not (isinstance(b, int) and not isinstance(b, bool)):
                raise ExprError(f"slice bounds must be int, got {type_name(b)}")
        return base[lo:hi]
    if kind == "not":
        return not as_bool(_eval(node[1], env), "`not`")
    if kind in ("neg", "pos"):
        v = _eval(node[1], env)
        if not is_num(v):
            raise ExprError(
                f"unary {'-' if kind == 'neg' else '+'} needs a number, got {type_name(v)}"
            )
        return -v if kind == "neg" else v
    if kind == "if":
        return _eval(node[2] if as_bool(_eval(node[1], env), "`?:`") else node[3], env)
    if kind == "bin":
        return _binary(node[1], node[2], node[3], env)
    if kind == "call":
        return _call(node[1], node[2], env)
    raise ExprError(f"cannot evaluate {kind}")  # pragma: no cover - the parser makes no other


def _get(base: Any, key: Any, optional: bool, member: bool) -> Any:
    if base is None:
        if optional:
            return None
        what = f".{key}" if member else f"[{show(key)}]"
        raise _Nil(f"cannot read {what} of nil (use ?. or ?? for a value that may be missing)")
    if isinstance(base, Mapping):
        if not isinstance(key, str):
            key = str(key) if is_num(key) else key
        return base.get(key) if isinstance(key, str) else None
    if isinstance(base, (list, str)) and not member:
        if not isinstance(key, int) or isinstance(key, bool):
            raise ExprError(f"an index of {type_name(base)} must be an int, got {type_name(key)}")
        i = key + len(base) if key < 0 else key
        if not 0 <= i < len(base):
            raise ExprError(f"index {key} out of range (length {len(base)})")
        return base[i]
    what = f"field {key}" if member else f"index {show(key)}"
    raise ExprError(f"cannot read {what} of {type_name(base)}")


def _binary(op: str, ln: tuple, rn: tuple, env: Env) -> Any:
    if op in ("and", "&&"):
        return as_bool(_eval(ln, env), f"`{op}`") and as_bool(_eval(rn, env), f"`{op}`")
    if op in ("or", "||"):
        return as_bool(_eval(ln, env), f"`{op}`") or as_bool(_eval(rn, env), f"`{op}`")
    if op == "??":
        try:
            left = _eval(ln, env)
        except _Nil:
            left = None
        return _eval(rn, env) if left is None else left
    a, b = _eval(ln, env), _eval(rn, env)
    if op == "==":
        return equal(a, b)
    if op == "!=":
        return not equal(a, b)
    if op in ("<", ">", "<=", ">="):
        if not (
            (is_num(a) and is_num(b)) or (type(a) is type(b) and isinstance(a, (str, dt.datetime)))
        ):
            raise ExprError(f"invalid operation: {type_name(a)} {op} {type_name(b)}")
        return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
    if op == "in":
        if isinstance(b, Mapping):
            return isinstance(a, str) and a in b
        if isinstance(b, (list, tuple)):
            return any(equal(a, x) for x in b)
        raise ExprError(f"`in` needs an array or a map on the right, got {type_name(b)}")
    if op in ("contains", "startsWith", "endsWith", "matches"):
        if not isinstance(a, str) or not isinstance(b, str):
            raise ExprError(f"`{op}` needs two strings, got {type_name(a)} and {type_name(b)}")
        if op == "contains":
            return b in a
        if op == "startsWith":
            return a.startswith(b)
        if op == "endsWith":
            return a.endswith(b)
        return _regex(b).search(a) is not None
    if op == "..":
        if (
            not (isinstance(a, int) and isinstance(b, int))
            or isinstance(a, bool)
            or isinstance(b, bool)
        ):
            raise ExprError(f"`..` needs two ints, got {type_name(a)} and {type_name(b)}")
        if b - a > LIMIT:
            raise ExprError("range too long")
        return list(range(a, b + 1))
    if op == "+":
        if isinstance(a, str) and isinstance(b, str):
            return limited(a + b)
        if isinstance(a, list) and isinstance(b, list):
            return limited(a + b)
    if is_num(a) and is_num(b):
        try:
            if op in ("+", "-", "*"):
                return _int64(a + b if op == "+" else a - b if op == "-" else a * b, op)
            if op == "/":
                return a / b
            if op == "%":
                if not (isinstance(a, int) and isinstance(b, int)):
                    raise ExprError(
                        f"invalid operation: {type_name(a)} % {type_name(b)} (% needs ints)"
                    )
                rem = abs(a) % abs(b)  # ZeroDivisionError when b is 0
                return rem if a >= 0 else -rem  # the sign of `a`, as Go's %
            if op in ("**", "^"):
                if abs(b) > 4096 and abs(a) > 1:
                    raise ExprError("exponent too large")
                power = float(a) ** float(b)
                return power if isinstance(power, float) else math.nan  # (-8) ** 0.5
        except ZeroDivisionError:
            if op == "/" and a != 0:
                return math.copysign(math.inf, a) * math.copysign(1, b)
            if op == "/":
                return math.nan
            raise ExprError("integer divide by zero") from None
        except OverflowError:
            raise ExprError(f"number too large in {op}") from None
    raise ExprError(f"invalid operation: {type_name(a)} {op} {type_name(b)}")


def _int64(v: int | float, op: str) -> int | float:
    """Integers stay within Go's int64, as in Expr."""
    if isinstance(v, int) and not -(2**63) <= v < 2**63:
        raise ExprError(f"integer overflow in {op}")
    return v


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ExprError(f"invalid regular expression {show(pattern)}: {e}") from None


def _call(name: str, arg_nodes: list[tuple], env: Env) -> Any:
    if name in PREDICATES:
        return _predicate(name, arg_nodes, env)
    args = [_eval(a, env) for a in arg_nodes]
    return FUNCTIONS[name](env, args)


def _predicate(name: str, arg_nodes: list[tuple], env: Env) -> Any:
    if len(arg_nodes) != 2 and not (name == "sortBy" and len(arg_nodes) == 3):
        raise ExprError(f"{name}() takes a list and a predicate, e.g. {name}(list, # > 0)")
    items = _eval(arg_nodes[0], env)
    if isinstance(items, Mapping):
        items = list(items.values())
    if not isinstance(items, list):
        raise ExprError(f"{name}() needs an array, got {type_name(items)}")

    def each(v: Any) -> Any:
        env._elems.append(v)
        try:
            return _eval(arg_nodes[1], env)
        finally:
            env._elems.pop()

    def test(v: Any) -> bool:
        return as_bool(each(v), f"the predicate of {name}()")

    if name == "map":
        return [each(v) for v in items]
    if name == "filter":
        return [v for v in items if test(v)]
    if name == "all":
        return all(test(v) for v in items)
    if name == "any":
        return any(test(v) for v in items)
    if name == "none":
        return not any(test(v) for v in items)
    if name == "one":
        return sum(1 for v in items if test(v)) == 1
    if name == "count":
        return sum(1 for v in items if test(v))
    if name in ("find", "findIndex"):
        for i, v in enumerate(items):
            if test(v):
                return v if name == "find" else i
        return None if name == "find" else -1
    if name in ("findLast", "findLastIndex"):
        for i in range(len(items) - 1, -1, -1):
            if test(items[i]):
                return items[i] if name == "findLast" else i
        return None if name == "findLast" else -1
    if name == "groupBy":
        groups: dict[str, list[Any]] = {}
        for v in items:
            groups.setdefault(text(each(v)), []).append(v)
        return groups
    # sortBy
    order = _eval(arg_nodes[2], env) if len(arg_nodes) == 3 else "asc"
    if order not in ("asc", "desc"):
        raise ExprError(f'sortBy() order must be "asc" or "desc", got {show(order)}')
    keyed = [(each(v), v) for v in items]
    ks = [k for k, _ in keyed]
    if not (all(is_num(k) for k in ks) or all(isinstance(k, str) for k in ks)):
        raise ExprError("sortBy() keys must all be numbers or all strings")
    return [v for _, v in sorted(keyed, key=lambda kv: kv[0], reverse=order == "desc")]
