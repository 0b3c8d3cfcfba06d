"""Plans and progress that match (issue 12): `sys plan` lists what changes,
env variables are items counted alike in the plan, the progress `[n/N]` and
the summary, a failed apply says what it rolled back, and plan lines speak of
the future. Everything goes through the real command line and real files.
"""

from __future__ import annotations

import json
import re

from conftest import HEADER, events, ok, out, put, tree

PLAN = re.compile(
    r"^Plan: (\d+) to create, (\d+) to update, (?:(\d+) to run, )?(\d+) to remove, (\d+) unchanged"
)
PROGRESS = re.compile(r"^  \[(\d+)/(\d+)\] (\S) (.*) \(\d+\.\d\ds\)$")


def plan_total(text: str) -> int:
    """The sum of a `Plan: ...` line's counts (in stdout or stderr)."""
    m = next(m for ln in text.splitlines() if (m := PLAN.match(ln)))
    return sum(int(g) for g in m.groups() if g)


def progress(stdout: str) -> list[tuple[int, int, str, str]]:
    """The `[n/N] mark subject: message (duration)` lines of an apply, without the duration."""
    return [
        (int(m[1]), int(m[2]), m[3], m[4])
        for ln in stdout.splitlines()
        if (m := PROGRESS.match(ln))
    ]


def summary(stdout: str) -> dict[str, str]:
    """The summary table (plain): column name -> value."""
    lines = stdout.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.strip().endswith("duration"))
    heads = re.split(r"\s{2,}", lines[i].strip())
    return dict(zip(heads, lines[i + 1].split()))


def files(n: int) -> str:
    return "".join(f'file {{ path = "~/f{i:02}", content = "{i}\\n" }}\n' for i in range(n))


# -- sys plan lists what changes ------------------------------------------------
def test_unchanged_items_are_one_count_line_and_v_lists_them(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + files(36))
    ok(sysenv.run("apply"))
    sysenv.write("sys.lua", HEADER + files(36) + 'file { path = "~/new", content = "n\\n" }\n')
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("plan")
    ok(p)
    assert p.stdout.splitlines()[1:] == [
        "Changes:",
        "  + file ~/new: will create",
        "  = 36 unchanged",
        "",
        "Execution order:",
        "  [Wave 1] ~/new",
        "",
        "Plan: 1 to create, 0 to update, 0 to remove, 36 unchanged.",
    ], p.stdout
    v = sysenv.run("plan", "-v")
    ok(v)
    unchanged = [ln for ln in v.stdout.splitlines() if ln.startswith("  = file ~/f")]
    assert len(unchanged) == 36 and all(ln.endswith(": unchanged") for ln in unchanged)
    assert "  + file ~/new: will create" in v.stdout and "36 unchanged." in v.stdout
    assert "  = 36 unchanged" not in v.stdout
    # the execution order shows only what will run, with -v too
    assert "  [Wave 1] ~/new\n" in v.stdout and "~/f00," not in v.stdout
    assert (tree(sysenv.home), tree(sysenv.root)) == before


def test_nothing_to_do_says_so_without_listing(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + files(3) + 'env { EDITOR = "vi" }\n')
    ok(sysenv.run("apply"))
    p = sysenv.run("plan")
    ok(p)
    assert p.stdout.splitlines()[1:] == [
        "No changes. The machine matches the configuration.",
        "",
        "Plan: 0 to create, 0 to update, 0 to remove, 4 unchanged.",
    ], p.stdout
    assert '  = env EDITOR: "vi"' in sysenv.run("plan", "-v").stdout


# -- env variables are items -----------------------------------------------------
ENV_BEFORE = 'env { PAGER = "more", OLD = "gone soon", PATH = "~/bin" }\n'
ENV_AFTER = 'env { PAGER = "bat", EDITOR = "nvim", PATH = "~/bin" }\n'


def test_env_variables_in_plan_progress_and_summary(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + files(2) + ENV_BEFORE)
    first = sysenv.run("apply")
    ok(first)
    lines = progress(first.stdout)
    assert [ln[3] for ln in lines if ln[3].startswith("env ")] == [
        'env OLD: "gone soon"',
        'env PAGER: "more"',
        f'env PATH: "{sysenv.home}/bin"',
    ]
    assert summary(first.stdout)["changed"] == "5"

    sysenv.write("sys.lua", HEADER + files(2) + ENV_AFTER)
    plan = sysenv.run("plan")
    ok(plan)
    assert plan.stdout.splitlines()[1:] == [
        "Changes:",
        '  + env EDITOR: "nvim"',
        '  ~ env PAGER: "more" -> "bat"',
        '  - env OLD: "gone soon" -> unset',
        "  = 3 unchanged",
        "",
        "Execution order:",
        "  [Env scripts] EDITOR, PAGER, OLD",
        "",
        "Plan: 1 to create, 1 to update, 1 to remove, 3 unchanged.",
    ], plan.stdout

    p = sysenv.run("apply")
    ok(p)
    lines = progress(p.stdout)
    # Only the env lines: the files did not change. No empty `Executing:`.
    assert p.stdout.startswith("Plan: ") and "\nExecuting:\n  [" in p.stdout, p.stdout
    # Numbered are the items that change, so the numbers never skip (PATH,
    # unchanged, is listed with -v, without a number).
    assert [(n, total, mark, text) for n, total, mark, text in lines] == [
        (1, 3, "✓", 'env EDITOR: "nvim"'),
        (2, 3, "✓", 'env PAGER: "more" -> "bat"'),
        (3, 3, "✓", 'env OLD: "gone soon" -> unset'),
    ], p.stdout
    table = summary(p.stdout)
    assert (table["changed"], table["unchanged"]) == ("3", "3"), p.stdout
    # counted the same way in all three: [n/N] numbers what changes
    assert plan_total(plan.stdout) == 6 == sum(int(v) for k, v in table.items() if k != "duration")
    assert lines[-1][1] == 3 == int(table["changed"])
    env_sh = (sysenv.root / "state" / "env.sh").read_text()
    assert "PAGER='bat'" in env_sh and "EDITOR='nvim'" in env_sh and "OLD" not in env_sh
    assert "No changes" in sysenv.run("apply").stdout


def test_an_env_only_change_is_not_an_empty_apply(sysenv) -> None:
    sysenv.write("sys.lua", 'env { PAGER = "more" }\n')
    ok(sysenv.run("apply"))
    sysenv.write("sys.lua", 'env { PAGER = "bat" }\n')
    p = sysenv.run("apply")
    ok(p)
    # the plan's summary, then each item, on stdout
    assert p.stdout.startswith(
        "Plan: 0 to create, 1 to update, 0 to remove, 0 unchanged.\n"
        'Executing:\n  [1/1] ✓ env PAGER: "more" -> "bat" ('
    )
    assert summary(p.stdout)["changed"] == "1"
    assert any(h["message"].endswith("(1 changed)") for h in history_of(sysenv))
    # --json: one item event for the variable, and the summary counts it
    sysenv.write("sys.lua", 'env { PAGER = "less" }\n')
    j = sysenv.run("apply", "--json")
    ok(j)
    evs = events(j)
    assert evs[0]["event"] == "plan" and evs[0]["counts"]["update"] == 1
    item = next(e for e in evs if e.get("event") == "item")
    assert (item["id"], item["label"], item["status"], item["message"]) == (
        "env#PAGER",
        "PAGER",
        "changed",
        '"bat" -> "less"',
    )
    assert evs[-1]["counts"]["changed"] == 1


def history_of(sysenv) -> list[dict]:  # type: ignore[no-untyped-def]
    p = sysenv.run("history", "--json")
    ok(p)
    return json.loads(p.stdout)


def test_counts_agree_with_parents_removals_execs_and_env(sysenv) -> None:
    """Whatever the mix, the plan's counts add up to the apply's N, and the
    summary to the same number: directories made on the way are not items."""
    sysenv.write(
        "sys.lua",
        HEADER + 'file { path = "~/old", content = "o\\n" }\nenv { A = "1" }\n',
    )
    ok(sysenv.run("apply"))
    body = (
        HEADER
        + 'file { path = "~/deep/er/f", content = "f\\n" }\n'
        + 'exec { name = "e", command = "true" }\n'
        + 'env { A = "2", B = "x" }\n'
    )
    sysenv.write("sys.lua", body)
    plan = sysenv.run("plan")
    ok(plan)
    assert "  + dir ~/deep (parent)" in plan.stdout
    assert "Plan: 2 to create, 1 to update, 1 to run, 1 to remove, 0 unchanged." in plan.stdout
    p = sysenv.run("apply")
    ok(p)
    lines = progress(p.stdout)
    assert [n for n, *_ in lines] == [1, 2, 3, 4, 5] and {t for _, t, *_ in lines} == {5}
    assert summary(p.stdout)["changed"] == "5"


# -- a failed apply says what it rolled back --------------------------------------
def test_a_failed_apply_counts_what_it_rolled_back(sysenv) -> None:
    sysenv.write(
        "sys.lua",
        HEADER
        + 'local a = file { path = "~/a", content = "a\\n" }\n'
        + 'local b = exec { name = "b", command = "true", undo = "true" }\n'
        + 'local c = exec { name = "c", command = "true" }\n'
        + 'env { A = "1" }\n'
        + 'exec { name = "boom", command = "false", depends_on = { a, b, c } }\n',
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    table = summary(p.stdout)
    assert "changed" not in table, p.stdout
    assert (table["rolled back"], table["not undone"], table["failed"]) == ("2", "1", "1")
    assert "Apply failed. Rolled back everything except 1 command(s) that cannot be undone:" in (
        p.stdout
    )
    assert tree(sysenv.home) == before


# -- plan wording ------------------------------------------------------------------
def test_removals_say_whether_the_original_is_restored(sysenv) -> None:
    put(sysenv.home / ".bashrc", "mine\n")
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/.bashrc", content = "managed\\n" }\n'
        + 'file { path = "~/made", content = "by syslua\\n" }\n'
        + 'exec { name = "setup", command = "true", undo = "true" }\n',
    )
    ok(sysenv.run("apply"))
    sysenv.write("sys.lua", HEADER)
    p = sysenv.run("plan")
    ok(p)
    assert "  - file ~/.bashrc: will remove (the original is restored)" in p.stdout
    assert "  - file ~/made: will remove (no longer declared)" in p.stdout
    assert "  - exec setup: will remove (no longer declared; its undo command runs)" in p.stdout
    d = sysenv.run("destroy", "--dry-run")
    ok(d)
    assert "  - file ~/.bashrc: will remove (the original is restored)" in d.stdout
    # JSON keeps the seed's noop message beside the plan's words
    j = json.loads(sysenv.run("plan", "--json").stdout)
    bashrc = next(e for e in j["plan"]["removals"] if e["label"] == "~/.bashrc")
    assert bashrc["message"] == "will remove (the original is restored)"
    assert bashrc["noop_message"] == "Would have removed the file"
    ok(sysenv.run("apply", "--allow-empty"))
    assert (sysenv.home / ".bashrc").read_text() == "mine\n"


def test_plan_json_speaks_of_the_future_and_keeps_noop_messages(sysenv) -> None:
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/x", content = "x\\n" }\nexec { name = "e" }\n'
    )
    j = json.loads(sysenv.run("plan", "--json").stdout)
    by = {e["label"]: e for e in j["plan"]["items"]}
    assert (by["~/x"]["message"], by["~/x"]["noop_message"]) == (
        "will create",
        "Would have created the file",
    )
    assert (by["e"]["message"], by["e"]["noop_message"]) == ("will run", "Would have executed")


def test_noop_counts_env_variables_as_noop_everywhere(sysenv) -> None:
    sysenv.write("sys.lua", 'env { A = "1" }\nexec { name = "e", command = "true" }\n')
    p = sysenv.run("apply", "--noop")
    ok(p)
    assert (
        "Plan: 0 to create, 0 to update, 0 to remove, 0 unchanged, 2 would change in noop children."
        in (p.stdout)
    )
    assert [(n, t, mark, text) for n, t, mark, text in progress(p.stdout)] == [
        (1, 2, "~", "exec e: Would have executed"),
        (2, 2, "~", 'env A: "1"'),
    ], p.stdout
    assert summary(p.stdout)["noop"] == "2"
    assert not (sysenv.root / "state" / "env.sh").exists()
