"""The evaluation cache: the merged manifest of a config, kept with everything
its evaluation read, so that a run whose inputs did not change skips Lua and
the merge.

What an evaluation reads is recorded while it runs (`Recorder`, made active
by `recording`): the config and module files and every file read
(`sys.readFile`, `io.open`, templates), paths looked for and not found (a
module searched on the require path), directory listings (`sys.readDir`, the
directories behind a file tree), `sys.glob` results, the mode of each file
`source` (a copy's execute bit comes from it), `sys.path.canonicalize`
results and the environment variables read. Beside them the cache keeps a
key: syslua's version and code, the options that change an evaluation
(`--fact`, `--facts`, `--max-depth`, noop...), the facts gathered, the user
and the home.

A cached manifest is used only when every recorded read gives the same
answer now. A file whose `stat` (size, mtime, ctime, inode) is unchanged is
trusted without reading it, unless its timestamps are within `RACY_NS` of
when the cache was written (git's "racily clean" rule: an edit in the same
timestamp tick keeps the stat): such a file is hashed. A file that changed
while the config was evaluated leaves the evaluation uncached.

What the cache cannot see makes an evaluation uncacheable, and the plan says
why under -v: time and randomness (`os.time`, `os.date`, `os.clock`,
`math.random`), `--impure`, a secret (its value is never stored, and the
apply needs it), a CCM manifest. The cache file is owner-only, written
atomically, and a damaged or foreign one is ignored.

The file is three lines: a header in JSON (the format, the key, when it
was written, the recorded reads), the manifest in JSON, written a part at
a time as it is hashed, and the SHA-256 of the manifest line, in hex. A run
that only asks whether the cache holds (`entry`: the no-change proof of
`syslua/quick.py`) reads the header and the last line alone; the digest
names the cached evaluation (`Manifest.evaluation`).

This module imports nothing heavy: a cached run must not load Lua or the
merge.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Container, Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from syslua.errors import Source
from syslua.eval.reads import (
    Recorder,
    active,
    env_value,
    environment,
    environment_digest,
    listing,
    listing_digest,
    note,
    recording,
    uncacheable,
)
from syslua.eval.reads import (
    digest as _digest,
)
from syslua.manifest.model import Item, Manifest, freeze

__all__ = [
    "Recorder",
    "active",
    "environment",
    "listing_digest",
    "note",
    "recording",
    "uncacheable",
]

FORMAT = 3
# Timestamps this close to the cache's writing (or later) do not prove a file
# unchanged: it is hashed (git's racily clean rule, with a coarse filesystem's
# granularity).
RACY_NS = 2_000_000_000
# An input whose timestamps are this close to the evaluation's start (or
# later) may have changed while it was read: the evaluation is not cached.
# (The kernel stamps files with a coarse clock, up to a tick behind.)
SLACK_NS = 50_000_000
_CODE_SUFFIXES = (".py", ".lua")
SECRET = "the config reads a secret (sys.secret)"


def mode_of(path: str) -> int:
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return 0


def _stat_entry(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode]


def _hash_file(path: str) -> str | None:
    import hashlib  # here: OpenSSL is loaded only when a file must be hashed

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


# -- the key: what is not a read, but changes the evaluation ------------------


def _code_key() -> str:
    """syslua's code: the stat of its files (Python, prelude, shipped
    Lua): an upgrade or an edited checkout is a different evaluator."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts: list[str] = []  # syslua/__init__.py, with __version__, is one of the files
    stack = [root, os.path.join(os.path.dirname(root), "lua")]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != "__pycache__":
                            stack.append(entry.path)
                    elif entry.name.endswith(_CODE_SUFFIXES):
                        st = entry.stat()
                        parts.append(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}")
        except OSError:
            continue
    return _digest("\n".join(sorted(parts)))


def key(config: Path, options: Any, facts_digest: str) -> str:
    """What the evaluation of `config` depends on besides its reads."""
    from syslua.paths import home

    doc = {
        "config": str(config),
        "code": _code_key(),
        "facts": facts_digest,
        "cli_facts": options.cli_facts,
        "facts_file": str(options.facts_file) if options.facts_file else None,
        "hiera": str(options.hiera) if options.hiera else None,
        "read_env": options.read_env,
        "max_depth": options.max_depth,
        "noop": options.noop,
        "health_check_only": options.health_check_only,
        "ids": [os.getuid(), os.getgid(), os.geteuid()],
        "home": home(),
        "home_mode": mode_of(home()),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("SYSLUA_", "XDG_"))},
    }
    return _digest(json.dumps(doc, sort_keys=True, default=str))


def facts_digest(facts: Mapping[str, Any], core: Mapping[str, Any]) -> str:
    return _digest(json.dumps([facts, core], sort_keys=True, default=str))


def gathered_facts(options: Any, paths: Any) -> str:
    """The digest of the facts an evaluation with `options` would see (as
    `manifest.resolve` gathers them), for `key`."""
    from syslua.eval import facts as factlib

    file_facts = factlib.read_facts_file(options.facts_file) if options.facts_file else None
    facts = factlib.gather(paths.config, options.cli_facts, file_facts)
    machine = factlib.machine_facts()
    return facts_digest(facts, {k: machine[k] for k in factlib.CORE})


# -- checking recorded reads ---------------------------------------------------


def _file_fresh(probe: list[Any], written: int) -> bool:
    _, path, recorded, digest = probe
    try:
        st = os.stat(path)
    except OSError:
        return False
    if _stat_entry(st) == recorded and max(recorded[1], recorded[2]) < written - RACY_NS:
        return True
    return _hash_file(path) == digest


def _fresh(probe: list[Any], written: int, known: Container[str] = ()) -> bool:
    kind = probe[0]
    if kind == "stat":
        return probe[1] in known or mode_of(probe[1]) == probe[2]
    if kind == "file":
        return _file_fresh(probe, written)
    if kind == "absent":
        return not os.path.lexists(probe[1])
    if kind == "list":
        return listing(probe[1]) == probe[2]
    if kind == "env":
        return env_value(probe[1]) == probe[2]
    if kind == "environ":
        return environment_digest() == probe[1]
    if kind == "glob":
        return _glob_digest(probe[1], probe[2]) == probe[3]
    if kind == "real":
        return _realpath(probe[1]) == probe[2]
    return False  # a kind this version does not know: not trusted


def stale(
    probes: Iterable[list[Any]], written: int, known: Container[str] = ()
) -> list[Any] | None:
    """The first recorded read that gives another answer now (None: all
    fresh). `known`: paths whose `stat` the caller checks itself, mode
    included (the no-change proof's sources): their modes are not looked at."""
    for probe in probes:
        if not _fresh(probe, written, known):
            return probe
    return None


def _glob_digest(pattern: str, root: str) -> str | None:
    from syslua.eval import globbing

    try:
        found = globbing.match(os.fsencode(pattern), os.fsencode(root))
    except (OSError, ValueError):
        return None
    return _digest(b"\0".join(found))


def _realpath(path: str) -> str | None:
    try:
        return os.path.realpath(path, strict=True)
    except OSError:
        return None


# -- the cache file ------------------------------------------------------------


def cache_file(cache_dir: Path, config: Path) -> Path:
    return cache_dir / "eval" / (_digest(str(config))[:32] + ".json")


def _manifest_doc(manifest: Manifest) -> dict[str, Any]:
    return {
        "items": [
            [i.type, i.key, i.props, i.parent, i.noop, i.health_check_only] for i in manifest.items
        ],
        "sources": {k: [list(s) for s in v] for k, v in manifest.sources.items()},
        "inputs": list(manifest.inputs),
        "config": manifest.config,
        "warnings": list(manifest.warnings),
        "messages": [list(m) for m in manifest.messages],
        "skipped": [list(s) for s in manifest.skipped],
        "placeholders": manifest.placeholders,
    }


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _manifest_of(doc: Mapping[str, Any], ident: str) -> Manifest:
    items = tuple(
        Item(t, k, freeze(props), parent, bool(noop), bool(hco))
        for t, k, props, parent, noop, hco in doc["items"]
    )
    return Manifest(
        items=items,
        sources={k: tuple(Source(f, int(n)) for f, n in v) for k, v in doc["sources"].items()},
        inputs=tuple(doc["inputs"]),
        config=doc["config"],
        warnings=tuple(doc["warnings"]),
        messages=tuple((a, b) for a, b in doc["messages"]),
        skipped=tuple((a, b, c) for a, b, c in doc["skipped"]),
        placeholders=doc["placeholders"],
        evaluation=ident,
    )


def load(path: Path, wanted_key: str) -> tuple[Manifest | None, str]:
    """The cached manifest when its key matches and every read is fresh;
    else None and why not (for -v). The manifest knows the entry it came
    from (`Manifest.evaluation`)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, "no cached evaluation"
    except OSError:
        return None, "the cached evaluation is unreadable"
    head, _, rest = data.partition(b"\n")
    why = _checked(head, wanted_key)
    if why is not None:
        return None, why
    import hashlib

    body, _, tail = rest.removesuffix(b"\n").rpartition(b"\n")
    ident = hashlib.sha256(body).hexdigest()
    if tail.decode("ascii", "replace") != ident:
        return None, "the cached evaluation is damaged"
    try:
        return _manifest_of(json.loads(body), ident), ""
    except (LookupError, TypeError, ValueError, AttributeError):
        return None, "the cached evaluation is damaged"


def entry(path: Path, wanted_key: str, known: Container[str] = ()) -> str | None:
    """The id of the cached evaluation (the digest of its manifest, its last
    line) when its key matches and every read is fresh, reading only the
    header and that line; else None. `known`: as for `stale`."""
    try:
        with open(path, "rb") as f:
            head = f.readline()
            f.seek(-_TAIL, os.SEEK_END)
            tail = f.read()
    except OSError:
        return None
    if not tail.startswith(b"\n") or not tail.endswith(b"\n"):
        return None
    ident = tail[1:-1].decode("ascii", "replace")
    return ident if _checked(head, wanted_key, known) is None else None


_TAIL = 66  # the last line, the manifest's SHA-256 in hex, with the newlines around it


def _checked(head: bytes, wanted_key: str, known: Container[str] = ()) -> str | None:
    """None when a cache header holds (its key, every read fresh); else why not."""
    try:
        doc = json.loads(head)
    except ValueError:
        return "the cached evaluation is unreadable"
    try:
        if doc.get("format") != FORMAT:
            return "the cached evaluation is from another version"
        if doc.get("key") != wanted_key:
            return "syslua, the options, the facts or the user changed"
        changed = stale(doc["probes"], int(doc["written"]), known)
        if changed is not None:
            return f"{_describe(changed)} changed"
        return None
    except (LookupError, TypeError, ValueError, AttributeError):
        return "the cached evaluation is damaged"


def _describe(probe: list[Any]) -> str:
    from syslua.errors import display_path

    kind = probe[0]
    if kind == "env":
        return f"${probe[1]}"
    if kind == "environ":
        return "the environment"
    if kind == "glob":
        return f"sys.glob({probe[1]!r})"
    return display_path(str(probe[1]))


def reasons_against(recorder: Recorder, manifest: Manifest) -> list[str]:
    """Why this evaluation cannot be cached (empty: it can)."""
    from syslua import secrets

    reasons = list(recorder.reasons)
    if secrets.active():
        reasons.append(SECRET)
    return reasons


def store(path: Path, wanted_key: str, recorder: Recorder, manifest: Manifest) -> str | None:
    """Write the cache for this evaluation; None, or why it was not written."""
    from syslua.fsutil import AtomicFile, make_dir

    probes = list(recorder.probes)
    for name in sorted(recorder.env):
        probes.append(["env", name, env_value(name)])
    if recorder.all_env:
        probes.append(["environ", environment_digest()])
    limit = recorder.started - SLACK_NS
    for file in dict.fromkeys(recorder.files):
        probe = _file_probe(file, limit)
        if isinstance(probe, str):
            return probe
        probes.append(probe)
    head = {"format": FORMAT, "key": wanted_key, "written": time.time_ns(), "probes": probes}
    head_line = json.dumps(head, separators=(",", ":"), ensure_ascii=False)
    if "$${secret:" in head_line:
        return SECRET
    import hashlib

    digest = hashlib.sha256()
    try:
        # The cache dir private; missing parents (SYSLUA_ROOT) passable, as
        # the state's and the store's (state/layout.py PASSAGE).
        make_dir(path.parent.parent, 0o700, parents_mode=0o711)
        make_dir(path.parent, 0o700)
        # Written a part at a time, hashed as it goes: the text of 10,000
        # items is never held whole.
        with AtomicFile(path, 0o600, durable=False) as f:
            f.write(head_line.encode("utf-8", "surrogateescape") + b"\n")
            for part in _json_parts(_manifest_doc(manifest), 2):
                if "$${secret:" in part:  # never split: a part holds whole values
                    f.discard()
                    return SECRET  # its value is needed again by the apply
                data = part.encode("utf-8", "surrogateescape")
                digest.update(data)
                f.write(data)
            ident = digest.hexdigest()
            f.write(b"\n" + ident.encode() + b"\n")
    except OSError as e:
        return f"cannot write the cache: {e.strerror}"
    manifest.cached_as(ident)
    return None


_BATCH = 256  # items (or sources) of the manifest encoded together


def _json_parts(value: Any, depth: int) -> Iterator[str]:
    """`value`'s JSON as `json.dumps` writes it (compact, not ASCII-only), in
    parts: a dict or list down to `depth` levels member by member, and one
    of more than `_BATCH` members `_BATCH` at a time."""
    if not depth or not value or not isinstance(value, dict | list):
        yield json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_plain)
        return
    members: Iterator[Any] = iter(value.items() if isinstance(value, dict) else value)
    opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
    sep = opening
    if len(value) > _BATCH:
        while batch := list(islice(members, _BATCH)):
            whole = dict(batch) if isinstance(value, dict) else batch
            yield (
                sep
                + json.dumps(whole, separators=(",", ":"), ensure_ascii=False, default=_plain)[1:-1]
            )
            sep = ","
    else:
        for member in members:
            if isinstance(value, dict):
                yield sep + json.dumps(member[0], ensure_ascii=False) + ":"
                yield from _json_parts(member[1], depth - 1)
            else:
                yield sep
                yield from _json_parts(member, depth - 1)
            sep = ","
    yield closing


def _file_probe(file: str, limit: int) -> list[Any] | str:
    """How to check a file the evaluation read, or why it cannot be cached.
    The file is hashed now, after the evaluation: that is only the content
    it read if it was not modified since the evaluation started (`limit`),
    nor while it was hashed."""
    from syslua.errors import display_path

    changed = f"{display_path(file)} changed while the config was evaluated"
    try:
        st = os.stat(file)
    except FileNotFoundError:
        return ["absent", file]  # a glob's base that is not there
    except OSError as e:
        return f"cannot read {display_path(file)}: {e.strerror}"
    if stat.S_ISDIR(st.st_mode):
        return ["list", file, listing(file)]
    if max(st.st_mtime_ns, st.st_ctime_ns) >= limit:
        return changed
    digest = _hash_file(file)
    try:
        again = os.stat(file)
    except OSError:
        return changed
    if digest is None or _stat_entry(again) != _stat_entry(st):
        return changed
    return ["file", file, _stat_entry(st), digest]


def drop(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
