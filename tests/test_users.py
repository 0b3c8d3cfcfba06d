"""`user{}` through useradd/usermod/userdel, against copies of the account files.

SYSLUA_ACCOUNTS_PREFIX=<dir> makes syslua (and the shadow tools, via
`--prefix`) manage `<dir>/etc/passwd`, `group`, `shadow` and `gshadow`
instead of the real ones, so these tests never touch /etc. They need root and
useradd (marked `root`; skipped otherwise), except the last test, which only
runs as a normal user and checks the 'needs root' message. The real /etc files are compared
before and after every test.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import ok
from conftest import out as out_of

# Real accounts (useradd, the account files): the tests of this group take
# turns (conftest.machine_lock), whichever worker runs them.
pytestmark = pytest.mark.xdist_group("accounts")

ACCOUNT_FILES = ("passwd", "group", "shadow", "gshadow")
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
HAVE_TOOLS = all(
    shutil.which(t) or os.path.exists(f"/usr/sbin/{t}") for t in ("useradd", "usermod", "userdel")
)
needs_root = pytest.mark.skipif(
    not (IS_ROOT and HAVE_TOOLS), reason="needs root and useradd/usermod/userdel"
)

NAME = "sltestuser"
UID = 45100
GROUPS = {"slg1": 45001, "slg2": 45002, "slg3": 45003}
BOOM = f'exec {{ name = "boom", command = "false", depends_on = {{ "user#{NAME}" }} }}\n'


def real_etc() -> dict[str, bytes]:
    out = {}
    for f in ACCOUNT_FILES:
        try:
            out[f] = Path("/etc", f).read_bytes()
        except (FileNotFoundError, PermissionError):
            out[f] = b""
    return out


@pytest.fixture
def accounts(sysenv, tmp_path, monkeypatch):
    """A prefix with copies of the account files plus three test groups; returns its etc dir."""
    if not (IS_ROOT and HAVE_TOOLS):
        pytest.skip("needs root and useradd/usermod/userdel")
    etc = tmp_path / "accounts" / "etc"
    etc.mkdir(parents=True)
    for f in (*ACCOUNT_FILES, "login.defs"):
        src = Path("/etc", f)
        if src.exists():
            shutil.copy2(src, etc / f)
        else:
            (etc / f).write_text("")
    for f in ACCOUNT_FILES:
        text = (etc / f).read_text()
        assert f"{NAME}:" not in text, f"{NAME} already exists in /etc/{f}"
    with open(etc / "group", "a") as g, open(etc / "gshadow", "a") as gs:
        for name, gid in GROUPS.items():
            g.write(f"{name}:x:{gid}:\n")
            gs.write(f"{name}:!::\n")
    monkeypatch.setenv("SYSLUA_ACCOUNTS_PREFIX", str(etc.parent))
    before = real_etc()
    yield etc
    assert real_etc() == before, "the real /etc account files changed"


def passwd_entry(etc: Path, name: str = NAME) -> list[str] | None:
    for line in (etc / "passwd").read_text().splitlines():
        parts = line.split(":")
        if parts[0] == name:
            return parts
    return None


def groups_of(etc: Path, name: str = NAME) -> list[str]:
    out = []
    for line in (etc / "group").read_text().splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and name in parts[3].split(","):
            out.append(parts[0])
    return sorted(out)


def add_to_group(etc: Path, group: str, name: str = NAME) -> None:
    lines = []
    for line in (etc / "group").read_text().splitlines():
        parts = line.split(":")
        if parts[0] == group:
            members = [m for m in parts[3].split(",") if m]
            parts[3] = ",".join([*members, name])
            line = ":".join(parts)
        lines.append(line)
    (etc / "group").write_text("\n".join(lines) + "\n")


def files(etc: Path) -> dict[str, bytes]:
    return {f: (etc / f).read_bytes() for f in ACCOUNT_FILES}


def user_decl(**props) -> str:
    parts = [f'name = "{props.pop("name", NAME)}"']
    for k, v in props.items():
        if isinstance(v, bool):
            parts.append(f"{k} = {'true' if v else 'false'}")
        elif isinstance(v, int):
            parts.append(f"{k} = {v}")
        elif isinstance(v, (list, tuple)):
            parts.append(f"{k} = {{ " + ", ".join(f'"{x}"' for x in v) + " }")
        else:
            parts.append(f'{k} = "{v}"')
    return "user { " + ", ".join(parts) + " }\n"


# -- root ------------------------------------------------------------------------------------


@pytest.mark.root
@needs_root
def test_create_user(sysenv, accounts):
    sysenv.write(
        "sys.lua",
        user_decl(
            uid=UID,
            shell="/bin/sh",
            home="/home/sltestuser",
            comment="syslua test",
            groups=["slg1"],
        ),
    )
    res = sysenv.run("apply")
    ok(res)
    entry = passwd_entry(accounts)
    assert entry is not None
    assert entry[2] == str(UID)
    assert entry[4] == "syslua test"
    assert entry[5] == "/home/sltestuser"
    assert entry[6] == "/bin/sh"
    assert groups_of(accounts) == ["slg1"]
    assert any(
        line.startswith(f"{NAME}:") for line in (accounts / "shadow").read_text().splitlines()
    )
    # converged: a second apply changes nothing
    again = sysenv.run("apply")
    ok(again)
    assert "No changes" in again.stdout
    assert sysenv.run("plan", "--exit-code").returncode == 0


@pytest.mark.root
@needs_root
def test_groups_merge_across_declarations(sysenv, accounts):
    sysenv.write("sys.lua", user_decl(groups=["slg2"]) + user_decl(groups=["slg1"]))
    doc = json.loads(sysenv.run("plan", "--json").stdout)
    [item] = [i for i in doc["manifest"]["items"] if i["type"] == "user"]
    assert sorted(item["props"]["groups"]) == ["slg1", "slg2"]
    ok(sysenv.run("apply"))
    assert groups_of(accounts) == ["slg1", "slg2"]


@pytest.mark.root
@needs_root
def test_undeclared_groups_kept_unless_purge(sysenv, accounts):
    sysenv.write("sys.lua", user_decl(groups=["slg1"]))
    ok(sysenv.run("apply"))
    add_to_group(accounts, "slg3")  # added by hand, not declared
    assert groups_of(accounts) == ["slg1", "slg3"]
    sysenv.write("sys.lua", user_decl(groups=["slg1", "slg2"]))
    ok(sysenv.run("apply"))
    assert groups_of(accounts) == ["slg1", "slg2", "slg3"]
    sysenv.write("sys.lua", user_decl(groups=["slg2"], purge_groups=True))
    plan = sysenv.run("plan")
    assert "groups" in out_of(plan)
    ok(sysenv.run("apply"))
    assert groups_of(accounts) == ["slg2"]


@pytest.mark.root
@needs_root
def test_update_shell_and_home(sysenv, accounts):
    sysenv.write("sys.lua", user_decl(shell="/bin/sh"))
    ok(sysenv.run("apply"))
    sysenv.write("sys.lua", user_decl(shell="/bin/bash", home="/srv/sltestuser"))
    plan = sysenv.run("plan")
    assert "/bin/bash" in out_of(plan)
    ok(sysenv.run("apply"))
    entry = passwd_entry(accounts)
    assert entry is not None and entry[6] == "/bin/bash" and entry[5] == "/srv/sltestuser"


@pytest.mark.root
@needs_root
def test_ensure_absent_deletes(sysenv, accounts):
    sysenv.write("sys.lua", user_decl())
    ok(sysenv.run("apply"))
    assert passwd_entry(accounts) is not None
    sysenv.write("sys.lua", user_decl(ensure="absent"))
    ok(sysenv.run("apply"))
    assert passwd_entry(accounts) is None
    again = sysenv.run("apply")
    ok(again)
    assert "No changes" in again.stdout


@pytest.mark.root
@needs_root
def test_removed_declaration_deletes_and_rollback_recreates(sysenv, accounts):
    sysenv.write("sys.lua", user_decl(uid=UID, shell="/bin/sh", groups=["slg1"]))
    ok(sysenv.run("apply"))
    first = json.loads(sysenv.run("history", "--json").stdout)[0]["id"]
    sysenv.write("sys.lua", "-- nothing\n")
    ok(sysenv.run("apply", "--allow-empty"))
    assert passwd_entry(accounts) is None
    ok(sysenv.run("rollback", first))
    entry = passwd_entry(accounts)
    assert entry is not None and entry[2] == str(UID) and entry[6] == "/bin/sh"
    assert groups_of(accounts) == ["slg1"]


@pytest.mark.root
@needs_root
def test_failed_apply_restores_new_account(sysenv, accounts):
    before = files(accounts)
    sysenv.write("sys.lua", user_decl(uid=UID, groups=["slg1"]) + BOOM)
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)
    assert "System unchanged" in out_of(res)
    assert passwd_entry(accounts) is None
    assert groups_of(accounts) == []
    after = files(accounts)
    for f in ACCOUNT_FILES:
        assert after[f] == before[f], f"{f} differs after rollback"


@pytest.mark.root
@needs_root
def test_failed_apply_restores_changed_account(sysenv, accounts):
    # primary group `users`: no private group, so the restore does not depend on one
    sysenv.write(
        "sys.lua",
        user_decl(uid=UID, gid="users", shell="/bin/sh", comment="before", groups=["slg1"]),
    )
    ok(sysenv.run("apply"))
    add_to_group(accounts, "slg3")
    entry_before, groups_before = passwd_entry(accounts), groups_of(accounts)
    sysenv.write(
        "sys.lua",
        user_decl(
            uid=UID,
            gid="users",
            shell="/bin/bash",
            comment="after",
            groups=["slg2"],
            purge_groups=True,
        )
        + BOOM,
    )
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)
    assert "System unchanged" in out_of(res), out_of(res)
    assert passwd_entry(accounts) == entry_before
    assert groups_of(accounts) == groups_before == ["slg1", "slg3"]


@pytest.mark.root
@needs_root
def test_failed_apply_restores_deleted_account(sysenv, accounts):
    sysenv.write(
        "sys.lua", user_decl(uid=UID, gid="users", shell="/bin/sh", groups=["slg1", "slg2"])
    )
    ok(sysenv.run("apply"))
    entry_before = passwd_entry(accounts)
    sysenv.write("sys.lua", user_decl(ensure="absent") + BOOM)
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)
    assert "System unchanged" in out_of(res), out_of(res)
    assert passwd_entry(accounts) == entry_before
    assert groups_of(accounts) == ["slg1", "slg2"]


@pytest.mark.root
@needs_root
def test_failed_apply_restores_deleted_account_with_private_group(sysenv, accounts):
    sysenv.write("sys.lua", user_decl(uid=UID, shell="/bin/sh", groups=["slg1"]))
    ok(sysenv.run("apply"))
    before = files(accounts)
    sysenv.write("sys.lua", user_decl(ensure="absent") + BOOM)
    res = sysenv.run("apply")
    assert res.returncode == 1
    assert "rolling back failed too" not in out_of(res), out_of(res)
    assert passwd_entry(accounts) is not None
    assert files(accounts)["group"] == before["group"]


@pytest.mark.root
@needs_root
def test_failed_apply_restores_changed_account_with_private_group(sysenv, accounts):
    sysenv.write("sys.lua", user_decl(uid=UID, shell="/bin/sh", comment="before"))
    ok(sysenv.run("apply"))
    entry_before = passwd_entry(accounts)
    sysenv.write("sys.lua", user_decl(uid=UID, shell="/bin/bash", comment="after") + BOOM)
    res = sysenv.run("apply")
    assert res.returncode == 1
    assert "rolling back failed too" not in out_of(res), out_of(res)
    assert passwd_entry(accounts) == entry_before


@pytest.mark.root
@needs_root
def test_unknown_group_is_a_clear_error(sysenv, accounts):
    before = files(accounts)
    sysenv.write("sys.lua", user_decl(groups=["no-such-group-sl"]))
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)  # the item cannot be applied: the apply fails
    assert "no-such-group-sl" in out_of(res) and "does not exist" in out_of(res)
    assert "Traceback" not in out_of(res)
    assert files(accounts) == before


# -- not root ---------------------------------------------------------------------------------


@pytest.mark.skipif(IS_ROOT, reason="only meaningful when not running as root")
def test_needs_root_message(sysenv, tmp_path, monkeypatch):
    etc = tmp_path / "accounts" / "etc"
    etc.mkdir(parents=True)
    for f in ACCOUNT_FILES:
        (etc / f).write_text("")
    monkeypatch.setenv("SYSLUA_ACCOUNTS_PREFIX", str(etc.parent))
    sysenv.write("sys.lua", user_decl())
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)  # the item cannot be applied: the apply fails
    assert "needs root" in out_of(res)
    assert "Traceback" not in out_of(res)
    assert (etc / "passwd").read_text() == ""
    # planning is fine without root
    plan = sysenv.run("plan")
    assert "Traceback" not in out_of(plan)
