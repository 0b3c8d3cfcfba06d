"""The file kind's secret files: decrypted `.age` sources, content made with
a secret, and files marked `sensitive` (docs/secrets.md).

Their content is never stored and never shown: the snapshot seals it
(`secrets.seal`: a keyed hash, and the value encrypted to the state's own
key), so that an edit by hand is still found (the keyed hash of the file
differs) and a rollback can write it again. `sys add` takes an edit back
into an encrypted source by encrypting it again, for the item's
`age_recipients` or the public key of its identity.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any

from syslua import secrets
from syslua.errors import display_path
from syslua.fsutil import AtomicFile
from syslua.manifest.model import Item, freeze, thaw
from syslua.manifest.tree import AGE_SUFFIX
from syslua.paths import abbreviate
from syslua.resources import file_edits as edits
from syslua.resources.base import ResourceError, SnapshotContext, TakeBack
from syslua.resources.file_posix import PRESENT, status
from syslua.resources.private import content_diff

RECIPIENT_STANZAS = (b"X25519", b"ssh-ed25519", b"ssh-rsa")


def desired_bytes(item: Item) -> bytes | None:
    """The content to write when it is known as bytes: inline `content`, or
    the decrypted `source` (None: a copy of `source`, read as it is copied)."""
    content = item.get("content")
    if content is not None:
        return content.encode("utf-8", "surrogateescape")
    return decrypted(item) if item.get("decrypt") else None


def is_secret(item: Item) -> bool:
    """Is the item's content secret: decrypted, marked `sensitive`, or made
    with a secret (`secrets`; the resolver marks a resolved item `sensitive`)?"""
    return bool(item.get("decrypt") or item.get("sensitive")) or secrets.contains(
        item.get("content")
    )


# (source, size, mtime, identity) -> plaintext: a run decrypts each source once.
_PLAIN: dict[tuple[str, int, int, str], bytes] = {}


def decrypted(item: Item) -> bytes:
    """The plaintext of an encrypted `source`, decrypted with the item's age
    identity; never stored, only hidden from output (`secrets.hide`)."""
    from syslua import age

    source = item.get("source")
    try:
        with open(source, "rb") as f:
            st = os.fstat(f.fileno())
            identity = age.identity_path(item.get("age_identity"))
            key = (source, st.st_size, st.st_mtime_ns, str(identity))
            plain = _PLAIN.get(key)
            if plain is None:
                plain = age.decrypt(f.read(), display_path(source), identity)
                _PLAIN[key] = plain
    except FileNotFoundError:
        raise ResourceError(f"source file not found: {source}") from None
    except PermissionError:
        raise ResourceError(f"cannot read source file {source}: permission denied") from None
    secrets.hide(plain)
    return plain


def secret_bytes(item: Item) -> bytes:
    """What a secret item writes, in the clear: to seal it, or to compare."""
    data = desired_bytes(item)
    if data is not None:
        return data
    with open(item.get("source"), "rb") as f:  # a plain source marked sensitive
        return f.read()


def sealed_state(item: Item, sctx: SnapshotContext) -> dict[str, Any]:
    """A secret file's snapshot state: its content sealed (`secrets.seal`: its
    keyed hash, and the value encrypted to the state's key), never stored."""
    previous = sctx.previous
    if previous.get("sealed") and not sctx.changed and sctx.declared_as_before():
        sealed = previous["sealed"]
    else:
        try:
            data = secret_bytes(secrets_resolved(item))
        except (OSError, ResourceError):
            return {}
        sealed = secrets.seal(data)
    return {"sealed": sealed, "mode": item.get("mode")}


def secrets_resolved(item: Item) -> Item:
    """`item` with its secret placeholders replaced by their values."""
    content = item.get("content")
    if not secrets.contains(content):
        return item
    props = thaw(item.props)
    props["content"] = secrets.reveal(content)
    return Item(item.type, item.key, freeze(props), item.parent, item.noop, item.health_check_only)


def _live_secret(item: Item) -> bytes | None:
    state = status(item.key)
    if state.ensure != PRESENT:
        return None
    try:
        with open(item.key, "rb") as f:
            return f.read()
    except OSError:
        return None


def edited(item: Item, recorded: Mapping[str, Any]) -> str | None:
    """A secret file edited by hand: its keyed hash differs from the sealed one."""
    applied = edits.applied(recorded)
    without = {k: v for k, v in applied.items() if k not in ("sealed", "blob", edits.EDITED_FROM)}
    out = [edits.edited(item, without, None) or ""]
    live = _live_secret(item)
    if live is not None and secrets.keyed(live) != applied["sealed"]:
        out.insert(0, "content edited")
    return ", ".join(p for p in out if p) or None


def edit_diff(item: Item, recorded: Mapping[str, Any]) -> str | None:
    live = _live_secret(item)
    sealed = secrets.value_of(edits.applied(recorded)["sealed"])
    if live is None or sealed is None:
        return None
    before = sealed.encode("utf-8", "surrogateescape")
    label = abbreviate(item.key)
    text = content_diff(before, live, label, label, private=True, secret=True)
    # Beside the plan's own diff of the same file: say which one this is.
    return text.replace("(secret file: ", "(secret file, edited by hand: ", 1) or None


def _recipients(item: Item) -> list[str]:
    from syslua import age

    declared = item.get("age_recipients")
    if declared:
        return list(declared)
    return age.recipients_of(age.identity_path(item.get("age_identity")))


def take_back(
    item: Item,
    path: str,
    where: str,
    recorded: Mapping[str, Any] | None,
    *,
    force: bool = False,
) -> TakeBack:
    """`sys add` of a secret file copied from a `source`: the edit goes into
    the source, encrypted again when the source is (never in the clear into
    an `.age` file). Compared by keyed hash with what the last apply wrote;
    refused, without showing either side, when the source changed too."""
    label, source = abbreviate(path), str(item.get("source"))
    shown = display_path(source)
    try:
        with open(path, "rb") as f:
            live = f.read()
        current = secret_bytes(item)
    except FileNotFoundError as e:
        return TakeBack(f"{label}: {e.filename} does not exist", refused=True)
    except (OSError, ResourceError) as e:
        return TakeBack(f"{label}: {e}", refused=True)
    sealed = edits.applied(recorded).get("sealed") if recorded is not None else None
    if live == current:
        return TakeBack(f"{label}: already the same as its source {shown}")
    home_changed = sealed is None or secrets.keyed(live) != sealed
    source_changed = sealed is None or secrets.keyed(current) != sealed
    if not home_changed and not force:
        return TakeBack(
            f"{label}: nothing to take back, it is as the last apply left it; its source "
            f"{shown} changed since (the next sys apply copies that change)"
        )
    if source_changed and not force:
        return TakeBack(
            f"{label}: both it and its source {shown} changed since the last apply; "
            "`sys add` does not choose between two secret edits (neither is shown)",
            refused=True,
            conflict=True,
            ways=(
                (f"keep the edit in {label}, over the source's change", ("--force",)),
                (f"or keep the source's: put it back over {label}", ("--overwrite", label)),
            ),
        )
    encrypt = bool(item.get("decrypt"))
    if encrypt:
        try:
            recipients = _recipients(item)
        except ResourceError as e:
            return TakeBack(f"{label}: cannot encrypt it again: {e}", refused=True)
    verb = "encrypted into" if encrypt else "copied over"
    target = os.path.realpath(source)
    warning = _fewer_recipients(target, len(recipients)) if encrypt else ""

    def act() -> dict[str, Any] | None:
        from syslua import age

        data = age.encrypt(live, recipients) if encrypt else live
        src = os.stat(target)
        with AtomicFile(target, stat.S_IMODE(src.st_mode)) as out:
            out.write(data)
        if recorded is None:
            return None
        state = {
            k: v
            for k, v in edits.applied(recorded).items()
            if k not in (edits.EDITED_FROM, "blob")  # a kept hand edit is taken back now
        }
        state["sealed"] = secrets.seal(live)
        return None if state == dict(recorded) else state

    return TakeBack(
        f"{label}: {verb} its source {shown} (declared at {where}){warning}",
        writes=(target,),
        act=act,
    )


def _fewer_recipients(path: str, now: int) -> str:
    """A warning when the encrypted source was readable by more recipients
    than it is encrypted for now (another machine's key would be left out)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64 << 10)
    except OSError:
        return ""
    if not head.startswith(b"age-encryption.org/v1\n"):
        return ""  # armored, or not age: not counted
    stanzas = 0
    for line in head.split(b"\n")[1:]:
        if line.startswith(b"---"):
            break
        words = line.split()
        if len(words) > 1 and words[0] == b"->" and words[1] in RECIPIENT_STANZAS:
            stanzas += 1  # not rage's "grease" stanzas, which name no one
    if stanzas <= now:
        return ""
    return (
        f"; warning: it was encrypted for {stanzas} recipients and now is for {now}: "
        "list them all in its `age_recipients` to keep every machine able to read it"
    )


def take_in(path: str, dest: str, source: str, recipients: Sequence[str]) -> TakeBack:
    """`sys add --encrypt` of a file nothing manages: encrypted with age into
    `dest` + `.age`, and the declaration that decrypts it back to `path`."""
    from syslua import age

    label = abbreviate(path)
    dest, source = dest + AGE_SUFFIX, source + AGE_SUFFIX
    try:
        live = os.lstat(path)
    except FileNotFoundError:
        return TakeBack(f"{label} does not exist", refused=True)
    if not stat.S_ISREG(live.st_mode):
        return TakeBack(
            f"{label} is not a regular file: `sys add --encrypt` takes files", refused=True
        )
    try:
        for r in recipients:
            age.recipient(r)
    except age.AgeError as e:
        return TakeBack(f"{label}: cannot encrypt it: {e}", refused=True)
    if os.path.lexists(dest):
        return TakeBack(
            f"{label}: {abbreviate(dest)} already exists; move it away, or encrypt into "
            "another directory with --to DIR",
            refused=True,
        )
    # a decrypted file is 0600 unless declared
    declaration = edits.declare(label, source, stat.S_IMODE(live.st_mode), usual=0o600)

    def act() -> None:
        with open(path, "rb") as f:
            data = f.read()
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with AtomicFile(dest, 0o644) as out:  # ciphertext: as any file of the repository
            out.write(age.encrypt(data, recipients))

    return TakeBack(f"{label}: encrypted to {source}", act=act, declaration=declaration)


def materialise(item: Item, state: Mapping[str, Any], store: Any, snapshot: str) -> Item:
    """A secret file as a snapshot recorded it: a hand edit an apply kept
    (`adopt`: its stored content), else the sealed value, decrypted already."""
    from syslua.errors import StateError
    from syslua.resources.file import from_store

    blob, sealed = state.get("blob"), state.get("sealed")
    if not blob and not sealed:
        return item
    props = thaw(item.props)
    for name in ("source", "content", "decrypt", "age_identity"):
        props.pop(name, None)
    if blob:
        if not store.has(blob):
            raise StateError(
                f"store object {blob[:12]} (content of {item.key} in snapshot {snapshot}) "
                "is missing; it was deleted from the store by hand"
            )
        from_store(props, blob, store)
    else:
        props["content"] = secrets.placeholder(str(sealed))
    props["sensitive"] = True
    props["mode"] = state.get("mode") or props.get("mode")
    return Item(item.type, item.key, freeze(props), item.parent, item.noop, item.health_check_only)


def adopt(item: Item, recorded: Mapping[str, Any], live: Any) -> dict[str, Any] | None:
    """A hand edit kept by `apply --force`: its content as the journal stored it
    (a previous content), and, as what the config applied before it, the
    sealed value, so that a rollback that brings the edit back finds it edited."""
    state = edits.adopt(item, recorded, live)
    if state is None:
        return None
    before = dict(state.get(edits.EDITED_FROM) or {})
    before.setdefault("sealed", recorded["sealed"])
    state.pop("sealed", None)
    state[edits.EDITED_FROM] = before
    return state
