"""Writing a `sys.lua` that reads as if a person wrote it: one shared writer
for every format, so that quoting, `~`, relative sources and comments are
done once."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from syslua.paths import home


def quote(text: str) -> str:
    """A Lua string literal for `text` (double quotes, escapes as Lua reads them)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):03d}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def tilde(path: Path | str) -> str:
    """`path` as a config writes it: `~/...` under the home, else absolute."""
    p = os.path.abspath(str(path))
    h = home().rstrip("/")
    if p == h:
        return "~"
    if p.startswith(h + "/"):
        return "~/" + p[len(h) + 1 :]
    return p


def relative(path: Path | str, base: Path) -> str:
    """A source path as the config at `base` names it: `./x` below it, else relative or absolute."""
    rel = os.path.relpath(os.path.abspath(str(path)), os.path.abspath(str(base)))
    if rel == ".":
        return "."
    return rel if rel.startswith("../") else "./" + rel


def lua_list(items: Iterable[str]) -> str:
    return "{ " + ", ".join(quote(i) for i in items) + " }"


class Writer:
    """Lines of a sys.lua, with a count of its declarations."""

    def __init__(self, header: list[str]) -> None:
        self.lines: list[str] = [f"-- {h}" if h else "--" for h in header]
        self.declarations = 0

    def blank(self) -> None:
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    def comment(self, text: str) -> None:
        for line in text.split("\n"):
            self.lines.append(f"-- {line}" if line else "--")

    def declare(self, kind: str, props: dict[str, object], comment: str | None = None) -> None:
        """`kind { k = v, ... }` on one line (a comment after it when given);
        values: str (quoted), bool, int, list of str, or a raw Lua expression
        wrapped in `Raw`."""
        parts = [f"{k} = {_value(v)}" for k, v in props.items() if v is not None]
        line = f"{kind} {{ " + ", ".join(parts) + " }"
        if comment:
            line += f"  -- {comment}"
        self.lines.append(line)
        self.declarations += 1

    def raw(self, text: str, declarations: int = 0) -> None:
        """Lines written as they are (a loop, an `if`), holding `declarations`."""
        self.lines.extend(text.split("\n"))
        self.declarations += declarations

    def text(self) -> str:
        while self.lines and self.lines[-1] == "":
            self.lines.pop()
        return "\n".join(self.lines) + "\n"


class Raw(str):
    """A Lua expression written as it is (`sys.facts.os == "linux"`)."""


def _value(v: object) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, list | tuple):
        return lua_list(str(x) for x in v)
    raise TypeError(f"no Lua for {v!r}")
