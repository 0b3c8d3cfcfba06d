"""Hashes of `sys.build` / `sys.bind` declarations, and their placeholders.

While Lua runs, a primitive's outputs are named by id (`$${build:@tools:out}`),
because its hash depends on everything it declares. After merging, each
primitive's hash is computed from its id, inputs, actions and outputs (not
its `check`, which only watches for drift, as in the original; with
the placeholders of the primitives it uses already replaced, so a change
anywhere below changes the hash), and every `@id` in every item becomes the
hash: `$${build:<hash>:out}`, `$${bind:<hash>:<output>}`.
"""

from __future__ import annotations

import re
from typing import Any

from syslua.errors import ConfigError
from syslua.manifest.model import Item, Manifest, canonical_json, freeze, thaw
from syslua.paths import abbreviate

PRIMITIVES = ("build", "bind")
# Compiled by `re` on first use (and cached there): most configs have no builds or binds.
_BY_ID = r"\$\$\{(build|bind):@([^:}]+):"
PLACEHOLDER = r"\$\$\{(build|bind):([0-9a-f]{64}):([^}]+)\}"


def strings(value: Any):  # type: ignore[no-untyped-def]
    """Every string inside nested dicts and lists."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def _substitute(value: Any, hashes: dict[tuple[str, str], str]) -> Any:
    if isinstance(value, str):
        if "$${" not in value:
            return value

        def repl(m: re.Match[str]) -> str:
            key = (m.group(1), m.group(2))
            if key not in hashes:
                raise KeyError(key)
            return f"$${{{m.group(1)}:{hashes[key]}:"

        return re.sub(_BY_ID, repl, value)
    if isinstance(value, dict):
        return {k: _substitute(v, hashes) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, hashes) for v in value]
    return value


def _may_name_primitive(item: Item) -> bool:
    """Cheap pre-check on top-level string properties (the common case is none)."""
    return any(
        isinstance(v, str) and "$${" in v or not isinstance(v, str | bool | int | float)
        for v in item.props.values()
    )


def tree_name(item: Item) -> str:
    return f"{item.get('hash')[:32]}-{item.key}"


def finalize(manifest: Manifest) -> Manifest:
    """Give every build/bind its hash and rewrite `@id` placeholders everywhere."""
    prims = {(i.type, i.key): i for i in manifest if i.type in PRIMITIVES}
    if not prims:
        if manifest.placeholders is False:
            return manifest
        for item in manifest:
            for s in strings(thaw(item.props)) if _may_name_primitive(item) else ():
                m = re.search(_BY_ID, s)
                if m:
                    raise ConfigError(
                        f"{item.type} {abbreviate(item.key)}: a placeholder names sys.{m.group(1)} `{m.group(2)}`, "
                        "which is not declared",
                        manifest.sources.get(item.id, (None,))[0],
                    )
        return manifest
    import hashlib  # here, not at the top: loading OpenSSL costs a run that hashes nothing

    hashes: dict[tuple[str, str], str] = {}
    visiting: list[tuple[str, str]] = []

    def hash_of(key: tuple[str, str]) -> str:
        if key in hashes:
            return hashes[key]
        if key in visiting:
            cycle = " -> ".join(f"{t}#{k}" for t, k in (*visiting[visiting.index(key) :], key))
            raise ConfigError(f"sys.{key[0]} outputs refer to each other in a cycle: {cycle}")
        item = prims.get(key)
        if item is None:
            raise ConfigError(f"a placeholder names sys.{key[0]} `{key[1]}`, which is not declared")
        visiting.append(key)
        props = thaw(item.props)
        for s in strings(props):
            for m in re.finditer(_BY_ID, s):
                hash_of((m.group(1), m.group(2)))
        body = {
            k: v
            for k, v in props.items()
            if k not in ("depends_on", "hash", "check", "check_result")
        }
        digest = hashlib.sha256(
            canonical_json({"type": key[0], "id": key[1], **_substitute(body, hashes)}).encode()
        ).hexdigest()
        visiting.pop()
        hashes[key] = digest
        return digest

    for key in sorted(prims):
        hash_of(key)
    items = []
    for item in manifest:
        props = thaw(item.props)
        try:
            new_props = _substitute(props, hashes)
        except KeyError as e:
            kind, ident = e.args[0]
            raise ConfigError(
                f"{item.type} {abbreviate(item.key)}: a placeholder names sys.{kind} `{ident}`, "
                "which is not declared",
                manifest.sources.get(item.id, (None,))[0],
            ) from None
        if item.type in PRIMITIVES:
            new_props["hash"] = hashes[(item.type, item.key)]
        if new_props != props:
            item = Item(
                item.type,
                item.key,
                freeze(new_props),
                item.parent,
                item.noop,
                item.health_check_only,
            )
        items.append(item)
    return Manifest(
        items=tuple(items),
        sources=manifest.sources,
        inputs=manifest.inputs,
        config=manifest.config,
        warnings=manifest.warnings,
        messages=manifest.messages,
        placeholders=True,
    )


def references(item: Item) -> set[str]:
    """Hashes of the builds and binds an item's properties use."""
    out: set[str] = set()
    for s in strings(thaw(item.props)):
        if "$${" in s:
            out.update(m.group(2) for m in re.finditer(PLACEHOLDER, s))
    return out
