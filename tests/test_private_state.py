"""Private state (SPEC section 7, issue 9): what syslua keeps is readable by its owner alone.

A config with secrets (a `mode = "0600"` file, inline and from `source`; a
taken-over `~/.ssh/id_ed25519`; an exec with `environment` values) and a
package is applied under umask 000; then every entry under $SYSLUA_ROOT is
checked against the table of modes below (a path no rule names fails the
test, so a new kind of file needs a rule), and no file outside the
exceptions (package trees, the profile, the live env scripts) may be
readable by group or others. A state dir left open by an older version is
tightened by the next command, which says so once.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from conftest import HEADER, SysEnv, ok, out, q
from httpserver import file_url, make_tar, sha256, tool

SECRET = "hunter2-private-key-material"

# (relative path pattern, mode) - the first rule that matches wins; None: an
# exception (trees, profiles), checked by `check_exception`; "link": a symlink.
RULES: list[tuple[str, int | str | None]] = [
    (r"store", 0o711),
    (r"store/objects", 0o700),
    (r"store/objects/[0-9a-f]{2}", 0o700),
    (r"store/objects/[0-9a-f]{2}/[0-9a-f]{62}", 0o400),
    (r"store/packs", 0o700),
    (r"store/packs/[0-9a-f]{32}\.(pack|idx)", 0o400),
    (r"store/tmp", 0o700),
    (r"store/trees", 0o711),
    (r"store/trees/[^/]+(/.*)?", None),
    (r"state", 0o711),
    (r"state/snapshots", 0o700),
    (r"state/snapshots/[^/]+\.json", 0o600),
    (r"state/journal", 0o700),
    (r"state/journal/journal\.jsonl", 0o600),
    (r"state/journal/journal\.key", 0o600),
    (r"state/failed-journals", 0o700),
    (r"state/failed-journals/[^/]+", 0o600),
    (r"state/binds", 0o700),
    (r"state/binds/[0-9a-f]+\.json", 0o600),
    (r"state/lock", 0o600),
    (r"state/originals\.json", 0o600),
    (r"state/unrestored\.json", 0o600),
    (r"state/stat-index", 0o600),
    (r"state/env\.(sh|fish)", 0o644),
    (r"state/profile", "link"),
    (r"state/profiles", 0o711),
    (r"state/profiles/p-[0-9a-f]+(/.*)?", None),
    (r"cache", 0o700),
    (r"cache/downloads", 0o700),
    (r"cache/downloads/[0-9a-f]{64}", 0o600),
    (r"cache/eval", 0o700),
    (r"cache/eval/[0-9a-f]{32}\.json", 0o600),
]

# The exceptions: readable by all.
PUBLIC = r"store/trees/.*|state/profiles/.*|state/profile|state/env\.(sh|fish)"


def rule_for(rel: str) -> int | str | None:
    for pattern, mode in RULES:
        if re.fullmatch(pattern, rel):
            return mode
    raise AssertionError(f"no rule for {rel}: add one to RULES (and to docs/atomic-apply.md)")


def check_modes(root: Path) -> list[str]:
    """Every entry under `root` against RULES; returns `find -printf '%m %p'` style lines."""
    seen = []
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        st = p.lstat()
        mode = stat.S_IMODE(st.st_mode)
        seen.append(f"{mode:o} {rel}")
        want = rule_for(rel)
        if want == "link":
            assert stat.S_ISLNK(st.st_mode), rel
        elif want is None:
            check_exception(p, st)
        else:
            assert not stat.S_ISLNK(st.st_mode), rel
            assert mode == want, f"{rel}: mode {mode:o}, expected {want:o}"
        if not stat.S_ISDIR(st.st_mode) and not re.fullmatch(PUBLIC, rel):
            assert mode & 0o077 == 0, f"{rel} is readable by other users"
    return seen


def check_exception(p: Path, st: os.stat_result) -> None:
    """Trees and profiles: readable by all, writable by nobody else, no secret inside."""
    if stat.S_ISLNK(st.st_mode):
        return
    mode = stat.S_IMODE(st.st_mode)
    assert mode & 0o022 == 0, f"{p} is writable by other users"
    assert mode & 0o444 == 0o444, f"{p} is not readable by other users"
    if stat.S_ISDIR(st.st_mode):
        assert mode & 0o111 == 0o111, f"{p} cannot be traversed by other users"
    if stat.S_ISREG(st.st_mode):
        assert SECRET.encode() not in p.read_bytes(), p


def secret_config(sysenv: SysEnv) -> None:
    (sysenv.home / ".ssh").mkdir(mode=0o700)
    key = sysenv.home / ".ssh" / "id_ed25519"
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY----- {SECRET}-hand-made\n")
    key.chmod(0o600)
    source = sysenv.work / "token.txt"
    source.write_text(f"token {SECRET}-from-source\n")
    source.chmod(0o600)
    archive = sysenv.work / "hello-1.0.tar.gz"
    archive.write_bytes(make_tar({"hello-1.0/bin/hello": tool("hello")}))
    mark = sysenv.home / "journal-mode"
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
file {{ path = "~/.secret", content = "inline {SECRET}\\n", mode = "0600" }}
file {{ path = "~/.token", source = {q(source)}, mode = "0600" }}
file {{ path = "~/.ssh/id_ed25519", content = "managed {SECRET}\\n", mode = "0600" }}
exec {{ name = "login", provider = "shell", environment = {{ "API_TOKEN={SECRET}-env" }},
        command = "cd \\"$SYSLUA_ROOT/state/journal\\" && stat -c %a journal.jsonl journal.key > {mark}; echo $API_TOKEN" }}
env {{ EDITOR = "vi" }}
package {{ name = "hello", version = "1.0", strip_components = 1, bin = {{ "bin/hello" }},
           source = lib.fetchUrl {{ url = {q(file_url(archive))}, sha256 = "{sha256(archive.read_bytes())}" }} }}
""",
    )


def apply_with_umask(sysenv: SysEnv, umask: int, *args: str):  # type: ignore[no-untyped-def]
    saved = os.umask(umask)
    try:
        return sysenv.run("apply", *args)
    finally:
        os.umask(saved)


def test_nothing_syslua_keeps_is_readable_by_others(sysenv) -> None:
    secret_config(sysenv)
    p = apply_with_umask(sysenv, 0o000)  # the umask must not loosen anything
    ok(p)
    assert "Tightened" not in out(p)
    # the journal and its key, while the apply ran
    assert (sysenv.home / "journal-mode").read_text().split() == ["600", "600"]
    lines = check_modes(sysenv.root)
    # every kind of thing was there to be checked
    kinds = {rule_for(line.split(" ", 1)[1]) for line in lines}
    assert {0o400, 0o600, 0o700, 0o711, 0o644, None, "link"} <= kinds
    assert any("cache/downloads/" in line for line in lines)
    assert any("store/trees/" in line for line in lines)
    # the secret is in the store and the snapshot (owner-only), never in the exceptions
    assert SECRET not in (sysenv.root / "state" / "env.sh").read_text()
    # a second apply, a rollback and a gc keep it so
    sysenv.write("sys.lua", HEADER + 'file { path = "~/.other", content = "x\\n" }\n')
    ok(apply_with_umask(sysenv, 0o000))
    ok(sysenv.run("rollback"))
    ok(sysenv.run("gc", "--keep", "0"))
    check_modes(sysenv.root)


def test_a_state_dir_left_open_is_tightened_once(sysenv) -> None:
    secret_config(sysenv)
    ok(sysenv.run("apply"))
    # what an older version left: 0755 directories, 0644 files, 0444 blobs
    for d in ("store", "state", "cache"):
        for p in [sysenv.root / d, *(sysenv.root / d).rglob("*")]:
            if p.is_symlink() or "trees/" in str(p) or "profiles/" in str(p):
                continue
            if p.is_dir():
                p.chmod(0o755)
            elif "objects" in p.parts or "packs" in p.parts:
                p.chmod(0o444)
            else:
                p.chmod(0o644)
    p = sysenv.run("status")
    ok(p)
    warnings = [ln for ln in p.stderr.splitlines() if "Tightened permissions" in ln]
    assert warnings == [
        f"Warning: Tightened permissions of {sysenv.root}/store, {sysenv.root}/state, "
        f"{sysenv.root}/cache: other users could read syslua's state"
    ], out(p)
    check_modes(sysenv.root)
    # said once: the next command finds nothing to tighten
    p = sysenv.run("status")
    ok(p)
    assert "Tightened" not in out(p)
    p = sysenv.run("apply")
    ok(p)
    assert "Tightened" not in out(p)


def test_tightening_reaches_a_lone_loose_file(sysenv) -> None:
    """A lock left 0644 is caught by the quick check too."""
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "a\\n" }\n')
    ok(sysenv.run("apply"))
    (sysenv.root / "state" / "lock").chmod(0o644)
    p = sysenv.run("history")
    ok(p)
    assert f"Tightened permissions of {sysenv.root}/state" in p.stderr
    assert stat.S_IMODE((sysenv.root / "state" / "lock").stat().st_mode) == 0o600


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_modes_do_not_depend_on_the_umask(sysenv, umask: int) -> None:
    """Private things stay private under umask 000; trees, the profile and
    the env scripts stay readable under umask 077."""
    secret_config(sysenv)
    ok(apply_with_umask(sysenv, umask))
    check_modes(sysenv.root)
    modes = {line.split(" ", 1)[1]: line.split(" ", 1)[0] for line in check_modes(sysenv.root)}
    assert modes["store"] == "711" and modes["state"] == "711"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_user_runs_the_tools_but_reads_no_secret(tmp_path: Path) -> None:
    """As `nobody`: the profile's tool runs through env.sh; snapshots, blobs,
    the journal dir and the cache cannot be read or listed."""
    import shutil
    import subprocess
    import tempfile

    from conftest import new_env

    base = Path(tempfile.mkdtemp(prefix="syslua-other-", dir="/tmp"))
    try:
        base.chmod(0o711)  # pytest's tmp_path is 0700: another user could reach nothing
        sysenv = new_env(base)
        sysenv.root.rmdir()  # syslua creates it, on the way to the profile: 0711
        secret_config(sysenv)
        ok(sysenv.run("apply"))
        root = sysenv.root

        def as_nobody(cmd: str) -> subprocess.CompletedProcess[str]:
            def drop() -> None:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)

            return subprocess.run(
                ["/bin/sh", "-c", cmd],
                capture_output=True,
                text=True,
                preexec_fn=drop,
                env={"PATH": "/usr/bin:/bin", "HOME": "/"},
                timeout=30,
            )

        p = as_nobody(f". {root}/state/env.sh && hello world")
        assert p.returncode == 0 and p.stdout == "hello world\n", p
        snap = next((root / "state" / "snapshots").glob("2*.json"))
        pack = next((root / "store" / "packs").glob("*.pack"))
        download = next((root / "cache" / "downloads").iterdir())
        for target in (snap, pack, pack.with_suffix(".idx"), download, root / "state" / "lock"):
            p = as_nobody(f"cat {target}")
            assert p.returncode != 0 and "Permission denied" in p.stderr, (target, p)
        for listing in (
            "store",
            "state",
            "store/objects",
            "store/packs",
            "state/snapshots",
            "cache",
            "store/trees",
        ):
            p = as_nobody(f"ls {root}/{listing}")
            assert p.returncode != 0 and "Permission denied" in p.stderr, (listing, p)
        p = as_nobody(f"grep -r {SECRET} {root}")
        assert SECRET not in p.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)
