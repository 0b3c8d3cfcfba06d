"""The Expr language's grammar: `parse(text)` gives the tree of an expression.

A recursive-descent parser, with Expr's operators, precedences and
associativity, builds a tree of tuples `(kind, ...)`:

    ("lit", value)                 ("var", name, pos)       ("elem",)  `#`
    ("list", [node])               ("map", [(key, value)])
    ("member", node, name, optional)   ("index", node, key, optional)
    ("slice", node, lo, hi)        ("not", node)  ("neg", node)  ("pos", node)
    ("if", cond, yes, no)          ("bin", op, left, right)
    ("call", name, [node])

Then `_check` reads the whole tree before anything runs (as Expr compiles
before it runs): every name is a known variable and every call a known
function, so a typo is an error even in a branch that is not taken.
`names(text)` says which of ours a text mentions, for telling an expression
from a shell's `${...}`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from typing import Any

from syslua.eval.expr.functions import FUNCTIONS, PREDICATES, REJECTED
from syslua.eval.expr.lexer import IDENT, Token, tokens
from syslua.eval.expr.values import VARIABLES, ExprError

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
    """Expr's grammar: one method per level of precedence, lowest first."""

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
        """A literal, a name or call, a bracketed expression, a list, a map,
        or the current element of a predicate (`#`, `.field`)."""
        t = self.next()
        if t.kind in ("num", "str"):
            return ("lit", t.value)
        if t.kind == "name":
            return self.name(t)
        if t.kind == "op":
            if t.value in FUNCTIONS and self.at("("):  # contains(s, x) beside `s contains x`
                return ("call", t.value, self.args())
            if t.value == "(":
                node = self.pipeline()
                self.expect(")")
                return node
            # Lists and maps are read here, not in methods of their own: a
            # call more per level would lower how deeply they may nest.
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
                    key = self.map_key()
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

    def name(self, t: Token) -> tuple:
        """A name: a constant, a function's call, or a variable."""
        if t.value in ("true", "false"):
            return ("lit", t.value == "true")
        if t.value in ("nil", "null"):  # null: what JSON and the lookup-only renderer accepted
            return ("lit", None)
        if self.at("("):
            return ("call", t.value, self.args())
        return ("var", t.value, t.pos)

    def map_key(self) -> tuple:
        """A map's key: a name, string or number as written, or `(expression)`."""
        k = self.next()
        if k.kind in ("name", "str", "num"):
            return ("lit", k.value)
        if k.kind == "op" and k.value == "(":
            key = self.pipeline()
            self.expect(")")
            return key
        self.i -= 1
        raise ExprError(f"syntax error: expected a map key, found {self.where()}")

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
                if name.kind not in ("name", "op") or not IDENT.fullmatch(str(name.value)):
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
    """Every name in `node` is a variable, every call a known function's,
    and `#` is only inside a predicate."""
    kind = node[0]
    if kind == "var":
        _check_variable(node[1])
    elif kind == "elem":
        if not in_predicate:
            raise ExprError(
                "`#` and `.field` (the current element) only exist inside a predicate "
                "such as filter(list, # > 1)"
            )
    elif kind == "call":
        _check_call(node[1], node[2], in_predicate)
    else:
        for child in _children(node):
            _check(child, in_predicate)


def _check_variable(name: str) -> None:
    if name not in VARIABLES:
        close = difflib.get_close_matches(name.capitalize(), VARIABLES, n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ExprError(
            f"unknown name {name}"
            + (
                hint
                or " (the variables are Facts, Data and Environ; call lookup('...') for a path)"
            )
        )


def _check_call(name: str, args: list[tuple], in_predicate: bool) -> None:
    """A known function; a predicate's second argument and after run per element."""
    if name in REJECTED:
        raise ExprError(f"{name}() ({REJECTED[name]}) is not supported by syslua")
    if name in PREDICATES:
        if len(args) < 2:
            raise ExprError(f"{name}() takes a list and a predicate, e.g. {name}(list, # > 0)")
        _check(args[0], in_predicate)
        for a in args[1:]:
            _check(a, True)
        return
    if name not in FUNCTIONS:
        raise ExprError(f"unknown function {name}()")
    for a in args:
        _check(a, in_predicate)


def _children(node: tuple) -> Iterator[tuple]:
    """The nodes directly inside `node`: its parts, a list's items, a map's keys and values."""
    for part in node[1:]:
        if isinstance(part, tuple):
            yield part
        elif isinstance(part, list):
            for p in part:
                if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], tuple):
                    yield from p  # a map's (key, value)
                elif isinstance(p, tuple):
                    yield p


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
