"""The package type: a tool fetched into the store and linked into the profile.

status: is `<hash>-<name>-<version>/` in the store, and does the profile link
each `bin` to it? apply: fetch (verified by SHA-256 before anything is
unpacked; a tree or download already present is never fetched again),
unpack safely into a staging dir, check every `bin` exists, move the tree
into the store read-only, then rebuild the profile with it. Removal and
rollback only change the profile; the tree stays in the store until gc.

This module decides (tree identity, status, decide, verify); the store
provider (`package_store`) fetches, unpacks, installs and relinks.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from syslua.errors import ConfigError
from syslua.manifest.checks import (
    choice,
    fetch_source,
    non_negative,
    nonempty_string,
    string_list,
)
from syslua.manifest.model import Item, Manifest, thaw
from syslua.manifest.schema import Finishing, Prop, TypeSchema, schema
from syslua.paths import Paths
from syslua.resources.base import (
    CREATE,
    NONE,
    NOTHING,
    REMOVE,
    UPDATE,
    Applied,
    Context,
    Decision,
    Removal,
    SnapshotContext,
    UndoContext,
)
from syslua.resources.kind import Drifts, Kind, Ordered, Outputs, Recorded, Removable, Undoes
from syslua.state import profile
from syslua.state.records import KindRecord, Original
from syslua.state.store import Store

INSTALL = "Would have installed the package"
LINK = "Would have linked the package into the profile"


_TREE_NAMES: dict[int, tuple[Item, str]] = {}  # id(item) -> (item, its tree's name)


def tree_name(item: Item) -> str:
    """The store name of the item's tree, from what identifies its content.

    Remembered per item (an apply asks for each package's many times: its
    status, every profile rebuild, verify, the snapshot); the entry holds the
    item, so its id cannot be reused by another item."""
    known = _TREE_NAMES.get(id(item))
    if known is not None and known[0] is item:
        return known[1]
    ident = {
        "name": item.key,
        "version": item.get("version"),
        "source": thaw(item.get("source")),
        "strip_components": item.get("strip_components", 0),
        "format": item.get("format"),
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]
    name = f"{digest}-{item.key}-{item.get('version')}"
    if len(_TREE_NAMES) > 10_000:  # a long-running process (a library user) applies many manifests
        _TREE_NAMES.clear()
    _TREE_NAMES[id(item)] = (item, name)
    return name


def bins(item: Item) -> list[str]:
    declared = list(item.get("bin", ()))
    if not declared and _format(item) == "binary":
        return [f"bin/{item.key}"]
    return declared


def _format(item: Item) -> str:
    src = item.get("source")
    if src.get("fetch") == "git":
        return "git"
    from syslua import fetch, unpack

    return unpack.detect_format(fetch.file_name(thaw(src)), item.get("format"))


def installed_packages(ctx: Context, manifest: Manifest) -> list[tuple[Path, list[str]]]:
    """Declared packages whose trees are in the store: what the profile should link."""
    assert ctx.store is not None
    out = []
    for item in manifest.of_type("package"):
        tree = ctx.store.tree_path(tree_name(item))
        if tree.is_dir():
            out.append((tree, bins(item)))
    return out


# -- the declaration -----------------------------------------------------------

_OS_PACKAGE_HINT = (
    "`package {}` is a tool fetched into syslua's store (version, source, bin). "
    "For a package of the operating system (apt, dnf), CCM's `package`, write\n"
    '  os_package { name = "hello", ensure = "present" }'
)


class _PackageSchema(TypeSchema):
    def finish(self, key: str, props: dict[str, Any], finishing: Finishing) -> None:
        props.setdefault("bin", [])

    def check_all(self, manifest: Manifest) -> None:
        """Two packages may not put the same name into the profile's bin."""
        owners: dict[str, Item] = {}
        for pkg in manifest.of_type(self.name):
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


SCHEMA = schema(
    "package",
    "name",
    [
        Prop("name", nonempty_string, doc="the package's name"),
        Prop("version", nonempty_string, required=True, doc="its version; part of the store path"),
        Prop(
            "source",
            fetch_source,
            required=True,
            doc="lib.fetchUrl{...}, lib.fetchGitHub{...} or lib.fetchGit{...}",
        ),
        Prop(
            "bin",
            string_list,
            mergeable=True,
            doc="programs in the unpacked tree to link into the profile's bin",
        ),
        Prop(
            "strip_components",
            non_negative,
            doc="leading path components removed from archive members",
        ),
        Prop(
            "format",
            choice("tar.gz", "tar.xz", "tar.bz2", "zip", "binary"),
            doc="how to unpack (guessed from the URL when omitted)",
        ),
    ],
    defaults={"strip_components": 0},
    doc="A tool fetched into the store and linked into the profile (docs/resources/package.md).",
    hints=dict.fromkeys(("ensure", "provider"), _OS_PACKAGE_HINT),
    cls=_PackageSchema,
)


class PackageType(Kind[dict[str, Any]], Removable, Undoes, Recorded, Drifts, Ordered, Outputs):
    name = "package"
    schema = SCHEMA

    def label(self, item: Item) -> str:
        return f"{item.key}@{item.get('version')}"

    def status(self, item: Item, ctx: Context) -> dict[str, Any]:
        tree = ctx.store.tree_path(tree_name(item)) if ctx.store is not None else None
        present = tree is not None and tree.is_dir()
        linked = (
            present
            and tree is not None
            and ctx.paths is not None
            and all(
                profile.points_at(ctx.paths.profile / "bin" / name, target)
                for name, target in profile.links_of(tree, bins(item)).items()
            )
        )
        return {"tree": str(tree) if tree else None, "present": present, "linked": linked}

    def decide(
        self, item: Item, status: dict[str, Any], ctx: Context, triggered: bool = False
    ) -> Decision:
        if not status["present"]:
            return Decision(CREATE, "not in the store", INSTALL)
        if not status["linked"]:
            return Decision(UPDATE, "in the store, not linked", LINK)
        return Decision(NONE, "installed")

    def apply(
        self, item: Item, decision: Decision, planned: dict[str, Any] | None, ctx: Context
    ) -> Applied:
        assert ctx.store is not None and ctx.manifest is not None
        tree = ctx.store.tree_path(tree_name(item))
        if not tree.is_dir():
            self._install(item, tree, ctx)
        with profile.lock:
            # Packages installed in parallel share one rebuild: whoever comes
            # first links every package whose tree is there by then.
            if not self.status(item, ctx)["linked"]:
                installed = installed_packages(ctx, ctx.manifest)
                _provider().link(ctx.paths, installed, ctx.note, apply=ctx.store)
        return NOTHING

    def _install(self, item: Item, tree: Path, ctx: Context) -> None:
        _provider().install(item, tree, bins(item), ctx, self.label(item))

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        st = self.status(item, ctx)
        if not st["present"]:
            return "the package is not in the store"
        if not st["linked"]:
            return "the package is not linked into the profile"
        return None

    # -- capabilities ----------------------------------------------------------
    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        return Decision(
            REMOVE,
            "no longer declared; it leaves the profile, its store object stays until `sys gc`",
        )

    def provides(self, item: Item) -> list[str]:
        return [f"bin:{os.path.basename(b)}" for b in item.get("bin", ())]

    def requires(self, item: Item) -> tuple[str, ...]:
        return ()

    def predecessors(self, item: Item, manifest: Manifest) -> tuple[str, ...]:
        return ()

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        assert ctx.manifest is not None
        _provider().link(ctx.paths, installed_packages(ctx, ctx.manifest), ctx.note)
        return Removal("removed from the profile (the package stays in the store until `sys gc`)")

    def undo(self, record: KindRecord, uctx: UndoContext) -> None:
        """Swap back the profile a journal record names."""
        profile.restore(record.data, uctx.store)
        uctx.report.restored.append("profile")

    def snapshot_state(self, item: Item, sctx: SnapshotContext) -> dict[str, Any]:
        return {"tree": tree_name(item)}

    def materialise(
        self, item: Item, state: Mapping[str, Any], store: Store, snapshot: str
    ) -> Item:
        return item  # the tree is in the store under its name: nothing to point at

    def blobs(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    def trees(self, state: Mapping[str, Any]) -> set[str]:
        return {state["tree"]} if state.get("tree") else set()

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        st = self.status(item, ctx)
        if st["present"] and st["linked"]:
            return None
        what = "not in the store" if not st["present"] else "not linked into the profile"
        return "changed", f"package {what}"

    def outputs(self, paths: Paths) -> list[Path]:
        return []  # the profile is swapped by the items themselves, journaled

    def write_outputs(self, manifest: Manifest, paths: Paths, before_change: Any) -> str | None:
        return None

    def after_commit(self, paths: Paths) -> None:
        """Drop profile generations no snapshot needs any more."""
        profile.prune(paths)


def _provider() -> ModuleType:
    """The provider, loaded when a package is installed or relinked: downloading
    and unpacking cost every apply tens of milliseconds of imports otherwise."""
    from syslua.resources import package_store

    return package_store
