"""What each kind needs of its provider: one protocol per provider, checked by mypy.

A kind decides; its provider acts (CCM: "real work lives in the provider,
never in the type"). A provider is a module, and its protocol lists exactly
what the kind calls of it, with the types the kind relies on. The kind
reaches its provider only through a name typed with the protocol, so a
provider that lacks a member, or has one with another signature, is a mypy
error where the kind binds it:

| protocol          | kind                        | bound in the kind as                | providers        |
|-------------------|-----------------------------|-------------------------------------|------------------|
| `FileProvider`    | file (`file`, `file_edits`) | `posix: FileProvider = file_posix`  | `file_posix`     |
| `PackageProvider` | os_package                  | `provider(name) -> PackageProvider` | `os_package_apt`, `os_package_dnf` |
| `UserProvider`    | user                        | `posix: UserProvider = user_posix`  | `user_posix`     |

Types only: kinds import this module under `TYPE_CHECKING`, so it costs
nothing at run time (the os_package providers are still imported only
when a package is planned). The records that cross a seam stay with the
module that defines them: `FileState` with `file_posix`, `Account` with
`user_posix`, `Installed`, `Change` and `Restore` with the os_package kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from syslua.resources.file_posix import FileState
    from syslua.resources.os_package import Change, Installed, Restore
    from syslua.resources.process import ProcessResult, Runner
    from syslua.resources.user_posix import Account

# Called with a path just before it changes: the journal keeps what is there.
BeforeChange = Callable[[str], None]
# Called with (stream, line) as a command prints it; None: nobody listens.
OnLine = Callable[[str, str], None] | None


Planned = Mapping[str, str] | None  # a path's linked parents when planned


class FileProvider(Protocol):
    """Reads what is at a path and does every change on disk, each announced
    to `before_change` first. Raises `ResourceError` for what the user can fix.
    Every change reaches its path's directory without following a link that
    was not one when the item was planned (`planned`: the item's linked
    parents then, None outside an apply), nor one another user could have
    made (`safe_fs`)."""

    # -- reading: never changes anything --------------------------------------
    def status(self, path: str) -> FileState:
        """What is at `path` now (a symlink is not followed)."""
        ...

    def unchanged(self, path: str, state: FileState) -> bool:
        """Is `path` still what `state` read (absent then and now, or the same
        `lstat`)? The cheap check that a planned status still holds."""
        ...

    def linked_parents(
        self, path: str, home: str, seen: dict[str, str | None] | None = None
    ) -> tuple[tuple[str, str], ...]:
        """The parents of `path` that are symlinks, with their targets, outermost first."""
        ...

    def missing_parents(self, path: str, seen: dict[str, bool] | None = None) -> list[str]:
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
        planned: Planned = None,
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
        planned: Planned = None,
    ) -> None:
        """Write the regular file at `path` atomically (attributes only when
        neither `content` nor `source` is given)."""
        ...

    def make_link(
        self,
        path: str,
        target: str,
        *,
        uid: int,
        gid: int,
        before_change: BeforeChange,
        planned: Planned = None,
    ) -> None:
        """Make `path` a symlink to `target`, replacing a file or link."""
        ...

    def create_directory(
        self,
        path: str,
        *,
        uid: int,
        gid: int,
        mode: int,
        before_change: BeforeChange,
        planned: Planned = None,
    ) -> None:
        """Create the directory `path`, or fix its attributes."""
        ...

    def replace_with_directory(
        self, path: str, *, before_change: BeforeChange, planned: Planned = None
    ) -> None:
        """Remove the file in the way of a directory (`force = true`)."""
        ...

    def replace_link_with_directory(
        self,
        path: str,
        uid: int,
        gid: int,
        mode: int,
        *,
        before_change: BeforeChange,
        planned: Planned = None,
    ) -> None:
        """Replace the symlink at `path` (a tree's root) with an empty directory."""
        ...

    def remove(
        self, path: str, *, force: bool, before_change: BeforeChange, planned: Planned = None
    ) -> None:
        """Remove what is at `path` (a non-empty directory only with `force`)."""
        ...

    def remove_made(self, path: str, *, directory: bool) -> bool:
        """Remove what syslua made at `path` (a directory only when empty: False then)."""
        ...

    def copy_content(
        self, live: str, dest: str, *, mode: int, owner: tuple[int, int] | None
    ) -> None:
        """Copy the file `live` to `dest` atomically (`sys add` taking an edit back)."""
        ...


class PackageProvider(Protocol):
    """A package manager: reads what is installed and offered, plans a
    transaction without changing anything, and installs, removes and puts
    back packages. Every command runs through the `Runner`."""

    # Properties: read-only, so a module's constant (a tuple of its own length) fits.
    @property
    def NAME(self) -> str:
        """Its name, as `provider =` and the journal records say it (`apt`)."""
        ...

    @property
    def TOOLS(self) -> tuple[str, ...]:
        """The commands it needs on PATH."""
        ...

    def compare(self, a: str, b: str) -> int:
        """The package manager's version order: -1, 0 or 1."""
        ...

    def installed(self, runner: Runner, name: str) -> Installed:
        """The package's installed version, if any."""
        ...

    def candidate(self, runner: Runner, name: str) -> str | None:
        """The version installing `name` would pick, if the archive has one."""
        ...

    def available(self, runner: Runner, names: Iterable[str]) -> dict[str, set[str]]:
        """The versions the archive offers for each name."""
        ...

    def simulate(
        self, runner: Runner, name: str, version: str | None, *, remove: bool = False
    ) -> list[Change]:
        """Every package installing `name` (at `version`) or removing it would change."""
        ...

    def unavailable(self, runner: Runner, changes: Sequence[Change]) -> Mapping[str, str]:
        """The versions replaced by `changes` that the archive no longer offers."""
        ...

    def auto_installed(self, runner: Runner, names: Iterable[str]) -> list[str]:
        """Which of `names` were installed as dependencies."""
        ...

    def install(
        self,
        runner: Runner,
        name: str,
        version: str | None,
        downgrade: bool,
        on_line: OnLine = None,
    ) -> ProcessResult:
        """Install or upgrade `name` (at `version`; `downgrade` allows going back)."""
        ...

    def uninstall(self, runner: Runner, name: str, on_line: OnLine = None) -> ProcessResult:
        """Remove `name`."""
        ...

    def restore(self, runner: Runner, want: Restore) -> None:
        """Put packages back at the versions `want` says, in one transaction where it can."""
        ...


class UserProvider(Protocol):
    """Reads accounts and groups, and changes accounts with the system's tools."""

    @property
    def FLAGS(self) -> tuple[tuple[str, str], ...]:
        """The declared properties it sets, each with the tool's flag for it."""
        ...

    def read_account(self, name: str) -> Account:
        """The account as the system has it now (`exists` False when there is none)."""
        ...

    def group_id(self, value: str) -> int | None:
        """The gid of a group name or number, when such a group exists."""
        ...

    def create(
        self,
        name: str,
        props: Mapping[str, str | int | None],
        member_of: Sequence[str],
        runner: Runner,
    ) -> None:
        """Create the account with `props` (those of `FLAGS` that are set) and groups."""
        ...

    def modify(
        self,
        name: str,
        props: Mapping[str, str | int | None],
        member_of: Sequence[str],
        runner: Runner,
    ) -> None:
        """Set `props`; the supplementary groups become exactly `member_of`."""
        ...

    def delete(self, name: str, runner: Runner) -> None:
        """Delete the account (never its home directory)."""
        ...

    def restore(self, record: Mapping[str, Any], runner: Runner | None = None) -> None:
        """Put the account back as a journal record (op `user`) describes it."""
        ...
