"""What an evaluation reads, recorded while it runs, for the evaluation
cache (`manifest/evalcache.py`, which explains what is recorded and how it
is checked). The evaluator (`eval/lua.py`, the tree walk of
`manifest/tree.py`, `manifest/resolve.py`) tells the recorder made active by
`recording`; with none active, telling it costs one test."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any


def digest(data: bytes | str) -> str:
    """SHA-256 of `data` (text as UTF-8), in hex."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return _sha256()(raw).hexdigest()  # type: ignore[no-any-return]


def _sha256() -> Any:
    """SHA-256 without loading OpenSSL when Python has its own (a cached run
    hashes only a few short strings; `hashlib` costs it 3 ms)."""
    try:
        from _sha256 import sha256  # Python 3.11

        return sha256
    except ImportError:
        pass
    try:
        from _sha2 import sha256  # 3.12 on

        return sha256
    except ImportError:
        from hashlib import sha256

        return sha256


class Recorder:
    """What one evaluation read, and why it cannot be cached (if it cannot)."""

    def __init__(self) -> None:
        self.probes: list[list[Any]] = []
        self.files: list[str] = []  # files read whole (hashed when the cache is written)
        self.env: set[str] = set()
        self.all_env = False  # a template listed the whole environment
        self.reasons: list[str] = []
        self.started = time.time_ns()

    def note(self, *probe: Any) -> None:
        self.probes.append(list(probe))

    def uncacheable(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)


_active: Recorder | None = None


def active() -> Recorder | None:
    return _active


@contextmanager
def recording(recorder: Recorder | None) -> Iterator[None]:
    global _active
    previous, _active = _active, recorder
    try:
        yield
    finally:
        _active = previous


def note(*probe: Any) -> None:
    """Record one read of the evaluation running (nothing when none records)."""
    if _active is not None:
        _active.probes.append(list(probe))


def uncacheable(reason: str) -> None:
    if _active is not None:
        _active.uncacheable(reason)


def _kind(entry: os.DirEntry[Any]) -> str:
    """An entry's type as the tree walk and sys.readDir see it."""
    try:
        if entry.is_symlink():
            return "l" + ("d" if entry.is_dir() else "f" if entry.is_file() else "x")
        if entry.is_dir(follow_symlinks=False):
            return "d"
        return "f" if entry.is_file(follow_symlinks=False) else "o"
    except OSError:
        return "?"


def listing_digest(entries: Iterable[os.DirEntry[Any]]) -> str:
    names = sorted(
        (os.fsdecode(e.name) if isinstance(e.name, bytes) else e.name) + "\0" + _kind(e)
        for e in entries
    )
    return digest("\0\0".join(names))


def listing(path: str) -> str | None:
    try:
        with os.scandir(path) as it:
            return listing_digest(it)
    except OSError:
        return None


def glob_digest(found: list[bytes]) -> str:
    return digest(b"\0".join(found))


def realpath_note(path: bytes, result: bytes | None) -> None:
    if _active is not None:
        _active.note("real", os.fsdecode(path), None if result is None else os.fsdecode(result))


def environment_digest() -> str:
    return digest(json.dumps(sorted(os.environ.items())))


def env_value(name: str) -> str | None:
    """A digest of a variable's value (values are never stored), None when unset."""
    value = os.environ.get(name)
    return None if value is None else digest(value)


class EnvReads(dict):  # type: ignore[type-arg]
    """The environment as templates of a Lua config see it, telling the
    recorder which variables were read (all of them when it is listed)."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__(os.environ)
        self._recorder = recorder

    def __getitem__(self, name: Any) -> Any:
        self._recorder.env.add(str(name))
        return super().__getitem__(name)

    def get(self, name: Any, default: Any = None) -> Any:
        self._recorder.env.add(str(name))
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        self._recorder.env.add(str(name))
        return super().__contains__(name)

    def _listed(self) -> None:
        self._recorder.all_env = True

    def __iter__(self) -> Iterator[Any]:
        self._listed()
        return super().__iter__()

    def __len__(self) -> int:
        self._listed()
        return super().__len__()

    def keys(self) -> Any:
        self._listed()
        return super().keys()

    def items(self) -> Any:
        self._listed()
        return super().items()

    def values(self) -> Any:
        self._listed()
        return super().values()

    def copy(self) -> dict[Any, Any]:
        self._listed()
        return dict(super().items())


def environment() -> dict[str, str]:
    """The environment for a Lua config's templates: recorded while recording."""
    if _active is not None:
        return EnvReads(_active)
    return dict(os.environ)
