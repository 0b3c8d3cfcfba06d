"""Run `sys ARGS...` in this process as another user (`nobody`), for tests run as root.

A process started as another user could not run Python here (its
installation is in root's home), so this script imports what the command
needs while still root (one run of the same command, its output thrown
away), then gives up root for good (every uid and gid, so no capability is
left) and runs the command again: what it prints then is what that user sees.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys

# Standard modules the CLI imports lazily, on its error paths too.
for name in [
    "traceback",
    "textwrap",
    "difflib",
    "json",
    "shutil",
    "tempfile",
    "hashlib",
    "hmac",
    "secrets",
    "subprocess",
    "signal",
    "threading",
    "fcntl",
    "pwd",
    "grp",
    "locale",
    "gettext",
    "unicodedata",
    "zlib",
    "struct",
    "base64",
    "datetime",
    "uuid",
    "fnmatch",
    "glob",
    "shlex",
    "string",
    "urllib.parse",
    "tarfile",
    "zipfile",
    "gzip",
    "bz2",
    "lzma",
]:
    with contextlib.suppress(ImportError):
        importlib.import_module(name)

import syslua.cli as cli  # noqa: E402

uid, gid = int(os.environ.pop("AS_UID")), int(os.environ.pop("AS_GID"))
args = sys.argv[1:]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    sys.argv = ["sys", *args]
    with contextlib.suppress(SystemExit):
        cli.main()
os.setgroups([])
os.setresgid(gid, gid, gid)
os.setresuid(uid, uid, uid)
sys.argv = ["sys", *args]
cli.main()
