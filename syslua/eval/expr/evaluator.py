"""Evaluate an expression: `evaluate(text, env)` walks the tree `parse` builds.

Nothing is compiled to Python and nothing reaches a Python object's
attributes: each kind of node has its handler in `_NODES`, each operator its
function in `_OPERATORS` (or, when it may not evaluate its right side, in
`_SHORT_CIRCUIT`), and a call goes to `functions.py`. Types are checked as
Expr checks them: `1 + "a"` is an error, not a string.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
import re
from collections.abc import Callable, Mapping
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
    return _NODES[node[0]](node, env)  # the parser makes no other kinds


# ---------------------------------------------------------------------------
# nodes
# ---------------------------------------------------------------------------


def _map(node: tuple, env: Env) -> dict[str, Any]:
    out = {}
    for k, v in node[1]:
        key = _eval(k, env)
        if not isinstance(key, (str, int, float, bool)):
            raise ExprError(f"a map key must be a string or number, got {type_name(key)}")
        out[key if isinstance(key, str) else str(key)] = _eval(v, env)
    return out


def _list(node: tuple, env: Env) -> list[Any]:
    out = []
    for item in node[1]:  # a loop, not a comprehension: one frame less per level of nesting
        out.append(_eval(item, env))
    return out


def _access(node: tuple, env: Env) -> Any:
    """`a.b?.c[k]`: a chain of members and indexes, read from its start.

    Walked in a loop rather than by recursion, so that a long chain costs no
    depth of its own, and `Facts.host.info.os`, the commonest expression,
    costs one call per link."""
    chain = []
    while node[0] in _ACCESS:
        chain.append(node)
        node = node[1]
    value = _eval(node, env)
    for link in reversed(chain):
        if link[0] == "member":
            value = _get(value, link[2], link[3], member=True)
        else:
            value = _get(value, _eval(link[2], env), link[3], member=False)
    return value


_ACCESS = ("member", "index")


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


def _slice(node: tuple, env: Env) -> Any:
    base = _eval(node[1], env)
    lo = 0 if node[2] is None else _eval(node[2], env)
    hi = None if node[3] is None else _eval(node[3], env)
    if not isinstance(base, (list, str)):
        raise ExprError(f"cannot slice {type_name(base)}")
    for b in (lo, hi):
        if b is not None and not (isinstance(b, int) and not isinstance(b, bool)):
            raise ExprError(f"slice bounds must be int, got {type_name(b)}")
    return base[lo:hi]


def _signed(node: tuple, env: Env) -> Any:
    """Unary `-` (a "neg" node) and `+` ("pos")."""
    v = _eval(node[1], env)
    if not is_num(v):
        sign = "-" if node[0] == "neg" else "+"
        raise ExprError(f"unary {sign} needs a number, got {type_name(v)}")
    return -v if node[0] == "neg" else v


def _if(node: tuple, env: Env) -> Any:
    return _eval(node[2] if as_bool(_eval(node[1], env), "`?:`") else node[3], env)


def _binary(node: tuple, env: Env) -> Any:
    op, ln, rn = node[1], node[2], node[3]
    short = _SHORT_CIRCUIT.get(op)
    if short is not None:
        return short(op, ln, rn, env)
    return _OPERATORS[op](_eval(ln, env), _eval(rn, env))


def _call(node: tuple, env: Env) -> Any:
    name, arg_nodes = node[1], node[2]
    if name in PREDICATES:
        return _predicate(name, arg_nodes, env)
    args = [_eval(a, env) for a in arg_nodes]
    return FUNCTIONS[name](env, args)


def _predicate(name: str, arg_nodes: list[tuple], env: Env) -> Any:
    """A list, and a predicate run once per element with `#` bound to it."""
    if len(arg_nodes) != 2 and not (name == "sortBy" and len(arg_nodes) == 3):
        raise ExprError(f"{name}() takes a list and a predicate, e.g. {name}(list, # > 0)")
    items = _eval(arg_nodes[0], env)
    if isinstance(items, Mapping):
        items = list(items.values())
    if not isinstance(items, list):
        raise ExprError(f"{name}() needs an array, got {type_name(items)}")
    body = arg_nodes[1]
    what = f"the predicate of {name}()"

    def each(v: Any) -> Any:
        env._elems.append(v)
        try:
            return _eval(body, env)
        finally:
            env._elems.pop()

    def test(v: Any) -> bool:
        return as_bool(each(v), what)

    rest = [_eval(n, env) for n in arg_nodes[2:]]
    return PREDICATES[name](items, each, test, *rest)


_NODES: dict[str, Callable[[tuple, Env], Any]] = {
    "lit": lambda node, env: node[1],
    "var": lambda node, env: env.variable(node[1]),
    "elem": lambda node, env: env._elems[-1],
    "list": _list,
    "map": _map,
    "member": _access,
    "index": _access,
    "slice": _slice,
    "not": lambda node, env: not as_bool(_eval(node[1], env), "`not`"),
    "neg": _signed,
    "pos": _signed,
    "if": _if,
    "bin": _binary,
    "call": _call,
}


# ---------------------------------------------------------------------------
# operators
# ---------------------------------------------------------------------------


def _and(op: str, ln: tuple, rn: tuple, env: Env) -> bool:
    return as_bool(_eval(ln, env), f"`{op}`") and as_bool(_eval(rn, env), f"`{op}`")


def _or(op: str, ln: tuple, rn: tuple, env: Env) -> bool:
    return as_bool(_eval(ln, env), f"`{op}`") or as_bool(_eval(rn, env), f"`{op}`")


def _nil_or(op: str, ln: tuple, rn: tuple, env: Env) -> Any:
    """`a ?? b`: b when a is nil, or reads a member or index of nil."""
    try:
        left = _eval(ln, env)
    except _Nil:
        left = None
    return _eval(rn, env) if left is None else left


# Operators that may leave their right side unevaluated: given the nodes.
_SHORT_CIRCUIT: dict[str, Callable[[str, tuple, tuple, Env], Any]] = {
    "and": _and,
    "&&": _and,
    "or": _or,
    "||": _or,
    "??": _nil_or,
}

Operator = Callable[[Any, Any], Any]


def _ordered(op: str, compare: Operator) -> Operator:
    """`<` and the like: two numbers, two strings or two times."""

    def apply(a: Any, b: Any) -> Any:
        if not (
            (is_num(a) and is_num(b)) or (type(a) is type(b) and isinstance(a, (str, dt.datetime)))
        ):
            raise ExprError(f"invalid operation: {type_name(a)} {op} {type_name(b)}")
        return compare(a, b)

    return apply


def _in(a: Any, b: Any) -> bool:
    if isinstance(b, Mapping):
        return isinstance(a, str) and a in b
    if isinstance(b, (list, tuple)):
        return any(equal(a, x) for x in b)
    raise ExprError(f"`in` needs an array or a map on the right, got {type_name(b)}")


def _strings(op: str, test: Callable[[str, str], bool]) -> Operator:
    """`contains` and the like: two strings."""

    def apply(a: Any, b: Any) -> bool:
        if not isinstance(a, str) or not isinstance(b, str):
            raise ExprError(f"`{op}` needs two strings, got {type_name(a)} and {type_name(b)}")
        return test(a, b)

    return apply


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ExprError(f"invalid regular expression {show(pattern)}: {e}") from None


def _range(a: Any, b: Any) -> list[int]:
    if (
        not (isinstance(a, int) and isinstance(b, int))
        or isinstance(a, bool)
        or isinstance(b, bool)
    ):
        raise ExprError(f"`..` needs two ints, got {type_name(a)} and {type_name(b)}")
    if b - a > LIMIT:
        raise ExprError("range too long")
    return list(range(a, b + 1))


def _arithmetic(op: str, compute: Operator) -> Operator:
    """`-`, `*` and the like: two numbers, with Go's errors."""

    def apply(a: Any, b: Any) -> Any:
        if not (is_num(a) and is_num(b)):
            raise ExprError(f"invalid operation: {type_name(a)} {op} {type_name(b)}")
        try:
            return compute(a, b)
        except ZeroDivisionError:
            raise ExprError("integer divide by zero") from None
        except OverflowError:
            raise ExprError(f"number too large in {op}") from None

    return apply


def _int64(v: int | float, op: str) -> int | float:
    """Integers stay within Go's int64, as in Expr."""
    if isinstance(v, int) and not -(2**63) <= v < 2**63:
        raise ExprError(f"integer overflow in {op}")
    return v


_add = _arithmetic("+", lambda a, b: _int64(a + b, "+"))


def _plus(a: Any, b: Any) -> Any:
    """`+` also joins two strings or two arrays."""
    if isinstance(a, str) and isinstance(b, str):
        return limited(a + b)
    if isinstance(a, list) and isinstance(b, list):
        return limited(a + b)
    return _add(a, b)


def _divide(a: Any, b: Any) -> Any:
    """Always a float division, which by zero gives ±Inf (or NaN for 0 / 0)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != 0:
            return math.copysign(math.inf, a) * math.copysign(1, b)
        return math.nan


def _modulo(a: Any, b: Any) -> Any:
    if not (isinstance(a, int) and isinstance(b, int)):
        raise ExprError(f"invalid operation: {type_name(a)} % {type_name(b)} (% needs ints)")
    rem = abs(a) % abs(b)  # ZeroDivisionError when b is 0
    return rem if a >= 0 else -rem  # the sign of `a`, as Go's %


def _power(a: Any, b: Any) -> float:
    if abs(b) > 4096 and abs(a) > 1:
        raise ExprError("exponent too large")
    power = float(a) ** float(b)
    return power if isinstance(power, float) else math.nan  # (-8) ** 0.5


# Operators that evaluate both sides first: given the values.
_OPERATORS: dict[str, Operator] = {
    "==": equal,
    "!=": lambda a, b: not equal(a, b),
    "<": _ordered("<", operator.lt),
    ">": _ordered(">", operator.gt),
    "<=": _ordered("<=", operator.le),
    ">=": _ordered(">=", operator.ge),
    "in": _in,
    "contains": _strings("contains", lambda a, b: b in a),
    "startsWith": _strings("startsWith", str.startswith),
    "endsWith": _strings("endsWith", str.endswith),
    "matches": _strings("matches", lambda a, b: _regex(b).search(a) is not None),
    "..": _range,
    "+": _plus,
    "-": _arithmetic("-", lambda a, b: _int64(a - b, "-")),
    "*": _arithmetic("*", lambda a, b: _int64(a * b, "*")),
    "/": _arithmetic("/", _divide),
    "%": _arithmetic("%", _modulo),
    "**": _arithmetic("**", _power),
    "^": _arithmetic("^", _power),
}
