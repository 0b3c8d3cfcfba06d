"""`sys.glob`'s matcher: shell patterns, with a `**` that looks inside dot folders.

Within a name, `*`, `?` and `[...]` match as in a shell: a name starting
with `.` only when the pattern's name does too. A `**` component matches any
number of directories, those starting with `.` included (stow packages keep
everything below `.config`); as the last component it matches every file
and directory below, hidden or not, but not the directory it starts from.
`**` does not descend into symlinked directories (no loops); other
components follow them. A pattern ending in `/` matches directories only.
Python's `glob` cannot say this (its `include_hidden` opens `*` to dot
names too), hence this walk. Bytes in and out: names need not be UTF-8.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase

_MAGIC = rb"[*?[]"


def match(pattern: bytes, root: bytes) -> list[bytes]:
    """The paths matching `pattern`, sorted: relative to `root` for a relative
    pattern (as written), absolute for an absolute one."""
    absolute = pattern.startswith(b"/")
    dirs_only = pattern.endswith(b"/") and pattern.strip(b"/") != b""
    parts = [p for p in pattern.split(b"/") if p]
    found: set[bytes] = set()
    _walk(b"/" if absolute else b"", b"/" if absolute else root, parts, found)
    if dirs_only:
        found = {f + b"/" for f in found if os.path.isdir(f if absolute else os.path.join(root, f))}
    return sorted(found)


def _join(out: bytes, name: bytes) -> bytes:
    return out + name if not out or out.endswith(b"/") else out + b"/" + name


def _entries(path: bytes) -> list[os.DirEntry[bytes]]:
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:  # not a directory, unreadable, gone: nothing matches below it
        return []


def _walk(out: bytes, path: bytes, parts: list[bytes], found: set[bytes]) -> None:
    """Add to `found` what `parts` match below `path` (shown as `out`)."""
    if not parts:
        if out:
            found.add(out)
        return
    head, rest = parts[0], parts[1:]
    if head == b"**":
        if rest:
            _walk(out, path, rest, found)  # no directory at all
        for entry in _entries(path):
            below = _join(out, entry.name)
            if not rest:
                found.add(below)
            if entry.is_dir(follow_symlinks=False):
                _walk(below, entry.path, parts, found)
        return
    if not re.search(_MAGIC, head):
        full = os.path.join(path, head)
        if rest:
            if os.path.isdir(full):
                _walk(_join(out, head), full, rest, found)
        elif os.path.lexists(full):
            found.add(_join(out, head))
        return
    hidden = head.startswith(b".")
    for entry in _entries(path):
        name = entry.name
        if name.startswith(b".") and not hidden:
            continue
        if not fnmatchcase(name, head):
            continue
        if not rest:
            found.add(_join(out, name))
        elif entry.is_dir():
            _walk(_join(out, name), entry.path, rest, found)
