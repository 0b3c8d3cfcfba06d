"""Typed errors that cross module boundaries.

Every error a user can cause is a `SysluaError` whose text is the message the
CLI prints; the CLI maps `exit_code` to the process exit status. Errors that
point at the user's configuration carry a `Source` (file and line), shown
relative to the root config's directory so messages read `sys.lua:12: ...`.
"""

from __future__ import annotations

from typing import NamedTuple

# Directory that `Source` paths are shown relative to; set once per run by
# the resolver to the root config's directory.
_display_root: str | None = None


def set_display_root(path: str | None) -> None:
    global _display_root
    _display_root = path


def display_path(path: str) -> str:
    """Show `path` relative to the root config's directory when inside it."""
    root = _display_root
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return path


class Source(NamedTuple):
    """Where a declaration was made: an absolute file path and a line.

    A named tuple: immutable and ordered like a frozen dataclass, and cheap to
    create for every one of ten thousand declarations."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{display_path(self.file)}:{self.line}"

    def source_line(self) -> str | None:
        """The text of the line, for error messages (None when unreadable)."""
        try:
            with open(self.file, encoding="utf-8", errors="replace") as f:
                for number, text in enumerate(f, 1):
                    if number == self.line:
                        return text.rstrip("\n")
        except OSError:
            return None
        return None


class SysluaError(Exception):
    """Base of every error the user is meant to see as a plain message.

    `reason`: a word a script reads in the `refused` field of `--json`
    (docs/json.md) to tell one kind of stop from another; each class has
    one, and a refusal made of a more general class names its own."""

    exit_code = 1
    reason = "error"

    def __init__(self, message: str, *, hint: str | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if reason is not None:
            self.reason = reason

    def summary(self) -> str:
        """The message in one line, without the hint (the `error` of `--json`)."""
        return self.message

    def render(self) -> str:
        text = self.message
        if self.hint:
            text += "\n\n" + self.hint
        return text


class ConfigError(SysluaError):
    """The configuration is wrong: exit code 2, located at file:line when known."""

    exit_code = 2
    reason = "config_error"

    def __init__(
        self,
        message: str,
        source: Source | None = None,
        *,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.source = source

    def summary(self) -> str:
        return f"{self.source}: {self.message}" if self.source else self.message

    def render(self) -> str:
        text = self.summary()
        if self.source:
            line = self.source.source_line()
            if line is not None and line.strip():
                text += f"\n  {self.source.line} | {line}"
        if self.hint:
            text += "\n\n" + self.hint
        return text

    def __str__(self) -> str:
        return self.render()


class ResourceError(Exception):
    """An item cannot be decided or applied; the message names the problem.

    Not a SysluaError: it becomes the failure of one item (data), which the
    apply reports, rather than ending the command.
    """


class UsageError(SysluaError):
    """The command line is wrong (missing config file, bad flag value)."""

    exit_code = 2
    reason = "usage_error"


class StateError(SysluaError):
    """The state directory or the store is unusable (corrupt, unreadable)."""

    exit_code = 1
    reason = "state_error"


class StateConflictError(SysluaError):
    """Something in the state dir is not what syslua keeps there (the lock path
    is a directory...) and is not syslua's to remove: exit code 2."""

    exit_code = 2
    reason = "state_conflict"


class LockHeldError(SysluaError):
    """Another syslua process holds the state lock."""

    exit_code = 3
    reason = "lock_held"


class Interrupted(BaseException):
    """Ctrl-C (SIGINT) or SIGTERM stopped the command: exit code 130.

    A BaseException, as KeyboardInterrupt is, so that no `except Exception`
    on the way up takes it for an ordinary failure. Raised only while nothing
    has been changed yet (see `syslua.execute.stop`); the message is what
    the CLI prints."""

    exit_code = 130

    def __init__(self, message: str = "Interrupted.") -> None:
        super().__init__(message)
        self.message = message
