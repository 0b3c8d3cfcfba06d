"""Health checks with Nagios exit codes: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.

A check is retried up to `tries` times with `try_sleep` between tries until
it is OK. WARNING is reported but is not a failure; CRITICAL and UNKNOWN
(and any other code, or a check that cannot start or times out) fail the item.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from syslua.resources.process import Cancelled, CannotStart, Runner

STATES = {0: "OK", 1: "WARNING", 2: "CRITICAL", 3: "UNKNOWN"}


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    state: str  # OK | WARNING | CRITICAL | UNKNOWN
    output: str
    tries: int

    @property
    def failed(self) -> bool:
        return self.state not in ("OK", "WARNING")

    def describe(self) -> str:
        text = f"health check {self.name}: {self.state}"
        if self.output:
            text += f" ({self.output})"
        return text


def run_checks(checks: Any, runner: Runner, *, provider: str = "shell") -> list[CheckResult]:
    return [run_check(c, runner, provider=provider) for c in checks]


def run_check(check: Any, runner: Runner, *, provider: str = "shell") -> CheckResult:
    command = check["command"]
    name = check.get("name") or command.split()[0].rsplit("/", 1)[-1]
    tries = int(check.get("tries", 1))
    sleep = float(check.get("try_sleep", 1))
    timeout = check.get("timeout")
    state, output = "UNKNOWN", ""
    for attempt in range(1, tries + 1):
        try:
            result = runner.run(command, provider=provider, timeout=timeout)
            if result.timed_out:
                state, output = "UNKNOWN", f"timed out after {timeout}s"
            else:
                state = STATES.get(result.exit_code, "UNKNOWN")
                text = result.stdout.strip() or result.stderr.strip()
                output = text.splitlines()[-1] if text else ""
                if result.exit_code not in STATES:
                    output = f"exit code {result.exit_code}" + (f": {output}" if output else "")
        except CannotStart as e:
            state, output = "UNKNOWN", str(e)
        except Cancelled as e:  # the apply was interrupted: no more tries
            return CheckResult(name, "UNKNOWN", str(e), attempt)
        if state == "OK":
            return CheckResult(name, state, output, attempt)
        if attempt < tries and not runner.cancelled:
            time.sleep(sleep)
    return CheckResult(name, state, output, tries)
