"""Flags that work everywhere (issue 23, point 4): `-q`, `-v`/`-vv`,
`--no-color` and `--json` (`-o json`) before or after the command name, on
every command; `--dry-run` (also `--noop`) on every command that changes
something, changing nothing; `-vv`'s phase timings; `sys apply --help` in
two groups."""

from __future__ import annotations

import json
import re
import shutil

import click
import pytest
from conftest import HEADER, apply_ok, out, tree

from syslua.cli import app, click_app
from syslua.cli.argv import WHY_NOT, normalize
from syslua.errors import UsageError

# Each global flag as typed, and the parameter of a command that takes it.
FLAGS = {
    ("-q",): ("quiet", True),
    ("--quiet",): ("quiet", True),
    ("-v",): ("verbose", 1),
    ("-vv",): ("verbose", 2),
    ("--no-color",): ("no_color", True),
    ("--json",): ("json_", True),
    ("-o", "json"): ("json_", True),
    ("--output=json",): ("json_", True),
}
# Arguments each command needs to parse (not to run).
NEEDS = {
    "add": ["~/x"],
    "edit": ["~/x"],
    "import": ["stow", "~/x"],
    "snapshot tag": ["1", "good"],
    "snapshot delete": ["1"],
}
# Where a flag means something, a command must take it (docs/cli.md, "Global options").
CHANGES = {"apply", "rollback", "add", "destroy", "gc", "init", "pull", "update"}
EVALUATES = {"plan", "apply", "add", "init", "pull", "update"}


def commands() -> list[tuple[str, ...]]:
    """Every command `sys --help` lists, with snapshot's subcommands."""
    group = click_app(app)
    out: list[tuple[str, ...]] = []
    for name in group.commands:
        sub = group.commands[name]
        if isinstance(sub, click.Group):
            out += [(name, s) for s in sub.commands]
        else:
            out.append((name,))
    return out


def leaf(path: tuple[str, ...]) -> click.Command:
    command: click.Command = click_app(app)
    for word in path:
        assert isinstance(command, click.Group)
        command = command.commands[word]
    return command


def parsed(path: tuple[str, ...], args: list[str]) -> dict:
    """The parameters `args` (normalized) give the command `path`."""
    assert args[: len(path)] == list(path)
    return leaf(path).make_context(" ".join(path), args[len(path) :]).params


@pytest.mark.parametrize("path", commands(), ids=" ".join)
def test_each_global_flag_means_the_same_before_and_after_the_command(path) -> None:
    group = click_app(app)
    needs = NEEDS.get(" ".join(path), [])
    opts = {o for p in leaf(path).params for o in p.opts}
    taken = set()
    for flag, (param, value) in FLAGS.items():
        before, after = [*flag, *path, *needs], [*path, *flag, *needs]
        wanted = "--json" if flag[0] in ("-o", "--output=json") else flag[0]
        long = {"-q": "--quiet", "-v": "--verbose", "-vv": "--verbose"}.get(wanted, wanted)
        if wanted == "--json" and flag[0] != "--json" and "-o" in opts:
            # its own -o FILE (`sys age encrypt`): a file named json, in both positions
            got = [parsed(path, normalize(args, group)) for args in (before, after)]
            assert str(got[0]["output"]) == str(got[1]["output"]) == "json", (flag, got)
            continue
        if long not in opts:
            for args in (before, after):
                with pytest.raises(UsageError) as refused:
                    normalize(args, group)
                shown = flag[0].split("=")[0] if flag[0] != "-vv" else "-v"
                assert str(refused.value) == (
                    f"sys {' '.join(path)} has no {shown} option: {WHY_NOT[long]}"
                )
            continue
        taken.add(long)
        got = [parsed(path, normalize(args, group)) for args in (before, after)]
        assert got[0] == got[1], (flag, got)
        assert got[0][param] == value, (flag, got[0])
    name = " ".join(path)
    assert "--no-color" in taken, name
    if name in CHANGES:
        assert {"--quiet", "--json"} <= taken | ({"--json"} if name in ("init", "pull") else set())
    if name in EVALUATES:
        assert "--verbose" in taken, name


def test_flags_before_the_command_run_as_after(sysenv) -> None:
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n')
    for flags, command in (
        (["-v"], ["plan"]),
        (["--json"], ["plan"]),
        (["-o", "json", "-v"], ["plan"]),
        (["--no-color", "-q"], ["plan"]),
    ):
        first, second = sysenv.run(*flags, *command), sysenv.run(*command, *flags)
        assert first.returncode == second.returncode == 0, out(first) + out(second)
        if "json" in flags or "--json" in flags:  # the same document (its key order may differ)
            assert json.loads(first.stdout) == json.loads(second.stdout), flags
        else:
            assert first.stdout == second.stdout, (flags, out(first), out(second))
    p = sysenv.run("-q", "apply")
    assert p.returncode == 0 and p.stdout == "", out(p)
    assert (sysenv.home / "a.txt").read_text() == "a\n"
    p = sysenv.run("--json", "snapshot", "show")
    assert json.loads(p.stdout)["kind"] == "apply", out(p)
    p = sysenv.run("snapshot", "--json", "show")  # between the group and its command too
    assert json.loads(p.stdout)["kind"] == "apply", out(p)
    p = sysenv.run("-q", "status", "--json")
    assert p.returncode == 2, out(p)


def test_a_flag_a_command_does_not_take_is_refused_with_its_reason(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "a\\n" }\n')
    before = tree(sysenv.home), tree(sysenv.root)
    for args, line in (
        (
            ["--json", "env", "--append"],
            "sys env has no --json option: it has no machine-readable output",
        ),
        (
            ["env", "--append", "--json"],
            "sys env has no --json option: it has no machine-readable output",
        ),
        (["-v", "history"], "sys history has no -v option: it has no more detail to show"),
        (
            ["history", "-o", "json", "-v"],
            "sys history has no -v option: it has no more detail to show",
        ),
        (
            ["-q", "snapshot", "show"],
            "sys snapshot show has no -q option: it prints only what it is run for",
        ),
    ):
        p = sysenv.run(*args)
        assert p.returncode == 2, out(p)
        assert p.stderr == f"Error: {line}\n", out(p)
    assert (tree(sysenv.home), tree(sysenv.root)) == before
    # a value that looks like a flag is still a value
    p = sysenv.run("apply", "-m", "-v", "--dry-run")
    assert p.returncode == 0, out(p)


# -- --dry-run: another name for --noop, on every command that changes something --
CONFIG = HEADER + 'file { path = "~/a.txt", content = "a\\n" }\n'


def _same_after(sysenv, *args: str, says: str, code: int = 0) -> None:
    """`sys *args` with --dry-run and with --noop: exit `code`, `says` on stdout, nothing changed."""
    for flag in ("--dry-run", "--noop"):
        before = tree(sysenv.home), tree(sysenv.root), tree(sysenv.work)
        p = sysenv.run(*args, flag)
        assert p.returncode == code, out(p)
        assert says in p.stdout, out(p)
        assert (tree(sysenv.home), tree(sysenv.root), tree(sysenv.work)) == before, args


def test_dry_run_changes_nothing_on_apply_rollback_destroy_add_gc(sysenv) -> None:
    first = apply_ok(sysenv, 'file { path = "~/a.txt", content = "a\\n" }\n')
    sysenv.write("sys.lua", CONFIG.replace('"a\\n"', '"b\\n"'))
    _same_after(sysenv, "apply", says="~ file ~/a.txt")
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "b\\n" }\n')
    _same_after(sysenv, "rollback", first, says="~/a.txt")
    _same_after(sysenv, "destroy", says="~/a.txt")
    sysenv.write("dotfiles/b.txt", "b\n")
    apply_ok(sysenv, 'file { path = "~/b.txt", source = "dotfiles/b.txt" }\n')
    (sysenv.home / "b.txt").write_text("edited\n")
    _same_after(
        sysenv, "add", str(sysenv.home / "b.txt"), says="Without --dry-run, sys add would do this:"
    )
    (sysenv.home / "new.txt").write_text("new\n")
    _same_after(sysenv, "add", str(sysenv.home / "new.txt"), says="new.txt")
    _same_after(sysenv, "gc", "--keep", "0", says="Would remove 2 snapshot(s)")


def test_dry_run_of_init_writes_nothing(sysenv) -> None:
    target = sysenv.work / "dots"
    _same_after(sysenv, "init", str(target), says=f"  write: {target / 'sys.lua'}")
    assert not target.exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_dry_run_of_init_from_pull_and_update_changes_nothing(sysenv, tmp_path) -> None:
    from test_init_from import git, push

    bare = tmp_path / "dotfiles.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    author = tmp_path / "author"
    git("clone", "--quiet", bare.as_uri(), str(author), cwd=tmp_path)
    (author / "sys.lua").write_text(CONFIG)
    git("add", "sys.lua", cwd=author)
    git("commit", "--quiet", "-m", "first", cwd=author)
    git("push", "--quiet", "origin", "HEAD:main", cwd=author)
    git("symbolic-ref", "HEAD", "refs/heads/main", cwd=bare)
    clone = sysenv.work / "clone"
    _same_after(sysenv, "init", "--from", bare.as_uri(), str(clone), says="would clone", code=0)
    assert not clone.exists()
    assert sysenv.run("init", "--from", bare.as_uri(), str(clone)).returncode == 0
    _same_after(sysenv, "pull", str(clone), says="is up to date")
    push(author, CONFIG.replace('"a\\n"', '"c\\n"'), "second")
    _same_after(sysenv, "pull", str(clone), says="would fetch")
    _same_after(sysenv, "update", "--config", str(clone / "sys.lua"), says="declares no inputs")


def test_apply_dry_run_says_what_it_would_do(sysenv) -> None:
    sysenv.write("sys.lua", CONFIG)
    p = sysenv.run("apply", "--dry-run")
    assert p.returncode == 0, out(p)
    assert re.search(r"Noop: 1 item\(s\) would change; nothing was changed\.", p.stdout), out(p)
    assert not (sysenv.home / "a.txt").exists()


# -- -vv: the time of each phase, and what the evaluation read -----------------
def test_vv_times_each_phase_and_lists_the_files_read(sysenv) -> None:
    sysenv.write("lib.lua", "return 'a\\n'\n")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = require("lib") }\n')
    p = sysenv.run("-vv", "apply")
    assert p.returncode == 0, out(p)
    phases = re.findall(r"^Phase (\w+): \d+\.\d{3}s$", p.stderr, re.M)
    assert phases == ["evaluate", "merge", "plan", "run", "record"], p.stderr
    assert "Phase" not in p.stdout
    read = p.stderr.split("Evaluation read 2 file(s):\n", 1)[1].splitlines()[:2]
    assert sorted(read) == sorted(f"  {sysenv.work / n}" for n in ("lib.lua", "sys.lua")), p.stderr
    p = sysenv.run("plan", "-vv", "--no-cache")
    assert re.findall(r"^Phase (\w+):", p.stderr, re.M) == ["evaluate", "merge", "plan"]
    p = sysenv.run("plan", "-v")
    assert "Phase" not in out(p) and "Evaluation read" not in out(p)


# -- sys apply --help: the options people use first, then compatibility ones ----
def test_apply_help_lists_compatibility_options_in_their_own_group(sysenv) -> None:
    p = sysenv.run("apply", "--help")
    assert p.returncode == 0, out(p)
    main, _, compat = p.stdout.partition("\nCompatibility options:\n")
    assert compat, p.stdout

    def listed(text: str) -> set[str]:  # the options a help section lists
        found = re.findall(r"^  (-[^ ].*?)(?:  |$)", text, re.M)
        return {o.strip().split(" ")[0] for line in found for o in line.split(", ")}

    assert listed(compat) == {"--monitor-only", "--repair", "--max-depth"}
    assert {"--health-check-only", "--dry-run", "--message", "--force", "--json"} <= listed(main)
    options = main.split("\nOptions:\n", 1)[1]
    assert options.index("--message") < options.index("--noop") < options.index("--wait")
    sysenv.write("sys.lua", CONFIG)
    p = sysenv.run("apply", "--monitor-only")
    assert p.returncode == 0 and not (sysenv.home / "a.txt").exists(), out(p)
