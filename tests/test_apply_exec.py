"""`sys apply` on exec items: real commands in temp dirs (seed exec-resource.md).

Every row of the seed's decision table runs for real, and the counts of how
often each command ran over several applies show the idempotency rules
(creates, onlyif, unless, refresh_only, subscribe). Then the execution
environment (posix argv without a shell vs the shell provider, command
defaulting to name, cwd, environment, path), post-execution validation
(returns, creates), timeouts that kill the whole process group, and output
(-v, logoutput).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from types import SimpleNamespace

import pytest
from conftest import HEADER, SysEnv, history, items, new_env, out, q, tree

from syslua.resources import process
from syslua.resources.process import OUTPUT_TAIL, tail


def current_id(sysenv: SysEnv) -> str:
    return next(h["id"] for h in history(sysenv) if h["current"])


# -- the decision table, over four runs ----------------------------------------
# row -> (extra properties, runs after: noop, apply 1, apply 2 (nothing changed), apply 3 (trigger changed))
TABLE: dict[str, tuple[str, tuple[int, int, int, int]]] = {
    "run_plain": ("", (0, 1, 2, 3)),
    "creates_exists": ("creates = EXISTS", (0, 0, 0, 0)),
    "creates_missing": ("creates = MADE", (0, 1, 1, 1)),
    "onlyif_fails": ('onlyif = "false"', (0, 0, 0, 0)),
    "onlyif_passes": ('onlyif = "true"', (0, 1, 2, 3)),
    "unless_passes": ('unless = "true"', (0, 0, 0, 0)),
    "unless_fails": ('unless = "false"', (0, 1, 2, 3)),
    "refresh_only_idle": ("refresh_only = true", (0, 0, 0, 0)),
    "refresh_only_triggered": ("refresh_only = true, subscribe = { trigger }", (0, 1, 1, 2)),
    "sub_over_creates": ("creates = EXISTS, subscribe = { trigger }", (0, 1, 1, 2)),
    "sub_over_onlyif": ('onlyif = "false", subscribe = { "file#~/trigger" }', (0, 1, 1, 2)),
    "sub_over_unless": ('unless = "true", subscribe = { trigger }', (0, 1, 1, 2)),
    "sub_over_refresh_creates": (
        "refresh_only = true, creates = EXISTS, subscribe = { trigger }",
        (0, 1, 1, 2),
    ),
    "sub_quiet_refresh_only": ("refresh_only = true, subscribe = { quiet }", (0, 0, 0, 0)),
    "sub_quiet_plain": ("subscribe = { quiet }", (0, 1, 2, 3)),
}


def table_config(env: SysEnv, trigger: str) -> str:
    ran, w = env.work / "ran", env.work
    lines = [
        HEADER,
        f'local trigger = file {{ path = "~/trigger", content = "{trigger}\\n" }}',
        'local quiet = file { path = "~/quiet", content = "quiet\\n" }',
    ]
    for name, (props, _) in TABLE.items():
        cmd = f"echo x >> {ran}/{name}"
        if name == "creates_missing":
            cmd += f"; touch {w}/made"
        props = props.replace("EXISTS", q(w / "exists")).replace("MADE", q(w / "made"))
        sep = ", " if props else ""
        lines.append(
            f'exec {{ name = "{name}", provider = "shell", command = {q(cmd)}{sep}{props} }}'
        )
    return "\n".join(lines) + "\n"


def ran_counts(env: SysEnv) -> dict[str, int]:
    d = env.work / "ran"
    return {
        name: len((d / name).read_text().splitlines()) if (d / name).exists() else 0
        for name in TABLE
    }


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    env = new_env(tmp_path_factory.mktemp("exec-table"))
    (env.work / "ran").mkdir()
    (env.work / "exists").write_text("")
    (env.home / "quiet").write_text("quiet\n")
    os.chmod(env.home / "quiet", 0o644)
    env.write("sys.lua", table_config(env, "v1"))
    counts = []
    runs = []

    def step(*args: str):  # type: ignore[no-untyped-def]
        def call():  # type: ignore[no-untyped-def]
            p = env.run("apply", *args)
            runs.append(p)
            counts.append(ran_counts(env))
            return p

        return call

    def retrigger():  # type: ignore[no-untyped-def]
        env.write("sys.lua", table_config(env, "v2"))

    for call in (
        step("--noop", "--json"),
        step("--json"),
        step("--json"),
        retrigger,
        step("--json"),
    ):
        call()
    return SimpleNamespace(
        env=env, noop=runs[0], first=runs[1], second=runs[2], third=runs[3], counts=counts
    )


def test_table_runs_succeed(table):
    for p in (table.noop, table.first, table.second, table.third):
        assert p.returncode == 0, out(p)


@pytest.mark.parametrize("row", list(TABLE))
def test_decision_table_row_runs_exactly_when_it_should(table, row):
    got = tuple(c[row] for c in table.counts)
    assert got == TABLE[row][1], f"{row}: ran {got} times after noop/apply/re-apply/retrigger"


@pytest.mark.parametrize("row", list(TABLE))
def test_decision_table_row_status(table, row):
    expected = TABLE[row][1]
    ran_first = expected[1] > expected[0]
    ev = items(table.first)[f"exec#{row}"]
    assert ev["status"] == ("changed" if ran_first else "unchanged"), ev
    noop_ev = items(table.noop)[f"exec#{row}"]
    assert noop_ev["status"] == ("noop" if ran_first else "unchanged"), noop_ev


@pytest.mark.parametrize(
    "row,reason",
    [
        ("creates_exists", "exists"),
        ("onlyif_fails", "onlyif guard exited non-zero"),
        ("unless_passes", "unless guard exited 0"),
        ("refresh_only_idle", "refresh_only"),
    ],
)
def test_skip_reasons(table, row, reason):
    assert reason in items(table.first)[f"exec#{row}"]["message"]


def test_noop_messages(table):
    evs = items(table.noop)
    assert evs["exec#run_plain"]["message"].startswith("Would have executed")
    assert evs["exec#refresh_only_triggered"]["message"].startswith(
        "Would have executed via subscribe"
    )
    assert evs["exec#sub_over_creates"]["message"].startswith("Would have executed via subscribe")


def test_subscribe_trigger_message_in_real_run(table):
    assert (
        "a subscribed item changed" in items(table.first)["exec#refresh_only_triggered"]["message"]
    )
    assert "a subscribed item changed" in items(table.third)["exec#sub_over_unless"]["message"]


def test_creates_file_made_by_the_command(table):
    assert (table.env.work / "made").exists()


# -- where and how commands run --------------------------------------------------
@pytest.fixture(scope="module")
def envrun(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    env = new_env(tmp_path_factory.mktemp("exec-env"))
    w = env.work
    (w / "cwdir").mkdir()
    tool = f"mytool-{uuid.uuid4().hex[:8]}"
    (w / "bin").mkdir()
    (w / "bin" / tool).write_text('#!/bin/sh\necho "tool ran with $1"\n')
    os.chmod(w / "bin" / tool, 0o755)
    env.write(
        "sys.lua",
        HEADER
        + f"""\
exec {{ name = "echo '$HOME'" }}
exec {{ name = "posix-quoting", command = "printf '%s|' 'a b' \\"c d\\" e" }}
exec {{ name = "posix-no-pipe", command = "echo hi '|' tr a-z A-Z" }}
exec {{ name = "shell-expands", provider = "shell", command = "echo $HOME" }}
exec {{ name = "shell-pipe", provider = "shell", command = "echo hi | tr a-z A-Z" }}
exec {{ name = "touch {w}/named-by-name" }}
exec {{ name = "cwd-pwd", command = "pwd", cwd = {q(w / "cwdir")} }}
exec {{ name = "cwd-touch", command = "touch relative.txt", cwd = {q(w / "cwdir")} }}
exec {{ name = "env-list", command = "sh -c 'echo \\"$GREETING|$OTHER|$HOME\\"'",
        environment = {{ "GREETING=hello world", "OTHER=x=y" }} }}
exec {{ name = "env-table", provider = "shell", command = "echo \\"$GREETING\\"", environment = {{ GREETING = "from a table" }} }}
exec {{ name = "path-lookup", command = "{tool} arg1", path = {q(str(w / "bin") + ":/usr/bin:/bin")} }}
exec {{ name = "path-is-PATH", provider = "shell", command = "echo \\"$PATH\\"", path = {q("/usr/bin:/bin:" + str(w / "bin"))} }}
""",
    )
    p = env.run("apply", "--json")
    return SimpleNamespace(env=env, p=p, ev=items(p), tool=tool)


def stdout_of(envrun, name: str) -> str:
    ev = envrun.ev[f"exec#{name}"]
    assert ev["status"] == "changed", ev
    return ev["stdout_tail"]


def test_envrun_succeeds(envrun):
    assert envrun.p.returncode == 0, out(envrun.p)


def test_posix_provider_does_not_expand_variables(envrun):
    # quoted, as an unquoted `$HOME` is a configuration error (test_shell_syntax.py)
    assert stdout_of(envrun, "echo '$HOME'") == "$HOME\n"


def test_posix_provider_splits_with_shell_quoting(envrun):
    assert stdout_of(envrun, "posix-quoting") == "a b|c d|e|"


def test_posix_provider_has_no_pipes(envrun):
    # a quoted pipe is just an argument of echo
    assert stdout_of(envrun, "posix-no-pipe") == "hi | tr a-z A-Z\n"


def test_shell_provider_expands_and_pipes(envrun):
    assert stdout_of(envrun, "shell-expands") == f"{envrun.env.home}\n"
    assert stdout_of(envrun, "shell-pipe") == "HI\n"


def test_command_defaults_to_name(envrun):
    assert (envrun.env.work / "named-by-name").is_file()


def test_cwd(envrun):
    cwdir = envrun.env.work / "cwdir"
    assert stdout_of(envrun, "cwd-pwd").strip() == str(cwdir.resolve())
    assert (cwdir / "relative.txt").is_file()
    assert not (envrun.env.work / "relative.txt").exists()


def test_environment_is_added_not_replacing(envrun):
    assert stdout_of(envrun, "env-list") == f"hello world|x=y|{envrun.env.home}\n"
    assert stdout_of(envrun, "env-table") == "from a table\n"


def test_path_is_used_for_lookup_and_is_the_commands_PATH(envrun):
    assert stdout_of(envrun, "path-lookup") == "tool ran with arg1\n"
    assert stdout_of(envrun, "path-is-PATH") == f"/usr/bin:/bin:{envrun.env.work / 'bin'}\n"


def test_without_path_the_tool_is_not_found(sysenv, envrun):
    sysenv.write("sys.lua", f'exec {{ name = "no-path", command = "{envrun.tool} arg1" }}\n')
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert f"command not found: {envrun.tool}" in p.stdout
    assert "Traceback" not in out(p)


# -- post-execution validation ----------------------------------------------------
def test_returns_and_creates_decide_success(sysenv):
    w = sysenv.work
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
exec {{ name = "exit3-accepted", command = "sh -c 'exit 3'", returns = {{ 0, 3 }} }}
exec {{ name = "creates-wins", command = "sh -c 'touch {w}/made; exit 7'", creates = {q(w / "made")} }}
exec {{ name = "exit0-no-creates", command = "true", creates = {q(w / "never")} }}
exec {{ name = "with-undo", command = "touch {w}/undo-target", undo = "rm -f {w}/undo-target" }}
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    ev = items(p)
    assert (
        ev["exec#exit3-accepted"]["status"] == "changed"
        and ev["exec#exit3-accepted"]["exit_code"] == 3
    )
    assert (
        ev["exec#creates-wins"]["status"] == "changed" and ev["exec#creates-wins"]["exit_code"] == 7
    )
    assert ev["exec#exit0-no-creates"]["status"] == "changed"
    # `undo` is accepted and stored; it does not run when the apply succeeds
    assert ev["exec#with-undo"]["status"] == "changed"
    assert (w / "undo-target").exists()
    assert (w / "made").exists() and not (w / "never").exists()


def test_exit_code_outside_returns_fails_with_code_and_stderr_tail(sysenv):
    sysenv.write(
        "sys.lua",
        """\
exec { name = "bad", provider = "shell", command = "echo step one; echo 'disk full on /var' >&2; exit 5", returns = { 0, 3 } }
""",
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "exec bad failed: desired state not reached: exit code 5 (expected 0, 3)" in p.stdout
    assert "disk full on /var" in p.stdout
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before


def test_exit_zero_outside_returns_fails(sysenv):
    sysenv.write("sys.lua", 'exec { name = "want-two", command = "true", returns = { 2 } }\n')
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    ev = items(p)["exec#want-two"]
    assert ev["status"] == "failed"
    assert ev["message"] == "desired state not reached: exit code 0 (expected 2)"


def test_stdout_and_stderr_tails_are_kept(sysenv):
    """The last 64 KiB of each stream are kept, in the report and in the snapshot."""
    # 20000 lines of 8 bytes (`out00001`...) and a 200 KiB line without newline on stderr
    sysenv.write(
        "sys.lua",
        """\
exec { name = "chatty", provider = "shell",
       command = "i=10000; while [ $i -lt 30000 ]; do echo out$i; i=$((i+1)); done; head -c 204800 /dev/zero | tr '\\\\0' e >&2" }
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    ev = items(p)["exec#chatty"]
    assert ev["stdout_tail"].splitlines()[-1] == "out29999"
    assert len(ev["stdout_tail"].encode()) == OUTPUT_TAIL
    assert "out10000\n" not in ev["stdout_tail"]  # only a tail is kept
    assert ev["stderr_tail"] == "e" * OUTPUT_TAIL
    snap = json.loads(
        (sysenv.root / "state" / "snapshots" / f"{current_id(sysenv)}.json").read_text()
    )
    kept = snap["items"]["exec#chatty"]
    assert kept["stdout"] == ev["stdout_tail"]
    assert kept["stderr"] == "e" * OUTPUT_TAIL


def test_output_tail_cuts_on_a_whole_character(monkeypatch):
    assert OUTPUT_TAIL == 64 * 1024
    monkeypatch.setattr(process, "OUTPUT_TAIL", 5)  # small cases read better
    assert tail("é" * 10) == "éé"  # 2-byte characters: the half at the front is dropped
    assert tail(b"abc") == "abc"


# -- timeout ------------------------------------------------------------------------
def test_timeout_kills_the_whole_process_group(sysenv):
    marker = f"syslua-bg-{uuid.uuid4().hex}"
    script = sysenv.work / f"{marker}.sh"
    pidfile = sysenv.work / "child.pid"
    # a background child, then the script waits on it: both must die at the timeout
    script.write_text('sleep 100 &\necho $! > "$1"\nwait\n')
    sysenv.write(
        "sys.lua", f'exec {{ name = "hangs", command = "sh {script} {pidfile}", timeout = "1s" }}\n'
    )
    start = time.monotonic()
    p = sysenv.run("apply")
    elapsed = time.monotonic() - start
    try:
        assert p.returncode == 1, out(p)
        assert "exec hangs failed: desired state not reached: timed out after 1s" in p.stdout
        assert "Traceback" not in out(p)
        assert elapsed < 30
        left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
        assert left.returncode == 1, f"processes left behind: {left.stdout}"
        child = int(pidfile.read_text())
        assert not _alive(child), f"background child {child} survived the timeout"
    finally:
        subprocess.run(["pkill", "-KILL", "-f", marker], capture_output=True)


def test_guard_timeout_message_states_the_timeout(sysenv):
    sysenv.write(
        "sys.lua",
        'exec { name = "guarded", command = "true", unless = "sleep 30", timeout = "500ms" }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "unless guard timed out after 0.5s" in p.stdout, p.stdout


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as dead)."""
    for _ in range(20):
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.1)
    return True


# -- output ---------------------------------------------------------------------------
def test_verbose_shows_command_output_and_default_does_not(sysenv):
    sysenv.write("sys.lua", 'exec { name = "speaks", command = "echo LOUD-MARKER-42" }\n')
    quiet = sysenv.run("apply")
    assert quiet.returncode == 0, out(quiet)
    assert "LOUD-MARKER-42" not in out(quiet)
    loud = sysenv.run("apply", "-v")
    assert loud.returncode == 0, out(loud)
    assert "stdout: LOUD-MARKER-42" in loud.stdout


def test_logoutput_shows_command_output_without_verbose(sysenv):
    sysenv.write(
        "sys.lua", 'exec { name = "speaks", command = "echo LOGGED-MARKER-7", logoutput = true }\n'
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert "LOGGED-MARKER-7" in out(p)


def test_failed_command_shows_its_stderr_without_verbose(sysenv):
    sysenv.write(
        "sys.lua",
        'exec { name = "oops", provider = "shell", command = "echo why-it-broke >&2; exit 1" }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 1
    assert "why-it-broke" in p.stdout
