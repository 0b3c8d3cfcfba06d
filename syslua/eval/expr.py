"""A sandboxed evaluator for the Expr language used in CCM templates.

CCM (choria-io/ccm) evaluates `{{ expr }}` and `${ expr }` with the Go
library expr-lang/expr. This module reads the same language with a small
recursive-descent parser and walks the tree it builds; no Python code is
generated or run (no `eval`, no `exec`, no attribute access on Python
objects), so an expression can only read the values it is given and call the
functions listed in `FUNCTIONS`.

Pieces, in order:

1. `tokens`: the text as a list of tokens.
2. `parse`: tokens to a tree of tuples `(kind, ...)`, then `_check`: every
   name is a known variable and every call a known function, before anything
   runs (as Expr compiles before it runs), so a typo is an error even in a
   branch that is not taken.
3. `evaluate`: the tree against an `Env` (facts, data, environment, and
   where `readFile` reads).

Values are plain Python: None, bool, int, float, str, list, dict, and
`datetime` for `now()`. Errors are `ExprError` with a message that says what
went wrong; `template.py` names the expression and the caller the file:line.
"""

from __future__ import annotations

import base64
import datetime as dt
import difflib
import fnmatch
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

VARIABLES = ("Facts", "Data", "Environ")
# Functions CCM offers that syslua does not: a clear error instead of "unknown".
REJECTED = {
    "jet": "Jet templates",
    "template": "nested templates",
    "kvGet": "NATS key-value lookups",
    "registrations": "service registrations",
}
_LIMIT = 1_000_000  # the longest string or list an expression may build


class ExprError(ValueError):
    """Why an expression cannot be read or evaluated."""


class _Nil(ExprError):
    """A member or index of nil: `??` and `?.` turn it into nil."""


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


# ---------------------------------------------------------------------------
# tokens
# ---------------------------------------------------------------------------

_WORD_OPS = {"and", "or", "not", "in", "contains", "startsWith", "endsWith", "matches"}
_PUNCT = sorted(
    [
        "??",
        "?.",
        "..",
        "**",
        "==",
        "!=",
        "<=",
        ">=",
        "&&",
        "||",
        "+",
        "-",
        "*",
        "/",
        "%",
        "^",
        "<",
        ">",
        "!",
        "?",
        ":",
        ".",
        ",",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "|",
        "#",
    ],
    key=len,
    reverse=True,
)
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+"
    r"|(?:\d[\d_]*(?:\.(?!\.)\d[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
_ESCAPES.update({"a": "\a", "b": "\b", "f": "\f", "v": "\v", "`": "`"})


@dataclass(frozen=True)
class Token:
    kind: str  # num, str, name, op, end
    value: Any
    pos: int


def tokens(text: str) -> list[Token]:
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in "'\"`":
            value, i2 = _string(text, i)
            out.append(Token("str", value, i))
            i = i2
            continue
        m = _NUMBER.match(text, i)
        if m and (c.isdigit() or (c == "." and m.end() > i + 1)):
            out.append(Token("num", _number(m.group(0)), i))
            i = m.end()
            continue
        m = _IDENT.match(text, i)
        if m:
            word = m.group(0)
            out.append(Token("op" if word in _WORD_OPS else "name", word, i))
            i = m.end()
            continue
        for p in _PUNCT:
            if text.startswith(p, i):
                out.append(Token("op", p, i))
                i += len(p)
                break
        else:
            raise ExprError(f"syntax error: unexpected character {c!r} at position {i + 1}")
    out.append(Token("end", None, n))
    return out


def _string(text: str, i: int) -> tuple[str, int]:
    quote = text[i]
    j = i + 1
    parts: list[str] = []
    while j < len(text):
        c = text[j]
        if c == quote:
            return "".join(parts), j + 1
        if c == "\\" and quote != "`":
            j += 1
            if j >= len(text):
                break
            e = text[j]
            if e in _ESCAPES:
                parts.append(_ESCAPES[e])
                j += 1
            elif e in "xuU":
                size = {"x": 2, "u": 4, "U": 8}[e]
                digits = text[j + 1 : j + 1 + size]
                if len(digits) != size or not all(d in "0123456789abcdefABCDEF" for d in digits):
                    raise ExprError(f"syntax error: invalid escape \\{e}{digits} in a string")
                parts.append(chr(int(digits, 16)))
                j += 1 + size
            else:
                raise ExprError(f"syntax error: invalid escape \\{e} in a string")
            continue
        if c == "\n" and quote != "`":
            break
        parts.append(c)
        j += 1
    raise ExprError(f"syntax error: unterminated string starting at position {i + 1}")


def _number(text: str) -> int | float:
    t = text.replace("_", "")
    if t[:2].lower() in ("0x", "0o", "0b"):
        return int(t, 0)
    if any(c in t for c in ".eE"):
        return float(t)
    return int(t)


# ---------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------

# Binary operators: precedence and right-associativity, as Expr defines them.
_BINARY: dict[str, tuple[int, bool]] = {
    "or": (10, False),
    "||": (10, False),
    "and": (15, False),
    "&&": (15, False),
    "==": (20, False),
    "!=": (20, False),
    "<": (20, False),
    ">": (20, False),
    "<=": (20, False),
    ">=": (20, False),
    "in": (20, False),
    "matches": (20, False),
    "contains": (20, False),
    "startsWith": (20, False),
    "endsWith": (20, False),
    "..": (25, False),
    "+": (30, False),
    "-": (30, False),
    "*": (60, False),
    "/": (60, False),
    "%": (60, False),
    "**": (100, True),
    "^": (100, True),
    "??": (500, False),
}
_UNARY = {"not": 50, "!": 50, "-": 90, "+": 90}
_NOT_OPS = {"in", "matches", "contains", "startsWith", "endsWith"}  # `not in` etc.


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = tokens(text)
        self.i = 0

    def peek(self, k: int = 0) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, value: str) -> bool:
        t = self.peek()
        return t.kind == "op" and t.value == value

    def expect(self, value: str) -> Token:
        if not self.at(value):
            raise ExprError(f"syntax error: expected `{value}`, found {self.where()}")
        return self.next()

    def where(self) -> str:
        t = self.peek()
        if t.kind == "end":
            return "end of the expression"
        shown = json.dumps(t.value) if t.kind == "str" else str(t.value)
        return f"`{shown}` at position {t.pos + 1}"

    def parse(self) -> tuple:
        node = self.pipeline()
        if self.peek().kind != "end":
            raise ExprError(f"syntax error: unexpected {self.where()}")
        return node

    def pipeline(self) -> tuple:
        node = self.ternary()
        while self.at("|"):
            self.next()
            name = self.next()
            if name.kind != "name" or not self.at("("):
                raise ExprError(
                    "syntax error: `|` must be followed by a function call, e.g. `x | upper()`"
                )
            node = ("call", name.value, [node, *self.args()])
        return node

    def ternary(self) -> tuple:
        cond = self.binary(0)
        if self.at("?"):
            self.next()
            yes = self.ternary()
            self.expect(":")
            no = self.ternary()
            return ("if", cond, yes, no)
        return cond

    def binary(self, min_prec: int) -> tuple:
        left = self.unary()
        while True:
            t = self.peek()
            negate = False
            after = self.peek(1)
            if (
                t.kind == "op"
                and t.value == "not"
                and after.kind == "op"
                and after.value in _NOT_OPS
            ):
                op = self.peek(1).value
                negate = True
            elif t.kind == "op" and t.value in _BINARY:
                op = t.value
            else:
                return left
            prec, right_assoc = _BINARY[op]
            if prec < min_prec:
                return left
            self.next()
            if negate:
                self.next()
            right = self.binary(prec if right_assoc else prec + 1)
            left = ("bin", op, left, right)
            if negate:
                left = ("not", left)

    def unary(self) -> tuple:
        t = self.peek()
        if t.kind == "op" and t.value in _UNARY:
            self.next()
            operand = self.binary(_UNARY[t.value])
            return (
                ("not", operand)
                if t.value in ("not", "!")
                else ("neg" if t.value == "-" else "pos", operand)
            )
        return self.postfix(self.primary())

    def primary(self) -> tuple:
        t = self.next()
        if t.kind in ("num", "str"):
            return ("lit", t.value)
        if t.kind == "name":
            if t.value in ("true", "false"):
                return ("lit", t.value == "true")
            if t.value in ("nil", "null"):  # null: what JSON and the lookup-only renderer accepted
                return ("lit", None)
            if self.at("("):
                return ("call", t.value, self.args())
            return ("var", t.value, t.pos)
        if t.kind == "op":
            if t.value in FUNCTIONS and self.at("("):  # contains(s, x) beside `s contains x`
                return ("call", t.value, self.args())
            if t.value == "(":
                node = self.pipeline()
                self.expect(")")
                return node
            if t.value == "[":
                items = []
                while not self.at("]"):
                    items.append(self.pipeline())
                    if not self.at("]"):
                        self.expect(",")
                self.next()
                return ("list", items)
            if t.value == "{":
                pairs = []
                while not self.at("}"):
                    k = self.next()
                    if k.kind in ("name", "str", "num"):
                        key: tuple = ("lit", k.value if k.kind != "num" else k.value)
                    elif k.kind == "op" and k.value == "(":
                        key = self.pipeline()
                        self.expect(")")
                    else:
                        self.i -= 1
                        raise ExprError(f"syntax error: expected a map key, found {self.where()}")
                    self.expect(":")
                    pairs.append((key, self.pipeline()))
                    if not self.at("}"):
                        self.expect(",")
                self.next()
                return ("map", pairs)
            if t.value == "#":
                return ("elem",)
            if t.value == "." and self.peek().kind == "name":
                return ("member", ("elem",), self.next().value, False)
        self.i -= 1
        raise ExprError(f"syntax error: unexpected {self.where()}")

    def args(self) -> list[tuple]:
        self.expect("(")
        out = []
        while not self.at(")"):
            out.append(self.pipeline())
            if not self.at(")"):
                self.expect(",")
                if self.at(")"):
                    raise ExprError(f"syntax error: expected an argument, found {self.where()}")
        self.next()
        return out

    def postfix(self, node: tuple) -> tuple:
        while True:
            if self.at(".") or self.at("?."):
                optional = self.next().value == "?."
                if optional and self.at("["):
                    node = self.index(node, optional=True)
                    continue
                name = self.next()
                if name.kind not in ("name", "op") or not _IDENT.fullmatch(str(name.value)):
                    self.i -= 1
                    raise ExprError(f"syntax error: expected a field name, found {self.where()}")
                if self.at("("):
                    raise ExprError(
                        f"methods are not supported (`.{name.value}(...)`); use a function such as "
                        f"`{name.value.lower()}(x)`"
                    )
                node = ("member", node, name.value, optional)
            elif self.at("["):
                node = self.index(node, optional=False)
            else:
                return node

    def index(self, node: tuple, optional: bool) -> tuple:
        self.expect("[")
        if self.at(":"):
            self.next()
            hi = None if self.at("]") else self.pipeline()
            self.expect("]")
            return ("slice", node, None, hi)
        key = self.pipeline()
        if self.at(":"):
            self.next()
            hi = None if self.at("]") else self.pipeline()
            self.expect("]")
            return ("slice", node, key, hi)
        self.expect("]")
        return ("index", node, key, optional)


def parse(text: str) -> tuple:
    """The tree of `text`, checked for unknown names and functions."""
    if not text.strip():
        raise ExprError("syntax error: empty expression")
    tree = _Parser(text).parse()
    _check(tree, in_predicate=False)
    return tree


def _check(node: Any, in_predicate: bool) -> None:
    kind = node[0]
    if kind == "var":
        if node[1] not in VARIABLES:
            close = difflib.get_close_matches(node[1].capitalize(), VARIABLES, n=1, cutoff=0.75)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ExprError(
                f"unknown name {node[1]}"
                + (
                    hint
                    or " (the variables are Facts, Data and Environ; call lookup('...') for a path)"
                )
            )
        return
    if kind == "elem" and not in_predicate:
        raise ExprError(
            "`#` and `.field` (the current element) only exist inside a predicate "
            "such as filter(list, # > 1)"
        )
    if kind == "call":
        name, args = node[1], node[2]
        if name in REJECTED:
            raise ExprError(f"{name}() ({REJECTED[name]}) is not supported by syslua")
        if name not in FUNCTIONS and name not in PREDICATES:
            raise ExprError(f"unknown function {name}()")
        if name in PREDICATES:
            if len(args) < 2:
                raise ExprError(f"{name}() takes a list and a predicate, e.g. {name}(list, # > 0)")
            _check(args[0], in_predicate)
            for a in args[1:]:
                _check(a, True)
            return
        for a in args:
            _check(a, in_predicate)
        return
    for part in node[1:]:
        if isinstance(part, tuple):
            _check(part, in_predicate)
        elif isinstance(part, list):
            for p in part:
                if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], tuple):
                    _check(p[0], in_predicate)
                    _check(p[1], in_predicate)
                elif isinstance(p, tuple):
                    _check(p, in_predicate)


def names(text: str) -> set[str]:
    """The variables and called functions `text` mentions, or an empty set
    when it is not Expr at all (a shell `${HOME#/}`)."""
    try:
        toks = tokens(text)
    except ExprError:
        return set()
    found = set()
    for t, after in zip(toks, toks[1:], strict=False):
        if t.kind not in ("name", "op"):
            continue
        if t.value in VARIABLES:
            found.add(t.value)
        elif (
            after.kind == "op"
            and after.value == "("
            and (t.value in FUNCTIONS or t.value in PREDICATES or t.value in REJECTED)
        ):
            found.add(t.value + "()")
    return found


# ---------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------


def evaluate(text: str, env: Env) -> Any:
    try:
        return _eval(parse(text), env)
    except RecursionError:
        raise ExprError("the expression is nested too deeply") from None


def _type(v: Any) -> str:
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


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _bool(v: Any, what: str) -> bool:
    if not isinstance(v, bool):
        raise ExprError(f"{what} needs a bool, got {_type(v)} ({_show(v)})")
    return v


def _show(v: Any) -> str:
    try:
        text = json.dumps(v, default=str)
    except (TypeError, ValueError):
        text = str(v)
    return text if len(text) <= 40 else text[:37] + "..."


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
                raise ExprError(f"a map key must be a string or number, got {_type(key)}")
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
            raise ExprError(f"cannot slice {_type(base)}")
        for b in (lo, hi):
            if b is not None and not (isinstance(b, int) and not isinstance(b, bool)):
                raise ExprError(f"slice bounds must be int, got {_type(b)}")
        return base[lo:hi]
    if kind == "not":
        return not _bool(_eval(node[1], env), "`not`")
    if kind in ("neg", "pos"):
        v = _eval(node[1], env)
        if not _is_num(v):
            raise ExprError(f"unary {'-' if kind == 'neg' else '+'} needs a number, got {_type(v)}")
        return -v if kind == "neg" else v
    if kind == "if":
        return _eval(node[2] if _bool(_eval(node[1], env), "`?:`") else node[3], env)
    if kind == "bin":
        return _binary(node[1], node[2], node[3], env)
    if kind == "call":
        return _call(node[1], node[2], env)
    raise ExprError(f"cannot evaluate {kind}")  # pragma: no cover - the parser makes no other


def _get(base: Any, key: Any, optional: bool, member: bool) -> Any:
    if base is None:
        if optional:
            return None
        what = f".{key}" if member else f"[{_show(key)}]"
        raise _Nil(f"cannot read {what} of nil (use ?. or ?? for a value that may be missing)")
    if isinstance(base, Mapping):
        if not isinstance(key, str):
            key = str(key) if _is_num(key) else key
        return base.get(key) if isinstance(key, str) else None
    if isinstance(base, (list, str)) and not member:
        if not isinstance(key, int) or isinstance(key, bool):
            raise ExprError(f"an index of {_type(base)} must be an int, got {_type(key)}")
        i = key + len(base) if key < 0 else key
        if not 0 <= i < len(base):
            raise ExprError(f"index {key} out of range (length {len(base)})")
        return base[i]
    what = f"field {key}" if member else f"index {_show(key)}"
    raise ExprError(f"cannot read {what} of {_type(base)}")


def _binary(op: str, ln: tuple, rn: tuple, env: Env) -> Any:
    if op in ("and", "&&"):
        return _bool(_eval(ln, env), f"`{op}`") and _bool(_eval(rn, env), f"`{op}`")
    if op in ("or", "||"):
        return _bool(_eval(ln, env), f"`{op}`") or _bool(_eval(rn, env), f"`{op}`")
    if op == "??":
        try:
            left = _eval(ln, env)
        except _Nil:
            left = None
        return _eval(rn, env) if left is None else left
    a, b = _eval(ln, env), _eval(rn, env)
    if op == "==":
        return _equal(a, b)
    if op == "!=":
        return not _equal(a, b)
    if op in ("<", ">", "<=", ">="):
        if not (
            (_is_num(a) and _is_num(b))
            or (type(a) is type(b) and isinstance(a, (str, dt.datetime)))
        ):
            raise ExprError(f"invalid operation: {_type(a)} {op} {_type(b)}")
        return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
    if op == "in":
        if isinstance(b, Mapping):
            return isinstance(a, str) and a in b
        if isinstance(b, (list, tuple)):
            return any(_equal(a, x) for x in b)
        raise ExprError(f"`in` needs an array or a map on the right, got {_type(b)}")
    if op in ("contains", "startsWith", "endsWith", "matches"):
        if not isinstance(a, str) or not isinstance(b, str):
            raise ExprError(f"`{op}` needs two strings, got {_type(a)} and {_type(b)}")
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
            raise ExprError(f"`..` needs two ints, got {_type(a)} and {_type(b)}")
        if b - a > _LIMIT:
            raise ExprError("range too long")
        return list(range(a, b + 1))
    if op == "+":
        if isinstance(a, str) and isinstance(b, str):
            return _limited(a + b)
        if isinstance(a, list) and isinstance(b, list):
            return _limited(a + b)
    if _is_num(a) and _is_num(b):
        try:
            if op in ("+", "-", "*"):
                return _int64(a + b if op == "+" else a - b if op == "-" else a * b, op)
            if op == "/":
                return a / b
            if op == "%":
                if not (isinstance(a, int) and isinstance(b, int)):
                    raise ExprError(f"invalid operation: {_type(a)} % {_type(b)} (% needs ints)")
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
    raise ExprError(f"invalid operation: {_type(a)} {op} {_type(b)}")


def _int64(v: int | float, op: str) -> int | float:
    """Integers stay within Go's int64, as in Expr."""
    if isinstance(v, int) and not -(2**63) <= v < 2**63:
        raise ExprError(f"integer overflow in {op}")
    return v


def _limited(v: Any) -> Any:
    if len(v) > _LIMIT:
        raise ExprError("value too large")
    return v


def _equal(a: Any, b: Any) -> bool:
    if _is_num(a) and _is_num(b):
        return bool(a == b)
    if type(a) is bool or type(b) is bool:
        return a is b
    return bool(a == b)


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ExprError(f"invalid regular expression {_show(pattern)}: {e}") from None


# ---------------------------------------------------------------------------
# lookup(): GJSON paths over {facts, data, environ}
# ---------------------------------------------------------------------------

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
    if not isinstance(key, str):
        raise ExprError(f"lookup() needs a string path, got {_type(key)}")
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


# ---------------------------------------------------------------------------
# functions
# ---------------------------------------------------------------------------


def _want(name: str, args: list[Any], *kinds: Any, at_least: int | None = None) -> None:
    low = len(kinds) if at_least is None else at_least
    if not low <= len(args) <= len(kinds):
        count = str(low) if low == len(kinds) else f"{low} to {len(kinds)}"
        raise ExprError(f"{name}() takes {count} argument(s), got {len(args)}")
    for i, (a, k) in enumerate(zip(args, kinds, strict=False)):
        if k is None:
            continue
        ok = (
            _is_num(a)
            if k == "number"
            else (isinstance(a, k) and not (k is int and isinstance(a, bool)))
        )
        if not ok:
            want = {str: "string", int: "int", list: "array", "number": "number"}.get(k, "map")
            raise ExprError(f"{name}() argument {i + 1} must be {want}, got {_type(a)}")


def _fn(name: str, kinds: tuple, f: Callable[..., Any]) -> Callable[[Env, list[Any]], Any]:
    """A function of plain arguments whose types `_want` checks first."""

    def call(env: Env, args: list[Any]) -> Any:
        _want(name, args, *kinds)
        return f(*args)

    return call


def _text(v: Any) -> str:
    """A value as text, the way a template writes it."""
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
        return json.dumps(v, sort_keys=True, default=_json_default)
    if isinstance(v, dt.datetime):
        return v.isoformat()
    return str(v)


def _json_default(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, Mapping):
        return dict(v)
    raise TypeError(f"cannot encode {_type(v)}")


def _len(env: Env, args: list[Any]) -> int:
    _want("len", args, None)
    v = args[0]
    if isinstance(v, (str, list, tuple, Mapping)):
        return len(v)
    raise ExprError(f"len() needs a string, array or map, got {_type(v)}")


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
            raise ExprError(f"int() cannot convert {_show(v)}") from None
    raise ExprError(f"int() cannot convert {_type(v)}")


def _to_float(env: Env, args: list[Any]) -> float:
    _want("float", args, None)
    v = args[0]
    if isinstance(v, bool):
        raise ExprError("float() cannot convert bool")
    if _is_num(v):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            raise ExprError(f"float() cannot convert {_show(v)}") from None
    raise ExprError(f"float() cannot convert {_type(v)}")


def _numbers(name: str, args: list[Any]) -> list[Any]:
    items = args[0] if len(args) == 1 and isinstance(args[0], list) else args
    if not items:
        raise ExprError(f"{name}() needs at least one number")
    for v in items:
        if not _is_num(v):
            raise ExprError(f"{name}() needs numbers, got {_type(v)}")
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
        return json.dumps(args[0], indent=2, sort_keys=True, default=_json_default)
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
    return sep.join(_text(v) for v in args[0])


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
            raise ExprError(f"{name}() needs an array, got {_type(v)}")
        if not v:
            return None
        return v[0] if name == "first" else v[-1]

    return call


def _sort(env: Env, args: list[Any]) -> list[Any]:
    _want("sort", args, list, str, at_least=1)
    order = args[1] if len(args) == 2 else "asc"
    if order not in ("asc", "desc"):
        raise ExprError(f'sort() order must be "asc" or "desc", got {_show(order)}')
    items = args[0]
    if all(_is_num(v) for v in items) or all(isinstance(v, str) for v in items):
        return sorted(items, reverse=order == "desc")
    raise ExprError("sort() needs an array of numbers or of strings")


def _uniq(env: Env, args: list[Any]) -> list[Any]:
    _want("uniq", args, list)
    out: list[Any] = []
    for v in args[0]:
        if not any(_equal(v, o) for o in out):
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
            raise ExprError(f"concat() argument {i + 1} must be array, got {_type(a)}")
        out.extend(a)
    return _limited(out)


def _round(name: str, f: Callable[[float], Any]) -> Callable[[Env, list[Any]], Any]:
    def call(env: Env, args: list[Any]) -> Any:
        _want(name, args, "number")
        x = args[0]
        return float(f(x)) if math.isfinite(x) else float(x)

    return call


def _to_string(env: Env, args: list[Any]) -> str:
    _want("string", args, None)
    v = args[0]
    return "nil" if v is None else _text(v)


def _type_fn(env: Env, args: list[Any]) -> str:
    _want("type", args, None)
    return _type(args[0])


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
    if len(args[0]) * args[1] > _LIMIT:
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
            if not _is_num(v):
                raise ExprError(f"{name}() needs numbers, got {_type(v)}")
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
    "replace": _fn("replace", (str, str, str), lambda s, old, new: _limited(s.replace(old, new))),
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

# Functions whose second argument is a predicate run once per element (`#`).
PREDICATES = {
    "all",
    "any",
    "none",
    "one",
    "filter",
    "map",
    "count",
    "find",
    "findIndex",
    "findLast",
    "findLastIndex",
    "sortBy",
    "groupBy",
}


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
        raise ExprError(f"{name}() needs an array, got {_type(items)}")

    def each(v: Any) -> Any:
        env._elems.append(v)
        try:
            return _eval(arg_nodes[1], env)
        finally:
            env._elems.pop()

    def test(v: Any) -> bool:
        return _bool(each(v), f"the predicate of {name}()")

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
            groups.setdefault(_text(each(v)), []).append(v)
        return groups
    # sortBy
    order = _eval(arg_nodes[2], env) if len(arg_nodes) == 3 else "asc"
    if order not in ("asc", "desc"):
        raise ExprError(f'sortBy() order must be "asc" or "desc", got {_show(order)}')
    keyed = [(each(v), v) for v in items]
    ks = [k for k, _ in keyed]
    if not (all(_is_num(k) for k in ks) or all(isinstance(k, str) for k in ks)):
        raise ExprError("sortBy() keys must all be numbers or all strings")
    return [v for _, v in sorted(keyed, key=lambda kv: kv[0], reverse=order == "desc")]


def text(value: Any) -> str:
    """How a value is written in place inside a longer string."""
    return _text(value)
