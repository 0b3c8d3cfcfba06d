"""Read a CCM-format YAML manifest into raw declarations.

Steps:
1. Parse the YAML, remembering the line of every mapping (for messages).
2. Resolve data: `data`, then `hierarchy.order` entries rendered against the
   facts and matched against `overrides` by exact key, merged `first` (the
   first matching override block wins, shallowly) or `deep` (all matching
   blocks, maps merged recursively and lists concatenated); then the
   `data` handed down by an `apply` parent, deep-merged on top.
3. Expand `ccm.resources` in both forms (a map with `name`, or a list of
   `{name: props}` entries with an optional `defaults` entry for that list),
   rendering `{{ lookup(...) }}` / `${ lookup(...) }` templates.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from syslua.errors import ConfigError, Source
from syslua.eval import template
from syslua.eval.constants import FROM_DEFAULTS, KEYS
from syslua.eval.lua import RawDeclaration

SUPPORTED = ("file", "exec", "apply", "package", "user")
# CCM's names for syslua's types where they differ: CCM's `package` is an OS
# package (apt, dnf); syslua's `package` is a tool in its own store.
DECLARED_AS = {"package": "os_package"}
_TOP = {"data", "hierarchy", "overrides", "ccm"}
_CCM = {"resources", "pre_message", "post_message", "fail_on_error"}


class _LineDict(dict):  # type: ignore[type-arg]
    """A YAML mapping that remembers its line and the line of each key."""

    line = 0
    key_lines: dict = {}  # type: ignore[type-arg]


def _line_of(mapping: Any, key: Any, default: int = 1) -> int:
    return getattr(mapping, "key_lines", {}).get(key, getattr(mapping, "line", default))


def _loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def construct_map(loader: Any, node: Any) -> Any:
        data = _LineDict()
        data.line = node.start_mark.line + 1
        data.key_lines = {}
        for key_node, _ in node.value:
            data.key_lines[key_node.value] = key_node.start_mark.line + 1
        yield data
        data.update(loader.construct_mapping(node, deep=True))

    def construct_int(loader: Any, node: Any) -> Any:
        # `mode: 0644` must stay the octal text the author wrote, not YAML 1.1's 420.
        text = loader.construct_scalar(node)
        if len(text) > 1 and text[0] == "0" and text[1] not in "xX":
            return text
        return yaml.SafeLoader.construct_yaml_int(loader, node)

    Loader.add_constructor("tag:yaml.org,2002:map", construct_map)
    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    return Loader


def deep_merge(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = deep_merge(out[k], v) if k in out else copy.deepcopy(v)
        return out
    if isinstance(a, list) and isinstance(b, list):
        return a + b
    return copy.deepcopy(b)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def resolve_data(
    doc: dict[str, Any], facts: dict[str, Any], extra: dict[str, Any], where: Source
) -> dict[str, Any]:
    """CCM/tinyhiera data resolution (see module docstring)."""
    hier_roots = {"facts": facts, "env": dict(os.environ)}
    try:
        base = template.render_deep(_plain(doc.get("data") or {}), hier_roots, strict=False)
        hierarchy = doc.get("hierarchy") or {}
        if not isinstance(hierarchy, dict):
            raise ConfigError("`hierarchy` must be a map with `order` and `merge`", where)
        order = hierarchy.get("order", ["default"])
        if not isinstance(order, list) or not all(isinstance(o, str) for o in order):
            raise ConfigError("`hierarchy.order` must be a list of strings", where)
        strategy = str(hierarchy.get("merge") or "first").lower()
        if strategy not in ("first", "deep"):
            raise ConfigError(f"`hierarchy.merge` must be first or deep, got {strategy}", where)
        overrides = doc.get("overrides") or {}
        for entry in order:
            key, matched = _render_entry(entry, hier_roots)
            if not matched or (key == "data" and "data" in doc):
                continue
            block = overrides.get(key) if isinstance(overrides, dict) else None
            if not isinstance(block, dict):
                continue
            block = template.render_deep(_plain(block), hier_roots, strict=False)
            if strategy == "first":
                base = {**base, **block}
                break
            base = deep_merge(base, block)
    except template.TemplateError as e:
        raise ConfigError(f"data: {e}", where) from None
    return deep_merge(base, extra) if extra else base


def _render_entry(entry: str, roots: dict[str, Any]) -> tuple[str, bool]:
    """Render one `hierarchy.order` entry; it matches when any lookup in it is non-empty."""
    found = []

    def one(expr: str) -> str:
        value = template.render(expr, roots, typed=True, strict=False)
        found.append(value not in (None, ""))
        return "" if value is None else str(value)

    rendered = template.EXPR.sub(lambda m: one(m.group(0)), entry)
    if not found:
        return rendered, bool(entry)
    return rendered, any(found)


def load(
    path: Path, *, facts: dict[str, Any], data: dict[str, Any], seq_start: int = 0
) -> tuple[list[RawDeclaration], list[tuple[str, str]]]:
    """Declarations of a CCM YAML manifest, and its pre/post messages."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from e
    try:
        doc = yaml.load(text, Loader=_loader())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = Source(str(path), mark.line + 1) if mark else None
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"invalid YAML: {problem}", where) from None
    top = Source(str(path), 1)
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError(
            "a YAML manifest must be a map with data, hierarchy, overrides and ccm", top
        )
    for key in doc:
        if key not in _TOP:
            raise ConfigError(
                f"unknown top-level key `{key}` (expected data, hierarchy, overrides, ccm)",
                Source(str(path), _line_of(doc, key)),
            )
    resolved = resolve_data(doc, facts, data, top)
    roots = {"facts": facts, "data": resolved, "env": dict(os.environ)}
    ccm = doc.get("ccm")
    if ccm is None:
        ccm = {}
    if not isinstance(ccm, dict):
        raise ConfigError("`ccm` must be a map with `resources`", top)
    for key in ccm:
        if key not in _CCM:
            raise ConfigError(
                f"unknown key `ccm.{key}` (expected {', '.join(sorted(_CCM))})",
                Source(str(path), _line_of(ccm, key)),
            )
    messages = []
    try:
        for kind in ("pre_message", "post_message"):
            if ccm.get(kind):
                messages.append((kind, str(template.render(str(ccm[kind]), roots))))
    except template.TemplateError as e:
        raise ConfigError(f"ccm: {e}", top) from None
    resources = ccm.get("resources") or []
    if not isinstance(resources, list):
        raise ConfigError(
            "`ccm.resources` must be a list", Source(str(path), getattr(ccm, "line", 1))
        )
    decls: list[RawDeclaration] = []
    seq = seq_start
    for entry in resources:
        line = getattr(entry, "line", getattr(ccm, "line", 1))
        where = Source(str(path), line)
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ConfigError(
                "each resource must be a map with exactly one type, e.g. `- file: {...}`", where
            )
        ((type_, body),) = entry.items()
        if type_ not in SUPPORTED:
            raise ConfigError(
                f"resource type `{type_}` is not supported (supported: {', '.join(SUPPORTED)})",
                where,
            )
        declared = DECLARED_AS.get(str(type_), str(type_))
        for props, line in _expand(type_, body, where):
            seq += 1
            src = Source(str(path), line)
            try:
                rendered = _render_props(type_, props, roots)
            except template.TemplateError as e:
                raise ConfigError(f"{type_}: {e}", src) from None
            decls.append(
                RawDeclaration(type=declared, props=rendered, source=src, seq=seq, prio=None)
            )
    return decls, messages


def _expand(type_: str, body: Any, where: Source) -> list[tuple[dict[str, Any], int]]:
    """Both resource forms, as (props, line) with the key under the type's key name."""
    key = KEYS[DECLARED_AS.get(type_, type_)]
    if isinstance(body, dict):
        props = _plain(body)
        if "name" not in props and key not in props:
            raise ConfigError(
                f"{type_}: `name` is required",
                Source(where.file, getattr(body, "line", where.line)),
            )
        if key != "name" and "name" in props:
            props[key] = props.pop("name")
        return [(props, getattr(body, "line", where.line))]
    if not isinstance(body, list):
        raise ConfigError(
            f"{type_}: expected a map with `name`, or a list of `name: {{...}}` entries", where
        )
    defaults: dict[str, Any] = {}
    entries: list[tuple[str, dict[str, Any], int]] = []
    for item in body:
        line = getattr(item, "line", where.line)
        if not isinstance(item, dict) or len(item) != 1:
            raise ConfigError(
                f"{type_}: each entry must be a single `name: {{...}}` map",
                Source(where.file, line),
            )
        ((name, props),) = item.items()
        props = _plain(props or {})
        if not isinstance(props, dict):
            raise ConfigError(f"{type_} {name}: properties must be a map", Source(where.file, line))
        if name == "defaults":
            if defaults:
                raise ConfigError(
                    f"{type_}: only one `defaults` entry is allowed per list",
                    Source(where.file, line),
                )
            defaults = props
            continue
        entries.append((str(name), props, line))
    out = []
    for name, props, line in entries:
        merged: dict[str, Any] = {
            k: {"__syslua_prio": FROM_DEFAULTS, "__syslua_v": v}
            for k, v in defaults.items()
            if k not in props
        }
        merged.update(props)
        merged.pop("name", None)
        merged[key] = name
        out.append((merged, line))
    return out


def _render_props(type_: str, props: dict[str, Any], roots: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in props.items():
        wrapped = isinstance(v, dict) and "__syslua_prio" in v
        inner = v["__syslua_v"] if wrapped else v
        if k == "data" and type_ == "apply":
            inner = template.render_deep(inner, roots, typed=True)
        else:
            inner = template.render_deep(inner, roots, typed=False)
        out[k] = {"__syslua_prio": v["__syslua_prio"], "__syslua_v": inner} if wrapped else inner
    return out
