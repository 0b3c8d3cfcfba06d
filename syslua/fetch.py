"""Downloads: http, https and file URLs through one downloader.

Every download lands in the cache under its SHA-256 (`cache/downloads/<sha256>`)
only after the hash was verified; a file already there is never fetched
again. HTTP errors, stalls (a read timeout) and checksum mismatches are
clear errors; a host that cannot be reached is named with the reason in
words (`cannot reach github.com: name resolution failed`), never an errno;
and a failed download leaves nothing behind.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from syslua.errors import ResourceError
from syslua.fsutil import AtomicFile, make_dir, sha256_file
from syslua.state.layout import PRIVATE_DIR, PRIVATE_FILE

DEFAULT_TIMEOUT = float(os.environ.get("SYSLUA_FETCH_TIMEOUT", "30"))
Progress = Callable[[int, int | None], None]  # (bytes so far, total or None)
# Read in pieces of 128 KiB: the allocator reuses memory this size, while
# pieces of 1 MiB came fresh from the kernel each time (a page fault every
# 4 KiB), which cost parallel downloads more than hashing them.
PIECE = 128 << 10


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
    headers: dict[str, str] | None = None,
    nothing: str = "Nothing was installed.",
) -> Path:
    """The verified file for a url/github source, from the cache or the network.

    `headers` go with the request (an archive's basic auth and custom
    headers); `nothing` is the last line of a checksum mismatch, saying what
    did not happen."""
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
        actual = _copy_url(url, out, timeout, progress, headers)
        if actual != expected:
            raise FetchError(
                f"checksum mismatch for {url}:\n    expected sha256 {expected}\n    actual   sha256 {actual}\n"
                + nothing
            )
    return target


def download_to(
    url: str,
    target: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
    headers: dict[str, str] | None = None,
) -> str:
    """Download `url` to `target` (owner-only, whole or not at all), unverified:
    for a download declared without a checksum. Returns its SHA-256."""
    with AtomicFile(target, PRIVATE_FILE, durable=False) as out:
        return _copy_url(url, out, timeout, progress, headers)


def _copy_url(
    url: str,
    out: Any,
    timeout: float,
    progress: Progress | None,
    headers: dict[str, str] | None = None,
) -> str:
    h = hashlib.sha256()
    if url.startswith("file://"):
        path = urllib.request.url2pathname(url[len("file://") :])
        try:
            with open(path, "rb") as src:
                while chunk := src.read(PIECE):
                    h.update(chunk)
                    out.write(chunk)
        except FileNotFoundError:
            raise FetchError(f"file not found: {path} (from {url})") from None
        except PermissionError:
            raise FetchError(f"cannot read {path}: permission denied") from None
        return h.hexdigest()
    request = urllib.request.Request(url, headers={"User-Agent": "syslua", **(headers or {})})
    try:
        resp = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as e:
        raise FetchError(f"HTTP {e.code} {e.reason} fetching {url}") from None
    except TimeoutError:  # connected, but no answer came
        raise FetchError(
            f"timed out after {timeout:g}s fetching {url} (the server did not answer)"
        ) from None
    except (OSError, http.client.HTTPException) as e:  # URLError is an OSError
        raise FetchError(
            f"cannot reach {_host(url)}: {reason(e, timeout)} (fetching {url})"
        ) from None
    with resp:
        try:
            total = resp.headers.get("Content-Length")
            size = int(total) if total and total.isdigit() else None
            done = 0
            while True:
                chunk = resp.read(PIECE)
                if not chunk:
                    break
                h.update(chunk)
                out.write(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, size)
        except TimeoutError:
            raise FetchError(
                f"timed out after {timeout:g}s fetching {url} (the server stopped sending)"
            ) from None
        except (OSError, http.client.HTTPException) as e:
            raise FetchError(f"download of {url} broke off: {reason(e, timeout)}") from None
        if size is not None and done < size:
            raise FetchError(f"download of {url} ended early: {done} of {size} bytes")
    return h.hexdigest()


def _host(url: str) -> str:
    """The host of a URL as people write it (`github.com`, `127.0.0.1:8080`)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or parts.netloc or url
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port is not None else host


# errno values that say why a host could not be reached, in words.
_UNREACHABLE = {
    errno.ENETUNREACH: "network unreachable",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETDOWN: "network is down",
    errno.EADDRNOTAVAIL: "address not available",
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset by the server",
    errno.ECONNABORTED: "connection aborted",
    errno.ETIMEDOUT: "connection timed out",
}


def reason(error: BaseException, timeout: float) -> str:
    """Why a host could not be reached or a transfer broke off, in words:
    `name resolution failed`, `connection refused`, never `[Errno -2] ...`."""
    import ssl

    cause: BaseException | str = error
    if isinstance(cause, urllib.error.URLError):
        cause = cause.reason
    if isinstance(cause, str):
        return cause
    if isinstance(cause, socket.gaierror):
        return "name resolution failed"
    if isinstance(cause, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(cause, TimeoutError):  # socket.timeout too
        return f"timed out after {timeout:g}s"
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"certificate verification failed ({cause.verify_message})"
    if isinstance(cause, ssl.SSLError):
        return f"TLS error ({cause.reason or cause.__class__.__name__})"
    if isinstance(cause, OSError):
        if cause.errno in _UNREACHABLE:
            return _UNREACHABLE[cause.errno]
        if cause.strerror:
            return cause.strerror[:1].lower() + cause.strerror[1:]
    if isinstance(cause, http.client.HTTPException):
        return f"the server's answer could not be read ({cause.__class__.__name__})"
    return str(cause) or cause.__class__.__name__
