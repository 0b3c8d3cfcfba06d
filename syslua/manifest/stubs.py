"""Generate the lua-language-server stubs for declarations from the schema.

`lua/types/` holds two files, which `sys init` copies beside a config
(`.syslua/types/`, named by the `.luarc.json` it writes there):
`syslua.lua`, written by hand (`sys` with `sys.build` and `sys.bind`, the
fetch helpers, the types they use), and `generated.lua`, written by this
module from the registry of kinds (`syslua/registry.py`), their schemas and
`eval/constants.py`: one class per declaration
with each property's Lua type and text, the declaration functions,
`defaults {}`, `env {}` and the `lib.mk*` priorities. A property that
`defaults {}` may supply (every one but the key) is optional (`---@field
mode? ...`), even when the merged item requires it.

    python -m syslua.manifest.stubs           # rewrite lua/types/generated.lua
    python -m syslua.manifest.stubs --check   # exit 1 if it is out of date

`tests/test_stubs.py` fails when the committed file differs from `render()`,
and when a name a config can use (a key of `sys`, `sys.user` or `lib`, a
declaration) is described in neither file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from syslua import registry
from syslua.eval import constants
from syslua.manifest import schema
from syslua.manifest.schema import Prop, TypeSchema
from syslua.paths import shipped_dirs

COMMAND = "python -m syslua.manifest.stubs"
# Lua's own libraries that a declaration shares its name with (`package`):
# the declaration is the library's __call, typed on the library's class.
LIBRARIES = {"package": "packagelib"}


def declarations() -> list[str]:
    """The declarations a config writes as a table of properties, in stub order."""
    return [k for k, form in registry.lua_declarations().items() if form == registry.GLOBAL]


def variables() -> list[str]:
    """The declarations a config writes as a table of variables (`env {}`)."""
    return [k for k, form in registry.lua_declarations().items() if form == registry.VARIABLES]


_PRIORITY_LABELS = {
    "force": "mkForce",
    "before": "mkBefore",
    "plain": "plain",
    "default": "mkDefault",
    "from_defaults": "defaults{}",
    "after": "mkAfter",
}
_PRIORITY_DOCS = (
    ("mkForce", constants.FORCE, "override whatever else is declared"),
    ("mkBefore", constants.BEFORE, "put list entries first"),
    ("mkDefault", constants.DEFAULT, f"a fallback: a plain value ({constants.PLAIN}) beats it"),
    ("mkAfter", constants.AFTER, "put list entries last"),
)


def path() -> Path:
    """Where the generated stubs live: lua/types/generated.lua."""
    lua_dir, _ = shipped_dirs()
    return Path(lua_dir) / "types" / "generated.lua"


def class_name(type_: str, props_only: bool = False) -> str:
    camel = "".join(part.capitalize() for part in type_.split("_"))  # os_package: OsPackage
    return "Syslua" + camel + ("Props" if props_only else "")


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _lua_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "{ " + ", ".join(_lua_value(x) for x in v) + " }" if v else "{}"
    if isinstance(v, dict):
        if v:
            raise ValueError(f"no Lua literal for the default {v!r}")
        return "{}"
    return str(v)


def _field(name: str, lua_type: str, doc: str, optional: bool = True) -> str:
    line = f"---@field {name}{'?' if optional else ''} {lua_type}"
    return f"{line} {doc}" if doc else line


def _prop_field(sch: TypeSchema, prop: Prop) -> str:
    notes = [prop.doc] if prop.doc else []
    if prop.required:
        notes.append("required, may come from defaults{}")
    if prop.name in sch.defaults:
        notes.append(f"default {_lua_value(sch.defaults[prop.name])}")
    if prop.mergeable:
        notes.append("merged across declarations")
    return _field(prop.name, schema.lua_type(prop), "; ".join(notes))


def _aliases(sch: TypeSchema, of: set[str]) -> list[str]:
    return [
        _field(alias, schema.lua_type(sch.props[target]), f"same as {target}")
        for alias, target in sch.aliases.items()
        if target in of
    ]


def _common() -> list[str]:
    some = schema.of(declarations()[0])  # any kind with the common properties
    lines = ["---Properties every declaration accepts.", "---@class SysluaCommon"]
    lines += [_prop_field(some, p) for p in schema.COMMON.values()]
    lines += _aliases(some, set(schema.COMMON))
    return lines


def _declaration(type_: str) -> list[str]:
    sch = schema.of(type_)
    own = [p for p in sch.props.values() if p.name not in schema.COMMON and p.name != sch.key]
    key = sch.props[sch.key]
    lines = [
        f"---Properties of {_a(type_)} but its key: what `defaults {{ {type_} = {{...}} }}` may set.",
        f"---@class {class_name(type_, True)}: SysluaCommon",
    ]
    lines += [_prop_field(sch, p) for p in own]
    lines += _aliases(sch, {p.name for p in own})
    lines += [
        "",
        f"---{sch.doc}",
        f"---@class {class_name(type_)}: {class_name(type_, True)}",
        _field(
            key.name,
            schema.lua_type(key),
            f"{key.doc}; the key: declarations with the same {key.name} are one item",
            optional=False,
        ),
        "",
    ]
    if type_ in LIBRARIES:
        lines += [
            f"-- `{type_}` is also Lua's module library: the declaration is its __call.",
            f"---@class {LIBRARIES[type_]}",
            f"---@overload fun(spec: {class_name(type_)}): SysluaRef",
        ]
    else:
        lines += [
            f"---{sch.doc}",
            f"---@param spec {class_name(type_)}",
            "---@return SysluaRef",
            f"function {type_}(spec) end",
        ]
    return lines


def _variables(type_: str) -> list[str]:
    sch = schema.of(type_)
    types: list[str] = []
    for prop in (sch.props["value"], *sch.variants()):
        for t in schema.lua_type(prop).split("|"):
            if t not in types:
                types.append(t)
    return [
        "---Environment variables for the generated shell scripts; path-like ones (PATH, MANPATH, ...)",
        "---take a list or a colon-separated string and are merged across declarations.",
        f"---@param vars table<string,{'|'.join(types)}>",
        "---@return SysluaRef",
        f"function {type_}(vars) end",
    ]


def _defaults() -> list[str]:
    lines = [
        "---Property defaults for the declarations that follow in the same file, at priority",
        f"---{constants.FROM_DEFAULTS} (weaker than lib.mkDefault, {constants.DEFAULT}).",
        "---@class SysluaDefaults",
    ]
    lines += [_field(t, class_name(t, True), "") for t in declarations()]
    lines += ["", "---@param spec SysluaDefaults", "function defaults(spec) end"]
    return lines


def _priorities() -> list[str]:
    lines = [
        f"-- Priorities: lower wins; a plain value is {constants.PLAIN}. Each lib.mk* wraps a property value",
        "-- or a whole declaration.",
        "",
    ]
    for name, prio, what in _PRIORITY_DOCS:
        lines += [
            f"---Priority {prio}: {what}.",
            "---@generic T",
            "---@param v T",
            "---@return T",
            f"function lib.{name}(v) end",
        ]
    ranks = sorted(constants.PRIORITIES.items(), key=lambda kv: kv[1])
    order = ", ".join(f"{_PRIORITY_LABELS.get(k, k)} {v}" for k, v in ranks)
    lines += [
        f"---An explicit priority n ({order}).",
        "---@generic T",
        "---@param n integer",
        "---@param v T",
        "---@return T",
        "function lib.mkOrder(n, v) end",
    ]
    return lines


def render() -> str:
    """The content of lua/types/generated.lua."""
    sections = [
        [
            "---@meta",
            f"-- Generated from the schemas of the kinds by `{COMMAND}`: do not edit.",
            "-- The hand-written stubs (sys, lib.fetch*, SysluaRef, ...) are in syslua.lua.",
        ],
        _common(),
        *(_declaration(t) for t in declarations()),
        *(_variables(t) for t in variables()),
        _defaults(),
        _priorities(),
    ]
    return "\n\n".join("\n".join(s) for s in sections) + "\n"


def main(argv: list[str]) -> int:
    target = path()
    text = render()
    if argv == ["--check"]:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print(f"{target} is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(f"usage: {COMMAND} [--check]", file=sys.stderr)
        return 2
    from syslua.fsutil import atomic_write

    atomic_write(target, text.encode("utf-8"), durable=False)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
