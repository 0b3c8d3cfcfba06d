"""`status` and `decide` of each resource type, row by row of the seed decision tables.

Items come from real Lua configs (resolved like `sys plan` does); the machine
state is made of real files, directories, symlinks and fifos under the temp
HOME; guards are real commands. Every call goes through the registry
(`syslua.resources.get(type)`) with a noop `Context` and a real `Runner`, and
status/decide must never change anything on disk.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import HEADER, put, tree

from syslua.manifest.resolve import Options, resolve
from syslua.plan.planner import make_plan
from syslua.resources import file as file_type
from syslua.resources import get
from syslua.resources.base import Context
from syslua.resources.process import Runner

ME = os.getuid()
OTHER_UID = str(ME + 4242)  # a numeric id nobody has: a wrong owner without root
OTHER_GID = str(os.getgid() + 4242)


def manifest_of(sysenv, body: str, header: bool = True):
    path = sysenv.write("sys.lua", (HEADER if header else "") + body)
    return resolve(path, Options())


def decide(sysenv, manifest, ident: str, *, triggered: bool = False, watch: tuple[Path, ...] = ()):
    """status + decide for one item; asserts the machine is unchanged by either."""
    item = manifest.get(ident)
    assert item is not None, f"{ident} not in {[i.id for i in manifest]}"
    rtype = get(item.type)
    ctx = Context(runner=Runner(), noop=True)
    ctx.manifest = manifest
    roots = (sysenv.home, sysenv.root, sysenv.work, *watch)
    before = [snapshot(r) for r in roots]
    status = rtype.status(item, ctx)
    decision = rtype.decide(item, status, ctx, triggered)
    assert [snapshot(r) for r in roots] == before, "status/decide changed the machine"
    return status, decision


def snapshot(p: Path):
    """conftest's tree() (content, modes, links) plus owners and mtimes; fifos are not read."""
    fifos = [q for q in p.rglob("*") if stat.S_ISFIFO(q.lstat().st_mode)] if p.exists() else []
    if fifos:
        return _lstat(p)
    return tree(p), _lstat(p)


def _lstat(p: Path):
    """Mode, owner and mtime of every entry (tree() has no owners or times)."""
    out = {}
    for q in [p, *sorted(p.rglob("*"))] if p.exists() else []:
        st = q.lstat()
        out[str(q)] = (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, st.st_size)
    return out


def mkdir(path: Path, mode: int = 0o755) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, mode)
    return path


# ---------------------------------------------------------------------------
# file
# ---------------------------------------------------------------------------

F = "~/target"


def _none(h: Path) -> None:
    pass


def _file(text: str = "want\n", mode: int = 0o644):
    return lambda h: put(h / "target", text, mode)


def _dir(mode: int = 0o755, child: bool = False):
    def make(h: Path) -> None:
        mkdir(h / "target", mode)
        if child:
            put(h / "target" / "inner", "x")

    return make


def _link_to_matching_file(h: Path) -> None:
    put(h / "real", "want\n", 0o644)
    os.symlink(h / "real", h / "target")


def _link_to_dir(h: Path) -> None:
    mkdir(h / "realdir", 0o755)
    os.symlink(h / "realdir", h / "target")


def _dangling_link(h: Path) -> None:
    os.symlink(h / "nowhere", h / "target")


def _fifo(h: Path) -> None:
    os.mkfifo(h / "target", 0o644)


# (id, declaration, machine, action, noop_message, reason substrings)
FILE_ROWS = [
    # desired absent
    (
        "absent/absent",
        f'file {{ path = "{F}", ensure = "absent" }}',
        _none,
        "none",
        None,
        ["absent"],
    ),
    (
        "absent/present",
        f'file {{ path = "{F}", ensure = "absent" }}',
        _file(),
        "remove",
        "Would have removed the file",
        ["a file exists"],
    ),
    (
        "absent/empty-directory",
        f'file {{ path = "{F}", ensure = "absent" }}',
        _dir(),
        "remove",
        "Would have removed the file",
        ["a directory exists"],
    ),
    (
        "absent/full-directory",
        f'file {{ path = "{F}", ensure = "absent" }}',
        _dir(child=True),
        "fail",
        None,
        ["not empty", "force"],
    ),
    (
        "absent/full-directory+force",
        f'file {{ path = "{F}", ensure = "absent", force = true }}',
        _dir(child=True),
        "remove",
        "Would have removed the file",
        ["a directory exists"],
    ),
    (
        "absent/symlink",
        f'file {{ path = "{F}", ensure = "absent" }}',
        _link_to_matching_file,
        "remove",
        "Would have removed the file",
        ["a symlink exists"],
    ),
    # desired directory
    (
        "directory/absent",
        f'file {{ path = "{F}", ensure = "directory", mode = "0755" }}',
        _none,
        "create",
        "Would have created directory",
        [],
    ),
    (
        "directory/matching",
        f'file {{ path = "{F}", ensure = "directory", mode = "0755" }}',
        _dir(0o755),
        "none",
        None,
        ["unchanged"],
    ),
    (
        "directory/wrong-mode",
        f'file {{ path = "{F}", ensure = "directory", mode = "0755" }}',
        _dir(0o700),
        "update",
        None,
        ["mode 0700 -> 0755"],
    ),
    (
        "directory/wrong-owner",
        f'file {{ path = "{F}", ensure = "directory", mode = "0755", owner = "{OTHER_UID}" }}',
        _dir(0o755),
        "update",
        None,
        [f"-> {OTHER_UID}"],
    ),
    (
        "directory/wrong-group",
        f'file {{ path = "{F}", ensure = "directory", mode = "0755", group = "{OTHER_GID}" }}',
        _dir(0o755),
        "update",
        None,
        [f"-> {OTHER_GID}"],
    ),
    (
        "directory/present",
        f'file {{ path = "{F}", ensure = "directory", mode = "0755" }}',
        _file(),
        "fail",
        None,
        ["a file exists where a directory is wanted", "force"],
    ),
    (
        "directory/present+force",
        f'file {{ path = "{F}", ensure = "directory", mode = "0755", force = true }}',
        _file(),
        "create",
        "Would have created directory",
        ["is a file, should be a directory"],
    ),
    (
        "directory/symlink-to-dir",
        f'file {{ path = "{F}", ensure = "directory", mode = "0755" }}',
        _link_to_dir,
        "create",
        "Would have created directory",
        ["is a symlink"],
    ),
    # desired present
    (
        "present/absent",
        f'file {{ path = "{F}", content = "want\\n" }}',
        _none,
        "create",
        "Would have created the file",
        [],
    ),
    (
        "present/matching",
        f'file {{ path = "{F}", content = "want\\n" }}',
        _file(),
        "none",
        None,
        ["unchanged"],
    ),
    (
        "present/matching-mode-written-644",
        f'file {{ path = "{F}", content = "want\\n", mode = "644" }}',
        _file(),
        "none",
        None,
        ["unchanged"],
    ),
    (
        "present/matching-mode-written-0o644",
        f'file {{ path = "{F}", content = "want\\n", mode = "0o644" }}',
        _file(),
        "none",
        None,
        ["unchanged"],
    ),
    (
        "present/wrong-content",
        f'file {{ path = "{F}", content = "want\\n" }}',
        _file("other content\n"),
        "update",
        None,
        ["content changed"],
    ),
    (
        "present/wrong-content-same-size",
        f'file {{ path = "{F}", content = "want\\n" }}',
        _file("WANT\n"),
        "update",
        None,
        ["content changed"],
    ),
    (
        "present/wrong-owner",
        f'file {{ path = "{F}", content = "want\\n", owner = "{OTHER_UID}" }}',
        _file(),
        "update",
        None,
        [f"-> {OTHER_UID}"],
    ),
    (
        "present/wrong-group",
        f'file {{ path = "{F}", content = "want\\n", group = "{OTHER_GID}" }}',
        _file(),
        "update",
        None,
        [f"-> {OTHER_GID}"],
    ),
    (
        "present/wrong-mode",
        f'file {{ path = "{F}", content = "want\\n", mode = "0600" }}',
        _file(),
        "update",
        None,
        ["mode 0644 -> 0600"],
    ),
    (
        "present/everything-wrong",
        f'file {{ path = "{F}", content = "want\\n", mode = "0600", owner = "{OTHER_UID}", group = "{OTHER_GID}" }}',
        _file("nope\n", 0o640),
        "update",
        None,
        ["content changed", f"-> {OTHER_UID}", f"-> {OTHER_GID}", "mode 0640 -> 0600"],
    ),
    (
        "present/no-content-attrs-match",
        f'file {{ path = "{F}" }}',
        _file("anything at all\n"),
        "none",
        None,
        ["unchanged"],
    ),
    (
        "present/no-content-wrong-mode",
        f'file {{ path = "{F}", mode = "0600" }}',
        _file("anything\n"),
        "update",
        None,
        ["mode 0644 -> 0600"],
    ),
    (
        "present/symlink-to-matching-file",
        f'file {{ path = "{F}", content = "want\\n" }}',
        _link_to_matching_file,
        "update",
        None,
        ["replaces a symlink to"],
    ),
    (
        "present/dangling-symlink",
        f'file {{ path = "{F}", content = "want\\n" }}',
        _dangling_link,
        "update",
        None,
        ["replaces a symlink to"],
    ),
    (
        "present/symlink-to-dir",
        f'file {{ path = "{F}", content = "want\\n" }}',
        _link_to_dir,
        "update",
        None,
        ["replaces a symlink to"],
    ),
    (
        "present/directory",
        f'file {{ path = "{F}", content = "want\\n" }}',
        _dir(),
        "fail",
        None,
        ["a directory exists where a file is wanted"],
    ),
    (
        "present/fifo",
        f'file {{ path = "{F}", content = "want\\n" }}',
        _fifo,
        "fail",
        None,
        ["special file"],
    ),
]


@pytest.mark.parametrize(
    "decl,machine,action,noop_message,reasons",
    [r[1:] for r in FILE_ROWS],
    ids=[r[0] for r in FILE_ROWS],
)
def test_file_decision_table(sysenv, decl, machine, action, noop_message, reasons):
    machine(sysenv.home)
    m = manifest_of(sysenv, decl + "\n")
    status, d = decide(sysenv, m, f"file#{sysenv.home}/target")
    assert d.action == action, d
    if noop_message is not None:
        assert d.noop_message == noop_message
        assert d.message.startswith(noop_message)
    elif action != "update":
        assert d.noop_message is None
    for text in reasons:
        assert text in d.reason, f"{text!r} not in {d.reason!r}"
    assert d.changes is (action in ("create", "update", "remove"))
    assert (
        d.symbol == {"create": "+", "update": "~", "remove": "-", "none": "=", "fail": "!"}[action]
    )


def test_file_reasons_are_in_seed_order(sysenv):
    """ensure, content, owner, group, mode."""
    put(sysenv.home / "target", "nope\n", 0o640)
    m = manifest_of(
        sysenv,
        f'file {{ path = "{F}", content = "want\\n", mode = "0600", '
        f'owner = "{OTHER_UID}", group = "{OTHER_GID}" }}\n',
    )
    status, d = decide(sysenv, m, f"file#{sysenv.home}/target")
    order = [d.reason.index(t) for t in ("content changed", "owner", "group", "mode")]
    assert order == sorted(order)
    assert status.differences[0] == "content changed"


def test_file_symlink_status_is_the_link_not_its_target(sysenv):
    _link_to_matching_file(sysenv.home)
    m = manifest_of(sysenv, f'file {{ path = "{F}", content = "want\\n" }}\n')
    status, d = decide(sysenv, m, f"file#{sysenv.home}/target")
    assert status.state.ensure == "link"
    assert status.state.link_target == str(sysenv.home / "real")
    assert d.action == "update"
    assert str(sysenv.home / "real") in d.reason
    # the link and the file behind it are exactly as they were
    assert os.readlink(sysenv.home / "target") == str(sysenv.home / "real")
    assert (sysenv.home / "real").read_text() == "want\n"


def test_file_source_rows(sysenv):
    src = put(sysenv.work / "files" / "motd", "from source\n")
    put(sysenv.home / "target", "from source\n")
    m = manifest_of(sysenv, f'file {{ path = "{F}", source = "files/motd" }}\n')
    _, d = decide(sysenv, m, f"file#{sysenv.home}/target")
    assert d.action == "none"
    src.write_text("changed source\n")
    _, d = decide(sysenv, m, f"file#{sysenv.home}/target")
    assert d.action == "update" and "content changed" in d.reason
    # a source that vanished after evaluation: a failure that names it
    src.unlink()
    _, d = decide(sysenv, m, f"file#{sysenv.home}/target")
    assert d.action == "fail"
    assert "source file not found" in d.reason and "files/motd" in d.reason


def test_file_missing_source_fails_even_when_target_is_absent(sysenv):
    m = manifest_of(sysenv, f'file {{ path = "{F}", source = "files/nope" }}\n')
    _, d = decide(sysenv, m, f"file#{sysenv.home}/target")
    assert d.action == "fail"
    assert "source file not found" in d.reason


def test_file_missing_parent_directory_is_created(sysenv):
    m = manifest_of(sysenv, 'file { path = "~/no/such/dir/f", content = "x" }\n')
    status, d = decide(sysenv, m, f"file#{sysenv.home}/no/such/dir/f")
    assert d.action == "create" and d.noop_message == "Would have created the file"
    home = str(sysenv.home)
    assert status.parents == (f"{home}/no", f"{home}/no/such", f"{home}/no/such/dir")


def test_file_parent_that_is_a_file_fails(sysenv):
    (sysenv.home / "no").write_text("a file\n")
    m = manifest_of(sysenv, 'file { path = "~/no/such/f", content = "x" }\n')
    _, d = decide(sysenv, m, f"file#{sysenv.home}/no/such/f")
    assert d.action == "fail"
    assert d.reason == "~/no is not a directory, so ~/no/such/f cannot be created"


def test_file_missing_parent_directory_that_is_declared(sysenv):
    m = manifest_of(
        sysenv,
        'file { path = "~/newdir", ensure = "directory", mode = "0755" }\n'
        'file { path = "~/newdir/f", content = "x" }\n',
    )
    _, d = decide(sysenv, m, f"file#{sysenv.home}/newdir/f")
    assert d.action == "create" and d.noop_message == "Would have created the file"


def test_file_unknown_owner_is_a_failure_not_a_crash(sysenv):
    put(sysenv.home / "target", "want\n")
    m = manifest_of(
        sysenv, f'file {{ path = "{F}", content = "want\\n", owner = "no-such-user-xyz" }}\n'
    )
    _, d = decide(sysenv, m, f"file#{sysenv.home}/target")
    assert d.action == "fail"
    assert "no-such-user-xyz" in d.reason and "does not exist" in d.reason


@pytest.mark.skipif(os.getuid() == 0, reason="root can read anything")
def test_file_unreadable_parent_is_a_failure(sysenv):
    locked = mkdir(sysenv.home / "locked", 0o755)
    put(locked / "target", "want\n")
    os.chmod(locked, 0o000)
    try:
        m = manifest_of(sysenv, 'file { path = "~/locked/target", content = "want\\n" }\n')
        _, d = decide(sysenv, m, f"file#{locked}/target")
        assert d.action == "fail" and "permission denied" in d.reason
    finally:
        os.chmod(locked, 0o755)


def test_file_status_reads_attributes(sysenv):
    put(sysenv.home / "target", "12345", 0o640)
    m = manifest_of(sysenv, f'file {{ path = "{F}", content = "12345", mode = "0640" }}\n')
    status, d = decide(sysenv, m, f"file#{sysenv.home}/target")
    st = os.lstat(sysenv.home / "target")
    assert status.state.ensure == "present"
    assert status.state.size == 5
    assert status.state.mode == "0640"
    assert (status.state.uid, status.state.gid) == (st.st_uid, st.st_gid)
    assert status.differences == ()
    assert d.action == "none"


def test_file_diff_for_plan(sysenv):
    put(sysenv.home / "target", "a\nb\n")
    m = manifest_of(sysenv, f'file {{ path = "{F}", content = "a\\nc\\n" }}\n')
    item = m.get(f"file#{sysenv.home}/target")
    ctx = Context(runner=Runner(), noop=True)
    status = get("file").status(item, ctx)
    text = file_type.FileType().diff(item, status, ctx)
    assert text is not None
    assert text.splitlines() == [
        "--- ~/target (current)",
        "+++ ~/target (desired)",
        "@@ -1,2 +1,2 @@",
        " a",
        "-b",
        "+c",
    ]


# ---------------------------------------------------------------------------
# exec
# ---------------------------------------------------------------------------

# (id, declaration, triggered, action, noop_message, reason substrings)
# `~/marker` exists in every row (see the test), `~/missing` never does.
EXEC_ROWS = [
    ("no-guards", 'exec { name = "e", command = "true" }', False, "run", "Would have executed", []),
    (
        "triggered",
        'exec { name = "e", command = "true" }',
        True,
        "run",
        "Would have executed via subscribe",
        ["subscribed"],
    ),
    (
        "triggered-beats-creates",
        'exec { name = "e", command = "true", creates = "~/marker" }',
        True,
        "run",
        "Would have executed via subscribe",
        [],
    ),
    (
        "triggered-beats-onlyif",
        'exec { name = "e", command = "true", onlyif = "false" }',
        True,
        "run",
        "Would have executed via subscribe",
        [],
    ),
    (
        "triggered-beats-unless",
        'exec { name = "e", command = "true", unless = "true" }',
        True,
        "run",
        "Would have executed via subscribe",
        [],
    ),
    (
        "triggered-beats-refresh-only",
        'exec { name = "e", command = "true", refresh_only = true }',
        True,
        "run",
        "Would have executed via subscribe",
        [],
    ),
    (
        "triggered-beats-everything",
        'exec { name = "e", command = "true", creates = "~/marker", onlyif = "false", unless = "true", '
        "refresh_only = true }",
        True,
        "run",
        "Would have executed via subscribe",
        [],
    ),
    (
        "creates-exists",
        'exec { name = "e", command = "true", creates = "~/marker" }',
        False,
        "skip",
        None,
        ["marker exists"],
    ),
    (
        "creates-missing",
        'exec { name = "e", command = "true", creates = "~/missing" }',
        False,
        "run",
        "Would have executed",
        ["missing is missing"],
    ),
    (
        "creates-beats-guards",  # guards are not even run: this one could not start
        'exec { name = "e", command = "true", creates = "~/marker", onlyif = "no-such-command-xyz" }',
        False,
        "skip",
        None,
        ["marker exists"],
    ),
    (
        "onlyif-nonzero",
        'exec { name = "e", command = "true", onlyif = "false" }',
        False,
        "skip",
        None,
        ["onlyif"],
    ),
    (
        "onlyif-zero",
        'exec { name = "e", command = "true", onlyif = "true" }',
        False,
        "run",
        "Would have executed",
        [],
    ),
    (
        "unless-zero",
        'exec { name = "e", command = "true", unless = "true" }',
        False,
        "skip",
        None,
        ["unless"],
    ),
    (
        "unless-nonzero",
        'exec { name = "e", command = "true", unless = "false" }',
        False,
        "run",
        "Would have executed",
        [],
    ),
    (
        "onlyif-ok-unless-blocks",
        'exec { name = "e", command = "true", onlyif = "true", unless = "true" }',
        False,
        "skip",
        None,
        ["unless"],
    ),
    (
        "refresh-only-no-trigger",
        'exec { name = "e", command = "true", refresh_only = true }',
        False,
        "skip",
        None,
        ["refresh_only"],
    ),
    (
        "refresh-only-guards-pass",
        'exec { name = "e", command = "true", refresh_only = true, onlyif = "true" }',
        False,
        "skip",
        None,
        ["refresh_only"],
    ),
    (
        "guard-exit-code-2",
        'exec { name = "e", command = "true", onlyif = "sh -c \'exit 2\'" }',
        False,
        "skip",
        None,
        ["onlyif"],
    ),
    (
        "guard-cannot-start",
        'exec { name = "e", command = "true", onlyif = "no-such-command-xyz --flag" }',
        False,
        "fail",
        None,
        ["onlyif guard could not start", "no-such-command-xyz"],
    ),
    (
        "unless-cannot-start",
        'exec { name = "e", command = "true", unless = "/nonexistent/bin/guard" }',
        False,
        "fail",
        None,
        ["unless guard could not start", "/nonexistent/bin/guard"],
    ),
    (
        "guard-bad-quoting",
        'exec { name = "e", command = "true", onlyif = "test \'unterminated" }',
        False,
        "fail",
        None,
        ["onlyif guard could not start"],
    ),
    (
        "guard-not-executable",
        'exec { name = "e", command = "true", onlyif = "{HOME}/marker" }',
        False,
        "fail",
        None,
        ["onlyif guard could not start", "permission denied"],
    ),
    (
        "shell-provider-guard",
        'exec { name = "e", command = "true", provider = "shell", onlyif = "test -e ~/marker && test ! -e ~/missing" }',
        False,
        "run",
        "Would have executed",
        [],
    ),
]


@pytest.mark.parametrize(
    "decl,triggered,action,noop_message,reasons",
    [r[1:] for r in EXEC_ROWS],
    ids=[r[0] for r in EXEC_ROWS],
)
def test_exec_decision_table(sysenv, decl, triggered, action, noop_message, reasons):
    put(sysenv.home / "marker", "", 0o644)
    m = manifest_of(sysenv, decl.replace("{HOME}", str(sysenv.home)) + "\n", header=False)
    status, d = decide(sysenv, m, "exec#e", triggered=triggered)
    assert d.action == action, d
    assert d.noop_message == noop_message
    for text in reasons:
        assert text in d.reason, f"{text!r} not in {d.reason!r}"
    assert d.changes is (action == "run")
    assert d.symbol == {"run": "+", "skip": "=", "fail": "!"}[action]


def test_exec_status_fields(sysenv):
    put(sysenv.home / "marker")
    m = manifest_of(
        sysenv,
        'exec { name = "e", command = "true", creates = "~/marker" }\n'
        'exec { name = "g", command = "true", onlyif = "true", unless = "false" }\n'
        'exec { name = "n", command = "true" }\n',
        header=False,
    )
    s, _ = decide(sysenv, m, "exec#e")
    assert s.creates_satisfied is True and s.onlyif_satisfied is None and s.unless_satisfied is None
    s, _ = decide(sysenv, m, "exec#g")
    assert (
        s.creates_satisfied is False and s.onlyif_satisfied is True and s.unless_satisfied is False
    )
    s, _ = decide(sysenv, m, "exec#n")
    assert (s.creates_satisfied, s.onlyif_satisfied, s.unless_satisfied, s.error) == (
        False,
        None,
        None,
        None,
    )


def test_exec_dangling_symlink_counts_as_creates(sysenv):
    os.symlink(sysenv.home / "nowhere", sysenv.home / "link")
    m = manifest_of(
        sysenv, 'exec { name = "e", command = "true", creates = "~/link" }\n', header=False
    )
    _, d = decide(sysenv, m, "exec#e")
    assert d.action == "skip"


def test_guard_runs_in_the_exec_cwd(sysenv):
    here = mkdir(sysenv.work / "here")
    put(here / "flag")
    mkdir(sysenv.work / "there")
    decl = 'exec {{ name = "e", command = "true", cwd = "{cwd}", onlyif = "test -f flag" }}\n'
    m = manifest_of(sysenv, decl.format(cwd=here), header=False)
    assert decide(sysenv, m, "exec#e")[1].action == "run"
    m = manifest_of(sysenv, decl.format(cwd=sysenv.work / "there"), header=False)
    assert decide(sysenv, m, "exec#e")[1].action == "skip"


def test_guard_in_missing_cwd_cannot_start(sysenv):
    m = manifest_of(
        sysenv,
        f'exec {{ name = "e", command = "true", cwd = "{sysenv.work}/gone", onlyif = "true" }}\n',
        header=False,
    )
    _, d = decide(sysenv, m, "exec#e")
    assert d.action == "fail"
    assert (
        "onlyif guard could not start" in d.reason
        and "working directory does not exist" in d.reason
    )


def test_guard_sees_the_exec_environment(sysenv):
    decl = (
        'exec {{ name = "e", command = "true", environment = {{ "SYSLUA_T={value}", "OTHER=1" }}, '
        'unless = "sh -c \'test \\"$SYSLUA_T\\" = yes\'" }}\n'
    )
    m = manifest_of(sysenv, decl.format(value="yes"), header=False)
    assert decide(sysenv, m, "exec#e")[1].action == "skip"  # unless exits 0
    m = manifest_of(sysenv, decl.format(value="no"), header=False)
    assert decide(sysenv, m, "exec#e")[1].action == "run"
    # the environment is added to, not replaced: HOME is still there
    m = manifest_of(
        sysenv,
        'exec { name = "e", command = "true", environment = { "X=1" }, '
        'onlyif = "sh -c \'test -n \\"$HOME\\" && test \\"$X\\" = 1\'" }\n',
        header=False,
    )
    assert decide(sysenv, m, "exec#e")[1].action == "run"


def test_guard_uses_the_exec_path(sysenv):
    bindir = mkdir(sysenv.work / "bin")
    script = put(bindir / "my-guard-xyz", "#!/bin/sh\nexit 0\n", 0o755)
    assert os.stat(script).st_mode & stat.S_IXUSR
    with_path = (
        f'exec {{ name = "e", command = "true", path = "{bindir}:/usr/bin:/bin", '
        'onlyif = "my-guard-xyz" }\n'
    )
    m = manifest_of(sysenv, with_path, header=False)
    assert decide(sysenv, m, "exec#e")[1].action == "run"
    # without `path` the guard is not found: a failure with a message
    m = manifest_of(
        sysenv, 'exec { name = "e", command = "true", onlyif = "my-guard-xyz" }\n', header=False
    )
    _, d = decide(sysenv, m, "exec#e")
    assert d.action == "fail" and "command not found: my-guard-xyz" in d.reason
    # with a `path` that lacks it, neither
    m = manifest_of(
        sysenv,
        'exec { name = "e", command = "true", path = "/usr/bin:/bin", onlyif = "my-guard-xyz" }\n',
        header=False,
    )
    assert decide(sysenv, m, "exec#e")[1].action == "fail"


def test_guard_timeout_is_a_failure(sysenv):
    m = manifest_of(
        sysenv,
        'exec { name = "e", command = "true", timeout = "300ms", onlyif = "sleep 5" }\n',
        header=False,
    )
    _, d = decide(sysenv, m, "exec#e")
    assert d.action == "fail" and "timed out" in d.reason


def test_guard_runs_in_noop_and_changes_nothing_itself(sysenv):
    # a read-only guard runs even in noop (the decision depends on it)
    put(sysenv.home / "present")
    m = manifest_of(
        sysenv,
        'exec { name = "e", command = "touch ~/should-not-exist", provider = "shell", '
        'onlyif = "test -e ~/present" }\n',
        header=False,
    )
    _, d = decide(sysenv, m, "exec#e")
    assert d.action == "run"
    assert not (sysenv.home / "should-not-exist").exists()  # the command itself never ran


# ---------------------------------------------------------------------------
# apply (its children's outcome) and subscribe triggers through the planner
# ---------------------------------------------------------------------------


def test_apply_and_subscribe_rows_through_the_planner(sysenv):
    put(sysenv.home / "same", "same\n")
    sysenv.write("quiet.lua", HEADER + 'file { path = "~/same", content = "same\\n" }\n')
    sysenv.write(
        "busy.lua",
        HEADER + 'file { path = "~/new", content = "new\\n" }\n'
        'exec { name = "skip-me", command = "true", creates = "~/same" }\n',
    )
    sysenv.write(
        "broken.lua", 'exec { name = "bad-guard", command = "true", onlyif = "no-such-cmd-xyz" }\n'
    )
    m = manifest_of(
        sysenv,
        """\
apply { name = "quiet.lua" }
apply { name = "busy.lua" }
apply { name = "broken.lua" }
exec { name = "after-quiet", command = "true", refresh_only = true, subscribe = { "apply#quiet.lua" } }
exec { name = "after-busy", command = "true", refresh_only = true, subscribe = { "apply#busy.lua" } }
""",
        header=False,
    )
    before = tree(sysenv.home), tree(sysenv.root), tree(sysenv.work)
    plan = make_plan(m, Context(runner=Runner(), noop=True))
    assert (tree(sysenv.home), tree(sysenv.root), tree(sysenv.work)) == before
    by = {e.id: e.decision for e in plan.entries}
    w = sysenv.work
    assert by[f"apply#{w}/quiet.lua"].action == "none"
    assert by[f"apply#{w}/quiet.lua"].reason == "1 child resources unchanged"
    # a child applied for the first time runs (issue 23, point 2) ...
    assert by[f"apply#{w}/busy.lua"].action == "run"
    assert by[f"apply#{w}/busy.lua"].plan_line == "will run"
    assert by[f"apply#{w}/busy.lua"].message == "Would have run"
    # ... and updates once a snapshot has it
    again = make_plan(m, Context(runner=Runner(), noop=True), previous=m)
    busy = next(e.decision for e in again.entries if e.id == f"apply#{w}/busy.lua")
    assert busy.action == "update"
    assert busy.reason == "1 of 2 child resources"
    assert busy.plan_line == "will update (1 of 2 child resources)"
    assert busy.message == "Would have changed (1 of 2 child resources)"
    assert by[f"apply#{w}/broken.lua"].action == "fail"
    assert by[f"apply#{w}/broken.lua"].reason == "1 of 1 child resources failed"
    assert by["exec#after-quiet"].action == "skip"
    assert by["exec#after-busy"].action == "run"
    assert by["exec#after-busy"].noop_message == "Would have executed via subscribe"
