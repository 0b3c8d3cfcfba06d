"""No secret is ever shown or kept in the clear (issue 25), end to end.

`sensitive = true` on a file's literal content and on an exec's
environment; CCM's archive `password` and `headers` against a real HTTP
server on 127.0.0.1 with basic auth; and THE GREP TEST: one config using
every kind of secret (an age-encrypted file, `pass`, a command, the
environment, `sensitive`, an archive password), run through every command
that prints, then every file under SYSLUA_ROOT searched for each value.
A value may be found only in the private env scripts and in the store
blobs that hold a file's previous content (what syslua took over or
overwrote, and edits kept before `--force`); a value written literally in
the config may also be in the store's copies of the config (as private as
the config itself). Real `age`, `pass` and gpg; tests/test_secrets.py has
the rest.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import _in_process, ok, out, tree
from httpserver import make_tar

pytestmark = pytest.mark.skipif(
    shutil.which("age") is None or shutil.which("age-keygen") is None,
    reason="the age command is not installed (apt install age)",
)
AGE = shutil.which("age") or "age"
OWN = """\
local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP } }
"""
APP = {"app/bin/app": b"#!/bin/sh\necho app\n", "app/README": b"the app\n"}
NOTHING = "Plan: 0 to create, 0 to update, 0 to remove"


def sys_(sysenv, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`sys *args` in this process, with extra environment variables."""
    return _in_process(list(args), dict(sysenv.env, **env), sysenv.work, timeout=60, input=None)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def no_value(p: subprocess.CompletedProcess[str], *values: str) -> None:
    for value in values:
        assert value not in out(p), f"{value!r} shown:\n{out(p)}"


def state_texts(sysenv) -> dict[str, bytes]:
    """Every file of the state directory (snapshots, journal, env scripts) by path."""
    state = sysenv.root / "state"
    return {str(p.relative_to(state)): p.read_bytes() for p in state.rglob("*") if p.is_file()}


def assert_not_in_state(sysenv, *values: str) -> None:
    for rel, data in state_texts(sysenv).items():
        for value in values:
            assert value.encode() not in data, f"{value!r} in state/{rel}"


def lua_str(s: str | Path) -> str:
    return json.dumps(str(s))


# -- 3. sensitive = true, and the archive's password and headers ---------------------------
LITERAL = "literal-sensitive-5d1f"
EXEC_LITERAL = "exec-sensitive-a0c4"


def test_sensitive_file_content_and_exec_environment(sysenv):
    body = (
        f'file {{ path = "~/.conf", content = "key = {LITERAL}\\n", mode = "0600", sensitive = true }}\n'
        'exec { name = "use", provider = "shell", sensitive = true,\n'
        "       command = \"printf '%s' \\\"$KEY\\\" > ~/.exec-out\",\n"
        f'       environment = {{ KEY = "{EXEC_LITERAL}" }} }}\n'
    )
    sysenv.write("sys.lua", OWN + body)
    runs = [sysenv.run("plan", "--diff"), sysenv.run("plan", "--json")]
    assert "(secret file: 1 line changed)" in runs[0].stdout, out(runs[0])
    runs.append(sysenv.run("apply", "--json"))
    ok(runs[-1])
    assert (sysenv.home / ".conf").read_text() == f"key = {LITERAL}\n"
    assert (sysenv.home / ".exec-out").read_text() == EXEC_LITERAL
    runs += [
        sysenv.run("history"),
        sysenv.run("history", "--json"),
        sysenv.run("snapshot", "show"),
        sysenv.run("snapshot", "show", "--json"),
        sysenv.run("status", "--json"),
    ]
    (sysenv.home / ".conf").write_text(f"key = {LITERAL}-edited\n")
    runs += [sysenv.run("plan", "--diff"), sysenv.run("diff")]
    assert "! file ~/.conf: edited since the last apply" in runs[-2].stdout, out(runs[-2])
    for p in runs:
        assert "Traceback" not in out(p)
        no_value(p, LITERAL, EXEC_LITERAL)
    assert_not_in_state(sysenv, LITERAL, EXEC_LITERAL)


def test_the_archive_password_and_headers_are_never_shown_nor_kept(sysenv, server):
    password, header = "archive-pw-71b3", "Bearer header-value-2e9a"
    url, sha = server.put("private/app.tar.gz", make_tar(APP))
    server.protect("private/app.tar.gz", "deploy", password)
    dest = sysenv.home / "out"
    sysenv.write(
        "sys.lua",
        OWN
        + f"archive {{ name = {lua_str(dest / 'app.tar.gz')}, url = {lua_str(url)},\n"
        f"  checksum = {lua_str(sha)}, extract_parent = {lua_str(dest)},\n"
        f'  owner = ME, group = GRP, username = "deploy", password = "{password}",\n'
        f'  headers = {{ ["X-Token"] = "{header}" }} }}\n',
    )
    basic = base64.b64encode(f"deploy:{password}".encode()).decode()
    values = (password, header, basic)
    runs = [sysenv.run("plan"), sysenv.run("plan", "--json"), sysenv.run("plan", "--diff")]
    p = sysenv.run("apply", "--json")
    ok(p)
    runs.append(p)
    assert (dest / "app" / "bin" / "app").is_file()
    sent = server.headers("private/app.tar.gz")
    assert sent.get("X-Token") == header and sent.get("Authorization") == f"Basic {basic}"
    runs += [
        sysenv.run("plan"),
        sysenv.run("history", "--json"),
        sysenv.run("snapshot", "show"),
        sysenv.run("snapshot", "show", "--json"),
        sysenv.run("status"),
        sysenv.run("status", "--json"),
    ]
    assert NOTHING in runs[-6].stdout, out(runs[-6])
    for p in runs:
        assert "Traceback" not in out(p)
        no_value(p, *values)
    assert_not_in_state(sysenv, *values)
    # a wrong password: the failure names the server's answer, never the password
    url2, _ = server.put("private/new.tar.gz", make_tar({"new/x": b"x\n"}))
    server.protect("private/new.tar.gz", "deploy", password)
    sysenv.write(
        "sys.lua",
        (sysenv.work / "sys.lua").read_text()
        + f"archive {{ name = {lua_str(dest / 'new.tar.gz')}, url = {lua_str(url2)},\n"
        f"  extract_parent = {lua_str(dest)}, owner = ME, group = GRP,\n"
        '  username = "deploy", password = "wrong-pw-9f0e" }\n',
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "HTTP 401" in out(p)
    no_value(p, "wrong-pw-9f0e", password)
    assert tree(sysenv.home) == before
    assert_not_in_state(sysenv, "wrong-pw-9f0e", *values)
