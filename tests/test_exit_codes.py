"""Exit codes a script can use (issue 23, point 8; SPEC section 8).

Every exit code is in one table in docs/cli.md and at the end of `sys
--help`, and every refusal's `--json` output names its reason in `refused`,
so a script tells a broken config from edits made by hand without reading
the message. Each reason is checked through `sys apply --json` (and `sys
plan --json` where it applies), with the exit code that goes with it, and
nothing changed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from conftest import HEADER, ROOT, apply_ok, events, out, tree

from syslua.cli import EXIT_CODES

DOC = ROOT / "docs" / "cli.md"
JSON_DOC = ROOT / "docs" / "json.md"


def refusal(p: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The last JSON line a run printed: its summary."""
    last = events(p)[-1]
    assert last["event"] == "summary" and last["result"] == "refused", out(p)
    return last


def test_one_table_in_the_docs_and_in_help(sysenv) -> None:
    text = DOC.read_text()
    table = text[text.index("## Exit codes") :]
    table = table[: table.index("\n\n", table.index("| code |"))]
    documented = [int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M)]
    assert documented == [code for code, _ in EXIT_CODES]
    p = sysenv.run("--help")
    assert p.returncode == 0
    tail = p.stdout[p.stdout.index("Exit codes") :]
    shown = [int(m) for m in re.findall(r"^    (\d+) ", tail, re.M)]
    assert shown == [code for code, _ in EXIT_CODES], tail
    assert all(len(line) <= 80 for line in tail.splitlines()), tail


def test_json_doc_lists_every_reason() -> None:
    schema = json.loads((ROOT / "docs" / "json-schema" / "apply-summary.json").read_text())
    reasons = schema["properties"]["refused"]["enum"]
    doc = JSON_DOC.read_text()
    for reason in reasons:
        assert re.search(rf"^\| `{reason}` \| \d+ \|", doc, re.M), reason


def test_config_error(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + 'file { path = "relative", content = "x" }\n')
    for command in ("apply", "plan"):
        p = sysenv.run(command, "--json")
        assert p.returncode == 2, out(p)
        s = refusal(p)
        assert s["refused"] == "config_error", s
        assert s["error"].startswith("sys.lua:3: "), s
        assert "Error: sys.lua:3:" in p.stderr
    assert tree(sysenv.home) == {}


def test_usage_error(sysenv) -> None:
    p = sysenv.run("apply", "--json", "no-such.lua")
    assert p.returncode == 2, out(p)
    assert refusal(p)["refused"] == "usage_error"


def test_empty_config(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a", content = "a\\n" }\n')
    sysenv.write("sys.lua", "-- nothing\n")
    p = sysenv.run("apply", "--json")
    assert p.returncode == 2, out(p)
    assert refusal(p)["refused"] == "empty_config"
    assert (sysenv.home / "a").exists()


def test_edited_paths(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a", content = "a\\n" }\n')
    (sysenv.home / "a").write_text("mine\n")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "b\\n" }\n')
    p = sysenv.run("apply", "--json")
    assert p.returncode == 2, out(p)
    s = refusal(p)
    assert s["refused"] == "edited_paths" and s["edited"][0]["label"] == "~/a", s
    p = sysenv.run("plan", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["refused"] == "edited_paths", out(p)
    assert (sysenv.home / "a").read_text() == "mine\n"


def test_cannot_apply(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + 'local m = exec { name = "mark", command = "touch " .. sys.user.home .. "/marker" }\n'
        + 'file { path = "~/a", source = "./missing.txt", depends_on = { m } }\n',
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    s = refusal(p)
    assert s["refused"] == "cannot_apply", s
    [item] = s["cannot_apply"]
    assert item["label"] == "~/a" and item["declared_at"] == "sys.lua:4", item
    assert item["message"].startswith("source file not found"), item
    assert [e["event"] for e in events(p)] == ["summary"], "nothing ran, nothing was reported"
    p = sysenv.run("plan", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["refused"] == "cannot_apply", out(p)
    assert tree(sysenv.home) == {}


def test_not_current_config(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a", content = "a\\n" }\n', name="main.lua")
    other = sysenv.work / "elsewhere"
    other.mkdir()
    (other / "sys.lua").write_text(HEADER + 'file { path = "~/b", content = "b\\n" }\n')
    p = sysenv.run("apply", "--json", cwd=other)
    assert p.returncode == 2, out(p)
    assert refusal(p)["refused"] == "not_current_config"


def test_state_error(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "a\\n" }\n')
    sysenv.root.mkdir(exist_ok=True)
    (sysenv.root / "state").write_text("not a directory\n")
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    assert refusal(p)["refused"] == "state_error"
    assert not (sysenv.home / "a").exists()


@pytest.fixture
def holder(sysenv):  # type: ignore[no-untyped-def]
    lock = sysenv.root / "state" / "lock"
    lock.parent.mkdir(parents=True)
    code = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "locked"
    yield p
    assert p.stdin is not None
    p.stdin.close()
    p.wait(timeout=10)


def test_lock_held(sysenv, holder) -> None:
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "a\\n" }\n')
    p = sysenv.spawn("apply", "--json")
    assert p.returncode == 3, out(p)
    assert refusal(p)["refused"] == "lock_held"
    assert not (sysenv.home / "a").exists()
