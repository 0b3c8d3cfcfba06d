"""Property schemas of every declaration type (SPEC sections 2, 5 and 9).

Tables of valid values with their normalised form, and of invalid values with
the exact message the user sees, `sys.lua:LINE: ...` and the offending line.
Every case is a real sys.lua evaluated by the real resolver.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import HEADER, item_of

from syslua.errors import ConfigError
from syslua.manifest.model import Manifest, thaw
from syslua.manifest.resolve import Options, resolve

SHA = "0123456789abcdef" * 4
SRC = f'lib.fetchUrl {{ url = "https://example.org/rg.tar.gz", sha256 = "{SHA}" }}'
HEADER_LINES = HEADER.count("\n")  # the declaration under test is on the next line


def evaluate(sysenv: Any, text: str, **options: Any) -> Manifest:
    path = sysenv.write("sys.lua", text, dedent=False)
    return resolve(path, Options(**options))


def failure(sysenv: Any, text: str) -> ConfigError:
    path = sysenv.write("sys.lua", text, dedent=False)
    with pytest.raises(ConfigError) as info:
        resolve(path, Options())
    assert type(info.value) is ConfigError
    return info.value


def subst(value: Any, sysenv: Any) -> Any:
    """Replace <home> and <work> placeholders inside expected values."""
    if isinstance(value, str):
        return value.replace("<home>", str(sysenv.home)).replace("<work>", str(sysenv.work))
    if isinstance(value, list):
        return [subst(v, sysenv) for v in value]
    if isinstance(value, dict):
        return {k: subst(v, sysenv) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------
# valid values and their normalised form
# ---------------------------------------------------------------------------

# (declaration on the line after HEADER, item id, property, expected normalised value)
VALID = [
    # file: modes
    ('file { path = "/srv/a", mode = 644 }', "file#/srv/a", "mode", "0644"),
    ('file { path = "/srv/a", mode = "644" }', "file#/srv/a", "mode", "0644"),
    ('file { path = "/srv/a", mode = "0644" }', "file#/srv/a", "mode", "0644"),
    ('file { path = "/srv/a", mode = "0o644" }', "file#/srv/a", "mode", "0644"),
    ('file { path = "/srv/a", mode = "0O644" }', "file#/srv/a", "mode", "0644"),
    ('file { path = "/srv/a", mode = "0o755" }', "file#/srv/a", "mode", "0755"),
    ('file { path = "/srv/a", mode = "0O700" }', "file#/srv/a", "mode", "0700"),
    ('file { path = "/srv/a", mode = "0777" }', "file#/srv/a", "mode", "0777"),
    ('file { path = "/srv/a", mode = "600" }', "file#/srv/a", "mode", "0600"),
    ('file { path = "/srv/a", mode = "0" }', "file#/srv/a", "mode", "0000"),
    ('file { path = "/srv/a", mode = "00644" }', "file#/srv/a", "mode", "0644"),
    # file: paths and ~
    ('file { path = "~/.zshrc" }', "file#<home>/.zshrc", "ensure", "present"),
    ('file { path = "~", ensure = "directory" }', "file#<home>", "ensure", "directory"),
    ('file { path = "/" , ensure = "directory" }', "file#/", "ensure", "directory"),
    # file: content, alias, source
    ('file { path = "/srv/a", content = "hi" }', "file#/srv/a", "content", "hi"),
    ('file { path = "/srv/a", contents = "hi" }', "file#/srv/a", "content", "hi"),
    ('file { path = "/srv/a", content = "" }', "file#/srv/a", "content", ""),
    (
        'file { path = "/srv/a", source = "files/a.conf" }',
        "file#/srv/a",
        "source",
        "<work>/files/a.conf",
    ),
    (
        'file { path = "/srv/a", source = "./files/../a.conf" }',
        "file#/srv/a",
        "source",
        "<work>/a.conf",
    ),
    ('file { path = "/srv/a", source = "~/dots/a" }', "file#/srv/a", "source", "<home>/dots/a"),
    ('file { path = "/srv/a", source = "/abs/a" }', "file#/srv/a", "source", "/abs/a"),
    # file: owner/group, defaults of the schema
    ('file { path = "/srv/a", owner = 0, group = 0 }', "file#/srv/a", "owner", "0"),
    ('file { path = "/srv/a", owner = "root" }', "file#/srv/a", "owner", "root"),
    ('file { path = "/srv/a" }', "file#/srv/a", "provider", "posix"),
    ('file { path = "/srv/a" }', "file#/srv/a", "force", False),
    ('file { path = "/srv/a", force = true, provider = "posix" }', "file#/srv/a", "force", True),
    ('file { path = "/srv/a", ensure = "absent" }', "file#/srv/a", "ensure", "absent"),
    # exec: durations
    ('exec { name = "x", timeout = "30s" }', "exec#x", "timeout", 30),
    ('exec { name = "x", timeout = "5m" }', "exec#x", "timeout", 300),
    ('exec { name = "x", timeout = "1h30m" }', "exec#x", "timeout", 5400),
    ('exec { name = "x", timeout = "1h30m15s" }', "exec#x", "timeout", 5415),
    ('exec { name = "x", timeout = "500ms" }', "exec#x", "timeout", 0.5),
    ('exec { name = "x", timeout = "1.5m" }', "exec#x", "timeout", 90),
    ('exec { name = "x", timeout = "2h" }', "exec#x", "timeout", 7200),
    ('exec { name = "x", timeout = "10" }', "exec#x", "timeout", 10),
    ('exec { name = "x", timeout = 45 }', "exec#x", "timeout", 45),
    ('exec { name = "x", timeout = 2.5 }', "exec#x", "timeout", 2.5),
    # exec: environment as list or map
    (
        'exec { name = "x", environment = { "CC=gcc", "CFLAGS=-O2" } }',
        "exec#x",
        "environment",
        ["CC=gcc", "CFLAGS=-O2"],
    ),
    (
        'exec { name = "x", environment = { CFLAGS = "-O2", CC = "gcc" } }',
        "exec#x",
        "environment",
        ["CC=gcc", "CFLAGS=-O2"],
    ),
    (
        'exec { name = "x", environment = { N = 3, ON = true, F = 1.5 } }',
        "exec#x",
        "environment",
        ["F=1.5", "N=3", "ON=true"],
    ),
    ('exec { name = "x", environment = "A=1" }', "exec#x", "environment", ["A=1"]),
    ('exec { name = "x", environment = { "URL=a=b" } }', "exec#x", "environment", ["URL=a=b"]),
    ('exec { name = "x", environment = { "EMPTY=" } }', "exec#x", "environment", ["EMPTY="]),
    ('exec { name = "x", environment = {} }', "exec#x", "environment", []),
    # exec: path as colon string or list
    (
        'exec { name = "x", path = "/usr/local/bin:/usr/bin:/bin" }',
        "exec#x",
        "path",
        "/usr/local/bin:/usr/bin:/bin",
    ),
    ('exec { name = "x", path = { "/usr/bin", "/bin" } }', "exec#x", "path", "/usr/bin:/bin"),
    ('exec { name = "x", path = "~/bin:/bin" }', "exec#x", "path", "<home>/bin:/bin"),
    ('exec { name = "x", path = { "~/.local/bin" } }', "exec#x", "path", "<home>/.local/bin"),
    # exec: returns single int or list
    ('exec { name = "x", returns = 1 }', "exec#x", "returns", [1]),
    ('exec { name = "x", returns = { 0, 1, 2 } }', "exec#x", "returns", [0, 1, 2]),
    ('exec { name = "x" }', "exec#x", "returns", [0]),
    # exec: command defaults to name, other properties
    (
        'exec { name = "/usr/bin/myapp --config /etc/myapp.conf" }',
        "exec#/usr/bin/myapp --config /etc/myapp.conf",
        "command",
        "/usr/bin/myapp --config /etc/myapp.conf",
    ),
    ('exec { name = "run", command = "make build" }', "exec#run", "command", "make build"),
    ('exec { name = "x", refreshonly = true }', "exec#x", "refresh_only", True),
    ('exec { name = "x", refresh_only = true }', "exec#x", "refresh_only", True),
    ('exec { name = "x" }', "exec#x", "refresh_only", False),
    ('exec { name = "x" }', "exec#x", "provider", "posix"),
    ('exec { name = "x" }', "exec#x", "logoutput", False),
    ('exec { name = "x", provider = "shell" }', "exec#x", "provider", "shell"),
    ('exec { name = "x", creates = "~/.done" }', "exec#x", "creates", "<home>/.done"),
    ('exec { name = "x", cwd = "~" }', "exec#x", "cwd", "<home>"),
    ('exec { name = "x", cwd = "/opt/app" }', "exec#x", "cwd", "/opt/app"),
    (
        'exec { name = "x", onlyif = "test -f /tmp/a", unless = "false" }',
        "exec#x",
        "onlyif",
        "test -f /tmp/a",
    ),
    # `~` stays as written in a command: the shell expands it
    (
        'exec { name = "x", undo = "rm -rf ~/.cache/x", provider = "shell" }',
        "exec#x",
        "undo",
        "rm -rf ~/.cache/x",
    ),
    ('exec { name = "x", ensure = "present" }', "exec#x", "ensure", "present"),
    # health_checks on any resource
    (
        'exec { name = "x", health_checks = { { command = "check_x", tries = 3, try_sleep = "2s", timeout = "1m" } } }',
        "exec#x",
        "health_checks",
        [{"command": "check_x", "tries": 3, "try_sleep": 2, "timeout": 60}],
    ),
    (
        'exec { name = "x", health_checks = { command = "check_x" } }',
        "exec#x",
        "health_checks",
        [{"command": "check_x", "tries": 1, "try_sleep": 1}],
    ),
    (
        'exec { name = "x", health_checks = { "check_a", "check_b" } }',
        "exec#x",
        "health_checks",
        [
            {"command": "check_a", "tries": 1, "try_sleep": 1},
            {"command": "check_b", "tries": 1, "try_sleep": 1},
        ],
    ),
    (
        'file { path = "/srv/a", health_checks = { { command = "c", name = "web", format = "nagios", try_sleep = "500ms" } } }',
        "file#/srv/a",
        "health_checks",
        [{"command": "c", "name": "web", "tries": 1, "try_sleep": 0.5}],
    ),
    (
        'user { name = "bob", health_checks = { { command = "id bob" } } }',
        "user#bob",
        "health_checks",
        [{"command": "id bob", "tries": 1, "try_sleep": 1}],
    ),
    # apply
    ('apply { name = "child.lua" }', "apply#<work>/child.lua", "ensure", "present"),
    ('apply { name = "./child.lua" }', "apply#<work>/child.lua", "allow_apply", True),
    (
        'apply { name = "child.lua", noop = true, health_check_only = true }',
        "apply#<work>/child.lua",
        "noop",
        True,
    ),
    (
        'apply { name = "child.lua", allow_apply = false }',
        "apply#<work>/child.lua",
        "allow_apply",
        False,
    ),
    (
        'apply { name = "child.lua", data = { color = "cyan", n = 2, list = { 1, 2 } } }',
        "apply#<work>/child.lua",
        "data",
        {"color": "cyan", "n": 2, "list": [1, 2]},
    ),
    ('apply { name = "child.lua" }', "apply#<work>/child.lua", "data", {}),
    (
        'apply { name = "child.lua", ensure = "present", provider = "lua" }',
        "apply#<work>/child.lua",
        "provider",
        "lua",
    ),
    # package
    (
        f'package {{ name = "rg", version = "14.1.0", source = {SRC} }}',
        "package#rg",
        "source",
        {"fetch": "url", "url": "https://example.org/rg.tar.gz", "sha256": SHA},
    ),
    (
        f'package {{ name = "rg", version = "14", source = {SRC}, bin = "rg" }}',
        "package#rg",
        "bin",
        ["rg"],
    ),
    (
        f'package {{ name = "rg", version = "14", source = {SRC}, bin = {{ "rg", "rga" }} }}',
        "package#rg",
        "bin",
        ["rg", "rga"],
    ),
    (f'package {{ name = "rg", version = "14", source = {SRC} }}', "package#rg", "bin", []),
    (
        f'package {{ name = "rg", version = "14", source = {SRC} }}',
        "package#rg",
        "strip_components",
        0,
    ),
    (
        f'package {{ name = "rg", version = "14", source = {SRC}, strip_components = 1 }}',
        "package#rg",
        "strip_components",
        1,
    ),
    (
        f'package {{ name = "rg", version = "14", source = lib.fetchUrl {{ url = "https://x/rg", sha256 = "{SHA.upper()}" }} }}',
        "package#rg",
        "source",
        {"fetch": "url", "url": "https://x/rg", "sha256": SHA},
    ),
    (
        f'package {{ name = "rg", version = "14", source = lib.fetchUrl {{ url = "./dl/rg.tgz", sha256 = "{SHA}" }} }}',
        "package#rg",
        "source",
        {"fetch": "url", "url": "file://<work>/dl/rg.tgz", "sha256": SHA},
    ),
    (
        f'package {{ name = "rg", version = "14", source = lib.fetchUrl {{ url = "file:///srv/rg.tgz", sha256 = "{SHA}" }} }}',
        "package#rg",
        "source",
        {"fetch": "url", "url": "file:///srv/rg.tgz", "sha256": SHA},
    ),
    (
        'package { name = "rg", version = "14", source = lib.fetchGit { url = "https://git.example/rg", rev = "v14.1.0" } }',
        "package#rg",
        "source",
        {"fetch": "git", "url": "https://git.example/rg", "rev": "v14.1.0"},
    ),
    (
        f'package {{ name = "rg", version = "14", source = lib.fetchGitHub {{ owner = "BurntSushi", repo = "ripgrep", tag = "14.1.0", asset = "rg.tgz", sha256 = "{SHA}" }} }}',
        "package#rg",
        "source",
        {
            "fetch": "github",
            "owner": "BurntSushi",
            "repo": "ripgrep",
            "tag": "14.1.0",
            "asset": "rg.tgz",
            "sha256": SHA,
        },
    ),
    # user
    (
        'user { name = "bob", uid = 1001, gid = 100, groups = "wheel", shell = "/bin/zsh", home = "/home/bob", comment = "Bob" }',
        "user#bob",
        "groups",
        ["wheel"],
    ),
    ('user { name = "bob", gid = 100 }', "user#bob", "gid", "100"),
    (
        'user { name = "bob", groups = { "audio", "video" } }',
        "user#bob",
        "groups",
        ["audio", "video"],
    ),
    ('user { name = "bob" }', "user#bob", "ensure", "present"),
    ('user { name = "bob", ensure = "absent" }', "user#bob", "ensure", "absent"),
    ('user { name = "bob" }', "user#bob", "purge_groups", False),
    # env: scalars become text, PATH-like values become lists
    ('env { EDITOR = "nvim" }', "env#EDITOR", "value", "nvim"),
    ("env { JOBS = 8 }", "env#JOBS", "value", "8"),
    ("env { RATIO = 1.5 }", "env#RATIO", "value", "1.5"),
    ("env { VERBOSE = true }", "env#VERBOSE", "value", "true"),
    ('env { _UNDER_score9 = "x" }', "env#_UNDER_score9", "value", "x"),
    ('env { EDITOR = "~/bin/nvim" }', "env#EDITOR", "value", "<home>/bin/nvim"),
    ('env { PATH = "~/bin:/opt/bin" }', "env#PATH", "value", ["<home>/bin", "/opt/bin"]),
    ('env { PATH = { "/a", "/b:/c" } }', "env#PATH", "value", ["/a", "/b", "/c"]),
    ('env { MANPATH = "/usr/share/man" }', "env#MANPATH", "value", ["/usr/share/man"]),
    (
        'env { XDG_DATA_DIRS = "/usr/local/share:/usr/share" }',
        "env#XDG_DATA_DIRS",
        "value",
        ["/usr/local/share", "/usr/share"],
    ),
    ('env { GOPATH = "~/go" }', "env#GOPATH", "value", ["<home>/go"]),
    ('env { PYTHONPATH = "/a::/b" }', "env#PYTHONPATH", "value", ["/a", "/b"]),
    # common properties accepted everywhere
    (
        'exec { name = "x", require = "exec#y" }\nexec { name = "y" }',
        "exec#x",
        "depends_on",
        ["exec#y"],
    ),
]


@pytest.mark.parametrize(
    "decl,ident,prop,expected", VALID, ids=[f"{i}:{c[0][:60]}" for i, c in enumerate(VALID)]
)
def test_valid_values_are_normalised(sysenv, decl, ident, prop, expected):
    sysenv.write("child.lua", "-- child\n")
    m = evaluate(sysenv, HEADER + decl + "\n")
    item = m.get(subst(ident, sysenv))
    assert item is not None, sorted(i.id for i in m)
    assert thaw(item.get(prop)) == subst(expected, sysenv)


def test_env_declaration_makes_one_item_per_variable(sysenv):
    m = evaluate(sysenv, 'env { EDITOR = "nvim", PAGER = "less", PATH = "/bin" }\n')
    assert {i.id: thaw(i.props) for i in m} == {
        "env#EDITOR": {"value": "nvim"},
        "env#PAGER": {"value": "less"},
        "env#PATH": {"value": ["/bin"]},
    }


def test_file_defaults_of_the_schema(sysenv):
    m = evaluate(sysenv, HEADER + 'file { path = "/srv/a" }\n')
    assert thaw(item_of(m, "file#/srv/a").props) == {
        "ensure": "present",
        "provider": "posix",
        "force": False,
        "owner": item_of(m, "file#/srv/a").get("owner"),
        "group": item_of(m, "file#/srv/a").get("group"),
        "mode": "0644",
    }


def test_exec_defaults_of_the_schema(sysenv):
    m = evaluate(sysenv, 'exec { name = "echo hi" }\n')
    assert thaw(item_of(m, "exec#echo hi").props) == {
        "command": "echo hi",
        "provider": "posix",
        "returns": [0],
        "refresh_only": False,
        "logoutput": False,
    }


# ---------------------------------------------------------------------------
# invalid values: exact messages at sys.lua:LINE
# ---------------------------------------------------------------------------

# (declaration on line HEADER_LINES + 1, message after "sys.lua:N: ")
INVALID = [
    # file: mode
    ('file { path = "/x", mode = "4755" }', "file: `mode`: mode 4755 exceeds maximum value 0777"),
    ('file { path = "/x", mode = 4755 }', "file: `mode`: mode 4755 exceeds maximum value 0777"),
    ('file { path = "/x", mode = "1777" }', "file: `mode`: mode 1777 exceeds maximum value 0777"),
    (
        'file { path = "/x", mode = "0o2755" }',
        "file: `mode`: mode 0o2755 exceeds maximum value 0777",
    ),
    (
        'file { path = "/x", mode = "999" }',
        'file: `mode`: mode "999" is not a valid octal mode (digits 0-7, e.g. "0644")',
    ),
    (
        'file { path = "/x", mode = "0x1a4" }',
        'file: `mode`: mode "0x1a4" is not a valid octal mode (digits 0-7, e.g. "0644")',
    ),
    (
        'file { path = "/x", mode = "rw-r--r--" }',
        'file: `mode`: mode "rw-r--r--" is not a valid octal mode (digits 0-7, e.g. "0644")',
    ),
    (
        'file { path = "/x", mode = "" }',
        'file: `mode`: mode "" is not a valid octal mode (digits 0-7, e.g. "0644")',
    ),
    (
        'file { path = "/x", mode = "0o" }',
        'file: `mode`: mode "0o" is not a valid octal mode (digits 0-7, e.g. "0644")',
    ),
    (
        'file { path = "/x", mode = -1 }',
        'file: `mode`: mode -1 is not a valid octal mode (digits 0-7, e.g. "0644")',
    ),
    (
        'file { path = "/x", mode = true }',
        'file: `mode`: mode must be an octal string such as "0644"',
    ),
    # file: path
    (
        'file { path = "relative/x" }',
        'file: `path`: file path must be absolute and clean, got "relative/x"',
    ),
    (
        'file { path = "/a/../b" }',
        'file: `path`: file path must be absolute and clean, got "/a/../b"',
    ),
    (
        'file { path = "/a/./b" }',
        'file: `path`: file path must be absolute and clean, got "/a/./b"',
    ),
    ('file { path = "/a//b" }', 'file: `path`: file path must be absolute and clean, got "/a//b"'),
    ('file { path = "/a/" }', 'file: `path`: file path must be absolute and clean, got "/a/"'),
    ('file { path = "//a" }', 'file: `path`: file path must be absolute and clean, got "//a"'),
    ('file { path = "~/a/" }', 'file: `path`: file path must be absolute and clean, got "~/a/"'),
    (
        'file { path = "~/../etc/x" }',
        'file: `path`: file path must be absolute and clean, got "~/../etc/x"',
    ),
    (
        'file { path = "~bob/x" }',
        'file: `path`: file path must be absolute and clean, got "~bob/x"',
    ),
    ('file { path = "" }', 'file: `path`: file path must be absolute and clean, got ""'),
    # file: content/source and unknown properties
    (
        'file { path = "/x", content = "a", source = "b" }',
        "file: `content` and `source` are mutually exclusive",
    ),
    (
        'file { path = "/x", contents = "a", source = "b" }',
        "file: `content` and `source` are mutually exclusive",
    ),
    (
        'file { path = "/x", source = "b", content = "a" }',
        "file: `content` and `source` are mutually exclusive",
    ),
    (
        'file { path = "/x", contnet = "a" }',
        "file: unknown property `contnet` for file (did you mean `content`?)",
    ),
    (
        'file { path = "/x", mod = "0644" }',
        "file: unknown property `mod` for file (did you mean `mode`?)",
    ),
    (
        'file { path = "/x", onwer = "me" }',
        "file: unknown property `onwer` for file (did you mean `owner`?)",
    ),
    ('file { path = "/x", xyzzy = 1 }', "file: unknown property `xyzzy` for file"),
    ('file { path = "/x", content = 42 }', "file: `content`: expected a string, got the number 42"),
    ('file { path = "/x", source = "" }', "file: `source`: must not be empty"),
    (
        'file { path = "/x", ensure = "dir" }',
        'file: `ensure`: must be one of present, absent, directory, link; got "dir"',
    ),
    (
        'file { path = "/x", ensure = "symlink" }',
        'file: `ensure`: must be one of present, absent, directory, link; got "symlink"',
    ),
    (
        'file { path = "/x", provider = "windows" }',
        'file: `provider`: must be one of posix; got "windows"',
    ),
    (
        'file { path = "/x", force = "yes" }',
        'file: `force`: expected true or false, got the string "yes"',
    ),
    ('file { path = "/x", owner = -1 }', "file: `owner`: ids are 0 or more, got -1"),
    ('file { path = "/x", owner = "" }', "file: `owner`: must not be empty"),
    (
        'file { path = "/x", group = true }',
        "file: `group`: expected a name or a numeric id, got a boolean",
    ),
    (
        'file { path = "/x", ensure = "absent", content = "x" }',
        'file /x: `content` only applies to ensure = "present" (this file has ensure = "absent")',
    ),
    (
        'file { path = "/x", ensure = "absent", source = "d" }',
        'file /x: `source` only applies to ensure = "present" or "directory" (this file has ensure = "absent")',
    ),
    (
        'file { path = "/x", mode = lib.mkForce("4755") }',
        "file: `mode`: mode 4755 exceeds maximum value 0777",
    ),
    # exec
    (
        'exec { name = "x", environment = { "A=1", "B" } }',
        'exec: `environment`: environment entry "B" must be KEY=value',
    ),
    (
        'exec { name = "x", environment = { "=x" } }',
        'exec: `environment`: environment entry "=x" must be KEY=value',
    ),
    (
        'exec { name = "x", environment = { "1A=2" } }',
        'exec: `environment`: environment entry "1A=2" must be KEY=value',
    ),
    (
        'exec { name = "x", environment = { "MY-VAR=2" } }',
        'exec: `environment`: environment entry "MY-VAR=2" must be KEY=value',
    ),
    (
        'exec { name = "x", environment = { ["BAD KEY"] = "v" } }',
        'exec: `environment`: environment entry "BAD KEY=v" must be KEY=value',
    ),
    (
        'exec { name = "x", environment = { 1, 2 } }',
        "exec: `environment`: item 1: expected a string, got the number 1",
    ),
    (
        'exec { name = "x", path = "/bin:usr/bin" }',
        'exec: `path`: path entries must be absolute directories, got "usr/bin"',
    ),
    (
        'exec { name = "x", path = { "/bin", "bin" } }',
        'exec: `path`: path entries must be absolute directories, got "bin"',
    ),
    (
        'exec { name = "x", path = "/bin::/usr/bin" }',
        'exec: `path`: path entries must be absolute directories, got ""',
    ),
    (
        'exec { name = "x", path = "" }',
        'exec: `path`: path entries must be absolute directories, got ""',
    ),
    (
        'exec { name = "x", timeout = "5x" }',
        'exec: `timeout`: "5x" is not a duration (use e.g. "30s", "5m", "1h30m")',
    ),
    (
        'exec { name = "x", timeout = "m5" }',
        'exec: `timeout`: "m5" is not a duration (use e.g. "30s", "5m", "1h30m")',
    ),
    (
        'exec { name = "x", timeout = "1h 30m" }',
        'exec: `timeout`: "1h 30m" is not a duration (use e.g. "30s", "5m", "1h30m")',
    ),
    (
        'exec { name = "x", timeout = "" }',
        'exec: `timeout`: "" is not a duration (use e.g. "30s", "5m", "1h30m")',
    ),
    ('exec { name = "x", timeout = 0 }', "exec: `timeout`: duration must be positive, got 0"),
    ('exec { name = "x", timeout = "0s" }', 'exec: `timeout`: duration must be positive, got "0s"'),
    ('exec { name = "x", timeout = -5 }', "exec: `timeout`: duration must be positive, got -5"),
    (
        'exec { name = "x", timeout = true }',
        'exec: `timeout`: expected a duration such as "30s" or "5m"',
    ),
    (
        'exec { name = "x", returns = { "0" } }',
        'exec: `returns`: item 1: expected an integer, got the string "0"',
    ),
    (
        'exec { name = "x", returns = { 0, 1.5 } }',
        "exec: `returns`: item 2: expected an integer, got the number 1.5",
    ),
    ('exec { name = "x", cwd = "rel" }', 'exec: `cwd`: path must be absolute and clean, got "rel"'),
    (
        'exec { name = "x", creates = "/a/../b" }',
        'exec: `creates`: path must be absolute and clean, got "/a/../b"',
    ),
    (
        'exec { name = "x", provider = "bash" }',
        'exec: `provider`: must be one of posix, shell; got "bash"',
    ),
    (
        'exec { name = "x", ensure = "absent" }',
        'exec: `ensure`: must be one of present; got "absent"',
    ),
    (
        'exec { name = "x", refresh_only = "yes" }',
        'exec: `refresh_only`: expected true or false, got the string "yes"',
    ),
    ('exec { name = "", command = "y" }', "exec: `name`: must not be empty"),
    ('exec { name = "x", command = "  " }', "exec: `command`: must not be empty"),
    (
        'exec { name = "x", comand = "y" }',
        "exec: unknown property `comand` for exec (did you mean `command`?)",
    ),
    (
        'exec { name = "x", refresh_onl = true }',
        "exec: unknown property `refresh_onl` for exec (did you mean `refresh_only`?)",
    ),
    (
        'exec { name = "x", subscribes = "exec#y" }',
        "exec: unknown property `subscribes` for exec (did you mean `subscribe`?)",
    ),
    (
        'exec { name = "x", health_checks = { { cmd = "x" } } }',
        "exec: `health_checks`: health check 1: unknown field `cmd` (did you mean `command`?)",
    ),
    (
        'exec { name = "x", health_checks = { { tries = 2 } } }',
        "exec: `health_checks`: health check 1: `command` is required",
    ),
    (
        'exec { name = "x", health_checks = { { command = "c", format = "json" } } }',
        "exec: `health_checks`: health check 1: only the nagios format is supported",
    ),
    (
        'exec { name = "x", health_checks = { "a", { command = "c", tries = "x" } } }',
        'exec: `health_checks`: health check 2: expected an integer, got the string "x"',
    ),
    (
        'exec { name = "x", health_checks = { { command = "c", timeout = "soon" } } }',
        'exec: `health_checks`: health check 1: "soon" is not a duration (use e.g. "30s", "5m", "1h30m")',
    ),
    (
        'exec { name = "x", health_checks = { 42 } }',
        "exec: `health_checks`: health check 1 must be a table with a command",
    ),
    # apply
    (
        'apply { name = "child.lua", ensure = "absent" }',
        'apply: `ensure`: must be one of present; got "absent"',
    ),
    (
        'apply { name = "child.lua", nop = true }',
        "apply: unknown property `nop` for apply (did you mean `noop`?)",
    ),
    (
        'apply { name = "child.lua", data = "x" }',
        'apply: `data`: expected a table of named values, got the string "x"',
    ),
    (
        'apply { name = "child.lua", allow_apply = "no" }',
        'apply: `allow_apply`: expected true or false, got the string "no"',
    ),
    (
        'apply { name = "child.lua", provider = "http" }',
        'apply: `provider`: must be one of ccmmanifest, lua; got "http"',
    ),
    # package
    (
        f'package {{ name = "rg", source = {SRC} }}',
        "package rg: missing required property `version`",
    ),
    ('package { name = "rg", version = "1" }', "package rg: missing required property `source`"),
    (
        'package { name = "rg", version = "1", source = "https://x/rg.tgz" }',
        "package: `source`: source must be lib.fetchUrl{...}, lib.fetchGit{...} or lib.fetchGitHub{...}",
    ),
    (
        'package { name = "rg", version = "1", source = lib.fetchUrl { url = "https://x/rg.tgz" } }',
        "lib.fetchUrl: `sha256` is required (the download is verified before use)",
    ),
    (
        f'package {{ name = "rg", version = "1", source = lib.fetchUrl {{ sha256 = "{SHA}" }} }}',
        "lib.fetchUrl: `url` is required",
    ),
    (
        'package { name = "rg", version = "1", source = lib.fetchUrl { url = "https://x", sha256 = "abc" } }',
        'package: `source`: sha256 must be 64 hexadecimal digits, got "abc"',
    ),
    (
        f'package {{ name = "rg", version = "1", source = lib.fetchUrl {{ url = "https://x", sha256 = "{"g" * 64}" }} }}',
        f'package: `source`: sha256 must be 64 hexadecimal digits, got "{"g" * 64}"',
    ),
    (
        f'package {{ name = "rg", version = "1", source = lib.fetchUrl {{ url = "https://x", sha256 = "{SHA}0" }} }}',
        f'package: `source`: sha256 must be 64 hexadecimal digits, got "{SHA}0"',
    ),
    (
        f'package {{ name = "rg", version = "1", source = lib.fetchUrl {{ url = "ftp://x/rg", sha256 = "{SHA}" }} }}',
        'package: `source`: url must be http://, https:// or file://, got "ftp://x/rg"',
    ),
    (
        f'package {{ name = "rg", version = "1", source = lib.fetchUrl {{ url = "https://x", sha256 = "{SHA}", md5 = "y" }} }}',
        "lib.fetchUrl: unknown field `md5` (fields: url, sha256)",
    ),
    (
        'package { name = "rg", version = "1", source = lib.fetchUrl { url = "https://x", sha256 = 5 } }',
        "lib.fetchUrl: `sha256` must be a string",
    ),
    (
        'package { name = "rg", version = "1", source = lib.fetchUrl("https://x") }',
        "lib.fetchUrl expects named fields, e.g. lib.fetchUrl{ url = ... }",
    ),
    (
        'package { name = "rg", version = "1", source = lib.fetchGit { url = "https://x" } }',
        "lib.fetchGit: `rev` is required (a commit to check out exactly)",
    ),
    (
        'package { name = "rg", version = "1", source = lib.fetchGit { url = "https://x", rev = "bad rev!" } }',
        'package: `source`: rev "bad rev!" is not a commit, tag or branch name',
    ),
    (
        'package { name = "rg", version = "1", source = lib.fetchGitHub { owner = "o", repo = "r", tag = "t", asset = "a" } }',
        "lib.fetchGitHub: `sha256` is required",
    ),
    (
        f'package {{ name = "rg", version = "1", source = lib.fetchGitHub {{ owner = "o", tag = "t", asset = "a", sha256 = "{SHA}" }} }}',
        "lib.fetchGitHub: `repo` is required",
    ),
    (
        f'package {{ name = "rg", version = "", source = {SRC} }}',
        "package: `version`: must not be empty",
    ),
    (
        f'package {{ name = "rg", version = "1", source = {SRC}, strip_components = -1 }}',
        "package: `strip_components`: must be 0 or more, got -1",
    ),
    (
        f'package {{ name = "rg", version = "1", source = {SRC}, bins = "rg" }}',
        "package: unknown property `bins` for package (did you mean `bin`?)",
    ),
    # user
    (
        'user { name = "bob", shell = "zsh" }',
        'user: `shell`: path must be absolute and clean, got "zsh"',
    ),
    (
        'user { name = "bob", home = "home/bob" }',
        'user: `home`: path must be absolute and clean, got "home/bob"',
    ),
    ('user { name = "bob", uid = -1 }', "user: `uid`: must be 0 or more, got -1"),
    (
        'user { name = "bob", uid = "1000" }',
        'user: `uid`: expected an integer, got the string "1000"',
    ),
    (
        'user { name = "bob", ensure = "gone" }',
        'user: `ensure`: must be one of present, absent; got "gone"',
    ),
    (
        'user { name = "bob", group = "wheel" }',
        "user: unknown property `group` for user (did you mean `groups`?)",
    ),
    # env
    (
        'env { ["1A"] = "x" }',
        'env: `name`: "1A" is not a valid environment variable name (letters, digits, _)',
    ),
    (
        'env { ["A-B"] = "x" }',
        'env: `name`: "A-B" is not a valid environment variable name (letters, digits, _)',
    ),
    (
        'env { ["A B"] = "x" }',
        'env: `name`: "A B" is not a valid environment variable name (letters, digits, _)',
    ),
    (
        'env { [""] = "x" }',
        'env: `name`: "" is not a valid environment variable name (letters, digits, _)',
    ),
    ('env { EDITOR = { "a" } }', "env: `value`: expected a string, got a list"),
    ("env { EDITOR = { a = 1 } }", "env: `value`: expected a string, got a table"),
    ("env { PATH = { 1 } }", "env: `value`: item 1: expected a string, got the number 1"),
    # the key of a declaration cannot carry a priority
    ('exec { name = lib.mkForce("x") }', "exec: `name` must be a string, got table"),
    # priorities must wrap whole values
    (
        'exec { name = "x", environment = { lib.mkForce("A=1") } }',
        "exec: `environment`: lib.mkForce/mkBefore/mkDefault/mkAfter/mkOrder must wrap a whole property value",
    ),
    (
        'env { A = lib.mkForce(lib.mkDefault("x")) }',
        "lib.mkForce: the value already has a priority",
    ),
    (
        'env { A = lib.mkOrder(-1, "x") }',
        "lib.mkOrder: the priority must be a non-negative integer, got -1",
    ),
    (
        'env { A = lib.mkOrder(1.5, "x") }',
        "lib.mkOrder: the priority must be a non-negative integer, got 1.5",
    ),
    ("env { A = lib.mkForce(nil) }", "lib.mkForce: a value is required"),
]


@pytest.mark.parametrize(
    "decl,message", INVALID, ids=[f"{i}:{c[0][:60]}" for i, c in enumerate(INVALID)]
)
def test_invalid_values_are_reported_at_their_line(sysenv, decl, message):
    sysenv.write("child.lua", "-- child\n")
    err = failure(sysenv, HEADER + decl + "\n")
    line = HEADER_LINES + 1
    assert err.source is not None and err.source.line == line
    assert err.render().startswith(f"sys.lua:{line}: {message}\n  {line} | {decl}")


@pytest.mark.parametrize(
    "decl,kind,names",
    [
        ('file { path = "/x", contents = "a", content = "a" }', "file", ("content", "contents")),
        (
            'exec { name = "x", refresh_only = true, refreshonly = true }',
            "exec",
            ("refresh_only", "refreshonly"),
        ),
        (
            'exec { name = "x", require = "exec#y", depends_on = "exec#y" }',
            "exec",
            ("depends_on", "require"),
        ),
    ],
)
def test_alias_and_canonical_name_together(sysenv, decl, kind, names):
    err = failure(sysenv, HEADER + decl + '\nexec { name = "y" }\n')
    a, b = names
    # which of the two is named first follows Lua's table order; both are named
    assert err.render() in {
        f"sys.lua:3: {kind}: `{x}` and `{y}` are the same property; give one\n  3 | {decl}"
        for x, y in ((a, b), (b, a))
    }


# ---------------------------------------------------------------------------
# owner, group and mode are required for files outside the home; defaults{}
# can supply them
# ---------------------------------------------------------------------------

HINT = (
    "Files need owner, group and mode. Set them on the file, or once for the rest of the file with\n"
    '  defaults { file = { owner = sys.user.name, group = sys.user.group, mode = "0644" } }'
)


@pytest.mark.parametrize(
    "decl,missing",
    [
        ('file { path = "/x" }', "owner"),
        ('file { path = "/x", owner = "me" }', "group"),
        ('file { path = "/x", owner = "me", group = "us" }', "mode"),
        ('file { path = "/x", mode = "0644", group = "us" }', "owner"),
        ('file { path = "/x", ensure = "directory", owner = "me", group = "us" }', "mode"),
        ('file { path = "/x", content = "hi" }', "owner"),
    ],
)
def test_files_require_owner_group_and_mode(sysenv, decl, missing):
    """Outside the home; under it they default (tests/test_bare_file.py)."""
    err = failure(sysenv, f"-- no defaults here\n{decl}\n")
    label = "/x"
    assert (
        err.render()
        == f"sys.lua:2: file {label}: missing required property `{missing}`\n  2 | {decl}\n\n{HINT}"
    )


@pytest.mark.parametrize(
    "text,expected",
    [
        # defaults satisfy the requirement
        (
            'defaults { file = { owner = "me", group = "us", mode = "644" } }\nfile { path = "/x" }\n',
            {"owner": "me", "group": "us", "mode": "0644"},
        ),
        # explicit properties beat defaults
        (
            'defaults { file = { owner = "me", group = "us", mode = "644" } }\nfile { path = "/x", mode = "0600", owner = 0 }\n',
            {"owner": "0", "group": "us", "mode": "0600"},
        ),
        # several defaults declarations add up; a later one replaces a property
        (
            'defaults { file = { owner = "me", mode = "0600" } }\ndefaults { file = { group = "us", mode = "0640" } }\nfile { path = "/x" }\n',
            {"owner": "me", "group": "us", "mode": "0640"},
        ),
        # sys.user as the spec suggests
        (HEADER + 'file { path = "/x" }\n', None),
        # files that are absent need none of them
        ('file { path = "/x", ensure = "absent" }\n', {}),
    ],
)
def test_defaults_supply_required_file_properties(sysenv, text, expected):
    m = evaluate(sysenv, text)
    item = item_of(m, "file#/x")
    got = {k: item.get(k) for k in ("owner", "group", "mode") if item.get(k) is not None}
    if expected is None:
        import grp
        import os
        import pwd

        expected = {
            "owner": pwd.getpwuid(os.getuid()).pw_name,
            "group": grp.getgrgid(os.getgid()).gr_name,
            "mode": "0644",
        }
    assert got == expected


def test_defaults_apply_only_to_later_declarations(sysenv):
    err = failure(
        sysenv,
        'file { path = "/early" }\ndefaults { file = { owner = "me", group = "us", mode = "0644" } }\nfile { path = "/late" }\n',
    )
    assert err.render().startswith("sys.lua:1: file /early: missing required property `owner`")


def test_defaults_do_not_leak_into_required_modules(sysenv):
    sysenv.write(
        "mods/m.lua",
        "local M = {}\nfunction M.setup()\n  file { path = '/from-module' }\nend\nreturn M\n",
    )
    err = failure(sysenv, HEADER + 'require("mods.m").setup()\n')
    assert err.render().startswith(
        "mods/m.lua:3: file /from-module: missing required property `owner`\n  3 |   file { path = '/from-module' }"
    )


def test_defaults_for_exec(sysenv):
    m = evaluate(
        sysenv,
        'defaults { exec = { timeout = "5m", provider = "shell" } }\nexec { name = "a" }\nexec { name = "b", timeout = 10 }\n',
    )
    assert (item_of(m, "exec#a").get("timeout"), item_of(m, "exec#a").get("provider")) == (
        300,
        "shell",
    )
    assert (item_of(m, "exec#b").get("timeout"), item_of(m, "exec#b").get("provider")) == (
        10,
        "shell",
    )


@pytest.mark.parametrize(
    "decl,message",
    [
        (
            'defaults { fil = { owner = "u" } }',
            "defaults: defaults for unknown type `fil` (did you mean `file`?)",
        ),
        ('defaults { env = { value = "x" } }', "defaults: defaults for unknown type `env`"),
        (
            'defaults { file = { mod = "0644" } }',
            "defaults: unknown property `mod` for file (did you mean `mode`?)",
        ),
        (
            'defaults { file = { mode = "4755" } }',
            "defaults: `mode`: mode 4755 exceeds maximum value 0777",
        ),
        (
            'defaults { file = { path = "/x" } }',
            "defaults: defaults cannot set `path`, the key of a file",
        ),
        (
            'defaults { exec = { name = "x" } }',
            "defaults: defaults cannot set `name`, the key of a exec",
        ),
        ('defaults { file = "x" }', "defaults: `file` must be a table of properties"),
        ('defaults "x"', "defaults expects a table such as defaults { file = { owner = ... } }"),
    ],
)
def test_invalid_defaults(sysenv, decl, message):
    err = failure(sysenv, f"\n{decl}\n")
    assert err.render() == f"sys.lua:2: {message}\n  2 | {decl}"


# ---------------------------------------------------------------------------
# apply children must exist
# ---------------------------------------------------------------------------


def test_apply_child_must_exist(sysenv):
    err = failure(sysenv, '\napply { name = "missing.lua" }\n')
    assert (
        err.render()
        == f'sys.lua:2: apply: child manifest not found: {sysenv.work}/missing.lua\n  2 | apply {{ name = "missing.lua" }}'
    )


# ---------------------------------------------------------------------------
# known bugs
# ---------------------------------------------------------------------------


def test_environment_map_with_a_table_value_is_an_error(sysenv):
    decl = 'exec { name = "x", environment = { A = { "x" } } }'
    err = failure(sysenv, decl + "\n")
    assert err.render().startswith("sys.lua:1: exec: `environment`:")


def test_empty_returns_means_the_default(sysenv):
    path = sysenv.write("sys.lua", 'exec { name = "x", returns = {} }\n')
    try:
        m = resolve(path, Options())
    except ConfigError as e:  # rejecting it with a clear message would be fine too
        assert "returns" in e.render()
        return
    assert thaw(item_of(m, "exec#x").get("returns")) == [0]
