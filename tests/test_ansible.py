"""The Ansible collection in contrib/ansible/ (issue 15, items 3 and 4), run by
a real `ansible-playbook` (the `fleet` extra), against localhost over the
local connection, and over SSH to two hosts where sshd can be started.

The collection is linked into a temp ANSIBLE_COLLECTIONS_PATH as
ansible_collections/syslua/syslua; the module runs this checkout's `sys`
with a temp HOME and SYSLUA_ROOT. tests/data/ansible/record.py, a callback,
writes every task result to a JSON file the test reads; the default callback
still prints the run and its recap. Plays are batched into few playbook runs:
ansible-playbook takes a second or two just to start.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

pytest.importorskip("ansible", reason="ansible-core is the `fleet` extra: pip install '.[fleet]'")

BIN = Path(sys.executable).parent
PLAYBOOK = BIN / "ansible-playbook"
COLLECTION = ROOT / "contrib" / "ansible"
EXAMPLES = COLLECTION / "examples"
pytestmark = [
    pytest.mark.skipif(
        not PLAYBOOK.exists(), reason=f"no ansible-playbook beside {sys.executable}"
    ),
    pytest.mark.slow,
]
RECAP = re.compile(
    r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+).*$", re.M
)


class Ansible:
    """ansible-playbook runs in one temp world."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.tmp = tmp
        links = tmp / "collections" / "ansible_collections" / "syslua"
        links.mkdir(parents=True)
        (links / "syslua").symlink_to(COLLECTION, target_is_directory=True)
        for d in ("ansible-local", "ansible-remote", "ansible-home"):
            (tmp / d).mkdir()
        self.env = dict(env)
        self.env.update(
            ANSIBLE_CONFIG=str(tmp / "ansible.cfg"),  # none: no stray ansible.cfg is read
            ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"),
            ANSIBLE_CALLBACK_PLUGINS=str(ROOT / "tests" / "data" / "ansible"),
            ANSIBLE_CALLBACKS_ENABLED="record",
            # nothing in the real home: ansible expands `~` as `~USER`, not from $HOME
            ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-local"),
            ANSIBLE_REMOTE_TEMP=str(tmp / "ansible-remote"),
            ANSIBLE_HOME=str(tmp / "ansible-home"),
            ANSIBLE_HOST_KEY_CHECKING="False",
            ANSIBLE_RETRY_FILES_ENABLED="False",
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_DEPRECATION_WARNINGS="False",
            ANSIBLE_PIPELINING="True",
            LC_ALL="C.UTF-8",
            SYSLUA_TEST_RECORD=str(tmp / "record.json"),
        )
        self.env.pop("ANSIBLE_FORCE_COLOR", None)

    def run(
        self, playbook: Path, inventory: str, *args: str, extra: dict[str, Any] | None = None
    ) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
        inv = self.tmp / "inventory.ini"
        inv.write_text(inventory)
        record = Path(self.env["SYSLUA_TEST_RECORD"])
        record.unlink(missing_ok=True)
        argv = [str(PLAYBOOK), "-i", str(inv), str(playbook), *args]
        if extra:
            argv += ["-e", json.dumps(extra)]
        p = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=300)
        (self.tmp / f"{playbook.stem}.out").write_text(p.stdout + p.stderr)
        results = json.loads(record.read_text()) if record.exists() else []
        return p, results


def recap(p: subprocess.CompletedProcess[str]) -> dict[str, tuple[int, int, int, int]]:
    """host -> (ok, changed, unreachable, failed), from the PLAY RECAP lines."""
    return {m[0]: (int(m[1]), int(m[2]), int(m[3]), int(m[4])) for m in RECAP.findall(p.stdout)}


def task(results: list[dict[str, Any]], name: str, host: str = "localhost") -> dict[str, Any]:
    found = [r for r in results if r["task"] == name and r["host"] == host]
    assert found, f"no result for {name!r} on {host}: {[r['task'] for r in results]}"
    return found[-1]


@pytest.fixture
def local(sysenv, tmp_path: Path) -> tuple[Ansible, dict[str, Any]]:
    env = sysenv.env
    env["PYTHONPATH"] = str(ROOT)
    sys_cmd = BIN / "sys"
    if not sys_cmd.exists():
        pytest.skip(f"no `sys` beside {sys.executable}: install syslua into that environment")
    extra = {
        # absolute: over the local connection ansible would expand `~` as the real home
        "syslua_dir": str(sysenv.home / ".config" / "syslua"),
        "syslua_executable": str(sys_cmd),
        "syslua_environment": {"SYSLUA_ROOT": str(sysenv.root), "PYTHONPATH": str(ROOT)},
    }
    return Ansible(tmp_path / "ansible", env), extra


LOCALHOST = f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n"


def scenario(sysenv, tmp: Path) -> Path:
    """The second playbook: the example again (nothing changes), then check
    mode with diffs, state planned, an apply with diffs, a failing config, a
    rollback by snapshot id (twice), and a run while the lock is held."""
    broken = (EXAMPLES / "config" / "sys.lua").read_text() + (
        'exec { name = "migrate", command = "echo migration failed >&2; exit 3",'
        ' provider = "shell", depends_on = { "file#~/.config/fleet/motd" } }\n'
    )
    module = {
        "config": "{{ syslua_dir }}/sys.lua",
        "executable": "{{ syslua_executable }}",
        "environment": "{{ syslua_environment }}",
        "facts": {"role": "web"},
    }
    motd = "{{ syslua_home }}/.config/fleet/motd"
    web = "{{ syslua_home }}/.config/fleet/web.conf"
    lock = tmp / "lock"
    tasks: list[dict[str, Any]] = [
        {"name": "check", "syslua.syslua.syslua": module, "check_mode": True, "diff": True},
        {"name": "motd after check", "ansible.builtin.slurp": {"src": motd}},
        {"name": "web.conf after check", "ansible.builtin.stat": {"path": web}},
        {"name": "planned", "syslua.syslua.syslua": {**module, "state": "planned"}},
        {"name": "apply web", "syslua.syslua.syslua": module, "diff": True},
        {
            "name": "push a broken config",
            "ansible.builtin.copy": {
                "content": broken,
                "dest": "{{ syslua_dir }}/broken.lua",
                "mode": "0644",
            },
        },
        {
            "name": "apply broken",
            "syslua.syslua.syslua": {
                **module,
                "config": "{{ syslua_dir }}/broken.lua",
                "facts": {"role": "db"},
            },
            "ignore_errors": True,
        },
        {"name": "motd after failure", "ansible.builtin.slurp": {"src": motd}},
        {"name": "web.conf after failure", "ansible.builtin.stat": {"path": web}},
        {
            "name": "rollback",
            "syslua.syslua.syslua": {
                "state": "rolled_back",
                "snapshot": "{{ converged.snapshot }}",
                "executable": "{{ syslua_executable }}",
                "environment": "{{ syslua_environment }}",
            },
        },
        {
            "name": "rollback again",
            "syslua.syslua.syslua": {
                "state": "rolled_back",
                "snapshot": "{{ converged.snapshot }}",
                "executable": "{{ syslua_executable }}",
                "environment": "{{ syslua_environment }}",
            },
        },
        {"name": "motd after rollback", "ansible.builtin.slurp": {"src": motd}},
        {"name": "web.conf after rollback", "ansible.builtin.stat": {"path": web}},
        # the test's lock holder takes the lock when `take` appears
        {
            "name": "take the lock",
            "ansible.builtin.copy": {"content": "", "dest": str(lock / "take")},
        },
        {
            "name": "wait for the holder",
            "ansible.builtin.wait_for": {"path": str(lock / "locked"), "timeout": 30},
        },
        {"name": "apply while locked", "syslua.syslua.syslua": module, "ignore_errors": True},
        {
            "name": "release the lock",
            "ansible.builtin.copy": {"content": "", "dest": str(lock / "release")},
        },
    ]
    plays = [
        {"import_playbook": str(EXAMPLES / "site.yml")},
        {
            "name": "syslua scenario",
            "hosts": "all",
            "gather_facts": False,
            "vars": {"syslua_home": str(sysenv.home)},
            "tasks": tasks,
        },
    ]
    path = tmp / "scenario.yml"
    path.write_text(json.dumps(plays, indent=1))  # JSON is YAML
    return path


HOLDER = """
import fcntl, os, sys, time
d, lock = sys.argv[1], sys.argv[2]
while not os.path.exists(os.path.join(d, "take")):
    time.sleep(0.05)
os.makedirs(os.path.dirname(lock), exist_ok=True)
fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, b"pid %d (test holder)\\n" % os.getpid())
open(os.path.join(d, "locked"), "w").close()
while not os.path.exists(os.path.join(d, "release")):
    time.sleep(0.05)
"""


def test_playbook_on_localhost(sysenv, local, tmp_path: Path) -> None:
    ansible, extra = local
    motd = sysenv.home / ".config" / "fleet" / "motd"

    # 1. the example playbook, first run: the config is pushed and applied
    p, results = ansible.run(EXAMPLES / "site.yml", LOCALHOST, extra=extra)
    assert p.returncode == 0, p.stdout + p.stderr
    assert recap(p) == {"localhost": (3, 2, 0, 0)}, p.stdout
    first = task(results, "Converge with syslua")["result"]
    assert first["changed"] is True and first["counts"]["changed"] == 3, first
    assert first["plan"]["changes"] is True and first["failures"] == []
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", first["snapshot"]), first
    assert motd.read_text() == "role: workstation\nmanaged by syslua\n"

    # 2. everything else in one more run
    lock_dir = tmp_path / "ansible" / "lock"
    lock_dir.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_dir), str(sysenv.root / "state" / "lock")]
    )
    try:
        p, results = ansible.run(scenario(sysenv, tmp_path / "ansible"), LOCALHOST, extra=extra)
    finally:
        (lock_dir / "release").touch()
        holder.wait(timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr  # the failing tasks are ignored
    # the second run of the example: ok, not changed
    again = task(results, "Converge with syslua")
    assert again["status"] == "ok" and again["result"]["changed"] is False, again
    assert again["result"]["snapshot"] == first["snapshot"], again

    # check mode: the plan, changed, nothing on disk; --diff as before/after
    check = task(results, "check")["result"]
    assert check["changed"] is True and check["plan"]["changes"] is True, check
    assert check["counts"]["create"] == 1 and check["counts"]["update"] == 2, check
    diffs = {d["after_header"]: d for d in check["diff"]}
    assert diffs["~/.config/fleet/motd"]["before"] == "role: workstation\nmanaged by syslua\n"
    assert diffs["~/.config/fleet/motd"]["after"] == "role: web\nmanaged by syslua\n"
    assert diffs["~/.config/fleet/web.conf"] == {
        "before_header": "~/.config/fleet/web.conf",
        "after_header": "~/.config/fleet/web.conf",
        "before": "",
        "after": "listen = 8080\n",
    }
    assert "after: ~/.config/fleet/motd" in p.stdout and "+role: web" in p.stdout  # shown
    assert _slurped(task(results, "motd after check")) == "role: workstation\nmanaged by syslua\n"
    assert task(results, "web.conf after check")["result"]["stat"]["exists"] is False

    planned = task(results, "planned")["result"]
    assert planned["changed"] is False and planned["plan"]["changes"] is True, planned
    assert "diff" not in planned

    applied = task(results, "apply web")["result"]
    assert applied["changed"] is True and applied["counts"]["changed"] == 3, applied
    assert applied["snapshot"] != first["snapshot"]
    assert {d["after_header"] for d in applied["diff"]} == set(diffs)

    # a failing config: the task fails, says the host was rolled back, and it was
    broken = task(results, "apply broken")
    assert broken["status"] == "failed", broken
    res = broken["result"]
    assert res["msg"].startswith("syslua apply failed: exec#migrate: "), res["msg"]
    assert "migration failed" in res["msg"]
    assert res["msg"].endswith("The host was rolled back: System unchanged."), res["msg"]
    assert res["rolled_back"] is True and res["changed"] is False
    assert res["failures"][0]["id"] == "exec#migrate" and res["snapshot"] == applied["snapshot"]
    assert _slurped(task(results, "motd after failure")) == "role: web\nmanaged by syslua\n"
    assert task(results, "web.conf after failure")["result"]["stat"]["exists"] is True

    # a rollback by snapshot id, then once more: nothing left to change
    back = task(results, "rollback")["result"]
    assert back["changed"] is True and back["counts"]["changed"] >= 2, back
    assert task(results, "rollback again")["result"]["changed"] is False
    assert (
        _slurped(task(results, "motd after rollback")) == "role: workstation\nmanaged by syslua\n"
    )
    assert task(results, "web.conf after rollback")["result"]["stat"]["exists"] is False

    # the lock held by another run: failed, naming its pid; nothing changed
    locked = task(results, "apply while locked")
    assert locked["status"] == "failed", locked
    assert locked["result"]["holder_pid"] == holder.pid, locked
    assert f"pid {holder.pid} (test holder)" in locked["result"]["msg"], locked
    assert "nothing was changed" in locked["result"]["msg"]
    assert motd.read_text() == "role: workstation\nmanaged by syslua\n"
    # ignored=2: the broken config and the locked run
    assert recap(p) == {"localhost": (20, 6, 0, 0)} and "ignored=2" in p.stdout, p.stdout


def _slurped(result: dict[str, Any]) -> str:
    import base64

    return base64.b64decode(result["result"]["content"]).decode()


# --- over SSH, to two hosts: 127.0.0.1 and 127.0.0.2, each its own user account ---

SSHD = Path("/usr/sbin/sshd")


def _closure(names: list[str]) -> list[Any]:
    """The installed distributions `names` need, themselves included."""
    import importlib.metadata as md

    seen: dict[str, Any] = {}
    todo = list(names)
    while todo:
        name = re.split(r"[^A-Za-z0-9._-]", todo.pop().strip(), maxsplit=1)[0]
        key = re.sub(r"[-_.]+", "-", name).lower()
        if not name or key in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen[key] = dist
        todo += [r for r in dist.requires or [] if "extra ==" not in r]
    return list(seen.values())


def runtime_for_others(world: Path) -> Path:
    """A `sys` other users can run: the system python3 with copies of syslua's
    dependencies and of this checkout's syslua, lua and pkgs (the venv and the
    checkout may sit where other users cannot read)."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    site = world / "site"
    for dist in _closure(deps):
        for f in dist.files or []:
            if f.parts[0].endswith(".dist-info") or "__pycache__" in f.parts or f.parts[0] == "..":
                continue
            src = Path(dist.locate_file(f))
            if src.is_file():
                dest = site / f
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
    for part in ("syslua", "lua", "pkgs"):
        shutil.copytree(ROOT / part, site / part, ignore=shutil.ignore_patterns("__pycache__"))
    wrapper = world / "bin" / "sys"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f"#!/bin/sh\nPYTHONPATH='{site}' PYTHONDONTWRITEBYTECODE=1 exec /usr/bin/python3 -m syslua \"$@\"\n"
    )
    wrapper.chmod(0o755)
    for d, dirs, files in os.walk(world):
        for n in dirs:
            os.chmod(os.path.join(d, n), 0o755)
        for n in files:
            p = os.path.join(d, n)
            os.chmod(p, 0o755 if os.access(p, os.X_OK) else 0o644)
    return wrapper


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[str], timeout: float = 10) -> bool:
    import socket
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        for host in ("127.0.0.1", "127.0.0.2"):
            try:
                socket.create_connection((host, port), timeout=0.5).close()
            except OSError:
                break
        else:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def ssh_hosts(tmp_path: Path):  # type: ignore[no-untyped-def]
    """sshd on 127.0.0.1 and 127.0.0.2 (own config, host key and port), and two
    user accounts made for the test, each with its own home; removed afterwards."""
    import tempfile
    import uuid

    if os.geteuid() != 0:
        pytest.skip("the SSH test runs as root: it creates user accounts")
    missing = [
        t for t in ("ssh", "ssh-keygen", "useradd", "userdel") if shutil.which(t) is None
    ] + ([str(SSHD)] if not SSHD.exists() else [])
    if missing:
        pytest.skip(
            f"sshd cannot start here: {', '.join(missing)} not installed (Debian: openssh-server)"
        )
    if not Path("/usr/bin/python3").exists():
        pytest.skip("the SSH hosts need /usr/bin/python3")
    world = Path(tempfile.mkdtemp(prefix="syslua-ssh-"))
    os.chmod(world, 0o755)
    procs: list[subprocess.Popen[str]] = []
    users: list[str] = []
    made_run_dir = False
    try:
        wrapper = runtime_for_others(world)
        works = subprocess.run([str(wrapper), "--version"], capture_output=True, text=True)
        if works.returncode != 0:  # e.g. another Python version than the venv's
            pytest.skip(
                "the system python3 cannot run syslua with the dependencies of "
                f"{sys.executable}: {works.stderr.strip().splitlines()[-1:]}"
            )
        keys = tmp_path / "keys"
        keys.mkdir()
        for name in ("host", "client"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True
            )
        tag = uuid.uuid4().hex[:6]
        homes = {}
        for n in (1, 2):
            user = f"syslua{n}{tag}"
            home = world / f"home{n}"
            subprocess.run(
                ["useradd", "-m", "-d", str(home), "-s", "/bin/sh", "-p", "*", user],
                check=True,
                capture_output=True,
            )
            users.append(user)
            homes[user] = home
            ssh_dir = home / ".ssh"
            ssh_dir.mkdir(mode=0o700)
            shutil.copy(keys / "client.pub", ssh_dir / "authorized_keys")
            subprocess.run(["chown", "-R", f"{user}:", str(ssh_dir)], check=True)
        port = _free_port()
        config = tmp_path / "sshd_config"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nListenAddress 127.0.0.2\n"
            f"HostKey {keys / 'host'}\nPidFile {tmp_path / 'sshd.pid'}\n"
            "AuthorizedKeysFile .ssh/authorized_keys\nPubkeyAuthentication yes\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            f"PermitRootLogin no\nStrictModes no\nAllowUsers {' '.join(users)}\n"
            "Subsystem sftp internal-sftp\nLogLevel ERROR\n"
        )
        run_dir = Path("/run/sshd")  # sshd's privilege separation directory
        if not run_dir.exists():
            run_dir.mkdir(mode=0o755, parents=True)
            made_run_dir = True
        sshd = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        procs.append(sshd)
        if not _wait_for_port(port, sshd):
            sshd.kill()
            said = sshd.communicate()[0].strip()
            pytest.skip(f"sshd did not start on 127.0.0.1/127.0.0.2: {said or 'no answer'}")
        inventory = (
            f"host1 ansible_host=127.0.0.1 ansible_user={users[0]} syslua_role=web\n"
            f"host2 ansible_host=127.0.0.2 ansible_user={users[1]} syslua_role=workstation\n"
            "[all:vars]\n"
            f"ansible_port={port}\nansible_ssh_private_key_file={keys / 'client'}\n"
            "ansible_python_interpreter=/usr/bin/python3\n"
            "ansible_ssh_common_args='-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no "
            "-o LogLevel=ERROR'\n"
        )
        yield inventory, wrapper, homes
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=10)
        for user in users:
            _end_processes_of(user)
            subprocess.run(["userdel", "-r", user], capture_output=True)
        shutil.rmtree(world, ignore_errors=True)
        if made_run_dir:
            shutil.rmtree("/run/sshd", ignore_errors=True)


# Real accounts (useradd for the SSH hosts): tests of this group take turns.
@pytest.mark.xdist_group("accounts")
def test_playbook_over_ssh_to_two_hosts(sysenv, ssh_hosts, tmp_path: Path) -> None:
    import time

    inventory, wrapper, homes = ssh_hosts
    env = sysenv.env
    ansible = Ansible(tmp_path / "ansible", env)
    ansible.env["ANSIBLE_REMOTE_TEMP"] = "~/.ansible/tmp"  # the remote user's own
    # no connection left open after the run (ControlPersist would keep one per
    # host, and a logged-in account cannot be removed)
    ansible.env["ANSIBLE_SSH_ARGS"] = "-o ControlMaster=no -o ControlPath=none"
    extra = {"syslua_executable": str(wrapper)}
    started = time.monotonic()
    p, results = ansible.run(EXAMPLES / "site.yml", inventory, "--forks", "2", extra=extra)
    took = time.monotonic() - started
    lines = [ln for ln in p.stdout.splitlines() if RECAP.match(ln)]
    print(f"\nansible-playbook site.yml over SSH to 2 hosts: {took:.1f}s")
    print("\n".join(lines))
    assert p.returncode == 0, p.stdout + p.stderr
    assert recap(p) == {"host1": (3, 2, 0, 0), "host2": (3, 2, 0, 0)}, p.stdout
    for host, (user, role) in zip(
        ("host1", "host2"), [(u, r) for u, r in zip(homes, ("web", "workstation"))]
    ):
        res = task(results, "Converge with syslua", host)["result"]
        assert res["changed"] is True and res["failures"] == [], res
        home = homes[user]
        assert (
            home / ".config" / "fleet" / "motd"
        ).read_text() == f"role: {role}\nmanaged by syslua\n"
        assert (home / ".config" / "fleet" / "web.conf").exists() == (role == "web")
        assert (home / ".config" / "fleet" / "motd").stat().st_uid == _uid(user)
        # each account keeps its own state, under its own home
        assert list((home / ".local" / "state" / "syslua" / "snapshots").glob("*.json")), home


def _end_processes_of(user: str) -> None:
    """SIGKILL what still runs as an account this test made (an SSH session
    that outlived its connection), so the account can be removed."""
    import signal

    uid = _uid(user)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass


def _uid(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_uid
