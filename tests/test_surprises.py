"""Guards against silent surprises: an exec that did not create what it said it
would, a call of a declaration that does not exist, a download that cannot
reach its host. (Shell syntax under the posix provider: test_shell_syntax.py.)
"""

from __future__ import annotations

import errno
import http.client
import socket
import urllib.error

import pytest
from conftest import HEADER, events, items, ok, out, q, tree

from syslua import fetch

WARNING = "exec hello ran but did not create ~/hello.txt; it will run again"


# -- an exec that succeeds without creating its `creates` path --------------------
def test_an_exec_that_does_not_create_its_path_is_warned_about(sysenv):
    sysenv.write("sys.lua", 'exec { name = "hello", command = "true", creates = "~/hello.txt" }\n')
    p = sysenv.run("apply")
    ok(p)
    assert "✓ exec hello: executed" in p.stdout
    assert f"        Warning: {WARNING}\n" in p.stdout
    assert "Apply complete" in p.stdout
    # and it does run again, as the warning says
    again = sysenv.run("apply", "--json")
    assert again.returncode == 0, out(again)
    ev = items(again)["exec#hello"]
    assert ev["status"] == "changed" and ev["warnings"] == [WARNING]


def test_no_warning_when_the_path_was_created(sysenv):
    sysenv.write(
        "sys.lua",
        f'exec {{ name = "hello", command = {q("touch " + str(sysenv.home / "hello.txt"))}, creates = "~/hello.txt" }}\n',
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    assert "warnings" not in items(p)["exec#hello"]
    assert "Warning" not in p.stderr


def test_no_warning_for_an_exec_without_creates_or_that_failed(sysenv):
    sysenv.write(
        "sys.lua",
        'exec { name = "plain", command = "true" }\n'
        'exec { name = "hello", command = "false", creates = "~/hello.txt" }\n',
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    ev = items(p)
    assert ev["exec#hello"]["status"] == "failed" and "warnings" not in ev["exec#hello"]
    assert "warnings" not in ev.get("exec#plain", {})
    assert WARNING not in out(p)


# -- calling a declaration that does not exist -------------------------------------
DECLARATIONS = "The declarations are file, exec, apply, package, os_package, user, archive, service, env, defaults, sys.build and sys.bind."
LINK_EXAMPLE = 'file { path = "~/.vimrc", ensure = "link", target = "~/dotfiles/vimrc" }'


@pytest.mark.parametrize(
    "call,message",
    [
        (
            'symlink { path = "~/.vimrc", target = "~/dotfiles/vimrc" }',
            "`symlink` is not defined; did you mean `file`?",
        ),
        (
            'File { path = "~/.gitconfig", content = "" }',
            "`File` is not defined; did you mean `file`?",
        ),
        ('exce { name = "x" }', "`exce` is not defined; did you mean `exec`?"),
        ('Package { name = "rg" }', "`Package` is not defined; did you mean `package`?"),
        ('build { id = "x" }', "`build` is not defined; did you mean `sys.build`?"),
        ('run { name = "x" }', "`run` is not defined; did you mean `exec`?"),
        ("helper()", "`helper` is not defined\n"),
    ],
)
def test_an_undefined_global_names_the_closest_declaration(sysenv, call, message):
    sysenv.write("sys.lua", HEADER + call + "\n", dedent=False)
    before = tree(sysenv.home)
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    line = HEADER.count("\n") + 1
    assert f"Error: sys.lua:{line}: {message}" in p.stderr, p.stderr
    assert f"  {line} | {call}" in p.stderr
    assert DECLARATIONS in p.stderr
    assert "attempt to call global" not in p.stderr and "Traceback" not in p.stderr
    assert tree(sysenv.home) == before


def test_a_symlink_call_shows_how_a_link_is_declared_and_the_example_works(sysenv):
    sysenv.write("sys.lua", 'symlink { path = "~/.vimrc" }\n')
    p = sysenv.run("plan")
    assert p.returncode == 2
    assert f"A symlink is a file: {LINK_EXAMPLE}\n{DECLARATIONS}" in p.stderr
    # the example in the hint is a declaration that applies
    sysenv.write("sys.lua", HEADER + LINK_EXAMPLE + "\n", dedent=False)
    ok(sysenv.run("apply"))
    assert (sysenv.home / ".vimrc").readlink() == sysenv.home / "dotfiles" / "vimrc"


def test_other_nil_calls_keep_luas_words(sysenv):
    sysenv.write("sys.lua", "local t = {}\nt.go()\n")
    p = sysenv.run("plan")
    assert p.returncode == 2
    assert "Error: sys.lua:2: attempt to call field 'go' (a nil value)" in p.stderr


# -- downloads that cannot reach their host -----------------------------------------
SHA = "0" * 64


def package(url: str) -> str:
    return f'package {{ name = "tool", version = "1.0", source = lib.fetchUrl {{ url = {q(url)}, sha256 = "{SHA}" }}, format = "binary", bin = {{ "tool" }} }}\n'


def failure_of(p) -> str:  # type: ignore[no-untyped-def]
    summary = [e for e in events(p) if e.get("event") == "summary"][0]
    assert summary["result"] == "failed", summary
    return summary["failures"][0]["message"]


def test_a_refused_connection_says_so_in_words(sysenv):
    with socket.socket() as s:  # a port on 127.0.0.1 that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sysenv.write("sys.lua", package(f"http://127.0.0.1:{port}/tool"))
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    message = failure_of(p)
    assert message.startswith(f"cannot reach 127.0.0.1:{port}: connection refused"), message
    assert "Errno" not in out(p) and "[" not in message


def test_a_name_that_does_not_resolve_says_so_in_words(sysenv, monkeypatch):
    # `.invalid` never resolves, but asking the resolver would send a DNS query
    # off this machine: the lookup fails here instead, as a resolver answers.
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        if host in ("127.0.0.1", "localhost"):
            return real(host, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    sysenv.write(
        "sys.lua",
        'package { name = "tool", version = "1.0", format = "binary", bin = { "tool" },\n'
        f'  source = lib.fetchGitHub {{ owner = "o", repo = "r", tag = "v1", asset = "tool", sha256 = "{SHA}" }} }}\n',
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    message = failure_of(p)
    assert message.startswith("cannot reach github.com: name resolution failed"), message
    assert "Errno" not in out(p) and "-2" not in message
    plain = sysenv.run("apply")
    assert "cannot reach github.com: name resolution failed" in plain.stdout + plain.stderr
    assert "Errno" not in out(plain)


@pytest.mark.parametrize(
    "error,words",
    [
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "name resolution failed"),
        (
            socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
            "name resolution failed",
        ),
        (urllib.error.URLError(socket.gaierror(-2, "x")), "name resolution failed"),
        (
            urllib.error.URLError(ConnectionRefusedError(errno.ECONNREFUSED, "x")),
            "connection refused",
        ),
        (OSError(errno.ENETUNREACH, "Network is unreachable"), "network unreachable"),
        (OSError(errno.EHOSTUNREACH, "No route to host"), "host unreachable"),
        (ConnectionResetError(errno.ECONNRESET, "x"), "connection reset by the server"),
        (http.client.RemoteDisconnected("x"), "the server closed the connection without answering"),
        (urllib.error.URLError(TimeoutError("timed out")), "timed out after 30s"),
        (OSError(errno.EACCES, "Permission denied"), "permission denied"),
    ],
)
def test_reasons_are_words_not_errnos(error, words):
    assert fetch.reason(error, 30.0) == words
