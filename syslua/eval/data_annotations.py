"""Hiera data annotations: `# @require` and `# @validate <expr>` comments in `data:`.

CCM reads directives from the comments written just above a key of a
manifest's top-level `data:` section, and checks them against the data once
it is resolved (hierarchy overrides and the parent's data merged in):

- `@require` (or `@required`): the value must not be missing, null or the
  empty string (`false` and `0` are values);
- `@validate EXPR`: EXPR, over `value` (the value as text), must hold. EXPR
  calls the validators below, combined with `&&`/`and`, `||`/`or`, `!`/`not`
  and parentheses. It is read with Python's `ast` and only those nodes are
  evaluated: no attribute, no other name, no other call.

Maps and lists are not validated (their keys may be annotated one by one).
A failure is a configuration error at the annotation's line naming the key;
an unknown `@directive` is a warning. JSON has no comments: nothing to read.
"""

from __future__ import annotations

import ast
import ipaddress
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

_KEY = re.compile(r"""^(?P<indent> *)(?P<key>"[^"]*"|'[^']*'|[^\s#'"-][^:#]*?)\s*:(?:\s|$)""")


@dataclass(frozen=True, slots=True)
class Annotation:
    path: tuple[str, ...]  # the key under `data`, e.g. ("web", "port")
    directive: str  # "require", "validate", or the unknown word as written
    argument: str  # the expression of `@validate`
    line: int


def read(text: str) -> list[Annotation]:
    """The annotations of the top-level `data:` section of a YAML text."""
    lines = text.splitlines()
    out: list[Annotation] = []
    start = next((i for i, ln in enumerate(lines) if re.match(r"^data\s*:", ln)), None)
    if start is None:
        return out
    stack: list[tuple[int, str]] = []  # (indent, key) of the keys the line is under
    pending: list[tuple[str, str, int]] = []  # (word, argument, line) for the next key
    for number, raw, indent in _data_lines(lines, start):
        stripped = raw.strip()
        if stripped.startswith("#"):
            body = stripped.lstrip("#").strip()
            if body.startswith("@"):
                word, _, argument = body[1:].partition(" ")
                pending.append((word, argument.strip(), number))
            continue
        m = _KEY.match(raw)
        if m is None:
            pending = []  # a list entry or a continued value: annotations do not reach it
            continue
        key = m.group("key").strip()
        if key[:1] in "'\"":
            key = key[1:-1]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (*(k for _, k in stack), key)
        for word, argument, line in pending:
            directive = "require" if word in ("require", "required") else word
            out.append(Annotation(path, directive, argument, line))
        pending = []
        stack.append((indent, key))
    return out


def _data_lines(lines: list[str], start: int) -> Iterator[tuple[int, str, int]]:
    """(line number, line, indent) of each line of the `data:` section that
    opens at index `start`: not blank, and not inside a block scalar."""
    skip_deeper: int | None = None  # inside a block scalar (`key: |`) indented past this
    for number in range(start + 1, len(lines)):
        raw = lines[number]
        stripped = raw.strip()
        indent = len(raw) - len(raw.lstrip(" "))
        if skip_deeper is not None:
            if not stripped or indent > skip_deeper:
                continue
            skip_deeper = None
        if not stripped:
            continue
        if indent == 0 and not stripped.startswith("#"):
            return  # the next top-level section
        yield number + 1, raw, indent
        m = _KEY.match(raw)
        if m is not None and raw[m.end() :].strip()[:1] in ("|", ">"):
            skip_deeper = indent


_MISSING = object()


def value_at(data: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return _MISSING
        data = data[part]
    return data


def check(annotations: list[Annotation], data: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """Check `annotations` against the resolved `data`: (warnings, errors), an
    error being (the annotation's line, a message naming the key). `@require`
    is checked first; `@validate` is skipped for a key that failed it."""
    warnings: list[str] = []
    errors: list[Any] = []
    required_failed: set[tuple[str, ...]] = set()
    ordered = sorted(annotations, key=lambda a: (a.directive != "require", a.line))
    for a in ordered:
        key = "data." + ".".join(a.path)
        value = value_at(data, a.path)
        if a.directive == "require":
            if value is _MISSING or value is None or value == "":
                required_failed.add(a.path)
                errors.append((a.line, f"{key}: @require: a value is required, but it is empty"))
        elif a.directive == "validate":
            if not a.argument:
                errors.append((a.line, f"{key}: @validate needs an expression, e.g. isInt(value)"))
                continue
            if a.path in required_failed or value is _MISSING or value is None:
                continue
            if isinstance(value, (dict, list)):
                continue  # maps and lists are validated key by key, as in CCM
            try:
                ok = evaluate(a.argument, _text(value))
            except ValueError as e:
                errors.append((a.line, f"{key}: @validate {a.argument}: {e}"))
                continue
            if not ok:
                errors.append(
                    (a.line, f"{key}: @validate {a.argument}: {_text(value)!r} is not valid")
                )
        else:
            warnings.append(
                f"{key}: unknown annotation `@{a.directive}` (known: @require, @validate)"
            )
    return warnings, errors


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- the validators ------------------------------------------------------------


def _is_ip(v: str, version: int | None = None) -> bool:
    try:
        address = ipaddress.ip_address(v)
    except ValueError:
        return False
    return version is None or address.version == version


def _is_int(v: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", v.strip()) is not None


def _is_float(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h|d|w|M|y|Y))+")


def _is_duration(v: str) -> bool:
    return _DURATION.fullmatch(v.strip()) is not None


def _is_regex(v: str, pattern: str) -> bool:
    try:
        return re.search(pattern, v) is not None
    except re.error as e:
        raise ValueError(f"bad regular expression {pattern!r}: {e}") from None


_UNSAFE = set("`$;|&<>\n\r")


def _is_shell_safe(v: str) -> bool:
    return not (_UNSAFE & set(v))


_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def _is_hostname(v: str) -> bool:
    name = v[:-1] if v.endswith(".") else v
    return 0 < len(name) <= 253 and all(_LABEL.fullmatch(p) for p in name.split("."))


def _is_fqdn(v: str) -> bool:
    name = v[:-1] if v.endswith(".") else v
    return _is_hostname(v) and "." in name and not name.rsplit(".", 1)[1].isdigit()


_FUNCTIONS: dict[str, Callable[..., bool]] = {
    "isIP": _is_ip,
    "isIPv4": lambda v: _is_ip(v, 4),
    "isIPv6": lambda v: _is_ip(v, 6),
    "isInt": _is_int,
    "isFloat": _is_float,
    "isDuration": _is_duration,
    "isRegex": _is_regex,
    "isShellSafe": _is_shell_safe,
    "isHostname": _is_hostname,
    "isFQDN": _is_fqdn,
}
for _name, _fn in list(_FUNCTIONS.items()):
    _FUNCTIONS[re.sub(r"^is", "is_", _name).lower()] = _fn


def evaluate(expression: str, value: str) -> bool:
    """Evaluate a validation expression over `value` (ValueError: cannot read it)."""
    text = re.sub(r"&&", " and ", expression)
    text = re.sub(r"\|\|", " or ", text)
    text = re.sub(r"!(?!=)", " not ", text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueError("cannot read the expression") from None
    return bool(_eval(tree.body, value))


def _eval(node: ast.AST, value: str) -> Any:
    if isinstance(node, ast.BoolOp):
        results = (bool(_eval(v, value)) for v in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _eval(node.operand, value)
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool)):
        return node.value
    if isinstance(node, ast.Name) and node.id == "value":
        return value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        return _call(node.func.id, node.args, value)
    raise ValueError("only validator calls on `value`, &&, || and ! may be used")


def _call(name: str, arg_nodes: list[ast.expr], value: str) -> bool:
    """A validator's call: a known one, with text arguments."""
    fn = _FUNCTIONS.get(name)
    if fn is None:
        known = ", ".join(n for n in _FUNCTIONS if n.startswith("is") and "_" not in n)
        raise ValueError(f"unknown function `{name}` (known: {known})")
    args = [_eval(a, value) for a in arg_nodes]
    if not all(isinstance(a, str) for a in args):
        raise ValueError(f"`{name}` takes text arguments")
    try:
        return fn(*args)
    except TypeError:
        raise ValueError(f"wrong number of arguments to `{name}`") from None
