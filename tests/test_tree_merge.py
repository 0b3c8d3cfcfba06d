"""Several trees into one directory: stow packages that share a target (issue 21, point 8).

Two `file {}` declarations of the same path with different directory
sources (`bin/.local/bin` and `fun/.local/bin` both into `~/.local/bin`, or
whole packages into `~`) are one tree with several sources: their members
merge when they do not collide, directories both hold are made once, and a
member both hold is the usual conflict naming both declarations' lines
(exit 2, nothing changed). What says what a tree holds (`source`, `ignore`,
`link`, `template`, `mode`, `dir_mode`) stays with each declaration; the
rest merges as ever. And `sys.glob("**")` looks inside dot folders, as a
user globbing a stow package expects. Everything through the real CLI on
real files.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from conftest import HEADER, history, ok, out, put, tree

BIN = 'file { path = "~/.local/bin", source = "bin/.local/bin", link = true }\n'
FUN = 'file { path = "~/.local/bin", source = "fun/.local/bin", link = true }\n'


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def packages(sysenv) -> Path:  # type: ignore[no-untyped-def]
    """Two stow packages, `bin` and `fun`, both with a `.local/bin`."""
    w = sysenv.work
    put(w / "bin" / ".local" / "bin" / "up", "#!/bin/sh\necho up\n", 0o755)
    put(w / "bin" / ".local" / "bin" / "down", "#!/bin/sh\necho down\n", 0o755)
    put(w / "fun" / ".local" / "bin" / "cowsay", "#!/bin/sh\necho moo\n", 0o755)
    return w


def apply(sysenv, body: str, *args: str):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply", *args)
    ok(p)
    return p


def refused(sysenv, body: str) -> str:  # type: ignore[no-untyped-def]
    """A configuration error: exit 2, nothing changed in the home or the repository."""
    sysenv.write("sys.lua", HEADER + body)
    before = tree(sysenv.home), tree(sysenv.work)
    for command in ("plan", "apply"):
        p = sysenv.run(command)
        assert p.returncode == 2, out(p)
        assert "Traceback" not in out(p)
    assert (tree(sysenv.home), tree(sysenv.work)) == before
    return p.stderr


# -- two link trees into one directory ------------------------------------------------
def test_two_link_trees_into_one_directory_merge(sysenv):
    w = packages(sysenv)
    bin_dir = sysenv.home / ".local" / "bin"
    put(bin_dir / "mine", "kept\n")  # a file nobody declares stays as it is
    put(bin_dir / "cowsay", "my own cowsay\n", 0o700)  # taken over, given back on destroy
    home_before = tree(sysenv.home)
    sysenv.write("sys.lua", HEADER + BIN + FUN)
    p = sysenv.run("plan")
    ok(p)
    assert (
        "~ file ~/.local/bin/ (tree: 1 updated, 2 added from bin/.local/bin, fun/.local/bin)"
        " - takes over 1 existing" in p.stdout
    ), p.stdout
    assert "Plan: 0 to create, 1 to update, 0 to remove, 0 unchanged." in p.stdout, p.stdout

    apply(sysenv, BIN + FUN)
    links = {n: os.readlink(bin_dir / n) for n in ("up", "down", "cowsay")}
    assert links == {
        "up": f"{w}/bin/.local/bin/up",
        "down": f"{w}/bin/.local/bin/down",
        "cowsay": f"{w}/fun/.local/bin/cowsay",
    }
    assert (bin_dir / "mine").read_text() == "kept\n"
    # a second apply changes nothing; the plan lists the tree once, with both sources
    p = sysenv.run("apply")
    ok(p)
    assert "No changes" in p.stdout, p.stdout
    p = sysenv.run("plan", "-v")
    assert "= file ~/.local/bin/ (tree: 3 links from bin/.local/bin, fun/.local/bin)" in p.stdout
    p = sysenv.run("status")
    assert p.returncode == 0 and "No drift" in p.stdout, out(p)

    # a member of the second source is one item like any other: drift, plan, apply
    os.unlink(bin_dir / "cowsay")
    p = sysenv.run("status", "-v")
    assert "~/.local/bin/cowsay" in p.stdout and "in the home: deleted" in p.stdout, out(p)
    apply(sysenv, BIN + FUN)
    assert os.readlink(bin_dir / "cowsay") == f"{w}/fun/.local/bin/cowsay"

    p = sysenv.run("destroy", "--yes")
    ok(p)
    assert tree(sysenv.home) == home_before


def test_rollback_takes_away_only_the_second_tree(sysenv):
    w = packages(sysenv)
    repository = tree(w)
    bin_dir = sysenv.home / ".local" / "bin"
    apply(sysenv, BIN)
    one = tree(sysenv.home)
    apply(sysenv, BIN + FUN)
    assert os.readlink(bin_dir / "cowsay") == f"{w}/fun/.local/bin/cowsay"
    p = sysenv.run("rollback")
    ok(p)
    assert tree(sysenv.home) == one
    # and the declarations taken away one at a time
    apply(sysenv, BIN + FUN)
    apply(sysenv, FUN)
    assert sorted(os.listdir(bin_dir)) == ["cowsay"]
    assert {k: v for k, v in tree(w).items() if not k.startswith("sys.lua")} == repository


def test_the_json_manifest_lists_both_sources_of_the_root(sysenv):
    w = packages(sysenv)
    sysenv.write("sys.lua", HEADER + BIN + FUN)
    p = sysenv.run("plan", "--json")
    ok(p)
    data = json.loads(p.stdout)
    root_id = f"file#{sysenv.home}/.local/bin"
    root = next(i for i in data["manifest"]["items"] if f"{i['type']}#{i['key']}" == root_id)
    assert root["props"]["tree"] is True and "source" not in root["props"]
    assert root["props"]["sources"] == [
        {"source": f"{w}/bin/.local/bin", "link": True},
        {"source": f"{w}/fun/.local/bin", "link": True},
    ]
    by_id = {e["id"]: e for e in data["plan"]["items"]}
    assert by_id[root_id]["note"] == "tree: 3 links from bin/.local/bin, fun/.local/bin"
    members = sorted(e["label"] for e in data["plan"]["items"] if e.get("group") == root_id)
    assert members == ["~/.local/bin/cowsay", "~/.local/bin/down", "~/.local/bin/up"]
    # the declaration order does not matter
    sysenv.write("sys.lua", HEADER + FUN + BIN)
    again = json.loads(sysenv.run("plan", "--json").stdout)
    assert again["manifest"]["digest"] == data["manifest"]["digest"]


# -- collisions ------------------------------------------------------------------------
def test_a_member_both_trees_hold_is_a_conflict_naming_both_lines(sysenv):
    packages(sysenv)
    put(sysenv.work / "fun" / ".local" / "bin" / "up", "#!/bin/sh\necho other\n", 0o755)
    put(sysenv.home / ".local" / "bin" / "mine", "kept\n")
    message = refused(sysenv, BIN + FUN)
    assert (
        "Conflicting values for file#~/.local/bin/up.source at priority 900:\n"
        '  - "bin/.local/bin/up" (declared at sys.lua:3)\n'
        '  - "fun/.local/bin/up" (declared at sys.lua:4)\n'
    ) in message, message
    assert "ignore" in message  # the way out: leave it out of one of them


def test_a_file_in_one_tree_and_a_directory_in_the_other_is_a_conflict(sysenv):
    packages(sysenv)
    put(sysenv.work / "fun" / ".local" / "bin" / "up" / "inner", "x\n")
    message = refused(sysenv, BIN + FUN)
    assert "Conflicting values for file#~/.local/bin/up.source at priority 900:" in message
    assert '"fun/.local/bin/up/" (declared at sys.lua:4)' in message, message


def test_directories_both_trees_hold_need_one_mode(sysenv):
    packages(sysenv)
    message = refused(sysenv, BIN + FUN.replace("link = true", 'link = true, dir_mode = "0700"'))
    assert "Conflicting values for file#~/.local/bin.dir_mode at priority 900:" in message
    assert (
        '"0755" (declared at sys.lua:3)' in message and '"0700" (declared at sys.lua:4)' in message
    )


def test_a_file_declared_inside_the_merged_tree_is_declared_twice(sysenv):
    # today's rule for a tree and a file declared inside it, with one source or two
    packages(sysenv)
    put(sysenv.work / "solo", "x\n")
    message = refused(
        sysenv, BIN + FUN + 'file { path = "~/.local/bin/cowsay", source = "solo" }\n'
    )
    assert "file ~/.local/bin/cowsay is declared twice" in message, message
    assert "as part of the tree file ~/.local/bin at sys.lua:4" in message, message


def test_a_forced_source_still_replaces_the_others(sysenv):
    w = packages(sysenv)
    forced = 'file { path = "~/.local/bin", source = lib.mkForce("fun/.local/bin"), link = true }\n'
    apply(sysenv, BIN + forced)
    assert os.listdir(sysenv.home / ".local" / "bin") == ["cowsay"]
    assert os.readlink(sysenv.home / ".local/bin/cowsay") == f"{w}/fun/.local/bin/cowsay"


# -- whole packages into the home ------------------------------------------------------
def test_whole_packages_into_the_home_merge(sysenv):
    w = sysenv.work
    put(w / "neovim" / ".config" / "nvim" / "init.lua", "vim.o.number = true\n")
    put(w / "git" / ".gitconfig", "[user]\n")
    put(w / "git" / ".config" / "git" / "ignore", "*.swp\n")
    put(sysenv.home / ".config" / "other" / "x", "not ours\n")
    before = tree(sysenv.home)
    body = (
        'file { path = "~", source = "neovim", link = true }\n'
        'file { path = "~", source = "git", link = true }\n'
    )
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("plan")
    ok(p)
    # ~/.config exists: the trees make ~/.config/nvim and ~/.config/git and 3 links
    assert "~ file ~/ (tree: 5 added from git, neovim)" in p.stdout, p.stdout
    apply(sysenv, body)
    h = sysenv.home
    assert os.readlink(h / ".config/nvim/init.lua") == f"{w}/neovim/.config/nvim/init.lua"
    assert os.readlink(h / ".config/git/ignore") == f"{w}/git/.config/git/ignore"
    assert os.readlink(h / ".gitconfig") == f"{w}/git/.gitconfig"
    assert not (h / ".config").is_symlink() and (h / ".config/other/x").read_text() == "not ours\n"
    assert "No changes" in sysenv.run("apply").stdout
    ok(sysenv.run("destroy", "--yes"))
    assert tree(sysenv.home) == before


# -- copy trees ------------------------------------------------------------------------
def test_copy_trees_merge_with_their_own_ignore_and_mode(sysenv):
    w = packages(sysenv)
    put(w / "bin" / ".local" / "bin" / "README.md", "bin's notes\n")
    put(w / "fun" / ".local" / "bin" / "README.md", "fun's notes\n")
    put(w / "fun" / ".local" / "bin" / "lib" / "moo.txt", "moo\n")
    body = (
        'file { path = "~/.local/bin", source = "bin/.local/bin", ignore = { "*.md" },\n'
        '       mode = "0600", dir_mode = "0755" }\n'
        'file { path = "~/.local/bin", source = "fun/.local/bin" }\n'
    )
    apply(sysenv, body)
    b = sysenv.home / ".local" / "bin"
    # bin's README is ignored by bin's declaration only: fun's is copied
    assert (b / "README.md").read_text() == "fun's notes\n"
    assert mode_of(b / "up") == 0o700 and mode_of(b / "cowsay") == 0o755
    assert mode_of(b / "README.md") == 0o644 and mode_of(b / "lib") == 0o755
    assert (b / "lib" / "moo.txt").read_text() == "moo\n"
    assert "No changes" in sysenv.run("apply").stdout

    # `sys add` of a member of the second source writes into that source
    (b / "cowsay").write_text("#!/bin/sh\necho MOO\n")
    p = sysenv.run("add", "~/.local/bin/cowsay")
    ok(p)
    assert (
        "~/.local/bin/cowsay: copied over its source fun/.local/bin/cowsay (declared at sys.lua:5)"
        in p.stdout
    ), p.stdout
    assert (w / "fun" / ".local" / "bin" / "cowsay").read_text() == "#!/bin/sh\necho MOO\n"
    assert not (w / "bin" / ".local" / "bin" / "cowsay").exists()
    assert history(sysenv)[0]["kind"] == "add"
    assert "No changes" in sysenv.run("apply").stdout


# -- sys.glob in dot folders -----------------------------------------------------------
def test_glob_double_star_looks_inside_dot_folders(sysenv):
    w = sysenv.work
    put(w / "neovim" / ".config" / "nvim" / "init.lua", "x\n")
    put(w / "neovim" / ".config" / "nvim" / "lua" / "keys.lua", "x\n")
    put(w / "neovim" / ".luarc.json", "{}\n")
    put(w / "neovim" / "README", "x\n")
    body = (
        'env { ALL = table.concat(sys.glob("neovim/**"), " "),\n'
        '      LUA = table.concat(sys.glob("neovim/**/*.lua"), " "),\n'
        '      TOP = table.concat(sys.glob("neovim/*"), " "),\n'
        '      DOT = table.concat(sys.glob("neovim/.*"), " ") }\n'
    )
    from syslua.manifest.resolve import resolve

    m = resolve(sysenv.write("sys.lua", body))
    values = {i.key: i.get("value") for i in m.of_type("env")}
    assert values["ALL"].split() == [
        "neovim/.config",
        "neovim/.config/nvim",
        "neovim/.config/nvim/init.lua",
        "neovim/.config/nvim/lua",
        "neovim/.config/nvim/lua/keys.lua",
        "neovim/.luarc.json",
        "neovim/README",
    ]
    assert values["LUA"].split() == [
        "neovim/.config/nvim/init.lua",
        "neovim/.config/nvim/lua/keys.lua",
    ]
    # within a name, `*` still skips a leading dot, as in a shell
    assert values["TOP"] == "neovim/README"
    assert values["DOT"] == "neovim/.config neovim/.luarc.json"


def test_a_declaration_without_a_source_applies_to_every_tree(sysenv):
    # the docs' recipe for whole packages: one line for the home's mode, a loop for the packages
    w = sysenv.work
    put(w / "packages" / "neovim" / ".config" / "nvim" / "init.lua", "x\n")
    put(w / "packages" / "git" / ".gitconfig", "[user]\n")
    put(w / "packages" / "git" / "notes.md", "mine\n")
    put(w / "packages" / "git" / ".config" / "git" / "ignore", "*.swp\n")
    os.chmod(sysenv.home, 0o700)
    body = (
        'file { path = "~", dir_mode = "0700", ignore = { "*.md" } }\n'
        'for _, pkg in ipairs(sys.glob("packages/*/")) do\n'
        '  file { path = "~", source = pkg, link = true }\n'
        "end\n"
    )
    apply(sysenv, body)
    h = sysenv.home
    assert mode_of(h) == 0o700 and mode_of(h / ".config") == 0o700
    assert os.readlink(h / ".config/git/ignore") == f"{w}/packages/git/.config/git/ignore"
    assert not (h / "notes.md").exists()  # ignored in every tree
    assert "No changes" in sysenv.run("apply").stdout


def test_an_error_in_one_tree_points_at_its_own_declaration(sysenv):
    packages(sysenv)
    os.symlink("nowhere", sysenv.work / "fun" / ".local" / "bin" / "broken")
    message = refused(sysenv, 'file { path = "~/.local/bin", dir_mode = "0755" }\n' + BIN + FUN)
    assert "sys.lua:5: file ~/.local/bin: the source tree holds a broken symlink" in message, (
        message
    )


def test_whole_packages_into_a_private_home_keep_its_mode_with_no_dir_mode(sysenv):
    """A bare tree into the home itself takes the home's mode for its
    directories: a 0700 home is never opened up by a stow package."""
    w = sysenv.work
    put(w / "packages" / "neovim" / ".config" / "nvim" / "init.lua", "x\n")
    put(w / "packages" / "git" / ".gitconfig", "[user]\n")
    os.chmod(sysenv.home, 0o700)
    body = (
        'for _, pkg in ipairs(sys.glob("packages/*/")) do\n'
        '  file { path = "~", source = pkg, link = true }\n'
        "end\n"
    )
    sysenv.write("sys.lua", body)  # no defaults{}: nothing declares a mode
    ok(sysenv.run("apply"))
    h = sysenv.home
    assert mode_of(h) == 0o700 and mode_of(h / ".config") == 0o700
    assert os.readlink(h / ".gitconfig") == f"{w}/packages/git/.gitconfig"
    assert "No changes" in sysenv.run("apply").stdout
