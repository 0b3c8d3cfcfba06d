"""Ctrl-C and SIGTERM in `sys update`, `sys pull` and `sys init --from`
(issue 22, point 4; the other commands are in test_signals_everywhere.py).

- `sys update`: a signal before the rename of `syslua.lock` stops with the
  lock as it was (exit 130, `Interrupted.`); one during its write waits for
  the rename, then stops (exit 130, the new lock kept). No temp file is left.
- `sys pull`: a signal during `git fetch` kills git and leaves the work tree
  as it was; one during `git merge --ff-only` waits for it, then stops
  without the plan.
- `sys init --from`: a clone interrupted is taken back.

Every signal is a real one, sent to a real `python -m syslua` process; git
runs over file:// from bare repositories the test makes. Where the signal
must come while git runs, `git` on PATH is the real one followed by a wait
(`held_git`), so the signal finds it still running.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import test_init_from
import test_signals_everywhere
from conftest import tree
from test_init_from import git, push
from test_inputs import GREET, Repo, entry, locked_rev
from test_interrupt import gone, last_lines, started, wait_for_text
from test_signals_everywhere import FINISHING, INTERRUPTED_AFTER, SIGNALS

from syslua.execute.stop import PAUSE_AT

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="needs git")

# fixtures of other modules, used here by name
background = test_signals_everywhere.background
remote = test_init_from.remote


def held_git(sysenv, verb: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """An environment whose `git` runs the real one, then, for `git VERB`,
    writes its pid to work/held and waits until work/release exists."""
    bin_dir = sysenv.work / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'"{GIT}" "$@"; rc=$?\n'
        f'if [ "$1" = "{verb}" ]; then\n'
        f'  echo $$ > "{sysenv.work}/held.tmp" && mv "{sysenv.work}/held.tmp" "{sysenv.work}/held"\n'
        f'  while [ ! -e "{sysenv.work}/release" ]; do sleep 0.02; done\n'
        "fi\n"
        "exit $rc\n"
    )
    wrapper.chmod(0o755)
    return {"PATH": f"{bin_dir}:{sysenv.env['PATH']}"}


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".syslua-" in p.name)


# -- sys update -----------------------------------------------------------------
@pytest.fixture
def updatable(sysenv, tmp_path):  # type: ignore[no-untyped-def]
    """A config whose git input is locked at one commit, with a newer one upstream."""
    repo = Repo(tmp_path / "repos", "dots")
    repo.commit({"lua/greet/init.lua": 'return { hi = "v1" }\n', "dotrc": "dot v1"})
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    p = sysenv.run("apply", "-q", "init.lua")
    assert p.returncode == 0, p.stderr
    old = locked_rev(sysenv, "dots")
    new = repo.commit({"lua/greet/init.lua": 'return { hi = "v2" }\n'})
    return old, new


@SIGNALS
def test_signal_before_the_lock_is_written_changes_nothing(
    sysenv, background, updatable, signum
) -> None:
    old, _ = updatable
    before = tree(sysenv.work)
    run = background("update", "-c", "init.lua", env={PAUSE_AT: f"before-critical:{sysenv.work}"})
    run.wait_for(sysenv.work / "paused")
    (sysenv.work / "paused").unlink()
    run.send(signum)
    code, text = run.finish()
    assert code == 130, text
    assert last_lines(text) == ["Interrupted."], text
    assert "Traceback" not in text and "Lock file updated" not in text, text
    assert locked_rev(sysenv, "dots") == old
    after = tree(sysenv.work)
    after.pop(next(k for k in after if k.startswith("bg-")))  # the test's log
    assert after == before and not temp_files(sysenv.work)


@SIGNALS
def test_signal_while_the_lock_is_written_finishes_it(
    sysenv, background, updatable, signum
) -> None:
    _, new = updatable
    run = background("update", "-c", "init.lua", env={PAUSE_AT: f"critical:{sysenv.work}"})
    run.wait_for(sysenv.work / "paused")
    run.send(signum)
    wait_for_text(run, FINISHING)
    (sysenv.work / "release").write_text("")
    code, text = run.finish()
    assert code == 130, text
    assert f"Lock file updated: {sysenv.work / 'syslua.lock'}" in text, text
    assert last_lines(text) == [INTERRUPTED_AFTER], text
    assert locked_rev(sysenv, "dots") == new  # the whole new lock, renamed in place
    assert not temp_files(sysenv.work)


# -- sys pull -------------------------------------------------------------------
@pytest.fixture
def pullable(sysenv, remote):  # type: ignore[no-untyped-def]
    """A clone made by `sys init --from`, one commit behind its remote."""
    url, author = remote
    clone = sysenv.work / "clone"
    p = sysenv.run("init", "--from", url, str(clone))
    assert p.returncode == 0, p.stderr
    first = git("rev-parse", "HEAD", cwd=clone).strip()
    push(author, "-- version 2\n" + (author / "sys.lua").read_text(), "second")
    return clone, first, git("rev-parse", "HEAD", cwd=author).strip()


def work_tree(clone: Path) -> dict[str, object]:
    return {k: v for k, v in tree(clone).items() if not k.startswith(".git")}


@SIGNALS
def test_signal_during_git_fetch_changes_no_work_tree_file(
    sysenv, background, pullable, signum
) -> None:
    clone, first, _ = pullable
    before = work_tree(clone)
    run = background("pull", str(clone), env=held_git(sysenv, "fetch"))
    run.wait_for(sysenv.work / "held")
    pid = int((sysenv.work / "held").read_text())
    since = started(pid)
    run.send(signum)
    code, text = run.finish()
    assert code == 130, text
    assert last_lines(text) == ["Interrupted."], text
    assert "Traceback" not in text and "Updated" not in text, text
    assert gone(pid, since=since), "git still runs after the pull ended"
    assert git("rev-parse", "HEAD", cwd=clone).strip() == first
    assert work_tree(clone) == before
    assert git("status", "--porcelain", cwd=clone) == ""


@SIGNALS
def test_signal_during_the_fast_forward_finishes_it(sysenv, background, pullable, signum) -> None:
    clone, first, second = pullable
    run = background("pull", str(clone), env={PAUSE_AT: f"critical:{sysenv.work}"})
    run.wait_for(sysenv.work / "paused")
    run.send(signum)
    wait_for_text(run, FINISHING)
    (sysenv.work / "release").write_text("")
    code, text = run.finish()
    assert code == 130, text
    assert f"Updated {clone}: {first[:12]}..{second[:12]} (1 commit)." in text, text
    assert last_lines(text) == [INTERRUPTED_AFTER], text
    assert "to create" not in text, text  # it stopped before the plan
    assert git("rev-parse", "HEAD", cwd=clone).strip() == second
    assert (clone / "sys.lua").read_text().startswith("-- version 2\n")
    assert git("status", "--porcelain", cwd=clone) == ""


# -- sys init --from ------------------------------------------------------------
@SIGNALS
@pytest.mark.parametrize("existed", [False, True], ids=["new-dir", "empty-dir"])
def test_signal_during_the_clone_takes_it_back(
    sysenv,
    background,
    remote,
    signum,
    existed,
) -> None:
    url, _ = remote
    target = sysenv.work / "dotfiles"
    if existed:
        target.mkdir()
    run = background("init", "--from", url, str(target), env=held_git(sysenv, "clone"))
    run.wait_for(sysenv.work / "held")
    assert (target / "sys.lua").exists()  # git has written the clone
    pid = int((sysenv.work / "held").read_text())
    since = started(pid)
    run.send(signum)
    code, text = run.finish()
    assert code == 130, text
    assert last_lines(text) == ["Interrupted."], text
    assert "Traceback" not in text and "Cloned" not in text, text
    assert gone(pid, since=since), "git still runs after init ended"
    if existed:
        assert target.is_dir() and not any(target.iterdir())
    else:
        assert not target.exists()
    assert not (sysenv.root / "state" / "snapshots" / "index.json").exists()
