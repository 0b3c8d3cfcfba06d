"""health_checks on any resource, run for real by `sys apply` (SPEC section 5).

`{command, tries, try_sleep, timeout}` with Nagios exit codes: 0 OK,
1 WARNING (reported, the apply succeeds), 2 CRITICAL and 3 UNKNOWN fail the
item, so the apply fails and rolls back. `sys apply --health-check-only` runs
the checks of every declared item, present or not, and changes nothing.
Checks leave their traces (counters, logs) in the work dir, outside HOME, so
the home tree can be compared byte for byte.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import HEADER, items, out, q, tree
from conftest import history as snapshots


def check(command: str, **extra: object) -> str:
    """A Lua health check table."""
    parts = [f"command = {q(command)}"] + [
        f"{k} = {v if not isinstance(v, str) else q(v)}" for k, v in extra.items()
    ]
    return "{ " + ", ".join(parts) + " }"


# -- Nagios exit codes ------------------------------------------------------------
@pytest.mark.parametrize(
    "code,state,apply_ok",
    [
        (0, "OK", True),
        (1, "WARNING", True),
        (2, "CRITICAL", False),
        (3, "UNKNOWN", False),
        (7, "UNKNOWN", False),  # outside the Nagios codes: unknown
    ],
)
def test_nagios_exit_codes(sysenv, code, state, apply_ok):
    cmd = f"sh -c 'echo state-{code}; exit {code}'"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/svc.conf", content = "x\\n", health_checks = {{ {check(cmd, name="svc")} }} }}
""",
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--json")
    assert p.returncode == (0 if apply_ok else 1), out(p)
    assert "Traceback" not in out(p)
    ev = items(p)[f"file#{sysenv.home}/svc.conf"]
    assert ev["health_checks"][0]["state"] == state, ev
    assert ev["health_checks"][0]["name"] == "svc"
    assert f"state-{code}" in ev["health_checks"][0]["output"]
    if apply_ok:
        assert ev["status"] == "changed", ev
        assert (sysenv.home / "svc.conf").read_text() == "x\n"
        if state == "WARNING":
            assert any("WARNING" in w for w in ev.get("warnings", [])), ev
    else:
        assert ev["status"] == "failed", ev
        assert f"health check svc: {state}" in ev["message"]
        # the failed item is rolled back: the file it wrote is gone again
        assert tree(sysenv.home) == before


def test_warning_is_shown_in_plain_output_and_the_apply_succeeds(sysenv):
    cmd = "sh -c 'echo disk 91% full; exit 1'"
    sysenv.write(
        "sys.lua",
        HEADER
        + f'file {{ path = "~/a", content = "a", health_checks = {{ {check(cmd, name="disk")} }} }}\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert "Warning: health check disk: WARNING (disk 91% full)" in p.stdout
    assert "Apply complete" in p.stdout


def test_critical_fails_the_apply_with_a_clear_message(sysenv):
    cmd = "sh -c 'echo port 8080 refused; exit 2'"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/other", content = "o" }}
exec {{ name = "start-app", command = "true", health_checks = {{ {check(cmd, name="http")} }} }}
""",
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "Apply failed. System unchanged." in p.stdout
    assert "exec start-app failed: health check http: CRITICAL (port 8080 refused)" in p.stdout
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before


def test_checks_run_on_every_kind_of_item(sysenv):
    log = sysenv.work / "checks.log"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/f", content = "f", health_checks = {{ "sh -c 'echo file >> {log}'" }} }}
file {{ path = "~/d", ensure = "directory", mode = "0755", health_checks = {{ "sh -c 'echo dir >> {log}'" }} }}
exec {{ name = "e", command = "true", health_checks = {{ "sh -c 'echo exec >> {log}'" }} }}
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert sorted(log.read_text().split()) == ["dir", "exec", "file"]


def test_check_sees_the_item_already_applied(sysenv):
    """The check runs after the item converged, so it can test the result."""
    target = sysenv.home / "app.conf"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/app.conf", content = "port=8080\\n", health_checks = {{ {check(f"grep -q port=8080 {target}")} }} }}
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)


# -- tries, try_sleep, timeout ----------------------------------------------------
COUNTER = (
    "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; date +%s.%N >> {c}.times; "
)


def test_check_passing_on_the_second_try(sysenv):
    c = sysenv.work / "counter"
    cmd = "sh -c '" + COUNTER.format(c=c) + "[ $n -ge 2 ] || { echo not yet; exit 2; }; echo up'"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/svc", content = "s", health_checks = {{ {check(cmd, name="up", tries=3, try_sleep="300ms")} }} }}
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    hc = items(p)[f"file#{sysenv.home}/svc"]["health_checks"][0]
    assert hc["state"] == "OK" and hc["tries"] == 2, hc
    assert c.read_text() == "2\n"  # it stopped trying once OK
    times = [float(t) for t in Path(f"{c}.times").read_text().split()]
    assert times[1] - times[0] >= 0.25, times  # try_sleep between tries


def test_tries_exhausted_fails_the_item(sysenv):
    c = sysenv.work / "counter"
    cmd = "sh -c '" + COUNTER.format(c=c) + "echo still down; exit 2'"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/svc", content = "s", health_checks = {{ {check(cmd, name="down", tries=3, try_sleep=0.1)} }} }}
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    ev = items(p)[f"file#{sysenv.home}/svc"]
    assert ev["status"] == "failed"
    assert ev["health_checks"][0]["tries"] == 3
    assert c.read_text() == "3\n"
    assert "health check down: CRITICAL (still down)" in ev["message"]
    assert not (sysenv.home / "svc").exists()


def test_check_timeout_is_unknown_and_fails_quickly(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/svc", content = "s", health_checks = {{ {check("sleep 30", name="slow", timeout="500ms")} }} }}
""",
    )
    start = time.monotonic()
    p = sysenv.run("apply", "--json")
    assert time.monotonic() - start < 20
    assert p.returncode == 1, out(p)
    ev = items(p)[f"file#{sysenv.home}/svc"]
    hc = ev["health_checks"][0]
    assert hc["state"] == "UNKNOWN" and "timed out" in hc["output"], hc


def test_check_that_cannot_start_is_unknown(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
file { path = "~/svc", content = "s", health_checks = { { command = "/nonexistent/probe --fast", name = "probe" } } }
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    ev = items(p)[f"file#{sysenv.home}/svc"]
    assert ev["status"] == "failed"
    assert "health check probe: UNKNOWN" in ev["message"]
    assert "Traceback" not in out(p)


def test_bad_health_check_declaration_is_a_config_error(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/svc", content = "s", health_checks = { { command = "true", trys = 3 } } }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert "trys" in p.stderr and "tries" in p.stderr  # with a suggestion
    assert "sys.lua:3" in p.stderr
    assert not (sysenv.home / "svc").exists()


# -- sys apply --health-check-only ----------------------------------------------------
def hco_config(sysenv, *, code: int = 0) -> tuple[Path, str]:  # type: ignore[no-untyped-def]
    log = sysenv.work / "ran.log"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/absent.txt", content = "never written\\n", health_checks = {{ "sh -c 'echo absent-file >> {log}'" }} }}
file {{ path = "~/present.txt", content = "new content\\n", health_checks = {{ "sh -c 'echo present-file >> {log}; exit {code}'" }} }}
file {{ path = "~/dir", ensure = "directory", mode = "0755", health_checks = {{ "sh -c 'echo dir >> {log}'" }} }}
file {{ path = "~/gone", ensure = "absent", health_checks = {{ "sh -c 'echo gone >> {log}'" }} }}
exec {{ name = "side-effect", command = "touch {sysenv.home}/exec-ran", health_checks = {{ "sh -c 'echo exec >> {log}'" }} }}
exec {{ name = "no-checks", command = "touch {sysenv.home}/no-checks-ran" }}
""",
    )
    (sysenv.home / "present.txt").write_text("old content\n")
    (sysenv.home / "gone").write_text("still here\n")
    return log, "sys.lua"


def test_health_check_only_runs_every_check_and_changes_nothing(sysenv):
    log, _ = hco_config(sysenv)
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--health-check-only", "--json")
    assert p.returncode == 0, out(p)
    assert tree(sysenv.home) == before
    # every declared item's check ran, whether the item is present or not
    assert sorted(log.read_text().split()) == ["absent-file", "dir", "exec", "gone", "present-file"]
    evs = items(p)
    assert all(e["status"] == "unchanged" for e in evs.values()), evs
    assert evs["exec#side-effect"]["health_checks"][0]["state"] == "OK"
    assert snapshots(sysenv) == []


def test_health_check_only_critical_exits_1_and_changes_nothing(sysenv):
    log, _ = hco_config(sysenv, code=2)
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--health-check-only")
    assert p.returncode == 1, out(p)
    assert "CRITICAL" in p.stdout and "present.txt" in p.stdout
    assert "Health checks failed" in p.stdout
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before
    assert sorted(log.read_text().split()) == ["absent-file", "dir", "exec", "gone", "present-file"]
    assert snapshots(sysenv) == []


def test_health_check_only_warning_exits_0(sysenv):
    hco_config(sysenv, code=1)
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--health-check-only", "--json")
    assert p.returncode == 0, out(p)
    ev = items(p)[f"file#{sysenv.home}/present.txt"]
    assert ev["health_checks"][0]["state"] == "WARNING"
    assert ev["warnings"], ev
    assert tree(sysenv.home) == before


def test_health_check_only_warning_is_shown_in_plain_output(sysenv):
    hco_config(sysenv, code=1)
    p = sysenv.run("apply", "--health-check-only")
    assert p.returncode == 0, out(p)
    assert "WARNING" in p.stdout


def test_child_with_health_check_only_runs_only_its_checks(sysenv):
    log = sysenv.work / "child-check.log"
    sysenv.write(
        "child.lua",
        HEADER
        + f"""\
file {{ path = "~/child.txt", content = "c", health_checks = {{ "sh -c 'echo child >> {log}'" }} }}
""",
    )
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
file { path = "~/parent.txt", content = "p" }
apply { name = "child.lua", health_check_only = true }
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "parent.txt").read_text() == "p"
    assert not (sysenv.home / "child.txt").exists()
    assert log.read_text() == "child\n"
