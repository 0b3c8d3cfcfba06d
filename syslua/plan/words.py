"""How a plan is said in one line: its summary, and the verdict when nothing
changes. Light to import: `syslua/quick.py` says them without the planner."""

from __future__ import annotations

from collections.abc import Mapping

NO_CHANGES = "No changes. The machine matches the configuration."


def plan_summary(c: Mapping[str, int]) -> str:
    """The plan's last line: what it creates, updates, runs and removes."""
    summary = f"Plan: {c['create']} to create, {c['update']} to update, "
    if c["run"]:
        summary += f"{c['run']} to run, "
    summary += f"{c['remove']} to remove, {c['unchanged']} unchanged"
    if c["noop"]:
        summary += f", {c['noop']} would change in noop children"
    if c["fail"]:
        summary += f", {c['fail']} cannot be applied"
    if c["edited"]:
        summary += f", {c['edited']} edited since the last apply"
    if c.get("held"):  # `sys apply --overwrite PATH` naming others: not updates
        summary += f", {c['held']} left as {'it is' if c['held'] == 1 else 'they are'}"
    return summary + "."
