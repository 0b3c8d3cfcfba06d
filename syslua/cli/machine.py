"""The machine contract: the version of the JSON that `--json` prints.

`sys plan --json`, the summary event of `sys apply --json` (and of rollback
and destroy, which report the same way), `sys status --json` and each object
of `sys history --json` carry `"format": JSON_FORMAT`, and so does the one
object of every other command's `--json` (graph, diff, snapshot show, gc, add,
destroy --dry-run, update, doctor, info). docs/json.md documents
every field, and docs/json-schema/ holds the schemas a test checks real output
against. Adding a field keeps the number; removing or renaming one, or
changing what a field means, bumps it.
"""

from __future__ import annotations

from typing import Any

JSON_FORMAT = 1


def refused_summary(reason: str, error: str, **fields: Any) -> dict[str, Any]:
    """The summary a run prints with `--json` when it refuses or stops before it
    changed anything: `result` "refused", and `refused`, the reason a script
    tells one from another (`config_error`, `edited_paths`, `cannot_apply`,
    `lock_held`, ...; docs/json.md lists them). It carries every field of
    the other summaries, so readers need no special case; `fields` fills
    in what a refusal after planning knows (counts, the edited paths)."""
    summary: dict[str, Any] = {
        "event": "summary",
        "format": JSON_FORMAT,
        "result": "refused",
        "refused": reason,
        "counts": {"changed": 0, "unchanged": 0, "failed": 0, "skipped": 0, "noop": 0},
        "duration": 0.0,
        "snapshot": None,
        "no_changes": False,
        "rolled_back": False,
        "restore_failed": False,
        "failures": [],
        "kept_edits": None,
        "held": [],
        "error": error,
        "not_undone": [],
        "edited": [],
        "cannot_apply": [],
    }
    summary.update(fields)
    return summary
