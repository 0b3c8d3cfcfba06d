"""Secret values: in the manifest only as placeholders, never printed or kept in the clear.

A secret enters a run in one of three ways: `sys.secret{...}` reads one
while the config is evaluated, a property the config marks `sensitive = true`
(and CCM's archive `password` and `headers`) holds one, or a file is
decrypted from an `.age` source. The first two become *placeholders* at once:
`$${secret:<keyed hash>}`, which is all the manifest, and so the plan, the
snapshots and `--json`, ever holds. The keyed hash (HMAC-SHA256 with a key
that never leaves the state directory) changes when the value changes, so
a changed secret is still a change, without a hash anyone could test
guesses against. Concatenation and templates carry the placeholder along,
which is what makes a value built from a secret a secret too.

The values themselves live in this process's vault, resolved into an item
only when its kind reads the machine or acts (`resources/placeholders.py`).
An apply *seals* each value it used into `state/secrets/<id>.age`, encrypted
with age to the state's own key, so that `sys rollback` and crash recovery
can write them again without the config or the password manager.

Output is the last line of defence: `redacting()` wraps stdout and stderr
for a command's whole run and shows any placeholder, and any value the vault
knows, as `(secret)`; `scrub` does the same to JSON before syslua writes a
snapshot or a journal record.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from syslua.paths import Paths

PREFIX = "$${secret:"
PATTERN = r"\$\$\{secret:([0-9a-f]{32})\}"  # compiled by `re` on first use
SHOWN = "(secret)"
KEY_FILE = "secret.key"  # the state's own age identity; the hash key derives from it
SEALED_DIR = "secrets"
# Values shorter than this are not searched for in output (a one-letter
# secret would blank every such letter); their placeholders still are. A
# decrypted file's lines are hidden one by one from LINE_SHOWN characters.
SHORTEST_SHOWN = 4
LINE_SHOWN = 8


class _Vault:
    """What this process knows: placeholders' values, and other text to hide."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}  # id -> value
        self.hidden: set[str] = set()  # text never shown (values, decrypted contents)
        self.forms: set[str] = set()  # ... and as JSON escapes it
        self.ordered: list[str] = []  # the forms, longest first
        self.unsealed: set[str] = set()  # ids not yet sealed into the state
        self.read: dict[str, str] = {}  # a source's description -> its placeholder (one evaluation)
        self.programs: set[str] = set()  # managers the evaluation ran (for `sys doctor`)
        self.key: tuple[str, bytes, str] | None = None  # (state dir, hash key, identity)

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]


_vault = _Vault()


def active() -> bool:
    """Does this process hold any secret value?"""
    return bool(_vault.values or _vault.hidden)


def new_evaluation() -> None:
    """Forget which sources were read: the next evaluation reads each again."""
    _vault.read.clear()
    _vault.programs.clear()


def reset() -> None:
    """Forget everything (a new command in the same process: the tests)."""
    _vault.clear()


# -- keys ----------------------------------------------------------------------
def _state() -> Path:
    return Paths.from_env().state


def _key() -> tuple[bytes, str]:
    """(the hash key, the sealing identity) of this state directory, made on first use."""
    state = _state()
    if _vault.key is not None and _vault.key[0] == str(state):
        return _vault.key[1], _vault.key[2]
    import hashlib

    from syslua.fsutil import make_dir

    path = state / KEY_FILE
    try:
        identity = path.read_text().strip()
    except FileNotFoundError:
        import pyrage

        identity = str(pyrage.x25519.Identity.generate())
        make_dir(state, 0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:  # another run made it first: use theirs
            identity = path.read_text().strip()
        else:
            with os.fdopen(fd, "w") as f:
                f.write(identity + "\n")
                f.flush()
                os.fsync(f.fileno())
    hash_key = hashlib.sha256(b"syslua keyed hash\0" + identity.encode()).digest()
    _vault.key = (str(state), hash_key, identity)
    return hash_key, identity


def keyed(value: str | bytes) -> str:
    """The keyed hash of a value: 32 hex digits, stable for this state directory."""
    import hmac

    data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    return hmac.new(_key()[0], data, "sha256").hexdigest()[:32]


# -- values --------------------------------------------------------------------
def placeholder(ident: str) -> str:
    return f"{PREFIX}{ident}}}"


def register(value: str | bytes) -> str:
    """Keep `value` for this run and return its placeholder."""
    return placeholder(seal(value))


def hide(value: str | bytes) -> None:
    """Never show `value` (a secret, a decrypted file's content), nor any
    line of it long enough to be told from ordinary text."""
    text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
    parts = [text.strip()] if len(text.strip()) >= SHORTEST_SHOWN else []
    if "\n" in text:
        parts += [line.strip() for line in text.splitlines() if len(line.strip()) >= LINE_SHOWN]
    for part in parts:
        if part not in _vault.hidden:
            _vault.hidden.add(part)
            _vault.forms.update(_forms(part))
    _vault.ordered = sorted(_vault.forms, key=len, reverse=True)


def _forms(value: str) -> set[str]:
    """`value` as text, and as JSON writes it inside a string (escaped)."""
    import json

    return {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}


def remember_read(what: str, make: Any) -> str:
    """The placeholder of the source `what`, read once per evaluation with `make()`."""
    if what not in _vault.read:
        _vault.read[what] = register(make())
    return _vault.read[what]


def note_program(program: str) -> None:
    _vault.programs.add(program)


def programs() -> set[str]:
    return set(_vault.programs)


def contains(value: Any) -> bool:
    """Does `value` (a string, or data holding strings) hold a placeholder?"""
    if isinstance(value, str):
        return PREFIX in value
    if isinstance(value, Mapping):
        return any(contains(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(contains(v) for v in value)
    return False


def ids_in(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(re.findall(PATTERN, value)) if PREFIX in value else set()
    if isinstance(value, Mapping):
        return set().union(*(ids_in(v) for v in value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(ids_in(v) for v in value)) if value else set()
    return set()


def value_of(ident: str) -> str | None:
    """The value behind a placeholder: this run's, else the one an apply sealed."""
    value = _vault.values.get(ident)
    if value is None:
        value = _unseal(ident)
        if value is not None:
            _vault.values[ident] = value
            hide(value)
    return value


def reveal(text: str) -> str:
    """`text` with every placeholder replaced by its value (KeyError: one is unknown)."""
    if PREFIX not in text:
        return text

    def value(m: re.Match[str]) -> str:
        found = value_of(m.group(1))
        if found is None:
            raise KeyError(m.group(1))
        return found

    return re.sub(PATTERN, value, text)


# -- sealing -------------------------------------------------------------------
def seal(value: str | bytes) -> str:
    """Keep `value` for this run and return its id; the next `persist` seals it."""
    text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
    ident = keyed(text)
    _vault.values[ident] = text
    _vault.unsealed.add(ident)
    hide(text)
    return ident


def persist(ids: set[str] | None = None) -> None:
    """Seal the values of `ids` (all this run holds) into the state directory."""
    wanted = _vault.unsealed if ids is None else ids & set(_vault.values)
    if not wanted:
        return
    import pyrage

    from syslua.fsutil import atomic_write, make_dir

    identity = pyrage.x25519.Identity.from_str(_key()[1])
    directory = _state() / SEALED_DIR
    make_dir(directory, 0o700)
    for ident in sorted(wanted):
        path = directory / f"{ident}.age"
        if not path.exists():
            data = _vault.values[ident].encode("utf-8", "surrogateescape")
            atomic_write(path, pyrage.encrypt(data, [identity.to_public()]), 0o600)
        _vault.unsealed.discard(ident)


def _unseal(ident: str) -> str | None:
    path = _state() / SEALED_DIR / f"{ident}.age"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    import pyrage

    try:
        plain = pyrage.decrypt(data, [pyrage.x25519.Identity.from_str(_key()[1])])
    except Exception:  # a damaged file or another state's key: not this value
        return None
    text = plain.decode("utf-8", "surrogateescape")
    return text if keyed(text) == ident else None


def forget_sealed(ids: list[str]) -> None:
    """Remove the sealed copies of `ids` (`sys gc`: no kept snapshot uses them)."""
    directory = _state() / SEALED_DIR
    for ident in ids:
        try:
            os.unlink(directory / f"{ident}.age")
        except FileNotFoundError:
            pass


def sealed_ids() -> set[str]:
    """The ids sealed in the state directory (for `sys gc`)."""
    try:
        names = os.listdir(_state() / SEALED_DIR)
    except OSError:
        return set()
    return {n[:-4] for n in names if n.endswith(".age")}


# -- output --------------------------------------------------------------------
def redact(text: str) -> str:
    """`text` with every placeholder and every known value (also as JSON
    escapes it) shown as `(secret)`."""
    if PREFIX in text:
        text = re.sub(PATTERN, SHOWN, text)
    return _without_values(text)


def any_known() -> bool:
    """Is any secret value known to this process (so written state is scrubbed)?"""
    return bool(_vault.ordered)


def scrub(text: str) -> str:
    """JSON text about to be written to the state, with no known value in it.
    Placeholders stay: they are not secret, and say which value was there."""
    return _without_values(text) if _vault.ordered else text


def _without_values(text: str) -> str:
    for form in _vault.ordered:
        if form in text:
            text = text.replace(form, SHOWN)
    return text


class _Redacting:
    """A text stream that shows secrets as `(secret)`; everything else is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if _vault.ordered or PREFIX in text:
            self._stream.write(redact(text))
        else:
            self._stream.write(text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def redacting() -> Iterator[None]:
    """Run with stdout and stderr showing every secret as `(secret)`."""
    out, err = sys.stdout, sys.stderr
    sys.stdout = _Redacting(out)  # type: ignore[assignment]
    sys.stderr = _Redacting(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
