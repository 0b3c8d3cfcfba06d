"""Edits, `sys add` and `sys destroy` on trees and links (issue 10, both halves).

A tree's files are items of their own, so an edit to one is found, shown on
its own line under the tree, refused, taken back into its source file by
`sys add`, or kept by `--force` for `sys rollback`, exactly as for a file
declared alone. A link is edited when it points elsewhere or a file replaced
it; `sys add` then puts the file's content where the link points and makes
the link again. Through the real CLI on real files.
"""

from __future__ import annotations

import os

from conftest import HEADER, ok, out, put, tree

EDITED = "edited since the last apply"
NVIM = 'file { path = "~/.config/nvim", source = "dot/nvim" }\n'


def nvim_source(sysenv):  # type: ignore[no-untyped-def]
    src = sysenv.work / "dot" / "nvim"
    put(src / "init.lua", "require('plugins')\n")
    put(src / "lua" / "options.lua", "vim.o.number = true\n")
    return src


def apply(sysenv, body: str, *args: str):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply", *args)
    ok(p)
    return p


def test_an_edited_member_is_shown_under_its_tree_refused_and_taken_back(sysenv):
    src = nvim_source(sysenv)
    apply(sysenv, NVIM)
    options = sysenv.home / ".config" / "nvim" / "lua" / "options.lua"
    options.write_text("vim.o.number = false\n")
    put(src / "init.lua", "require('plugins')\nrequire('keys')\n")  # a change in the source too
    p = sysenv.run("plan")
    assert p.returncode == 1, out(p)  # an edit: `sys apply` would refuse (issue 23)
    lines = [ln.strip() for ln in p.stdout.splitlines()]
    root = lines.index("~ file ~/.config/nvim/ (tree: 2 updated)")
    assert lines[root + 1].startswith(
        f"! file ~/.config/nvim/lua/options.lua: {EDITED} (content edited); "
    ), lines
    assert not any(ln.startswith("~ file ~/.config/nvim/init.lua") for ln in lines)
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert "Refusing to overwrite 1 path edited since the last apply:" in p.stdout + p.stderr
    assert "~/.config/nvim/lua/options.lua" in p.stdout + p.stderr
    assert tree(sysenv.home) == before
    # take it back: the edit goes into the member's own source file
    p = sysenv.run("add", str(options))
    ok(p)
    assert (src / "lua" / "options.lua").read_text() == "vim.o.number = false\n"
    apply(sysenv, NVIM)  # only init.lua changes now
    assert "No changes." in sysenv.run("plan").stdout


def test_sys_add_of_a_tree_directory_takes_back_every_edited_member(sysenv):
    src = nvim_source(sysenv)
    apply(sysenv, NVIM)
    nvim = sysenv.home / ".config" / "nvim"
    (nvim / "init.lua").write_text("edited init\n")
    (nvim / "lua" / "options.lua").write_text("edited options\n")
    p = sysenv.run("add", str(nvim))
    ok(p)
    assert (src / "init.lua").read_text() == "edited init\n"
    assert (src / "lua" / "options.lua").read_text() == "edited options\n"
    assert "No changes." in sysenv.run("plan").stdout


def test_force_overwrites_an_edited_member_and_rollback_brings_it_back(sysenv):
    nvim_source(sysenv)
    apply(sysenv, NVIM)
    init = sysenv.home / ".config" / "nvim" / "init.lua"
    init.write_text("my edit\n")
    apply(sysenv, NVIM, "--force")
    assert init.read_text() == "require('plugins')\n"
    ok(sysenv.run("rollback"))
    assert init.read_text() == "my edit\n"


def test_sys_add_refuses_a_templated_file(sysenv):
    put(sysenv.work / "dot" / "gitconfig", "[user]\n\temail = {{ lookup('facts.mail', 'a@b') }}\n")
    body = 'file { path = "~/.gitconfig", source = "dot/gitconfig", template = true }\n'
    apply(sysenv, body)
    (sysenv.home / ".gitconfig").write_text("[user]\n\temail = other@b\n")
    before = tree(sysenv.work)
    p = sysenv.run("add", str(sysenv.home / ".gitconfig"))
    assert p.returncode == 2, out(p)
    assert (
        "Error: ~/.gitconfig is rendered from the template dot/gitconfig (declared at sys.lua:3): "
        "edit the template (`sys add` does not copy a rendering over it)"
    ) in out(p)
    assert tree(sysenv.work) == before


def test_a_link_tree_needs_nothing_to_take_back(sysenv):
    src = nvim_source(sysenv)
    apply(sysenv, 'file { path = "~/.config/nvim", source = "dot/nvim", link = true }\n')
    with open(sysenv.home / ".config" / "nvim" / "init.lua", "a") as f:
        f.write("-- edited through the link\n")
    assert (src / "init.lua").read_text().endswith("-- edited through the link\n")
    assert "No changes." in sysenv.run("plan").stdout
    p = sysenv.run("add", str(sysenv.home / ".config" / "nvim" / "init.lua"))
    ok(p)
    assert "nothing to do" in p.stdout


def test_a_link_pointed_elsewhere_by_hand_is_an_edit_kept_by_force(sysenv):
    body = 'file { path = "~/.vimrc", ensure = "link", target = "/etc/hostname" }\n'
    apply(sysenv, body)
    os.unlink(sysenv.home / ".vimrc")
    os.symlink("/etc/passwd", sysenv.home / ".vimrc")
    p = sysenv.run("plan")
    assert p.returncode == 1, out(p)  # an edit: `sys apply` would refuse
    assert (
        f"! file ~/.vimrc: {EDITED} (link target changed from /etc/hostname to /etc/passwd)"
        in p.stdout
    )
    assert sysenv.run("apply").returncode == 2
    apply(sysenv, body, "--force")
    assert os.readlink(sysenv.home / ".vimrc") == "/etc/hostname"
    ok(sysenv.run("rollback"))
    assert os.readlink(sysenv.home / ".vimrc") == "/etc/passwd"


def test_a_file_that_replaced_a_link_is_taken_back_into_its_target(sysenv):
    repo = put(sysenv.work / "dot" / "vimrc", "set number\n")
    body = 'file { path = "~/.vimrc", source = "dot/vimrc", link = true }\n'
    apply(sysenv, body)
    vimrc = sysenv.home / ".vimrc"
    # an editor that saves by writing a new file replaces the link
    os.unlink(vimrc)
    vimrc.write_text("set number\nset ruler\n")
    p = sysenv.run("plan", "--diff")
    assert p.returncode == 1, out(p)  # an edit: `sys apply` would refuse
    assert f"! file ~/.vimrc: {EDITED} (a file replaced the link to {repo})" in p.stdout
    assert "+set ruler" in p.stdout
    assert sysenv.run("apply").returncode == 2
    p = sysenv.run("add", str(vimrc))
    ok(p)
    assert "its content was copied there, and the link is made again" in p.stdout
    assert repo.read_text() == "set number\nset ruler\n"
    assert vimrc.is_symlink() and os.readlink(vimrc) == str(repo)
    assert "No changes." in sysenv.run("plan").stdout


def test_force_over_a_file_that_replaced_a_link_keeps_it_for_rollback(sysenv):
    put(sysenv.work / "dot" / "vimrc", "set number\n")
    body = 'file { path = "~/.vimrc", source = "dot/vimrc", link = true }\n'
    apply(sysenv, body)
    vimrc = sysenv.home / ".vimrc"
    os.unlink(vimrc)
    put(vimrc, "written by an editor\n", 0o600)
    apply(sysenv, body, "--force")
    assert vimrc.is_symlink()
    ok(sysenv.run("rollback"))
    assert not vimrc.is_symlink() and vimrc.read_text() == "written by an editor\n"
    assert oct(vimrc.stat().st_mode & 0o777) == "0o600"


def test_destroy_removes_trees_links_and_parents_and_restores_originals(sysenv):
    nvim_source(sysenv)
    put(sysenv.work / "dot" / "vimrc", "set number\n")
    put(sysenv.home / ".config" / "nvim" / "init.lua", "hand-made\n", 0o600)
    put(sysenv.home / ".vimrc", "hand-made vimrc\n")
    before = tree(sysenv.home)
    apply(
        sysenv,
        NVIM
        + 'file { path = "~/.vimrc", source = "dot/vimrc", link = true }\n'
        + 'file { path = "~/.local/share/x/y", content = "y" }\n',
    )
    managed = tree(sysenv.home)
    p = sysenv.run("destroy", "--yes")
    ok(p)
    assert tree(sysenv.home) == before
    ok(sysenv.run("rollback"))
    assert tree(sysenv.home) == managed
