"""One definition of an item, one count (issue 23, point 2).

The plan's lines, its last line (`Plan: N to create, ...`), `--json`
`counts`, the live `[n/N]` of `sys apply`, its summary table, its `--json`
summary and `sys history` count the same things: a file tree is one item
(its members are listed under it with -v, and counted nowhere), a parent
directory created on the way is listed and counted nowhere, an `apply`
child run for the first time is one item that runs (`+ apply child.lua:
will run`), and `[n/N]` numbers the items that change, so its numbers never
skip. Each scenario runs in two identical worlds, one with human output and
one with `--json`, and every pair of counts is checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import HEADER, SysEnv, events, history, new_env, ok, out, put

PLAN = re.compile(
    r"^Plan: (\d+) to create, (\d+) to update, (?:(\d+) to run, )?(\d+) to remove, "
    r"(\d+) unchanged(?:, (\d+) would change in noop children)?(?:, (\d+) cannot be applied)?"
    r"(?:, (\d+) edited since the last apply)?(?:, (\d+) left as (?:it is|they are))?\.$"
)
KEYS = ("create", "update", "run", "remove", "unchanged", "noop", "fail", "edited", "held")
NUMBER = re.compile(r"^  \[(\d+)/(\d+)\] ")
BLANK = re.compile(r"^  ( +)[✓✗~?] ")  # a finished line without a number
LINE = re.compile(r"^  ([+~=!-]) (\S+) (.*)$")  # a plan line, not indented further

CHILD = HEADER + (
    'file { path = "~/child.txt", content = "from the child\\n" }\n'
    'exec { name = "child-exec", command = "true" }\n'
)
FIRST = HEADER + (
    'file { path = "~/a.txt", content = "a\\n" }\n'
    'file { path = "~/deep/er/b.txt", content = "b\\n" }\n'
    'file { path = "~/.config/nvim", source = "dot/nvim" }\n'
    'file { path = "~/link", ensure = "link", target = "~/a.txt" }\n'
    'exec { name = "e", command = "true" }\n'
    'env { EDITOR = "vi" }\n'
    'apply { name = "conf/child.lua" }\n'
)
# The second apply: a file and the tree change, the link goes, an env variable comes.
SECOND = HEADER + (
    'file { path = "~/a.txt", content = "a, again\\n" }\n'
    'file { path = "~/deep/er/b.txt", content = "b\\n" }\n'
    'file { path = "~/.config/nvim", source = "dot/nvim" }\n'
    'exec { name = "e", command = "true" }\n'
    'env { EDITOR = "vi", PAGER = "less" }\n'
    'apply { name = "conf/child.lua" }\n'
)
NOOP_CHILD = HEADER + (
    'file { path = "~/a.txt", content = "a\\n" }\napply { name = "conf/child.lua", noop = true }\n'
)
FAILING = FIRST + 'exec { name = "boom", command = "false", depends_on = { "exec#e" } }\n'


def nvim(world: SysEnv, extra: bool = False) -> None:
    put(world.work / "dot" / "nvim" / "init.lua", "require('plugins')\n")
    put(world.work / "dot" / "nvim" / "lua" / "options.lua", "vim.o.number = true\n")
    if extra:
        put(world.work / "dot" / "nvim" / "lua" / "keys.lua", "-- keys\n")


def first(world: SysEnv) -> None:
    nvim(world)
    world.write("conf/child.lua", CHILD)
    world.write("sys.lua", FIRST)


def second(world: SysEnv) -> None:
    first(world)
    ok(world.run("apply"))
    nvim(world, extra=True)
    world.write("sys.lua", SECOND)


def noop_child(world: SysEnv) -> None:
    world.write("conf/child.lua", CHILD)
    world.write("sys.lua", NOOP_CHILD)


def failing(world: SysEnv) -> None:
    first(world)
    world.write("sys.lua", FAILING)


def unchanged(world: SysEnv) -> None:
    first(world)
    ok(world.run("apply"))
    world.write("sys.lua", FIRST.replace('content = "a\\n"', 'content = "a!\\n"'))


@dataclass
class Counts:
    """What each output says, as plan counts (create, update, ...)."""

    lines: dict[str, int]  # the plan's lines (-v), by symbol
    last_line: dict[str, int]  # `Plan: ...` of `sys plan`
    json: dict[str, int]  # `sys plan --json` counts
    apply_line: dict[str, int]  # `Plan: ...` of `sys apply`
    apply_event: dict[str, int]  # the plan event of `sys apply --json`


def plan_line(text: str) -> dict[str, int]:
    found = [m for ln in text.splitlines() if (m := PLAN.match(ln.strip()))]
    assert len(found) == 1, text
    return {k: int(v or 0) for k, v in zip(KEYS, found[0].groups())}


def line_counts(stdout: str) -> dict[str, int]:
    """The plan's lines (with -v, every item listed), counted by their mark:
    parents and members (indented further) are not counted."""
    c = dict.fromkeys(KEYS, 0)
    for ln in stdout.splitlines():
        m = LINE.match(ln)
        if m is None or ln.endswith("(parent)"):
            continue
        mark, rest = m[1], m[3]
        if "noop child: not changed" in rest:
            c["noop"] += 1
        elif mark == "+":
            c["run" if ": will run" in rest else "create"] += 1
        else:
            c[{"~": "update", "-": "remove", "=": "unchanged", "!": "fail"}[mark]] += 1
    return c


def numbered(stdout: str) -> tuple[list[int], set[int]]:
    """The numbers of `[n/N]`, in order, and the Ns."""
    found = [(int(m[1]), int(m[2])) for ln in stdout.splitlines() if (m := NUMBER.match(ln))]
    return [n for n, _ in found], {total for _, total in found}


def table(stdout: str) -> dict[str, int]:
    lines = stdout.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.strip().endswith("duration"))
    heads = re.split(r"\s{2,}", lines[i].strip())
    return {h: int(v) for h, v in zip(heads, lines[i + 1].split()) if h != "duration"}


def twins(tmp_path: Path, setup: Callable[[SysEnv], None]) -> tuple[SysEnv, SysEnv]:
    a, b = new_env(tmp_path / "human"), new_env(tmp_path / "json")
    setup(a)
    setup(b)
    return a, b


SCENARIOS = {
    "first run": first,
    "second run": second,
    "noop child": noop_child,
    "unchanged but one": unchanged,
    "a failure": failing,
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_count_agrees(tmp_path: Path, name: str) -> None:
    human, machine = twins(tmp_path, SCENARIOS[name])
    plan = human.run("plan", "-v")
    ok(plan)
    plan_json = human.run("plan", "--json")
    ok(plan_json)
    applied = human.run("apply")
    as_json = machine.run("apply", "--json")
    evs = events(as_json)
    counts = Counts(
        lines=line_counts(plan.stdout),
        last_line=plan_line(plan.stdout),
        json={k: plan_json_counts(plan_json.stdout)[k] for k in KEYS},
        apply_line=plan_line(applied.stdout),
        apply_event={k: evs[0]["counts"][k] for k in KEYS},
    )
    expected = counts.json
    # the plan's lines (edited items are counted as edits too: none here), its
    # last line, --json, and what the apply says of the same plan
    assert {k: v for k, v in counts.lines.items() if k not in ("edited", "held")} == {
        k: v for k, v in expected.items() if k not in ("edited", "held")
    }, plan.stdout
    assert counts.last_line == expected, plan.stdout
    assert counts.apply_line == expected, out(applied)
    assert counts.apply_event == expected, evs[0]

    # [n/N]: N is what the plan changes (or cannot apply); the numbers never skip
    changes = sum(expected[k] for k in ("create", "update", "run", "remove", "fail", "noop"))
    ns, totals = numbered(applied.stdout)
    assert ns == list(range(1, len(ns) + 1)), applied.stdout
    assert totals <= {changes}, applied.stdout
    summary = evs[-1]
    assert summary["event"] == "summary"
    items = {e["id"] for e in evs if e.get("event") == "item"}
    assert len(items) >= sum(expected.values()) - expected["edited"]  # members too
    table_counts = table(applied.stdout)
    if summary["result"] == "ok":
        assert ns == list(range(1, changes + 1)), applied.stdout
        done = summary["counts"]
        # the apply's summary (table and --json) counts each item as the plan does
        assert done["changed"] == changes - expected["noop"] - expected["fail"]
        assert done["noop"] == expected["noop"]
        assert done["unchanged"] + done.get("skipped", 0) == expected["unchanged"]
        assert {k: v for k, v in table_counts.items()} == {
            k: v for k, v in done.items() if k in table_counts
        }
        # history counts the same
        assert history(human)[0]["counts"] == done == history(machine)[0]["counts"]
        total = sum(done.get(k, 0) for k in ("changed", "unchanged", "failed", "skipped", "noop"))
        assert f"  {done['changed']} of {total}  " in human.run("history").stdout
    else:
        assert applied.returncode == as_json.returncode == 1, out(applied)
        done = summary["counts"]
        total = sum(v for k, v in done.items())
        assert total == sum(expected.values()) - expected["edited"], (done, expected)
        assert table_counts.get("failed") == done["failed"] == 1
        # The table is the human run's, `done` the --json run's: two runs, in
        # which a different number of items may have started before the
        # failure stopped the rest. Each counts every item once.
        undone = table_counts.get("rolled back", 0) + table_counts.get("not undone", 0)
        rest = sum(table_counts.get(k, 0) for k in ("unchanged", "failed", "skipped", "noop"))
        assert undone + rest == total, (table_counts, done)


def plan_json_counts(stdout: str) -> dict[str, int]:
    import json

    return json.loads(stdout)["plan"]["counts"]  # type: ignore[no-any-return]


def test_a_first_run_apply_child_will_run_and_a_new_tree_is_created(sysenv) -> None:
    first(sysenv)
    plan = sysenv.run("plan")
    ok(plan)
    assert "  + apply conf/child.lua: will run" in plan.stdout.splitlines(), plan.stdout
    assert "  + file ~/.config/nvim/ (tree: 2 files, 1 directory)" in plan.stdout
    applied = sysenv.run("apply", "-v")
    ok(applied)
    lines = applied.stdout.splitlines()
    tree_line = next(ln for ln in lines if "file ~/.config/nvim/:" in ln)
    assert NUMBER.match(tree_line) and ": created" in tree_line, tree_line
    assert ": updated" not in applied.stdout, applied.stdout
    # its members: listed under -v, without a number, indented deeper than the items
    members = [ln for ln in lines if "file ~/.config/nvim/" in ln and ln is not tree_line]
    blanks = [m[1] for ln in members if (m := BLANK.match(ln))]
    assert len(members) == len(blanks) == 3, members
    assert all(len(b) > len("[1/1]") for b in blanks), members
    child = next(ln for ln in lines if "apply conf/child.lua" in ln)
    assert ": executed" in child, child
    # and without -v, not at all
    sysenv.write("sys.lua", FIRST.replace('"vi"', '"nvim"'))
    put(sysenv.work / "dot" / "nvim" / "init.lua", "-- changed\n")
    again = sysenv.run("apply")
    ok(again)
    assert "init.lua" not in again.stdout, again.stdout
    # the tree, the env variable, and the three commands that run every time
    assert numbered(again.stdout) == ([1, 2, 3, 4, 5], {5}), again.stdout


def test_overwrite_counts_what_it_leaves_alone_as_held(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/a", content = "a\\n" }\nfile { path = "~/b", content = "b\\n" }\n',
    )
    ok(sysenv.run("apply"))
    (sysenv.home / "a").write_text("mine\n")
    (sysenv.home / "b").write_text("mine too\n")
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/a", content = "a2\\n" }\nfile { path = "~/b", content = "b2\\n" }\n',
    )
    p = sysenv.run("apply", "--overwrite", str(sysenv.home / "a"))
    ok(p)
    c = plan_line(p.stdout)
    assert (c["update"], c["held"], c["edited"]) == (1, 1, 2), p.stdout
    assert "1 left as it is." in p.stdout
    assert numbered(p.stdout) == ([1], {1}), p.stdout
    assert (sysenv.home / "b").read_text() == "mine too\n"
    (sysenv.home / "a").write_text("mine again\n")
    j = sysenv.run("apply", "--overwrite", str(sysenv.home / "a"), "--json")
    ok(j)
    evs = events(j)
    assert (evs[0]["counts"]["update"], evs[0]["counts"]["held"]) == (1, 1), evs[0]
    summary = evs[-1]
    assert summary["held"] == ["~/b"], summary
    assert summary["counts"]["held"] == 1 and summary["counts"]["changed"] == 1, summary
    assert summary["counts"].get("skipped", 0) == 0, summary
