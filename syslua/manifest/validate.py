"""Check each declaration on its own, where it was made (SPEC section 3).

A raw declaration from Lua or a CCM manifest is checked against its kind's
schema (`manifest/schema.py`), so that an error points at its line: the key,
unknown properties (with the closest valid name), alternatives given
together, each value (`manifest/checks.py`), NUL bytes where no value can
hold one. Priorities are unwrapped: an explicit `lib.mk*` wrapper wins,
then a whole-declaration priority, then plain (`PLAIN`; all priorities are
in `eval/constants.py`). `defaults {}` declarations are checked and dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from syslua import registry, secrets
from syslua.errors import ConfigError, Source
from syslua.eval.constants import FROM_DEFAULTS, PLAIN
from syslua.eval.lua import RawDeclaration
from syslua.manifest import schema
from syslua.manifest.checks import suggest
from syslua.manifest.schema import Context, Invalid, Prop, TypeSchema

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


def _check_value(prop: Prop, sch: TypeSchema, name: str, value: Any, ctx: Context) -> Any:
    if not isinstance(value, str) and _nested_priority(value):
        raise Invalid(
            f"`{name}`: lib.mkForce/mkBefore/mkDefault/mkAfter/mkOrder must wrap a whole property value"
        )
    if name not in sch.binary and _has_nul(value):
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
        sch = schema.of(type_)
        key = _key(raw, sch, ctx)
        props: dict[str, tuple[int, Any]] = {}
        by_slot: dict[str, str] = {}  # slot -> the property name written
        whole = raw.prio if raw.prio is not None else PLAIN
        key_name, aliases, prop_for, binary = sch.key, sch.aliases, sch.prop_for, sch.binary
        for name, value in raw.props.items():
            if name == key_name:
                continue
            canonical = aliases.get(name, name)
            prop = prop_for(key, canonical)
            if prop is None and ctx.ccm:
                prop = schema.CCM_ONLY.get(canonical)
            if prop is None:
                raise schema.unknown_property(type_, name)
            slot = prop.slot or canonical
            if slot in by_slot:
                _two_for_one_slot(by_slot[slot], name, canonical, aliases)
            by_slot[slot] = name
            # The common case first, inline: a plain string, no priority wrapper.
            if type(value) is str:
                if "\0" in value and canonical not in binary:
                    raise Invalid(f"`{canonical}` {NUL_MESSAGE}")
                try:
                    prio, normal = whole, prop.check(value, ctx)
                except Invalid as e:
                    raise Invalid(f"`{canonical}`: {e}") from None
            else:
                prio, inner = _unwrap(value, whole)
                normal = _check_value(prop, sch, canonical, inner, ctx)
            if prop.secret and (prop.secret == "always" or raw.props.get("sensitive") is True):
                normal = _sealed(normal)
            props[slot] = (prio, {canonical: normal} if prop.slot else normal)
        return Decl(type_, key, props, raw.source, raw.seq, origin, ctx)
    except Invalid as e:
        raise ConfigError(f"{type_}: {e}", raw.source, hint=e.hint) from None


def _sealed(value: Any) -> Any:
    """A secret property's value with each string replaced by its placeholder
    (`secrets.register`): from here on, only the placeholder is known."""
    if isinstance(value, str):
        return value if secrets.contains(value) else secrets.register(value)
    if isinstance(value, Mapping):
        return {k: _sealed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_sealed(v) for v in value]
    return value


def _key(raw: RawDeclaration, sch: TypeSchema, ctx: Context) -> str:
    """The declaration's key, checked; it cannot have a priority of its own."""
    key_raw = raw.props.get(sch.key)
    if isinstance(key_raw, dict) and "__syslua_prio" in key_raw:
        raise Invalid(f"`{sch.key}` names the {sch.name} and cannot have a priority")
    if key_raw is None:
        raise Invalid(f"missing required property `{sch.key}`")
    key: str = _check_value(sch.props[sch.key], sch, sch.key, key_raw, ctx)
    return key


def _two_for_one_slot(other: str, name: str, canonical: str, aliases: Any) -> NoReturn:
    """One property per slot: an alias and its property, or two alternatives
    (`content` and `source`), are not given together; `other` was given first."""
    if aliases.get(other, other) == canonical:
        raise Invalid(f"`{other}` and `{name}` are the same property; give one")
    first, second = sorted((aliases.get(other, other), canonical))
    raise Invalid(f"`{first}` and `{second}` are mutually exclusive")


def defaults_targets() -> list[str]:
    """The kinds `defaults { kind = {...} }` may set properties of: every one
    declared as a table of properties (not `env`'s variables)."""
    return [e.name for e in registry.entries() if e.lua != registry.VARIABLES]


def _validate_defaults(raw: RawDeclaration, ctx: Context) -> None:
    target = raw.props.get("type")
    names = defaults_targets()
    if not isinstance(target, str) or target not in names:
        raise Invalid(f"defaults for unknown type `{target}`{suggest(str(target), names)}")
    sch = schema.of(target)
    for name, value in raw.props.get("props", {}).items():
        canonical = sch.aliases.get(name, name)
        if canonical not in sch.props:
            raise schema.unknown_property(target, name)
        if canonical == sch.key:
            raise Invalid(f"defaults cannot set `{canonical}`, the key of a {target}")
        _check_value(sch.props[canonical], sch, canonical, _unwrap(value, FROM_DEFAULTS)[1], ctx)
