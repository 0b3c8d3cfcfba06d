"""`sys apply` as a command: executor, output, exit codes, bad input, the example.

- the ready-queue executor: `--jobs 1` and `--jobs 8` converge to the same
  machine; an item starts as soon as its own dependencies finished (not a
  whole wave); dependents of a failed item are skipped with the reason;
- output: plain lines with ✓ / ✗ and a summary table, `--json` events only on
  stdout, `-q`, NO_COLOR / --no-color (also on a real pseudo-terminal);
- exit codes 0 / 1 / 2;
- the bad input and faults of the issue, each a clear message naming the item,
  no traceback, the home tree unchanged;
- the bundled laptop example applies for real and then reports no changes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HEADER, ROOT, SysEnv, new_env, out, tree
from ptyrun import run_in_pty

IS_ROOT = os.geteuid() == 0


# strict on purpose, unlike conftest.events/items: every stdout line of `--json` must be JSON
def events(p) -> list[dict]:  # type: ignore[no-untyped-def]
    return [json.loads(line) for line in p.stdout.splitlines()]


def items(p) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {e["id"]: e for e in events(p) if e.get("event") == "item"}


def second_env(tmp_path: Path) -> SysEnv:
    return new_env(tmp_path / "second")


# -- the executor -------------------------------------------------------------------
MIXED = (
    HEADER
    + """\
local cfg = file { path = "~/.config/app", ensure = "directory", mode = "0755" }
for i = 1, 6 do
  file { path = "~/.config/app/part" .. i .. ".conf", content = "part " .. i .. "\\n", depends_on = { cfg } }
end
local rc = file { path = "~/.apprc", content = "include ~/.config/app\\n", mode = "0600" }
local gen = exec { name = "generate", provider = "shell", command = "sleep 0.1; cat $HOME/.apprc > $HOME/.config/app/generated",
                   creates = "~/.config/app/generated", depends_on = { rc, cfg } }
exec { name = "index", provider = "shell", command = "ls $HOME/.config/app | sort > $HOME/index.txt",
       creates = "~/index.txt", depends_on = { gen, "file#~/.config/app/part6.conf" } }
for i = 1, 3 do
  exec { name = "slow" .. i, provider = "shell", command = "sleep 0.1; echo " .. i .. " > $HOME/slow" .. i,
         creates = "~/slow" .. i }
end
"""
)


def test_jobs_1_and_jobs_8_give_the_same_end_state(sysenv, tmp_path):
    other = second_env(tmp_path)
    for env, jobs in ((sysenv, "1"), (other, "8")):
        env.write("sys.lua", MIXED)
        p = env.run("apply", "--jobs", jobs, "--json")
        assert p.returncode == 0, out(p)
        assert events(p)[-1]["counts"]["changed"] == 13, events(p)[-1]
    assert tree(sysenv.home) == tree(other.home)
    assert (sysenv.home / "index.txt").read_text() == "generated\n" + "".join(
        f"part{i}.conf\n" for i in range(1, 7)
    )
    for env in (sysenv, other):
        again = env.run("apply")
        assert again.returncode == 0 and "No changes" in again.stdout, out(again)


def test_an_item_starts_when_its_own_dependencies_finish(sysenv):
    """A ready queue, not waves: `after_fast` need not wait for `slow`, `after_slow` must."""
    t = sysenv.work
    stamp = "date +%s.%N >"
    sysenv.write(
        "sys.lua",
        f"""\
local slow = exec {{ name = "slow", provider = "shell", command = "{stamp} {t}/slow.start; sleep 1; {stamp} {t}/slow.end" }}
local fast = exec {{ name = "fast", provider = "shell", command = "{stamp} {t}/fast.end" }}
exec {{ name = "after_fast", provider = "shell", command = "{stamp} {t}/after_fast.start", depends_on = {{ fast }} }}
exec {{ name = "after_slow", provider = "shell", command = "{stamp} {t}/after_slow.start", depends_on = {{ slow }} }}
""",
    )
    p = sysenv.run("apply", "--jobs", "4")
    assert p.returncode == 0, out(p)

    def at(name: str) -> float:
        return float((t / name).read_text())

    assert at("after_slow.start") >= at("slow.end")
    assert at("after_fast.start") >= at("fast.end")
    assert at("after_fast.start") < at("slow.end"), (
        "after_fast waited for an item it does not depend on"
    )


def test_jobs_1_runs_one_command_at_a_time(sysenv):
    t = sysenv.work
    sysenv.write(
        "sys.lua",
        "".join(
            f'exec {{ name = "s{i}", provider = "shell", command = "date +%s.%N > {t}/s{i}.a; sleep 0.15; date +%s.%N > {t}/s{i}.b" }}\n'
            for i in range(3)
        ),
    )
    p = sysenv.run("apply", "--jobs", "1")
    assert p.returncode == 0, out(p)
    spans = sorted(
        (float((t / f"s{i}.a").read_text()), float((t / f"s{i}.b").read_text())) for i in range(3)
    )
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, spans


def test_independent_commands_run_in_parallel(sysenv):
    sysenv.write(
        "sys.lua",
        "".join(f'exec {{ name = "sleep{i}", command = "sleep 0.5" }}\n' for i in range(8)),
    )
    p = sysenv.run("apply", "--jobs", "8", "--json")
    assert p.returncode == 0, out(p)
    summary = events(p)[-1]
    assert summary["counts"]["changed"] == 8
    assert summary["duration"] < 2.5, summary  # 8 x 0.5 s one after another would be 4 s


def test_dependents_of_a_failed_item_are_skipped_with_the_reason(sysenv):
    t = sysenv.work
    sysenv.write(
        "sys.lua",
        f"""\
local bad = exec {{ name = "bad", command = "false" }}
local mid = exec {{ name = "mid", command = "touch {t}/mid", depends_on = {{ bad }} }}
exec {{ name = "leaf", command = "touch {t}/leaf", depends_on = {{ mid }} }}
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 1, out(p)
    ev = items(p)
    assert ev["exec#bad"]["status"] == "failed"
    assert (
        ev["exec#mid"]["status"] == "skipped"
        and ev["exec#mid"]["message"] == "skipped because exec#bad failed"
    )
    assert (
        ev["exec#leaf"]["status"] == "skipped"
        and "skipped because exec#bad failed" in ev["exec#leaf"]["message"]
    )
    assert not (t / "mid").exists() and not (t / "leaf").exists()
    assert events(p)[-1]["counts"]["skipped"] == 2


# -- output ------------------------------------------------------------------------
def test_plain_output_marks_and_summary_table(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
file { path = "~/good.txt", content = "g\\n" }
local bad = exec { name = "bad", provider = "shell", command = "echo nope >&2; exit 4" }
exec { name = "after-bad", command = "true", depends_on = { bad } }
""",
    )
    # Both are ready at once and both start (8 workers); after `bad` fails nothing new starts.
    p = sysenv.run("apply", "--jobs", "8")
    assert p.returncode == 1, out(p)
    lines = p.stdout.splitlines()
    assert any("✓ file ~/good.txt: created" in ln for ln in lines), p.stdout
    assert any("✗ exec bad: desired state not reached: exit code 4" in ln for ln in lines), p.stdout
    assert any("exec after-bad: skipped because exec#bad failed" in ln for ln in lines), p.stdout
    # What changed was undone: the table counts it as rolled back, never as changed.
    header = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["rolled", "back"])
    assert re.split(r"\s{2,}", lines[header].strip()) == [
        "rolled back",
        "unchanged",
        "failed",
        "skipped",
        "duration",
    ]
    assert not any(ln.split()[:1] == ["changed"] for ln in lines), p.stdout
    values = lines[header + 1].split()
    assert values[:4] == ["1", "0", "1", "1"] and re.fullmatch(r"\d+\.\d\ds", values[4]), values
    assert lines[-1] == "Apply failed. System unchanged.", p.stdout


def test_plain_success_output(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER + 'file { path = "~/a", content = "a" }\nexec { name = "e", command = "true" }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert "✓ file ~/a: created" in p.stdout and "✓ exec e: executed" in p.stdout
    assert "✗" not in p.stdout
    assert re.search(r"Apply complete: snapshot \S+\.", p.stdout)


def test_plain_output_never_wraps_long_paths(sysenv):
    deep = "/".join(["a-rather-long-directory-name"] * 8)
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/{deep}", ensure = "directory", mode = "0755" }}
file {{ path = "~/{deep}/file-with-a-long-name.txt", content = "x", depends_on = {{ "file#~/{deep}" }} }}
""",
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert f"✓ file ~/{deep}/file-with-a-long-name.txt: created" in p.stdout


@pytest.mark.parametrize("fail", [False, True], ids=["ok", "failed"])
def test_json_is_one_object_per_line_and_nothing_else(sysenv, fail):
    sysenv.write(
        "sys.lua",
        HEADER
        + f"""\
file {{ path = "~/a", content = "a" }}
exec {{ name = "e", command = "{"false" if fail else "true"}" }}
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == (1 if fail else 0), out(p)
    evs = events(p)  # raises if any stdout line is not JSON
    assert all(isinstance(e, dict) and "event" in e for e in evs)
    item_evs = [e for e in evs if e["event"] == "item"]
    assert {e["id"] for e in item_evs} == {f"file#{sysenv.home}/a", "exec#e"}
    assert all({"id", "status", "type", "message", "duration"} <= set(e) for e in item_evs)
    assert evs[-1]["event"] == "summary"
    assert [e["event"] for e in evs].count("summary") == 1
    assert evs[-1]["result"] == ("failed" if fail else "ok")
    # logs went to stderr, not stdout
    assert "Evaluating" in p.stderr and "Evaluating" not in p.stdout


def test_json_no_changes_run(sysenv):
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a", content = "a" }\n')
    assert sysenv.run("apply").returncode == 0
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    summary = events(p)[-1]
    assert summary["event"] == "summary" and summary["no_changes"] is True


def test_quiet_prints_nothing_on_success(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER + 'file { path = "~/a", content = "a" }\nexec { name = "e", command = "echo hi" }\n',
    )
    p = sysenv.run("apply", "-q")
    assert p.returncode == 0, out(p)
    assert p.stdout == "" and p.stderr == ""
    assert (sysenv.home / "a").exists()


def test_quiet_still_reports_errors(sysenv):
    sysenv.write("sys.lua", 'exec { name = "bad", command = "false" }\n')
    p = sysenv.run("apply", "-q")
    assert p.returncode == 1
    assert "exec bad" in out(p) and "exit code 1" in out(p)


ESC = "\x1b"


@pytest.mark.parametrize("args", [(), ("--no-color",)], ids=["NO_COLOR", "--no-color"])
def test_no_color_output_has_no_escapes(sysenv, args):
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
file { path = "~/a", content = "a" }
exec { name = "bad", command = "false", depends_on = { "file#~/a" } }
""",
    )
    env = sysenv.env
    if args:
        env.pop("NO_COLOR", None)
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "apply", *args],
        cwd=sysenv.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 1
    assert ESC not in p.stdout and ESC not in p.stderr


def _run_on_pty(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    code, data, _ = run_in_pty(argv, env=env, cwd=cwd)
    return code, data.decode("utf-8", "replace")


def _colour_codes(text: str) -> list[str]:
    """SGR sequences that set a colour (foreground or background)."""
    found = []
    for params in re.findall(r"\x1b\[([0-9;]*)m", text):
        for p in params.split(";"):
            if p and (30 <= int(p) <= 49 or 90 <= int(p) <= 107):
                found.append(params)
                break
    return found


def test_no_color_on_a_terminal_has_no_colour_codes(sysenv, tmp_path):
    config = (
        HEADER + 'file { path = "~/a", content = "a" }\nexec { name = "e", command = "true" }\n'
    )
    argv = [sys.executable, "-m", "syslua", "apply"]
    # with colours allowed, the terminal output is coloured (so the check below means something)
    other = second_env(tmp_path)
    other.write("sys.lua", config)
    env = {**other.env, "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    rc, text = _run_on_pty(argv, env, other.work)
    assert rc == 0, text
    assert _colour_codes(text), text
    sysenv.write("sys.lua", config)
    rc, text = _run_on_pty(
        argv, {**sysenv.env, "TERM": "xterm-256color", "NO_COLOR": "1"}, sysenv.work
    )
    assert rc == 0, text
    assert "Apply complete" in text
    assert _colour_codes(text) == [], text
    # --no-color does the same without the variable
    third = second_env(tmp_path / "third")
    third.write("sys.lua", config)
    env = {**third.env, "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    rc, text = _run_on_pty(argv + ["--no-color"], env, third.work)
    assert rc == 0, text
    assert "Apply complete" in text
    assert _colour_codes(text) == [], text


# -- exit codes ----------------------------------------------------------------------
def test_exit_1_when_an_item_failed(sysenv):
    sysenv.write("sys.lua", 'exec { name = "bad", command = "false" }\n')
    assert sysenv.run("apply").returncode == 1


@pytest.mark.parametrize(
    "body,needle",
    [
        ('file { path = "~/a", content = "a" }\nfile { path = "~/b", contnet = "b" }\n', "content"),
        (
            'file { path = "~/a", content = "a" }\nfile { path = "~/b", content = "b", mode = "4755" }\n',
            "mode 4755 exceeds maximum value 0777",
        ),
        (
            'file { path = "~/a", content = "a" }\nfile { path = "~/b", content = "b", source = "x" }\n',
            "mutually exclusive",
        ),
        (
            'file { path = "~/a", content = "a" }\nexec { name = "e", command = "true", timeout = "soon" }\n',
            "duration",
        ),
        ('file { path = "~/a", content = "a" \n', "expected"),
    ],
    ids=["unknown-property", "mode", "content-and-source", "timeout", "lua-syntax"],
)
def test_exit_2_for_config_errors_and_nothing_changes(sysenv, body, needle):
    sysenv.write("sys.lua", HEADER + body)
    home, root = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert needle in p.stderr
    assert re.search(r"sys\.lua:\d+", p.stderr), p.stderr
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == home and tree(sysenv.root) == root
    assert not (sysenv.home / "a").exists()


# -- bad input and faults ------------------------------------------------------------
def _unreadable(sysenv) -> None:  # type: ignore[no-untyped-def]
    src = sysenv.work / "secret.txt"
    src.write_text("secret\n")
    os.chmod(src, 0)


def _looping_source(sysenv) -> None:  # type: ignore[no-untyped-def]
    os.symlink("loop.txt", sysenv.work / "loop.txt")  # stat fails with ELOOP


def _dir_in_the_way(sysenv) -> None:  # type: ignore[no-untyped-def]
    (sysenv.home / "cfg").mkdir()
    (sysenv.home / "cfg" / "inside").write_text("mine\n")


def _file_in_the_way(sysenv):
    (sysenv.home / "no").write_text("a file where a directory would be created\n")


FAULTS = [
    # id, setup, declaration, subject named in the message, expected text
    (
        "missing-source",
        None,
        'file { path = "~/x", source = "no-such-file.txt" }',
        "file ~/x",
        "source file not found",
    ),
    (
        "looping-source",
        _looping_source,
        'file { path = "~/x", source = "loop.txt" }',
        "file ~/x",
        "source file not found",
    ),
    (
        "unreadable-source",
        _unreadable,
        'file { path = "~/x", source = "secret.txt" }',
        "file ~/x",
        "cannot read source file",
    ),
    (
        "parent-is-a-file",
        _file_in_the_way,
        'file { path = "~/no/such/dir/x", content = "x" }',
        "file ~/no/such/dir/x",
        "~/no is not a directory, so ~/no/such/dir/x cannot be created",
    ),
    (
        "directory-in-the-way",
        _dir_in_the_way,
        'file { path = "~/cfg", content = "x" }',
        "file ~/cfg",
        "a directory exists where a file is wanted",
    ),
    (
        "no-such-owner",
        None,
        'file { path = "~/x", content = "x", owner = "no-such-user-zz" }',
        "file ~/x",
        "owner `no-such-user-zz` does not exist",
    ),
    (
        "no-such-group",
        None,
        'file { path = "~/x", content = "x", group = "no-such-group-zz" }',
        "file ~/x",
        "group `no-such-group-zz` does not exist",
    ),
    (
        "command-not-found",
        None,
        'exec { name = "tool", command = "no-such-command-zz --flag" }',
        "exec tool",
        "command not found: no-such-command-zz",
    ),
    (
        "missing-cwd",
        None,
        'exec { name = "tool", command = "true", cwd = "/no/such/dir-zz" }',
        "exec tool",
        "working directory does not exist: /no/such/dir-zz",
    ),
    (
        "guard-cannot-start",
        None,
        'exec { name = "guarded", command = "true", onlyif = "no-such-guard-zz" }',
        "exec guarded",
        "onlyif guard could not start: command not found: no-such-guard-zz",
    ),
    (
        "guard-timeout",
        None,
        'exec { name = "guarded", command = "true", unless = "sleep 30", timeout = "500ms" }',
        "exec guarded",
        "unless guard timed out",
    ),
    (
        "timeout",
        None,
        'exec { name = "hangs", command = "sleep 30", timeout = "500ms" }',
        "exec hangs",
        "desired state not reached: timed out after 0.5s",
    ),
    (
        "exit-code",
        None,
        'exec { name = "bad", provider = "shell", command = "echo it broke >&2; exit 3" }',
        "exec bad",
        "desired state not reached: exit code 3 (expected 0)",
    ),
    (
        "health-critical",
        None,
        'file { path = "~/x", content = "x", health_checks = { { command = "sh -c \'echo down; exit 2\'", name = "svc" } } }',
        "file ~/x",
        "health check svc: CRITICAL (down)",
    ),
]


@pytest.mark.parametrize(
    "setup,decl,subject,expected", [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS]
)
def test_faults_fail_cleanly_naming_the_item(sysenv, setup, decl, subject, expected):
    if setup is _unreadable and IS_ROOT:
        pytest.skip("root can read a mode-000 file")
    if setup is not None:
        setup(sysenv)
    (sysenv.home / "keep.txt").write_text("keep\n")
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/sibling.txt", content = "s\\n" }\n' + decl + "\n"
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--jobs", "1")
    text = out(p)
    assert p.returncode == 1, text
    assert "Traceback" not in text
    if "Refusing to apply" in p.stdout:
        # the plan marked it `!`: refused before anything ran (issue 23, point 1)
        assert f"  {subject}: {expected}" in p.stdout, text
        assert "Nothing was changed." in p.stdout
    else:
        assert f"{subject} failed: {expected}" in p.stdout, text
        assert "Apply failed. System unchanged." in p.stdout
    assert tree(sysenv.home) == before


# -- the bundled example -----------------------------------------------------------------
def test_laptop_example_applies_for_real_then_reports_no_changes(sysenv):
    example = sysenv.work / "laptop"
    shutil.copytree(ROOT / "examples" / "laptop", example)
    p = sysenv.run("apply", "laptop/sys.lua")
    assert p.returncode == 0, out(p)
    assert "Apply complete" in p.stdout
    h = sysenv.home
    aliases = (example / "dotfiles" / "aliases.sh").read_text()
    assert (h / ".bashrc").read_text() == aliases
    assert os.stat(h / ".bashrc").st_mode & 0o777 == 0o600
    assert (h / ".zshrc").read_text().startswith(aliases)
    assert (
        "[user]\n\tname = Ada Lovelace\n\temail = ada@example.org\n"
        in (h / ".gitconfig").read_text()
    )
    assert (h / ".config" / "nvim").is_dir()
    assert (h / ".config" / "nvim" / "init.lua").read_bytes() == (
        example / "dotfiles" / "init.lua"
    ).read_bytes()
    assert "PROMPT_COLOR=cyan" in (h / ".config" / "syslua-example" / "prompt.zsh").read_text()
    assert (h / ".local" / "state" / "zsh" / ".ready").exists()
    env_sh = (sysenv.root / "state" / "env.sh").read_text()
    assert "EDITOR='nvim'" in env_sh and f"{h}/.local/bin" in env_sh
    after = tree(h)
    again = sysenv.run("apply", "laptop/sys.lua")
    assert again.returncode == 0, out(again)
    assert "No changes" in again.stdout
    assert tree(h) == after
