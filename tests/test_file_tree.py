"""Directory trees (`source` is a directory), with `ignore`, modes and `dir_mode`.

SPEC section 5 (Files, additions over the seed) and issue 10 ("The file
resource grows"): a tree is one line in the plan and one declaration for the
user, while each directory and file below `source` is an item of its own, so
takeover, removal, journal and rollback work per file. Everything runs
through the real `sys` command line on real files in a temp HOME.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from conftest import HEADER, history, items, ok, out, put, tree

NVIM = 'file { path = "~/.config/nvim", source = "dot/nvim" }\n'


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def nvim_source(sysenv) -> Path:  # type: ignore[no-untyped-def]
    """dot/nvim: 3 files in 2 directories below it, plus what every tree skips."""
    src = sysenv.work / "dot" / "nvim"
    put(src / "init.lua", "require('plugins')\n")
    put(src / "lua" / "options.lua", "vim.o.number = true\n")
    put(src / "lua" / "plugins" / "init.lua", "return {}\n")
    put(src / ".git" / "HEAD", "ref: refs/heads/main\n")  # always skipped
    return src


def apply(sysenv, body: str):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    # some tests remove every declaration on purpose
    p = sysenv.run("apply", *(["--allow-empty"] if not body.strip() else []))
    ok(p)
    return p


def plan_lines(sysenv, *args: str, code: int = 0) -> list[str]:  # type: ignore[no-untyped-def]
    p = sysenv.run("plan", *args)
    assert p.returncode == code and "Traceback" not in out(p), out(p)
    return [ln.strip() for ln in p.stdout.splitlines()]


# -- a tree: one plan line, every file and directory below `source` ----------
def test_a_tree_is_one_plan_line_and_every_file_below_source(sysenv):
    nvim_source(sysenv)
    sysenv.write("sys.lua", HEADER + NVIM)
    lines = plan_lines(sysenv)
    assert "+ file ~/.config/nvim/ (tree: 3 files, 2 directories)" in lines
    assert "+ dir ~/.config (parent)" in lines
    assert not any("options.lua" in ln for ln in lines)  # members are not listed
    # one item, the tree; its members and the parent are not counted (issue 23, point 2)
    assert "Plan: 1 to create, 0 to update, 0 to remove, 0 unchanged." in lines

    apply(sysenv, NVIM)
    assert tree(sysenv.home / ".config") == {
        "nvim": ("dir", 0o755, None),
        "nvim/init.lua": ("file", 0o644, b"require('plugins')\n"),
        "nvim/lua": ("dir", 0o755, None),
        "nvim/lua/options.lua": ("file", 0o644, b"vim.o.number = true\n"),
        "nvim/lua/plugins": ("dir", 0o755, None),
        "nvim/lua/plugins/init.lua": ("file", 0o644, b"return {}\n"),
    }
    p = sysenv.run("plan")
    ok(p)
    assert "No changes. The machine matches the configuration." in p.stdout
    assert "~/.config/nvim" not in p.stdout  # unchanged: listed with -v only
    assert "Plan: 0 to create, 0 to update, 0 to remove, 1 unchanged." in p.stdout
    p = sysenv.run("plan", "-v")
    assert "= file ~/.config/nvim/ (tree: 3 files, 2 directories)" in p.stdout


def test_verbose_and_json_list_every_member(sysenv):
    nvim_source(sysenv)
    sysenv.write("sys.lua", HEADER + NVIM)
    lines = plan_lines(sysenv, "-v")
    root = lines.index("+ file ~/.config/nvim/ (tree: 3 files, 2 directories)")
    assert lines[root + 1 : root + 6] == [
        "+ file ~/.config/nvim/init.lua: will create",
        "+ file ~/.config/nvim/lua: will create",
        "+ file ~/.config/nvim/lua/options.lua: will create",
        "+ file ~/.config/nvim/lua/plugins: will create",
        "+ file ~/.config/nvim/lua/plugins/init.lua: will create",
    ]
    p = sysenv.run("plan", "--json")
    ok(p)
    plan = json.loads(p.stdout)["plan"]
    root_id = f"file#{sysenv.home}/.config/nvim"
    by_id = {e["id"]: e for e in plan["items"]}
    assert by_id[root_id]["note"] == "tree: 3 files, 2 directories"
    members = sorted(e["label"] for e in plan["items"] if e.get("group") == root_id)
    assert members == [
        "~/.config/nvim/init.lua",
        "~/.config/nvim/lua",
        "~/.config/nvim/lua/options.lua",
        "~/.config/nvim/lua/plugins",
        "~/.config/nvim/lua/plugins/init.lua",
    ]
    parent = by_id[f"file#{sysenv.home}/.config"]
    assert (parent["note"], parent["subject"], parent["action"]) == (
        "parent",
        "dir ~/.config",
        "create",
    )


def test_tree_update_add_and_remove_from_source(sysenv):
    src = nvim_source(sysenv)
    apply(sysenv, NVIM)
    put(src / "init.lua", "require('plugins')\nrequire('keys')\n")
    put(src / "lua" / "keys.lua", "-- keys\n")
    (src / "lua" / "options.lua").unlink()
    lines = plan_lines(sysenv)
    assert "~ file ~/.config/nvim/ (tree: 1 updated, 1 added, 1 removed)" in lines
    assert "Plan: 0 to create, 1 to update, 0 to remove, 0 unchanged."  # one tree in lines
    # the removed member is counted under its tree's label, never its item id
    assert "[Remove] ~/.config/nvim/* (1)" in lines, lines
    assert "[Remove] ~/.config/nvim/lua/options.lua" in plan_lines(sysenv, "-v")
    apply(sysenv, NVIM)
    nvim = sysenv.home / ".config" / "nvim"
    assert (nvim / "init.lua").read_text() == "require('plugins')\nrequire('keys')\n"
    assert (nvim / "lua" / "keys.lua").read_text() == "-- keys\n"
    assert not (nvim / "lua" / "options.lua").exists()
    assert "No changes." in sysenv.run("plan").stdout


def test_a_file_removed_from_the_source_gets_its_original_back(sysenv):
    src = nvim_source(sysenv)
    put(sysenv.home / ".config" / "nvim" / "lua" / "options.lua", "my own options\n", 0o600)
    apply(sysenv, NVIM)
    assert (sysenv.home / ".config/nvim/lua/options.lua").read_text() == "vim.o.number = true\n"
    (src / "lua" / "options.lua").unlink()
    p = sysenv.run("apply", "-v")  # a tree's members are shown under -v
    ok(p)
    assert "file ~/.config/nvim/lua/options.lua: restored the original it took over" in p.stdout
    restored = sysenv.home / ".config/nvim/lua/options.lua"
    assert restored.read_text() == "my own options\n" and mode_of(restored) == 0o600


def test_a_tree_over_hand_made_files_keeps_and_restores_the_originals(sysenv):
    nvim_source(sysenv)
    nvim = sysenv.home / ".config" / "nvim"
    put(nvim / "init.lua", "hand-made init\n", 0o600)
    put(nvim / "mine.lua", "not in the source\n")
    os.chmod(nvim, 0o700)
    before = tree(sysenv.home)
    sysenv.write("sys.lua", HEADER + NVIM)
    lines = plan_lines(sysenv)
    assert (
        "~ file ~/.config/nvim/ (tree: 1 updated, 4 added; mode 0700 -> 0755)"
        " - takes over 1 existing file; the original is kept"
    ) in lines
    apply(sysenv, NVIM)
    assert (nvim / "init.lua").read_text() == "require('plugins')\n"
    assert (nvim / "mine.lua").read_text() == "not in the source\n"  # not the tree's
    assert mode_of(nvim) == 0o755
    # Deleting the declaration puts back every original, and only what syslua made goes.
    apply(sysenv, "")
    assert tree(sysenv.home) == before


def test_removing_the_whole_tree_removes_what_it_created(sysenv):
    nvim_source(sysenv)
    apply(sysenv, NVIM)
    sysenv.write("sys.lua", HEADER)
    lines = plan_lines(sysenv)
    assert "- file ~/.config/nvim/ (tree: 3 files, 2 directories)" in lines
    assert "Plan: 0 to create, 0 to update, 1 to remove, 0 unchanged." in lines
    apply(sysenv, "")
    assert tree(sysenv.home) == {}  # ~/.config was created as its parent: gone too


# -- ignore -------------------------------------------------------------------
def test_ignore_takes_gitignore_patterns_with_double_star_and_negation(sysenv):
    src = sysenv.work / "dot" / "nvim"
    for rel in (
        "init.lua",
        "init.lua.swp",
        "README.md",
        "lazy-lock.json",
        "lua/a.lua",
        "lua/.a.lua.swp",
        "docs/guide.md",
        "docs/keep.md",
        "docs/deep/x.md",
        "cache/big.bin",
        "build/out.o",
        "sub/README.md",
        ".git/config",
        "lua/.git",  # a submodule's .git file
    ):
        put(src / rel, rel + "\n")
    body = (
        'file { path = "~/nvim", source = "dot/nvim", ignore = {\n'
        '  "*.swp", "/README.md", "lazy-lock.json", "docs/**", "!docs/keep.md", "cache/", "**/build",\n'
        "} }\n"
    )
    apply(sysenv, body)
    assert sorted(tree(sysenv.home / "nvim")) == [
        "docs",
        "docs/keep.md",
        "init.lua",
        "lua",
        "lua/a.lua",
        "sub",
        "sub/README.md",
    ]


def test_ignore_is_merged_across_declarations(sysenv):
    src = sysenv.work / "dot"
    for rel in ("a.txt", "b.txt", "c.txt"):
        put(src / rel, "x\n")
    apply(
        sysenv,
        'file { path = "~/t", source = "dot", ignore = "a.txt" }\n'
        'file { path = "~/t", ignore = { "b.txt" } }\n',
    )
    assert sorted(tree(sysenv.home / "t")) == ["c.txt"]


# -- modes --------------------------------------------------------------------
def test_execute_bit_of_a_source_file_adds_x_where_mode_has_r(sysenv):
    src = sysenv.work / "dot" / "bin"
    put(src / "hello", "#!/bin/sh\necho hi\n", 0o755)
    put(src / "owner-only", "#!/bin/sh\n", 0o700)
    put(src / "notes.txt", "plain\n", 0o600)
    apply(
        sysenv,
        'file { path = "~/bin", source = "dot/bin" }\n'
        'file { path = "~/private", source = "dot/bin", mode = "0600" }\n',
    )
    home = sysenv.home
    assert mode_of(home / "bin/hello") == 0o755
    assert mode_of(home / "bin/owner-only") == 0o755  # any x bit: x wherever mode has r
    assert mode_of(home / "bin/notes.txt") == 0o644
    assert mode_of(home / "private/hello") == 0o700
    assert mode_of(home / "private/notes.txt") == 0o600
    assert mode_of(home / "private") == 0o700  # dir_mode: mode plus x where it has r


def test_dir_mode_defaults_to_mode_with_x_and_can_be_given(sysenv):
    src = sysenv.work / "dot"
    put(src / "sub" / "f", "f\n")
    apply(
        sysenv,
        'file { path = "~/a", source = "dot", mode = "0640" }\n'
        'file { path = "~/b", source = "dot", dir_mode = "0700" }\n'
        'file { path = "~/new/deep/c", source = "dot", dir_mode = "0711" }\n',
    )
    home = sysenv.home
    assert (mode_of(home / "a"), mode_of(home / "a/sub"), mode_of(home / "a/sub/f")) == (
        0o750,
        0o750,
        0o640,
    )
    assert (mode_of(home / "b"), mode_of(home / "b/sub"), mode_of(home / "b/sub/f")) == (
        0o700,
        0o700,
        0o644,
    )
    # dir_mode also applies to the parents a declaration creates
    assert (mode_of(home / "new"), mode_of(home / "new/deep"), mode_of(home / "new/deep/c")) == (
        0o711,
        0o711,
        0o711,
    )


def test_a_directory_declared_without_x_bits_gets_them(sysenv):
    apply(
        sysenv,
        'file { path = "~/d", ensure = "directory", mode = "0644" }\n'
        'file { path = "~/p", ensure = "directory", mode = "0600" }\n'
        'file { path = "~/k", ensure = "directory", mode = "0744" }\n',
    )
    assert mode_of(sysenv.home / "d") == 0o755
    assert mode_of(sysenv.home / "p") == 0o700
    assert mode_of(sysenv.home / "k") == 0o744  # it has an x bit: as declared
    assert "No changes." in sysenv.run("plan").stdout


# -- members that need attention, ordering, subscribers, health checks --------
def test_a_member_that_cannot_be_applied_gets_its_own_line(sysenv):
    nvim_source(sysenv)
    (sysenv.home / ".config" / "nvim" / "init.lua").mkdir(parents=True)
    sysenv.write("sys.lua", HEADER + NVIM)
    lines = plan_lines(sysenv, code=1)  # marked !: `sys apply` would refuse (issue 23)
    root = next(i for i, ln in enumerate(lines) if ln.startswith("! file ~/.config/nvim/ "))
    assert lines[root] == "! file ~/.config/nvim/ (tree: 4 added, 1 cannot be applied)"
    assert lines[root + 1] == (
        "! file ~/.config/nvim/init.lua: a directory exists where a file is wanted"
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    # refused before anything ran (issue 23, point 1)
    assert p.returncode == 1 and "Nothing was changed." in p.stdout, out(p)
    assert "  file ~/.config/nvim/init.lua: a directory exists where a file is wanted" in p.stdout
    assert tree(sysenv.home) == before


def test_subscribers_dependents_and_health_checks_see_the_whole_tree(sysenv):
    src = nvim_source(sysenv)
    log = sysenv.home / "log"
    body = (
        "local t = file { path = '~/.config/nvim', source = 'dot/nvim',\n"
        "  health_checks = { { name = 'all-there', command = 'test -f "
        + str(sysenv.home / ".config/nvim/lua/plugins/init.lua")
        + "' } } }\n"
        "exec { name = 'reload', provider = 'shell', subscribe = { t }, refresh_only = true,\n"
        f"  command = 'find {sysenv.home}/.config/nvim -type f | wc -l >> {log}' }}\n"
    )
    p = apply(sysenv, body)
    assert "exec reload: executed" in p.stdout
    assert log.read_text() == "3\n"  # ran after every member was in place
    apply(sysenv, body)
    assert log.read_text() == "3\n"  # nothing changed: not triggered
    put(src / "lua" / "plugins" / "init.lua", "return { 'x' }\n")
    p = apply(sysenv, body)
    assert "exec reload: executed" in p.stdout and log.read_text() == "3\n3\n"
    (src / "lua" / "options.lua").unlink()  # a removal alone also changes the tree
    p = apply(sysenv, body)
    assert "exec reload: executed" in p.stdout and log.read_text() == "3\n3\n2\n"


def test_a_path_declared_and_inside_a_tree_is_an_error(sysenv):
    nvim_source(sysenv)
    sysenv.write(
        "sys.lua", HEADER + NVIM + 'file { path = "~/.config/nvim/init.lua", content = "x" }\n'
    )
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert (
        "file ~/.config/nvim/init.lua is declared twice: at sys.lua:4, "
        "and as part of the tree file ~/.config/nvim at sys.lua:3"
    ) in p.stderr
    assert "Add it to the tree's `ignore` to declare it on its own." in p.stderr
    # with the path ignored by the tree, the declaration stands on its own
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/.config/nvim", source = "dot/nvim", ignore = "/init.lua" }\n'
        + 'file { path = "~/.config/nvim/init.lua", content = "mine\\n" }\n',
    )
    ok(sysenv.run("apply"))
    assert (sysenv.home / ".config/nvim/init.lua").read_text() == "mine\n"
    assert (sysenv.home / ".config/nvim/lua/options.lua").is_file()


def test_tree_errors_point_at_the_declaration(sysenv):
    put(sysenv.work / "dot" / "a.txt", "a\n")
    os.symlink("/no/such/target", sysenv.work / "dot" / "broken")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/t", source = "dot" }\n')
    before = tree(sysenv.home)
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert (
        f"sys.lua:3: file ~/t: the source tree holds a broken symlink: {sysenv.work}/dot/broken "
        "(add it to `ignore`)"
    ) in p.stderr
    sysenv.write("sys.lua", HEADER + 'file { path = "~/t", source = "dot", ignore = "broken" }\n')
    ok(sysenv.run("apply"))
    assert sorted(tree(sysenv.home)) == ["t", "t/a.txt"]
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/f", source = "dot/a.txt", ignore = "*.swp" }\n'
    )
    p = sysenv.run("plan")
    assert p.returncode == 2
    assert "`ignore` applies to a directory `source`" in p.stderr
    assert before.keys() <= tree(sysenv.home).keys()


# -- snapshots and rollback -----------------------------------------------------
def test_rollback_brings_a_tree_back_from_the_store(sysenv):
    src = nvim_source(sysenv)
    apply(sysenv, NVIM)
    first = tree(sysenv.home)
    put(src / "init.lua", "changed\n")
    (src / "lua" / "plugins" / "init.lua").unlink()
    apply(sysenv, NVIM)
    # the source changes again and then vanishes: the snapshot has the content
    put(src / "init.lua", "later\n")
    ok(sysenv.run("rollback"))
    assert tree(sysenv.home) == first
    ids = [h["id"] for h in history(sysenv)]
    ok(sysenv.run("rollback", ids[-1]))


def test_a_failed_apply_removes_the_tree_and_its_new_parents(sysenv):
    src = sysenv.work / "dot" / "nvim"
    for d in ("", "a/", "b/", "c/d/"):
        for n in range(4):
            put(src / f"{d}f{n}", f"{d}{n}\n")
    put(sysenv.home / "keep", "keep\n")
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER
        + "local t = file { path = '~/.config/x/nvim', source = 'dot/nvim' }\n"
        + "file { path = '~/.config/x/other', content = 'o' }\n"
        + "exec { name = 'boom', command = 'false', depends_on = { t } }\n",
    )
    p = sysenv.run("apply", "--jobs", "8")
    assert p.returncode == 1 and "Apply failed. System unchanged." in p.stdout, out(p)
    assert tree(sysenv.home) == before


def test_json_events_of_an_apply_name_each_member(sysenv):
    nvim_source(sysenv)
    sysenv.write("sys.lua", HEADER + NVIM)
    p = sysenv.run("apply", "--json")
    ok(p)
    got = items(p)
    assert got[f"file#{sysenv.home}/.config/nvim/lua/options.lua"]["status"] == "changed"
    assert got[f"file#{sysenv.home}/.config/nvim"]["label"] == "~/.config/nvim/"


def test_a_stow_style_link_at_the_root_becomes_a_real_directory(sysenv):
    """~/.config/nvim is a symlink into the repository (as stow leaves it): the
    tree unfolds the link into a directory, replaces what it showed with
    copies, never writing through it, and the link comes back on failure and
    on removal."""
    src = nvim_source(sysenv)
    repo = tree(src)
    (sysenv.home / ".config").mkdir()
    os.symlink(src, sysenv.home / ".config" / "nvim")
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER
        + "local t = "
        + NVIM
        + 'exec { name = "boom", command = "false", depends_on = { t } }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 1 and "Apply failed. System unchanged." in p.stdout, out(p)
    assert tree(sysenv.home) == before and tree(src) == repo
    sysenv.write("sys.lua", HEADER + NVIM)
    lines = plan_lines(sysenv)
    assert (
        "+ file ~/.config/nvim/ (tree: 3 updated, 2 added; is a symlink, should be a directory)"
        " (~/.config/nvim: a link into the repository (stow?); will become a directory)"
    ) in lines
    apply(sysenv, NVIM)
    nvim = sysenv.home / ".config" / "nvim"
    assert not nvim.is_symlink() and (nvim / "lua" / "options.lua").is_file()
    assert tree(src) == repo
    assert "No changes." in sysenv.run("plan").stdout
    apply(sysenv, "")
    assert tree(sysenv.home) == before and tree(src) == repo


def test_status_reports_drift_of_each_file_of_a_tree(sysenv):
    nvim_source(sysenv)
    apply(sysenv, NVIM)
    nvim = sysenv.home / ".config" / "nvim"
    (nvim / "init.lua").write_text("edited by hand\n")
    (nvim / "lua" / "options.lua").unlink()
    p = sysenv.run("status")
    ok(p)
    lines = p.stdout.splitlines()
    # drifted in the home (first column), and what the apply would do (second)
    assert "M! file ~/.config/nvim/init.lua" in lines, p.stdout
    assert "DA file ~/.config/nvim/lua/options.lua" in lines, p.stdout
    assert " M file ~/.config/nvim/" in lines, p.stdout  # the tree, which the apply updates
    assert p.stdout.count("~/.config/nvim") == 3  # nothing else
    p = sysenv.run("status", "-v")
    assert "    in the home: content edited" in p.stdout
    assert "    in the home: deleted" in p.stdout


def test_tree_declared_as_a_directory_merged_or_empty(sysenv):
    put(sysenv.work / "dot" / "a" / "f", "f\n")
    (sysenv.work / "empty").mkdir()
    body = (
        'file { path = "~/t", ensure = "directory", source = "dot" }\n'
        'file { path = "~/t", mode = lib.mkForce("0600") }\n'
        'file { path = "~/e", source = "empty" }\n'
    )
    sysenv.write("sys.lua", HEADER + body)
    lines = plan_lines(sysenv)
    assert "+ file ~/t/ (tree: 1 file, 1 directory)" in lines
    assert "+ file ~/e/: will create" in lines  # an empty tree
    apply(sysenv, body)
    assert tree(sysenv.home) == {
        "e": ("dir", 0o755, None),
        "t": ("dir", 0o700, None),
        "t/a": ("dir", 0o700, None),
        "t/a/f": ("file", 0o600, b"f\n"),
    }
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/x", ensure = "directory", source = "dot/a/f" }\n'
    )
    p = sysenv.run("plan")
    assert p.returncode == 2
    assert 'ensure = "directory" with a `source` needs a directory source' in p.stderr
