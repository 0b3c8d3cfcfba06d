"""The systemd provider of the service kind: `systemctl`, through the one runner.

| `is-active` says        | the service is                    |
|-------------------------|-----------------------------------|
| active, reloading       | running                           |
| activating              | starting (running once it is up)  |
| inactive, failed, deactivating | stopped                    |

| `is-enabled` says                                   | enabled? |
|-----------------------------------------------------|----------|
| enabled, enabled-runtime, alias, static, indirect, generated, transient | yes |
| disabled, linked, linked-runtime, masked, masked-runtime | no  |
| nothing (`No such file or directory`)               | the unit does not exist |

Every `systemctl` this process runs takes one lock (`LOCK`): the manager
handles one change at a time from us, and a status read never sees a
half-made change of another item. User scope talks to the user's own
manager (`systemctl --user`), found through `XDG_RUNTIME_DIR` (set to
`/run/user/UID` when the environment lacks it).
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

from syslua.resources.base import ResourceError

if TYPE_CHECKING:
    from syslua.resources.process import ProcessResult, Runner

NAME = "systemd"
LOCK = threading.Lock()
RUNNING = frozenset({"active", "reloading"})
STARTING = frozenset({"activating"})
ENABLED = frozenset(
    {"enabled", "enabled-runtime", "alias", "static", "indirect", "generated", "transient"}
)
DISABLED = frozenset({"disabled", "linked", "linked-runtime", "masked", "masked-runtime"})
NOT_FOUND = "not-found"
DEFAULT_START_TIMEOUT = 90.0  # systemd's DefaultTimeoutStartSec
UNIT_SUFFIXES = (
    ".service",
    ".socket",
    ".timer",
    ".path",
    ".target",
    ".mount",
    ".automount",
    ".swap",
    ".slice",
    ".scope",
    ".device",
)
# Where a unit's file may be, by scope (the user's `~/.config/systemd/user` is
# added from the home at run time).
SYSTEM_DIRS = (
    "/etc/systemd/system",
    "/run/systemd/system",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
)


class State:
    """What systemd says of a unit now. Read-only."""

    __slots__ = ("active", "enabled")

    def __init__(self, active: str, enabled: str) -> None:
        self.active = active  # is-active's word
        self.enabled = enabled  # is-enabled's word, or NOT_FOUND

    @property
    def running(self) -> bool:
        return self.active in RUNNING

    @property
    def is_enabled(self) -> bool:
        return self.enabled in ENABLED

    @property
    def exists(self) -> bool:
        return self.enabled != NOT_FOUND

    def shown(self) -> str:
        """`running, enabled`: how plans and drift say it."""
        run = "running" if self.running else ("starting" if self.active in STARTING else "stopped")
        return f"{run}, {self.enabled}" if self.exists else "no such unit"


def unit_name(name: str) -> str:
    """`nginx` is `nginx.service`; a name with a unit suffix stays as it is."""
    return name if name.endswith(UNIT_SUFFIXES) else f"{name}.service"


def _argv(scope: str, *args: str) -> list[str]:
    return ["systemctl", "--user" if scope == "user" else "--system", "--no-pager", *args]


def _environment(scope: str) -> list[str]:
    if scope == "user" and not os.environ.get("XDG_RUNTIME_DIR"):
        return [f"XDG_RUNTIME_DIR=/run/user/{os.getuid()}"]
    return []


def _run(runner: Runner, scope: str, *args: str, timeout: float | None = 120) -> ProcessResult:
    from syslua.resources.process import CannotStart

    try:
        return runner.run_argv(
            _argv(scope, *args), environment=_environment(scope), timeout=timeout
        )
    except CannotStart as e:
        raise ResourceError(f"cannot run systemctl: {e}") from None


def status(runner: Runner, name: str, scope: str) -> State:
    """The unit's active and enabled states."""
    unit = unit_name(name)
    with LOCK:
        active = _run(runner, scope, "is-active", unit)
        enabled = _run(runner, scope, "is-enabled", unit)
    word = (active.stdout.strip().splitlines() or [""])[-1]
    if not word:  # no manager to ask: not booted with systemd, no user manager
        problem = _first(active.stderr) or "no answer"
        manager = "your user's systemd" if scope == "user" else "systemd"
        raise ResourceError(f"cannot ask {manager} about {unit}: {problem}")
    state = (enabled.stdout.strip().splitlines() or [""])[-1]
    if not state:
        problem = _last(enabled.stderr)
        if "No such file" in problem or "not found" in problem or not problem:
            return State(word, NOT_FOUND)
        raise ResourceError(f"systemctl is-enabled {unit}: {problem}")
    return State(word, state)


def act(runner: Runner, name: str, scope: str, verb: str) -> ProcessResult:
    """`systemctl start|stop|restart|enable|disable NAME`; a failure is the item's."""
    unit = unit_name(name)
    with LOCK:
        result = _run(runner, scope, verb, unit, timeout=None)
    if result.exit_code != 0:
        raise ResourceError(
            f"systemctl {verb} {unit} failed (exit {result.exit_code}): "
            f"{_last(result.stderr) or _last(result.stdout) or 'no message'}"
        )
    return result


def reload(runner: Runner, scope: str) -> None:
    """`systemctl daemon-reload`: the manager reads changed unit files again."""
    with LOCK:
        result = _run(runner, scope, "daemon-reload")
    if result.exit_code != 0:
        raise ResourceError(f"systemctl daemon-reload failed: {_last(result.stderr)}")


def needs_reload(runner: Runner, name: str, scope: str) -> bool:
    """Does the manager say the unit's file changed since it last read it?"""
    with LOCK:
        result = _run(
            runner, scope, "show", "--property=NeedDaemonReload", "--value", unit_name(name)
        )
    return result.stdout.strip() == "yes"


def start_timeout(runner: Runner, name: str, scope: str) -> float:
    """The unit's own start timeout (TimeoutStartUSec), in seconds."""
    with LOCK:
        result = _run(
            runner, scope, "show", "--property=TimeoutStartUSec", "--value", unit_name(name)
        )
    return _seconds(result.stdout.strip())


def settle(runner: Runner, name: str, scope: str, limit: float) -> State:
    """Wait while the unit is `activating` (up to `limit` seconds); its state then."""
    deadline = time.monotonic() + limit
    pause = 0.05
    while True:
        state = status(runner, name, scope)
        if state.active not in STARTING or time.monotonic() >= deadline:
            return state
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def unit_dirs(scope: str, home: str) -> tuple[str, ...]:
    """Where this scope's unit files are."""
    if scope == "user":
        return (
            f"{home}/.config/systemd/user",
            "/etc/systemd/user",
            "/usr/lib/systemd/user",
            "/lib/systemd/user",
        )
    return SYSTEM_DIRS


def _seconds(text: str) -> float:
    """`1min 30s`, `90s`, `500ms`, `infinity` (systemd's time spans) in seconds."""
    if not text or text == "infinity":
        return DEFAULT_START_TIMEOUT if not text else 24 * 3600.0
    units = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
    total = 0.0
    for part in text.split():
        number = part.rstrip("abcdefghijklmnopqrstuvwxyz")
        unit = part[len(number) :] or "s"
        try:
            total += float(number) * units.get(unit, 1.0)
        except ValueError:
            return DEFAULT_START_TIMEOUT
    return total or DEFAULT_START_TIMEOUT


def _last(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _first(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""
