"""The package provider: installs a package's tree in the store and links the profile.

`install`: fetch the source (a git checkout, or a download verified by its
SHA-256 before anything is unpacked, taken from the cache when it is there),
unpack it safely into a staging directory, check that every `bin` exists and
make it executable, then move the tree into the store read-only. The staging
directory goes whatever happens, so a failed install leaves nothing behind.

`link`: build a new profile for the given package trees and swap it in; the
swap is journaled through `note`, so a rollback points the profile back.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from syslua import fetch, unpack
from syslua.manifest.model import Item, thaw
from syslua.paths import Paths
from syslua.resources import git
from syslua.resources.base import Context, ResourceError
from syslua.state import profile


def install(item: Item, tree: Path, bins: list[str], ctx: Context, label: str) -> None:
    """Put the package's tree at `tree` in the store (`label` names its download's progress)."""
    store, paths = ctx.store, ctx.paths
    assert store is not None and paths is not None
    source = thaw(item.get("source"))
    staging = store.staging_dir(f"pkg-{item.key}-")
    try:
        if source["fetch"] == "git":
            checkout = staging / "src"
            git.checkout(source, checkout, ctx.runner)
            content = checkout
        else:
            progress = ctx.progress(label) if ctx.progress else None
            archive = fetch.download(source, paths.cache, progress=progress)
            content = staging  # unpacked in place: the staging dir becomes the tree
            fmt = unpack.detect_format(fetch.file_name(source), item.get("format"))
            unpack.unpack(
                archive,
                content,
                fmt,
                strip=item.get("strip_components", 0),
                binary_name=item.key,
                max_unpack=unpack.DEFAULT_MAX_UNPACK if ctx.max_unpack is None else ctx.max_unpack,
            )
        missing = [b for b in bins if not (content / b).is_file()]
        if missing:
            found = sorted(str(p.relative_to(content)) for p in content.rglob("*") if p.is_file())[
                :8
            ]
            raise ResourceError(
                f"{missing[0]} is not in the archive of package {item.key} "
                f"(it has: {', '.join(found) or 'nothing'}; check bin and strip_components)"
            )
        for b in bins:
            os.chmod(content / b, 0o755)
        store.add_tree(content, tree.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def link(
    paths: Paths,
    packages: list[tuple[Path, list[str]]],
    note: Callable[[dict[str, Any]], None] | None,
    apply: object | None = None,
) -> None:
    """Make the profile link exactly `packages` (tree, bin entries), recording the old one
    with `note`; `apply` (the apply's store) lets a profile it built grow in place."""
    profile.update(paths, packages, note, apply)
