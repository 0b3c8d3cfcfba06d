"""What proves that a file item's unchanged status still holds (`Proven`,
`state/proof.py`): the paths its status read, and how to compare each.

- the path itself: every field of its `lstat` for a file or a link (any
  write, chmod or chown moves its ctime), the same directory for a
  directory (inode, mode, owner: not its times, which its entries change),
  nothing there for `ensure = "absent"`;
- the `source` of a copy, through links, every field (its content);
- the destination of a link, through links: still the same entry (a link
  to a source needs it; one to a loop or to itself is refused);
- each parent directory up to the home (or `/`): still the same directory,
  not a link (stow's folds are found through them); not for a path that is
  absent, which stays absent through any parent.

A status that read more than paths can say is not proven: a secret (its
content is decrypted or resolved while planning), a folded or symlinked
parent, a kept fold, a link whose text differs from what is declared (it
points to the same entry only through other directories), a member of a
tree whose root is a symlink.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from syslua.paths import home
from syslua.resources.file_posix import ABSENT, DIRECTORY, LINK
from syslua.resources.file_secret import is_secret
from syslua.state import proof

if TYPE_CHECKING:
    from syslua.manifest.model import Item
    from syslua.resources.file import Status
    from syslua.resources.kind import Claim


def claims(item: Item, status: Status | None) -> list[Claim] | None:
    """The paths that prove the unchanged `status` of `item` (see the module's docstring)."""
    if (
        status is None
        or status.error is not None
        or status.differences
        or status.parents
        or status.linked_parents
        or status.linked_root is not None
        or status.folds
        or status.kept
        or is_secret(item)
    ):
        return None
    state, path = status.state, item.key
    out: list[Claim] = []
    if state.ensure == ABSENT:
        out.append((path, proof.ABSENT, None))
    elif state.ensure == DIRECTORY:
        out.append((path, proof.SHAPE, state.stat_key))
    elif state.ensure == LINK:
        target = item.get("target")
        if not isinstance(target, str) or state.link_target != target:
            return None
        out.append((path, proof.LSTAT, state.stat_key))
        destination = os.path.join(os.path.dirname(path), target)
        exists = os.path.exists(destination)
        out.append((destination, proof.SHAPE_STAT if exists else proof.ABSENT, None))
    else:
        out.append((path, proof.LSTAT, state.stat_key))
    source = item.get("source")
    if isinstance(source, str) and item.get("ensure") == "present" and state.ensure != LINK:
        if status.source_key is None:
            return None
        out.append((source, proof.STAT, status.source_key))  # the content it compared
    if state.ensure != ABSENT:
        # (Nothing there is nothing there through any parent: a parent that
        # becomes a link to where the path exists is seen by its own claim.)
        out.extend((parent, proof.SHAPE, None) for parent in _parents(path))
    return out


def _parents(path: str) -> list[str]:
    """The directories `file_posix.linked_parents` looks at: below the home
    for a path in it, else every one but `/`."""
    h = home()
    top = h if path.startswith(h.rstrip("/") + "/") else "/"
    out = []
    parent = os.path.dirname(path)
    while parent and parent != top and parent != "/":
        out.append(parent)
        parent = os.path.dirname(parent)
    return out
