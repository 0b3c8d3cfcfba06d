"""`sys add --encrypt PATH` and the `sys doctor` check of password managers
(issue 25), with the real `age` command reading what syslua encrypts.

`--encrypt` takes a home file nothing manages into the config as NAME.age,
encrypted for `-r` recipients, else the `age_recipients` the config's
encrypted files declare, else the public key of the identity, and prints
the declaration that decrypts it back; the file then applies with nothing
to do. A managed file from a plain source is refused, nothing written.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ok, out, put, tree

pytestmark = pytest.mark.skipif(
    shutil.which("age") is None or shutil.which("age-keygen") is None,
    reason="the age command is not installed (apt install age)",
)
TOKEN = "ghp_addencrypt0123456789\n"


def keygen(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["age-keygen", "-o", str(path)], capture_output=True, check=True)
    return subprocess.run(
        ["age-keygen", "-y", str(path)], capture_output=True, text=True, check=True
    ).stdout.strip()


def decrypt(path: Path, identity: Path) -> str:
    p = subprocess.run(
        ["age", "-d", "-i", str(identity), str(path)], capture_output=True, check=True
    )
    return p.stdout.decode()


def config(sysenv, text: str = "") -> Path:
    return put(sysenv.work / "sys.lua", text)


def test_encrypt_a_file_nothing_manages_then_apply_it(sysenv):
    key = sysenv.home / ".config" / "syslua" / "key.txt"
    keygen(key)
    config(sysenv)
    put(sysenv.home / ".token", TOKEN, 0o600)
    p = sysenv.run("add", "--encrypt", str(sysenv.home / ".token"))
    ok(p)
    assert "~/.token: encrypted to dotfiles/.token.age" in p.stdout
    declaration = 'file { path = "~/.token", source = "dotfiles/.token.age" }'
    assert declaration in p.stdout, out(p)
    assert TOKEN.strip() not in out(p)
    encrypted = sysenv.work / "dotfiles" / ".token.age"
    assert TOKEN.encode() not in encrypted.read_bytes()
    assert decrypt(encrypted, key) == TOKEN
    config(sysenv, declaration + "\n")
    p = sysenv.run("apply")
    ok(p)
    assert "0 to create, 0 to update" in p.stdout, out(p)
    assert (sysenv.home / ".token").read_text() == TOKEN


def test_recipients_from_the_flag_or_the_config(sysenv):
    key = sysenv.home / ".config" / "syslua" / "key.txt"
    keygen(key)
    other_key = sysenv.home / "other.txt"
    other = keygen(other_key)
    put(sysenv.home / "a", "first secret\n", 0o640)
    put(sysenv.home / "b", "second secret\n")
    config(sysenv)
    p = sysenv.run("add", "--encrypt", "-r", other, str(sysenv.home / "a"))
    ok(p)
    assert 'mode = "0640"' in p.stdout  # not the 0600 a decrypted file gets by default
    assert decrypt(sysenv.work / "dotfiles" / "a.age", other_key) == "first secret\n"
    # The config's encrypted files name their recipients: those, not the identity's key.
    put(sysenv.work / "x.age", "")
    subprocess.run(["age", "-r", other, "-o", str(sysenv.work / "x.age")], input=b"x", check=True)
    config(
        sysenv,
        f'file {{ path = "~/x", source = "x.age", age_identity = "{other_key}", '
        f'age_recipients = {{ "{other}" }} }}\n',
    )
    p = sysenv.run("add", "--encrypt", str(sysenv.home / "b"))
    ok(p)
    assert decrypt(sysenv.work / "dotfiles" / "b.age", other_key) == "second secret\n"


def test_refusals_change_nothing(sysenv):
    keygen(sysenv.home / ".config" / "syslua" / "key.txt")
    put(sysenv.work / "plain.txt", "plain\n")
    config(sysenv, 'file { path = "~/plain.txt", source = "plain.txt" }\n')
    ok(sysenv.run("apply"))
    put(sysenv.home / ".token", TOKEN, 0o600)
    before = (tree(sysenv.work), tree(sysenv.home))

    p = sysenv.run("add", "--encrypt", str(sysenv.home / "plain.txt"))
    assert p.returncode == 2, out(p)
    assert "managed from the unencrypted plain.txt" in p.stderr, out(p)

    p = sysenv.run("add", "--encrypt", "-r", "not-a-key", str(sysenv.home / ".token"))
    assert p.returncode == 2, out(p)
    assert "not an age recipient: 'not-a-key'" in p.stderr, out(p)

    p = sysenv.run("add", "-r", "age1xyz", str(sysenv.home / ".token"))
    assert p.returncode == 2, out(p)
    assert "-r/--recipient goes with --encrypt" in p.stderr, out(p)

    put(sysenv.work / "dotfiles" / ".token.age", "already here")
    before = (tree(sysenv.work), tree(sysenv.home))
    p = sysenv.run("add", "--encrypt", str(sysenv.home / ".token"))
    assert p.returncode == 2, out(p)
    assert "dotfiles/.token.age already exists" in p.stderr, out(p)
    assert (tree(sysenv.work), tree(sysenv.home)) == before
    assert TOKEN.strip() not in out(p)


def test_no_identity_and_no_recipient_is_a_clear_error(sysenv):
    config(sysenv)
    put(sysenv.home / ".token", TOKEN, 0o600)
    before = tree(sysenv.work)
    p = sysenv.run("add", "--encrypt", str(sysenv.home / ".token"))
    assert p.returncode != 0, out(p)
    assert "~/.config/syslua/key.txt" in p.stderr, out(p)
    assert "Traceback" not in out(p)
    assert tree(sysenv.work) == before


# -- sys doctor: the managers sys.secret runs ----------------------------------------
def doctor_lines(sysenv) -> list[str]:
    p = sysenv.run("doctor")
    return [line for line in out(p).splitlines() if "password managers" in line]


def test_doctor_checks_the_managers_only_where_the_config_runs_one(sysenv):
    config(sysenv, 'env { EDITOR = "vi" }\n')
    assert doctor_lines(sysenv) == []
    script = put(sysenv.home / "bin" / "mgr", "#!/bin/sh\necho s3cret-from-mgr\n", 0o755)
    config(
        sysenv,
        f'env {{ TOKEN = sys.secret{{ command = {{ "{script}" }} }} }}\n'
        'env { OTHER = sys.secret{ command = { "no-such-manager", "get" } } }\n',
    )
    lines = doctor_lines(sysenv)
    assert lines == [
        "✗ password managers: no-such-manager is not on PATH (the config reads secrets with it)"
    ], lines
    config(sysenv, f'env {{ TOKEN = sys.secret{{ command = {{ "{script}" }} }} }}\n')
    assert doctor_lines(sysenv) == [f"✓ password managers: {script} on PATH"]


def test_sys_add_warns_when_an_edit_would_leave_a_recipient_out(sysenv):
    laptop_key = sysenv.home / ".config" / "syslua" / "key.txt"
    laptop = keygen(laptop_key)
    desktop_key = sysenv.home / "desktop.txt"
    desktop = keygen(desktop_key)
    source = sysenv.work / "netrc.age"
    subprocess.run(
        ["age", "-r", laptop, "-r", desktop, "-o", str(source)], input=TOKEN.encode(), check=True
    )
    config(sysenv, 'file { path = "~/.netrc", source = "netrc.age" }\n')
    ok(sysenv.run("apply"))
    put(sysenv.home / ".netrc", "edited on the laptop\n", 0o600)
    p = sysenv.run("add", str(sysenv.home / ".netrc"))
    ok(p)
    assert "warning: it was encrypted for 2 recipients and now is for 1" in p.stdout, out(p)
    assert decrypt(source, laptop_key) == "edited on the laptop\n"
    # Declared, both stay able to read the next edit, and nothing is said.
    config(
        sysenv,
        f'file {{ path = "~/.netrc", source = "netrc.age", '
        f'age_recipients = {{ "{laptop}", "{desktop}" }} }}\n',
    )
    put(sysenv.home / ".netrc", "edited again\n", 0o600)
    p = sysenv.run("add", str(sysenv.home / ".netrc"))
    ok(p)
    assert "warning" not in out(p)
    assert decrypt(source, desktop_key) == "edited again\n"
