"""The real-systemd fixture (tests/systemd_ns.py) boots, runs units, and cannot reach the host."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import systemd_ns as sdns
from systemd_ns import HOST_TMP, HOST_UNITS, SystemdNS, booted, listing

pytestmark = pytest.mark.root

TICK = """[Unit]
Description=syslua test: a small shell-script service

[Service]
ExecStartPre=/bin/sh -c 'echo started >> {log}'
ExecStart=/bin/sh -c 'exec sleep 300'

[Install]
WantedBy={target}
"""


def test_it_boots_as_pid_1_of_its_own_namespace(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    assert ns.systemctl("is-system-running").stdout.strip() in ("running", "degraded")
    assert os.path.realpath(f"/proc/{ns.pid}/exe") == os.path.realpath(sdns.SYSTEMD)
    status = Path(f"/proc/{ns.pid}/status").read_text()
    assert [line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")] == [
        [str(ns.pid), "1"]
    ]
    for ns_kind in ("pid", "mnt"):
        assert os.readlink(f"/proc/{ns.pid}/ns/{ns_kind}") != os.readlink(
            f"/proc/self/ns/{ns_kind}"
        )
    # inside, /tmp, /run, /var/tmp and the unit directory are fresh tmpfs
    r = ns.run(["stat", "-f", "-c", "%T", "/tmp", "/run", "/var/tmp", "/etc/systemd/system"])
    assert r.stdout.split() == ["tmpfs"] * 4, r
    assert ns.run(["test", "-e", str(ns.sentinel)]).returncode == 1


def test_a_shell_service_starts_stops_and_enables_inside(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    log = ns.work / "tick-system.log"
    host_units = listing(HOST_UNITS)
    path = ns.write_unit("tick.service", TICK.format(log=log, target="multi-user.target"))
    assert path == "/etc/systemd/system/tick.service"
    assert not (HOST_UNITS / "system/tick.service").exists()  # the host cannot see it
    assert ns.is_active("tick") == "inactive"
    assert ns.systemctl("start", "tick").returncode == 0
    assert ns.is_active("tick") == "active"
    assert log.read_text() == "started\n"  # the work dir is shared
    assert ns.systemctl("restart", "tick").returncode == 0
    assert log.read_text() == "started\nstarted\n"
    assert ns.is_enabled("tick") == "disabled"
    assert ns.systemctl("enable", "tick").returncode == 0
    assert ns.is_enabled("tick") == "enabled"
    assert (
        ns.run(
            ["test", "-L", "/etc/systemd/system/multi-user.target.wants/tick.service"]
        ).returncode
        == 0
    )
    assert ns.systemctl("stop", "tick").returncode == 0
    assert ns.is_active("tick") == "inactive"
    assert ns.systemctl("disable", "tick").returncode == 0
    assert ns.is_enabled("tick") == "disabled"
    assert listing(HOST_UNITS) == host_units
    assert not list(HOST_UNITS.rglob("tick.service"))


def test_user_scope_runs_the_test_users_manager(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    u = ns.user
    assert not str(u.home).startswith(str(HOST_TMP) + "/")
    assert ns.systemctl("is-active", f"user@{u.uid}.service").stdout.strip() == "active"
    assert ns.systemctl("is-system-running", user=True).stdout.strip() in ("running", "degraded")
    assert ns.run(["id", "-u"], user=True).stdout.strip() == str(u.uid)
    log = ns.mkdir("user-log", user=True) / "tick.log"
    path = ns.write_unit("utick.service", TICK.format(log=log, target="default.target"), user=True)
    assert path == f"{u.home}/.config/systemd/user/utick.service"
    assert ns.systemctl("start", "utick", user=True).returncode == 0
    assert ns.is_active("utick", user=True) == "active"
    assert ns.is_active("utick") == "inactive"  # not a system unit
    assert ns.systemctl("enable", "utick", user=True).returncode == 0
    assert ns.is_enabled("utick", user=True) == "enabled"
    assert (u.home / ".config/systemd/user/default.target.wants/utick.service").is_symlink()
    assert ns.systemctl("stop", "utick", user=True).returncode == 0
    assert ns.is_active("utick", user=True) == "inactive"
    assert log.read_text() == "started\n"
    assert log.stat().st_uid == u.uid


def test_run_passes_env_input_and_pythonpath(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    r = ns.run(
        ["sh", "-c", 'printf "%s|%s|" "$GREETING" "$PYTHONPATH"; cat'],
        env={"GREETING": "hi"},
        input="in",
    )
    assert r.stdout == f"hi|{sdns.ROOT}|in"
    r = ns.run([sys.executable, "-c", "import syslua; print(syslua.__file__)"])
    assert r.stdout.startswith(str(sdns.ROOT)), r


def test_teardown_kills_systemd_and_leaves_the_host_as_it_was() -> None:
    units = listing(HOST_UNITS)
    with booted() as ns:
        pid, work, user, sentinel = ns.pid, ns.work, ns.user, ns.sentinel
        ns.write_unit(
            "left.service", TICK.format(log=work / "left.log", target="multi-user.target")
        )
        assert ns.systemctl("start", "left").returncode == 0
        assert sentinel.exists()
    assert not os.path.exists(f"/proc/{pid}")
    assert not work.exists()
    assert not sentinel.exists()
    assert subprocess.run(["id", user.name], capture_output=True).returncode == 1
    assert listing(HOST_UNITS) == units
    assert not [p for p in Path(sdns.CGROUPS).glob(f"*/syslua-ns-{work.name}")]


def test_teardown_kills_systemd_when_the_test_fails() -> None:
    pid = 0
    with pytest.raises(RuntimeError, match="the test failed"), booted() as ns:
        pid = ns.pid
        raise RuntimeError("the test failed")
    assert pid and not os.path.exists(f"/proc/{pid}")


def test_it_refuses_to_boot_when_a_tmpfs_cannot_be_made() -> None:
    # a tmpfs cannot be mounted on a file: the setup stops before systemd starts
    before = set(os.listdir(sdns.WORK_PARENT)) if sdns.WORK_PARENT.exists() else set()
    why = "cannot mount a tmpfs on /etc/hostname"
    with pytest.raises(pytest.skip.Exception, match=why), booted((*sdns.TMPFS, "/etc/hostname")):
        pytest.fail("systemd booted without its tmpfs")
    # what is new belongs to boots of other test processes, running
    assert all(
        sdns.is_alive(sdns.WORK_PARENT / n) for n in set(os.listdir(sdns.WORK_PARENT)) - before
    )


def test_a_changed_sentinel_fails_loudly() -> None:
    with pytest.raises(AssertionError, match="HOST /tmp SENTINEL CHANGED"), booted() as ns:
        pid, work = ns.pid, ns.work
        ns.sentinel.write_text("emptied\n")
    assert not os.path.exists(f"/proc/{pid}")
    assert not work.exists()


def test_what_a_killed_test_process_left_is_removed_at_the_next_boot() -> None:
    sdns.WORK_PARENT.mkdir(mode=0o755, exist_ok=True)
    tag = "0123456789abcdef"
    work = sdns.WORK_PARENT / tag
    (work / "user").mkdir(parents=True)
    (work / "alive").touch()  # nobody holds its lock
    sentinel = HOST_TMP / f"syslua-systemd-sentinel-{tag}"
    sentinel.write_text("left\n")
    sdns.clean_stale()
    assert not work.exists()
    assert not sentinel.exists()
