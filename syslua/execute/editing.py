"""What `sys edit PATH` opens for a managed path: the file its content comes
from (a `source` file, a template, a file of a tree's source directory), or,
for content declared inline (or no content at all), the declaration in the
config, at its line. Nothing here opens or changes anything."""

from __future__ import annotations

import os
from typing import NamedTuple

from syslua.errors import UsageError
from syslua.manifest.model import Item, Manifest
from syslua.paths import abbreviate
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.kind import Journaled


class EditTarget(NamedTuple):
    """The file to open, the line to open it at (None: its top), and what it is."""

    file: str
    line: int | None
    what: str  # "source" or "declaration"


def managed_item(manifest: Manifest, path: str) -> Item | None:
    """The item that manages `path` (an absolute, normalised path), if any."""
    for item in manifest:
        kind = capability(get_type(item.type), Journaled)
        if kind is not None and kind.managed_path(item) == path:
            return item
    return None


def edit_target(manifest: Manifest, path: str) -> EditTarget:
    """What to open to change what the config puts at `path`."""
    item = managed_item(manifest, path)
    if item is None:
        raise UsageError(
            f"{abbreviate(path)} is not managed by the config: `sys add {abbreviate(path)}` "
            "takes it in"
        )
    source = item.get("source")
    if isinstance(source, str) and os.path.isfile(source):
        return EditTarget(source, None, "source")
    declared = manifest.sources.get(item.id, ())
    if not declared:
        raise UsageError(f"{abbreviate(path)}: the config does not say where it is declared")
    where = declared[0]
    return EditTarget(where.file, where.line, "declaration")
