"""`{{ lookup('root.key') }}` and `${ lookup(...) }` templates, rendered without running code.

Only lookups are templates: any other `{{ ... }}` or `${...}` (a shell
variable, a Go template) is left exactly as written, so dotfiles that contain
such text survive. Roots are `facts.`, `data.`, and `env.`/`environ.`;
`lookup(key, default)` returns the default when the key is missing, and a
missing key without default is an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_CALL_TEXT = r"""lookup\s*\((?:'[^']*'|"[^"]*"|[^'"()])*\)"""
EXPR = re.compile(r"\{\{\s*(" + _CALL_TEXT + r")\s*\}\}|\$\{\s*(" + _CALL_TEXT + r")\s*\}")
_CALL = re.compile(
    r"""^lookup\s*\(\s*(?P<q>['"])(?P<key>[^'"]*)(?P=q)\s*(?:,\s*(?P<default>.+?))?\s*\)$""", re.S
)
_MISSING = object()


class TemplateError(ValueError):
    pass


def _parse_default(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("nil", "null"):
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        raise TemplateError(f"cannot read the default `{text}` of a lookup") from e


def _lookup(expr: str, roots: Mapping[str, Any], strict: bool = True) -> Any:
    m = _CALL.match(expr.strip())
    if not m:
        raise TemplateError(
            f"cannot read the template expression `{expr}`; write lookup('root.key') or lookup('root.key', default)"
        )
    key = m.group("key")
    default = _parse_default(m.group("default")) if m.group("default") is not None else _MISSING
    root, _, rest = key.partition(".")
    if root == "environ":
        root = "env"
    if root not in roots:
        raise TemplateError(f"lookup('{key}'): unknown root `{root}` (use facts., data. or env.)")
    value: Any = roots[root]
    for part in rest.split(".") if rest else []:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, (list, tuple)) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            value = _MISSING
            break
    if value is _MISSING:
        if default is _MISSING:
            if not strict:
                return ""
            raise TemplateError(f"lookup('{key}'): no such key")
        return default
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list, tuple, Mapping)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def has_template(text: str) -> bool:
    return "lookup" in text and EXPR.search(text) is not None


def render(text: str, roots: Mapping[str, Any], *, typed: bool = False, strict: bool = True) -> Any:
    """Render lookups in `text`. With `typed`, a string that is exactly one
    lookup returns the looked-up value with its type (for YAML data). Without
    `strict`, a missing key reads as "" (CCM's hierarchy resolution)."""
    if "lookup" not in text:
        return text
    if typed:
        whole = EXPR.fullmatch(text.strip())
        if whole:
            return _lookup(whole.group(1) or whole.group(2), roots, strict)
    return EXPR.sub(lambda m: _as_text(_lookup(m.group(1) or m.group(2), roots, strict)), text)


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
