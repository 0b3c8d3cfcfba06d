"""The no-change proof (`state/proof.py`, `execute/proof.py`) and the start
that answers from it (`syslua/quick.py`): a `sys apply` or `sys plan` where
nothing changed says what the full command says, word for word, from
`lstat` alone; anything that would change the plan leaves it to the full
command, whose answer is then the same as `--no-cache` gives.

The racy margin is made short here (`margin`), but for the test of the
rule itself, which keeps the real 2 s."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import HEADER, SysEnv, ok, out, put

from syslua import cli
from syslua.state import proof, stat_index

SHORT = 200_000_000  # ns: the racy margin of these tests
CONFIG = (
    HEADER
    + """
file { path = "~/.config/app", ensure = "directory", mode = "0755" }
file { path = "~/.config/app/a.conf", source = "src/a.conf" }
file { path = "~/.vimrc", content = "set number\\n" }
file { path = "~/.gitconfig", source = "src/gitconfig", link = true }
file { path = "~/old.txt", ensure = "absent" }
file { path = "~/.config/tree", source = "src/tree" }
env { EDITOR = "vi" }
"""
)


@pytest.fixture
def margin(monkeypatch: pytest.MonkeyPatch) -> None:
    """A racy margin of 0.2 s instead of 2 s (the stat index's too)."""
    monkeypatch.setattr(proof, "MARGIN", SHORT)
    monkeypatch.setattr(stat_index, "MARGIN", SHORT)


def _settle() -> None:
    time.sleep(SHORT / 1e9 + 0.05)


def _sys(sysenv: SysEnv, *args: str) -> tuple[subprocess.CompletedProcess[str], bool]:
    """`sys ARGS`, and whether the proof answered it (the full command line never ran)."""
    ran: list[bool] = []
    full = cli.main

    def spy() -> None:
        ran.append(True)
        full()

    cli.main = spy  # type: ignore[assignment]
    try:
        res = sysenv.run(*args)
    finally:
        cli.main = full  # type: ignore[assignment]
    return res, not ran


def _converged(sysenv: SysEnv, config: str = CONFIG) -> None:
    """Apply `config`, then apply it again once the margin has passed: that
    run changes nothing and leaves the proof."""
    put(sysenv.work / "src" / "a.conf", "alpha\n")
    put(sysenv.work / "src" / "gitconfig", "[user]\n")
    put(sysenv.work / "src" / "tree" / "one.conf", "one\n")
    put(sysenv.work / "src" / "tree" / "sub" / "two.conf", "two\n")
    put(
        sysenv.home / ".bashrc",
        f"[ -f {sysenv.root}/state/env.sh ] && . {sysenv.root}/state/env.sh\n",
    )
    sysenv.write("sys.lua", config)
    ok(sysenv.run("apply"))
    _settle()
    res, quick = _sys(sysenv, "apply")
    ok(res)
    assert not quick and "No changes" in res.stdout
    assert (sysenv.root / "state" / proof.NAME).exists()


def _same_as_full(sysenv: SysEnv, *args: str) -> bool:
    """Run `sys ARGS` and `sys ARGS --no-cache` (never answered by the proof):
    the same exit code and words; returns whether the proof answered the first."""
    res, quick = _sys(sysenv, *args)
    full, by_proof = _sys(sysenv, *args, "--no-cache")
    assert not by_proof
    assert (res.returncode, res.stdout, res.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    ), f"{out(res)}\n---\n{out(full)}"
    return quick


def test_no_change_is_answered_from_the_proof_word_for_word(sysenv: SysEnv, margin: None) -> None:
    _converged(sysenv)
    for args in (
        ("apply",),
        ("plan",),
        ("apply", "sys.lua"),
        ("plan", "--exit-code", "sys.lua"),
        ("-q", "plan", "--exit-code"),
        ("apply", "-q"),
        ("plan", "--no-color", "--no-pager"),
    ):
        assert _same_as_full(sysenv, *args), args
    res, quick = _sys(sysenv, "plan")
    assert quick and res.returncode == 0
    assert res.stdout.splitlines()[:2] == ["", "No changes. The machine matches the configuration."]
    assert res.stdout.splitlines()[3].startswith("Plan: 0 to create, 0 to update, 0 to remove, ")


@pytest.mark.parametrize("args", [("plan", "-v"), ("apply", "--json"), ("plan", "--diff")])
def test_other_options_are_the_full_command(sysenv: SysEnv, margin: None, args: tuple[str]) -> None:
    _converged(sysenv)
    res, quick = _sys(sysenv, *args)
    ok(res)
    assert not quick


def _edit_keeping_size_and_mtime(path: Path, text: str) -> None:
    st = os.lstat(path)
    assert len(text.encode()) == st.st_size
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def _fold(home: Path, repo: Path) -> None:
    """stow's fold: the directory moved into the repository, a link in its place."""
    shutil.move(home / ".config" / "app", repo / "app")
    os.symlink(repo / "app", home / ".config" / "app")


def _relink(home: Path, work: Path) -> None:
    (home / ".gitconfig").unlink()
    put(work / "elsewhere", "[user]\n")
    os.symlink(work / "elsewhere", home / ".gitconfig")


CHANGES: dict[str, Callable[[SysEnv], object]] = {
    "target edited, same size and mtime": lambda e: _edit_keeping_size_and_mtime(
        e.home / ".config/app/a.conf", "alphA\n"
    ),
    "target mode": lambda e: os.chmod(e.home / ".vimrc", 0o600),
    "target removed": lambda e: (e.home / ".vimrc").unlink(),
    "source edited, same size and mtime": lambda e: _edit_keeping_size_and_mtime(
        e.work / "src/a.conf", "ALPHA\n"
    ),
    "directory mode": lambda e: os.chmod(e.home / ".config/app", 0o700),
    "parent folded into a link": lambda e: _fold(e.home, e.work),
    "link retargeted": lambda e: _relink(e.home, e.work),
    "link's source removed": lambda e: (e.work / "src/gitconfig").unlink(),
    "absent path created": lambda e: put(e.home / "old.txt", "x"),
    "tree source gains a file": lambda e: put(e.work / "src/tree/three.conf", "3\n"),
    "tree member edited": lambda e: put(e.home / ".config/tree/sub/two.conf", "TWO\n"),
    "config edited": lambda e: e.write("sys.lua", CONFIG.replace('"vi"', '"nvim"')),
    "env script removed": lambda e: (e.root / "state" / "env.sh").unlink(),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_is_never_answered_as_no_change(sysenv: SysEnv, margin: None, change: str) -> None:
    _converged(sysenv)
    CHANGES[change](sysenv)
    res, quick = _sys(sysenv, "plan")
    assert not quick, change
    if change == "env script removed":  # no change to plan: the apply writes it again
        res, quick = _sys(sysenv, "apply")
        assert not quick and "Apply complete" in res.stdout, out(res)
        return
    assert "No changes" not in res.stdout, out(res)
    assert not _same_as_full(sysenv, "plan")


def test_the_rc_line_removed_brings_the_advice_back(sysenv: SysEnv, margin: None) -> None:
    _converged(sysenv)
    (sysenv.home / ".bashrc").write_text("# nothing here\n")
    for _ in range(2):  # said after every apply: the proof stays one that does not hold
        res, quick = _sys(sysenv, "apply")
        ok(res)
        assert not quick
        assert "Add this line to ~/.bashrc" in res.stdout


def test_a_damaged_record_of_originals_is_the_full_apply_s_to_report(
    sysenv: SysEnv, margin: None
) -> None:
    _converged(sysenv)
    (sysenv.root / "state" / "originals.json").write_text("{")
    res, quick = _sys(sysenv, "apply")
    assert not quick and res.returncode != 0, out(res)


def test_another_shell_is_the_full_command(
    sysenv: SysEnv, margin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _converged(sysenv)
    monkeypatch.setenv("SHELL", "/usr/bin/zsh")
    res, quick = _sys(sysenv, "apply")
    ok(res)
    assert not quick and "~/.zshrc" in res.stdout


def test_a_changing_run_deletes_the_proof_before_its_journal(sysenv: SysEnv, margin: None) -> None:
    _converged(sysenv)
    sysenv.write("sys.lua", CONFIG.replace("set number", "set nonumber"))
    ok(sysenv.run("apply"))
    assert not (sysenv.root / "state" / proof.NAME).exists()
    ok(sysenv.run("rollback"))
    assert not (sysenv.root / "state" / proof.NAME).exists()
    _settle()
    res, quick = _sys(sysenv, "apply")  # the rolled back config, as `sys rollback` said
    ok(res)
    assert not quick


def test_a_held_lock_is_the_full_commands_to_report(sysenv: SysEnv, margin: None) -> None:
    _converged(sysenv)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(30)\n",
            str(sysenv.root / "state" / "lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        res, quick = _sys(sysenv, "apply")
        assert not quick and res.returncode == 3, out(res)
        res, quick = _sys(sysenv, "plan")  # reading needs no lock
        assert quick and res.returncode == 0
    finally:
        holder.kill()
        holder.wait()
    assert fcntl  # the holder's module


@pytest.mark.parametrize(
    "config,why",
    [
        (HEADER + 'file { path = "~/s.txt", content = "k", sensitive = true }\n', "a secret"),
        (HEADER + 'exec { name = "t", command = "true", creates = "/" }\n', "a kind without proof"),
        (HEADER + 'file { path = "~/a.txt", content = "a" }\nos.time()\n', "an uncached config"),
    ],
)
def test_no_proof_where_paths_cannot_prove_the_plan(
    sysenv: SysEnv, margin: None, config: str, why: str
) -> None:
    sysenv.write("sys.lua", config)
    ok(sysenv.run("apply"))
    _settle()
    ok(sysenv.run("apply"))
    assert not (sysenv.root / "state" / proof.NAME).exists(), why
    res, quick = _sys(sysenv, "plan")
    ok(res)
    assert not quick


def test_files_written_within_the_margin_leave_no_proof_until_they_are_older(
    sysenv: SysEnv,
) -> None:
    """The real margin (2 s): right after an apply, its files are too new to
    prove anything; once they are older, a same-size edit within the same
    timestamp tick is still seen (the ctime moves)."""
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "abc\\n" }\n')
    ok(sysenv.run("apply"))
    ok(sysenv.run("apply"))
    assert not (sysenv.root / "state" / proof.NAME).exists()
    time.sleep(proof.MARGIN / 1e9 + 0.1)
    ok(sysenv.run("apply"))
    assert (sysenv.root / "state" / proof.NAME).exists()
    target = sysenv.home / "a.txt"
    _edit_keeping_size_and_mtime(target, "abd\n")
    res, quick = _sys(sysenv, "plan")
    assert not quick and "file ~/a.txt: edited since the last apply" in res.stdout, out(res)


def test_a_damaged_proof_is_ignored(sysenv: SysEnv, margin: None) -> None:
    _converged(sysenv)
    path = sysenv.root / "state" / proof.NAME
    data = path.read_bytes()
    for damaged in (data[:-3], data[:20], b"", data.replace(b"sysluaNP1", b"sysluaNP9")):
        path.write_bytes(damaged)
        res, quick = _sys(sysenv, "plan")
        ok(res)
        assert not quick and "No changes" in res.stdout


@pytest.fixture
def converged_process(sysenv: SysEnv) -> Iterator[SysEnv]:
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "abc\\n" }\n')
    ok(sysenv.spawn("apply"))
    time.sleep(proof.MARGIN / 1e9 + 0.1)
    ok(sysenv.spawn("apply"))
    yield sysenv


def test_the_answer_imports_neither_lua_nor_typer(converged_process: SysEnv) -> None:
    """Point 5 of issue 27, as `python -X importtime` shows it."""
    sysenv = converged_process
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env=sysenv.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert "No changes. The machine matches the configuration." in res.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines() if "|" in line}
    assert "syslua.quick" in imported
    for heavy in ("lupa", "typer", "click", "rich", "syslua.cli", "syslua.plan.planner"):
        assert heavy not in imported, heavy


def test_an_unresolved_placeholder_after_unchanged_items_fails_as_the_full_apply(
    sysenv: SysEnv, margin: None
) -> None:
    """The plan gathers proofs item by item; an item whose status it could not
    read (an unknown placeholder) ends the gathering, never the run."""
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "abc\\n" }\n')
    ok(sysenv.run("apply"))
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/a.txt", content = "abc\\n" }\n'
        + 'file { path = "~/b.txt", content = "x $${nope} y\\n" }\n',
    )
    _settle()  # past the cache's "changed while evaluating" window: cached, so proofs are gathered
    res = sysenv.run("apply")
    full = sysenv.run("apply", "--no-cache")
    assert res.returncode == full.returncode == 1, out(res)
    assert "Internal error" not in out(res)


def test_a_journal_that_is_not_a_directory_is_the_full_commands(
    sysenv: SysEnv, margin: None
) -> None:
    _converged(sysenv)
    journal = sysenv.root / "state" / "journal"
    journal.rmdir()
    journal.write_text("x")
    os.chmod(journal, 0o600)
    res, quick = _sys(sysenv, "plan")
    assert not quick, out(res)


def test_an_edited_proof_header_is_not_trusted(sysenv: SysEnv, margin: None) -> None:
    _converged(sysenv)
    path = sysenv.root / "state" / proof.NAME
    data = path.read_bytes()
    found = re.search(rb'"unchanged": (\d+)', data)
    assert found is not None
    path.write_bytes(data.replace(found.group(0), b'"unchanged": 99'))
    res, quick = _sys(sysenv, "plan")
    assert not quick and f"{found.group(1).decode()} unchanged" in res.stdout, out(res)


def test_a_closed_pipe_ends_the_answer_quietly(converged_process: SysEnv) -> None:
    sysenv = converged_process
    child = subprocess.Popen(
        [sys.executable, "-m", "syslua", "plan"],
        cwd=sysenv.work,
        env=sysenv.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # `sys plan | (exec 0<&-; true)`
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 1
    assert "Traceback" not in err, err


def test_what_changed_while_the_run_planned_leaves_no_proof(sysenv: SysEnv) -> None:
    """`execute/proof._entries`: a parent that became a link, and a source
    that is not what its status compared (a link retargeted to an older
    file), make no entries."""
    from syslua.execute.proof import _entries

    work = sysenv.work
    app = work / "app"
    app.mkdir()
    since = time.time_ns() + 10 * proof.MARGIN  # everything older than the margin
    assert _entries([(str(app), proof.SHAPE, None)], since) is not None
    os.rename(app, work / "moved")
    os.symlink(work / "moved", app)
    assert _entries([(str(app), proof.SHAPE, None)], since) is None
    old, new = put(work / "old.conf", "old\n"), put(work / "new.conf", "new\n")
    os.symlink(new, work / "src.conf")
    seen = stat_index.key(os.stat(work / "src.conf"))
    assert _entries([(str(work / "src.conf"), proof.STAT, seen)], since) is not None
    os.unlink(work / "src.conf")
    os.symlink(old, work / "src.conf")
    assert _entries([(str(work / "src.conf"), proof.STAT, seen)], since) is None


def test_common_overlaps_still_make_a_proof(sysenv: SysEnv, margin: None) -> None:
    """A managed ~/.bashrc the shell advice reads too, a link to a declared
    file, an absent path whose parent does not exist: each path is claimed
    twice, or not at all, and one comparison still says it."""
    put(sysenv.work / "src" / "a.conf", "alpha\n")
    line = f"[ -f {sysenv.root}/state/env.sh ] && . {sysenv.root}/state/env.sh"
    sysenv.write(
        "sys.lua",
        HEADER
        + f'file {{ path = "~/.bashrc", content = "{line}\\n" }}\n'
        + 'file { path = "~/a.conf", source = "src/a.conf" }\n'
        + 'file { path = "~/b.conf", ensure = "link", target = "a.conf" }\n'
        + 'file { path = "~/gone/x/y.txt", ensure = "absent" }\n'
        + 'env { EDITOR = "vi" }\n',
    )
    ok(sysenv.run("apply"))
    _settle()
    ok(sysenv.run("apply"))
    assert (sysenv.root / "state" / proof.NAME).exists()
    assert _same_as_full(sysenv, "apply")
    assert _same_as_full(sysenv, "plan")
    (sysenv.home / ".bashrc").write_text("# the line is gone\n")
    res, quick = _sys(sysenv, "plan")
    assert not quick and "file ~/.bashrc: edited since the last apply" in res.stdout, out(res)
