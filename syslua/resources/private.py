"""Private files, and the one place a file's content diff is made.

A file is private when a mode it has or is declared with lets neither its
group nor others read it (`0600`, `0400`, `0700`), or when it lives in a
`.ssh` or `.gnupg` directory (`~/.ssh/config` is private whatever its mode).
The contents of a private file never appear in human output: `content_diff`,
through which every content diff goes (`sys plan --diff`, an edit made by
hand, `sys add`'s refusals, `sys diff`), gives only how many lines changed:
`(private file: 3 lines changed)`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable

PRIVATE_DIRS = frozenset({".ssh", ".gnupg"})
READABLE = 0o044  # group read, other read


def is_private(paths: Iterable[str | None], modes: Iterable[str | int | None] = ()) -> bool:
    """Is a file private: one of `paths` in a `.ssh` or `.gnupg` directory, or
    with a mode on disk (if it exists), or one of `modes` (declared, recorded),
    that neither the group nor others can read?"""
    seen = list(modes)
    for path in paths:
        if not path:
            continue
        if PRIVATE_DIRS.intersection(path.split(os.sep)[:-1]):
            return True
        try:
            seen.append(os.stat(path).st_mode & 0o777)
        except (OSError, ValueError):
            pass
    return any(_unreadable(mode) for mode in seen)


def _unreadable(mode: str | int | None) -> bool:
    if mode is None or mode == "":
        return False
    if isinstance(mode, str):
        try:
            mode = int(mode, 8)
        except ValueError:
            return False  # a symbolic mode: not one we can judge
    return mode & READABLE == 0


def content_diff(
    before: bytes, after: bytes, fromfile: str, tofile: str, *, private: bool, secret: bool = False
) -> str:
    """A unified diff of two contents ('' when equal); of a private file, only
    how many lines changed; of a secret one (docs/secrets.md) the same, so named."""
    if before == after:
        return ""
    binary = b"\0" in before or b"\0" in after
    if private or secret:
        what = "binary content changed" if binary else _lines_changed(before, after)
        return f"({'secret' if secret else 'private'} file: {what})\n"
    if binary:
        return "Binary files differ\n"
    lines = difflib.unified_diff(
        before.decode("utf-8", "replace").splitlines(keepends=True),
        after.decode("utf-8", "replace").splitlines(keepends=True),
        fromfile=fromfile,
        tofile=tofile,
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _lines_changed(before: bytes, after: bytes) -> str:
    """`3 lines changed`: the lines replaced (the longer side), added and removed."""
    a, b = before.splitlines(), after.splitlines()
    n = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            n += max(i2 - i1, j2 - j1)
    n = max(n, 1)  # only the last newline changed
    return "1 line changed" if n == 1 else f"{n} lines changed"
