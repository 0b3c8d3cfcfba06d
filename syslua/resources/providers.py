"""What each kind needs of its provider: one protocol per provider, checked by mypy.

A kind decides; its provider acts (CCM: "real work lives in the provider,
never in the type"). A provider is a module, and its protocol lists exactly
what the kind calls of it, with the types the kind relies on. The kind
reaches its provider only through a name typed with the protocol, so a
provider that lacks a member, or has one with another signature, is a mypy
error where the kind binds it:

| protocol          | kind                              | bound as                     | providers |
|-------------------|-----------------------------------|------------------------------|-----------|
| `FileProvider`    | file (`file.py`, `file_edits.py`) | `posix: FileProvider`        | `file_posix` |

Types only: kinds import this module under `TYPE_CHECKING`, so it costs
nothing at run time. The records that cross a seam stay with the module that
defines them: `FileState` with `file_posix`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from syslua.resources.file_posix import FileState

# Called with a path just before it changes: the journal keeps what is there.
BeforeChange = Callable[[str], None]


class FileProvider(Protocol):
    """Reads what is at a path and does every change on disk, each announced
    to `before_change` first. Raises `ResourceError` for what the user can fix."""

    # -- reading: never changes anything --------------------------------------
    def status(self, path: str) -> FileState:
        """What is at `path` now (a symlink is not followed)."""
        ...

    def linked_parents(
        self, path: str, home: str, seen: dict[str, str | None] | None = None
    ) -> tuple[tuple[str, str], ...]:
        """The parents of `path` that are symlinks, with their targets, outermost first."""
        ...

    def missing_parents(self, path: str) -> list[str]:
        """The parents of `path` that do not exist, outermost first."""
        ...

    def read_small(self, path: str, size: int) -> bytes:
        """The whole content of a small file of `size` bytes."""
        ...

    def same_content(self, a: str, b: str, size: int | None = None) -> bool:
        """Whether two files of the same size hold the same bytes."""
        ...

    # -- acting ----------------------------------------------------------------
    def create_parents(
        self,
        path: str,
        attrs: Callable[[str], tuple[int, int, int]],
        *,
        before_change: BeforeChange,
    ) -> None:
        """Create the missing parents of `path`, each with `attrs(dir)` = (uid, gid, mode)."""
        ...

    def store(
        self,
        path: str,
        *,
        content: bytes | None,
        source: str | None,
        uid: int,
        gid: int,
        mode: int,
        before_change: BeforeChange,
    ) -> None:
        """Write the regular file at `path` atomically (attributes only when
        neither `content` nor `source` is given)."""
        ...

    def make_link(
        self, path: str, target: str, *, uid: int, gid: int, before_change: BeforeChange
    ) -> None:
        """Make `path` a symlink to `target`, replacing a file or link."""
        ...

    def create_directory(
        self, path: str, *, uid: int, gid: int, mode: int, before_change: BeforeChange
    ) -> None:
        """Create the directory `path`, or fix its attributes."""
        ...

    def replace_with_directory(self, path: str, *, before_change: BeforeChange) -> None:
        """Remove the file in the way of a directory (`force = true`)."""
        ...

    def replace_link_with_directory(
        self, path: str, uid: int, gid: int, mode: int, *, before_change: BeforeChange
    ) -> None:
        """Replace the symlink at `path` (a tree's root) with an empty directory."""
        ...

    def remove(self, path: str, *, force: bool, before_change: BeforeChange) -> None:
        """Remove what is at `path` (a non-empty directory only with `force`)."""
        ...

    def copy_content(
        self, live: str, dest: str, *, mode: int, owner: tuple[int, int] | None
    ) -> None:
        """Copy the file `live` to `dest` atomically (`sys add` taking an edit back)."""
        ...
