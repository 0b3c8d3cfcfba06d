"""A real `pass` password store with a real gpg key, for the secret tests.

The key (ed25519 signing, cv25519 encryption, no passphrase) is made once
per test process (`gpg_key`, session-scoped) and copied into each test's
own GNUPGHOME, so a test costs a copy, not a key generation. Each test's
store lives in its HOME (`~/.password-store`); its gpg-agent is killed at
teardown.

gpg puts its agent's sockets in GNUPGHOME, and a socket path longer than
about 100 bytes cannot be made (pytest's temp paths are often longer): so
GNUPGHOME is a short directory under /tmp, not `~/.gnupg`.

tests/conftest.py imports the fixtures, so any test module can ask for them:

    def test_x(sysenv, pass_store):
        pass_store.insert("email/work", "s3cret\\n")
        r = sysenv.run("plan")          # sees GNUPGHOME and PASSWORD_STORE_DIR

`pass_store` needs `sysenv`: it makes the store in `sysenv.home` and sets
GNUPGHOME and PASSWORD_STORE_DIR in this process's environment (which
`sysenv.env`, `run` and `spawn` copy); `pass_store.env` holds HOME,
GNUPGHOME and PASSWORD_STORE_DIR for any other process. For a second world,
`open_store(home, gpg_key)` makes one anywhere (call `.close()` after).
Without `pass` or `gpg` on PATH these fixtures skip the test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

UID = "syslua test <test@syslua.invalid>"
_TOOLS = ("pass", "gpg", "gpgconf")


def _short_dir(prefix: str) -> Path:
    """A new 0700 directory with a short path (gpg-agent's sockets go in it)."""
    base = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def _gpg(gnupghome: Path, *args: str, input: bytes | None = None) -> bytes:
    env = dict(os.environ, GNUPGHOME=str(gnupghome))
    p = subprocess.run(
        ["gpg", "--batch", *args], env=env, input=input, capture_output=True, timeout=60
    )
    if p.returncode != 0:
        raise RuntimeError(f"gpg {' '.join(args)}: {p.stderr.decode(errors='replace')}")
    return p.stdout


def kill_agent(gnupghome: Path) -> None:
    """Stop the gpg-agent (and other daemons) of `gnupghome`."""
    env = dict(os.environ, GNUPGHOME=str(gnupghome))
    subprocess.run(["gpgconf", "--kill", "all"], env=env, capture_output=True, timeout=30)


@dataclass(frozen=True)
class GpgKey:
    """A made key: the GNUPGHOME holding it (a template, copied per test) and its fingerprint."""

    template: Path
    fingerprint: str


def make_key() -> GpgKey:
    """A new passphrase-less key in a new directory; its agent already stopped."""
    home = _short_dir("sgk")
    _gpg(
        home,
        "--pinentry-mode",
        "loopback",
        "--passphrase",
        "",
        "--quick-gen-key",
        UID,
        "future-default",
        "default",
        "never",
    )
    listing = _gpg(home, "--list-secret-keys", "--with-colons").decode()
    fingerprint = next(
        line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")
    )
    kill_agent(home)
    return GpgKey(home, fingerprint)


class PassStore:
    """A pass store in `home`, encrypted to the key; `insert` adds entries."""

    def __init__(self, home: Path, key: GpgKey) -> None:
        self.home = home
        self.key = key
        self.gnupghome = _short_dir("sg")
        shutil.copytree(
            key.template,
            self.gnupghome,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("S.*", "*.lock", ".#*"),
        )
        self.gnupghome.chmod(0o700)
        self.dir = home / ".password-store"
        self.env = {
            "HOME": str(home),
            "GNUPGHOME": str(self.gnupghome),
            "PASSWORD_STORE_DIR": str(self.dir),
        }
        self.pass_("init", key.fingerprint)

    def pass_(self, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run `pass *args` on this store; fails the test when pass fails."""
        p = subprocess.run(
            ["pass", *args],
            env=dict(os.environ, **self.env),
            input=input,
            capture_output=True,
            timeout=60,
        )
        if p.returncode != 0:
            raise RuntimeError(f"pass {' '.join(args)}: {p.stderr.decode(errors='replace')}")
        return p

    def insert(self, name: str, value: str | bytes) -> None:
        """Store `value` as entry `name`, byte for byte (`pass insert -m -f`)."""
        data = value.encode() if isinstance(value, str) else value
        self.pass_("insert", "-m", "-f", name, input=data)

    def show(self, name: str) -> bytes:
        return self.pass_("show", name).stdout

    def close(self) -> None:
        kill_agent(self.gnupghome)
        shutil.rmtree(self.gnupghome, ignore_errors=True)


def open_store(home: Path, key: GpgKey) -> PassStore:
    """A new store in `home` (call `.close()` when done)."""
    return PassStore(home, key)


def need_tools() -> None:
    missing = [t for t in _TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} on PATH (Debian: apt-get install pass)")


@pytest.fixture(scope="session")
def gpg_key() -> Iterator[GpgKey]:
    """One passphrase-less gpg key for this test process."""
    need_tools()
    key = make_key()
    yield key
    kill_agent(key.template)
    shutil.rmtree(key.template, ignore_errors=True)


@pytest.fixture
def pass_store(sysenv, gpg_key: GpgKey, monkeypatch: pytest.MonkeyPatch) -> Iterator[PassStore]:
    """A pass store in `sysenv.home`, with GNUPGHOME and PASSWORD_STORE_DIR set for the test."""
    store = open_store(sysenv.home, gpg_key)
    monkeypatch.setenv("GNUPGHOME", store.env["GNUPGHOME"])
    monkeypatch.setenv("PASSWORD_STORE_DIR", store.env["PASSWORD_STORE_DIR"])
    try:
        yield store
    finally:
        store.close()
