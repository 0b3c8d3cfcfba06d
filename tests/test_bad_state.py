"""Bad state and bad input give a message, never a traceback (issue 9, its table).

Each case is set up for real (a full tmpfs where root may mount one, a
journal of random bytes, a directory where the lock should be, a deleted
store...), run through the real command line, and checked for its message,
its exit code, and what it left on disk.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import HEADER, delete_object, out, store_objects, tree
from httpserver import file_url, make_tar, make_zip, sha256, tool

from syslua.state.store import Store
from syslua.unpack import human_size


def apply_ok(sysenv, text: str) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + text)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)


# -- the lock path is a directory ---------------------------------------------
def test_lock_path_that_is_a_directory_is_a_clear_error(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    lock = sysenv.root / "state" / "lock"
    lock.unlink()
    lock.mkdir(mode=0o700)  # private, or the next command would tighten it (test_private_state)
    (lock / "keep").write_text("mine\n")
    (lock / "keep").chmod(0o600)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "v2\\n" }\n')
    home, root = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 2, text
    assert "Traceback" not in text
    assert f"Error: the state lock {lock} is a directory; syslua keeps a plain file there" in text
    assert f"Move {lock} out of the way" in text
    assert tree(sysenv.home) == home
    assert tree(sysenv.root) == root
    # read-only commands need no lock and still work
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    # once moved away, all is well again
    lock.rename(sysenv.work / "old-lock")
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "a.txt").read_text() == "v2\n"


# -- a journal of random bytes, or a journal path that is a directory ----------
def current(sysenv) -> str | None:  # type: ignore[no-untyped-def]
    index = json.loads((sysenv.root / "state" / "snapshots" / "index.json").read_text())
    return index["current"]


def failed_journals(sysenv) -> list[Path]:  # type: ignore[no-untyped-def]
    d = sysenv.root / "state" / "failed-journals"
    return sorted(d.iterdir()) if d.is_dir() else []


RANDOM = bytes(range(256)) * 3 + b"\x00\xff\xfe\n{not json}\n"


def make_random_journal(sysenv) -> Path:  # type: ignore[no-untyped-def]
    path = sysenv.root / "state" / "journal" / "journal.jsonl"
    path.write_bytes(RANDOM)
    path.chmod(0o600)
    return path


def make_journal_dir(sysenv) -> Path:  # type: ignore[no-untyped-def]
    path = sysenv.root / "state" / "journal" / "journal.jsonl"
    path.mkdir(mode=0o700)
    (path / "inside").write_text("x")
    (path / "inside").chmod(0o644)  # made private when set aside
    return path


def make_journal_file(sysenv) -> Path:  # type: ignore[no-untyped-def]
    path = sysenv.root / "state" / "journal"
    path.rmdir()
    path.write_bytes(RANDOM)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    "make, problem",
    [
        (make_random_journal, "{path} is not a journal (its first record is not readable)"),
        (make_journal_dir, "{path} is a directory"),
        (make_journal_file, "{path} is not a directory"),
    ],
    ids=["random-bytes", "journal-is-a-directory", "journal-dir-is-a-file"],
)
@pytest.mark.parametrize("command", ["apply", "status"])
def test_unreadable_journal_is_set_aside_and_the_command_goes_on(
    sysenv, make, problem: str, command: str
) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    assert current(sysenv) is not None
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "v2\\n" }\n')
    path = make(sysenv)
    was = (
        {k: (kind, mode & 0o700, data) for k, (kind, mode, data) in tree(path).items()}
        if path.is_dir()
        else path.read_bytes()
    )
    p = sysenv.run(command)
    text = out(p)
    assert p.returncode == 0, text
    assert "Traceback" not in text
    [kept] = failed_journals(sysenv)
    assert kept.name.startswith("unreadable-")
    warning = (
        f"Warning: {problem.format(path=path)}; moved it to {kept}. The current snapshot "
        "pointer was cleared: the next `sys apply` will converge everything."
    )
    assert warning in p.stderr, text
    # kept as it was, for the user to look at, owner-only
    assert (tree(kept) if kept.is_dir() else kept.read_bytes()) == was
    assert stat.S_IMODE(kept.stat().st_mode) == (0o700 if kept.is_dir() else 0o600)
    if command == "apply":
        assert (sysenv.home / "a.txt").read_text() == "v2\n"
        assert current(sysenv) is not None
    else:
        assert current(sysenv) is None
        assert "No current snapshot" in p.stdout
        p = sysenv.run("apply")  # converges from the live state
        assert p.returncode == 0, out(p)
        assert (sysenv.home / "a.txt").read_text() == "v2\n"
    assert not os.path.lexists(path) or path.is_dir() and not any(path.iterdir())
    # said once
    p = sysenv.run("status")
    assert p.returncode == 0 and "Warning" not in out(p), out(p)


def test_empty_journal_is_no_problem(sysenv) -> None:
    """A run killed before its first record wrote an empty journal: it changed nothing."""
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    s1 = current(sysenv)
    (sysenv.root / "state" / "journal" / "journal.jsonl").write_bytes(b"")
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    assert current(sysenv) == s1
    assert failed_journals(sysenv) == []
    assert "No drift" in p.stdout


def test_damaged_journal_records_do_not_crash_recovery(sysenv) -> None:
    """A begin record, then records that are JSON but not what a journal holds."""
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    path = sysenv.root / "state" / "journal" / "journal.jsonl"
    path.write_text(
        '{"op":"begin","pid":1,"time":0,"kind":"apply"}\n'
        '{"op":"path","item":"file#x"}\n'
        '{"op":"path","path":"/nonexistent/x","prev":{"kind":"file"}}\n'
    )
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 0, text
    assert "Traceback" not in text
    assert "could not fully roll back an interrupted apply" in text
    assert "the journal record is damaged" in text
    [kept] = failed_journals(sysenv)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


# -- a NUL byte in a path -------------------------------------------------------
NUL = "contains a NUL byte (\\0), which no path, name, command or environment value can hold"


@pytest.mark.parametrize(
    "decl, message",
    [
        ('file { path = "~/a\\0b", content = "x\\n" }', f"file: `path` {NUL}"),
        ('file { path = "~/a", source = "./src\\0/x" }', f"file: `source` {NUL}"),
        ('exec { name = "x", command = "true", cwd = "/tmp\\0/x" }', f"exec: `cwd` {NUL}"),
        ('exec { name = "x", command = "touch /tmp/a\\0b" }', f"exec: `command` {NUL}"),
        (
            'exec { name = "x", command = "true", environment = { A = "a\\0" } }',
            f"exec: `environment` {NUL}",
        ),
        ('env { EDITOR = "vi\\0" }', f"env: `value` {NUL}"),
        ('apply { name = "child\\0.lua" }', f"apply: `name` {NUL}"),
    ],
    ids=["file-path", "file-source", "exec-cwd", "exec-command", "exec-env", "env", "apply"],
)
def test_nul_byte_is_a_configuration_error_at_its_line(sysenv, decl: str, message: str) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "v2\\n" }\n' + decl + "\n")
    line = HEADER.count("\n") + 2
    home, root = tree(sysenv.home), tree(sysenv.root)
    for command in ("plan", "apply"):
        p = sysenv.run(command)
        text = out(p)
        assert p.returncode == 2, text
        assert "Traceback" not in text
        assert f"Error: sys.lua:{line}: {message}" in text, text
    assert tree(sysenv.home) == home
    assert tree(sysenv.root) == root


def test_nul_byte_in_file_content_is_data(sysenv) -> None:
    """Content is the one place a NUL belongs: a binary file."""
    apply_ok(sysenv, 'file { path = "~/bin.dat", content = "a\\0b" }\n')
    assert (sysenv.home / "bin.dat").read_bytes() == b"a\0b"


def test_nul_byte_in_a_yaml_manifest(sysenv) -> None:
    sysenv.write(
        "m.yaml",
        """\
ccm:
  resources:
    - file:
        - "/tmp/a\\0b":
            content: x
            owner: root
            group: root
            mode: "0644"
""",
    )
    p = sysenv.run("plan", "m.yaml")
    assert p.returncode == 2, out(p)
    assert f"Error: m.yaml:4: file: `path` {NUL}" in out(p)
    assert "Traceback" not in out(p)


# -- error({}) and error() ------------------------------------------------------
@pytest.mark.parametrize(
    "call, message",
    [
        ("error({})", "error called with a table value"),
        ("error()", "error called with nil"),
        ("error(nil)", "error called with nil"),
        ("error(true)", "error called with a boolean value"),
        ("error(print)", "error called with a function value"),
        ('error(setmetatable({}, { __tostring = function() return "custom" end }))', "custom"),
    ],
)
def test_error_with_a_value_that_is_not_a_string_is_located(
    sysenv, call: str, message: str
) -> None:
    sysenv.write("sys.lua", f"local x = 1\n\nlocal function f()\n  {call}\nend\nf()\n")
    p = sysenv.run("plan")
    text = out(p)
    assert p.returncode == 2, text
    assert "Traceback" not in text
    assert f"Error: sys.lua:4: {message}\n  4 |   {call}" in text, text


def test_error_with_a_table_inside_a_module_names_the_module(sysenv) -> None:
    sysenv.write(
        "helpers.lua", "local M = {}\nfunction M.boom()\n  error({ code = 1 })\nend\nreturn M\n"
    )
    sysenv.write("sys.lua", 'require("helpers").boom()\n')
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert "Error: helpers.lua:3: error called with a table value" in out(p)


# -- bytecode refused -----------------------------------------------------------
REFUSED = "is a binary chunk (bytecode); binary chunks are not allowed while evaluating"
DUMP = "string.dump(function() return 1 end)"


def write_bytecode(sysenv, name: str) -> str:  # type: ignore[no-untyped-def]
    """A real LuaJIT bytecode file, dumped by lupa's LuaJIT."""
    import lupa.luajit21 as lupa

    data = lupa.LuaRuntime(encoding=None).eval(f"{DUMP}")
    path = sysenv.work / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("how", ["require", "dofile", "root"])
def test_bytecode_is_refused_naming_the_file_and_line(sysenv, how: str) -> None:
    home, root = tree(sysenv.home), tree(sysenv.root)
    if how == "require":
        path = write_bytecode(sysenv, "compiled.lua")
        sysenv.write("sys.lua", '-- a comment\nlocal m = require("compiled")\n')
        expected = f'Error: sys.lua:2: {path} {REFUSED}\n  2 | local m = require("compiled")'
        config = "sys.lua"
    elif how == "dofile":
        path = write_bytecode(sysenv, "compiled.bin")
        sysenv.write("sys.lua", f'\n\ndofile("{path}")\n')
        expected = f"Error: sys.lua:3: {path} {REFUSED}"
        config = "sys.lua"
    else:
        path = write_bytecode(sysenv, "sys.lua")
        expected = f"Error: {path} {REFUSED}"
        config = "sys.lua"
    p = sysenv.run("apply", config)
    text = out(p)
    assert p.returncode == 2, text
    assert "Traceback" not in text
    assert expected in text, text
    assert tree(sysenv.home) == home and tree(sysenv.root) == root


def test_load_of_bytecode_returns_the_refusal_with_its_line(sysenv) -> None:
    """`load` keeps Lua's contract (nil and a message); the message is located."""
    sysenv.write(
        "sys.lua",
        f"local f, err = load({DUMP})\nassert(f == nil)\nerror(err, 0)\n",
    )
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert f"sys.lua:1: the string given to load {REFUSED}" in out(p)


# -- deleted store ---------------------------------------------------------------
def test_status_says_the_store_is_missing(sysenv) -> None:
    """Inline content only: every file still matches, yet the store is gone."""
    (sysenv.home / ".bashrc").write_text("# hand-made\n")  # taken over: its original is a blob
    apply_ok(
        sysenv,
        'file { path = "~/a.txt", content = "v1\\n" }\nfile { path = "~/.bashrc", content = "# managed\\n" }\n',
    )
    shutil.rmtree(sysenv.root / "store")
    home, root = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("status")
    text = out(p)
    assert p.returncode == 1, text
    assert "Traceback" not in text
    assert "No drift" not in text
    assert f"The store is missing: {sysenv.root}/store does not exist." in p.stdout
    assert "`sys rollback` and putting originals back need them" in p.stdout
    assert "The managed paths match snapshot" in p.stdout
    p = sysenv.run("status", "--json")
    assert p.returncode == 1
    store = json.loads(p.stdout)["store"]
    assert store["exists"] is False and store["path"] == f"{sysenv.root}/store"
    assert store["missing_objects"] == store["objects"] >= 3  # contents, original, sys.lua
    assert tree(sysenv.home) == home and tree(sysenv.root) == root


def test_status_names_missing_store_objects_and_items_it_cannot_check(sysenv) -> None:
    src = sysenv.work / "src.txt"
    src.write_text("from source\n")
    apply_ok(sysenv, f'file {{ path = "~/b.txt", source = "{src}" }}\n')
    for blob in store_objects(sysenv.root):
        delete_object(sysenv.root, blob)
    p = sysenv.run("status", "-v")
    text = out(p)
    assert p.returncode == 1, text
    assert re.search(r"The store is incomplete: (\d+) of \1 object\(s\) and 0 of 0 tree\(s\)", text)
    assert "!  file ~/b.txt\n    in the home: store object " in text
    assert "it was deleted from the store by hand" in text
    assert "Traceback" not in text


def test_status_of_a_whole_store_has_no_store_entry(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    p = sysenv.run("status", "--json")
    assert p.returncode == 0, out(p)
    assert json.loads(p.stdout)["store"] is None


# -- decompression bomb -----------------------------------------------------------
ZEROS = 8 << 20  # 8 MiB of zeros compress to a few KiB: far past 200 times


def bomb(fmt: str) -> bytes:
    if fmt == "zip":
        return make_zip({"bin/tool": tool("t"), "share/zeros": bytes(ZEROS)})
    return make_tar({"bin/tool": tool("t"), "share/zeros": bytes(ZEROS)}, fmt.split(".")[1])


def package_config(sysenv, name: str, data: bytes) -> None:  # type: ignore[no-untyped-def]
    path = sysenv.work / name
    path.write_bytes(data)
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""
file {{ path = "~/a.txt", content = "v2\\n" }}
package {{ name = "tool", version = "1", bin = {{ "bin/tool" }},
           source = lib.fetchUrl {{ url = "{file_url(path)}", sha256 = "{sha256(data)}" }} }}
""",
    )


def assert_no_tree_nor_staging(sysenv) -> None:  # type: ignore[no-untyped-def]
    for d in ("trees", "tmp"):
        where = sysenv.root / "store" / d
        assert not where.exists() or list(where.iterdir()) == [], list(where.iterdir())


@pytest.mark.parametrize("fmt", ["tar.gz", "tar.xz", "tar.bz2", "zip"])
def test_decompression_bomb_is_refused_with_the_sizes(sysenv, fmt: str) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    data = bomb(fmt)
    assert len(data) * 200 < ZEROS
    package_config(sysenv, f"tool.{fmt}", data)
    home = tree(sysenv.home)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert "Traceback" not in text
    limit = human_size(200 * len(data))
    assert (
        f"the archive ({human_size(len(data))}) unpacks to more than {limit}, "
        "200 times its size: refused as a decompression bomb"
    ) in text, text
    assert "Apply failed" in text
    assert tree(sysenv.home) == home
    assert_no_tree_nor_staging(sysenv)


def test_max_unpack_limits_what_an_archive_may_unpack_to(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    data = make_tar({"bin/tool": tool("t"), "share/noise": os.urandom(3 << 20)})  # ~3 MiB, ratio ~1
    package_config(sysenv, "tool.tar.gz", data)
    home = tree(sysenv.home)
    p = sysenv.run("apply", "--max-unpack", "2M")
    text = out(p)
    assert p.returncode == 1, text
    assert (
        f"the archive ({human_size(len(data))}) unpacks to more than 2.0 MiB, "
        "the --max-unpack limit: refused (a larger --max-unpack allows it)"
    ) in text, text
    assert tree(sysenv.home) == home
    assert_no_tree_nor_staging(sysenv)
    # the default (4 GiB) lets it through
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.root / "state" / "profile" / "bin" / "tool").exists()


def test_rollback_takes_max_unpack_too(sysenv) -> None:
    data = make_tar({"bin/tool": tool("t"), "share/noise": os.urandom(2 << 20)})
    package_config(sysenv, "tool.tar.gz", data)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v3\\n" }\n')
    store = Store(sysenv.root / "store")
    for name in store.all_trees():
        store.remove_tree(name)  # rolling back must unpack it again
    p = sysenv.run("rollback", "--max-unpack", "1M")
    assert p.returncode == 1, out(p)
    assert "the --max-unpack limit" in out(p)
    assert_no_tree_nor_staging(sysenv)
    p = sysenv.run("rollback")
    assert p.returncode == 0, out(p)


@pytest.mark.parametrize("value", ["lots", "1.5", "0", "-3"])
def test_max_unpack_must_be_a_size(sysenv, value: str) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    root = tree(sysenv.root)
    p = sysenv.run("apply", "--max-unpack", value)
    assert p.returncode == 2, out(p)
    assert "Error: --max-unpack: " in out(p)
    assert tree(sysenv.root) == root


# -- SYSLUA_ROOT full ---------------------------------------------------------------
@pytest.fixture
def small_root(sysenv):  # type: ignore[no-untyped-def]
    """Mount a tmpfs of the given size on $SYSLUA_ROOT (root only; skipped elsewhere)."""
    mounted = []

    def mount(size: str) -> Path:
        p = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0711", "tmpfs", str(sysenv.root)],
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
        mounted.append(sysenv.root)
        return sysenv.root

    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=False)


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(root: Path, leave: int) -> Path:
    """A filler file that leaves about `leave` bytes free on root's filesystem."""
    filler = root / "filler"
    filler.write_bytes(b"")
    with open(filler, "ab") as f:
        f.write(b"f" * max(free_bytes(root) - leave, 0))
    return filler


def test_root_full_while_keeping_the_originals(sysenv, small_root) -> None:
    small_root("1m")
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    s1 = current(sysenv)
    big = sysenv.home / "big.dat"
    big.write_bytes(os.urandom(2 << 20))  # hand-made, larger than the whole root
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/a.txt", content = "v2\\n" }\n'
        + 'file { path = "~/big.dat", content = "managed\\n" }\n',
    )
    home, root = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert "Traceback" not in text
    assert (
        f"Error: No space left on device while keeping the originals under {sysenv.root}/store"
        in text
    ), text
    assert "Nothing was changed." in text
    assert tree(sysenv.home) == home
    assert tree(sysenv.root) == root  # no journal, no temp file, no stray blob
    assert current(sysenv) == s1
    p = sysenv.run("status")
    assert p.returncode == 0 and "No drift" in p.stdout, out(p)


def test_root_full_while_writing_the_snapshot(sysenv, small_root) -> None:
    small_root("2m")
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    s1 = current(sysenv)
    big = "x" * (300 << 10)
    # the content goes to the store (as the snapshot's blob) and again with
    # sys.lua (a config input) and the snapshot's manifest: room for one copy only
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/a.txt", content = "v2\\n" }\n'
        + f'file {{ path = "~/data.txt", content = "{big}" }}\n'
        + 'env { EDITOR = "vi" }\n',
    )
    filler = fill(sysenv.root, 450 << 10)
    home, root = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 1, text
    assert "Traceback" not in text
    assert "Apply failed. System unchanged." in text
    assert f"No space left on device while writing the snapshot under {sysenv.root}/state" in text
    assert "Rolling back..." in text
    # rolled back in the same run: no journal left for the next command
    assert tree(sysenv.home) == home
    assert tree(sysenv.root) == root
    assert current(sysenv) == s1
    assert not (sysenv.root / "state" / "journal" / "journal.jsonl").exists()
    # with room again, the same config applies
    filler.unlink()
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "data.txt").read_text() == big
