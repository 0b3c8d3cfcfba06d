"""From merged items to the manifest, and the rules that need all of it.

1. An item whose kind expands it (a file with a directory `source`: a tree)
   stands for its members; the layers merge made of one key (trees from
   several sources into one directory) are expanded one by one and joined
   by their kind; a path both declared and inside a tree is an error.
2. A `subscribe` to an item nobody declared, in an item only CCM manifests
   declared, is dropped with a warning (CCM accepts it; it never triggers).
3. The manifest: items sorted by id, where each was declared, what was read.
4. Every `depends_on`/`subscribe` names a declared item other than itself,
   and each kind's rules between items hold (`TypeSchema.check_all`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from syslua import registry
from syslua.errors import ConfigError, Source
from syslua.manifest import schema
from syslua.manifest.model import Item, Manifest, freeze
from syslua.manifest.schema import Invalid, from_ccm

if TYPE_CHECKING:
    from syslua.manifest.tree import Expansion
    from syslua.manifest.validate import Decl


def assemble(
    merged: Sequence[tuple[Item, list[Decl]]],
    *,
    inputs: Iterable[str] = (),
    config: str | None = None,
    warnings: Iterable[str] = (),
    messages: Iterable[tuple[str, str]] = (),
    skipped: Iterable[tuple[str, str, str]] = (),
    placeholders: bool | None = None,
) -> Manifest:
    """The manifest of `merged` (each item with the declarations it merged);
    `placeholders`: see `Manifest.placeholders`."""
    sources = {
        item.id: (g[0].source,) if len(g) == 1 else tuple(sorted({d.source for d in g}))
        for item, g in merged
    }
    runs = _runs(merged)
    for ident, run in runs.items():
        if len(run) > 1:  # layers: every declaration of the key
            sources[ident] = tuple(sorted({d.source for _, g in run for d in g}))
    warnings = list(warnings)
    items, read = _expand_all(runs, sources)
    ccm = {ident for ident, run in runs.items() if all(schema.from_ccm(g) for _, g in run)}
    _loose_subscriptions(items, ccm, sources, warnings)
    items.sort(key=lambda i: i.id)
    manifest = Manifest(
        items=tuple(items),
        sources=sources,
        inputs=tuple(dict.fromkeys([*inputs, *read])),
        config=config,
        warnings=tuple(warnings),
        messages=tuple(messages),
        skipped=tuple(skipped),
        placeholders=placeholders,
    )
    _check_references(manifest, ccm)
    present = {i.type for i in manifest}
    for entry in registry.entries():
        if entry.name in present:
            schema.of(entry.name).check_all(manifest)
    return manifest


def _runs(merged: Sequence[tuple[Item, list[Decl]]]) -> dict[str, list[tuple[Item, list[Decl]]]]:
    """The merged items by id: one, or the layers of one key."""
    runs: dict[str, list[tuple[Item, list[Decl]]]] = {}
    for item, group in merged:
        runs.setdefault(item.id, []).append((item, group))
    return runs


def _expand_all(
    runs: dict[str, list[tuple[Item, list[Decl]]]], sources: dict[str, tuple[Source, ...]]
) -> tuple[list[Item], list[str]]:
    """The items, each expanded by its kind (a tree into its members; the
    layers of a key joined), and the files expanding read."""
    items: list[Item] = []
    expanded: list[tuple[Expansion, Item]] = []
    read: list[str] = []
    for run in runs.values():
        item, group = run[0]
        found = _expand(item, group, sources[item.id]) if len(run) == 1 else _join(run)
        if found is None:
            items.append(item)
            continue
        read.extend(found.inputs)
        if found.members:
            expanded.append((found, item))
        else:
            items.extend(found.items)
    if expanded:
        _add_members(items, expanded, sources)
    return items, read


def _join(run: list[tuple[Item, list[Decl]]]) -> Expansion:
    """The layers of one key, each expanded, joined by their kind."""
    sch = schema.of(run[0][0].type)
    parts = []
    for item, group in run:
        # An error in one layer points at the declaration that gave its body
        # (its `source`), not at one every layer shares.
        own = [d.source for d in group if sch.slots & d.props.keys()] or [d.source for d in group]
        found = _expand(item, group, tuple(sorted(own)))
        assert found is not None, f"{item.id}: a layer that does not expand"
        parts.append((found, group))
    return sch.join(run[0][0].key, parts)


def _expand(item: Item, group: list[Decl], where: tuple[Source, ...]) -> Expansion | None:
    """What the item's kind expands it into, in the context of the declaration
    that gave its properties (its template roots); None: itself."""
    sch = schema.of(item.type)
    if len(group) == 1:  # the common case: one declaration gave everything
        given = group[0]
    else:
        given = next((d for d in group if sch.slots & d.props.keys()), group[0])
    ctx = given.context
    try:
        return sch.expand(item, ctx.roots if ctx is not None else None, from_ccm(group))
    except Invalid as e:
        raise ConfigError(f"{sch.label(item.key)}: {e}", where[0]) from None


def _label(item: Item) -> str:
    return schema.of(item.type).label(item.key)


def _add_members(
    items: list[Item],
    expanded: list[tuple[Expansion, Item]],
    sources: dict[str, tuple[Source, ...]],
) -> None:
    """Add the items of every tree; a path both declared and inside a tree is an error."""
    where = {i.id: f"at {sources[i.id][0]}" for i in items}
    for found, decl in expanded:
        for member in found.items:
            # A member of joined trees was declared by its own tree.
            declared = found.declared.get(member.id, sources[decl.id])
            mine = f"as part of the tree {_label(decl)} at {declared[0]}"
            other = where.get(member.id)
            if other is not None:
                raise ConfigError(
                    f"{_label(member)} is declared twice: {other}, and {mine}",
                    declared[0],
                    hint="Add it to the tree's `ignore` to declare it on its own.",
                )
            items.append(member)
            if member.id == decl.id:
                where[member.id] = f"at {sources[decl.id][0]}"
            else:
                where[member.id] = mine
                sources[member.id] = declared


def _loose_subscriptions(
    items: list[Item], ccm: set[str], sources: dict[str, tuple[Source, ...]], warnings: list[str]
) -> None:
    """CCM accepts a `subscribe` to a resource that is not declared (it never
    triggers): in an item declared only by CCM manifests, such a reference is
    dropped with a warning. In Lua it stays an error (`_check_references`)."""
    declared = {i.id for i in items}
    for n, item in enumerate(items):
        targets = item.get("subscribe", ())
        loose = [t for t in targets if t not in declared]
        if not loose or item.id not in ccm:
            continue
        for ref in loose:
            warnings.append(
                f"{sources[item.id][0]}: {_label(item)}: `subscribe` names "
                f"{ref}, which is not declared; it will never trigger"
            )
        props = dict(item.props)
        props["subscribe"] = tuple(t for t in targets if t in declared)
        items[n] = item.replace(props=freeze(props))


def _check_references(manifest: Manifest, ccm: set[str]) -> None:
    """Every `depends_on`/`subscribe` names a declared item other than itself.
    Items only CCM manifests declare are told in CCM's word, `require`."""
    for item in manifest:
        for prop in ("depends_on", "subscribe"):
            word = "require" if prop == "depends_on" and item.id in ccm else prop
            for ref in item.get(prop, ()):
                if ref not in manifest:
                    raise ConfigError(
                        f"{_label(item)}: `{word}` names {ref}, which is not declared",
                        manifest.sources[item.id][0],
                    )
                if ref == item.id:
                    raise ConfigError(
                        f"{_label(item)}: `{word}` names the item itself",
                        manifest.sources[item.id][0],
                    )
