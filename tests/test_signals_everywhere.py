"""Ctrl-C and SIGTERM in every command that changes the machine (issue 22, point 4).

`sys destroy` and `sys rollback` run the apply machinery: a signal while
they change the machine starts nothing new, undoes what they did and ends
with `Destroy interrupted. System unchanged.` (`Rollback ...`), exit 130,
leaving no journal. `sys add`, `sys gc`, `sys snapshot delete`, `sys update`,
`sys pull` and `sys init --from` change the machine in one short critical
section: a signal before it stops the command with nothing changed (exit
130), one during it lets the section finish and then stops (exit 130, saying
that what was done is kept).

Every signal is a real one, sent to a real `python -m syslua` process.
"""

from __future__ import annotations

import fcntl
import json
import signal
from types import SimpleNamespace

import pytest
from conftest import apply_ok, current, history, put, tree
from test_interrupt import ROLLING_BACK, Running, held_undo, journal, last_lines, wait_for_text

from syslua.execute.stop import PAUSE_AT

SIGNALS = pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"]
)


@pytest.fixture
def background(sysenv):  # type: ignore[no-untyped-def]
    """Start `sys ARGS...` as a real process in the background (`test_interrupt.Running`)."""
    started: list[Running] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Running:
        where = SimpleNamespace(work=sysenv.work, env={**sysenv.env, **(env or {})})
        started.append(Running(where, *args))
        return started[-1]

    yield start
    for r in started:
        r.close()


def slow_undo_exec(marker, release, name: str = "slow") -> str:  # type: ignore[no-untyped-def]
    """An exec whose undo says it started (`marker`), then runs until `release` exists."""
    undo = held_undo(marker, release)
    return (
        f'local e = exec {{ name = "{name}", provider = "shell", command = "true", '
        f"undo = {json.dumps(undo)} }}\n"
    )


# -- destroy -------------------------------------------------------------------
@SIGNALS
def test_signal_during_destroy_rolls_it_back(sysenv, background, signum) -> None:
    """A file removed before the exec's undo started comes back."""
    marker, release = sysenv.work / "undoing", sysenv.work / "release"
    put(sysenv.home / ".bashrc", "# hand-made\n", 0o600)
    s1 = apply_ok(
        sysenv,
        slow_undo_exec(marker, release)
        + """
file { path = "~/a.txt", content = "a\\n", depends_on = { e } }
file { path = "~/.bashrc", content = "# managed\\n", depends_on = { e } }
""",
    )
    before = tree(sysenv.home)
    run = background("destroy", "--yes")
    run.wait_for(marker)
    assert not (sysenv.home / "a.txt").exists()  # half-way: the files went first
    run.send(signum)
    code, text = run.finish()
    assert code == 130, text
    assert ROLLING_BACK in text, text
    assert last_lines(text) == ["Destroy interrupted. System unchanged."], text
    assert "Traceback" not in text, text
    assert tree(sysenv.home) == before
    assert not journal(sysenv).exists()
    assert current(sysenv) == s1 and len(history(sysenv)) == 1
    # and the next command finds nothing to recover
    release.write_text("")
    p = sysenv.run("destroy", "--yes")
    assert p.returncode == 0 and "rolled back an interrupted" not in p.stderr, p.stderr


# -- rollback ------------------------------------------------------------------
@SIGNALS
def test_signal_during_sys_rollback_rolls_it_back(sysenv, background, signum) -> None:
    marker, release = sysenv.work / "undoing", sysenv.work / "release"
    s1 = apply_ok(sysenv, 'file { path = "~/x.conf", content = "x v1\\n" }\n')
    s2 = apply_ok(
        sysenv,
        slow_undo_exec(marker, release)
        + 'file { path = "~/x.conf", content = "x v2\\n", depends_on = { e } }\n'
        + 'file { path = "~/new.txt", content = "new\\n", depends_on = { e } }\n',
    )
    before = tree(sysenv.home)
    run = background("rollback")
    run.wait_for(marker)
    assert not (sysenv.home / "new.txt").exists()  # half-way back to s1
    run.send(signum)
    code, text = run.finish()
    assert code == 130, text
    assert ROLLING_BACK in text, text
    assert last_lines(text) == ["Rollback interrupted. System unchanged."], text
    assert tree(sysenv.home) == before
    assert not journal(sysenv).exists()
    h = history(sysenv)
    assert [x["id"] for x in h] == [s2, s1] and h[0]["current"]


# -- commands with a critical section --------------------------------------------
INTERRUPTED_AFTER = "Interrupted after the change was made: it is kept, not undone."
FINISHING = "Finishing what cannot stop half-way; it stops right after."


def paused(sysenv, background, *args: str) -> Running:  # type: ignore[no-untyped-def]
    """`sys ARGS...` in the background, held at the start of its critical section."""
    run = background(*args, env={PAUSE_AT: f"critical:{sysenv.work}"})
    run.wait_for(sysenv.work / "paused")
    return run


def signalled(sysenv, run: Running, signum: int) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    run.send(signum)
    wait_for_text(run, FINISHING)
    (sysenv.work / "release").write_text("")
    return run.finish()


@SIGNALS
def test_signal_during_snapshot_delete_finishes_it(sysenv, background, signum) -> None:
    s1 = apply_ok(sysenv, 'file { path = "~/a.txt", content = "1\\n" }\n')
    s2 = apply_ok(sysenv, 'file { path = "~/a.txt", content = "2\\n" }\n')
    home = tree(sysenv.home)
    code, text = signalled(sysenv, paused(sysenv, background, "snapshot", "delete", s1), signum)
    assert code == 130, text
    assert f"Deleted snapshot {s1}." in text, text
    assert last_lines(text) == [INTERRUPTED_AFTER], text
    assert [h["id"] for h in history(sysenv)] == [s2]
    assert not (sysenv.root / "state" / "snapshots" / f"{s1}.json").exists()
    assert tree(sysenv.home) == home and not journal(sysenv).exists()


@SIGNALS
def test_signal_during_gc_finishes_it(sysenv, background, signum) -> None:
    ids = [apply_ok(sysenv, f'file {{ path = "~/a.txt", content = "{n}\\n" }}\n') for n in range(3)]
    home = tree(sysenv.home)
    code, text = signalled(sysenv, paused(sysenv, background, "gc", "--keep", "0"), signum)
    assert code == 130, text
    assert "Removed 2 snapshot(s)" in text, text
    assert last_lines(text) == [INTERRUPTED_AFTER], text
    assert [h["id"] for h in history(sysenv)] == [ids[-1]]
    assert tree(sysenv.home) == home
    p = sysenv.run("gc", "--keep", "0", "--dry-run")  # nothing left half-collected
    assert "Would remove 0 snapshot(s), 0 store object(s)" in p.stdout, p.stdout


@SIGNALS
def test_signal_during_add_finishes_it(sysenv, background, signum) -> None:
    src = sysenv.write("dotfiles/vimrc", "set nu\n")
    s1 = apply_ok(sysenv, f'file {{ path = "~/.vimrc", source = "{src}" }}\n')
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    code, text = signalled(sysenv, paused(sysenv, background, "add", "~/.vimrc"), signum)
    assert code == 130, text
    assert last_lines(text) == [INTERRUPTED_AFTER], text
    assert src.read_text() == "set nu\nset hls\n"  # taken back whole
    assert current(sysenv) != s1 and not journal(sysenv).exists()
    p = sysenv.run("status")
    assert p.returncode == 0 and "No drift" in p.stdout, p.stdout


def test_signal_before_gc_starts_changes_nothing(sysenv, background) -> None:
    """Waiting for the lock, nothing is removed yet: the command ends at once."""
    for n in range(3):
        apply_ok(sysenv, f'file {{ path = "~/a.txt", content = "{n}\\n" }}\n')
    root = tree(sysenv.root)
    lock = sysenv.root / "state" / "lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        run = background("gc", "--keep", "0", "--wait")
        wait_for_text(run, "Waiting for the lock")
        run.send(signal.SIGINT)
        code, text = run.finish()
    assert code == 130, text
    assert last_lines(text) == ["Interrupted."], text
    assert tree(sysenv.root) == root
