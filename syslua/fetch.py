"""Downloads: http, https and file URLs through one downloader.

Every download lands in the cache under its SHA-256 (`cache/downloads/<sha256>`)
only after the hash was verified; a file already there is never fetched
again. HTTP errors, stalls (a read timeout) and checksum mismatches are
clear errors, and a failed download leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from syslua.errors import ResourceError
from syslua.fsutil import CHUNK, AtomicFile, make_dir, sha256_file
from syslua.state.layout import PRIVATE_DIR, PRIVATE_FILE

DEFAULT_TIMEOUT = float(os.environ.get("SYSLUA_FETCH_TIMEOUT", "30"))
Progress = Callable[[int, int | None], None]  # (bytes so far, total or None)


class FetchError(ResourceError):
    pass


def url_of(source: dict[str, Any]) -> str:
    if source["fetch"] == "github":
        return (
            f"https://github.com/{source['owner']}/{source['repo']}/releases/download/"
            f"{source['tag']}/{source['asset']}"
        )
    return source["url"]


def file_name(source: dict[str, Any]) -> str:
    url = url_of(source)
    return url.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0] or "download"


def download(
    source: dict[str, Any],
    cache: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
) -> Path:
    """The verified file for a url/github source, from the cache or the network."""
    expected = source.get("sha256")
    if not expected:
        raise FetchError(f"no sha256 for {url_of(source)}: downloads are verified before use")
    target = cache / "downloads" / expected
    if target.is_file():
        if sha256_file(target) == expected:
            return target
        target.unlink()  # a damaged cache entry is fetched again
    make_dir(target.parent, PRIVATE_DIR)
    url = url_of(source)
    # Not fsynced: a cache entry is checked against its hash whenever it is used.
    with AtomicFile(target, PRIVATE_FILE, durable=False) as out:
        actual = _copy_url(url, out, timeout, progress)
        if actual != expected:
            raise FetchError(
                f"checksum mismatch for {url}:\n    expected sha256 {expected}\n    actual   sha256 {actual}\n"
                "Nothing was installed."
            )
    return target


def _copy_url(url: str, out: Any, timeout: float, progress: Progress | None) -> str:
    h = hashlib.sha256()
    if url.startswith("file://"):
        path = urllib.request.url2pathname(url[len("file://") :])
        try:
            with open(path, "rb") as src:
                while chunk := src.read(CHUNK):
                    h.update(chunk)
                    out.write(chunk)
        except FileNotFoundError:
            raise FetchError(f"file not found: {path} (from {url})") from None
        except PermissionError:
            raise FetchError(f"cannot read {path}: permission denied") from None
        return h.hexdigest()
    request = urllib.request.Request(url, headers={"User-Agent": "syslua"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            total = resp.headers.get("Content-Length")
            size = int(total) if total and total.isdigit() else None
            done = 0
            while True:
                chunk = resp.read(CHUNK)
                if not chunk:
                    break
                h.update(chunk)
                out.write(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, size)
            if size is not None and done < size:
                raise FetchError(f"download of {url} ended early: {done} of {size} bytes")
    except urllib.error.HTTPError as e:
        raise FetchError(f"HTTP {e.code} {e.reason} fetching {url}") from None
    except TimeoutError:
        raise FetchError(
            f"timed out after {timeout:g}s fetching {url} (the server stopped sending)"
        ) from None
    except urllib.error.URLError as e:
        reason = e.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            raise FetchError(f"timed out after {timeout:g}s fetching {url}") from None
        raise FetchError(f"cannot fetch {url}: {reason}") from None
    except OSError as e:
        raise FetchError(f"cannot fetch {url}: {e}") from None
    return h.hexdigest()
