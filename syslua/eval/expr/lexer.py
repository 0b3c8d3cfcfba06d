"""The Expr language's tokens: `tokens(text)` turns an expression into a list
of `Token`s (numbers, strings, names, operators), ending with an `end` token.

Numbers are read as Expr writes them (`0x1F`, `1_000`, `1e3`); strings in
single, double or back quotes, with Go's escapes (none in back quotes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from syslua.eval.expr.values import ExprError

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
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
_ESCAPES.update({"a": "\a", "b": "\b", "f": "\f", "v": "\v", "`": "`"})


@dataclass(frozen=True)
class Token:
    kind: str  # num, str, name, op, end
    value: Any
    pos: int


def tokens(text: str) -> list[Token]:
    """The tokens of `text`, ending with an `end` token."""
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
        m = IDENT.match(text, i)
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
    """The string literal opening at `i`, and where it ends."""
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
