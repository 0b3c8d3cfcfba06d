"""The service kind against a real systemd (tests/systemd_ns.py: PID 1 of its
own namespaces, behind fresh tmpfs). `sys` runs inside that namespace, as
root for system units and as the fixture's test user for user units.

Each rule of the decision table in syslua/resources/service.py has a test:
start, stop, enable, disable; restart on a change of what it watches (its
config, its unit file) and not otherwise; a first start is not followed by
a restart; daemon-reload when a unit file changed. Atomicity: a failed
apply and Ctrl-C put back the active and enabled states; rollback and
removal bring services back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from systemd_ns import SystemdNS
from test_os_package import debian_hello  # noqa: F401 (a fixture this module uses)

pytestmark = pytest.mark.root

UNIT = """[Unit]
Description=syslua test service {name}

[Service]
ExecStartPre=/bin/sh -c 'echo start >> {log}'
ExecStart=/bin/sh -c 'cat {conf} >> {log} 2>/dev/null; exec sleep 300'

[Install]
WantedBy=multi-user.target
"""


class World:
    """A home, a state root and a config directory inside the namespace's shared work dir."""

    def __init__(self, ns: SystemdNS, name: str, *, user: bool = False) -> None:
        self.ns, self.user = ns, user
        # A user's manager reads units under the home its account names.
        self.home = str(ns.user.home) if user else ns.mkdir(f"{name}-home")
        self.root = ns.mkdir(f"{name}-root", user=user)
        self.log = Path(ns.mkdir(f"{name}-logs", user=user)) / "log"
        self.conf = Path(self.home) / "app.conf"

    def sys(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        env = {"HOME": str(self.home), "SYSLUA_ROOT": str(self.root), "COLUMNS": "200"}
        return self.ns.run(
            [sys.executable, "-m", "syslua", *args],
            user=self.user,
            env=env,
            cwd=str(self.home),
            timeout=timeout,
        )

    def config(self, text: str) -> None:
        path = Path(self.home) / "sys.lua"
        path.write_text(text)
        if self.user:
            import os

            os.chown(path, self.ns.user.uid, self.ns.user.gid)

    def starts(self) -> int:
        try:
            return self.log.read_text().count("start\n")
        except FileNotFoundError:
            return 0


def ok(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def conf_lua(value: str) -> str:
    return f'file {{ path = "~/app.conf", content = "{value}\\n" }}\n'


def unit_lua(w: World, name: str, **extra: str) -> str:
    text = UNIT.format(name=name, log=w.log, conf=w.conf)
    props = "".join(f", {k} = {v}" for k, v in extra.items())
    return f"systemd_unit {{ name = {json.dumps(name)}, content = [[{text}]]{props} }}\n"


def test_start_enable_then_nothing_to_do(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "first")
    w.config(unit_lua(w, "svc-a", enable="true"))
    out = ok(w.sys("plan"))
    assert (
        "+ service svc-a: will start and enable (its unit file /etc/systemd/system/svc-a.service is written first)"
        in out
    ), out
    out = ok(w.sys("apply"))
    assert "service svc-a: started and enabled" in out, out
    assert ns.is_active("svc-a") == "active"
    assert ns.is_enabled("svc-a") == "enabled"
    assert w.starts() == 1  # a first start is not followed by a restart
    out = ok(w.sys("apply"))
    assert "No changes" in out, out
    assert w.starts() == 1


def test_restart_when_its_config_changes_and_not_otherwise(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "restart")
    unit = unit_lua(w, "svc-b", subscribe='{ "file#~/app.conf" }')
    w.config(conf_lua("one") + unit)
    ok(w.sys("apply"))
    assert ns.is_active("svc-b") == "active" and w.starts() == 1
    # Something else changes: no restart.
    w.config(conf_lua("one") + unit + 'file { path = "~/other", content = "x\\n" }\n')
    ok(w.sys("apply"))
    assert w.starts() == 1
    # Its config changes: the plan says why, the apply restarts it.
    w.config(conf_lua("two") + unit)
    out = ok(w.sys("plan"))
    assert "~ service svc-b: will restart (its config ~/app.conf changes)" in out, out
    out = ok(w.sys("apply"))
    assert "service svc-b: restarted (its config ~/app.conf changes)" in out, out
    assert w.starts() == 2
    assert w.log.read_text().endswith("two\n")


def test_a_changed_unit_file_is_reloaded_and_restarts_its_service(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "reload")
    w.config(unit_lua(w, "svc-c"))
    ok(w.sys("apply"))
    w.config(unit_lua(w, "svc-c").replace("syslua test service", "syslua test, edited,"))
    out = ok(w.sys("plan"))
    assert (
        "~ service svc-c: will restart (its unit file /etc/systemd/system/svc-c.service changes)"
        in out
    )
    ok(w.sys("apply"))
    assert w.starts() == 2
    show = ns.systemctl("show", "-p", "Description", "-p", "NeedDaemonReload", "svc-c")
    assert "Description=syslua test, edited, svc-c" in show.stdout, show.stdout
    assert "NeedDaemonReload=no" in show.stdout


def test_stop_and_disable_and_a_stopped_service_is_never_restarted(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "stop")
    w.config(conf_lua("a") + unit_lua(w, "svc-d", enable="true"))
    ok(w.sys("apply"))
    assert ns.is_active("svc-d") == "active"
    w.config(
        conf_lua("b")
        + unit_lua(
            w, "svc-d", ensure='"stopped"', enable="false", subscribe='{ "file#~/app.conf" }'
        )
    )
    out = ok(w.sys("plan"))
    assert "~ service svc-d: will stop and disable" in out, out
    ok(w.sys("apply"))
    assert ns.is_active("svc-d") == "inactive"
    assert ns.is_enabled("svc-d") == "disabled"
    assert w.starts() == 1


def test_without_enable_enablement_is_left_as_it_is(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "leave")
    w.config(unit_lua(w, "svc-e"))
    ok(w.sys("apply"))
    ns.systemctl("enable", "svc-e")
    out = ok(w.sys("plan"))
    assert "0 to create, 0 to update" in out, out
    assert ns.is_enabled("svc-e") == "enabled"


def test_a_failed_apply_puts_back_active_and_enabled_states(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "atomic")
    w.config(unit_lua(w, "svc-f"))
    ok(w.sys("apply"))  # running, not enabled
    assert ns.is_active("svc-f") == "active" and ns.is_enabled("svc-f") == "disabled"
    w.config(
        unit_lua(w, "svc-f", ensure='"stopped"', enable="true")
        + 'exec { name = "boom", command = "/bin/false", depends_on = { "service#svc-f" } }\n'
    )
    p = w.sys("apply")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "rolled back" in p.stdout.lower() or "Rolling back" in p.stdout, p.stdout
    assert ns.is_active("svc-f") == "active"
    assert ns.is_enabled("svc-f") == "disabled"


def test_a_failed_apply_reloads_and_restarts_when_it_puts_a_unit_file_back(
    systemd_ns: SystemdNS,
) -> None:
    ns = systemd_ns
    w = World(ns, "atomic2")
    w.config(unit_lua(w, "svc-g"))
    ok(w.sys("apply"))
    starts = w.starts()
    w.config(
        unit_lua(w, "svc-g").replace("syslua test service", "changed")
        + 'exec { name = "boom", command = "/bin/false", depends_on = { "service#svc-g" } }\n'
    )
    p = w.sys("apply")
    assert p.returncode == 1, p.stdout + p.stderr
    show = ns.systemctl("show", "-p", "Description", "-p", "NeedDaemonReload", "svc-g").stdout
    assert "Description=syslua test service svc-g" in show, show  # the old unit, reloaded
    assert "NeedDaemonReload=no" in show
    assert ns.is_active("svc-g") == "active"
    assert w.starts() == starts + 2  # restarted by the apply, then again after the undo


def _stopping_apply(ns: SystemdNS, w: World, name: str) -> tuple[subprocess.Popen[str], int]:
    """An apply that stops `name`, then sits in a slow exec: (its nsenter, the
    pid of sys inside, as the host sees it)."""
    w.config(unit_lua(w, name))
    ok(w.sys("apply"))
    marker = Path(w.home) / "started-sleeping"
    w.config(
        unit_lua(w, name, ensure='"stopped"')
        + f'exec {{ name = "slow", command = "/bin/sh -c \'touch {marker}; sleep 60\'", '
        f'provider = "shell", depends_on = {{ "service#{name}" }} }}\n'
    )
    env = {
        "HOME": str(w.home),
        "SYSLUA_ROOT": str(w.root),
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    argv = ["nsenter", "--target", str(ns.pid), "--pid", "--mount", "env"]
    argv += [f"{k}={v}" for k, v in env.items()] + [sys.executable, "-m", "syslua", "apply"]
    proc = subprocess.Popen(
        argv, cwd=str(w.home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the slow exec never started"
    assert ns.is_active(name) == "inactive"  # stopped by the apply
    return proc, _child_of(proc.pid)


def _child_of(pid: int) -> int:
    """The one child of `pid` (nsenter forks to enter the PID namespace)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                return int(entry.name)
    raise AssertionError(f"no child of {pid}")


def test_ctrl_c_puts_back_the_states(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "ctrlc")
    proc, inner = _stopping_apply(ns, w, "svc-h")
    os.kill(inner, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert ns.is_active("svc-h") == "active", out


def test_a_killed_apply_is_undone_by_the_next_command(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "killed")
    proc, inner = _stopping_apply(ns, w, "svc-m")
    os.kill(inner, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert ns.is_active("svc-m") == "inactive"  # nothing undid it yet
    out = ok(w.sys("status"))  # every command recovers first
    assert ns.is_active("svc-m") == "active", out


def test_rollback_and_removal_bring_services_back(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "rollback")
    ns.write_unit("svc-i.service", UNIT.format(name="svc-i", log=w.log, conf=w.conf))
    assert ns.is_active("svc-i") == "inactive"
    w.config('service { name = "svc-i", enable = true }\n')
    ok(w.sys("apply"))
    assert ns.is_active("svc-i") == "active" and ns.is_enabled("svc-i") == "enabled"
    w.config('service { name = "svc-i", ensure = "stopped" }\n')
    ok(w.sys("apply"))
    assert ns.is_active("svc-i") == "inactive"
    ok(w.sys("rollback"))
    assert ns.is_active("svc-i") == "active"
    # It leaves the config: back to how syslua found it (stopped, disabled).
    w.config('file { path = "~/x", content = "x\\n" }\n')
    out = ok(w.sys("plan"))
    assert (
        "- service svc-i: no longer declared; back to stopped, disabled, as syslua found it" in out
    ), out
    ok(w.sys("apply"))
    assert ns.is_active("svc-i") == "inactive" and ns.is_enabled("svc-i") == "disabled"


def test_user_scope(systemd_ns: SystemdNS) -> None:
    ns = systemd_ns
    w = World(ns, "user", user=True)
    w.config(unit_lua(w, "svc-u", scope='"user"', enable="true"))
    out = ok(w.sys("plan"))
    assert "+ service svc-u (user): will start and enable" in out, out
    ok(w.sys("apply"))
    assert ns.is_active("svc-u", user=True) == "active"
    assert ns.is_enabled("svc-u", user=True) == "enabled"
    assert (Path(w.home) / ".config/systemd/user/svc-u.service").is_file()
    ok(w.sys("destroy", "--yes"))
    assert ns.is_active("svc-u", user=True) == "inactive"


def test_a_failing_health_check_fails_the_item_and_the_start_is_undone(
    systemd_ns: SystemdNS,
) -> None:
    ns = systemd_ns
    w = World(ns, "health")
    ns.write_unit("svc-j.service", UNIT.format(name="svc-j", log=w.log, conf=w.conf))
    w.config('service { name = "svc-j", health_checks = { "exit 2" } }\n')
    p = w.sys("apply")
    assert p.returncode == 1, p.stdout + p.stderr
    assert ns.is_active("svc-j") == "inactive"  # it was not running before
    w.config('service { name = "svc-j", health_checks = { "systemctl is-active svc-j" } }\n')
    ok(w.sys("apply"))
    assert ns.is_active("svc-j") == "active"


def test_a_unit_that_fails_to_start_fails_the_item_and_is_rolled_back(
    systemd_ns: SystemdNS,
) -> None:
    ns = systemd_ns
    w = World(ns, "broken")
    broken = "[Service]\nExecStart=/bin/false\n"
    w.config(f'systemd_unit {{ name = "svc-k", content = [[{broken}]] }}\n')
    p = w.sys("apply")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "service svc-k" in p.stdout, p.stdout
    assert "the unit is failed" in p.stdout or "start svc-k.service failed" in p.stdout, p.stdout
    assert not Path("/etc/systemd/system/svc-k.service").exists()


FRONT_PAGE = """\
ccm:
  resources:
    - package:
        - hello:
            ensure: present
    - file:
        - {conf}:
            ensure: present
            content: |
              greeting={greeting}
            owner: root
            group: root
            mode: "0644"
    - service:
        - hello-web:
            ensure: running
            enable: true
            subscribe:
              - file#{conf}
              - package#hello
"""


@pytest.mark.slow
@pytest.mark.xdist_group("dpkg")
def test_ccm_front_page_manifest(systemd_ns: SystemdNS, debian_hello: str) -> None:  # noqa: F811
    """CCM's front page: package, then its config file, then the service
    subscribed to both; applied, applied again with nothing to do, rolled back."""
    from test_os_package import _dpkg, _purge

    if _dpkg("hello") is not None:
        pytest.skip("hello is installed on this machine already; the test would remove it")
    ns = systemd_ns
    w = World(ns, "front")
    conf = Path(ns.mkdir("front-etc")) / "hello-web.conf"
    ns.write_unit(
        "hello-web.service",
        "[Service]\n"
        f"ExecStart=/bin/sh -c '/usr/bin/hello >> {w.log}; cat {conf} >> {w.log}; "
        "exec sleep 300'\n\n[Install]\nWantedBy=multi-user.target\n",
    )
    manifest = Path(w.home) / "site.yaml"
    try:
        manifest.write_text(FRONT_PAGE.format(conf=conf, greeting="hi"))
        out = ok(w.sys("plan", "site.yaml"))
        assert f"+ os_package hello: will install ({debian_hello})" in out, out
        assert "+ service hello-web: will start and enable" in out, out
        out = ok(w.sys("apply", "site.yaml", timeout=600))
        assert ns.is_active("hello-web") == "active" and ns.is_enabled("hello-web") == "enabled"
        assert w.log.read_text().startswith("Hello, world!\ngreeting=hi\n")
        assert "No changes" in ok(w.sys("apply", "site.yaml"))
        manifest.write_text(FRONT_PAGE.format(conf=conf, greeting="hello"))
        out = ok(w.sys("plan", "site.yaml"))
        assert f"~ service hello-web: will restart (its config {conf} changes)" in out, out
        ok(w.sys("apply", "site.yaml"))
        assert w.log.read_text().endswith("greeting=hello\n")
        history = json.loads(ok(w.sys("history", "--json")))
        first = history["snapshots"][-1]["id"] if isinstance(history, dict) else history[-1]["id"]
        ok(w.sys("rollback", first))
        assert conf.read_text() == "greeting=hi\n"
        assert w.log.read_text().endswith("greeting=hi\n")  # restarted on its old config
        ok(w.sys("destroy", "--yes", timeout=600))
        assert _dpkg("hello") is None
        assert ns.is_active("hello-web") == "inactive"
        assert ns.is_enabled("hello-web") == "disabled"
    finally:
        _purge("hello")


def test_a_failed_apply_stops_a_service_it_started_from_a_new_unit(systemd_ns: SystemdNS) -> None:
    """The unit file goes first in the undo; the unit stays loaded, running,
    and is stopped all the same."""
    ns = systemd_ns
    w = World(ns, "newunit")
    w.config(
        unit_lua(w, "svc-n")
        + 'exec { name = "boom", command = "/bin/false", depends_on = { "service#svc-n" } }\n'
    )
    p = w.sys("apply")
    assert p.returncode == 1, p.stdout + p.stderr
    assert not Path("/etc/systemd/system/svc-n.service").exists()
    assert ns.is_active("svc-n") in ("inactive", "unknown"), p.stdout
    assert w.starts() == 1


def test_a_unit_file_written_after_a_first_service_change_is_reloaded(
    systemd_ns: SystemdNS,
) -> None:
    ns = systemd_ns
    w = World(ns, "reload2")
    w.config(unit_lua(w, "svc-p") + unit_lua(w, "svc-q"))
    ok(w.sys("apply"))
    # svc-q's unit changes, and is written after svc-p restarts
    w.config(
        unit_lua(w, "svc-p").replace("syslua test service", "p changed")
        + unit_lua(w, "svc-q")
        .replace("syslua test service", "q changed")
        .replace("systemd_unit {", 'systemd_unit { subscribe = { "service#svc-p" },', 1)
    )
    ok(w.sys("apply"))
    show = ns.systemctl("show", "-p", "Description", "-p", "NeedDaemonReload", "svc-q").stdout
    assert "Description=q changed svc-q" in show and "NeedDaemonReload=no" in show, show
