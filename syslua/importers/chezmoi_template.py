"""chezmoi's Go templates, the part of them a `sys.lua` can say: a template
becomes one Lua string expression, evaluated with the config.

Understood: text; `{{ .chezmoi.hostname }}`, `.chezmoi.os`,
`.chezmoi.username`, `.chezmoi.homeDir`, `.chezmoi.sourceDir` and data keys
(`.email`, `.git.name`) as values; `{{ if }}`, `{{ else if }}`, `{{ else }}`,
`{{ end }}` with conditions made of `eq`, `ne`, `not`, `and`, `or`, values
and string literals; comments `{{/* */}}`; the trim markers `{{-` and `-}}`.
Anything else (pipes, `range`, `with`, `include`, `template`, other
functions, variables) raises `Untranslatable` with the line it is on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from syslua.importers.lua import quote

# chezmoi's variables that have a fact: the Lua for each.
CHEZMOI_VARS = {
    "hostname": "hostname",  # a local the config defines (up to the first dot, as chezmoi)
    "os": "sys.os",
    "username": "sys.user.name",
    "homeDir": "sys.user.home",
}
_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(r'\s*(\(|\)|"(?:[^"\\]|\\.)*"|`[^`]*`|[.A-Za-z_0-9$:=|-][^\s()]*)')
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")


class Untranslatable(ValueError):
    """What stops a translation, and the 1-based line of the template it is on."""

    def __init__(self, why: str, line: int) -> None:
        super().__init__(why)
        self.why = why
        self.line = line


class Context:
    """What a template may read: the data, and where the source directory is."""

    def __init__(self, data: Mapping[str, Any], source_dir_lua: str) -> None:
        self.data = data
        self.source_dir_lua = source_dir_lua
        self.uses_hostname = False


def pieces(text: str) -> list[tuple[str, str, int]]:
    """The template as ("text", s, line) and ("action", inner, line), trims applied."""
    out: list[tuple[str, str, int]] = []
    pos = 0
    for m in _ACTION.finditer(text):
        chunk = text[pos : m.start()]
        if m.group(1):
            chunk = chunk.rstrip(" \t\r\n")
        if out and out[-1][0] == "trim":
            out.pop()
            chunk = chunk.lstrip(" \t\r\n")
        if chunk:
            out.append(("text", chunk, text.count("\n", 0, pos) + 1))
        out.append(("action", m.group(2).strip(), text.count("\n", 0, m.start()) + 1))
        if m.group(3):
            out.append(("trim", "", 0))
        pos = m.end()
    chunk = text[pos:]
    if out and out[-1][0] == "trim":
        out.pop()
        chunk = chunk.lstrip(" \t\r\n")
    if chunk:
        out.append(("text", chunk, text.count("\n", 0, pos) + 1))
    return out


def is_template(text: str) -> bool:
    return "{{" in text


def to_lua(text: str, ctx: Context) -> str:
    """One Lua expression whose value is the rendered template."""
    body, rest = _block(pieces(text), 0, ctx, top=True)
    assert rest is None
    return _concat(body)


def _block(
    items: list[tuple[str, str, int]], i: int, ctx: Context, top: bool = False
) -> tuple[list[str], tuple[str, int, int] | None]:
    """Lua pieces up to the `else`/`end` closing this block: (pieces, (word, index, line))."""
    parts: list[str] = []
    while i < len(items):
        kind, s, line = items[i]
        if kind == "text":
            parts.append(long_string(s))
            i += 1
            continue
        if s.startswith("/*") and s.endswith("*/"):
            i += 1
            continue
        words = s.split(None, 1)
        head = words[0] if words else ""
        if head in ("end", "else"):
            if top:
                raise Untranslatable(f"`{{{{ {s} }}}}` without its `if`", line)
            return parts, (s, i + 1, line)
        if head == "if":
            expr, i = _if(items, i, ctx, words[1] if len(words) > 1 else "", line)
            parts.append(expr)
            continue
        parts.append(_output(s, ctx, line))
        i += 1
    if not top:
        raise Untranslatable("an `if` without its `end`", items[-1][2] if items else 1)
    return parts, None


def _if(
    items: list[tuple[str, str, int]], i: int, ctx: Context, cond_text: str, line: int
) -> tuple[str, int]:
    """`(cond and (yes) or (no))` for the `if` at items[i]; the index after its `end`."""
    cond = condition(cond_text, ctx, line)
    yes, closer = _block(items, i + 1, ctx)
    assert closer is not None
    word, i, at = closer
    if word == "end":
        no = '""'
    elif word == "else":
        no_parts, closer = _block(items, i, ctx)
        assert closer is not None
        if closer[0] != "end":
            raise Untranslatable("a second `else`", closer[2])
        no, i = _concat(no_parts), closer[1]
    elif word.startswith("else if "):
        # `else if C` is an `if C` nested in the else, closed by the same `end`.
        no, i = _if(items, i - 1, ctx, word[len("else if ") :], at)
        return f"({cond} and {_concat(yes)} or {no})", i
    else:
        raise Untranslatable(f"`{{{{ {word} }}}}`", at)
    return f"({cond} and {_concat(yes)} or {no})", i


def _concat(parts: list[str]) -> str:
    if not parts:
        return '""'
    if len(parts) == 1:
        return parts[0]
    return "(" + " .. ".join(parts) + ")"


def long_string(s: str) -> str:
    """`s` as a Lua literal: a long string when it spans lines, else quoted."""
    if "\n" not in s or "\r" in s:
        return quote(s)
    level = 0
    while "]" + "=" * level + "]" in s:
        level += 1
    eq = "=" * level
    return f"[{eq}[\n{s}]{eq}]"


def _tokens(text: str, line: int) -> list[str]:
    toks: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise Untranslatable(f"cannot read `{text}`", line)
        toks.append(m.group(1))
        pos = m.end()
    return toks


def _output(text: str, ctx: Context, line: int) -> str:
    """The Lua string for `{{ value }}`."""
    toks = _tokens(text, line)
    if len(toks) != 1:
        raise Untranslatable(
            f"`{{{{ {text} }}}}`: only a variable or data value is translated", line
        )
    lua, kind = _atom(toks[0], ctx, line)
    return lua if kind == "string" else f"tostring({lua})"


def condition(text: str, ctx: Context, line: int) -> str:
    """The Lua boolean for an `if`'s condition."""
    toks = _tokens(text, line)
    lua, rest = _cond(toks, 0, ctx, line)
    if rest != len(toks):
        raise Untranslatable(f"`{text}`: more than one condition", line)
    return lua


def _cond(toks: list[str], i: int, ctx: Context, line: int) -> tuple[str, int]:
    """A condition starting at toks[i]: a call (`eq a b`), `( ... )`, or a value."""
    if i >= len(toks):
        raise Untranslatable("a condition is missing", line)
    tok = toks[i]
    if tok == "(":
        lua, j = _cond(toks, i + 1, ctx, line)
        if j >= len(toks) or toks[j] != ")":
            raise Untranslatable("a `(` without its `)`", line)
        return lua, j + 1
    if tok in ("eq", "ne"):
        args, j = _args(toks, i + 1, ctx, line, values=True)
        if len(args) < 2:
            raise Untranslatable(f"`{tok}` needs two values", line)
        op = "==" if tok == "eq" else "~="
        tests = [f"{args[0]} {op} {b}" for b in args[1:]]
        return "(" + (" or " if tok == "eq" else " and ").join(tests) + ")", j
    if tok in ("not", "and", "or"):
        args, j = _args(toks, i + 1, ctx, line, values=False)
        if tok == "not":
            if len(args) != 1:
                raise Untranslatable("`not` takes one value", line)
            return f"not {args[0]}", j
        if len(args) < 2:
            raise Untranslatable(f"`{tok}` needs two values", line)
        return "(" + f" {tok} ".join(args) + ")", j
    lua, kind = _atom(tok, ctx, line)
    return _truth(lua, kind), i + 1


def _args(
    toks: list[str], i: int, ctx: Context, line: int, *, values: bool
) -> tuple[list[str], int]:
    """The arguments of a call, up to `)` or the end: values (for eq) or conditions."""
    args: list[str] = []
    while i < len(toks) and toks[i] != ")":
        if toks[i] == "(" or not values:
            lua, i = _cond(toks, i, ctx, line)
            args.append(lua)
        else:
            lua, _kind = _atom(toks[i], ctx, line)
            args.append(lua)
            i += 1
    return args, i


def _truth(lua: str, kind: str) -> str:
    """Go's truth of a value: false, 0, "" and nil are false."""
    if kind == "bool":
        return lua
    if kind == "number":
        return f"({lua} ~= 0)"
    if kind == "string":
        return f'({lua} ~= "")'
    return f"(not not {lua})"


def _atom(tok: str, ctx: Context, line: int) -> tuple[str, str]:
    """(Lua, kind) for a literal or a `.field`: kind is string, number, bool or table."""
    if tok[0] == '"':
        return quote(bytes(tok[1:-1], "utf-8").decode("unicode_escape")), "string"
    if tok[0] == "`":
        return quote(tok[1:-1]), "string"
    if tok in ("true", "false"):
        return tok, "bool"
    if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", tok):
        return tok, "number"
    if tok.startswith(".chezmoi."):
        name = tok[len(".chezmoi.") :]
        if name == "hostname":
            ctx.uses_hostname = True
        if name == "sourceDir":
            return ctx.source_dir_lua, "string"
        if name in CHEZMOI_VARS:
            return CHEZMOI_VARS[name], "string"
        raise Untranslatable(f"`{tok}` has no syslua fact", line)
    if tok.startswith(".") and len(tok) > 1:
        return _data(tok, ctx, line)
    raise Untranslatable(f"`{tok}` is not translated (only eq, ne, not, and, or)", line)


def _data(tok: str, ctx: Context, line: int) -> tuple[str, str]:
    value: Any = ctx.data
    lua = "data"
    for key in tok[1:].split("."):
        if not isinstance(value, Mapping) or key not in value:
            raise Untranslatable(f"`{tok}` is not in the data (.chezmoidata, [data])", line)
        value = value[key]
        lua += f".{key}" if _IDENT.match(key) else f"[{quote(key)}]"
    if isinstance(value, bool):
        return lua, "bool"
    if isinstance(value, int | float):
        return lua, "number"
    if isinstance(value, str):
        return lua, "string"
    return lua, "table"
