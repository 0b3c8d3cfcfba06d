"""A real HTTP server on 127.0.0.1 for package tests, plus archive builders.

`LocalServer(root)` serves the files of `root` on 127.0.0.1 (port 0) from a
thread and counts requests per path. `/404/...` always answers 404,
`/short/...` promises 100000 bytes, sends 10 and closes, and `/stall/...`
sends headers and a few bytes, then sleeps longer than the client timeout
tests set (SYSLUA_FETCH_TIMEOUT=1). `protect(name, user, password)` makes
/name answer 401 without those basic-auth credentials, and `headers(name)`
gives the headers of its last request. Nothing here ever talks
to anything but the loopback interface.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import os
import tarfile
import threading
import time
import zipfile
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Literal

STALL_SECONDS = 4.0


class _Handler(http.server.SimpleHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence
        pass

    def do_GET(self) -> None:  # noqa: N802
        with self.server.count_lock:
            self.server.requests[self.path] += 1
            self.server.headers[self.path] = dict(self.headers.items())
        wanted = self.server.protected.get(self.path)
        if wanted is not None and self.headers.get("Authorization") != wanted:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/404/"):
            self.send_error(404, "Not Found")
            return
        if self.path.startswith("/short/"):
            # promises more than it sends, then closes the connection
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.wfile.flush()
            self.close_connection = True
            return
        if self.path.startswith("/stall/"):
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                self.wfile.write(b"x" * 10)
                self.wfile.flush()
                self.server.stall_event.wait(STALL_SECONDS)
            except OSError:
                pass
            return
        super().do_GET()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.requests: Counter[str] = Counter()
        self.headers: dict[str, dict[str, str]] = {}  # path -> headers of its last request
        self.protected: dict[str, str] = {}  # path -> the Authorization header it needs
        self.count_lock = threading.Lock()
        self.stall_event = threading.Event()


class LocalServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.httpd = _Server(("127.0.0.1", 0), partial(_Handler, directory=str(root)))
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://127.0.0.1:{port}"

    def url(self, name: str) -> str:
        return f"{self.base}/{name}"

    def put(self, name: str, data: bytes) -> tuple[str, str]:
        """Serve `data` at /name; returns (url, sha256)."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return self.url(name), sha256(data)

    def protect(self, name: str, user: str, password: str) -> None:
        """Answer 401 for /name unless the request carries these basic-auth credentials."""
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        self.httpd.protected["/" + name] = f"Basic {token}"

    def headers(self, name: str) -> dict[str, str]:
        """The headers of the last request for /name."""
        with self.httpd.count_lock:
            return dict(self.httpd.headers.get("/" + name, {}))

    def count(self, name: str | None = None) -> int:
        with self.httpd.count_lock:
            if name is None:
                return sum(self.httpd.requests.values())
            return self.httpd.requests["/" + name]

    def close(self) -> None:
        self.httpd.stall_event.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def script(text: str) -> bytes:
    return f"#!/bin/sh\n{text}\n".encode()


def tool(word: str) -> bytes:
    """A tiny shell tool printing `word` and its arguments."""
    return script(f'echo "{word} $*"')


def _tarinfo(name: str, data: bytes, mode: int = 0o755) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = int(time.time())
    return info


TAR_MODES: dict[str, Literal["w", "w:gz", "w:xz", "w:bz2"]] = {
    "": "w",
    "gz": "w:gz",
    "xz": "w:xz",
    "bz2": "w:bz2",
}


def make_tar(
    files: dict[str, bytes],
    compression: str = "gz",
    *,
    symlinks: dict[str, str] | None = None,
    hardlinks: dict[str, str] | None = None,
    dirs: list[str] | None = None,
    fifos: list[str] | None = None,
    chardevs: list[str] | None = None,
) -> bytes:
    """A tar archive (compression gz, xz, bz2 or '' for none) with the given members, in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=TAR_MODES[compression]) as tar:
        for d in dirs or ():
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info)
        for name, data in files.items():
            tar.addfile(_tarinfo(name, data), io.BytesIO(data))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            info.mode = 0o777
            tar.addfile(info)
        for name, target in (hardlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.LNKTYPE
            info.linkname = target
            tar.addfile(info)
        for name in fifos or ():
            info = tarfile.TarInfo(name)
            info.type = tarfile.FIFOTYPE
            tar.addfile(info)
        for name in chardevs or ():
            info = tarfile.TarInfo(name)
            info.type = tarfile.CHRTYPE
            info.devmajor, info.devminor = 1, 3
            tar.addfile(info)
    return buf.getvalue()


def make_zip(files: dict[str, bytes], *, symlinks: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = 0o100755 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = 0o120777 << 16
            zf.writestr(info, target)
    return buf.getvalue()


def file_url(path: Path) -> str:
    return "file://" + os.path.abspath(path)
