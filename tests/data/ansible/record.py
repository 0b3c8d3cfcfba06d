"""An Ansible callback for tests/test_ansible.py: every task result of every
host, in order, written as JSON to $SYSLUA_TEST_RECORD when the playbook ends.
The default callback still prints the run (and its recap) on stdout."""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "record"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self.results: list[dict[str, Any]] = []

    def _add(self, result: Any, status: str) -> None:
        self.results.append(
            {
                "host": result._host.get_name(),
                "task": result._task.get_name(),
                "status": status,
                "result": json.loads(json.dumps(result._result, default=str)),
            }
        )

    def v2_runner_on_ok(self, result: Any, **kwargs: Any) -> None:
        self._add(result, "ok")

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False, **kwargs: Any) -> None:
        self._add(result, "failed")

    def v2_runner_on_skipped(self, result: Any, **kwargs: Any) -> None:
        self._add(result, "skipped")

    def v2_runner_on_unreachable(self, result: Any, **kwargs: Any) -> None:
        self._add(result, "unreachable")

    def v2_playbook_on_stats(self, stats: Any) -> None:
        with open(os.environ["SYSLUA_TEST_RECORD"], "w", encoding="utf-8") as f:
            json.dump(self.results, f, indent=1)
