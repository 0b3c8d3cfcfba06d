"""History people can use (issue 23, point 6), through the real command line.

`sys history` has a header and one line per snapshot: its generation number
(`#12`, stable when others are deleted), the end of its id, its age, kind,
counts (once) and message; `--limit N` keeps the newest N, and on a
terminal of 80 or 60 columns every line fits (the message is shortened).
`sys rollback`, `sys diff` and `sys snapshot show` take a number (`12`,
`#12`), `-1` (the one before the current one), a tag, or a unique prefix or
suffix of an id, through one resolver; an ambiguous one is an error that
lists the matches (exit 2). Times are ISO 8601 with an offset in every
`--json`, and `snapshot show` names items as the plan does.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime

from conftest import HEADER, history, out, tree
from ptyrun import run_in_pty

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")
SNAPSHOTS = "state/snapshots"


def apply_ok(sysenv, body: str, *args: str) -> str:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply", *args)
    assert p.returncode == 0, out(p)
    m = re.search(r"Apply complete: snapshot (\S+)\.", p.stdout)
    assert m, out(p)
    return m.group(1)


def three(sysenv) -> list[str]:  # type: ignore[no-untyped-def]
    """Three applies of ~/.bashrc (a1, a2 + ~/.vimrc, a3): their ids, oldest first."""
    made = [apply_ok(sysenv, 'file { path = "~/.bashrc", content = "a1\\n" }\n', "-m", "first")]
    made.append(
        apply_ok(
            sysenv,
            'file { path = "~/.bashrc", content = "a2\\n" }\n'
            'file { path = "~/.vimrc", content = "v\\n" }\n',
        )
    )
    made.append(apply_ok(sysenv, 'file { path = "~/.bashrc", content = "a3\\n" }\n'))
    return made


def rows(sysenv, *args: str) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """`sys history` split into columns (two spaces or more apart)."""
    p = sysenv.run("history", *args)
    assert p.returncode == 0, out(p)
    return [re.split(r"\s{2,}", ln.strip()) for ln in p.stdout.splitlines()]


def bashrc(sysenv) -> str:  # type: ignore[no-untyped-def]
    return (sysenv.home / ".bashrc").read_text()


# -- sys history -------------------------------------------------------------------
def test_history_has_a_header_and_one_line_per_snapshot_with_its_number(sysenv) -> None:
    s1, s2, s3 = three(sysenv)
    p = sysenv.run("rollback", "-1")
    assert p.returncode == 0, out(p)
    lines = sysenv.run("history").stdout.splitlines()
    assert re.split(r"\s+", lines[0].strip()) == ["#", "ID", "WHEN", "KIND", "CHANGED", "MESSAGE"]
    assert lines[1].startswith("* #4 ") and all(ln.startswith("  #") for ln in lines[2:])
    table = rows(sysenv)
    assert [r[0].lstrip("* ") for r in table[1:]] == ["#4", "#3", "#2", "#1"]
    assert [r[1] for r in table[1:]] == [h["id"][-4:] for h in history(sysenv)]
    assert {r[2] for r in table[1:]} == {"just now"}
    assert [r[3] for r in table[1:]] == ["rollback", "apply", "apply", "apply"]
    assert [r[4] for r in table[1:]] == ["2 of 2", "2 of 2", "2 of 2", "1 of 1"]
    # The counts are said once: not again in syslua's own message.
    assert [r[5] for r in table[1:]] == [
        "rollback to #2",
        "apply sys.lua",
        "apply sys.lua",
        "first",
    ]
    assert [h["message"] for h in history(sysenv)][1] == "apply sys.lua (2 changed)"
    assert [h["id"] for h in history(sysenv)][1:] == [s3, s2, s1]


def test_history_limit_keeps_the_newest(sysenv) -> None:
    s1, s2, s3 = three(sysenv)
    table = rows(sysenv, "--limit", "2")
    assert [r[0].lstrip("* ") for r in table[1:-1]] == ["#3", "#2"]
    assert table[-1] == ["(1 older; `sys history` lists them all)"]
    assert [
        h["id"] for h in json.loads(sysenv.run("history", "--limit", "1", "--json").stdout)
    ] == [s3]
    p = sysenv.run("history", "--limit", "0")
    assert p.returncode == 2 and "--limit" in p.stderr, out(p)


def test_generation_numbers_stay_when_a_snapshot_is_deleted(sysenv) -> None:
    s1, s2, s3 = three(sysenv)
    p = sysenv.run("snapshot", "delete", "#2")
    assert p.returncode == 0 and s2 in p.stdout, out(p)
    assert [(h["generation"], h["id"]) for h in history(sysenv)] == [(3, s3), (1, s1)]
    s4 = apply_ok(sysenv, 'file { path = "~/.bashrc", content = "a4\\n" }\n')
    # the newest deleted too: its number is not given again
    p = sysenv.run("rollback", "1")
    assert p.returncode == 0, out(p)
    s5 = history(sysenv)[0]["id"]
    assert sysenv.run("snapshot", "delete", s4).returncode == 0
    s6 = apply_ok(sysenv, 'file { path = "~/.bashrc", content = "a6\\n" }\n')
    assert [(h["generation"], h["id"]) for h in history(sysenv)] == [
        (6, s6),
        (5, s5),
        (3, s3),
        (1, s1),
    ]
    # A lost index is rebuilt from the snapshot files, with the same numbers.
    (sysenv.root / SNAPSHOTS / "index.json").unlink()
    assert [h["generation"] for h in history(sysenv)] == [6, 5, 3, 1]


def test_snapshots_from_before_the_numbers_are_numbered_by_their_order(sysenv) -> None:
    s1, s2, s3 = three(sysenv)
    snaps = sysenv.root / SNAPSHOTS
    index = json.loads((snaps / "index.json").read_text())
    for key in ("generations", "last_generation"):
        index.pop(key)
    (snaps / "index.json").write_text(json.dumps(index))
    for ident in (s1, s2, s3):
        data = json.loads((snaps / f"{ident}.json").read_text())
        data.pop("generation")
        (snaps / f"{ident}.json").write_text(json.dumps(data))
    assert sysenv.run("snapshot", "delete", s1).returncode == 0  # numbered before it goes
    assert [h["generation"] for h in history(sysenv)] == [3, 2]
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "a4\\n" }\n')
    assert [h["generation"] for h in history(sysenv)] == [4, 3, 2]


# -- one resolver: numbers, -1, tags, prefixes, suffixes -------------------------------
def test_rollback_minus_one_literally_and_minus_two(sysenv) -> None:
    s1, s2, s3 = three(sysenv)
    p = sysenv.run("rollback", "-1")
    assert p.returncode == 0, out(p)
    assert bashrc(sysenv) == "a2\n" and (sysenv.home / ".vimrc").exists()
    # -1 is the snapshot before the current one (#4, the rollback): #3
    p = sysenv.run("rollback", "-1")
    assert p.returncode == 0, out(p)
    assert bashrc(sysenv) == "a3\n"
    p = sysenv.run("rollback", "-2", "--noop")  # options after it are still options
    assert p.returncode == 0 and "nothing was changed" in out(p), out(p)
    assert bashrc(sysenv) == "a3\n"
    p = sysenv.run("rollback", "-4")  # #1
    assert p.returncode == 0, out(p)
    assert bashrc(sysenv) == "a1\n" and not (sysenv.home / ".vimrc").exists()
    assert history(sysenv)[0]["message"] == "rollback to #1"


def test_rollback_by_number_suffix_prefix_and_tag(sysenv) -> None:
    s1, s2, s3 = three(sysenv)
    assert sysenv.run("snapshot", "tag", "#2", "good").returncode == 0
    for wanted, content in (
        ("1", "a1\n"),
        ("#3", "a3\n"),
        ("good", "a2\n"),
        (s1[-4:], "a1\n"),
        (s3[:-1], "a3\n"),
    ):
        if wanted == s3[:-1] and sum(h["id"].startswith(wanted) for h in history(sysenv)) > 1:
            # The rollbacks made in the same second may share all but the
            # last random digit with s3 (1 in 4,096 each): then a prefix one
            # digit longer, the whole id, is the shortest that names it.
            wanted = s3
        p = sysenv.run("rollback", wanted)
        assert p.returncode == 0, (wanted, out(p))
        assert bashrc(sysenv) == content, wanted


def test_diff_and_snapshot_show_take_the_same_names(sysenv) -> None:
    s1, s2, s3 = three(sysenv)
    for a, b, compared in (
        ("-2", "-1", (s1, s2)),  # -1: the one before the current one (#3)
        ("#2", "3", (s2, s3)),
        (s2[-4:], s3[-4:], (s2, s3)),
    ):
        p = sysenv.run("diff", a, b, "--json")
        assert p.returncode == 0, out(p)
        assert (json.loads(p.stdout)["from"], json.loads(p.stdout)["to"]) == compared
    for wanted in ("2", "#2", "-1", s2[-4:]):
        p = sysenv.run("snapshot", "show", wanted)
        assert p.returncode == 0, out(p)
        assert p.stdout.splitlines()[0] == f"Snapshot #2 {s2}", wanted


def test_an_ambiguous_or_unknown_name_is_refused_and_changes_nothing(sysenv) -> None:
    three(sysenv)
    ids = [h["id"] for h in history(sysenv)]
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("rollback", ids[0][:4])  # every id starts with the year
    assert p.returncode == 2, out(p)
    assert f"snapshot {ids[0][:4]} is ambiguous: it matches 3 snapshots" in p.stderr
    for number, ident in zip((3, 2, 1), ids, strict=True):
        assert f"  #{number}  {ident}" in p.stderr
    for wanted, said in (
        ("#9", "no snapshot #9 (the numbers go from #1 to #3)"),
        ("-3", "there are only 2 snapshots before the current one: -3 names none"),
        ("nosuch", "no snapshot nosuch"),
        ("--bogus", "no such option or snapshot: '--bogus'"),
    ):
        p = sysenv.run("rollback", wanted)
        assert p.returncode == 2 and said in p.stderr, (wanted, out(p))
    assert (tree(sysenv.home), tree(sysenv.root)) == before


# -- JSON times, snapshot show labels --------------------------------------------------
def test_times_are_iso_8601_with_an_offset_in_every_json_output(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "a1\\n" }\n')
    times = [h["time"] for h in history(sysenv)]
    times.append(json.loads(sysenv.run("snapshot", "show", "--json").stdout)["time"])
    times.append(json.loads(sysenv.run("info", "--json").stdout)["snapshot"]["time"])
    for t in times:
        assert ISO.fullmatch(t), t
        assert abs(datetime.fromisoformat(t).timestamp() - datetime.now().timestamp()) < 300
    shown = json.loads(sysenv.run("snapshot", "show", "--json").stdout)
    assert shown["generation"] == 1


def test_snapshot_show_names_items_as_the_plan_does(sysenv) -> None:
    (sysenv.work / "nvim").mkdir()
    (sysenv.work / "nvim" / "init.lua").write_text("x\n")
    apply_ok(
        sysenv,
        'file { path = "~/.bashrc", content = "a1\\n" }\n'
        'file { path = "~/.config/nvim", source = "./nvim" }\n',
    )
    p = sysenv.run("snapshot", "show")
    assert p.returncode == 0, out(p)
    assert "#" not in "".join(ln for ln in p.stdout.splitlines()[1:] if "file " in ln)
    assert "    file ~/.bashrc (content " in p.stdout
    assert "    file ~/.config/nvim/ (tree: 1 file)" in p.stdout.splitlines()
    assert "      file ~/.config/nvim/init.lua (content " in p.stdout
    plan = sysenv.run("plan", "-v").stdout
    assert "  = file ~/.config/nvim/ (tree: 1 file)" in plan.splitlines()


# -- on a terminal -----------------------------------------------------------------
def history_in_pty(sysenv, columns: int) -> list[str]:  # type: ignore[no-untyped-def]
    """`sys history` run on a terminal `columns` wide: its lines."""
    env = dict(sysenv.env, TERM="xterm-256color", COLUMNS=str(columns), LINES="40")
    env.update(SYS_PAGER="cat", PAGER="cat")  # a pager, where there is one, prints as it is
    code, data, _ = run_in_pty(
        [sys.executable, "-m", "syslua", "history"], env=env, cwd=sysenv.work, columns=columns
    )
    assert code == 0, data
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", data.decode())
    return [ln for ln in text.replace("\r", "").split("\n") if ln]


def test_history_fits_80_and_60_columns(sysenv) -> None:
    long = "after moving every dotfile from the old laptop into the new config repository"
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "a1\\n" }\n', "-m", long)
    apply_ok(sysenv, 'file { path = "~/.bashrc", content = "a2\\n" }\n')
    for columns in (80, 60):
        lines = history_in_pty(sysenv, columns)
        assert len(lines) == 3, lines
        assert all(len(ln) < columns for ln in lines), (columns, lines)
        assert lines[2].endswith("…") and lines[2].split("  ")[-1].strip()[:-1] in long
        assert lines[1].endswith("apply sys.lua")
    # Not on a terminal: nothing is shortened.
    assert sysenv.run("history").stdout.splitlines()[2].endswith(long)
