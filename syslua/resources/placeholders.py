"""Resolve placeholders at execution time.

| placeholder                 | value                                            |
|-----------------------------|--------------------------------------------------|
| `$${build:<hash>:<output>}` | the build's output, its store path filled in     |
| `$${bind:<hash>:<output>}`  | the output the bind recorded when it was created |
| `$${out}`                   | the output directory of the build being run      |
| `$${self:<output>}`         | a bind's own recorded output (update/destroy/check) |
| `$${action:<n>:stdout}`     | trimmed stdout of action n of the same phase     |
| `$${action:<n>:path}`       | the file fetched by action n                     |
| `$${env:NAME}`              | the environment variable NAME                    |
| `$${secret:<keyed hash>}`   | a secret's value: this run's, or the one sealed by the apply that used it (`syslua/secrets.py`) |
| `$${template:<payload>}`    | a CCM template that reads files, rendered now (`eval/template.py`, `defer`) |

`$$${` is a literal `$${`. Bind outputs are read from their state files, so
a restore during rollback resolves outputs of binds that were not touched.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from syslua import secrets
from syslua.manifest.model import Item, Manifest, freeze, thaw
from syslua.resources.base import ResourceError

_TOKEN = r"\$\$\$\{|\$\$\{([^}]*)\}"  # compiled by `re` on first use, not at import


class Unresolved(ResourceError):
    pass


class Deferred(Unresolved):
    """A CCM template that reads files could not be rendered (yet): the
    plan says it is rendered when it runs; a run fails with the reason."""


RENDERED = "rendered when it runs"


class Resolver:
    def __init__(self, manifest: Manifest | None, store: Any, state_dir: Path) -> None:
        self.store = store
        self.binds_dir = state_dir / "binds"
        self.builds_dir = state_dir / "builds"
        self.builds: dict[str, Item] = {}
        # A manifest known to hold no placeholder skips resolution entirely.
        self.active = manifest is None or manifest.placeholders is not False
        if manifest is not None:
            self.add_manifest(manifest)

    def add_manifest(self, manifest: Manifest) -> None:
        for item in manifest.of_type("build"):
            self.builds[item.get("hash")] = item

    # -- lookups ---------------------------------------------------------------
    def build_output(self, digest: str, name: str) -> str:
        item = self.builds.get(digest)
        if item is None:
            raise Unresolved(f"no build {digest[:12]} in this configuration")
        from syslua.manifest.primitives import tree_name

        tree = self.store.tree_path(tree_name(item))
        if not tree.is_dir():
            raise Unresolved(f"build {item.key} has not been built yet")
        outputs = thaw(item.get("outputs") or {})
        if name not in outputs:
            raise Unresolved(f"build {item.key} has no output `{name}`")
        value = str(outputs[name])
        if "$${action:" in value:  # an action's result, recorded when it was built
            try:
                value = json.loads((self.builds_dir / f"{digest}.json").read_text())[name]
            except (OSError, ValueError, KeyError):
                raise Unresolved(
                    f"build {item.key}: output `{name}` holds an action's result, "
                    "which was not recorded when it was built"
                ) from None
        return self.resolve(value, {"out": str(tree)})

    def bind_outputs(self, digest: str) -> dict[str, Any]:
        try:
            return json.loads((self.binds_dir / f"{digest}.json").read_text())["outputs"]
        except (OSError, ValueError, KeyError):
            raise Unresolved(
                f"bind {digest[:12]} has no recorded outputs (it has not been created)"
            ) from None

    # -- resolution ------------------------------------------------------------
    def resolve(self, text: str, local: Mapping[str, str] | None = None) -> str:
        if "$${" not in text:
            return text
        local = local or {}

        def repl(m: re.Match[str]) -> str:
            if m.group(0) == "$$${":
                return "$${"
            body = m.group(1)
            if body in local:
                return local[body]
            kind, _, rest = body.partition(":")
            if kind == "build":
                digest, _, name = rest.partition(":")
                return self.build_output(digest, name)
            if kind == "bind":
                digest, _, name = rest.partition(":")
                outputs = self.bind_outputs(digest)
                if name not in outputs:
                    raise Unresolved(f"bind {digest[:12]} has no output `{name}`")
                return str(outputs[name])
            if kind == "env":
                return os.environ.get(rest, "")
            if kind == "template":
                return _render(rest)
            if kind == "secret":
                value = secrets.value_of(rest)
                if value is None:
                    raise Unresolved(
                        "a secret value it uses is not known here (neither read by this "
                        "evaluation nor sealed by an earlier apply)"
                    )
                return value
            if body in ("out",) or kind in ("self", "action"):
                raise Unresolved(f"$${{{body}}} can only be used inside sys.build/sys.bind actions")
            raise Unresolved(f"unknown placeholder $${{{body}}}")

        return re.sub(_TOKEN, repl, text)

    def resolve_deep(self, value: Any, local: Mapping[str, str] | None = None) -> Any:
        if isinstance(value, str):
            return self.resolve(value, local)
        if isinstance(value, Mapping):
            return {k: self.resolve_deep(v, local) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.resolve_deep(v, local) for v in value]
        return value

    def resolve_item(self, item: Item) -> Item:
        """The item with every placeholder in its properties resolved (builds and binds keep theirs)."""
        if not self.active or item.type in ("build", "bind") or not _has_placeholder(item.props):
            return item
        props = thaw(item.props)
        if secrets.contains(props):
            props["sensitive"] = True  # what its kind reads and shows is secret
        return Item(
            item.type,
            item.key,
            freeze(self.resolve_deep(props)),
            item.parent,
            item.noop,
            item.health_check_only,
        )


def _render(payload: str) -> str:
    from syslua.errors import ConfigError
    from syslua.eval import template

    try:
        return template.render_deferred(payload)
    except template.TemplateError as e:
        raise Deferred(str(e)) from None
    except ConfigError as e:  # the `.env` it reads
        raise Deferred(e.render()) from None


def deferred(item: Item) -> bool:
    """Whether the item holds a CCM template rendered when it runs."""
    return _has_placeholder(item.props, "$${template:")


def has_placeholder(value: Any) -> bool:
    """Whether `value` (a string, or properties) holds a placeholder anywhere."""
    return _has_placeholder(value)


def _has_placeholder(value: Any, token: str = "$${") -> bool:
    if isinstance(value, str):
        return token in value
    if isinstance(value, Mapping):
        value = value.values()
    elif not isinstance(value, (list, tuple)):
        return False
    # Strings, most values, are looked at here: one call per container, not per value.
    for v in value:
        if isinstance(v, str):
            if token in v:
                return True
        elif isinstance(v, (Mapping, list, tuple)) and _has_placeholder(v, token):
            return True
    return False
