"""What a declaration of each kind accepts, and the rules of a whole item.

A kind's schema (`TypeSchema`) lives in the kind's own module, beside its
behaviour (`syslua.resources.<kind>`), and is reached through the registry
(`of`). It lists the properties (`Prop`: the value check from
`manifest/checks.py`, whether values merge across declarations, the text
and Lua type the editor stubs show), aliases, defaults, required ones, and
the kind's rules as methods a schema may override:

| method         | when                                   | default |
|----------------|----------------------------------------|---------|
| `prop_for`     | each property of a declaration         | the table |
| `imply`        | the merged item, after defaults        | nothing |
| `required_for` | the merged item                        | the required properties |
| `finish`       | the merged item, after defaults        | nothing |
| `expand`       | the merged item: one item or many (a tree) | one |
| `layers`, `join` | declarations of one key that stay apart (trees into one directory), and their expansions | one item |
| `check_all`    | the whole manifest                     | nothing |
| `label`, `subject` | messages about an item             | `file ~/x`, `file#/x.mode` |

Each declaration is checked on its own first (`manifest/validate.py`), so an
error points at the line that made it; the rules that need the merged item
run after merging.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from syslua import registry
from syslua.errors import ConfigError, Source
from syslua.manifest.checks import (
    LUA_TYPES,
    Check,
    Context,
    Invalid,
    _is_empty_table,
    _kind,
    _show,
    boolean,
    escaped,
    health_checks,
    suggest,
)
from syslua.paths import abbreviate

if TYPE_CHECKING:
    from syslua.manifest.model import Item, Manifest
    from syslua.manifest.tree import Expansion
    from syslua.manifest.validate import Decl

__all__ = ["Context", "Invalid", "Prop", "TypeSchema", "of"]


# Plain classes, not dataclasses: they are made at every start, where a
# dataclass costs half a millisecond each to generate its methods, and
# nothing compares, hashes or prints them. Treat them as read-only.


class Prop:
    """One property of a kind: how its values are checked, and how they merge."""

    __slots__ = ("name", "check", "mergeable", "slot", "required", "doc", "secret")

    def __init__(
        self,
        name: str,
        check: Check,
        mergeable: bool = False,
        slot: str | None = None,  # properties sharing a slot are alternatives (content/source)
        required: bool = False,  # the merged item must have it (a declaration or defaults{} may give it)
        doc: str = "",  # one line for the editor stubs
        # Its value is a secret (`syslua/secrets.py`): "always" (a password),
        # or "sensitive" when the declaration says `sensitive = true`.
        secret: str = "",
    ) -> None:
        self.name = name
        self.check = check
        self.mergeable = mergeable
        self.slot = slot
        self.required = required
        self.doc = doc
        self.secret = secret


class Finishing:
    """What a kind's whole-item rules (`TypeSchema.imply`, `finish`) get
    besides the properties: how to fail at the declaration, which properties
    a declaration wrote itself rather than through `defaults {}`, and
    whether a CCM manifest declared the item (it keeps CCM's rules)."""

    __slots__ = ("_schema", "_key", "source", "_written", "ccm")

    def __init__(
        self,
        schema: TypeSchema,
        key: str,
        source: Source,
        written: Callable[[str], bool],
        ccm: bool = False,
    ) -> None:
        self._schema = schema
        self._key = key
        self.source = source
        self._written = written
        self.ccm = ccm

    @property
    def label(self) -> str:
        """How messages name the item; made only when one is said (most items
        break no rule, and a file's label costs a home lookup)."""
        return self._schema.label(self._key)

    def fail(self, message: str, hint: str | None = None) -> ConfigError:
        return ConfigError(f"{self.label}: {message}", self.source, hint=hint)

    def written(self, slot: str) -> bool:
        return self._written(slot)


class TypeSchema:
    """What a declaration of a kind accepts: its key property, properties,
    aliases, defaults; and, in methods a kind's schema may override, the
    rules of its items (see the module's docstring)."""

    __slots__ = (
        "name",
        "key",
        "props",
        "aliases",
        "defaults",
        "required",
        "doc",
        "hints",
        "binary",
        "slots",
        "required_hint",
    )

    def __init__(
        self,
        name: str,
        key: str,
        props: Mapping[str, Prop],
        aliases: Mapping[str, str] | None = None,
        defaults: Mapping[str, Any] | None = None,
        required: tuple[str, ...] = (),  # names of the required properties, in schema order
        doc: str = "",  # what a declaration of this kind is, for the editor stubs
        # Hints for properties that belong to another kind (`ensure` on a store
        # package: an OS package is os_package), shown with the unknown-property error.
        hints: Mapping[str, str] | None = None,
        # Properties whose value is data, not a path, name, command or
        # environment value: the only ones that may hold a NUL byte.
        binary: frozenset[str] = frozenset(),
        required_hint: str | None = None,  # said with a missing required property
    ) -> None:
        self.name = name
        self.key = key
        self.props = props
        self.aliases: Mapping[str, str] = {} if aliases is None else aliases
        self.defaults: Mapping[str, Any] = {} if defaults is None else defaults
        self.required = required
        self.doc = doc
        self.hints: Mapping[str, str] = {} if hints is None else hints
        self.binary = binary
        # Slots of alternatives (`body`: content or source): merged as one.
        self.slots = frozenset(p.slot for p in props.values() if p.slot)
        self.required_hint = required_hint

    def complete(
        self,
        key: str,
        props: dict[str, Any],
        source: Source,
        written: Callable[[str], bool],
        ccm: bool = False,
    ) -> dict[str, Any]:
        """The merged item's properties with the defaults filled in, checked by
        the kind's rules. `written(slot)`: whether a declaration wrote it
        itself; `ccm`: whether a CCM manifest declared it."""
        for name, value in self.defaults.items():
            props.setdefault(name, value)
        finishing = Finishing(self, key, source, written, ccm)
        later = self.imply(key, props, finishing)
        missing = [p for p in self.required_for(props) if p not in props and p not in later]
        if missing:
            raise ConfigError(
                f"{self.label(key)}: missing required property `{missing[0]}`",
                source,
                hint=self.required_hint,
            )
        self.finish(key, props, finishing)
        return props

    # -- rules a kind's schema may override ----------------------------------
    def prop_for(self, key: str, name: str) -> Prop | None:
        """The property `name` (canonical) of the item `key`; None when unknown."""
        return self.props.get(name)

    def variants(self) -> tuple[Prop, ...]:
        """Properties `prop_for` may give besides those in `props` (for the stubs)."""
        return ()

    def imply(self, key: str, props: dict[str, Any], finishing: Finishing) -> tuple[str, ...]:
        """Fill in what the merged item's other properties imply where no
        declaration (nor `defaults {}`) gave it, before the required ones are
        checked; returns the required properties left out on purpose, which
        `expand` gives its items (a tree's files take their sources' modes)."""
        return ()

    def required_for(self, props: Mapping[str, Any]) -> tuple[str, ...]:
        """The properties the merged item `props` must have."""
        return self.required

    def finish(self, key: str, props: dict[str, Any], finishing: Finishing) -> None:
        """Check (and complete) the merged item's properties, after defaults."""

    def expand(
        self, item: Item, roots: Mapping[str, Any] | None, ccm: bool = False
    ) -> Expansion | None:
        """The items one declaration stands for, when more than itself (a
        tree's members); `roots`: the template roots of its manifest; `ccm`:
        only CCM manifests declared it."""
        return None

    # The slots a layer keeps for itself (see `layers`); the others are
    # merged across all declarations of the key.
    layered: frozenset[str] = frozenset()

    def layers(self, group: list[Decl]) -> list[list[Decl]] | None:
        """The declarations of one key split into layers, each merged into an
        item of its own and expanded, then joined (`join`); None: one item.
        A declaration may belong to several layers."""
        return None

    def join(self, key: str, parts: list[tuple[Expansion, list[Decl]]]) -> Expansion:
        """One expansion of the expansions of a key's layers, each with the
        declarations its layer merged (only called when `layers` split them)."""
        raise NotImplementedError(f"{self.name} items have no layers")

    def check_all(self, manifest: Manifest) -> None:
        """Rules between the items of the kind in a whole manifest."""

    def label(self, key: str) -> str:
        """How messages about the configuration name the item (`file ~/.vimrc`)."""
        return f"{self.name} {abbreviate(key)}"

    def subject(self, key: str, prop: str) -> str:
        """How a conflict names one of the item's properties (`exec#build.command`)."""
        return f"{self.name}#{escaped(key)}.{prop}"


def from_ccm(group: list[Decl]) -> bool:
    """Whether only CCM manifests declared the item that `group` merges into:
    it keeps CCM's rules (`Finishing.ccm`, `TypeSchema.expand`)."""
    return all(d.context is not None and d.context.ccm for d in group)


def of(name: str) -> TypeSchema:
    """The schema of the kind `name` (KeyError when no kind has that name)."""
    schema: TypeSchema = registry.load(name).schema
    return schema


def referable() -> tuple[str, ...]:
    """The kinds a `"type#key"` reference may name: every one."""
    return tuple(e.name for e in registry.entries())


# ---------------------------------------------------------------------------
# references, and the properties every kind has
# ---------------------------------------------------------------------------


def reference(v: Any, ctx: Context) -> list[str]:
    """A reference returned by a declaration, or a `"type#key"` string."""
    if isinstance(v, dict) and "__syslua_refs" in v:
        raw = v["__syslua_refs"]
    elif isinstance(v, str):
        raw = [v]
    else:
        raise Invalid(
            f'expected a reference (the value a declaration returns) or "type#key", got {_kind(v)}'
        )
    return [normalise_ref(r, ctx) for r in raw]


def references(v: Any, ctx: Context) -> list[str]:
    if _is_empty_table(v) or v is None:
        return []
    items = v if isinstance(v, list) else [v]
    out: list[str] = []
    for x in items:
        for ref in reference(x, ctx):
            if ref not in out:
                out.append(ref)
    return out


def normalise_ref(ref: str, ctx: Context) -> str:
    type_, sep, key = ref.partition("#")
    if not sep or not key:
        raise Invalid(f'reference {_show(ref)} must look like "type#key", e.g. "file#~/.zshrc"')
    if not registry.has(type_):
        raise Invalid(
            f"reference {_show(ref)} names an unknown type `{type_}`{suggest(type_, referable())}"
        )
    schema = of(type_)
    try:
        normal = schema.props[schema.key].check(key, ctx)
    except Invalid as e:
        raise Invalid(f"reference {_show(ref)}: {e}") from None
    return f"{type_}#{normal}"


LUA_TYPES[references] = "SysluaRef|string|(SysluaRef|string)[]"

COMMON = {
    "depends_on": Prop(
        "depends_on", references, mergeable=True, doc="items that must be applied before this one"
    ),
    "subscribe": Prop(
        "subscribe",
        references,
        mergeable=True,
        doc="items whose change triggers this one (an exec runs, others are refreshed)",
    ),
    "health_checks": Prop(
        "health_checks",
        health_checks,
        mergeable=True,
        doc="commands checked after applying, with Nagios exit codes",
    ),
    "sensitive": Prop(
        "sensitive",
        boolean,
        doc="its content (or environment, password) is a secret: never shown or stored in the clear",
    ),
}


# Properties that only the CCM manifest reader sets (never a Lua config), on
# every kind: a manifest's resources run in the order written, and with
# `fail_on_error: false` (CCM's default) a failure does not stop the rest.
CCM_ONLY = {
    "after": Prop(
        "after",
        references,
        mergeable=True,
        doc="items that finish first; their failure does not skip this one (manifest order)",
    ),
    "fail_on_error": Prop(
        "fail_on_error",
        boolean,
        doc="false: starts even after another item failed (the apply still rolls back)",
    ),
}


def schema(
    name: str,
    key: str,
    props: list[Prop],
    *,
    aliases: dict[str, str] | None = None,
    defaults: dict[str, Any] | None = None,
    common: bool = True,
    doc: str = "",
    hints: dict[str, str] | None = None,
    binary: frozenset[str] = frozenset(),
    required_hint: str | None = None,
    cls: type[TypeSchema] = TypeSchema,
) -> TypeSchema:
    """The schema of the kind `name`, whose items are named by `key`; with
    `common`, it also takes the properties every kind has (`COMMON`) and
    CCM's `require` for `depends_on`. `cls`: a subclass with the kind's rules."""
    table = {p.name: p for p in props}
    aliases = dict(aliases or {})
    if common:
        for p in COMMON.values():
            table.setdefault(p.name, p)
        aliases.setdefault("require", "depends_on")  # CCM's name for it
    required = tuple(p.name for p in table.values() if p.required)
    return cls(
        name,
        key,
        table,
        aliases,
        defaults or {},
        required,
        doc,
        hints or {},
        binary,
        required_hint,
    )


def lua_type(prop: Prop) -> str:
    """The lua-language-server type of the values `prop` accepts."""
    try:
        return LUA_TYPES[prop.check]
    except KeyError:
        raise KeyError(
            f"no Lua type for the check of property `{prop.name}`: add it to checks.LUA_TYPES"
        ) from None


def unknown_property(type_: str, name: str) -> Invalid:
    schema = of(type_)
    valid = set(schema.props) | set(schema.aliases)
    hint = schema.hints.get(name)
    return Invalid(
        f"unknown property `{name}` for {type_}{'' if hint else suggest(name, valid)}", hint
    )
