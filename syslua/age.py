"""age encryption: identities, decrypting, encrypting, and new identities.

syslua decrypts `.age` sources with the user's age identities and encrypts
files for `sys add --encrypt` and `sys age encrypt`. The cryptography is
pyrage's (the Rust `age` crate), so what this module writes the `age`
command reads and the other way round; pyrage is imported inside the
functions that use it, so a run that needs no age pays nothing for it.

An identity file is one of:
- what `age-keygen` writes: `AGE-SECRET-KEY-1...` lines, `#` comments and
  blank lines;
- such a file encrypted with a passphrase (`age -p`), whose passphrase comes
  from `SYSLUA_AGE_PASSPHRASE`, or is asked once on the terminal;
- an unencrypted OpenSSH private key (ed25519 or rsa), as age takes them.

Which file: `SYSLUA_AGE_IDENTITY`, else the config's `age_identity`, else
`~/.config/syslua/key.txt` (`identity_path`). A secret key is never part of
a message: errors name the file, and a bad line by its number.
"""

from __future__ import annotations

import base64
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from syslua import fsutil, paths
from syslua.errors import ResourceError

DEFAULT_IDENTITY = "~/.config/syslua/key.txt"
ENV_IDENTITY = "SYSLUA_AGE_IDENTITY"
ENV_PASSPHRASE = "SYSLUA_AGE_PASSPHRASE"

MAGIC = b"age-encryption.org/v1\n"
ARMOR_BEGIN = b"-----BEGIN AGE ENCRYPTED FILE-----"
SECRET_PREFIX = "AGE-SECRET-KEY-1"
_SSH_BEGIN = (b"-----BEGIN OPENSSH PRIVATE KEY-----", b"-----BEGIN RSA PRIVATE KEY-----")
_SSH_RECIPIENT = ("ssh-ed25519 ", "ssh-rsa ")
KEYGEN_HINT = "`sys age keygen` writes one"


class AgeError(ResourceError):
    """An identity, a recipient or an encrypted file that age cannot use; the
    message names the file (never a key)."""


def _expand(path: str) -> Path:
    if path == "~" or path.startswith("~/"):
        return Path(paths.home() + path[1:])
    return Path(path)


def identity_path(configured: str | None = None) -> Path:
    """The identity file to use: `SYSLUA_AGE_IDENTITY`, else `configured` (the
    config's `age_identity`), else `~/.config/syslua/key.txt`; `~` expanded."""
    chosen = os.environ.get(ENV_IDENTITY) or configured or DEFAULT_IDENTITY
    return _expand(chosen)


def shown(path: Path | str) -> str:
    return paths.abbreviate(str(path))


# -- reading identities -----------------------------------------------------------
# path -> ((mtime_ns, size, inode), identities): a passphrase is asked once
_cache: dict[str, tuple[tuple[int, int, int], list[Any]]] = {}


def forget_identities() -> None:
    """Drop the identities read so far (a passphrase is asked again)."""
    _cache.clear()


def identities(path: Path, *, prompt: bool = True) -> list[Any]:
    """The pyrage identities in the identity file `path` (cached per path and
    mtime). `prompt`: ask a passphrase on the terminal when the file is
    protected by one and `SYSLUA_AGE_PASSPHRASE` is not set."""
    try:
        st = os.stat(path)
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = _cache.get(str(path))
        if cached is not None and cached[0] == key:
            return cached[1]
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise AgeError(f"the identity file {shown(path)} does not exist ({KEYGEN_HINT})") from None
    except IsADirectoryError:
        raise AgeError(f"the identity {shown(path)} is a directory, not a file") from None
    except OSError as e:
        raise AgeError(f"cannot read the identity file {shown(path)}: {e.strerror}") from None
    found = _parse(data, path, prompt=prompt)
    _cache[str(path)] = (key, found)
    return found


def _parse(data: bytes, path: Path, *, prompt: bool) -> list[Any]:
    if is_age(data):
        data = _unlock(data, path, prompt=prompt)
        if is_age(data):
            raise AgeError(f"the identity file {shown(path)} is encrypted twice")
    head = data.lstrip()
    if head.startswith(_SSH_BEGIN):
        return [_ssh_identity(data, path)]
    return _x25519(data, path)


def _unlock(data: bytes, path: Path, *, prompt: bool) -> bytes:
    """The plain identity file inside a passphrase-protected one."""
    from pyrage import DecryptError, passphrase

    secret = os.environ.get(ENV_PASSPHRASE)
    if secret is None:
        if not (prompt and sys.stdin is not None and sys.stdin.isatty()):
            raise AgeError(
                f"the identity file {shown(path)} is protected by a passphrase: set "
                f"{ENV_PASSPHRASE}, or run on a terminal to be asked for it"
            )
        import getpass

        secret = getpass.getpass(f"Passphrase for the age identity {shown(path)}: ")
    try:
        return bytes(passphrase.decrypt(data, secret))
    except DecryptError as e:
        why = "wrong passphrase" if "failed" in str(e).lower() else str(e)
        if "no matching" in str(e).lower():
            why = "it is an age file, but not encrypted with a passphrase"
        raise AgeError(f"cannot unlock the identity file {shown(path)}: {why}") from None


def _ssh_identity(data: bytes, path: Path) -> Any:
    from pyrage import IdentityError, ssh

    try:
        return ssh.Identity.from_buffer(data)
    except IdentityError as e:
        why = str(e)
        if b"ENCRYPTED" in data or _openssh_cipher(data) not in (None, "none"):
            why = "it is protected by a passphrase, which syslua cannot use for SSH keys"
        raise AgeError(f"the SSH identity {shown(path)} cannot be used: {why}") from None


def _x25519(data: bytes, path: Path) -> list[Any]:
    from pyrage import IdentityError, x25519

    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise AgeError(f"{shown(path)} is not an age identity file (it is not text)") from None
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith(SECRET_PREFIX):
            what = (
                "a plugin identity, which syslua does not support"
                if line.startswith("AGE-PLUGIN-")
                else "not an AGE-SECRET-KEY-1... line"
            )
            raise AgeError(f"{shown(path)}:{number} is {what}")
        try:
            found.append(x25519.Identity.from_str(line))
        except IdentityError as e:
            raise AgeError(f"{shown(path)}:{number} is not a valid age secret key ({e})") from None
    if not found:
        raise AgeError(f"{shown(path)} holds no age identity (no AGE-SECRET-KEY-1... line)")
    return found


# -- decrypting ---------------------------------------------------------------------
def is_age(data: bytes) -> bool:
    """Whether `data` is an age file, binary or ASCII-armored."""
    return data.startswith(MAGIC) or data[:1024].lstrip().startswith(ARMOR_BEGIN)


def decrypt(data: bytes, what: str, path: Path) -> bytes:
    """The plaintext of the age file `data` (`what` names it in errors),
    decrypted with the identities in the file `path`."""
    from pyrage import DecryptError
    from pyrage import decrypt as age_decrypt

    prefix = f"cannot decrypt {shown(what)} with the identity {shown(path)}"
    if not is_age(data):
        raise AgeError(f"{prefix}: it is not an age-encrypted file")
    try:
        keys = identities(path)
    except AgeError as e:
        raise AgeError(f"cannot decrypt {shown(what)}: {e}") from None
    try:
        return bytes(age_decrypt(data, keys))
    except DecryptError as e:
        raise AgeError(f"{prefix}: {_why(data, str(e))}") from None


def _why(data: bytes, message: str) -> str:
    if "no matching keys" in message.lower():
        if b"\n-> scrypt " in data[:512]:
            return "it is encrypted with a passphrase, not to a recipient"
        return "no identity matched a recipient"
    return f"the file is damaged or not an age file ({message})"


# -- encrypting ---------------------------------------------------------------------
def recipient(text: str) -> Any:
    """The pyrage recipient of an `age1...` key or an SSH public key line."""
    from pyrage import RecipientError, ssh, x25519

    line = text.strip()
    try:
        if line.startswith("age1"):
            return x25519.Recipient.from_str(line)
        if line.startswith(_SSH_RECIPIENT):
            return ssh.Recipient.from_str(line)
    except RecipientError as e:
        raise AgeError(f"not a valid age recipient: {text!r} ({e})") from None
    raise AgeError(
        f"not an age recipient: {text!r} (an age1... key, or an ssh-ed25519 or ssh-rsa "
        "public key line)"
    )


def encrypt(data: bytes, recipients: Sequence[str], *, armor: bool = False) -> bytes:
    """`data` encrypted to every one of `recipients` (age1... keys or SSH
    public key lines); ASCII-armored when `armor`."""
    from pyrage import EncryptError
    from pyrage import encrypt as age_encrypt

    if isinstance(recipients, str):
        recipients = [recipients]
    parsed = [recipient(r) for r in recipients]
    if not parsed:
        raise AgeError("no recipients to encrypt to")
    try:
        return bytes(age_encrypt(data, parsed, armored=armor))
    except EncryptError as e:
        raise AgeError(f"cannot encrypt: {e}") from None


def recipients_of(path: Path) -> list[str]:
    """The public keys of the identity file `path`: `age1...` for x25519
    identities; for an SSH private key, its public key line (from `PATH.pub`,
    or from the key itself when it is in OpenSSH's format)."""
    from pyrage import x25519

    found = identities(path)
    if all(isinstance(i, x25519.Identity) for i in found):
        return [str(i.to_public()) for i in found]
    return [_ssh_public(path, found[0])]


def _ssh_public(path: Path, identity: Any) -> str:
    pub = Path(str(path) + ".pub")
    line: str | None = None
    try:
        line = " ".join(pub.read_text(encoding="ascii").split()[:2])
    except (OSError, UnicodeDecodeError):
        try:
            line = _openssh_public(path.read_bytes())
        except OSError:
            line = None
    if not line:
        raise AgeError(
            f"the public key of the SSH identity {shown(path)} is unknown ({shown(pub)} "
            "does not exist): give the recipients (-r, or age_recipients in the config)"
        )
    from pyrage import decrypt as age_decrypt

    try:
        age_decrypt(encrypt(b"", [line]), [identity])
    except Exception:  # pyrage.DecryptError, or an AgeError of a bad .pub
        raise AgeError(f"{shown(pub)} is not the public key of {shown(path)}") from None
    return line


def _openssh_blob(data: bytes) -> bytes | None:
    """The binary body of an OpenSSH private key file."""
    lines = data.decode("ascii", "replace").strip().splitlines()
    if len(lines) < 3 or "OPENSSH PRIVATE KEY" not in lines[0]:
        return None
    try:
        blob = base64.b64decode("".join(lines[1:-1]))
    except ValueError:
        return None
    return blob if blob.startswith(b"openssh-key-v1\0") else None


def _strings(blob: bytes, offset: int, count: int) -> tuple[list[bytes], int]:
    out = []
    for _ in range(count):
        size = int.from_bytes(blob[offset : offset + 4], "big")
        out.append(blob[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return out, offset


def _openssh_cipher(data: bytes) -> str | None:
    blob = _openssh_blob(data)
    if blob is None:
        return None
    (cipher,), _ = _strings(blob, len(b"openssh-key-v1\0"), 1)
    return cipher.decode("ascii", "replace")


def _openssh_public(data: bytes) -> str | None:
    """The public key line (`ssh-ed25519 AAAA...`) an OpenSSH private key
    file carries in the clear, before its private part."""
    blob = _openssh_blob(data)
    if blob is None:
        return None
    _, offset = _strings(blob, len(b"openssh-key-v1\0"), 3)  # cipher, kdf, kdf options
    offset += 4  # the number of keys
    (public,), _ = _strings(blob, offset, 1)
    (kind,), _ = _strings(public, 0, 1)
    if not public or not kind:
        return None
    return f"{kind.decode('ascii', 'replace')} {base64.b64encode(public).decode('ascii')}"


# -- new identities -------------------------------------------------------------------
def keygen(path: Path) -> str:
    """Write a new x25519 identity to `path` (0600; missing parents 0700) as
    `age-keygen` does, and return its recipient. An existing `path` is never
    replaced (AgeError)."""
    from datetime import datetime

    from pyrage import x25519

    if os.path.lexists(path):
        raise AgeError(f"{shown(path)} already exists: it is left as it is")
    identity = x25519.Identity.generate()
    public = str(identity.to_public())
    created = datetime.now().astimezone().isoformat(timespec="seconds").replace("+00:00", "Z")
    text = f"# created: {created}\n# public key: {public}\n{identity}\n"
    try:
        fsutil.make_dir(path.parent, 0o700)
        _write_new(path, text.encode("ascii"))
    except FileExistsError:
        raise AgeError(f"{shown(path)} already exists: it is left as it is") from None
    except OSError as e:
        raise AgeError(f"cannot write {shown(path)}: {e.strerror}") from None
    return public


def _write_new(path: Path, data: bytes) -> None:
    """Write `path`, which must not exist, whole or not at all: a 0600 temp
    file beside it, linked to its name (which fails if the name is taken
    meanwhile), then removed."""
    temp = path.parent / fsutil.temp_name(path.name)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), 0o600)
            os.fsync(f.fileno())
        os.link(temp, path)
    finally:
        os.unlink(temp)
    fsutil.fsync_dir(path.parent)


# -- sys doctor -----------------------------------------------------------------------
def check_identity(path: Path) -> tuple[str, list[tuple[str, str]]]:
    """What `sys doctor` says of the identity file `path`: a description when
    it is usable, and its problems as (problem, fix) pairs."""
    where = shown(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "", [(f"{where} does not exist", f"sys age keygen -o {where}")]
    except OSError as e:
        return "", [(f"{where}: {e.strerror}", f"check the path {where}")]
    if not stat.S_ISREG(st.st_mode):
        return "", [(f"{where} is not a regular file", "point SYSLUA_AGE_IDENTITY at the file")]
    problems = []
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.getuid():
        problems.append((f"{where} is not yours (owner uid {st.st_uid})", f"chown $USER {where}"))
    if mode & 0o077:
        problems.append(
            (
                f"{where} is readable by other users ({mode:04o}; should be 0600 or 0400)",
                f"chmod 600 {where}",
            )
        )
    if not os.access(path, os.R_OK):
        problems.append((f"{where} is not readable by you ({mode:04o})", f"chmod u+r {where}"))
        return "", problems
    try:
        data = path.read_bytes()
        if is_age(data) and ENV_PASSPHRASE not in os.environ:
            return f"{where} (passphrase-protected, {mode:04o})", problems
        found = identities(path, prompt=False)
    except (AgeError, OSError) as e:
        problems.append((str(e), "sys age keygen -o FILE writes a new identity"))
        return "", problems
    n = len(found)
    return f"{where}: {n} identit{'y' if n == 1 else 'ies'}, mode {mode:04o}", problems
