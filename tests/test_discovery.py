"""Config discovery is safe (issue 21, point 9; SPEC section 8).

Without CONFIG, `sys` looks for `./sys.lua`, `./init.lua`, then the same in
`~/.config/syslua/`. When the file found is not the config the current
snapshot was applied from (a Neovim `init.lua` in `~/.config/nvim`, another
project's `sys.lua`), a command that changes the machine refuses it before
evaluating it, naming both files (`pass it explicitly to use it`); a
read-only one uses it and says so. Given explicitly, it is used as always;
before the first apply, discovery is as it was.
"""

from __future__ import annotations

import json
import os

from conftest import HEADER, ok, out, tree

DOTFILES = 'file { path = "~/.gitconfig", content = "[user]\\n" }\n'
# A config that evaluates and declares something else: applying it would
# remove what the dotfiles config manages.
OTHER = 'file { path = "~/other.txt", content = "other\\n" }\n'
# What ~/.config/nvim/init.lua really holds: not a syslua config at all.
NEOVIM = "vim.opt.number = true\nvim.g.mapleader = ' '\n"


def dotfiles_applied(sysenv):  # type: ignore[no-untyped-def]
    """The current snapshot applied from ~/dotfiles/sys.lua, given explicitly."""
    config = sysenv.home / "dotfiles" / "sys.lua"
    config.parent.mkdir(parents=True)
    config.write_text(HEADER + DOTFILES)
    ok(sysenv.run("apply", str(config), cwd=sysenv.home))
    return config


def nvim_dir(sysenv, text: str = NEOVIM):  # type: ignore[no-untyped-def]
    nvim = sysenv.home / ".config" / "nvim"
    nvim.mkdir(parents=True, exist_ok=True)
    (nvim / "init.lua").write_text(text)
    return nvim


def snapshots(sysenv) -> list[str]:  # type: ignore[no-untyped-def]
    return [h["id"] for h in json.loads(sysenv.run("history", "--json").stdout)]


# -- sys apply refuses, before evaluating -----------------------------------------
def test_apply_in_a_neovim_config_dir_refuses_before_evaluating_it(sysenv) -> None:
    dotfiles_applied(sysenv)
    nvim = nvim_dir(sysenv)
    home, root = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("apply", cwd=nvim)
    assert p.returncode == 2, out(p)
    assert "Traceback" not in out(p)
    assert p.stderr.startswith(
        "Error: ./init.lua is not the config of the current snapshot (~/dotfiles/sys.lua): "
        "pass it explicitly to use it (sys apply ./init.lua), or pass the current one "
        "(sys apply ~/dotfiles/sys.lua)\n"
    ), p.stderr
    assert "Evaluating" not in out(p)  # not evaluated: a Neovim init.lua would fail there
    assert "vim" not in out(p)
    assert tree(sysenv.home) == home and tree(sysenv.root) == root


def test_apply_never_plans_removals_from_a_found_config_that_evaluates(sysenv) -> None:
    """The dangerous case: the found file is a working syslua config of
    something else; applying it would remove everything the current one manages."""
    dotfiles_applied(sysenv)
    elsewhere = sysenv.work / "project"
    elsewhere.mkdir()
    (elsewhere / "sys.lua").write_text(HEADER + OTHER)
    before = tree(sysenv.home)
    for args in (("apply",), ("apply", "--force"), ("apply", "--allow-empty")):
        p = sysenv.run(*args, cwd=elsewhere)
        assert p.returncode == 2, out(p)
        assert "./sys.lua is not the config of the current snapshot (~/dotfiles/sys.lua)" in (
            p.stderr
        )
        assert "will remove" not in out(p) and "removed" not in out(p)
    assert tree(sysenv.home) == before
    assert (sysenv.home / ".gitconfig").exists() and not (sysenv.home / "other.txt").exists()


def test_a_found_config_given_explicitly_is_applied_as_always(sysenv) -> None:
    dotfiles_applied(sysenv)
    elsewhere = sysenv.work / "project"
    elsewhere.mkdir()
    (elsewhere / "sys.lua").write_text(HEADER + OTHER)
    for given in ("sys.lua", "./sys.lua", ".", str(elsewhere / "sys.lua")):
        p = sysenv.run("apply", "--noop", given, cwd=elsewhere)
        ok(p)
        assert "is not the config of the current snapshot" not in out(p)
    ok(sysenv.run("apply", "sys.lua", cwd=elsewhere))
    assert (sysenv.home / "other.txt").exists() and not (sysenv.home / ".gitconfig").exists()
    # now it is the current snapshot's config: found, it is used without a word
    (elsewhere / "sys.lua").write_text(HEADER + OTHER + DOTFILES)
    p = sysenv.run("apply", cwd=elsewhere)
    ok(p)
    assert "current snapshot" not in out(p)
    assert (sysenv.home / ".gitconfig").exists()


def test_the_current_snapshots_config_found_is_used(sysenv) -> None:
    """Found in the current directory, or through a link to it (~/.config/syslua
    -> ~/dotfiles), the current snapshot's config is applied without a word."""
    config = dotfiles_applied(sysenv)
    config.write_text(HEADER + DOTFILES + OTHER)
    p = sysenv.run("apply", cwd=config.parent)
    ok(p)
    assert "current snapshot" not in out(p)
    (sysenv.home / ".config").mkdir(exist_ok=True)
    os.symlink(config.parent, sysenv.home / ".config" / "syslua")
    config.write_text(HEADER + DOTFILES)
    p = sysenv.run("apply", cwd=sysenv.home)  # found as ~/.config/syslua/sys.lua
    ok(p)
    assert "current snapshot" not in out(p)
    assert not (sysenv.home / "other.txt").exists()


def test_the_config_dir_in_home_is_checked_too(sysenv) -> None:
    """~/.config/syslua/sys.lua, found from a directory without a config, is
    refused as well when the current snapshot came from elsewhere."""
    dotfiles_applied(sysenv)
    default = sysenv.home / ".config" / "syslua" / "sys.lua"
    default.parent.mkdir(parents=True)
    default.write_text(HEADER + OTHER)
    before = tree(sysenv.home)
    p = sysenv.run("apply", cwd=sysenv.home)
    assert p.returncode == 2, out(p)
    assert (
        "~/.config/syslua/sys.lua is not the config of the current snapshot (~/dotfiles/sys.lua)"
        in p.stderr
    ), p.stderr
    assert tree(sysenv.home) == before


def test_before_the_first_apply_discovery_is_as_it_was(sysenv) -> None:
    project = sysenv.work / "project"
    project.mkdir()
    (project / "init.lua").write_text(HEADER + OTHER)
    p = sysenv.run("apply", cwd=project)
    ok(p)
    assert (sysenv.home / "other.txt").exists()


def test_after_destroy_no_config_is_current(sysenv) -> None:
    """`sys destroy` records a snapshot made from no config: nothing is managed,
    so nothing can be removed, and discovery is as before the first apply."""
    dotfiles_applied(sysenv)
    ok(sysenv.run("destroy", "--yes"))
    project = sysenv.work / "project"
    project.mkdir()
    (project / "sys.lua").write_text(HEADER + OTHER)
    ok(sysenv.run("apply", cwd=project))
    assert (sysenv.home / "other.txt").exists()


def test_a_current_config_that_is_gone_is_named_so(sysenv) -> None:
    config = dotfiles_applied(sysenv)
    config.unlink()
    project = sysenv.work / "project"
    project.mkdir()
    (project / "sys.lua").write_text(HEADER + OTHER)
    before = tree(sysenv.home)
    p = sysenv.run("apply", cwd=project)
    assert p.returncode == 2, out(p)
    assert (
        "./sys.lua is not the config of the current snapshot "
        "(~/dotfiles/sys.lua, which no longer exists)" in p.stderr
    ), p.stderr
    assert tree(sysenv.home) == before


def test_apply_noop_uses_the_found_config_and_says_so(sysenv) -> None:
    """`--noop` changes nothing: like `sys plan`, it names the file it used."""
    dotfiles_applied(sysenv)
    project = sysenv.work / "project"
    project.mkdir()
    (project / "sys.lua").write_text(HEADER + OTHER)
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("apply", "--noop", cwd=project)
    ok(p)
    assert "Using ./sys.lua (the current snapshot was applied from ~/dotfiles/sys.lua)" in out(p)
    assert (tree(sysenv.home), tree(sysenv.root)) == before


# -- sys plan uses it and says so -------------------------------------------------
def test_plan_says_which_file_it_used(sysenv) -> None:
    dotfiles_applied(sysenv)
    project = sysenv.work / "project"
    project.mkdir()
    (project / "init.lua").write_text(HEADER + OTHER)
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("plan", cwd=project)
    ok(p)
    first = p.stdout.splitlines()[0]
    assert first == "Using ./init.lua (the current snapshot was applied from ~/dotfiles/sys.lua)"
    assert "+ file ~/other.txt" in p.stdout and "- file ~/.gitconfig" in p.stdout, p.stdout
    assert (tree(sysenv.home), tree(sysenv.root)) == before
    # --json: the manifest names the config, the line stays out of the document
    j = sysenv.run("plan", "--json", cwd=project)
    ok(j)
    items = json.loads(j.stdout)["manifest"]["items"]
    assert [i["key"] for i in items] == [str(sysenv.home / "other.txt")]
    assert "Using ./init.lua" in j.stderr
    # the current snapshot's own config: no such line
    p = sysenv.run("plan", cwd=sysenv.home / "dotfiles")
    ok(p)
    assert "Using" not in out(p)


def test_plan_of_a_neovim_init_lua_fails_as_a_config_error_naming_it(sysenv) -> None:
    dotfiles_applied(sysenv)
    nvim = nvim_dir(sysenv)
    before = tree(sysenv.root)
    p = sysenv.run("plan", cwd=nvim)
    assert p.returncode == 2, out(p)
    assert "Using ./init.lua (the current snapshot was applied from ~/dotfiles/sys.lua)" in (
        p.stdout
    )
    assert "init.lua:1" in p.stderr, p.stderr
    assert tree(sysenv.root) == before


# -- the other commands that default a config -------------------------------------
def test_add_refuses_a_found_config_that_is_not_the_current_one(sysenv) -> None:
    dotfiles_applied(sysenv)
    (sysenv.home / ".gitconfig").write_text("[user]\n  name = me\n")
    project = sysenv.work / "project"
    project.mkdir()
    (project / "sys.lua").write_text(HEADER + OTHER)
    before = tree(sysenv.home), snapshots(sysenv)
    p = sysenv.run("add", str(sysenv.home / ".gitconfig"), cwd=project)
    assert p.returncode == 2, out(p)
    assert (
        "./sys.lua is not the config of the current snapshot (~/dotfiles/sys.lua): "
        "pass it explicitly to use it (sys add --config ./sys.lua PATH)" in p.stderr
    ), p.stderr
    assert "Evaluating" not in out(p)
    assert (tree(sysenv.home), snapshots(sysenv)) == before


def test_update_refuses_a_found_config_unless_dry_run(sysenv) -> None:
    dotfiles_applied(sysenv)
    project = sysenv.work / "project"
    project.mkdir()
    (project / "init.lua").write_text("return { inputs = {}, setup = function() end }\n")
    before = tree(project)
    p = sysenv.run("update", cwd=project)
    assert p.returncode == 2, out(p)
    assert "./init.lua is not the config of the current snapshot (~/dotfiles/sys.lua)" in (p.stderr)
    assert "sys update --config ./init.lua" in p.stderr
    assert tree(project) == before
    p = sysenv.run("update", "--dry-run", cwd=project)
    ok(p)
    assert "Using ./init.lua (the current snapshot was applied from ~/dotfiles/sys.lua)" in out(p)
    assert tree(project) == before


def test_info_and_doctor_name_the_found_config(sysenv) -> None:
    dotfiles_applied(sysenv)
    nvim = nvim_dir(sysenv)
    p = sysenv.run("info", cwd=nvim)
    ok(p)
    assert (
        "  ~/.config/nvim/init.lua (not the current snapshot's config ~/dotfiles/sys.lua: "
        "sys apply uses it only when given explicitly)" in p.stdout
    ), p.stdout
    d = sysenv.run("doctor", "--json", cwd=nvim)
    check = {c["name"]: c for c in json.loads(d.stdout)["checks"]}["config"]
    # the config checked is the one `sys apply` uses here: the current snapshot's
    assert check["ok"], check
    assert check["detail"] == (
        "~/dotfiles/sys.lua evaluates (1 item); ./init.lua here is not it: "
        "sys apply uses ./init.lua only when given explicitly"
    ), check


def test_the_current_config_is_known_from_an_index_without_the_note(sysenv) -> None:
    """The index notes the current snapshot's config (read without loading a
    snapshot); an index without it (an older one) or naming another snapshot
    (a rollback) is read from the snapshot itself."""
    config = dotfiles_applied(sysenv)
    project = sysenv.work / "project"
    project.mkdir()
    (project / "sys.lua").write_text(HEADER + OTHER)
    index = sysenv.root / "state" / "snapshots" / "index.json"
    doc = json.loads(index.read_text())
    assert doc["current_config"] == {"id": doc["current"], "config": str(config)}
    del doc["current_config"]
    index.write_text(json.dumps(doc))
    p = sysenv.run("apply", cwd=project)
    assert p.returncode == 2 and "(~/dotfiles/sys.lua)" in p.stderr, out(p)
    # applied explicitly, then rolled back: the dotfiles config is current again
    ok(sysenv.run("apply", "sys.lua", cwd=project))
    assert sysenv.run("apply", cwd=project).returncode == 0
    ok(sysenv.run("rollback"))
    assert (sysenv.home / ".gitconfig").exists()
    p = sysenv.run("apply", cwd=project)
    assert p.returncode == 2 and "(~/dotfiles/sys.lua)" in p.stderr, out(p)
