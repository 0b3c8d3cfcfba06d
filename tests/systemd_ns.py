"""A real systemd for the service tests, booted where it cannot reach the host.

systemd runs as PID 1 of its own PID, mount, UTS and IPC namespaces
(`unshare --pid --fork --mount --mount-proc --propagation private`, as root).
A shell script run by unshare sets the new mount namespace up BEFORE it execs
`/lib/systemd/systemd`, and refuses to exec it when any step fails:

- every mount is made private (`mount --make-rprivate /`), so nothing mounted
  inside propagates out;
- fresh tmpfs over /run, /tmp, /var/tmp, /etc/systemd (the unit directories,
  generators and manager settings), /var/lib/systemd and /var/log/journal,
  each checked to be a tmpfs, with the host's /tmp checked to be out of sight;
- a private /dev (tmpfs with the few device nodes bound in, a new devpts),
  read-only /sys and /proc/sys: the kernel's settings stay the host's;
- every generator masked, and every unit that could write outside or touch
  the machine (systemd-tmpfiles-*, sysusers, random-seed, udev, logind,
  getty, timesyncd, the host's enabled units and timers, ...) masked in
  /run/systemd/system (a symlink to /dev/null takes precedence over
  /lib/systemd/system), journald kept with Storage=volatile;
- systemd boots `test.target` (basic.target and nothing else), with
  `container=syslua-test` in its environment (so it leaves the kernel's
  settings alone), into its own cgroup `syslua-ns-<random>`, logging to
  `console.log` in the work dir.

The fixture waits for `systemctl is-system-running` to say running or
degraded (it skips the test with the reason after 15 s, after a SIGKILL),
and its teardown ALWAYS SIGKILLs systemd's own pid from outside (every
process of the namespace dies with it), reaps unshare, checks the pid is
gone and removes the cgroups, the test user and the work dir. A sentinel
file in the host's /tmp, made before the boot, and the host's /etc/systemd
are checked after every test and at teardown: the test fails loudly when
either changed.

Paths. Inside, /tmp, /run, /var/tmp and /etc/systemd are the namespace's
own: pytest's `tmp_path` (/tmp/pytest-of-root/...) and `sysenv`'s HOME are
NOT visible inside. Everything both sides need goes under `ns.work`
(/var/lib/syslua-tests/<random>, removed at teardown); `ns.mkdir(name)`
makes a directory there. The rest of the host's filesystem (/work, /usr,
/var/lib/dpkg, ...) is shared: what a test runs inside can change it.

    def test_x(systemd_ns):
        ns = systemd_ns
        ns.write_unit("hello.service", "[Service]\\nExecStart=/bin/sleep 300\\n")
        assert ns.run(["systemctl", "start", "hello"]).returncode == 0
        assert ns.is_active("hello") == "active"
        home = ns.mkdir("home")                      # visible on both sides
        r = ns.run([sys.executable, "-m", "syslua", "apply"],
                   env={"HOME": str(home), "SYSLUA_ROOT": str(ns.mkdir("root"))})
        # user scope: the test user's own manager (user@UID.service)
        ns.write_unit("tick.service", "...", user=True)
        ns.run(["systemctl", "--user", "start", "tick"], user=True)

`run` starts its command through `nsenter` in systemd's namespaces, with
PATH, LANG, NO_COLOR=1 and PYTHONPATH (this checkout) set, then `env`;
`user=True` runs it as the test user (setpriv, no PAM) with HOME, USER and
XDG_RUNTIME_DIR=/run/user/UID. The test user (`ns.user`: name, uid, home
under `ns.work`) is made with useradd for the boot and removed after it.
Without root, unshare, nsenter or systemd, the fixtures skip the test.

If the test process itself is killed, unshare dies with it (PR_SET_PDEATHSIG)
and takes systemd along (--kill-child); the next boot removes what was left
(a work dir whose `alive` lock nobody holds: its user, cgroups, sentinel).
SYSLUA_KEEP_NS=1 keeps the work dir (setup.sh, console.log) for a look.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSTEMD = "/lib/systemd/systemd"
WORK_PARENT = Path("/var/lib/syslua-tests")
HOST_TMP = Path("/tmp")
HOST_UNITS = Path("/etc/systemd")
CGROUPS = Path("/sys/fs/cgroup")
BOOT_TIMEOUT = 15.0
# Fresh tmpfs inside, before systemd starts: a failure to make any of them
# stops the boot (the test is skipped with the reason).
TMPFS = ("/run", "/tmp", "/var/tmp", "/etc/systemd", "/var/lib/systemd", "/var/log/journal")
# Kept although a target wants them: journald (volatile) takes services' output.
KEEP = {"systemd-journald.service", "systemd-journald.socket", "systemd-journald-dev-log.socket"}
# Masked whatever wants them: anything that writes outside the tmpfs mounts,
# changes the kernel or the machine, or talks to a terminal.
MASK_NAMES = """
systemd-tmpfiles-setup.service systemd-tmpfiles-setup-dev.service
systemd-tmpfiles-setup-dev-early.service systemd-tmpfiles-clean.service
systemd-tmpfiles-clean.timer systemd-sysusers.service systemd-firstboot.service
systemd-machine-id-commit.service systemd-random-seed.service systemd-update-utmp.service
systemd-update-utmp-runlevel.service ldconfig.service systemd-hwdb-update.service
systemd-journal-flush.service systemd-journal-catalog-update.service systemd-update-done.service
systemd-sysctl.service systemd-modules-load.service kmod-static-nodes.service
systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket
systemd-udev-trigger.service systemd-udev-settle.service systemd-remount-fs.service
systemd-fsck-root.service systemd-fsck@.service systemd-binfmt.service
systemd-journald-audit.socket systemd-timesyncd.service systemd-networkd.service
systemd-resolved.service networking.service systemd-logind.service
systemd-user-sessions.service dbus.service dbus.socket getty@.service
serial-getty@.service console-getty.service container-getty@.service autovt@.service
getty.target systemd-initctl.socket systemd-initctl.service systemd-pstore.service
systemd-rfkill.service systemd-rfkill.socket systemd-backlight@.service
systemd-quotacheck.service quotaon.service systemd-coredump.socket systemd-oomd.service
systemd-oomd.socket systemd-repart.service systemd-pcrphase.service
systemd-pcrphase-sysinit.service systemd-boot-system-token.service
systemd-ask-password-console.path systemd-ask-password-wall.path
systemd-ask-password-console.service systemd-ask-password-wall.service
proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount tmp.mount
dev-hugepages.mount dev-mqueue.mount sys-fs-fuse-connections.mount sys-kernel-config.mount
sys-kernel-debug.mount sys-kernel-tracing.mount cron.service ssh.service sshd.service
ssh.socket rc-local.service systemd-hostnamed.service systemd-localed.service
systemd-timedated.service ctrl-alt-del.target
"""
MASK = MASK_NAMES.split()
UNIT_SOURCES = (
    Path("/lib/systemd/system"),
    Path("/usr/lib/systemd/system"),
    Path("/etc/systemd/system"),
)
GENERATOR_DIRS = {
    "system-generators": ("/lib/systemd/system-generators", "/usr/lib/systemd/system-generators"),
    "user-generators": ("/lib/systemd/user-generators", "/usr/lib/systemd/user-generators"),
    "system-environment-generators": ("/usr/lib/systemd/system-environment-generators",),
    "user-environment-generators": ("/usr/lib/systemd/user-environment-generators",),
}
SYSTEM_CONF = """[Manager]
ShowStatus=no
DefaultTimeoutStartSec=20s
DefaultTimeoutStopSec=5s
DefaultCPUAccounting=no
DefaultIOAccounting=no
DefaultIPAccounting=no
DefaultBlockIOAccounting=no
DefaultMemoryAccounting=no
DefaultTasksAccounting=no
"""
JOURNALD_CONF = """[Journal]
Storage=volatile
ReadKMsg=no
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
"""
TEST_TARGET = """[Unit]
Description=syslua tests: basic.target and nothing else
Requires=basic.target
After=basic.target
AllowIsolate=yes
"""
# /run/user/UID without logind and D-Bus (both masked): a plain directory.
RUNTIME_DIR_DROPIN = """[Service]
ExecStart=
ExecStart=/bin/sh -c 'install -d -m 0700 -o %i -g "$(id -g %i)" /run/user/%i'
ExecStop=
ExecStop=/bin/rm -rf /run/user/%i
"""
# ... and the user manager's XDG_RUNTIME_DIR, which pam_systemd would set.
USER_MANAGER_DROPIN = """[Service]
Environment=XDG_RUNTIME_DIR=/run/user/%i
"""
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


@dataclass(frozen=True)
class TestUser:
    name: str
    uid: int
    gid: int
    home: Path

    @property
    def runtime_dir(self) -> str:
        return f"/run/user/{self.uid}"


def masked_units() -> list[str]:
    """The units to mask: MASK, every unit a target of the system wants (they
    come back only if a test asks for them by name), timers, paths and
    automounts, and the host's own enabled units."""
    names = set(MASK)
    for base in UNIT_SOURCES:
        if not base.is_dir():
            continue
        for d in base.iterdir():
            if d.is_dir() and d.name.endswith((".wants", ".requires")):
                names.update(p.name for p in d.iterdir() if not p.name.endswith(".target"))
        names.update(
            p.name for p in base.iterdir() if p.suffix in (".timer", ".path", ".automount")
        )
    return sorted(names - KEEP)


def masked_generators() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for kind, dirs in GENERATOR_DIRS.items():
        found[kind] = sorted({p.name for d in dirs if os.path.isdir(d) for p in Path(d).iterdir()})
    return found


def kept_paths(tmpfs: Sequence[str]) -> list[Path]:
    """This checkout and the Python running the tests, where a tmpfs of the
    namespace would hide them (outermost only: a venv inside the checkout
    comes with it)."""
    wanted = [ROOT, Path(sys.prefix), Path(sys.base_prefix)]
    hidden = [p for p in wanted if any(p.is_relative_to(d) for d in tmpfs)]
    out: list[Path] = []
    for p in sorted(set(hidden), key=lambda p: len(p.parts)):
        if not any(p.is_relative_to(o) for o in out):
            out.append(p)
    return out


def setup_script(work: Path, cgroup: str, sentinel: Path, tmpfs: Sequence[str]) -> str:
    """The shell script unshare runs as PID 1 of the new namespaces: the mounts,
    checked, then exec systemd. Any failure exits 97 before systemd starts."""
    q = shlex.quote
    lines = [
        "set -eu",
        'fail() { echo "syslua-ns: $*" >&2; exit 97; }',
        # our own cgroup in every hierarchy systemd uses, so it manages that subtree only
        f"for h in {q(str(CGROUPS / 'systemd'))} {q(str(CGROUPS / 'unified'))} {q(str(CGROUPS))}; do",
        f'  if [ -e "$h/cgroup.procs" ]; then mkdir -p "$h/{cgroup}"; echo $$ > "$h/{cgroup}/cgroup.procs"; fi',
        "done",
        "mount --make-rprivate / || fail 'cannot make the mounts private'",
    ]
    # The checkout and the Python that runs `sys` inside must stay where they
    # are when they live under a directory the tmpfs cover (CI builds its
    # venv in a mktemp dir): held at a bind under the work dir, bound back
    # at their own paths once the tmpfs are checked empty. Only they are.
    kept = kept_paths(tmpfs)
    for i, path in enumerate(kept):
        hold = work / "kept" / str(i)
        lines.append(
            f"mkdir -p {q(str(hold))} && mount --bind {q(str(path))} {q(str(hold))}"
            f" || fail 'cannot hold {path}'"
        )
    for d in tmpfs:
        mode = "1777" if d in ("/tmp", "/var/tmp") else "0755"
        lines += [
            f"mount -t tmpfs -o mode={mode},nosuid,nodev tmpfs {q(d)} || fail 'cannot mount a tmpfs on {d}'",
            f'[ "$(stat -f -c %T {q(d)})" = tmpfs ] || fail "{d} is not a tmpfs"',
        ]
    lines += [
        f"[ ! -e {q(str(sentinel))} ] || fail 'the host /tmp is still visible'",
        '[ -z "$(ls -A /tmp)" ] || fail "/tmp is not empty"',
        *(
            f"mkdir -p {q(str(path))} && mount --bind {q(str(work / 'kept' / str(i)))} {q(str(path))}"
            f" || fail 'cannot bind {path} back'"
            for i, path in enumerate(kept)
        ),
        # a private /dev: the host's devtmpfs is shared by every mount namespace
        "mkdir -p /run/ns-dev && mount -t tmpfs -o mode=0755,nosuid tmpfs /run/ns-dev",
        *(f"touch /run/ns-dev/{n} && mount --bind /dev/{n} /run/ns-dev/{n}" for n in DEVICES),
        f"touch /run/ns-dev/console && mount --bind {q(str(work / 'console.log'))} /run/ns-dev/console",
        "mkdir -p /run/ns-dev/pts /run/ns-dev/shm /run/ns-dev/mqueue",
        "mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /run/ns-dev/pts",
        "ln -s pts/ptmx /run/ns-dev/ptmx",
        "mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /run/ns-dev/shm",
        "ln -s /proc/self/fd /run/ns-dev/fd",
        "ln -s /proc/self/fd/0 /run/ns-dev/stdin",
        "ln -s /proc/self/fd/1 /run/ns-dev/stdout",
        "ln -s /proc/self/fd/2 /run/ns-dev/stderr",
        "mount --move /run/ns-dev /dev",
        # systemd mkdirs in /sys/fs/cgroup and remounts it read-only: on the
        # host's own tmpfs that would change it for the host (it did once), so
        # a private tmpfs there with the host's hierarchies bound in
        f'case "$(stat -f -c %T {CGROUPS})" in',
        "cgroup2fs) ;;",
        "tmpfs)",
        "  mkdir -p /run/ns-cgroup && mount -t tmpfs -o mode=0755,nosuid,nodev,noexec tmpfs /run/ns-cgroup",
        f"  for h in {CGROUPS}/*; do",
        '    n="${h##*/}"',
        '    if [ -L "$h" ]; then cp -P "$h" /run/ns-cgroup/',
        '    elif mountpoint -q "$h"; then mkdir "/run/ns-cgroup/$n" && mount --bind "$h" "/run/ns-cgroup/$n"; fi',
        "  done",
        f"  mount --move /run/ns-cgroup {CGROUPS}",
        f'  [ "$(stat -f -c %T {CGROUPS})" = tmpfs ] || fail "cannot make {CGROUPS} private";;',
        f"*) fail 'unknown {CGROUPS}';;",
        "esac",
        # the kernel's settings are the host's: read-only inside
        "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys",
        "mount -o remount,bind,ro /sys",
        # the manager's settings, generators masked, the test target, the masks
        "mkdir -p /etc/systemd/system /etc/systemd/user /run/systemd/system /run/systemd/user",
        f"printf %s {q(SYSTEM_CONF)} > /etc/systemd/system.conf",
        f"printf %s {q(JOURNALD_CONF)} > /etc/systemd/journald.conf",
        f"printf %s {q(TEST_TARGET)} > /run/systemd/system/test.target",
        "mkdir -p /run/systemd/system/user-runtime-dir@.service.d",
        f"printf %s {q(RUNTIME_DIR_DROPIN)} > /run/systemd/system/user-runtime-dir@.service.d/syslua.conf",
        "mkdir -p /run/systemd/system/user@.service.d",
        f"printf %s {q(USER_MANAGER_DROPIN)} > /run/systemd/system/user@.service.d/syslua.conf",
    ]
    for kind, names in masked_generators().items():
        lines.append(f"mkdir -p /etc/systemd/{kind}")
        lines += [f"ln -s /dev/null /etc/systemd/{kind}/{q(n)}" for n in names]
    lines += [f"ln -s /dev/null /run/systemd/system/{q(n)}" for n in masked_units()]
    lines += [
        f"exec {SYSTEMD} --system --unit=test.target --log-target=console --log-level=info --show-status=0",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class SystemdNS:
    """A booted systemd (see the module's docstring)."""

    pid: int
    unshare: subprocess.Popen[bytes]
    work: Path
    user: TestUser
    cgroup: str
    sentinel: Path
    sentinel_text: str
    host_units: list[str]
    host_mounts: list[str]
    unit_dir: str = "/etc/systemd/system"
    boot_seconds: float = 0.0
    closed: bool = field(default=False)

    @property
    def user_unit_dir(self) -> Path:
        return self.user.home / ".config/systemd/user"

    def env_for(self, user: bool, env: Mapping[str, str] | None) -> dict[str, str]:
        base = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "PYTHONPATH": str(ROOT),
            "PYTHONDONTWRITEBYTECODE": "1",
            "SYSTEMD_PAGER": "",
            "SYSTEMD_COLORS": "0",
        }
        if user:
            u = self.user
            base.update(
                HOME=str(u.home),
                USER=u.name,
                LOGNAME=u.name,
                XDG_RUNTIME_DIR=u.runtime_dir,
            )
        else:
            base.update(HOME="/root", USER="root", LOGNAME="root")
        base.update(env or {})
        return base

    def run(
        self,
        argv: Sequence[str],
        *,
        user: bool = False,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
        timeout: float = 60,
        cwd: str | Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run `argv` inside the namespace (as the test user with `user=True`)."""
        if self.closed:
            raise RuntimeError("this systemd is gone")
        cmd = [
            "nsenter",
            f"--target={self.pid}",
            "--pid",
            "--mount",
            "--uts",
            "--ipc",
            f"--wd={cwd or self.work}",
        ]
        if user:
            u = self.user
            cmd += ["setpriv", f"--reuid={u.uid}", f"--regid={u.gid}", "--init-groups", "--"]
        return subprocess.run(
            [*cmd, *argv],
            env=self.env_for(user, env),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def systemctl(self, *args: str, user: bool = False) -> subprocess.CompletedProcess[str]:
        return self.run(["systemctl", *(["--user"] if user else []), *args], user=user)

    def write_unit(self, name: str, text: str, *, user: bool = False, reload: bool = True) -> str:
        """Write unit `name` (system: /etc/systemd/system inside; user: the test
        user's ~/.config/systemd/user), then daemon-reload that manager."""
        d = str(self.user_unit_dir) if user else self.unit_dir
        path = f"{d}/{name}"
        r = self.run(
            ["sh", "-c", 'mkdir -p "$1" && cat > "$2"', "sh", d, path], user=user, input=text
        )
        if r.returncode != 0:
            raise RuntimeError(f"cannot write {path}: {r.stderr}")
        if reload:
            r = self.systemctl("daemon-reload", user=user)
            if r.returncode != 0:
                raise RuntimeError(f"daemon-reload failed: {r.stderr}")
        return path

    def is_active(self, name: str, *, user: bool = False) -> str:
        return self.systemctl("is-active", name, user=user).stdout.strip()

    def is_enabled(self, name: str, *, user: bool = False) -> str:
        return self.systemctl("is-enabled", name, user=user).stdout.strip()

    def mkdir(self, name: str, *, user: bool = False) -> Path:
        """A directory under the shared work dir (owned by the test user with `user=True`)."""
        p = self.work / name
        p.mkdir(parents=True, exist_ok=True)
        if user:
            os.chown(p, self.user.uid, self.user.gid)
        return p

    def log(self) -> str:
        """What systemd wrote to its console, and the journal's last lines."""
        text = (self.work / "console.log").read_text(errors="replace")
        if not self.closed:
            text += self.run(["journalctl", "--no-pager", "-n", "80"]).stdout
        return text

    def check_host(self) -> None:
        """Fail loudly when the host's /tmp sentinel or /etc/systemd changed."""
        try:
            now = self.sentinel.read_text()
        except OSError as e:
            raise AssertionError(f"HOST /tmp SENTINEL GONE ({self.sentinel}): {e}") from None
        assert now == self.sentinel_text, f"HOST /tmp SENTINEL CHANGED: {self.sentinel}"
        assert listing(HOST_UNITS) == self.host_units, "HOST /etc/systemd CHANGED"
        now_mounts = host_mounts()
        assert now_mounts == self.host_mounts, (
            f"HOST MOUNTS CHANGED: {sorted(set(now_mounts) ^ set(self.host_mounts))}"
        )

    def close(self) -> None:
        """SIGKILL systemd from outside, reap unshare, check the pid is gone."""
        if self.closed:
            return
        self.closed = True
        kill_and_reap(self.pid, self.unshare)
        remove_cgroups(self.cgroup)


def listing(root: Path) -> list[str]:
    """Every path under `root`, with its link target or size: what a change would show."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in sorted(dirnames + filenames):
            p = os.path.join(dirpath, n)
            if os.path.islink(p):
                out.append(f"{p} -> {os.readlink(p)}")
            else:
                st = os.lstat(p)
                out.append(f"{p} {st.st_mode:o} {st.st_size} {st.st_mtime_ns}")
    return sorted(out)


def host_mounts() -> list[str]:
    """This (host) namespace's mounts with their options, and what /sys/fs/cgroup
    holds: a superblock that systemd changed inside would show here."""
    lines = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        f = line.split()
        lines.append(" ".join([f[4], f[5], *f[f.index("-") + 1 :]]))
    lines += sorted(f"{CGROUPS}/{n}" for n in os.listdir(CGROUPS))
    return lines


def kill_and_reap(pid: int, unshare: subprocess.Popen[bytes]) -> None:
    if pid > 0:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    try:
        unshare.wait(timeout=10)
    except subprocess.TimeoutExpired:
        unshare.kill()
        unshare.wait(timeout=10)
    if pid > 0:
        deadline = time.monotonic() + 5
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not os.path.exists(f"/proc/{pid}"), (
            f"systemd (pid {pid}) is still there after SIGKILL"
        )


def remove_cgroups(name: str, wait: float = 5.0) -> None:
    """Remove the (empty, once its processes are gone) cgroups systemd made
    under our own `name` in each hierarchy: deepest first, for a few seconds."""
    deadline = time.monotonic() + wait
    tops = [h / name for h in [CGROUPS, *CGROUPS.iterdir()] if (h / name).is_dir()]
    while tops:
        for top in tops:
            for dirpath, _dirs, _files in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                with contextlib.suppress(OSError):
                    os.rmdir(dirpath)
        tops = [t for t in tops if t.exists()]
        if tops and time.monotonic() >= deadline:
            break
        if tops:
            time.sleep(0.05)


def die_with_parent() -> None:
    """In unshare before its exec: SIGKILL it when this test process dies (its
    --kill-child then kills systemd), so a killed pytest leaves no systemd."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def hold_alive(work: Path) -> IO[str]:
    """A lock on WORK/alive, held while this boot lives: a work dir whose lock
    is free belongs to a test process that was killed (see clean_stale)."""
    f = open(work / "alive.new", "w")  # noqa: SIM115 (held until teardown)
    fcntl.flock(f, fcntl.LOCK_EX)
    os.rename(work / "alive.new", work / "alive")  # never seen unlocked
    return f


def is_alive(work: Path) -> bool:
    """Whether the boot of `work` lives (or is being made: no lock yet, for a minute)."""
    try:
        with open(work / "alive") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except FileNotFoundError:
        with contextlib.suppress(FileNotFoundError):
            return time.time() - work.stat().st_mtime < 60
    return False


def clean_stale() -> None:
    """Remove what a killed test process left (its systemd died with it, by
    PR_SET_PDEATHSIG and unshare --kill-child): test user, cgroups, sentinel, work dir."""
    for work in WORK_PARENT.iterdir():
        tag = work.name
        if len(tag) != 16 or not all(c in "0123456789abcdef" for c in tag):
            continue
        if is_alive(work):
            continue
        try:
            pw = pwd.getpwnam(f"sdns{tag[:8]}")
        except KeyError:
            pass
        else:
            if pw.pw_dir == str(work / "user"):
                remove_user(TestUser(pw.pw_name, pw.pw_uid, pw.pw_gid, Path(pw.pw_dir)))
        remove_cgroups(f"syslua-ns-{tag}", wait=0)
        (HOST_TMP / f"syslua-systemd-sentinel-{tag}").unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def systemd_child(unshare_pid: int) -> int:
    """The pid of unshare's forked child (PID 1 inside), 0 while there is none."""
    try:
        kids = Path(f"/proc/{unshare_pid}/task/{unshare_pid}/children").read_text().split()
    except OSError:
        return 0
    return int(kids[0]) if kids else 0


def is_systemd(pid: int) -> bool:
    try:
        return os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(SYSTEMD)
    except OSError:
        return False


def requirements() -> str | None:
    """Why a real systemd cannot boot here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "a real systemd needs root"
    for tool in ("unshare", "nsenter", "setpriv", "useradd", "userdel", "systemctl"):
        if shutil.which(tool) is None:
            return f"a real systemd needs {tool} on PATH"
    if not os.access(SYSTEMD, os.X_OK):
        return f"no {SYSTEMD}"
    return None


def make_user(work: Path, tag: str) -> TestUser:
    from conftest import machine_lock

    name = f"sdns{tag[:8]}"
    home = work / "user"
    with machine_lock("accounts"):
        subprocess.run(
            ["useradd", "--system", "--user-group", "--create-home", "--home-dir", str(home),
             "--shell", "/bin/sh", name],
            check=True, capture_output=True,
        )  # fmt: skip
    pw = pwd.getpwnam(name)
    return TestUser(name, pw.pw_uid, pw.pw_gid, home)


def remove_user(user: TestUser) -> None:
    from conftest import machine_lock

    with machine_lock("accounts"):
        subprocess.run(["userdel", user.name], capture_output=True, check=False)


@contextlib.contextmanager
def booted(tmpfs: Sequence[str] = TMPFS, *, timeout: float = BOOT_TIMEOUT) -> Iterator[SystemdNS]:
    """Boot systemd, yield it, and always kill it (see the module's docstring)."""
    why = requirements()
    if why:
        pytest.skip(why)
    tag = secrets.token_hex(8)
    WORK_PARENT.mkdir(mode=0o755, exist_ok=True)
    clean_stale()
    work = WORK_PARENT / tag
    work.mkdir(mode=0o755)
    alive = hold_alive(work)
    sentinel = HOST_TMP / f"syslua-systemd-sentinel-{tag}"
    sentinel_text = f"sentinel {tag}\n"
    sentinel.write_text(sentinel_text)
    user: TestUser | None = None
    unshare: subprocess.Popen[bytes] | None = None
    ns: SystemdNS | None = None
    cgroup = f"syslua-ns-{tag}"
    try:
        host_units = listing(HOST_UNITS)
        mounts = host_mounts()
        user = make_user(work, tag)
        (work / "console.log").touch()
        script = setup_script(work, cgroup, sentinel, tmpfs)
        (work / "setup.sh").write_text(script)
        with open(work / "unshare.log", "wb") as log:
            unshare = subprocess.Popen(
                ["unshare", "--pid", "--fork", "--mount", "--mount-proc", "--propagation", "private",
                 "--uts", "--ipc", "--kill-child", "/bin/sh", str(work / "setup.sh")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "container": "syslua-test",
                     "SYSTEMD_PROC_CMDLINE": "", "LANG": "C.UTF-8"},
                start_new_session=True,
                preexec_fn=die_with_parent,
            )  # fmt: skip
        ns = SystemdNS(0, unshare, work, user, cgroup, sentinel, sentinel_text, host_units, mounts)
        start = time.monotonic()
        ns.pid = wait_for_systemd(unshare, work, start + timeout)
        wait_running(ns, start + timeout)
        start_user_manager(ns, start + timeout)
        ns.boot_seconds = time.monotonic() - start
        ns.check_host()
        yield ns
    finally:
        try:
            teardown(ns, unshare, cgroup, user, work, (sentinel, sentinel_text))
        finally:
            alive.close()


def teardown(
    ns: SystemdNS | None,
    unshare: subprocess.Popen[bytes] | None,
    cgroup: str,
    user: TestUser | None,
    work: Path,
    sentinel: tuple[Path, str],
) -> None:
    """Every step, whichever fails: kill systemd, remove its cgroups, the test
    user, the work dir and the sentinel; then fail loudly on what went wrong
    (the sentinel first)."""
    errors: list[BaseException] = []

    def step(f: Callable[[], object]) -> None:
        try:
            f()
        except BaseException as e:  # noqa: BLE001 (every step runs; the first error is raised)
            errors.append(e)

    if ns is not None:
        step(ns.close)
    elif unshare is not None:
        step(lambda: kill_and_reap(systemd_child(unshare.pid), unshare))
    step(lambda: remove_cgroups(cgroup))
    if user is not None:
        step(lambda: remove_user(user))
    if not os.environ.get("SYSLUA_KEEP_NS"):
        step(lambda: shutil.rmtree(work, ignore_errors=True))
    path, text = sentinel
    try:
        now = path.read_text()
    except OSError as e:
        raise AssertionError(f"HOST /tmp SENTINEL GONE ({path}): {e}") from None
    path.unlink()
    if now != text:
        raise AssertionError(f"HOST /tmp SENTINEL CHANGED: {path}")
    if ns is not None:
        ns.sentinel.write_text(text)  # for check_host, which reads it
        try:
            ns.check_host()
        finally:
            ns.sentinel.unlink()
    if errors:
        raise errors[0]


def wait_for_systemd(unshare: subprocess.Popen[bytes], work: Path, deadline: float) -> int:
    """systemd's pid in the host's namespace, once the setup script exec'd it."""
    while time.monotonic() < deadline:
        if unshare.poll() is not None:
            why = (work / "unshare.log").read_text(errors="replace").strip()
            pytest.skip(f"systemd did not boot (setup exited {unshare.returncode}): {why[-500:]}")
        pid = systemd_child(unshare.pid)
        if pid and is_systemd(pid):
            return pid
        time.sleep(0.01)
    kill_and_reap(systemd_child(unshare.pid), unshare)
    pytest.skip("systemd did not start within the boot timeout")


def wait_running(ns: SystemdNS, deadline: float) -> None:
    state = ""
    while time.monotonic() < deadline:
        state = ns.systemctl("is-system-running").stdout.strip()
        if state in ("running", "degraded"):
            return
        time.sleep(0.05)
    log = ns.log()
    ns.close()
    pytest.skip(f"systemd is {state or 'not answering'} after {BOOT_TIMEOUT:.0f} s:\n{log[-1500:]}")


def start_user_manager(ns: SystemdNS, deadline: float) -> None:
    u = ns.user
    r = ns.systemctl("start", f"user@{u.uid}.service")
    state = ""
    while r.returncode == 0 and time.monotonic() < deadline:
        state = ns.systemctl("is-system-running", user=True).stdout.strip()
        if state in ("running", "degraded"):
            return
        time.sleep(0.05)
    log = ns.log()
    ns.close()
    pytest.skip(f"user@{u.uid}.service: {r.stderr.strip() or state}:\n{log[-1500:]}")


@pytest.fixture(scope="module")
def _systemd_boot() -> Iterator[SystemdNS]:
    with booted() as ns:
        yield ns


@pytest.fixture
def systemd_ns(_systemd_boot: SystemdNS) -> Iterator[SystemdNS]:
    """The module's booted systemd; the host's /tmp sentinel and /etc/systemd checked after the test."""
    _systemd_boot.check_host()
    yield _systemd_boot
    _systemd_boot.check_host()
