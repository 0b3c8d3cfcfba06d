"""Validate declarations one by one, then merge them by key and priority (SPEC section 3).

Steps, in order:
1. `validate` each raw declaration against its type's schema (errors point
   at its line), unwrapping `lib.mk*` priorities: an explicit wrapper wins,
   then a whole-declaration priority, then plain (`PLAIN`; all priorities
   are in `eval/constants.py`).
2. `merge` groups declarations by (type, key). A singular property takes the
   value with the lowest priority number; two different values at that
   priority are a conflict naming both declarations. A mergeable property is
   the union of all values ordered by priority; contributions of different
   declarations at the same priority are ordered by value, so the result
   never depends on the order in which declarations were evaluated.
3. Schema defaults fill what nobody declared, item rules are checked, and
   every `depends_on`/`subscribe` reference must name a declared item.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from syslua.errors import ConfigError, Source
from syslua.eval.constants import FROM_DEFAULTS, PLAIN
from syslua.eval.lua import RawDeclaration
from syslua.manifest import schema, shell_syntax, tree
from syslua.manifest.model import Item, Manifest, freeze, freeze_owned
from syslua.manifest.schema import Context, Invalid, Prop
from syslua.paths import abbreviate

# Plain classes, not dataclasses: a dataclass costs every start half a
# millisecond to generate its methods, and nothing compares or prints these.


class Origin:
    """The `apply` context a declaration was made in (root: parent None). Read-only."""

    __slots__ = ("parent", "noop", "health_check_only", "depth")

    def __init__(
        self,
        parent: str | None = None,
        noop: bool = False,
        health_check_only: bool = False,
        depth: int = 0,
    ) -> None:
        self.parent = parent
        self.noop = noop
        self.health_check_only = health_check_only
        self.depth = depth


class Decl:
    """A validated declaration: normalised values tagged with priorities."""

    __slots__ = ("type", "key", "props", "source", "seq", "origin", "context")

    def __init__(
        self,
        type: str,
        key: str,
        props: dict[str, tuple[int, Any]],  # slot-or-name -> (priority, value)
        source: Source,
        seq: int,
        origin: Origin,
        context: Context | None = None,  # where it was validated: template roots of its manifest
    ) -> None:
        self.type = type
        self.key = key
        self.props = props
        self.source = source
        self.seq = seq
        self.origin = origin
        self.context = context

    @property
    def id(self) -> str:
        return f"{self.type}#{self.key}"


def _unwrap(value: Any, whole: int) -> tuple[int, Any]:
    if isinstance(value, dict) and "__syslua_prio" in value:
        return value["__syslua_prio"], value["__syslua_v"]
    return whole, value


def _nested_priority(value: Any) -> bool:
    if isinstance(value, dict):
        return "__syslua_prio" in value or any(_nested_priority(v) for v in value.values())
    if isinstance(value, list):
        return any(_nested_priority(v) for v in value)
    return False


def _label(type_: str, key: str) -> str:
    return f"env.{key}" if type_ == "env" else f"{type_} {abbreviate(key)}"


# Properties whose value is data, not a path, name, command or environment
# value: the only ones that may hold a NUL byte (a binary file's content).
BINARY = frozenset({("file", "content")})
NUL_MESSAGE = (
    "contains a NUL byte (\\0), which no path, name, command or environment value can hold"
)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\0" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _check_value(prop: Prop, type_: str, name: str, value: Any, ctx: Context) -> Any:
    if not isinstance(value, str) and _nested_priority(value):
        raise Invalid(
            f"`{name}`: lib.mkForce/mkBefore/mkDefault/mkAfter/mkOrder must wrap a whole property value"
        )
    if (type_, name) not in BINARY and _has_nul(value):
        raise Invalid(f"`{name}` {NUL_MESSAGE}")
    try:
        return prop.check(value, ctx)
    except Invalid as e:
        raise Invalid(f"`{name}`: {e}") from None


def validate(raw: RawDeclaration, ctx: Context, origin: Origin) -> Decl | None:
    """Check one declaration; `defaults` declarations are checked and dropped (None)."""
    type_ = raw.type
    try:
        if type_ == "defaults":
            _validate_defaults(raw, ctx)
            return None
        sch = schema.SCHEMAS[type_]
        whole = raw.prio if raw.prio is not None else PLAIN
        key_raw = raw.props.get(sch.key)
        if isinstance(key_raw, dict) and "__syslua_prio" in key_raw:
            raise Invalid(f"`{sch.key}` names the {type_} and cannot have a priority")
        if key_raw is None:
            raise Invalid(f"missing required property `{sch.key}`")
        key = _check_value(sch.props[sch.key], type_, sch.key, key_raw, ctx)
        props: dict[str, tuple[int, Any]] = {}
        by_slot: dict[str, str] = {}  # slot -> the property name written
        table, aliases, key_name, is_env = sch.props, sch.aliases, sch.key, type_ == "env"
        for name, value in raw.props.items():
            if name == key_name:
                continue
            canonical = aliases.get(name, name)
            prop = schema.env_prop(key) if is_env else table.get(canonical)
            if prop is None and ctx.ccm:
                prop = schema.CCM_ONLY.get(canonical)
            if prop is None:
                raise schema.unknown_property(type_, name)
            slot = prop.slot or canonical
            if slot in by_slot:
                other = by_slot[slot]
                if aliases.get(other, other) == canonical:
                    raise Invalid(f"`{other}` and `{name}` are the same property; give one")
                first, second = sorted((aliases.get(other, other), canonical))
                raise Invalid(f"`{first}` and `{second}` are mutually exclusive")
            by_slot[slot] = name
            # The common case first: a plain string value, no priority wrapper.
            if type(value) is str:
                prio, inner = whole, value
                if "\0" in inner and (type_, canonical) not in BINARY:
                    raise Invalid(f"`{canonical}` {NUL_MESSAGE}")
                try:
                    normal = prop.check(inner, ctx)
                except Invalid as e:
                    raise Invalid(f"`{canonical}`: {e}") from None
            else:
                prio, inner = _unwrap(value, whole)
                normal = _check_value(prop, type_, canonical, inner, ctx)
            props[slot] = (prio, {canonical: normal} if prop.slot else normal)
        return Decl(type_, key, props, raw.source, raw.seq, origin, ctx)
    except Invalid as e:
        raise ConfigError(f"{type_}: {e}", raw.source, hint=e.hint) from None


def _validate_defaults(raw: RawDeclaration, ctx: Context) -> None:
    target = raw.props.get("type")
    sch = schema.SCHEMAS.get(target) if isinstance(target, str) else None
    if sch is None or not isinstance(target, str) or target in ("defaults", "env"):
        names = [t for t in schema.SCHEMAS if t not in ("defaults", "env")]
        raise Invalid(f"defaults for unknown type `{target}`{schema._suggest(str(target), names)}")
    for name, value in raw.props.get("props", {}).items():
        canonical = sch.aliases.get(name, name)
        if canonical not in sch.props:
            raise schema.unknown_property(target, name)
        if canonical == sch.key:
            raise Invalid(f"defaults cannot set `{canonical}`, the key of a {target}")
        _check_value(sch.props[canonical], target, canonical, _unwrap(value, FROM_DEFAULTS)[1], ctx)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _short(value: Any) -> str:
    text = _canon(value)
    return text if len(text) <= 72 else text[:69] + "..."


class ConflictError(ConfigError):
    """Two declarations give different values at the same winning priority."""


def _conflict(
    type_: str, key: str, name: str, prio: int, entries: list[tuple[Any, Source]]
) -> ConflictError:
    shown = schema.escaped(abbreviate(key) if type_ == "file" else key)
    subject = f"env.{shown}" if type_ == "env" else f"{type_}#{shown}.{name}"
    lines = [f"Conflicting values for {subject} at priority {prio}:"]
    for value, source in sorted(entries, key=lambda e: e[1]):
        lines.append(f"  - {_short(value)} (declared at {source})")
    return ConflictError(
        "\n".join(lines),
        hint="Use lib.mkForce() to override, or lib.mkDefault() to provide a fallback.",
    )


def _merge_property(group: list[Decl], slot: str, mergeable: bool) -> Any:
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
        shown = [
            (
                next(iter(v.values()))
                if isinstance(v, dict) and d0.type == "file" and slot == "body"
                else v,
                d.source,
            )
            for v, d in winners
        ]
        name = "/".join(sorted({k for v, _ in winners for k in v})) if slot == "body" else slot
        raise _conflict(d0.type, d0.key, name, best, shown)
    return winners[0][0]


def _mergeable(type_: str, key: str, slot: str) -> bool:
    if type_ == "env":
        return schema.env_prop(key).mergeable
    prop = schema.SCHEMAS[type_].props.get(slot) or schema.CCM_ONLY.get(slot)
    return bool(prop and prop.mergeable)


def merge_group(group: list[Decl]) -> Item:
    """Merge the declarations of one (type, key) into an Item."""
    d0 = group[0]
    type_, key = d0.type, d0.key
    props: dict[str, Any] = {}
    if len(group) == 1:
        # One declaration: nothing to compare, only its own lists to de-duplicate.
        for slot, (_, value) in d0.props.items():
            if isinstance(value, list) and _mergeable(type_, key, slot):
                value = _merge_property(group, slot, True)
            if slot == "body":
                props.update(value)
            else:
                props[slot] = value
    else:
        for slot in sorted({s for d in group for s in d.props}):
            value = _merge_property(group, slot, _mergeable(type_, key, slot))
            if slot == "body":
                props.update(value)
            else:
                props[slot] = value
    props = _finish(
        type_,
        key,
        props,
        d0.source if len(group) == 1 else min(d.source for d in group),
        mode_written=type_ == "file" and _written(group, "mode"),
    )
    return _make_item(type_, key, props, group)


def _written(group: list[Decl], slot: str) -> bool:
    """Whether a declaration wrote `slot` itself (not through defaults{})."""
    return any(slot in d.props and d.props[slot][0] < FROM_DEFAULTS for d in group)


def merge(
    decls: Iterable[Decl],
    *,
    inputs: Iterable[str] = (),
    config: str | None = None,
    warnings: Iterable[str] = (),
    messages: Iterable[tuple[str, str]] = (),
    skipped: Iterable[tuple[str, str, str]] = (),
) -> Manifest:
    groups: dict[tuple[str, str], list[Decl]] = defaultdict(list)
    for d in decls:
        groups[(d.type, d.key)].append(d)
    warnings = list(warnings)
    sources = {
        f"{t}#{k}": (g[0].source,) if len(g) == 1 else tuple(sorted({d.source for d in g}))
        for (t, k), g in groups.items()
    }
    items: list[Item] = []
    expanded: list[tuple[tree.Expansion, Item]] = []
    read: list[str] = []
    for g in groups.values():
        item = merge_group(g)
        if item.type == "file" and "source" in item.props:
            found = _expand(item, g, sources[item.id])
            if found is not None:
                read.extend(found.inputs)
                if found.members:
                    expanded.append((found, item))
                else:
                    items.extend(found.items)
                continue
        items.append(item)
    if expanded:
        _add_members(items, expanded, sources)
    _loose_subscriptions(items, groups, sources, warnings)
    items.sort(key=lambda i: i.id)
    manifest = Manifest(
        items=tuple(items),
        sources=sources,
        inputs=tuple(dict.fromkeys([*inputs, *read])),
        config=config,
        warnings=tuple(warnings),
        messages=tuple(messages),
        skipped=tuple(skipped),
    )
    ccm = {
        f"{t}#{k}"
        for (t, k), g in groups.items()
        if all(d.context is not None and d.context.ccm for d in g)
    }
    _check_references(manifest, ccm)
    _check_bins(manifest)
    _check_nesting(manifest)
    return manifest


def _loose_subscriptions(
    items: list[Item],
    groups: dict[tuple[str, str], list[Decl]],
    sources: dict[str, tuple[Source, ...]],
    warnings: list[str],
) -> None:
    """CCM accepts a `subscribe` to a resource that is not declared (it never
    triggers): in an item declared only by CCM manifests, such a reference is
    dropped with a warning. In Lua it stays an error (`_check_references`)."""
    declared = {i.id for i in items}
    for n, item in enumerate(items):
        targets = item.get("subscribe", ())
        loose = [t for t in targets if t not in declared]
        if not loose:
            continue
        group = groups.get((item.type, item.key), ())
        if not group or not all(d.context is not None and d.context.ccm for d in group):
            continue
        for ref in loose:
            warnings.append(
                f"{sources[item.id][0]}: {_label(item.type, item.key)}: `subscribe` names "
                f"{ref}, which is not declared; it will never trigger"
            )
        props = dict(item.props)
        props["subscribe"] = tuple(t for t in targets if t in declared)
        items[n] = item.replace(props=freeze(props))


def _expand(item: Item, group: list[Decl], where: tuple[Source, ...]) -> tree.Expansion | None:
    """Trees, links and templated sources (`manifest/tree.py`), in the context
    of the declaration that gave `source`."""
    given = next((d for d in group if "body" in d.props), group[0])
    ctx = given.context
    try:
        return tree.expand(item, ctx.roots if ctx is not None else None)
    except tree.TreeError as e:
        raise ConfigError(f"{_label(item.type, item.key)}: {e}", where[0]) from None


def _add_members(
    items: list[Item],
    expanded: list[tuple[tree.Expansion, Item]],
    sources: dict[str, tuple[Source, ...]],
) -> None:
    """Add the items of every tree; a path both declared and inside a tree is an error."""
    where = {i.id: f"at {sources[i.id][0]}" for i in items}
    for found, decl in expanded:
        mine = f"as part of the tree {_label(decl.type, decl.key)} at {sources[decl.id][0]}"
        for member in found.items:
            other = where.get(member.id)
            if other is not None:
                raise ConfigError(
                    f"{_label(member.type, member.key)} is declared twice: {other}, and {mine}",
                    sources[decl.id][0],
                    hint="Add it to the tree's `ignore` to declare it on its own.",
                )
            items.append(member)
            if member.id == decl.id:
                where[member.id] = f"at {sources[decl.id][0]}"
            else:
                where[member.id] = mine
                sources[member.id] = sources[decl.id]


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


def _finish(
    type_: str, key: str, props: dict[str, Any], source: Source, *, mode_written: bool = False
) -> dict[str, Any]:
    """Fill schema defaults and check rules that need the whole item.
    `mode_written`: a declaration wrote `mode` itself (not through defaults{})."""
    sch = schema.SCHEMAS[type_]
    for name, value in sch.defaults.items():
        props.setdefault(name, value)

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{_label(type_, key)}: {message}", source)

    link = type_ == "file" and (props["ensure"] == "link" or bool(props.get("link")))
    # Required properties (schema.Prop.required); an absent file needs none,
    # and a link needs no mode.
    if sch.required and not (type_ == "file" and props["ensure"] == "absent"):
        missing = [p for p in sch.required if p not in props and not (link and p == "mode")]
        if missing and type_ == "file":
            raise ConfigError(
                f"{_label(type_, key)}: missing required property `{missing[0]}`",
                source,
                hint="Files need owner, group and mode. Set them on the file, or once for "
                "the rest of the file with\n  defaults { file = { owner = sys.user.name, "
                'group = sys.user.group, mode = "0644" } }',
            )
        if missing:
            raise fail(f"missing required property `{missing[0]}`")
    if type_ == "file":
        _finish_file(props, fail, link=link, mode_written=mode_written)
    elif type_ == "exec":
        props.setdefault("command", key)
        if props["provider"] == "posix":
            _check_no_shell(props, key, source)
    elif type_ == "package":
        props.setdefault("bin", [])
    elif type_ == "env":
        if "value" not in props:
            raise fail("missing a value")
    elif type_ == "archive":
        _finish_archive(key, props, fail)
    return props


def _finish_archive(name: str, props: dict[str, Any], fail: Callable[[str], ConfigError]) -> None:
    """CCM's rules for an archive: a url of the same kind as the file, owner
    and group for one that is present, and what `cleanup` needs."""
    if "url" not in props:
        raise fail("missing required property `url`")
    name_kind = schema.archive_kind(name)
    url_kind = schema.archive_kind(props["url"].split("?", 1)[0].split("#", 1)[0])
    if name_kind != url_kind:
        raise fail(
            f"url and name must be the same kind of archive: url is {url_kind}, name is {name_kind}"
        )
    if props["ensure"] == "present":
        for prop in ("owner", "group"):
            if prop not in props:
                raise fail(f"missing required property `{prop}`")
    if props["cleanup"]:
        if "extract_parent" not in props:
            raise fail("cleanup requires extract_parent to be set")
        if "creates" not in props:
            raise fail("cleanup requires creates to be set")
    if "password" in props and "username" not in props:
        raise fail("`password` needs a `username` (HTTP basic authentication)")


def _finish_file(
    props: dict[str, Any], fail: Callable[[str], ConfigError], *, link: bool, mode_written: bool
) -> None:
    """The rules of a file item: what goes with which `ensure`, links, templates, modes."""
    ensure = props["ensure"]
    for flag in ("link", "template"):
        if flag in props and not props[flag]:
            del props[flag]  # false is the same as not written: one canonical item
    if "content" in props and ensure != "present":
        raise fail(
            f'`content` only applies to ensure = "present" (this file has ensure = "{ensure}")'
        )
    if "source" in props and ensure not in ("present", "directory"):
        raise fail(
            f'`source` only applies to ensure = "present" or "directory" (this file has ensure = "{ensure}")'
        )
    if props.get("link") and props.get("template"):
        raise fail("`template` and `link` are mutually exclusive")
    if props.get("link") and "source" not in props:
        raise fail(
            '`link = true` makes a symlink to `source`; for any other target use ensure = "link" with `target`'
        )
    if props.get("template") and "source" not in props:
        raise fail("`template = true` renders `source`; inline `content` is always rendered")
    if ensure == "link":
        if "target" not in props:
            raise fail('ensure = "link" needs a `target`')
        if props.get("link"):
            raise fail('`link = true` goes with `source`; ensure = "link" takes a `target`')
    elif "target" in props:
        raise fail('`target` only applies to ensure = "link"')
    if "ignore" in props and "source" not in props:
        raise fail("`ignore` applies to a directory `source`")
    if link:
        if mode_written:
            raise fail(
                "a link takes no `mode` (the mode of what it points to applies)"
                + (
                    "; `dir_mode` sets the mode of a tree's directories"
                    if "source" in props
                    else ""
                )
            )
        if ensure == "link":
            props.pop("mode", None)  # from defaults{}: it does not apply to a link
    if ensure == "directory" and "mode" in props and "source" not in props:
        props["mode"] = _traversable(props["mode"])
    if "dir_mode" in props:
        props["dir_mode"] = _traversable(props["dir_mode"])


# The exec properties that hold a command, in the order they are checked.
COMMANDS = ("command", "onlyif", "unless", "undo")


def _check_no_shell(props: dict[str, Any], key: str, source: Source) -> None:
    """With the posix provider no shell reads the commands: shell syntax in
    one would reach the program as arguments, so it is an error here."""
    for name in COMMANDS:
        command = props.get(name)
        token = shell_syntax.find(command) if isinstance(command, str) else None
        if token is not None:
            raise ConfigError(
                f"{_label('exec', key)}: {name} uses shell syntax "
                f"('{schema.escaped(token)}'); set provider = \"shell\"",
                source,
                hint="The posix provider runs the program directly, without a shell, "
                f"so '{schema.escaped(token)}' would reach it as an argument. "
                'provider = "shell" runs the commands with /bin/sh -c; or quote the '
                "characters to pass them as they are.",
            )


def _traversable(mode: str) -> str:
    """A directory mode without any x bit gets x wherever it has r (0644 -> 0755)."""
    return mode if int(mode, 8) & 0o111 else tree.traversable(mode)


def _check_references(manifest: Manifest, ccm: set[str]) -> None:
    """Every `depends_on`/`subscribe` names a declared item other than itself.
    Items only CCM manifests declare are told in CCM's word, `require`."""
    for item in manifest:
        for prop in ("depends_on", "subscribe"):
            word = "require" if prop == "depends_on" and item.id in ccm else prop
            for ref in item.get(prop, ()):
                if ref not in manifest:
                    raise ConfigError(
                        f"{_label(item.type, item.key)}: `{word}` names {ref}, which is not declared",
                        manifest.sources[item.id][0],
                    )
                if ref == item.id:
                    raise ConfigError(
                        f"{_label(item.type, item.key)}: `{word}` names the item itself",
                        manifest.sources[item.id][0],
                    )


def _check_bins(manifest: Manifest) -> None:
    """Two packages may not put the same name into the profile's bin."""
    owners: dict[str, Item] = {}
    for pkg in manifest.of_type("package"):
        for b in pkg.get("bin", ()):
            name = b.rsplit("/", 1)[-1]
            other = owners.get(name)
            if other is not None:
                raise ConfigError(
                    f"bin `{name}` is provided by two packages: package {other.key} "
                    f"(declared at {manifest.source_of(other.id)}) and package {pkg.key} "
                    f"(declared at {manifest.source_of(pkg.id)})",
                    hint="Remove `" + name + "` from the bin list of one of them.",
                )
            owners[name] = pkg


def _check_nesting(manifest: Manifest) -> None:
    """A file cannot live inside a path that is declared absent or as a regular file."""
    files = {i.key: i for i in manifest.of_type("file")}
    for item in files.values():
        if item.get("ensure") == "absent":
            continue
        parent = item.key.rpartition("/")[0]
        while parent:
            owner = files.get(parent)
            if owner is not None:
                ensure = owner.get("ensure")
                if ensure != "directory":
                    what = "declared absent" if ensure == "absent" else "declared as a regular file"
                    raise ConfigError(
                        f"{_label(item.type, item.key)}: it is inside {_label(owner.type, owner.key)}, which is {what} "
                        f"(at {manifest.source_of(owner.id)})",
                        manifest.sources[item.id][0],
                    )
                break
            parent = parent.rpartition("/")[0]
