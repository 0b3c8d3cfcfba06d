"""The machine contract (SPEC section 8; issue 15, item 2).

`sys plan --json`, the summary event of `sys apply --json`, `sys status
--json` and each object of `sys history --json` carry `"format": 1` and match
the JSON Schemas kept in docs/json-schema/, whose every field docs/json.md
describes. Real output is checked against them, in every shape it takes (a
first plan, removals, edits, a failed apply, a refused one, drift), and the
exit codes are SPEC section 8's.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import HEADER, ROOT, events, out, tree

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test extra")

SCHEMAS = ROOT / "docs" / "json-schema"
DOC = ROOT / "docs" / "json.md"


def check(name: str, data: Any) -> None:
    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path)
    )
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def summary(p: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    found = [e for e in events(p) if e.get("event") == "summary"]
    assert len(found) == 1, out(p)
    return found[0]


CONFIG = (
    HEADER
    + """\
file { path = "~/a.txt", content = "one\\n" }
file { path = "~/gone.txt", content = "soon removed\\n" }
exec { name = "mark", command = "touch ~/mark", provider = "shell", creates = "~/mark" }
env { EDITOR = "vi" }
"""
)


def test_plan_apply_status_history_match_their_schemas(sysenv) -> None:
    (sysenv.home / "a.txt").write_text("there before\n")  # taken over: `takeover`, a diff
    sysenv.write("sys.lua", CONFIG)
    p = sysenv.run("plan", "--json")
    assert p.returncode == 0, out(p)
    first = json.loads(p.stdout)
    check("plan", first)
    assert first["format"] == 1 and first["plan"]["changes"] is True
    by_id = {e["id"]: e for e in first["plan"]["items"]}
    entry = by_id[f"file#{sysenv.home}/a.txt"]
    assert entry["takeover"] is True and "+one" in entry["diff"], entry
    # the diff's headers as docs/json.md describes them
    assert entry["diff"].startswith("--- ~/a.txt (current)\n+++ ~/a.txt (desired)\n"), entry
    assert by_id["exec#mark"]["irreversible"] is True

    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    s = summary(p)
    check("apply-summary", s)
    assert s["format"] == 1 and s["result"] == "ok" and s["counts"]["changed"] == 4, s

    again = sysenv.run("apply", "--json")
    s = summary(again)
    check("apply-summary", s)
    assert s["no_changes"] is True and s["counts"]["changed"] == 0, s

    # removals and an edit made by hand
    sysenv.write("sys.lua", CONFIG.replace('file { path = "~/gone.txt"', '-- file { path = "~/x"'))
    (sysenv.home / "a.txt").write_text("edited by hand\n")
    p = sysenv.run("plan", "--json", "--exit-code")
    assert p.returncode == 1, out(p)  # an edit: `sys apply` would refuse (issue 23, point 1)
    later = json.loads(p.stdout)
    check("plan", later)
    assert later["refused"] == "edited_paths", later
    assert [e["action"] for e in later["plan"]["removals"]] == ["remove"]
    edited = {e["id"]: e for e in later["plan"]["items"]}[f"file#{sysenv.home}/a.txt"]
    assert edited["edited"] and edited["symbol"] == "!" and "edit_diff" in edited, edited

    p = sysenv.run("status", "--json", "--exit-code")
    assert p.returncode == 4, out(p)
    st = json.loads(p.stdout)
    check("status", st)
    assert st["format"] == 1 and [d["kind"] for d in st["drift"]] == ["edited"], st

    # refused: exit 2, nothing changed
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--json")
    assert p.returncode == 2, out(p)
    s = summary(p)
    check("apply-summary", s)
    assert s["result"] == "refused" and s["edited"][0]["label"] == "~/a.txt", s
    assert s["refused"] == "edited_paths" and s["cannot_apply"] == [], s
    assert s["error"] == "Refusing to overwrite 1 path edited since the last apply", s
    assert s["kept_edits"] is None and s["not_undone"] == [] and s["snapshot"] is None, s
    assert tree(sysenv.home) == before

    p = sysenv.run("apply", "--json", "--force", "-m", "forced")
    assert p.returncode == 0, out(p)
    check("apply-summary", summary(p))
    assert summary(p)["kept_edits"], summary(p)

    p = sysenv.run("rollback", "--json")
    assert p.returncode == 0, out(p)
    check("apply-summary", summary(p))

    p = sysenv.run("history", "--json")
    assert p.returncode == 0, out(p)
    rows = json.loads(p.stdout)
    check("history", rows)
    assert isinstance(rows, list) and all(r["format"] == 1 for r in rows)
    assert {r["kind"] for r in rows} >= {"apply", "rollback", "edits"}, rows

    p = sysenv.run("status", "--json")
    check("status", json.loads(p.stdout))


def test_failed_apply_summary_and_exit_1(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/a.txt", content = "a\\n" }\n'
        + 'exec { name = "boom", command = "echo bad >&2; exit 3", provider = "shell",'
        + ' depends_on = { "file#~/a.txt" } }\n',
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    s = summary(p)
    check("apply-summary", s)
    assert s["result"] == "failed" and s["rolled_back"] is True and s["snapshot"] is None, s
    assert [f["id"] for f in s["failures"]] == ["exec#boom"], s
    assert tree(sysenv.home) == before


def test_empty_history_and_status_match(sysenv) -> None:
    p = sysenv.run("history", "--json")
    assert p.returncode == 0 and json.loads(p.stdout) == [], out(p)
    p = sysenv.run("status", "--json")
    st = json.loads(p.stdout)
    check("status", st)
    assert st == {
        "format": 1,
        "snapshot": None,
        "drift": [],
        "unrestored": [],
        "store": None,
        "config": None,
        "pending": [],
    }


@pytest.fixture
def lock_holder(sysenv) -> Iterator[subprocess.Popen[str]]:
    lock = sysenv.root / "state" / "lock"
    lock.parent.mkdir(parents=True)
    code = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'pid %d (test holder)\\n' % os.getpid()); "
        "print('locked', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    try:
        yield holder
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)


def test_exit_codes_of_section_8(sysenv, lock_holder) -> None:
    """0 ok, 2 configuration error (stdout: only the summary naming the reason,
    issue 23 point 8), 3 lock held (naming the holder's pid), 4 pending
    changes; 1 is above."""
    sysenv.write("bad.lua", HEADER + 'file { path = "relative", content = "x" }\n')
    p = sysenv.run("plan", "--json", "bad.lua")
    assert p.returncode == 2 and "Error:" in p.stderr, out(p)
    s = json.loads(p.stdout)
    check("apply-summary", s)
    assert s["result"] == "refused" and s["refused"] == "config_error", s
    p = sysenv.run("apply", "--json", "--nope")
    assert p.returncode == 2, out(p)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
    p = sysenv.run("plan", "--exit-code", "-q")
    assert p.returncode == 4, out(p)
    p = sysenv.spawn("apply", "--json")
    assert p.returncode == 3 and f"pid {lock_holder.pid}" in p.stderr, out(p)
    check("apply-summary", summary(p))
    assert summary(p)["refused"] == "lock_held", out(p)
    assert not (sysenv.home / "a.txt").exists()


def test_docs_name_every_field_of_every_schema() -> None:
    doc = DOC.read_text()

    def names(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                yield key
                yield from names(value)
            for key in ("items", "$defs", "oneOf", "allOf", "then"):
                sub = node.get(key)
                if isinstance(sub, dict):
                    yield from (
                        names(sub)
                        if key != "$defs"
                        else (n for v in sub.values() for n in names(v))
                    )
                elif isinstance(sub, list):
                    for s in sub:
                        yield from names(s)

    for path in sorted(SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text())
        assert path.name in doc, f"docs/json.md does not link {path.name}"
        missing = sorted({n for n in names(schema) if not re.search(rf"`{re.escape(n)}`", doc)})
        assert not missing, f"docs/json.md does not describe {missing} of {path.name}"


def test_format_is_the_one_number(sysenv) -> None:
    from syslua.cli.machine import JSON_FORMAT

    for path in SCHEMAS.glob("*.json"):
        text = path.read_text()
        assert '"format": {"const": 1}' in text and JSON_FORMAT == 1, path
    assert Path(DOC).exists()


def test_every_other_json_output_carries_the_format(sysenv) -> None:
    """SPEC section 8: machine output carries "format": 1, not only the four
    outputs with a schema."""
    sysenv.write("sys.lua", CONFIG)
    assert sysenv.run("apply", "-q").returncode == 0
    sysenv.write("sys.lua", CONFIG.replace('"one\\n"', '"two\\n"'))
    assert sysenv.run("apply", "-q").returncode == 0
    (sysenv.home / "b.txt").write_text("mine\n")
    outputs = {
        "diff": sysenv.run("diff", "--json"),
        "snapshot show": sysenv.run("snapshot", "show", "--json"),
        "gc": sysenv.run("gc", "--dry-run", "--json"),
        "destroy --dry-run": sysenv.run("destroy", "--dry-run", "--json"),
        "add": sysenv.run("add", "--json", str(sysenv.home / "b.txt")),
    }
    for name, p in outputs.items():
        assert p.returncode == 0, (name, out(p))
        data = json.loads(p.stdout)
        assert data["format"] == 1, (name, data)
