"""`sys age keygen|encrypt|decrypt` and `syslua/age.py` (issue 25), checked
against the real `age` and `age-keygen` commands: what syslua encrypts `age`
decrypts, what `age` encrypts (binary or armored, to an x25519 key or an SSH
key) syslua decrypts, and `age-keygen -y` reads the identity syslua writes.
Identities are x25519 files, passphrase-protected ones (`age -p` format) and
OpenSSH keys. Every world is a temp HOME; the real one is never read.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import _in_process, out, tree

pytestmark = pytest.mark.skipif(
    shutil.which("age") is None or shutil.which("age-keygen") is None,
    reason="the age command is not installed (apt install age)",
)
AGE, AGE_KEYGEN = shutil.which("age") or "age", shutil.which("age-keygen") or "age-keygen"
SECRET = "machine example.com login me password hunter2\n"


def sys_(sysenv, *args: str, input: str | None = None, **env: str) -> subprocess.CompletedProcess:
    """`sys *args` in this process, with extra environment variables."""
    return _in_process(list(args), dict(sysenv.env, **env), sysenv.work, timeout=60, input=input)


def age(sysenv, *args: str, input: bytes | None = None) -> bytes:
    """The real `age` in the test's world; its stdout."""
    p = subprocess.run(
        [AGE, *args],
        input=input,
        capture_output=True,
        env=sysenv.env,
        cwd=sysenv.work,
        check=False,
    )
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout


def age_keygen(sysenv, path: Path) -> str:
    """A new identity at `path` made by the real age-keygen; its recipient."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([AGE_KEYGEN, "-o", str(path)], capture_output=True, check=True)
    return public_of(path)


def public_of(path: Path) -> str:
    p = subprocess.run([AGE_KEYGEN, "-y", str(path)], capture_output=True, text=True, check=True)
    return p.stdout.strip()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def default_key(sysenv) -> Path:
    return sysenv.home / ".config" / "syslua" / "key.txt"


# -- keygen -----------------------------------------------------------------------------
def test_keygen_writes_a_private_identity_age_reads_and_prints_only_its_recipient(sysenv):
    p = sysenv.run("age", "keygen")
    assert p.returncode == 0, out(p)
    key = default_key(sysenv)
    recipient = public_of(key)  # age-keygen -y parses it
    assert p.stdout == (
        f"Wrote a new age identity to ~/.config/syslua/key.txt (0600).\nPublic key: {recipient}\n"
    )
    text = key.read_text()
    secret = [line for line in text.splitlines() if line.startswith("AGE-SECRET-KEY-1")]
    assert len(secret) == 1 and secret[0] not in p.stdout + p.stderr
    assert text.startswith("# created: ") and f"# public key: {recipient}\n" in text
    assert mode(key) == 0o600
    assert mode(key.parent) == 0o700 and mode(key.parent.parent) == 0o700
    assert [n for n in os.listdir(key.parent) if n != "key.txt"] == []  # no temp left


def test_keygen_honours_the_identity_variable_and_o(sysenv):
    chosen = sysenv.home / "keys" / "age.txt"
    p = sys_(sysenv, "age", "keygen", SYSLUA_AGE_IDENTITY=str(chosen))
    assert p.returncode == 0 and f"Public key: {public_of(chosen)}" in p.stdout, out(p)
    other = sysenv.work / "other.txt"
    p = sysenv.run("age", "keygen", "-q", "-o", "other.txt")
    assert p.returncode == 0 and p.stdout == f"Public key: {public_of(other)}\n", out(p)
    assert not default_key(sysenv).exists()


def test_keygen_refuses_to_replace_an_identity(sysenv):
    key = default_key(sysenv)
    age_keygen(sysenv, key)
    before = tree(sysenv.home)
    p = sysenv.run("age", "keygen")
    assert p.returncode == 1, out(p)
    assert p.stderr.startswith(
        "Error: ~/.config/syslua/key.txt already exists: it is left as it is\n"
    ), out(p)
    assert p.stdout == ""
    assert tree(sysenv.home) == before


# -- encrypt / decrypt with x25519 -----------------------------------------------------
def test_what_sys_encrypts_age_decrypts(sysenv):
    key = default_key(sysenv)
    age_keygen(sysenv, key)
    (sysenv.work / "netrc").write_text(SECRET)
    p = sysenv.run("age", "encrypt", "-o", "netrc.age", "netrc")
    assert p.returncode == 0 and p.stdout == "", out(p)
    data = (sysenv.work / "netrc.age").read_bytes()
    assert data.startswith(b"age-encryption.org/v1\n") and SECRET.encode() not in data
    assert age(sysenv, "-d", "-i", str(key), "netrc.age") == SECRET.encode()
    # armored, from stdin, to stdout, for a recipient given with -r
    other = age_keygen(sysenv, sysenv.home / "other.txt")
    p = sysenv.run("age", "encrypt", "-a", "-r", other, input=SECRET)
    assert p.returncode == 0 and p.stdout.startswith("-----BEGIN AGE ENCRYPTED FILE-----"), out(p)
    plain = age(sysenv, "-d", "-i", str(sysenv.home / "other.txt"), input=p.stdout.encode())
    assert plain == SECRET.encode()


def test_what_age_encrypts_sys_decrypts(sysenv):
    key = default_key(sysenv)
    recipient = age_keygen(sysenv, key)
    (sysenv.work / "netrc").write_text(SECRET)
    age(sysenv, "-r", recipient, "-o", "binary.age", "netrc")
    age(sysenv, "-a", "-r", recipient, "-o", "armored.age", "netrc")
    for name in ("binary.age", "armored.age"):
        p = sysenv.run("age", "decrypt", name)
        assert p.returncode == 0 and p.stdout == SECRET, out(p)
    p = sysenv.run("age", "decrypt", "-o", "plain", "armored.age")
    assert p.returncode == 0 and p.stdout == "", out(p)
    assert (sysenv.work / "plain").read_text() == SECRET and mode(sysenv.work / "plain") == 0o600
    # from stdin, and with -i
    moved = sysenv.home / "moved.txt"
    key.rename(moved)
    armored = (sysenv.work / "armored.age").read_text()
    p = sysenv.run("age", "decrypt", "-i", str(moved), input=armored)
    assert p.returncode == 0 and p.stdout == SECRET, out(p)


def test_an_output_file_named_json_or_text_is_a_file(sysenv):
    recipient = age_keygen(sysenv, default_key(sysenv))
    (sysenv.work / "s.age").write_bytes(age(sysenv, "-r", recipient, input=SECRET.encode()))
    p = sysenv.run("age", "decrypt", "-o", "json", "s.age")
    assert p.returncode == 0, out(p)
    assert (sysenv.work / "json").read_text() == SECRET
    p = sysenv.run("age", "decrypt", "--output=text", "s.age")
    assert p.returncode == 0, out(p)
    assert (sysenv.work / "text").read_text() == SECRET


def test_an_existing_output_keeps_a_stricter_mode(sysenv):
    recipient = age_keygen(sysenv, default_key(sysenv))
    target = sysenv.work / "out.age"
    target.write_text("old")
    os.chmod(target, 0o600)
    p = sysenv.run("age", "encrypt", "-r", recipient, "-o", "out.age", input=SECRET)
    assert p.returncode == 0 and mode(target) == 0o600, out(p)
    new = sysenv.work / "new.age"
    assert sysenv.run("age", "encrypt", "-r", recipient, "-o", "new.age", input="x").returncode == 0
    assert mode(new) == 0o644  # ciphertext is not secret
    plain = sysenv.work / "plain"
    plain.write_text("old")
    os.chmod(plain, 0o644)
    assert sysenv.run("age", "decrypt", "-o", "plain", "out.age").returncode == 0
    assert plain.read_text() == SECRET and mode(plain) == 0o600  # plaintext: never wider


def test_the_wrong_identity_names_the_file_and_the_identity(sysenv):
    age_keygen(sysenv, default_key(sysenv))
    stranger = age_keygen(sysenv, sysenv.home / "stranger.txt")
    (sysenv.work / "s.age").write_bytes(age(sysenv, "-r", stranger, input=SECRET.encode()))
    before = tree(sysenv.work)
    p = sysenv.run("age", "decrypt", "-o", "plain", "s.age")
    assert p.returncode == 1, out(p)
    assert p.stderr == (
        f"Error: cannot decrypt {sysenv.work}/s.age with the identity "
        "~/.config/syslua/key.txt: no identity matched a recipient\n"
    )
    assert tree(sysenv.work) == before


def test_the_library_message_names_both_files_under_the_home(sysenv):
    from syslua import age as lib

    age_keygen(sysenv, default_key(sysenv))
    stranger = age_keygen(sysenv, sysenv.home / "stranger.txt")
    data = age(sysenv, "-a", "-r", stranger, input=SECRET.encode())
    assert lib.is_age(data) and lib.is_age(age(sysenv, "-r", stranger, input=b"x"))
    assert not lib.is_age(SECRET.encode())
    with pytest.raises(lib.AgeError) as e:
        lib.decrypt(data, str(sysenv.home / "dotfiles/netrc.age"), lib.identity_path())
    assert str(e.value) == (
        "cannot decrypt ~/dotfiles/netrc.age with the identity ~/.config/syslua/key.txt: "
        "no identity matched a recipient"
    )
    assert lib.decrypt(data, "netrc.age", sysenv.home / "stranger.txt") == SECRET.encode()
    assert lib.identity_path("~/k.txt") == sysenv.home / "k.txt"


def test_a_missing_or_garbage_identity_is_named(sysenv):
    (sysenv.work / "s.age").write_bytes(
        age(sysenv, "-r", age_keygen(sysenv, sysenv.home / "k.txt"), input=b"x")
    )
    p = sysenv.run("age", "decrypt", "s.age")
    assert p.returncode == 1 and p.stderr == (
        f"Error: cannot decrypt {sysenv.work}/s.age: the identity file "
        "~/.config/syslua/key.txt does not exist (`sys age keygen` writes one)\n"
    ), out(p)
    bad = sysenv.home / "bad.txt"
    bad.write_text("# a comment\nAGE-SECRET-KEY-1NOTAKEY\n")
    p = sysenv.run("age", "decrypt", "-i", str(bad), "s.age")
    assert p.returncode == 1 and "~/bad.txt:2 is not a valid age secret key" in p.stderr, out(p)
    assert "NOTAKEY" not in p.stderr  # a key line is never shown
    bad.write_text("hello\n")
    p = sysenv.run("age", "decrypt", "-i", str(bad), "s.age")
    assert "~/bad.txt:1 is not an AGE-SECRET-KEY-1... line" in p.stderr, out(p)


def test_a_bad_recipient_is_named_and_nothing_is_written(sysenv):
    before = tree(sysenv.work)
    p = sysenv.run("age", "encrypt", "-r", "age1nope", "-o", "x.age", input="x")
    assert p.returncode == 1 and "not a valid age recipient: 'age1nope'" in p.stderr, out(p)
    p = sysenv.run("age", "encrypt", "-r", "bob", "-o", "x.age", input="x")
    assert p.returncode == 1 and "not an age recipient: 'bob'" in p.stderr, out(p)
    assert tree(sysenv.work) == before


def test_binary_output_to_a_terminal_is_refused(sysenv):
    from ptyrun import run_in_pty

    recipient = age_keygen(sysenv, default_key(sysenv))
    (sysenv.work / "plain").write_text(SECRET)
    argv = [sys.executable, "-m", "syslua", "age", "encrypt", "-r", recipient, "plain"]
    code, seen, ended = run_in_pty(argv, env=sysenv.env, cwd=sysenv.work)
    assert ended and code == 2, seen
    assert b"refusing to write binary age output to a terminal" in seen
    code, seen, ended = run_in_pty([*argv, "-a"], env=sysenv.env, cwd=sysenv.work)
    assert ended and code == 0 and b"-----BEGIN AGE ENCRYPTED FILE-----" in seen, seen


# -- passphrase-protected identities -------------------------------------------------------
def protected_identity(sysenv, passphrase: str) -> tuple[Path, str]:
    """An identity file encrypted with `passphrase`, as `age -p` writes one."""
    from pyrage import passphrase as scrypt

    plain = sysenv.home / "plain-key.txt"
    recipient = age_keygen(sysenv, plain)
    key = default_key(sysenv)
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_bytes(scrypt.encrypt(plain.read_bytes(), passphrase))
    os.chmod(key, 0o600)
    plain.unlink()
    return key, recipient


def test_a_passphrase_protected_identity(sysenv):
    key, recipient = protected_identity(sysenv, "correct horse")
    (sysenv.work / "s.age").write_bytes(age(sysenv, "-r", recipient, input=SECRET.encode()))
    p = sys_(sysenv, "age", "decrypt", "s.age", SYSLUA_AGE_PASSPHRASE="correct horse")
    assert p.returncode == 0 and p.stdout == SECRET, out(p)
    # its recipient, for encrypt without -r
    p = sys_(sysenv, "age", "encrypt", "-a", SYSLUA_AGE_PASSPHRASE="correct horse", input="y")
    assert p.returncode == 0, out(p)
    p = sys_(sysenv, "age", "decrypt", SYSLUA_AGE_PASSPHRASE="correct horse", input=p.stdout)
    assert p.returncode == 0 and p.stdout == "y", out(p)
    from syslua import age as lib

    lib.forget_identities()  # in this process, the unlocked identity is kept
    p = sys_(sysenv, "age", "decrypt", "s.age", SYSLUA_AGE_PASSPHRASE="wrong")
    assert p.returncode == 1 and p.stderr == (
        f"Error: cannot decrypt {sysenv.work}/s.age: cannot unlock the identity file "
        "~/.config/syslua/key.txt: wrong passphrase\n"
    ), out(p)
    p = sysenv.run("age", "decrypt", "s.age")  # no variable, no terminal
    assert p.returncode == 1 and (
        "~/.config/syslua/key.txt is protected by a passphrase: set SYSLUA_AGE_PASSPHRASE"
        in p.stderr
    ), out(p)


def test_the_passphrase_is_asked_on_a_terminal(sysenv):
    from ptyrun import run_in_pty

    _, recipient = protected_identity(sysenv, "s3same")
    (sysenv.work / "s.age").write_bytes(age(sysenv, "-r", recipient, input=SECRET.encode()))

    def answer(pty, chunk: bytes) -> None:
        if b"Passphrase for the age identity ~/.config/syslua/key.txt: " in pty.seen:
            if not getattr(pty, "answered", False):
                pty.answered = True
                pty.type("s3same\n")

    argv = [sys.executable, "-m", "syslua", "age", "decrypt", "-o", "plain", "s.age"]
    code, seen, ended = run_in_pty(argv, env=sysenv.env, cwd=sysenv.work, each=answer)
    assert ended and code == 0, seen
    assert b"s3same" not in seen  # not echoed
    assert (sysenv.work / "plain").read_text() == SECRET


# -- SSH keys -----------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
@pytest.mark.parametrize("kind", ["ed25519", "rsa"])
def test_an_ssh_key_as_identity_and_recipient(sysenv, kind):
    key = sysenv.home / ".ssh" / f"id_{kind}"
    key.parent.mkdir(mode=0o700)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "test", "-f", str(key)], check=True
    )
    public = (key.parent / f"id_{kind}.pub").read_text().strip()
    # age encrypts to the public key, sys decrypts with the private one
    (sysenv.work / "s.age").write_bytes(age(sysenv, "-R", f"{key}.pub", input=SECRET.encode()))
    p = sysenv.run("age", "decrypt", "-i", str(key), "s.age")
    assert p.returncode == 0 and p.stdout == SECRET, out(p)
    # sys encrypts to the identity's public key (from id_*.pub), age decrypts
    p = sysenv.run("age", "encrypt", "-i", str(key), "-o", "t.age", input=SECRET)
    assert p.returncode == 0, out(p)
    assert age(sysenv, "-d", "-i", str(key), "t.age") == SECRET.encode()
    # without the .pub file, the key itself carries its public half
    from syslua import age as lib

    os.unlink(f"{key}.pub")
    assert lib.recipients_of(key) == [" ".join(public.split()[:2])]
    p = sysenv.run("age", "encrypt", "-r", public, "-o", "u.age", input=SECRET)
    assert p.returncode == 0, out(p)
    assert age(sysenv, "-d", "-i", str(key), "u.age") == SECRET.encode()


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
def test_a_passphrase_protected_ssh_key_is_refused_by_name(sysenv):
    key = sysenv.home / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "pw", "-f", str(key)], check=True)
    (sysenv.work / "s.age").write_bytes(age(sysenv, "-R", f"{key}.pub", input=b"x"))
    p = sysenv.run("age", "decrypt", "-i", str(key), "s.age")
    assert p.returncode == 1 and p.stderr == (
        f"Error: cannot decrypt {sysenv.work}/s.age: the SSH identity ~/id_ed25519 cannot be "
        "used: it is protected by a passphrase, which syslua cannot use for SSH keys\n"
    ), out(p)


# -- sys doctor -----------------------------------------------------------------------------------
def doctor(sysenv, **env: str) -> str:
    p = sys_(sysenv, "doctor", "--quick", **env)
    return p.stdout


def age_lines(text: str) -> list[str]:
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line[2:].startswith("age identity:"):
            found.append(line)
            if i + 1 < len(lines) and lines[i + 1].startswith("    fix: "):
                found.append(lines[i + 1])
    return found


def test_doctor_checks_the_identity_only_where_age_is_used(sysenv):
    assert age_lines(doctor(sysenv)) == []  # no identity, no variable: no noise
    key = default_key(sysenv)
    age_keygen(sysenv, key)
    os.chmod(key, 0o600)
    assert age_lines(doctor(sysenv)) == [
        "✓ age identity: ~/.config/syslua/key.txt: 1 identity, mode 0600"
    ]
    os.chmod(key, 0o644)
    before = tree(sysenv.home)
    assert age_lines(doctor(sysenv)) == [
        "✗ age identity: ~/.config/syslua/key.txt is readable by other users (0644; "
        "should be 0600 or 0400)",
        "    fix: chmod 600 ~/.config/syslua/key.txt",
    ]
    assert tree(sysenv.home) == before  # doctor only looks
    gone = sysenv.home / "gone.txt"
    assert age_lines(doctor(sysenv, SYSLUA_AGE_IDENTITY=str(gone))) == [
        "✗ age identity: ~/gone.txt does not exist",
        "    fix: sys age keygen -o ~/gone.txt",
    ]
    garbage = sysenv.home / "garbage.txt"
    garbage.write_text("garbage\n")
    os.chmod(garbage, 0o600)
    assert age_lines(doctor(sysenv, SYSLUA_AGE_IDENTITY=str(garbage)))[0] == (
        "✗ age identity: ~/garbage.txt:1 is not an AGE-SECRET-KEY-1... line"
    )
