"""What `sys rollback` says the next `sys apply` will redo (issue 27).

After a rollback, the output names the items the config still declares
otherwise (`the next sys apply will redo it`). For plain files it is found
from what the rollback wrote and what the config declares (sources compared
by digest), without planning the whole config a second time; anything else
(a mode or owner change, a hand edit kept, a tree, a template) is planned as
before. Either way the note names exactly what the next plan changes, in
the plan's order.
"""

from __future__ import annotations

from conftest import HEADER, apply_ok, out, put

REDO = "the next sys apply will redo it."
NAMES = ("a", "b", "c", "d", "e")
FILES = "".join(f'file {{ path = "~/.{n}", source = "dots/{n}" }}\n' for n in NAMES)


def _note(r) -> str:  # type: ignore[no-untyped-def]
    assert r.returncode == 0, out(r)
    lines = [ln for ln in r.stdout.splitlines() if REDO in ln]
    assert len(lines) <= 1, out(r)
    return lines[0] if lines else ""


def _changed_in_plan(sysenv) -> list[str]:  # type: ignore[no-untyped-def]
    lines = sysenv.run("plan").stdout.splitlines()
    return [n for n in NAMES if any(ln.startswith(f"  ~ file ~/.{n}:") for ln in lines)]


def test_a_source_put_back_by_hand_is_not_redone(sysenv) -> None:
    """Every source changed and applied, then one put back as it was (same
    size, other bytes than what was applied): the rollback's note names the
    four the next apply rewrites, and the plan agrees."""
    for n in NAMES:
        put(sysenv.work / "dots" / n, f"{n} one\n")
    apply_ok(sysenv, FILES)
    for n in NAMES:
        put(sysenv.work / "dots" / n, f"{n} two\n")
    apply_ok(sysenv, FILES)
    put(sysenv.work / "dots" / "c", "c one\n")
    r = sysenv.run("rollback")
    assert all((sysenv.home / f".{n}").read_text() == f"{n} one\n" for n in NAMES)
    assert _note(r) == (
        f"sys.lua still declares what was rolled back (~/.a, ~/.b, ~/.d and 1 more): {REDO}"
    ), out(r)
    assert _changed_in_plan(sysenv) == ["a", "b", "d", "e"]


def test_same_size_source_edit_is_redone(sysenv) -> None:
    """A source edited to other bytes of the same size after the apply
    rolled back: the next apply writes it, and the note says so."""
    for n in NAMES:
        put(sysenv.work / "dots" / n, f"{n} one\n")
    apply_ok(sysenv, FILES)
    put(sysenv.work / "dots" / "a", "a two\n")
    apply_ok(sysenv, FILES)
    put(sysenv.work / "dots" / "a", "a six\n")  # neither what was applied nor rolled back to
    r = sysenv.run("rollback")
    assert _note(r) == f"sys.lua still declares what was rolled back (~/.a): {REDO}", out(r)
    assert _changed_in_plan(sysenv) == ["a"]


def test_all_sources_put_back_says_nothing(sysenv) -> None:
    for n in NAMES:
        put(sysenv.work / "dots" / n, f"{n} one\n")
    apply_ok(sysenv, FILES)
    for n in NAMES:
        put(sysenv.work / "dots" / n, f"{n} two\n")
    apply_ok(sysenv, FILES)
    for n in NAMES:
        put(sysenv.work / "dots" / n, f"{n} one\n")
    r = sysenv.run("rollback")
    assert _note(r) == "", out(r)
    assert _changed_in_plan(sysenv) == []


def test_mode_and_content_changes_together(sysenv) -> None:
    """One file's mode changed (planned as before), others' content (found
    without a plan), inline content among them: one note, in plan order."""
    body1 = HEADER + FILES + 'file { path = "~/.f", content = "f\\n", mode = "0600" }\n'
    for n in NAMES:
        put(sysenv.work / "dots" / n, f"{n} one\n")
    sysenv.write("sys.lua", body1)
    assert sysenv.run("apply").returncode == 0
    put(sysenv.work / "dots" / "b", "b two\n")
    body2 = body1.replace('"f\\n", mode = "0600"', '"f\\n", mode = "0640"').replace(
        'source = "dots/e" }', 'content = "e inline\\n" }'
    )
    sysenv.write("sys.lua", body2)
    assert sysenv.run("apply").returncode == 0
    r = sysenv.run("rollback")
    assert (sysenv.home / ".f").stat().st_mode & 0o777 == 0o600
    assert _note(r) == (
        f"sys.lua still declares what was rolled back (~/.b, ~/.e, ~/.f): {REDO}"
    ), out(r)


def test_a_rollback_of_files_makes_no_thread_pool(sysenv) -> None:
    """Files run in the scheduler's own thread: a rollback of files alone
    imports no thread pool; one with an exec still runs it in a worker."""
    put(sysenv.work / "dots" / "a", "a one\n")
    apply_ok(sysenv, FILES.splitlines()[0] + "\n")
    put(sysenv.work / "dots" / "a", "a two\n")
    apply_ok(sysenv, FILES.splitlines()[0] + "\n")
    res, loaded = sysenv.modules_after("rollback")
    assert res.returncode == 0 and "concurrent.futures" not in loaded, res.stderr
    assert (sysenv.home / ".a").read_text() == "a one\n"
    ran = sysenv.home / "ran"
    body = FILES.splitlines()[0] + f'\nexec {{ name = "touch", command = "touch {ran}" }}\n'
    apply_ok(sysenv, body)
    ran.unlink()
    apply_ok(sysenv, body.replace("touch ", "touch -c "))
    res, loaded = sysenv.modules_after("rollback")
    assert res.returncode == 0 and "concurrent.futures" in loaded, res.stderr
    assert ran.exists()


def test_a_file_the_rollback_removed_or_brought_back_is_planned(sysenv) -> None:
    """Files that only one side declares are not plain rewrites: the config
    is planned, as before, and the note names them in the plan's order."""
    for n in NAMES:
        put(sysenv.work / "dots" / n, f"{n} one\n")
    apply_ok(sysenv, FILES)  # a b c d e
    put(sysenv.work / "dots" / "a", "a two\n")
    later = "".join(ln + "\n" for ln in FILES.splitlines() if '".d"' not in ln and "/d" not in ln)
    later += 'file { path = "~/.f", content = "f\\n" }\n'
    apply_ok(sysenv, later)  # a changed, d gone, f new
    assert not (sysenv.home / ".d").exists() and (sysenv.home / ".f").exists()
    r = sysenv.run("rollback")
    assert (sysenv.home / ".d").exists() and not (sysenv.home / ".f").exists()
    assert _note(r) == (
        f"sys.lua still declares what was rolled back (~/.a, ~/.f, ~/.d): {REDO}"
    ), out(r)
