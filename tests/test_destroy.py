"""`sys destroy [--dry-run]` (issue 10): everything syslua manages removed,
every original restored, atomically and recorded, so `sys rollback` undoes it.
And `sys rollback` from the oldest snapshot points to `sys destroy`.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from conftest import HEADER, history, out, put, tree
from httpserver import make_tar, tool
from ptyrun import Pty, run_in_pty

CONFIG = """
file { path = "~/.bashrc", content = "# managed\\n" }
file { path = "~/.config/app", ensure = "directory", mode = "0755" }
file { path = "~/.config/app/conf", content = "managed = true\\n", mode = "0600" }
exec { name = "mark", command = "touch ~/.marked", provider = "shell",
       creates = "~/.marked", undo = "rm -f ~/.marked" }
env { EDITOR = "vi" }
"""


def apply_ok(sysenv, body: str = CONFIG):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    return p


def hand_made(sysenv) -> dict:  # type: ignore[no-untyped-def]
    """A home with files of its own, some of which the config takes over."""
    put(sysenv.home / ".bashrc", "# my own bashrc\n", 0o600)
    put(sysenv.home / ".config" / "other", "not managed\n")
    return tree(sysenv.home)


def test_destroy_restores_the_machine_as_it_was_before_the_first_apply(sysenv) -> None:
    original = hand_made(sysenv)
    apply_ok(sysenv)
    apply_ok(sysenv, CONFIG.replace("# managed", "# managed v2"))
    managed = tree(sysenv.home)
    assert managed != original
    p = sysenv.run("destroy", "--yes")
    assert p.returncode == 0, out(p)
    assert "Traceback" not in out(p)
    assert "Destroy complete: snapshot" in p.stdout
    assert "restored the original it took over" in p.stdout
    assert "`sys rollback` undoes this." in p.stdout
    assert tree(sysenv.home) == original
    h = history(sysenv)
    assert h[0]["kind"] == "destroy" and h[0]["current"], h
    # the env scripts stay, for shells that load them, but declare nothing
    env_sh = (sysenv.root / "state" / "env.sh").read_text()
    assert "EDITOR" not in env_sh
    # recorded: status compares with an empty manifest, plan would create everything again
    assert "No drift" in sysenv.run("status").stdout
    plan = sysenv.run("plan")
    assert "+ file ~/.config/app/conf" in plan.stdout, plan.stdout
    # undone by a rollback, which takes the originals over again
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert tree(sysenv.home) == managed
    assert "EDITOR" in (sysenv.root / "state" / "env.sh").read_text()
    assert sysenv.run("destroy", "--yes").returncode == 0
    assert tree(sysenv.home) == original


def test_dry_run_changes_nothing(sysenv) -> None:
    hand_made(sysenv)
    apply_ok(sysenv)
    home, state = tree(sysenv.home), tree(sysenv.root / "state")
    p = sysenv.run("destroy", "--dry-run")
    assert p.returncode == 0, out(p)
    assert "- file ~/.bashrc" in p.stdout and "- exec mark" in p.stdout, p.stdout
    assert '  - env EDITOR: "vi" -> unset' in p.stdout, p.stdout
    assert "Plan: 0 to create, 0 to update, 5 to remove" in p.stdout, p.stdout
    assert "Dry run: nothing was changed." in p.stdout
    assert tree(sysenv.home) == home
    assert {k: v for k, v in tree(sysenv.root / "state").items() if k != "lock"} == {
        k: v for k, v in state.items() if k != "lock"
    }
    data = json.loads(sysenv.run("destroy", "--dry-run", "--json").stdout)
    assert data["dry_run"] is True
    assert {e["label"] for e in data["plan"]["removals"]} == {
        "~/.bashrc",
        "~/.config/app",
        "~/.config/app/conf",
        "mark",
    }
    assert tree(sysenv.home) == home


def test_nothing_to_destroy(sysenv) -> None:
    p = sysenv.run("destroy", "--yes")
    assert p.returncode == 0, out(p)
    assert "Nothing to destroy: nothing has been applied yet." in p.stdout
    apply_ok(sysenv, 'file { path = "~/a", content = "a\\n" }\n')
    assert sysenv.run("destroy", "--yes").returncode == 0
    p = sysenv.run("destroy", "--yes")
    assert p.returncode == 0 and "Nothing to destroy: snapshot" in p.stdout, out(p)
    assert len(history(sysenv)) == 2


def test_destroy_is_atomic(sysenv) -> None:
    original = hand_made(sysenv)
    apply_ok(
        sysenv,
        CONFIG + 'exec { name = "stuck", command = "true", undo = "false" }\n',
    )
    managed, snaps = tree(sysenv.home), history(sysenv)
    p = sysenv.run("destroy", "--yes")
    assert p.returncode == 1, out(p)
    assert "Destroy failed. System unchanged." in p.stdout, out(p)
    assert tree(sysenv.home) == managed != original
    assert history(sysenv) == snaps


def test_destroy_keeps_edits_for_rollback(sysenv) -> None:
    apply_ok(sysenv)
    (sysenv.home / ".config" / "app" / "conf").write_text("edited = true\n")
    edited = tree(sysenv.home)
    p = sysenv.run("destroy", "--dry-run")
    assert "! file ~/.config/app/conf: edited since the last apply" in p.stdout, p.stdout
    assert "`sys destroy --force` keeps them in a snapshot first" in p.stdout
    p = sysenv.run("destroy", "--yes")  # refused: an edited path is not removed unasked
    assert p.returncode == 2, out(p)
    assert "Refusing to remove 1 path edited since the last apply:" in p.stdout, out(p)
    assert tree(sysenv.home) == edited
    p = sysenv.run("destroy", "--yes", "--force")  # no prompt
    assert p.returncode == 0, out(p)
    assert "Kept 1 path edited since the last apply in snapshot" in p.stdout
    assert not (sysenv.home / ".config" / "app").exists()
    assert [s["kind"] for s in history(sysenv)] == ["destroy", "edits", "apply"]
    assert sysenv.run("rollback").returncode == 0
    assert tree(sysenv.home) == edited


def test_destroy_empties_the_profile_and_rollback_relinks_it(sysenv, server) -> None:
    url, sha = server.put("t.tar.gz", make_tar({"bin/mytool": tool("hi")}))
    apply_ok(
        sysenv,
        f'package {{ name = "mytool", version = "1.0", bin = {{ "bin/mytool" }}, '
        f'source = lib.fetchUrl {{ url = "{url}", sha256 = "{sha}" }} }}\n',
    )
    link = sysenv.root / "state" / "profile" / "bin" / "mytool"
    assert link.is_symlink()
    p = sysenv.run("destroy", "--yes")
    assert p.returncode == 0, out(p)
    assert not os.path.lexists(link)
    assert sysenv.run("rollback").returncode == 0
    assert link.is_symlink() and server.count("t.tar.gz") == 1  # the tree stayed in the store


def test_destroy_json(sysenv) -> None:
    apply_ok(sysenv)
    p = sysenv.run("destroy", "--yes", "--json")
    assert p.returncode == 0, out(p)
    events = [json.loads(ln) for ln in p.stdout.splitlines() if ln.strip()]
    assert events[-1]["event"] == "summary" and events[-1]["result"] == "ok"
    assert events[-1]["snapshot"] == history(sysenv)[0]["id"]


def test_rollback_from_the_oldest_snapshot_suggests_destroy(sysenv) -> None:
    apply_ok(sysenv)
    before = tree(sysenv.home)
    p = sysenv.run("rollback")
    assert p.returncode == 2, out(p)
    assert "is the oldest one: there is no previous snapshot to roll back to" in p.stderr
    assert "run `sys destroy`" in p.stderr, out(p)
    assert tree(sysenv.home) == before


# -- issue 23, point 5: a destroy asks first, as `terraform destroy` does --------------
def on_pty(sysenv, *args: str, answer: str | None) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """`sys ARGS` as a real process on a pseudo-terminal (stdin, stdout and
    stderr); `answer` is typed once the question shows. Returns the exit code
    and everything the terminal showed."""
    typed = answer is None

    def answering(pty: Pty, _: bytes) -> None:
        nonlocal typed
        if not typed and b"[y/N]" in pty.seen:
            pty.type(f"{answer}\n")
            typed = True

    code, seen, _ = run_in_pty(
        [sys.executable, "-m", "syslua", *args],
        env={**sysenv.env, "TERM": "dumb", "COLUMNS": "100"},
        cwd=sysenv.work,
        each=answering,
    )
    return code, seen.decode("utf-8", "replace").replace("\r\n", "\n")


def test_destroy_off_a_terminal_needs_yes(sysenv) -> None:
    hand_made(sysenv)
    apply_ok(sysenv)
    home, snaps = tree(sysenv.home), history(sysenv)
    for args in (("destroy",), ("destroy", "--force"), ("destroy", "--json")):
        p = sysenv.run(*args, input="y\n")  # a pipe is no terminal, whatever it holds
        assert p.returncode == 2, out(p)
        assert "pass --yes to go ahead (`sys destroy --yes`)" in p.stderr, out(p)
        assert "Traceback" not in out(p)
        assert tree(sysenv.home) == home and history(sysenv) == snaps
    # -y is --yes; --dry-run never asks
    assert sysenv.run("destroy", "--dry-run").returncode == 0
    assert tree(sysenv.home) == home and history(sysenv) == snaps
    p = sysenv.run("destroy", "-y")
    assert p.returncode == 0 and "Destroy complete: snapshot" in p.stdout, out(p)


@pytest.mark.parametrize("answer", ["n", "", "nope", "YESS"])
def test_destroy_on_a_terminal_asks_and_no_changes_nothing(sysenv, answer: str) -> None:
    apply_ok(sysenv)
    home, snaps = tree(sysenv.home), history(sysenv)
    code, text = on_pty(sysenv, "destroy", answer=answer)
    assert code == 2, text
    # what would go is shown before the question
    assert "sys destroy will remove everything snapshot" in text, text
    assert "- file ~/.bashrc" in text, text
    assert "Destroy everything syslua manages? `sys rollback` undoes it. [y/N]" in text, text
    assert "Destroy cancelled: nothing was changed." in text, text
    assert tree(sysenv.home) == home and history(sysenv) == snaps


@pytest.mark.parametrize("answer", ["y", "yes", "Y", "YES"])
def test_destroy_on_a_terminal_goes_ahead_on_y_or_yes(sysenv, answer: str) -> None:
    original = hand_made(sysenv)
    apply_ok(sysenv)
    code, text = on_pty(sysenv, "destroy", answer=answer)
    assert code == 0, text
    assert "[y/N]" in text and "Destroy complete: snapshot" in text, text
    assert tree(sysenv.home) == original
    assert history(sysenv)[0]["kind"] == "destroy"


def test_destroy_on_a_terminal_with_yes_or_dry_run_does_not_ask(sysenv) -> None:
    original = hand_made(sysenv)
    apply_ok(sysenv)
    managed = tree(sysenv.home)
    code, text = on_pty(sysenv, "destroy", "--dry-run", answer=None)
    assert code == 0 and "[y/N]" not in text and "Dry run: nothing was changed." in text, text
    assert tree(sysenv.home) == managed
    code, text = on_pty(sysenv, "destroy", "--yes", answer=None)
    assert code == 0 and "[y/N]" not in text and "Destroy complete" in text, text
    assert tree(sysenv.home) == original
