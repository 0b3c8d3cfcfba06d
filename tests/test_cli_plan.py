"""`sys plan` through the real command line (SPEC sections 4, 8 and 9).

Every test runs the real `python -m syslua` in a temp HOME / SYSLUA_ROOT with
real Lua configs and real files; nothing is mocked. Bad input must exit 2
with one clear message (no traceback) and leave the machine untouched.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from conftest import HEADER, tree
from conftest import put as write_file

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def lines_of(text: str) -> list[str]:
    return [ln.rstrip() for ln in text.splitlines()]


def entry_line(stdout: str, symbol: str, subject: str) -> str:
    """The single plan line `  <symbol> <subject>: ...`; fails when absent or repeated."""
    prefix = f"  {symbol} {subject}:"
    found = [ln for ln in lines_of(stdout) if ln.startswith(prefix)]
    assert len(found) == 1, f"expected one line starting {prefix!r} in:\n{stdout}"
    return found[0]


def waves(stdout: str) -> list[tuple[list[str], bool]]:
    """[(labels, parallel?)] from the `Execution order:` block, in order."""
    out = []
    n = 0
    for ln in lines_of(stdout):
        m = re.fullmatch(r"  \[Wave (\d+)\] (.*?)( - parallel)?", ln)
        if m:
            n += 1
            assert int(m.group(1)) == n, f"waves out of order in:\n{stdout}"
            out.append(([x.strip() for x in m.group(2).split(", ")], bool(m.group(3))))
    return out


MIXED = (
    HEADER
    + """\
local d = file { path = "~/d", ensure = "directory", mode = "0755" }
file { path = "~/d/a", content = "hello\\n" }
file { path = "~/same", content = "same\\n" }
file { path = "~/chg", content = "new\\n" }
file { path = "~/gone", ensure = "absent" }
file { path = "~/never", ensure = "absent" }
exec { name = "true" }
exec { name = "echo hi", subscribe = { "file#~/d/a" }, refresh_only = true }
exec { name = "quiet", command = "true", refresh_only = true }
"""
)


@pytest.fixture
def mixed(sysenv):
    """A config with one item of every plan outcome, and the machine it meets."""
    sysenv.write("sys.lua", MIXED)
    write_file(sysenv.home / "same", "same\n")
    write_file(sysenv.home / "chg", "old\n", 0o640)
    write_file(sysenv.home / "gone", "bye\n")
    return sysenv


# ---------------------------------------------------------------------------
# plan output
# ---------------------------------------------------------------------------


def test_plan_lists_every_change_with_reasons_in_the_future(mixed):
    before_home, before_root = tree(mixed.home), tree(mixed.root)
    r = mixed.run("plan")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Traceback" not in r.stderr

    assert entry_line(out, "+", "file ~/d") == "  + file ~/d: will create"
    assert entry_line(out, "+", "file ~/d/a") == "  + file ~/d/a: will create"
    chg = entry_line(out, "~", "file ~/chg")
    assert chg.startswith("  ~ file ~/chg: will update (content changed, mode 0640 -> 0644)"), chg
    assert entry_line(out, "-", "file ~/gone").startswith("  - file ~/gone: will remove (")
    assert entry_line(out, "+", "exec true").startswith("  + exec true: will run")
    assert entry_line(out, "+", "exec echo hi").startswith(
        "  + exec echo hi: will run (a subscribed item changed)"
    )
    # Only what changes is listed; the rest is one count line.
    for unchanged in ("~/same", "~/never", "exec quiet"):
        assert unchanged not in out, out
    assert "\n  = 3 unchanged\n" in out, out
    assert "Would have" not in out

    # -v lists the unchanged items, each with its reason.
    v = mixed.run("plan", "-v").stdout
    assert entry_line(v, "=", "file ~/same").endswith(": unchanged")
    assert entry_line(v, "=", "file ~/never")  # absent and wanted absent: nothing to do
    quiet = entry_line(v, "=", "exec quiet")
    assert "refresh_only" in quiet and "will run" not in quiet
    assert "= 3 unchanged" not in v
    assert entry_line(v, "+", "file ~/d") == "  + file ~/d: will create"

    # A plan never changes the machine nor the state dir.
    assert tree(mixed.home) == before_home
    assert tree(mixed.root) == before_root


def test_apply_noop_keeps_the_seed_messages(mixed):
    """`sys apply --noop` speaks CCM's noop messages, exactly as the seeds write them."""
    before_home = tree(mixed.home)
    r = mixed.run("apply", "--noop")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = lines_of(r.stdout)

    def said(subject: str) -> str:
        found = [ln for ln in lines if re.match(rf"  \[\d+/6\] ~ {re.escape(subject)}: ", ln)]
        assert len(found) == 1, f"no noop line for {subject} in:\n{r.stdout}"
        return found[0].split(": ", 1)[1]

    assert said("file ~/d").startswith("Would have created directory")
    assert said("file ~/d/a").startswith("Would have created the file")
    assert said("file ~/chg").startswith("Would have updated the file (content changed")
    assert said("file ~/gone").startswith("Would have removed the file")
    assert said("exec true").startswith("Would have executed (")
    assert said("exec echo hi").startswith("Would have executed via subscribe")
    assert "will " not in r.stdout
    assert "Noop: 6 item(s) would change; nothing was changed." in r.stdout
    assert tree(mixed.home) == before_home


def test_plan_execution_order_waves(mixed):
    r = mixed.run("plan")
    assert r.returncode == 0, r.stderr
    assert "Execution order:" in r.stdout
    w = waves(r.stdout)
    assert len(w) == 3
    first, parallel = w[0]
    assert parallel
    # only the items that will run: not ~/same, ~/never (nothing to do) nor quiet (refresh_only)
    assert set(first) == {"true", "~/chg", "~/d", "~/gone"}
    # the file inside the declared directory waits for it; the subscriber waits for the file
    assert w[1] == (["~/d/a"], False)
    assert w[2] == (["echo hi"], False)
    # the exact seed format of a parallel wave
    assert re.search(r"^  \[Wave 1\] .+, .+ - parallel$", r.stdout, re.M)


def test_plan_without_diff_shows_no_diff_and_with_diff_shows_unified_diff(mixed):
    plain = mixed.run("plan")
    assert plain.returncode == 0
    assert "@@" not in plain.stdout and "+++" not in plain.stdout

    r = mixed.run("plan", "--diff")
    assert r.returncode == 0, r.stderr
    ls = [ln.strip() for ln in lines_of(r.stdout)]
    i = ls.index("--- ~/chg (current)")
    assert ls[i + 1] == "+++ ~/chg (desired)"
    assert ls[i + 2].startswith("@@ -1 +1 @@")
    assert "-old" in ls[i + 3 : i + 6] and "+new" in ls[i + 3 : i + 6]
    # a new file diffs against /dev/null
    j = ls.index("+++ ~/d/a (desired)")
    assert ls[j - 1] == "--- /dev/null"
    assert "+hello" in ls[j + 1 : j + 4]
    # an unchanged file gets no diff
    assert not any(x.startswith("+++ ~/same") for x in ls)


def test_plan_json_is_valid_json_on_stdout_and_logs_on_stderr(mixed):
    before_home = tree(mixed.home)
    r = mixed.run("plan", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)  # stdout is JSON and nothing else
    assert {"manifest", "plan", "waves"} <= set(data)
    assert re.fullmatch(r"[0-9a-f]{64}", data["manifest"]["digest"])
    ids = {i["type"] + "#" + i["key"] for i in data["manifest"]["items"]}
    assert f"file#{mixed.home}/chg" in ids and "exec#true" in ids
    by_id = {i["id"]: i for i in data["plan"]["items"]}
    assert by_id[f"file#{mixed.home}/d"]["action"] == "create"
    assert by_id[f"file#{mixed.home}/same"]["action"] == "none"
    assert by_id[f"file#{mixed.home}/gone"]["action"] == "remove"
    assert by_id[f"file#{mixed.home}/chg"]["action"] == "update"
    assert by_id["exec#echo hi"]["noop_message"] == "Would have executed via subscribe"
    assert data["plan"]["changes"] is True
    assert data["waves"][1] == [f"file#{mixed.home}/d/a"]
    assert data["waves"][2] == ["exec#echo hi"]
    # logs went to stderr, not into the JSON
    assert "Evaluating" in r.stderr
    assert "Evaluating" not in r.stdout and "Execution order" not in r.stdout
    assert tree(mixed.home) == before_home


def test_exit_code_4_with_pending_changes(mixed):
    r = mixed.run("plan", "--exit-code")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "Plan: " in r.stdout
    # also with --json; without the flag the same plan is a success (the other tests)
    r = mixed.run("plan", "--json", "--exit-code")
    assert r.returncode == 4
    assert json.loads(r.stdout)["plan"]["changes"] is True


def test_exit_code_0_when_converged_by_hand(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
file { path = "~/conf", ensure = "directory", mode = "0750" }
file { path = "~/conf/app.ini", content = "[app]\\nx = 1\\n", mode = "0600" }
file { path = "~/plain", content = "plain\\n" }
file { path = "~/nothing", ensure = "absent" }
exec { name = "marker", command = "false", creates = "~/conf/app.ini" }
exec { name = "guarded", command = "false", unless = "true" }
""",
    )
    (sysenv.home / "conf").mkdir()
    os.chmod(sysenv.home / "conf", 0o750)
    write_file(sysenv.home / "conf" / "app.ini", "[app]\nx = 1\n", 0o600)
    write_file(sysenv.home / "plain", "plain\n", 0o644)
    r = sysenv.run("plan", "--exit-code")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "No changes" in r.stdout
    assert "Plan: 0 to create, 0 to update, 0 to remove, 6 unchanged." in r.stdout

    # one byte of drift makes it pending again
    os.chmod(sysenv.home / "plain", 0o640)
    r = sysenv.run("plan", "--exit-code")
    assert r.returncode == 4
    assert "mode 0640 -> 0644" in entry_line(r.stdout, "~", "file ~/plain")


def test_exec_run_is_not_counted_as_an_update(sysenv):
    """The summary agrees with the lines above it: an exec that would run is `+`, not `~`."""
    sysenv.write("sys.lua", 'exec { name = "true" }\n')
    r = sysenv.run("plan")
    assert "  + exec true:" in r.stdout
    assert "0 to update" in r.stdout
    assert "1 to run" in r.stdout or "1 to create" in r.stdout


# ---------------------------------------------------------------------------
# finding the config
# ---------------------------------------------------------------------------


def test_config_defaults_to_local_sys_lua(sysenv):
    sysenv.write("sys.lua", 'exec { name = "from-work-dir", command = "true" }\n')
    user_cfg = sysenv.home / ".config" / "syslua" / "sys.lua"
    write_file(user_cfg, 'exec { name = "from-user-config", command = "true" }\n')
    r = sysenv.run("plan")
    assert r.returncode == 0, r.stderr
    assert "exec from-work-dir" in r.stdout
    assert "from-user-config" not in r.stdout


def test_config_falls_back_to_user_config(sysenv):
    user_cfg = sysenv.home / ".config" / "syslua" / "sys.lua"
    write_file(user_cfg, 'exec { name = "from-user-config", command = "true" }\n')
    assert not (sysenv.work / "sys.lua").exists()
    r = sysenv.run("plan")
    assert r.returncode == 0, r.stderr
    assert "exec from-user-config" in r.stdout


def test_explicit_config_argument_wins(sysenv):
    sysenv.write("sys.lua", 'exec { name = "default", command = "true" }\n')
    sysenv.write("other/machine.lua", 'exec { name = "explicit", command = "true" }\n')
    r = sysenv.run("plan", "other/machine.lua")
    assert r.returncode == 0, r.stderr
    assert "exec explicit" in r.stdout and "exec default" not in r.stdout


def test_missing_config_is_exit_2_with_clear_message(sysenv):
    before = tree(sysenv.home), tree(sysenv.root)
    r = sysenv.run("plan")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "no config file" in r.stderr
    assert "sys.lua" in r.stderr and "~/.config/syslua/sys.lua" in r.stderr
    assert r.stdout.strip() == ""
    assert (tree(sysenv.home), tree(sysenv.root)) == before


def test_missing_explicit_config_is_exit_2(sysenv):
    r = sysenv.run("plan", "nope.lua")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "config file not found" in r.stderr and "nope.lua" in r.stderr


def test_help_lists_every_command():
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "syslua", "--help"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    for cmd in (
        "apply",
        "plan",
        "rollback",
        "history",
        "status",
        "diff",
        "snapshot",
        "gc",
        "init",
        "env",
    ):
        assert re.search(rf"^\s*(│\s*)?{cmd}\b", r.stdout, re.M), (
            f"`{cmd}` missing from sys --help:\n{r.stdout}"
        )


# ---------------------------------------------------------------------------
# bad input (SPEC section 9): exit 2, one located message, nothing changed
# ---------------------------------------------------------------------------

# (id, files {name: text}, substrings expected in stderr, location expected or None)
BAD = [
    (
        "lua-error-call",
        {"sys.lua": HEADER + 'error("custom failure from config")\n'},
        ["custom failure from config", '  3 | error("custom failure from config")'],
        "sys.lua:3",
    ),
    (
        "lua-runtime",
        {"sys.lua": HEADER + "local t = nil\nlocal v = t.field\n"},
        ["attempt to index", "a nil value", "  4 | local v = t.field"],
        "sys.lua:4",
    ),
    (
        "unknown-property",
        {"sys.lua": HEADER + 'file { path = "~/x", contnet = "a" }\n'},
        ["unknown property `contnet`", "did you mean `content`?"],
        "sys.lua:3",
    ),
    (
        "mode-too-big",
        {"sys.lua": HEADER + 'file { path = "~/x", content = "a", mode = "4755" }\n'},
        ["mode 4755 exceeds maximum value 0777"],
        "sys.lua:3",
    ),
    (
        "mode-not-octal",
        {"sys.lua": HEADER + 'file { path = "~/x", content = "a", mode = "0698" }\n'},
        ["not a valid octal mode"],
        "sys.lua:3",
    ),
    (
        "relative-path",
        {"sys.lua": HEADER + 'file { path = "relative/x", content = "a" }\n'},
        ["file path must be absolute and clean"],
        "sys.lua:3",
    ),
    (
        "unclean-path",
        {"sys.lua": HEADER + 'file { path = "~/a/../x", content = "a" }\n'},
        ["file path must be absolute and clean"],
        "sys.lua:3",
    ),
    (
        "trailing-slash-path",
        {"sys.lua": HEADER + 'file { path = "~/dir/", ensure = "directory" }\n'},
        ["file path must be absolute and clean"],
        "sys.lua:3",
    ),
    (
        "content-and-source",
        {
            "sys.lua": HEADER + 'file { path = "~/x", content = "a", source = "src.txt" }\n',
            "src.txt": "s\n",
        },
        ["`content` and `source` are mutually exclusive"],
        "sys.lua:3",
    ),
    (
        "conflict",
        {
            "sys.lua": HEADER
            + 'file { path = "~/x", content = "one" }\nfile { path = "~/x", content = "two" }\n'
        },
        [
            "Conflicting values",
            '"one" (declared at sys.lua:3)',
            '"two" (declared at sys.lua:4)',
            "lib.mkForce",
        ],
        None,
    ),
    (
        "conflict-across-files",
        {
            "sys.lua": HEADER + 'env { EDITOR = "vim" }\napply { name = "child.lua" }\n',
            "child.lua": 'env { EDITOR = "emacs" }\n',
        },
        [
            "Conflicting values for env.EDITOR",
            '"vim" (declared at sys.lua:3)',
            '"emacs" (declared at child.lua:1)',
        ],
        None,
    ),
    (
        "dependency-cycle",
        {
            "sys.lua": HEADER
            + 'exec { name = "a", command = "true", depends_on = { "exec#b" } }\n'
            + 'exec { name = "b", command = "true", depends_on = { "exec#c" } }\n'
            + 'exec { name = "c", command = "true", depends_on = { "exec#a" } }\n'
        },
        # printed in execution order (a dependency before its dependent)
        [
            "cycle",
            "exec#a -> exec#c -> exec#b -> exec#a",
            "exec#a declared at sys.lua:3",
            "exec#b declared at sys.lua:4",
            "exec#c declared at sys.lua:5",
        ],
        None,
    ),
    (
        "subscribe-cycle",
        {
            "sys.lua": HEADER
            + 'file { path = "~/f", content = "x", subscribe = { "exec#e" } }\n'
            + 'exec { name = "e", command = "true", subscribe = { "file#~/f" } }\n'
        },
        ["cycle", "exec#e -> file#"],
        None,
    ),
    (
        "self-include",
        {"sys.lua": HEADER + 'apply { name = "sys.lua" }\n'},
        ["cycle", "sys.lua -> sys.lua"],
        "sys.lua:3",
    ),
    (
        "indirect-include-cycle",
        {
            "sys.lua": HEADER + 'apply { name = "a.lua" }\n',
            "a.lua": 'apply { name = "b.lua" }\n',
            "b.lua": 'apply { name = "a.lua" }\n',
        },
        ["cycle", "a.lua -> b.lua -> a.lua"],
        "b.lua:1",
    ),
    (
        "allow-apply-false",
        {
            "sys.lua": HEADER + 'apply { name = "child.lua", allow_apply = false }\n',
            "child.lua": 'exec { name = "in-child", command = "true" }\napply { name = "grandchild.lua" }\n',
            "grandchild.lua": 'exec { name = "gc", command = "true" }\n',
        },
        ["allow_apply"],
        "child.lua:2",
    ),
    (
        "missing-child",
        {"sys.lua": HEADER + 'apply { name = "nowhere.lua" }\n'},
        ["child manifest not found", "nowhere.lua"],
        "sys.lua:3",
    ),
    (
        "undeclared-dependency",
        {
            "sys.lua": HEADER
            + 'exec { name = "a", command = "true", depends_on = { "exec#ghost" } }\n'
        },
        ["exec#ghost", "not declared"],
        "sys.lua:3",
    ),
    (
        "missing-owner",
        {"sys.lua": 'file { path = "/srv/x", content = "a", mode = "0644", group = "0" }\n'},
        ["missing required property `owner`"],
        "sys.lua:1",
    ),
]


def chain(n: int) -> dict[str, str]:
    """sys.lua -> c1.lua -> ... -> cn.lua: n levels of real nesting."""
    files = {"sys.lua": HEADER + 'apply { name = "c1.lua" }\n'}
    for i in range(1, n + 1):
        body = f'exec {{ name = "level-{i}", command = "true" }}\n'
        if i < n:
            body += f'apply {{ name = "c{i + 1}.lua" }}\n'
        files[f"c{i}.lua"] = body
    return files


BAD.append(("depth-limit", chain(11), ["nesting depth 11 exceeds the limit of 10"], "c10.lua:2"))


# These also run with --json: the error still goes to stderr and stdout stays empty.
JSON_TOO = {"conflict", "depth-limit"}


@pytest.mark.parametrize("files,expected,location", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_exit_2_with_message_and_changes_nothing(
    sysenv, request, files, expected, location
):
    for name, text in files.items():
        sysenv.write(name, text)
    # something a valid config could have changed, to prove nothing was
    write_file(sysenv.home / "x", "original\n", 0o600)
    before = tree(sysenv.home), tree(sysenv.root)
    runs: list[tuple[str, ...]] = [("plan",)]
    if request.node.callspec.id in JSON_TOO:
        runs.append(("plan", "--json"))
    for args in runs:
        r = sysenv.run(*args)
        assert r.returncode == 2, f"{args}: rc={r.returncode}\n{r.stdout}\n{r.stderr}"
        assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
        for text in expected:
            assert text in r.stderr, f"{args}: {text!r} not in:\n{r.stderr}"
        if location:
            assert re.search(rf"(?<![\w/.]){re.escape(location)}\b", r.stderr), (
                f"{location} not in:\n{r.stderr}"
            )
        if "--json" in args:  # only the summary naming the reason (issue 23, point 8)
            summary = json.loads(r.stdout)
            assert summary["result"] == "refused" and summary["refused"] == "config_error"
        assert (tree(sysenv.home), tree(sysenv.root)) == before, f"{args} changed the machine"


def test_depth_limit_boundary_via_cli(sysenv):
    """Ten nested children are within the default limit (the --max-depth flag: test_children.py)."""
    for name, text in chain(10).items():
        sysenv.write(name, text)
    r = sysenv.run("plan")
    assert r.returncode == 0, r.stderr
    assert "exec level-10" in r.stdout
    # an apply reports on its direct children: an exec and the next apply
    # (on a first run, each runs: issue 23, point 2)
    assert "+ apply c1.lua: will run" in r.stdout
    assert "+ apply c10.lua: will run" in r.stdout
    assert waves(r.stdout)[-1] == (["c1.lua"], False)


def test_allow_apply_false_without_nested_apply_is_fine(sysenv):
    sysenv.write("sys.lua", HEADER + 'apply { name = "child.lua", allow_apply = false }\n')
    sysenv.write("child.lua", 'exec { name = "in-child", command = "true" }\n')
    r = sysenv.run("plan")
    assert r.returncode == 0, r.stderr
    assert entry_line(r.stdout, "+", "exec in-child").startswith("  + exec in-child: will run")


# Lua's own errors (syntax, runtime) are located by LuaJIT itself, from a chunk name
# that must survive a long directory (LuaJIT truncates long chunk names).
@pytest.mark.parametrize(
    "code,line,text",
    [
        (
            'file { path = "~/x", content = "a"\nexec { name = "true" }\n',
            2,
            'exec { name = "true" }',
        ),
        ("local t = nil\nlocal v = t.field\n", 2, "local v = t.field"),
    ],
    ids=["syntax", "runtime"],
)
def test_lua_error_location_under_a_long_directory(sysenv, code, line, text):
    before = tree(sysenv.home), tree(sysenv.root)
    deep = sysenv.work / "a-project-directory-with-a-long-name" / "and-some-nesting" / "config"
    deep.mkdir(parents=True)
    (deep / "sys.lua").write_text(code)
    r = sysenv.run("plan", cwd=deep)
    assert r.returncode == 2
    assert "Error: ..." not in r.stderr
    assert f"Error: sys.lua:{line}: " in r.stderr
    assert f"  {line} | {text}" in r.stderr
    assert "Traceback" not in r.stderr
    assert (tree(sysenv.home), tree(sysenv.root)) == before


def test_plan_shows_items_that_cannot_be_applied(sysenv):
    sysenv.write(
        "sys.lua", 'exec { name = "e", command = "true", onlyif = "no-such-command-xyz" }\n'
    )
    r = sysenv.run("plan")
    assert r.returncode == 1, r.stderr  # `sys apply` would refuse (issue 23)
    line = entry_line(r.stdout, "!", "exec e")
    assert "onlyif guard could not start" in line and "no-such-command-xyz" in line
    assert "1 cannot be applied" in r.stdout
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "decl",
    [
        'package { name = "rg", version = "1", source = lib.fetchUrl{ url = "http://127.0.0.1/x.tar.gz", '
        'sha256 = string.rep("a", 64) }, bin = { "bin/rg" } }\n',
        'user { name = "syslua-test-user" }\n',
    ],
    ids=["package", "user"],
)
def test_plan_with_package_or_user_declaration_does_not_crash(sysenv, decl):
    sysenv.write("sys.lua", decl + 'exec { name = "true" }\n')
    before = tree(sysenv.home), tree(sysenv.root)
    r = sysenv.run("plan")
    assert "Traceback" not in r.stderr
    assert r.returncode == 0, r.stderr
    assert "  + exec true:" in r.stdout
    kind = decl.split()[0]
    assert re.search(rf"^  \+ {kind} (rg|syslua-test-user)", r.stdout, re.M), r.stdout
    assert (tree(sysenv.home), tree(sysenv.root)) == before


def test_plain_output_never_wraps_or_truncates_long_paths(sysenv):
    deep = "/".join(["a-fairly-long-directory-name"] * 9)
    sysenv.write(
        "sys.lua",
        HEADER + f'file {{ path = "~/{deep}/file.txt", content = "x" }}\n'
        f'file {{ path = "~/{deep}", ensure = "directory", mode = "0755" }}\n',
    )
    r = sysenv.run("plan")
    assert r.returncode == 0, r.stderr
    line = entry_line(r.stdout, "+", f"file ~/{deep}/file.txt")
    assert len(line) > 250 and line.endswith(": will create")
    assert f"[Wave 2] ~/{deep}/file.txt" in r.stdout


def test_file_inside_a_directory_declared_absent_is_rejected(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER + 'file { path = "~/d", ensure = "absent" }\n'
        'file { path = "~/d/f", content = "x" }\n',
    )
    (sysenv.home / "d").mkdir()
    before = tree(sysenv.home), tree(sysenv.root)
    r = sysenv.run("plan")
    assert "Traceback" not in r.stderr
    assert (tree(sysenv.home), tree(sysenv.root)) == before
    # either a configuration error naming the inner file, or the inner file marked as impossible
    if r.returncode == 2:
        assert "/d/f" in r.stderr
    else:
        assert "  ! file ~/d/f:" in r.stdout, r.stdout
