"""Where `sys.secret` values come from: `pass`, any command, a file, a variable.

A source is a small table: exactly one of `pass` (an entry of the `pass`
password store), `command` (an argv run without a shell, for 1Password's
`op`, Bitwarden's `bw`, gopass, keepassxc-cli...), `file` (a path, `~`
expanded, relative to the config's directory) or `env` (a variable's name),
and `whole` (false: the first line without its newline; true: everything).

`validate` checks a table and gives it back normalised; `describe` names it
for messages and the plan; `program` is what must be on `PATH` (for
`sys doctor`); `read` gets the value. `read` is pure: the caller memoises.

A message here never holds the value, nor anything the source printed on
stdout: a manager's failure is told by its exit code and its stderr only.
A manager command runs in a session of its own, so that a timeout, a Ctrl-C
or any other exception kills it with everything it started; its stdin is the
terminal when there is one (gpg's pinentry may have to ask for a
passphrase), else nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from syslua import paths

SOURCES = ("pass", "command", "file", "env")
_KEYS = (*SOURCES, "whole")
_STDERR_CHARS = 300  # how much of a manager's stderr a message quotes


class SecretSourceError(Exception):
    """A source is wrong or could not give its value. The text never holds the value."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _kind(value: Any) -> str:
    """The type of a Lua value, for messages (never the value: it may be the secret)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (Mapping, list, tuple)):
        return "a table"
    return type(value).__name__


def _text(spec: Mapping[str, Any], key: str, what: str) -> str:
    value = spec[key]
    if not isinstance(value, str):
        raise SecretSourceError(
            f"sys.secret: `{key}` must be {what} (a string), got {_kind(value)}"
        )
    if not value:
        raise SecretSourceError(f"sys.secret: `{key}` must be {what}, got an empty string")
    if "\0" in value:
        raise SecretSourceError(f"sys.secret: `{key}` must not contain a NUL byte")
    return value


def _argv(value: Any) -> list[str]:
    # Lua's {} arrives as an empty mapping, a list as a list.
    if isinstance(value, Mapping) and not value:
        value = []
    if not isinstance(value, (list, tuple)):
        raise SecretSourceError(
            "sys.secret: `command` must be a list of strings (the program and its arguments), "
            f"got {_kind(value)}"
        )
    if not value:
        raise SecretSourceError("sys.secret: `command` must name a program: it is an empty list")
    for n, word in enumerate(value, 1):
        if not isinstance(word, str):
            raise SecretSourceError(
                f"sys.secret: `command` word {n} must be a string, got {_kind(word)}"
            )
        if "\0" in word:
            raise SecretSourceError(f"sys.secret: `command` word {n} must not contain a NUL byte")
    if not value[0]:
        raise SecretSourceError(
            "sys.secret: `command` must name a program: its first word is empty"
        )
    return list(value)


def validate(spec: Mapping[str, Any]) -> dict[str, Any]:
    """`spec` checked and normalised: one source key and `whole` (a bool)."""
    if not isinstance(spec, Mapping):
        raise SecretSourceError(
            f"sys.secret needs a table with one of pass, command, file, env; got {_kind(spec)}"
        )
    unknown = sorted(str(k) for k in spec if k not in _KEYS)
    if unknown:
        raise SecretSourceError(
            f"sys.secret: unknown key {', '.join(unknown)} (it takes pass, command, file, env and whole)"
        )
    given = [k for k in SOURCES if spec.get(k) is not None]
    if len(given) != 1:
        got = f" (got {' and '.join(given)})" if given else ""
        raise SecretSourceError(f"sys.secret needs exactly one of pass, command, file, env{got}")
    whole = spec.get("whole", False)
    if whole is None:
        whole = False
    if not isinstance(whole, bool):
        raise SecretSourceError(f"sys.secret: `whole` must be true or false, got {_kind(whole)}")
    key = given[0]
    value: str | list[str]
    if key == "command":
        value = _argv(spec[key])
    elif key == "pass":
        value = _text(spec, key, "an entry name")
        if value.startswith("-"):
            raise SecretSourceError(
                "sys.secret: `pass` must be an entry name, not an option (it starts with -)"
            )
    elif key == "file":
        value = _text(spec, key, "a path")
    else:
        value = _text(spec, key, "a variable name")
        if "=" in value:
            raise SecretSourceError("sys.secret: `env` must be a variable name: it contains =")
    return {key: value, "whole": whole}


def _source(spec: Mapping[str, Any]) -> tuple[str, Any]:
    for key in SOURCES:
        if spec.get(key) is not None:
            return key, spec[key]
    raise SecretSourceError("sys.secret needs exactly one of pass, command, file, env")


def program(spec: Mapping[str, Any]) -> str | None:
    """The program the source runs, which must be on PATH; None for a file or a variable."""
    key, value = _source(spec)
    if key == "pass":
        return "pass"
    if key == "command":
        return str(value[0])
    return None


def describe(spec: Mapping[str, Any]) -> str:
    """The source in a few words, without the value nor a command's arguments."""
    key, value = _source(spec)
    if key == "command":
        return f"command {value[0]}"
    return f"{key} {value}"


def read(spec: Mapping[str, Any], *, base_dir: str, timeout: float | None = None) -> str:
    """The secret: the source's first line without its newline, or all of it with `whole`.

    `base_dir` is what a relative `file` is relative to; `timeout` (seconds,
    None: no limit) bounds a command's run."""
    spec = validate(spec)
    key, value = _source(spec)
    what = describe(spec)
    if key == "env":
        raw = os.environ.get(value)
        if raw is None:
            raise SecretSourceError(f"sys.secret: the environment variable {value} is not set")
        text = raw
    elif key == "file":
        text = _read_file(value, base_dir)
    else:
        argv = ["pass", "show", value] if key == "pass" else value
        out = _run(argv, what, timeout)
        text = out.decode("utf-8", "surrogateescape")
    return _value(text, what, spec["whole"])


def _value(text: str, what: str, whole: bool) -> str:
    if not text:
        raise SecretSourceError(f"sys.secret: {what} gave an empty value")
    if whole:
        return text
    line = text.split("\n", 1)[0].removesuffix("\r")
    if not line:
        raise SecretSourceError(
            f"sys.secret: {what} gave an empty first line (`whole = true` takes all the lines)"
        )
    return line


def _read_file(path: str, base_dir: str) -> str:
    if path == "~" or path.startswith("~/"):
        full = paths.home() + path[1:]
    else:
        full = os.path.expanduser(path)
    full = os.path.join(base_dir, full)
    try:
        with open(full, "rb") as f:
            data = f.read()
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise SecretSourceError(
            f"sys.secret: cannot read {paths.abbreviate(full)}: {reason}"
        ) from None
    return data.decode("utf-8", "surrogateescape")


def _stdin() -> int | None:
    """The terminal for a manager to ask on (None: inherit fd 0), else /dev/null."""
    try:
        if os.isatty(0):
            return None
    except OSError:
        pass
    return subprocess.DEVNULL


def _run(argv: Sequence[str], what: str, timeout: float | None) -> bytes:
    """The stdout of `argv`, run in its own session; its whole group killed on any exception."""
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=_stdin(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise SecretSourceError(_not_found(argv[0])) from None
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise SecretSourceError(f"sys.secret: cannot run {argv[0]}: {reason}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise SecretSourceError(f"sys.secret: {what} did not finish within {timeout:g} s") from None
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        raise SecretSourceError(_failed(what, proc.returncode, err, out))
    return out


def _not_found(name: str) -> str:
    if "/" in name:
        return f"sys.secret: {name} does not exist"
    if shutil.which(name) is not None:  # found, but its interpreter (#!) is not
        return f"sys.secret: cannot run {name}: the interpreter its first line names is missing"
    return f"sys.secret: the {name} command is not on PATH"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and everything it started (its session's group), and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _failed(what: str, code: int, err: bytes, out: bytes) -> str:
    if code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit {code}"
    said = _tail(err.decode("utf-8", "replace"), out.decode("utf-8", "replace"))
    return f"sys.secret: {what} failed ({how})" + (f": {said}" if said else "")


def _tail(err: str, out: str) -> str:
    """The last non-empty lines of stderr, at most _STDERR_CHARS, with stdout's lines blanked.

    A manager could echo on stderr what it printed on stdout: each stdout line
    of four characters or more is replaced, so the value cannot ride along."""
    for line in sorted({s.strip() for s in out.splitlines()}, key=len, reverse=True):
        if len(line) >= 4:
            err = err.replace(line, "(secret)")
    lines = [s.strip() for s in err.splitlines() if s.strip()]
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        if kept and size + len(line) + 2 > _STDERR_CHARS:
            break
        kept.insert(0, line)
        size += len(line) + 2
    text = "; ".join(kept)
    if len(text) > _STDERR_CHARS:
        text = "..." + text[-(_STDERR_CHARS - 3) :]
    return text
