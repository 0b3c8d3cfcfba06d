"""`sys import FORMAT SOURCE` itself (issue 24, point 1), whatever the format.

The command line is checked before the repository is read: an unknown
FORMAT, a SOURCE that does not exist, a `sys.lua` already there (never
overwritten without `--force`), a `sys.lua.orig` that `--force` would
replace, or `--to` naming a file are refused (exit 2), with nothing
written. Then, through the `mirror` format (the simplest; these tests run
once its module exists): the `sys.lua` is written at the top of SOURCE or
in `--to DIR`, the old one kept as `sys.lua.orig` with `--force`, and
`--dry-run` prints the `sys.lua` and the plan, the same plan the written
file gives, and writes nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import ok, out, put, tree

FORMATS = "stow, dotbot, chezmoi, rcm, yadm, mirror"
OLD = "-- my own sys.lua\n"


def refused(sysenv, *args: str) -> str:  # type: ignore[no-untyped-def]
    """`sys import ARGS`: exit 2, no traceback, the home and state untouched; its stderr."""
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("import", *args, cwd=sysenv.home)
    assert p.returncode == 2, out(p)
    assert "Traceback" not in out(p)
    assert (tree(sysenv.home), tree(sysenv.root)) == before
    return str(p.stderr)


def repo(sysenv) -> Path:  # type: ignore[no-untyped-def]
    """~/dotfiles mirroring a home: a `.bashrc` and a `.config/nvim` tree."""
    top = sysenv.home / "dotfiles"
    put(top / ".bashrc", "set -o vi\n")
    put(top / ".config" / "nvim" / "init.lua", "vim.opt.number = true\n")
    return top


# -- refused before anything is read ----------------------------------------------------
@pytest.mark.parametrize("fmt", ["nix", "Stow", "--"])
def test_an_unknown_format_is_refused(sysenv, fmt: str) -> None:
    repo(sysenv)
    args = [fmt, "~/dotfiles"] if fmt != "--" else ["--", "-x", "~/dotfiles"]
    err = refused(sysenv, *[a.replace("~", str(sysenv.home)) for a in args])
    name = fmt if fmt != "--" else "-x"
    assert err == f"Error: unknown format {name!r}: one of {FORMATS}\n", err


@pytest.mark.parametrize("fmt", FORMATS.split(", "))
def test_a_missing_source_is_refused(sysenv, fmt: str) -> None:
    err = refused(sysenv, fmt, str(sysenv.home / "nowhere"))
    assert err == "Error: ~/nowhere does not exist: nothing to import\n", err


def test_without_source_the_usage_is_shown(sysenv) -> None:
    err = refused(sysenv, "stow")
    assert "Missing argument 'SOURCE'" in err, err


@pytest.mark.parametrize("fmt", FORMATS.split(", "))
def test_an_existing_sys_lua_is_never_overwritten(sysenv, fmt: str) -> None:
    top = repo(sysenv)
    put(top / "sys.lua", OLD)
    err = refused(sysenv, fmt, str(top))
    assert err.startswith("Error: ~/dotfiles/sys.lua exists: sys import never overwrites it\n\n")
    assert (
        "Write elsewhere with --to DIR, or replace it (kept as sys.lua.orig) with --force: "
        f"sys import {fmt} {top} --force\n"
    ) in err, err
    assert (top / "sys.lua").read_text() == OLD


def test_a_link_named_sys_lua_counts_as_one(sysenv) -> None:
    """Nothing is written through it, even when it points nowhere."""
    top = repo(sysenv)
    os.symlink(sysenv.home / "elsewhere.lua", top / "sys.lua")
    err = refused(sysenv, "mirror", str(top))
    assert "~/dotfiles/sys.lua exists: sys import never overwrites it" in err
    assert not (sysenv.home / "elsewhere.lua").exists()


def test_existing_sys_lua_in_to_dir_is_never_overwritten(sysenv) -> None:
    top = repo(sysenv)
    put(sysenv.home / "cfg" / "sys.lua", OLD)
    err = refused(sysenv, "stow", str(top), "--to", str(sysenv.home / "cfg"))
    assert err.startswith("Error: ~/cfg/sys.lua exists: sys import never overwrites it\n"), err


def test_force_does_not_replace_an_earlier_sys_lua_orig(sysenv) -> None:
    top = repo(sysenv)
    put(top / "sys.lua", OLD)
    put(top / "sys.lua.orig", "-- kept by an earlier import\n")
    err = refused(sysenv, "mirror", str(top), "--force")
    assert err == (
        "Error: ~/dotfiles/sys.lua.orig exists too: --force keeps the current sys.lua there, "
        "so move that one away first\n"
    ), err


def test_to_a_file_is_refused(sysenv) -> None:
    top = repo(sysenv)
    put(sysenv.home / "notes.txt", "milk\n")
    err = refused(sysenv, "mirror", str(top), "--to", str(sysenv.home / "notes.txt"))
    assert err == "Error: ~/notes.txt is not a directory: sys.lua cannot be written in it\n"


# -- through the mirror format ----------------------------------------------------------
@pytest.fixture
def mirror() -> None:
    pytest.importorskip("syslua.importers.mirror")


def _plan_part(text: str) -> str:
    """The plan in an import's output: from `Changes:` (or `No changes.`) to the `Plan:` line."""
    m = re.search(r"^(Changes:|No changes\.).*?^Plan: [^\n]*$", text, re.S | re.M)
    assert m, text
    return m.group(0)


def test_writes_sys_lua_at_the_top_of_source_then_plans_it(sysenv, mirror) -> None:
    top = repo(sysenv)
    before = tree(top)
    p = sysenv.run("import", "mirror", str(top), cwd=sysenv.home)
    ok(p)
    after = tree(top)
    assert set(after) - set(before) == {"sys.lua"}
    assert {k: v for k, v in after.items() if k != "sys.lua"} == before
    assert re.search(
        r"^Wrote ~/dotfiles/sys\.lua: \d+ declarations? from mirror \(~/dotfiles\)\.$",
        p.stdout,
        re.M,
    ), p.stdout
    assert "~/.bashrc" in _plan_part(p.stdout)
    assert p.stdout.endswith("\nNext: sys apply ~/dotfiles/sys.lua\n"), p.stdout
    assert not (sysenv.home / ".bashrc").exists()  # planned, not applied
    ok(sysenv.run("apply", str(top / "sys.lua")))
    assert (sysenv.home / ".bashrc").read_text() == "set -o vi\n"


def test_force_keeps_the_old_sys_lua_as_orig(sysenv, mirror) -> None:
    top = repo(sysenv)
    put(top / "sys.lua", OLD, 0o600)
    ok(sysenv.run("import", "mirror", str(top), "--force", cwd=sysenv.home))
    assert (top / "sys.lua.orig").read_text() == OLD
    assert (top / "sys.lua.orig").stat().st_mode & 0o777 == 0o600
    assert (top / "sys.lua").read_text() != OLD


def test_force_keeps_a_linked_sys_lua_as_a_link(sysenv, mirror) -> None:
    top = repo(sysenv)
    real = put(sysenv.home / "real.lua", OLD)
    os.symlink(real, top / "sys.lua")
    ok(sysenv.run("import", "mirror", str(top), "--force", cwd=sysenv.home))
    assert os.readlink(top / "sys.lua.orig") == str(real)
    assert real.read_text() == OLD  # not written through the link
    assert not (top / "sys.lua").is_symlink()


def test_to_dir_writes_there_and_leaves_the_repository_alone(sysenv, mirror) -> None:
    top = repo(sysenv)
    before = tree(top)
    dest = sysenv.home / "config" / "syslua"  # made for it
    p = sysenv.run("import", "mirror", str(top), "--to", str(dest), cwd=sysenv.home)
    ok(p)
    assert tree(top) == before
    assert "Wrote ~/config/syslua/sys.lua:" in p.stdout
    assert p.stdout.endswith("\nNext: sys apply ~/config/syslua/sys.lua\n"), p.stdout
    ok(sysenv.run("apply", str(dest / "sys.lua")))  # its sources found from there
    assert (sysenv.home / ".config" / "nvim" / "init.lua").read_text() == "vim.opt.number = true\n"


@pytest.mark.parametrize("to", [False, True])
def test_dry_run_writes_nothing_and_plans_what_the_written_file_plans(
    sysenv, mirror, to: bool
) -> None:
    top = repo(sysenv)
    where = ["--to", str(sysenv.home / "cfg")] if to else []
    shown = "~/cfg/sys.lua" if to else "~/dotfiles/sys.lua"
    before = tree(sysenv.home), tree(sysenv.root)
    dry = sysenv.run("import", "mirror", str(top), *where, "--dry-run", cwd=sysenv.home)
    ok(dry)
    assert (tree(sysenv.home), tree(sysenv.root)) == before
    assert dry.stdout.endswith(f"\nDry run: {shown} was not written.\n"), dry.stdout
    p = sysenv.run("import", "mirror", str(top), *where, cwd=sysenv.home)
    ok(p)
    written = (sysenv.home / shown[2:]).read_text()
    assert dry.stdout.startswith(written.rstrip("\n") + "\n\n"), (
        dry.stdout
    )  # the sys.lua, as written
    assert _plan_part(dry.stdout) == _plan_part(p.stdout)


def test_dry_run_over_an_existing_sys_lua_says_it_would_need_force(sysenv, mirror) -> None:
    top = repo(sysenv)
    put(top / "sys.lua", OLD)
    before = tree(sysenv.home)
    p = sysenv.run("import", "mirror", str(top), "--dry-run", cwd=sysenv.home)
    ok(p)
    assert tree(sysenv.home) == before
    assert p.stdout.endswith(
        "Dry run: ~/dotfiles/sys.lua was not written.\n"
        "It exists: sys import replaces it only with --force (keeping it as sys.lua.orig).\n"
    ), p.stdout
