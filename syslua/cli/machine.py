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

JSON_FORMAT = 1
