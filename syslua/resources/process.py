"""The one place syslua starts processes: exec commands, guards, health checks,
undo commands, bind/build actions, the shadow tools behind `user`, and git.

`run` takes a command string: `posix` splits it with shell quoting rules and
runs it directly (no shell); `shell` runs it with `/bin/sh -c`. `run_argv`
takes an argument list that its caller built (`useradd ...`, `git ...`). Every process gets its own
process group, so a timeout kills the command and everything it started.
Only the tails of stdout and stderr are kept (the last `OUTPUT_TAIL` bytes
of each), so a chatty command cannot exhaust memory, nor fill the reports
and snapshots that keep them; lines can be streamed to a callback as they
arrive.

While an apply runs, its runner has a `tracker` (the apply's journal):
each command is recorded there, durably, before it runs (its process
group and when it started, `resources.groups`), so that recovery can stop
what a killed apply left running. The command is started behind a gate
(`/bin/sh` waiting on its stdin) and the gate opens once the record is
durable; when syslua dies before that, the gate reads end-of-file and
exits without running it.

`cancel()` (Ctrl-C during an apply) kills the process group of every
command running and makes every later `run` fail with `Cancelled`, so an
interrupted apply stops at once; the rollback then uses a new Runner.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from syslua.resources.base import ResourceError

if TYPE_CHECKING:
    import subprocess
    import threading

OUTPUT_TAIL = 64 * 1024  # bytes of each stream kept, in results, reports and snapshots
KILL_GRACE = 2.0
# Waits for one line on stdin (syslua's go-ahead), then runs the command
# with stdin from /dev/null, as an ungated one; end-of-file: never runs it.
_GATE = 'read -r go || exit 125; exec "$@" </dev/null'


class Tracker(Protocol):
    """Where a runner records the commands it starts (the apply's journal)."""

    def started(self, pgid: int, start: int | None, boot: str | None) -> None:
        """Record it durably: it runs only once this returns."""

    def ended(self, pgid: int) -> None:
        """Its whole process group is gone."""


class CannotStart(ResourceError):
    """The command could not be started at all (not found, not executable, bad cwd)."""


class Cancelled(ResourceError):
    """The run was interrupted: the command was killed, or not started."""

    def __init__(self) -> None:
        super().__init__("interrupted")


class ProcessResult:
    """How a process ended, with the tails of its output. Read-only. (A plain
    class: a dataclass costs every start half a millisecond to generate its
    methods, and nothing compares results.)"""

    __slots__ = ("exit_code", "stdout", "stderr", "duration", "timed_out")

    def __init__(
        self,
        exit_code: int,
        stdout: str,  # tail
        stderr: str,  # tail
        duration: float,
        timed_out: bool = False,
    ) -> None:
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr
        self.duration = duration
        self.timed_out = timed_out

    def __repr__(self) -> str:
        return (
            f"ProcessResult(exit_code={self.exit_code!r}, stdout={self.stdout!r}, "
            f"stderr={self.stderr!r}, duration={self.duration!r}, timed_out={self.timed_out!r})"
        )

    def describe(self) -> str:
        """`exit code 3` / `timed out after 5s`, with the stderr tail when there is one."""
        head = (
            f"timed out after {self.duration:.0f}s"
            if self.timed_out
            else f"exit code {self.exit_code}"
        )
        tail = self.stderr.strip() or self.stdout.strip()
        if tail:
            lines = tail.splitlines()[-10:]
            head += "\n" + "\n".join("    " + ln for ln in lines)
        return head


def argv_for(command: str, provider: str) -> list[str]:
    if provider == "shell":
        return ["/bin/sh", "-c", command]
    import shlex  # here: only commands split by the posix provider need it

    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise CannotStart(f"cannot split command {command!r}: {e}") from e
    if not argv:
        raise CannotStart("empty command")
    return argv


def program_name(command: str, provider: str) -> str | None:
    """The program a command runs (basename), for DAG edges to packages."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return os.path.basename(words[0]) if words else None


class Runner:
    """Runs commands; the only subprocess runner in syslua."""

    def __init__(self) -> None:
        self.cancelled = False
        self._groups: set[int] = set()  # process groups of the commands running now
        self.tracker: Tracker | None = None

    def cancel(self) -> None:
        """Stop: SIGTERM every running command's process group (SIGKILL what is
        left after KILL_GRACE) and start no new command. Safe to call from a
        signal handler: it takes no lock and does not wait."""
        import threading

        self.cancelled = True
        groups = list(self._groups)
        for pgid in groups:
            _signal_group(pgid, signal.SIGTERM)
        if groups:
            timer = threading.Timer(KILL_GRACE, self._kill_left, args=(groups,))
            timer.daemon = True
            timer.start()

    def _kill_left(self, groups: list[int]) -> None:
        for pgid in groups:
            if pgid in self._groups:
                _signal_group(pgid, signal.SIGKILL)

    def run(
        self,
        command: str,
        *,
        provider: str = "posix",
        cwd: str | None = None,
        environment: Sequence[str] = (),
        path: str | None = None,
        timeout: float | None = None,
        on_line: Callable[[str, str], None] | None = None,
    ) -> ProcessResult:
        """Run a command string as an exec declares it (split for `posix`, `/bin/sh -c` for `shell`)."""
        return self.run_argv(
            argv_for(command, provider),
            cwd=cwd,
            environment=environment,
            path=path,
            timeout=timeout,
            on_line=on_line,
        )

    def run_argv(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        environment: Sequence[str] = (),
        path: str | None = None,
        timeout: float | None = None,
        on_line: Callable[[str, str], None] | None = None,
    ) -> ProcessResult:
        """Run a program with an argument list; a bare program name is looked up in PATH.

        `environment` entries (`KEY=value`) and `path` (PATH) are added to this
        process's environment. The result keeps the tails of stdout and stderr.
        """
        import subprocess  # imported here: a plan of plain files never starts a process

        argv, env = _resolved(argv, environment, path)
        if cwd is not None and not os.path.isdir(cwd):
            raise CannotStart(f"working directory does not exist: {cwd}")
        if self.cancelled:
            raise Cancelled()
        start = time.monotonic()
        tracker = self.tracker
        proc = (
            _start(argv, cwd, env) if tracker is None else _start_tracked(argv, cwd, env, tracker)
        )
        # Registered before `cancelled` is read again, while `cancel` sets the
        # flag before reading the set: one of the two sees the other.
        self._groups.add(proc.pid)
        if self.cancelled:
            _signal_group(proc.pid, signal.SIGTERM)
        tails, readers = _read_output(proc, on_line)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            self._groups.discard(proc.pid)
            if tracker is not None and _gone(proc.pid):
                tracker.ended(proc.pid)  # else something it started runs on: recovery stops it
        for t in readers:
            t.join(timeout=KILL_GRACE)
        if self.cancelled and proc.returncode is not None and proc.returncode < 0:
            raise Cancelled()  # killed by `cancel`, not finished
        return ProcessResult(
            exit_code=proc.returncode if proc.returncode is not None else -1,
            stdout=tails["stdout"].text(),
            stderr=tails["stderr"].text(),
            duration=time.monotonic() - start,
            timed_out=timed_out,
        )


def _resolved(
    argv: Sequence[str], environment: Sequence[str], path: str | None
) -> tuple[list[str], dict[str, str]]:
    """The argument list with the program's full path, and the environment it runs in."""
    if not argv:
        raise CannotStart("empty command")
    argv = list(argv)  # a copy: argv[0] becomes the full path
    env = dict(os.environ)
    for entry in environment:
        key, _, value = entry.partition("=")
        env[key] = value
    if path:
        env["PATH"] = path
    if "/" not in argv[0]:
        found = shutil.which(argv[0], path=env.get("PATH", os.defpath))
        if found is None:
            raise CannotStart(f"command not found: {argv[0]}")
        argv[0] = found
    return argv, env


def _start(
    argv: list[str], cwd: str | None, env: dict[str, str], stdin: int | None = None
) -> subprocess.Popen[bytes]:
    """The process, in a session (a process group) of its own; CannotStart when it cannot be."""
    import subprocess

    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as e:
        raise CannotStart(f"command not found: {argv[0]}") from e
    except PermissionError as e:
        raise CannotStart(f"cannot execute {argv[0]}: permission denied") from e
    except OSError as e:
        raise CannotStart(f"cannot start {argv[0]}: {e.strerror}") from e


def _start_tracked(
    argv: list[str], cwd: str | None, env: dict[str, str], tracker: Tracker
) -> subprocess.Popen[bytes]:
    """`_start` behind the gate: the command runs once `tracker` has recorded it."""
    from syslua.resources import groups

    _check_executable(argv[0])
    read_end, write_end = os.pipe()
    try:
        proc = _start(["/bin/sh", "-c", _GATE, "syslua-gate", *argv], cwd, env, stdin=read_end)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    try:
        tracker.started(proc.pid, groups.start_time(proc.pid), groups.boot_id())
        os.write(write_end, b"go\n")
    except BaseException:
        os.close(write_end)  # the gate reads end-of-file: the command never runs
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        raise
    os.close(write_end)
    return proc


def _check_executable(program: str) -> None:
    """The errors `_start` gives for a program that cannot run, before the gate
    (which would only exit 126 or 127)."""
    if not os.path.exists(program):
        raise CannotStart(f"command not found: {program}")
    if os.path.isdir(program) or not os.access(program, os.X_OK):
        raise CannotStart(f"cannot execute {program}: permission denied")


def _gone(pgid: int) -> bool:
    """Has every process of the group ended?"""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _read_output(
    proc: subprocess.Popen[bytes], on_line: Callable[[str, str], None] | None
) -> tuple[dict[str, _Tail], list[threading.Thread]]:
    """Threads that read stdout and stderr as they come (to `on_line`), keeping their tails."""
    import threading

    tails = {"stdout": _Tail(), "stderr": _Tail()}
    readers = [
        threading.Thread(
            target=_pump, args=(getattr(proc, name), name, tails[name], on_line), daemon=True
        )
        for name in ("stdout", "stderr")
    ]
    for t in readers:
        t.start()
    return tails, readers


class _Tail:
    """The last `OUTPUT_TAIL` bytes of a stream."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def add(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) > 2 * OUTPUT_TAIL:  # trimmed now and then, not on every line
            del self.buf[:-OUTPUT_TAIL]

    def text(self) -> str:
        return tail(self.buf)


def tail(data: bytes | bytearray | str) -> str:
    """The last OUTPUT_TAIL bytes of `data` as text, starting on a whole UTF-8 character."""
    limit = OUTPUT_TAIL
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else bytes(data)
    if len(raw) <= limit:
        return raw.decode("utf-8", "replace")
    cut = raw[-limit:]
    start = 0
    while start < 3 and start < len(cut) and 0x80 <= cut[start] < 0xC0:
        start += 1  # a character cut in half at the front
    return cut[start:].decode("utf-8", "replace")


def _pump(stream, name: str, kept: _Tail, on_line) -> None:  # type: ignore[no-untyped-def]
    try:
        # A line longer than the tail comes in pieces: memory stays bounded.
        for raw in iter(lambda: stream.readline(OUTPUT_TAIL), b""):
            kept.add(raw)
            if on_line is not None:
                on_line(name, raw.decode("utf-8", "replace").rstrip("\n"))
    finally:
        stream.close()


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


def _kill_group(proc: subprocess.Popen) -> None:  # type: ignore[type-arg]
    """SIGTERM the process group, then SIGKILL what is left after a grace period."""
    import subprocess

    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
