"""Merge validated declarations by key and priority (SPEC section 3).

`merge` groups declarations by (kind, key) and merges each group into one
item (`merge_group`). A singular property takes the value with the lowest
priority number; two different values at that priority are a conflict
naming both declarations. A mergeable property is the union of all values
ordered by priority; contributions of different declarations at the same
priority are ordered by value, so the result never depends on the order in
which declarations were evaluated. The kind's schema then completes the
item (defaults, required properties, its rules); `manifest/assemble.py`
makes the manifest of the merged items.

A kind may split the declarations of one key into layers (`TypeSchema.layers`:
file trees from several sources into one directory). Each layer is an item
of that key: the properties its kind keeps per layer (`layered`) are merged
within the layer, all others across every declaration of the key, so the
layers agree on them; `assemble` joins the layers once expanded.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from syslua.errors import ConfigError, Source
from syslua.eval.constants import FROM_DEFAULTS
from syslua.manifest import schema
from syslua.manifest.model import Item, freeze, freeze_owned
from syslua.manifest.schema import TypeSchema
from syslua.manifest.validate import Decl


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _short(value: Any) -> str:
    text = _canon(value)
    return text if len(text) <= 72 else text[:69] + "..."


class ConflictError(ConfigError):
    """Two declarations give different values at the same winning priority."""


FORCE_HINT = "Use lib.mkForce() to override, or lib.mkDefault() to provide a fallback."


def conflict(
    sch: TypeSchema,
    key: str,
    name: str,
    prio: int,
    entries: list[tuple[Any, Source]],
    hint: str = FORCE_HINT,
) -> ConflictError:
    """`Conflicting values for file#~/x.mode at priority 900:`, then each
    value with the declaration that gave it."""
    lines = [f"Conflicting values for {sch.subject(key, name)} at priority {prio}:"]
    for value, source in sorted(entries, key=lambda e: e[1]):
        lines.append(f"  - {_short(value)} (declared at {source})")
    return ConflictError("\n".join(lines), hint=hint)


def _merge_property(group: list[Decl], slot: str, mergeable: bool, sch: TypeSchema) -> Any:
    entries = [(d.props[slot][0], d.props[slot][1], d) for d in group if slot in d.props]
    if mergeable:
        contributions = sorted(
            ((p, _canon(v), v) for p, v, _ in entries), key=lambda c: (c[0], c[1])
        )
        out: list[Any] = []
        seen: set[str] = set()
        for _, _, values in contributions:
            for v in values:
                # `environment` entries are KEY=value: the first (highest
                # priority) value of a key wins, later ones are dropped.
                c = v.partition("=")[0] + "=" if slot == "environment" else _canon(v)
                if c not in seen:
                    seen.add(c)
                    out.append(v)
        return out
    best = min(p for p, _, _ in entries)
    winners = [(v, d) for p, v, d in entries if p == best]
    distinct = {_canon(v) for v, _ in winners}
    if len(distinct) > 1:
        d0 = winners[0][1]
        alternatives = slot in sch.slots  # {name: value}: shown as the value, named by its name
        shown = [(next(iter(v.values())) if alternatives else v, d.source) for v, d in winners]
        name = "/".join(sorted({k for v, _ in winners for k in v})) if alternatives else slot
        raise conflict(sch, d0.key, name, best, shown)
    return winners[0][0]


def _mergeable(sch: TypeSchema, key: str, slot: str) -> bool:
    prop = sch.prop_for(key, slot) or schema.CCM_ONLY.get(slot)
    return bool(prop and prop.mergeable)


def merge_group(group: list[Decl]) -> Item:
    """Merge the declarations of one (kind, key) into an Item."""
    d0 = group[0]
    sch = schema.of(d0.type)
    props = _merged(group, sch)
    props = sch.complete(
        d0.key,
        props,
        d0.source if len(group) == 1 else min(d.source for d in group),
        lambda slot: _written(group, slot),
        schema.from_ccm(group),
    )
    return _make_item(d0.type, d0.key, props, group)


def _merged(
    group: list[Decl], sch: TypeSchema, keep: Callable[[str], bool] | None = None
) -> dict[str, Any]:
    """The merged properties of `group` (only the slots `keep` accepts, when given)."""
    key = group[0].key
    props: dict[str, Any] = {}
    if len(group) == 1:
        # One declaration: nothing to compare, only its own lists to de-duplicate.
        for slot, (_, value) in group[0].props.items():
            if keep is not None and not keep(slot):
                continue
            if isinstance(value, list) and _mergeable(sch, key, slot):
                value = _merge_property(group, slot, True, sch)
            if slot in sch.slots:
                props.update(value)
            else:
                props[slot] = value
        return props
    for slot in sorted({s for d in group for s in d.props}):
        if keep is not None and not keep(slot):
            continue
        value = _merge_property(group, slot, _mergeable(sch, key, slot), sch)
        if slot in sch.slots:
            props.update(value)
        else:
            props[slot] = value
    return props


def merge_layers(group: list[Decl], layers: list[list[Decl]]) -> list[tuple[Item, list[Decl]]]:
    """One item per layer of `group` (see the module's docstring), each with
    the declarations it merged."""
    d0 = group[0]
    sch = schema.of(d0.type)
    own = sch.layered
    shared = _merged(group, sch, lambda slot: slot not in own)
    out = []
    for layer in layers:
        props = {**shared, **_merged(layer, sch, lambda slot: slot in own)}
        props = sch.complete(
            d0.key,
            props,
            min(d.source for d in layer),
            _written_in(layer, group, own),
            schema.from_ccm(group),
        )
        out.append((_make_item(d0.type, d0.key, props, layer), layer))
    return out


def _written_in(layer: list[Decl], group: list[Decl], own: frozenset[str]) -> Callable[[str], bool]:
    """`written` of a layer: its own slots by its declarations, the others by all."""
    return lambda slot: _written(layer if slot in own else group, slot)


def _written(group: list[Decl], slot: str) -> bool:
    """Whether a declaration wrote `slot` itself (not through defaults{})."""
    return any(slot in d.props and d.props[slot][0] < FROM_DEFAULTS for d in group)


def merge(decls: Iterable[Decl]) -> list[tuple[Item, list[Decl]]]:
    """Merge every declaration: each item with the declarations it merged, in
    the order their keys were first declared, the layers of a key one after
    the other (`assemble` makes the manifest)."""
    groups: dict[tuple[str, str], list[Decl]] = defaultdict(list)
    for d in decls:
        groups[(d.type, d.key)].append(d)
    out: list[tuple[Item, list[Decl]]] = []
    for g in groups.values():
        layers = schema.of(g[0].type).layers(g) if len(g) > 1 else None
        if layers is None:
            out.append((merge_group(g), g))
        else:
            out.extend(merge_layers(g, layers))
    return out


def _make_item(type_: str, key: str, props: dict[str, Any], group: list[Decl]) -> Item:
    if len(group) == 1:
        o = group[0].origin
        return Item(
            type=type_,
            key=key,
            props=freeze_owned(props),
            parent=o.parent,
            noop=o.noop,
            health_check_only=o.health_check_only,
        )
    origins = [d.origin for d in group]
    parents = sorted({o.parent for o in origins if o.parent is not None})
    root_declared = any(o.parent is None for o in origins)
    return Item(
        type=type_,
        key=key,
        props=freeze(props),
        parent=None if root_declared or not parents else parents[0],
        noop=all(o.noop for o in origins),
        health_check_only=all(o.health_check_only for o in origins),
    )
