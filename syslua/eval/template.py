"""`{{ expr }}` and `${ expr }` templates: Expr-language expressions (`expr/`).

Finding placeholders follows CCM: `{{` runs to the next `}}` and `${` to its
matching `}`, neither counting braces or `}}` inside quotes; `${{` is a `$`
followed by a `{{` placeholder. `$${` is syslua's own placeholder
(`$${build:...}`, `$${env:NAME}`), never an expression.

Which placeholders are expressions depends on where the text comes from:

- In a CCM manifest (`Roots(ccm=True)`), every placeholder is an
  expression: one that cannot be read or evaluated is an error, nothing is
  left literal (SPEC section 5).
- In a Lua config's file `content` and `template = true` sources, a
  placeholder is an expression when it mentions one of ours: `Facts`, `Data`,
  `Environ` or a call of a known function (`lookup(...)`, `upper(...)`).
  Anything else (`${HOME}`, `${PWD##*/}`, a Go template's `{{ .Values }}`)
  is a dotfile's own text and is kept as written.

With `typed`, a string that is exactly one expression keeps the value's type
(for YAML data); otherwise each value is written in place as text (true/false,
nil as "", maps and arrays as JSON). Without `strict`, a missing lookup key
reads as "" (CCM's hierarchy resolution).

A CCM resource's text whose expressions read files (`file()`, `readFile()`)
is rendered when the resource runs, after the resources before it wrote
what it reads (`defer`): at evaluation it becomes one `$${template:...}`
placeholder that carries the text and its roots (facts, data, the `.env`
to read, the directory relative paths start from), and the placeholder
resolver (resources/placeholders.py) renders it with `render_deferred`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def _lib() -> ModuleType:
    """The expression language, imported on first use: most configs have no
    placeholder, and every command imports this module."""
    from syslua.eval import expr

    return expr


class TemplateError(ValueError):
    pass


class Roots(dict):  # type: ignore[type-arg]
    """The lookup roots (`facts`, `data`, `env`) and how a template reads them.

    `base_dir` is where readFile() resolves relative paths (the manifest's
    directory); `reads` collects the files it read (config inputs); `files`
    is False where CCM allows only lookup() (hierarchy data); `ccm` makes every
    placeholder an expression.
    """

    def __init__(
        self,
        *args: Any,
        base_dir: str | None = None,
        reads: list[str] | None = None,
        files: bool = True,
        ccm: bool = False,
        dotenv: str | None = None,
        **roots: Any,
    ) -> None:
        super().__init__(*args, **roots)
        self.base_dir = base_dir
        self.reads = reads
        self.files = files
        self.ccm = ccm
        self.dotenv = dotenv  # the `.env` read into `env`, read again by a deferred render


def placeholders(
    text: str, accept: Callable[[str], bool] | None = None
) -> list[tuple[int, int, str]]:
    """(start, end, inner text) of each `{{ }}` / `${ }` in `text`.

    With `accept`, a placeholder whose inner text it refuses is plain text,
    and the search goes on right after its opener: a shell `${x:-it's}` must
    not hide a `{{ lookup(...) }}` further on behind its quote."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(text)
    while i < n - 1:
        two = text[i : i + 2]
        if two == "{{":
            dollar = False
        elif two == "${" and not text.startswith("${{", i) and not (i and text[i - 1] == "$"):
            dollar = True
        else:
            i += 1
            continue
        start = i
        end = _closing(text, start + 2, dollar)
        inner = text[start + 2 : end - (1 if dollar else 2)].strip()
        if end < 0 or (accept is not None and not accept(inner)):
            i = start + 2  # not closed, or not ours: the opener is plain text
            continue
        out.append((start, end, inner))
        i = end
    return out


def _closing(text: str, i: int, dollar: bool) -> int:
    """Where the placeholder whose text starts at `i` ends (just after its
    `}}`, or the `}` matching a `${`), or -1 when it is not closed. Braces
    and `}}` inside quotes do not count."""
    quote = ""
    depth = 1
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\" and quote != "`":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"`":
            quote = c
        elif not dollar and text.startswith("}}", i):
            return i + 2
        elif dollar and c == "{":
            depth += 1
        elif dollar and c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _ours(inner: str) -> bool:
    return bool(_lib().names(inner))


def expressions(text: str, roots: Mapping[str, Any]) -> list[tuple[int, int, str]]:
    """The placeholders of `text` that are evaluated with `roots`."""
    if "{{" not in text and "${" not in text:
        return []
    return placeholders(text, None if getattr(roots, "ccm", False) else _ours)


def evaluate(
    inner: str, roots: Mapping[str, Any], *, strict: bool = True, reads: list[str] | None = None
) -> Any:
    """The value of one expression; errors name it."""
    env = _lib().Env(
        roots=roots,
        base_dir=getattr(roots, "base_dir", None),
        reads=reads if reads is not None else getattr(roots, "reads", None),
        files=getattr(roots, "files", True),
        missing_ok=not strict,
    )
    try:
        return _lib().evaluate(inner, env)
    except _lib().ExprError as e:
        message = str(e)
        if (
            getattr(roots, "ccm", False)
            and message.startswith("unknown name")
            and inner.isidentifier()
        ):
            # Most likely a shell variable: say how to keep it.
            message = (
                f'unknown name {inner} (to write ${{{inner}}} itself: {{{{ "${{{inner}}}" }}}})'
            )
        if message.startswith(inner):
            raise TemplateError(message) from None
        raise TemplateError(f"`{inner}`: {message}") from None


def render(
    text: str,
    roots: Mapping[str, Any],
    *,
    typed: bool = False,
    strict: bool = True,
    reads: list[str] | None = None,
) -> Any:
    """Render the expressions in `text` (see the module docstring)."""
    found = expressions(text, roots)
    if not found:
        return text
    if typed and len(found) == 1:
        start, end, inner = found[0]
        if text.strip() == text[start:end]:
            value = evaluate(inner, roots, strict=strict, reads=reads)
            import datetime as dt

            # a time is the one value that is not plain data: keep its text
            return _lib().text(value) if isinstance(value, dt.datetime) else value
    parts: list[str] = []
    at = 0
    for start, end, inner in found:
        parts.append(text[at:start])
        parts.append(_lib().text(evaluate(inner, roots, strict=strict, reads=reads)))
        at = end
    parts.append(text[at:])
    return "".join(parts)


def render_deep(
    value: Any, roots: Mapping[str, Any], *, typed: bool = True, strict: bool = True
) -> Any:
    """Render every string inside nested dicts and lists."""
    if isinstance(value, str):
        return render(value, roots, typed=typed, strict=strict)
    if isinstance(value, dict):
        return {
            render(k, roots, strict=strict) if isinstance(k, str) else k: render_deep(
                v, roots, typed=typed, strict=strict
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [render_deep(v, roots, typed=typed, strict=strict) for v in value]
    return value


# The functions that read files: a text calling one is rendered when its resource runs.
READERS = frozenset({"file()", "readFile()"})
DEFERRED = "template:"  # `$${template:<payload>}`


def defers(text: str, roots: Mapping[str, Any]) -> bool:
    """Whether `text` has an expression that reads a file (see `defer`)."""
    return any(READERS & _lib().names(inner) for _, _, inner in expressions(text, roots))


def defer(text: str, roots: Mapping[str, Any]) -> str:
    """`text` as a placeholder rendered when its resource runs. Each
    expression is parsed now, so that a syntax error is still reported at
    evaluation with the manifest's line."""
    import base64
    import json
    import zlib

    for _, _, inner in expressions(text, roots):
        try:
            _lib().parse(inner)
        except _lib().ExprError as e:
            raise TemplateError(f"`{inner}`: {e}") from None
    try:
        # The files it can read now are the config's inputs (`reads`), as
        # those of a template rendered now are; what it cannot read yet is
        # for the run to find.
        render(text, roots)
    except TemplateError:
        pass
    payload = {
        "t": text,
        "b": getattr(roots, "base_dir", None),
        "e": getattr(roots, "dotenv", None),
        "f": roots.get("facts") or {},
        "d": roots.get("data") or {},
    }
    packed = zlib.compress(json.dumps(payload, sort_keys=True, default=str).encode(), 9)
    return "$${" + DEFERRED + base64.urlsafe_b64encode(packed).decode("ascii") + "}"


def render_deferred(body: str) -> str:
    """The text of a `$${template:<body>}` placeholder, rendered now."""
    import base64
    import json
    import zlib

    try:
        payload = json.loads(zlib.decompress(base64.urlsafe_b64decode(body.encode("ascii"))))
        text = payload["t"]
    except (ValueError, KeyError, TypeError, zlib.error):
        raise TemplateError("a deferred template that cannot be read") from None
    from syslua.eval import dotenv

    roots = Roots(
        facts=payload.get("f") or {},
        data=payload.get("d") or {},
        env=dotenv.environ(payload.get("e")),
        base_dir=payload.get("b"),
        ccm=True,
    )
    return str(render(text, roots))
