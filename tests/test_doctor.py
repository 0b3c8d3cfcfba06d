"""`sys doctor` (issue 12): one line per check, ✓ or ✗ with a fix, exit 1 when
any check fails, `--json`, `--quick`; and doctor itself changes nothing.

Each test breaks one thing for real (a mode, a lock held by a live process,
a kept journal, a corrupt store object, an rc file, PATH, a config) in an
otherwise healthy world, and reads the line of that check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import HEADER, _in_process, corrupt_object, ok, out, store_objects, tree
from test_lock import Holder

CHECKS = [
    "lua",
    "permissions",
    "lock",
    "journals",
    "store",
    "env",
    "path",
    "config",
    "links",
    "snapshot",
]


def doctor(sysenv, *args: str, shell: str = "/bin/bash", path_bin: bool = True, **env: str):
    """`sys doctor *args` with `$SHELL` = `shell`, and the profile's bin on PATH when `path_bin`."""
    e = dict(sysenv.env, SHELL=shell, **env)
    e.pop("XDG_CONFIG_HOME", None)  # fish's config.fish under the test's home
    if path_bin:
        e["PATH"] = f"{sysenv.root / 'state' / 'profile' / 'bin'}{os.pathsep}{e['PATH']}"
    return _in_process(["doctor", *args], e, sysenv.work, timeout=120, input=None)


def line_of(p, title: str) -> str:
    found = [x for x in p.stdout.splitlines() if x[2:].startswith(title + ":")]
    assert len(found) == 1, p.stdout
    return found[0]


def fix_of(p, title: str) -> str:
    """The fix under a check's line (after the rest of its detail, when it has several lines)."""
    lines = p.stdout.splitlines()
    for line in lines[lines.index(line_of(p, title)) + 1 :]:
        if line.startswith("    fix: "):
            return line[len("    fix: ") :]
        assert line.startswith("    "), p.stdout  # no fix before the next check's line
    raise AssertionError(p.stdout)


@pytest.fixture
def healthy(sysenv):
    """An applied config, and ~/.bashrc loading the env script."""
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\nenv { A = "1" }\n'
    )
    ok(sysenv.run("apply"))
    line = sysenv.run("env", "--shell", "bash").stdout.strip()
    (sysenv.home / ".bashrc").write_text(f"# mine\n{line}\n")
    return sysenv


def test_a_healthy_machine_passes_every_check(healthy) -> None:
    before = tree(healthy.root), tree(healthy.home)
    p = doctor(healthy)
    assert p.returncode == 0, out(p)
    lines = p.stdout.splitlines()
    assert [x[:2] for x in lines[:8]] == ["✓ "] * 8, p.stdout  # NO_COLOR keeps the marks
    assert line_of(p, "Lua runtime").startswith("✓ Lua runtime: LuaJIT 2.1.")
    assert line_of(p, "lock") == "✓ lock: free"
    assert line_of(p, "failed journals") == "✓ failed journals: none"
    assert line_of(p, "store").endswith("objects: every hash matches")
    assert line_of(p, "env line") == f"✓ env line: ~/.bashrc loads {healthy.root}/state/env.sh"
    assert line_of(p, "PATH") == f"✓ PATH: {healthy.root}/state/profile/bin is on PATH"
    assert line_of(p, "config") == f"✓ config: {healthy.work}/sys.lua evaluates (2 items)"
    assert lines[-1] == "All 10 checks passed."
    assert "\x1b[" not in p.stdout
    assert (tree(healthy.root), tree(healthy.home)) == before  # doctor only looks


def test_json_lists_every_check(healthy) -> None:
    p = doctor(healthy, "--json", path_bin=False)
    assert p.returncode == 1, out(p)
    data = json.loads(p.stdout)
    assert data["format"] == 1 and data["ok"] is False
    assert [c["name"] for c in data["checks"]] == CHECKS
    by = {c["name"]: c for c in data["checks"]}
    assert by["path"]["ok"] is False and "load syslua's env script" in by["path"]["fix"]
    assert all(c["fix"] is None for c in data["checks"] if c["ok"])
    assert set(data["checks"][0]) == {"name", "ok", "detail", "fix"}


def test_a_fresh_machine(sysenv) -> None:
    """Nothing applied, no config, no rc file: what is missing fails, with the fix."""
    p = doctor(sysenv, path_bin=False)
    assert p.returncode == 1, out(p)
    assert line_of(p, "permissions") == (
        "✓ permissions: no state or store yet (the first `sys apply` creates them)"
    )
    assert line_of(p, "store") == "✓ store: 0 objects: every hash matches"
    assert line_of(p, "env line") == (
        "✗ env line: ~/.bashrc does not exist, so it does not load syslua's env script"
    )
    script = f"{sysenv.root}/state/env.sh"
    assert fix_of(p, "env line") == (
        f"run `sys env --append`, or add this line to ~/.bashrc: [ -f '{script}' ] && . '{script}'"
    )
    assert line_of(p, "PATH").startswith("✗ PATH: ")
    assert line_of(p, "config").startswith("✗ config: no config file")
    assert fix_of(p, "config") == "sys init writes a starter"
    assert p.stdout.splitlines()[-1] == "3 of 10 checks failed."
    assert not sysenv.root.exists() or tree(sysenv.root) == {}  # doctor creates nothing


def test_permissions_too_open_or_unusable(healthy) -> None:
    snapshots = healthy.root / "state" / "snapshots"
    snapshots.chmod(0o755)
    before = tree(healthy.root)
    for args in ((), ("--quick",)):
        p = doctor(healthy, *args)
        assert p.returncode == 1, out(p)
        assert line_of(p, "permissions") == (
            f"✗ permissions: readable by other users: {snapshots} (should be 0700)"
        )
        assert fix_of(p, "permissions").startswith(f"chmod 0700 {snapshots}")
    assert tree(healthy.root) == before  # not tightened by doctor
    snapshots.chmod(0o700)
    index = snapshots / "index.json"
    index.chmod(0o644)  # a file deep inside: only the full walk sees it
    assert doctor(healthy, "--quick").returncode == 0
    p = doctor(healthy)
    assert line_of(p, "permissions") == (
        f"✗ permissions: readable by other users: {index} (should be 0600)"
    )
    index.chmod(0o200)  # ours, but not readable by us
    p = doctor(healthy)
    assert f"you cannot use: {index} (0200)" in line_of(p, "permissions")
    index.chmod(0o600)
    assert doctor(healthy).returncode == 0


def test_lock_held_by_a_live_process_names_it(healthy) -> None:
    h = Holder(healthy)
    try:
        p = doctor(healthy)
        assert p.returncode == 1, out(p)
        line = line_of(p, "lock")
        assert line.startswith(f"✗ lock: held by pid {h.proc.pid} (sys apply hold.lua, started ")
        assert fix_of(p, "lock").endswith(f"if it is stuck, stop it (kill {h.proc.pid})")
    finally:
        done = h.release()
    assert done.returncode == 0, out(done)


def test_lock_file_of_a_dead_process_is_fine(healthy) -> None:
    lock = healthy.root / "state" / "lock"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    lock.write_text(
        json.dumps({"pid": pid, "command": "sys apply", "line": "sys apply", "started": 0})
    )
    p = doctor(healthy)
    assert p.returncode == 0, out(p)
    assert line_of(p, "lock").startswith(
        f"✓ lock: free; the lock file still names pid {pid} (sys apply, started "
    )
    assert "that is fine, the lock died with it" in line_of(p, "lock")


def test_failed_journals_are_named(healthy) -> None:
    kept = healthy.root / "state" / "failed-journals"
    kept.mkdir(mode=0o700)
    journal = kept / "20261126-010203-4242.jsonl"
    journal.write_text("{}\n")
    journal.chmod(0o600)
    p = doctor(healthy)
    assert p.returncode == 1, out(p)
    assert line_of(p, "failed journals") == (
        f"✗ failed journals: 1 kept from an undo that could not finish: {journal}"
    )
    assert fix_of(p, "failed journals").endswith(f"rm {journal}")
    assert journal.exists()


def test_a_corrupt_store_object_is_found(healthy) -> None:
    digest = sorted(store_objects(healthy.root))[0]
    files = corrupt_object(healthy.root, digest)
    packed = files[0].endswith(".pack")
    where = f"{files[0]} (object {digest[:12]})" if packed else files[0]
    for args in ((), ("--quick",)):  # a sample of a small store is all of it
        p = doctor(healthy, *args)
        assert p.returncode == 1, out(p)
        assert f"do not match their hash: {where}" in line_of(p, "store")
        if packed:  # the pack holds other blobs: only the corrupt one goes, by gc
            assert fix_of(p, "store").startswith("run `sys gc`, which writes their packs")
        else:
            assert fix_of(p, "store").startswith(f"delete the files that hold them (rm {files[0]})")
    if packed:
        ok(healthy.run("gc"))
    for f in [] if packed else files:  # gone now: the current snapshot refers to what they held
        os.unlink(f)
    p = doctor(healthy)
    assert "objects and 0 of 0 trees the current snapshot refers to are missing" in line_of(
        p, "store"
    )


def test_quick_hashes_a_sample(sysenv) -> None:
    files = "\n".join(f'file {{ path = "~/f{i}", content = "{i}\\n" }}' for i in range(70))
    sysenv.write("sys.lua", HEADER + files + "\n")
    ok(sysenv.run("apply"))
    full = doctor(sysenv)
    n = int(line_of(full, "store").split()[2])
    assert n >= 70 and line_of(full, "store") == f"✓ store: {n} objects: every hash matches"
    quick = doctor(sysenv, "--quick")
    assert line_of(quick, "store") == (
        f"✓ store: 64 of {n} objects checked (a sample): hashes match"
    )


@pytest.mark.parametrize(
    ("shell", "rc", "text", "passes"),
    [
        ("/usr/bin/zsh", ".zshrc", "{sh_line}\n", True),
        ("/usr/bin/fish", ".config/fish/config.fish", "{fish_line}\n", True),
        ("/usr/bin/fish", ".config/fish/config.fish", "{sh_line}\n", False),  # the sh script
        ("/bin/bash", ".bashrc", 'source "$HOME/../root/state/env.sh"\n', False),
        ("/bin/bash", ".bashrc", "# {sh_line}\n", False),  # commented out
        ("/bin/bash", ".bashrc", "if true; then\n  {sh_line}\nfi\n", True),
    ],
)
def test_env_line_follows_shell(healthy, shell, rc, text, passes) -> None:
    (healthy.home / ".bashrc").unlink()
    sh_line = healthy.run("env", "--shell", "bash").stdout.strip()
    fish_line = healthy.run("env", "--shell", "fish").stdout.strip()
    target = healthy.home / rc
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text.format(sh_line=sh_line, fish_line=fish_line))
    p = doctor(healthy, shell=shell)
    line = line_of(p, "env line")
    assert p.returncode == (0 if passes else 1), out(p)
    assert line.startswith("✓" if passes else "✗"), line
    if not passes:
        expected = fish_line if shell.endswith("fish") else sh_line
        assert fix_of(p, "env line").endswith(f": {expected}")


def test_env_line_of_an_unknown_shell(healthy) -> None:
    p = doctor(healthy, shell="/bin/tcsh")
    assert line_of(p, "env line").startswith("✗ env line: $SHELL is /bin/tcsh: syslua writes")
    assert "sys env --shell sh" in fix_of(p, "env line")


def test_a_config_that_no_longer_evaluates(healthy) -> None:
    healthy.write("sys.lua", HEADER + "file { path = 42 }\n")
    p = doctor(healthy)
    assert p.returncode == 1, out(p)
    line = line_of(p, "config")
    assert line.startswith(f"✗ config: {healthy.work}/sys.lua does not evaluate: sys.lua:3:"), line
    assert fix_of(p, "config") == f"sys plan {healthy.work}/sys.lua shows it in full"


def test_doctor_help_has_an_example(sysenv) -> None:
    p = sysenv.run("doctor", "--help")
    ok(p)
    assert "Examples:" in p.stdout and "sys doctor --quick" in p.stdout
    assert "--quick" in p.stdout and "--json" in p.stdout


def test_the_real_command(healthy) -> None:
    env = dict(healthy.env, SHELL="/bin/bash")
    env["PATH"] = f"{healthy.root / 'state' / 'profile' / 'bin'}{os.pathsep}{env['PATH']}"
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "doctor", "--quick"],
        cwd=healthy.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, out(p)
    assert p.stdout.splitlines()[-1] == "All 10 checks passed."
