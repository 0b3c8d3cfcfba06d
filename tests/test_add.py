"""`sys add PATH...`: live edits taken back into the configuration (issue 10).

A file managed from a `source` has its live content copied over that source
(atomically, keeping the source's own mode; when the source changed too, see
tests/test_add_safety.py); a file declared with inline
`content` is refused with the declaration's file:line (exit 2, nothing
changed); a file nothing manages is copied to `<config dir>/dotfiles/<path
under ~>` (or `--to DIR`) and the declaration to add is printed, the config
itself untouched; a directory adds every file under it. Afterwards
`sys plan` shows no change for those paths.
"""

from __future__ import annotations

import json
import os

from conftest import HEADER, history, out, plan_line, put, store_objects, store_read, tree

VIMRC = 'file { path = "~/.vimrc", source = "dotfiles/vimrc" }\n'
GITCONFIG = 'file { path = "~/.gitconfig", content = "[user]\\n\\tname = me\\n" }\n'


def apply_ok(sysenv, body: str):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    return p


def test_a_file_from_a_source_is_copied_over_its_source(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n", 0o640)
    apply_ok(sysenv, VIMRC)
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    p = sysenv.run("add", "~/.vimrc")  # ~ as the user typed it, unexpanded
    assert p.returncode == 0, out(p)
    assert "~/.vimrc: copied over its source dotfiles/vimrc (declared at sys.lua:3)" in p.stdout
    source = sysenv.work / "dotfiles" / "vimrc"
    assert source.read_text() == "set nu\nset hls\n"
    assert source.stat().st_mode & 0o777 == 0o640  # the source keeps its own mode
    assert not [f for f in os.listdir(source.parent) if f != "vimrc"]  # no temp file left
    plan = sysenv.run("plan", "-v")  # unchanged items are listed with -v
    assert plan_line(plan, "~/.vimrc").startswith("  = file ~/.vimrc: unchanged"), plan.stdout
    assert "No changes." in sysenv.run("apply").stdout
    h = history(sysenv)
    assert h[0]["kind"] == "add" and h[0]["current"] and h[0]["message"] == "add ~/.vimrc"
    # adding it again finds nothing to take back, and records nothing
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 0 and "~/.vimrc: already the same as its source" in p.stdout, out(p)
    assert history(sysenv) == h
    # what was taken back counts as applied: a later change of the source is
    # an ordinary update, not an edit of ~/.vimrc
    source.write_text("set nu\nset hls\nset ic\n")
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / ".vimrc").read_text() == "set nu\nset hls\nset ic\n"


def test_the_overwritten_source_content_is_kept(sysenv) -> None:
    """The source had its own unapplied change (so `sys add` needs --force,
    tests/test_add_safety.py): it is kept in the store, and the add snapshot
    refers to it (so `sys gc` keeps it)."""
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC)
    (sysenv.work / "dotfiles" / "vimrc").write_text('set nu\n" unapplied repository change\n')
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    assert sysenv.run("add", "--force", str(sysenv.home / ".vimrc")).returncode == 0
    show = json.loads(sysenv.run("snapshot", "show", "--json").stdout)
    [record] = show["pre"]["records"]
    assert record["path"] == str(sysenv.work / "dotfiles" / "vimrc")
    blob = record["prev"]["blob"]
    assert store_read(sysenv.root, blob) == b'set nu\n" unapplied repository change\n'
    assert sysenv.run("gc", "--keep", "0").returncode == 0
    assert blob in store_objects(sysenv.root)


def test_inline_content_is_refused_with_the_declaration(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC + GITCONFIG)
    (sysenv.home / ".gitconfig").write_text("[user]\n\tname = someone\n")
    (sysenv.home / ".vimrc").write_text("set hls\n")
    home, work, snaps = tree(sysenv.home), tree(sysenv.work), history(sysenv)
    p = sysenv.run("add", "~/.vimrc", "~/.gitconfig")
    assert p.returncode == 2, out(p)
    assert (
        "Error: ~/.gitconfig is declared with inline `content` at sys.lua:4: edit it there"
        in p.stderr
    ), out(p)
    assert "Nothing was changed." in p.stdout
    assert "Traceback" not in out(p)
    # nothing changed, not even the path that could have been taken back
    assert tree(sysenv.home) == home and tree(sysenv.work) == work
    assert history(sysenv) == snaps


def test_an_unmanaged_file_is_copied_and_its_declaration_printed(sysenv) -> None:
    put(sysenv.home / ".tmux.conf", "set -g mouse on\n")
    put(sysenv.home / "bin" / "hello", "#!/bin/sh\necho hi\n", 0o755)
    config = HEADER + 'file { path = "~/bin", ensure = "directory", mode = "0755" }\n'
    sysenv.write("sys.lua", config)
    p = sysenv.run("add", "~/.tmux.conf", "~/bin/hello")
    assert p.returncode == 0, out(p)
    assert 'file { path = "~/.tmux.conf", source = "dotfiles/.tmux.conf" }' in p.stdout
    assert 'file { path = "~/bin/hello", source = "dotfiles/bin/hello", mode = "0755" }' in p.stdout
    assert (sysenv.work / "dotfiles" / ".tmux.conf").read_text() == "set -g mouse on\n"
    assert (sysenv.work / "dotfiles" / "bin" / "hello").stat().st_mode & 0o777 == 0o755
    assert (sysenv.work / "sys.lua").read_text() == config  # the config is never edited
    # with the printed declarations added, the plan has nothing to change there
    sysenv.write(
        "sys.lua",
        config
        + 'file { path = "~/.tmux.conf", source = "dotfiles/.tmux.conf" }\n'
        + 'file { path = "~/bin/hello", source = "dotfiles/bin/hello", mode = "0755" }\n',
    )
    plan = sysenv.run("plan", "-v")
    assert plan_line(plan, "~/.tmux.conf").startswith("  = "), plan.stdout
    assert plan_line(plan, "~/bin/hello").startswith("  = "), plan.stdout


def test_to_dir(sysenv) -> None:
    put(sysenv.home / ".config" / "git" / "ignore", "*.swp\n")
    sysenv.write("sys.lua", HEADER)
    p = sysenv.run("add", "--to", "repo", "~/.config/git/ignore")
    assert p.returncode == 0, out(p)
    assert (sysenv.work / "repo" / ".config" / "git" / "ignore").read_text() == "*.swp\n"
    assert 'source = "repo/.config/git/ignore"' in p.stdout
    outside = sysenv.home / "elsewhere"
    p = sysenv.run("add", "--to", str(outside), "~/.config/git/ignore")
    assert p.returncode == 0, out(p)
    assert (outside / ".config" / "git" / "ignore").is_file()
    assert 'source = "~/elsewhere/.config/git/ignore"' in p.stdout


def test_a_directory_adds_every_file_under_it(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "nvim" / "init.lua", "-- init\n")
    apply_ok(
        sysenv,
        """
file { path = "~/.config", ensure = "directory", mode = "0755" }
file { path = "~/.config/nvim", ensure = "directory", mode = "0755" }
file { path = "~/.config/nvim/init.lua", source = "dotfiles/nvim/init.lua" }
""",
    )
    (sysenv.home / ".config" / "nvim" / "init.lua").write_text("-- init, edited\n")
    put(sysenv.home / ".config" / "nvim" / "lua" / "opts.lua", "vim.o.nu = true\n")
    put(sysenv.home / ".config" / "nvim" / ".git" / "HEAD", "ref: refs/heads/main\n")
    p = sysenv.run("add", "~/.config/nvim")
    assert p.returncode == 0, out(p)
    assert (sysenv.work / "dotfiles" / "nvim" / "init.lua").read_text() == "-- init, edited\n"
    assert (sysenv.work / "dotfiles" / ".config" / "nvim" / "lua" / "opts.lua").is_file()
    assert not (sysenv.work / "dotfiles" / ".config" / "nvim" / ".git").exists()
    assert (
        'file { path = "~/.config/nvim/lua/opts.lua", source = "dotfiles/.config/nvim/lua/opts.lua" }'
        in p.stdout
    )
    assert plan_line(sysenv.run("plan", "-v"), "~/.config/nvim/init.lua").startswith("  = ")


def test_a_mode_edit_is_not_taken_back_and_says_so(sysenv) -> None:
    """Refused, naming the line that sets the mode (issue 21; more in
    tests/test_add_safety.py)."""
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC)
    os.chmod(sysenv.home / ".vimrc", 0o600)
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 1, out(p)
    assert (
        "only its mode changed (0644 to 0600), and `sys add` does not take a mode back: the config declares its mode, 0644, at sys.lua:2"
        in p.stderr
    )
    line = plan_line(sysenv.run("plan"), "~/.vimrc")
    assert line.startswith("  ! ") and "mode changed from 0644 to 0600" in line


def test_refusals(sysenv) -> None:
    sysenv.write("sys.lua", HEADER)
    put(sysenv.home / ".tmux.conf", "mine\n")
    put(sysenv.work / "dotfiles" / ".tmux.conf", "another\n")
    os.symlink(".tmux.conf", sysenv.home / ".tmux.link")
    before = tree(sysenv.work)
    cases = {
        "~/.tmux.conf": "dotfiles/.tmux.conf already exists with other content",
        "~/.tmux.link": "~/.tmux.link is a symlink to .tmux.conf",
        "/etc/hostname": "is not under your home directory",
    }
    for path, needle in cases.items():
        p = sysenv.run("add", path)
        assert p.returncode == 2, out(p)
        assert needle in p.stderr, out(p)
        assert "Traceback" not in out(p)
    p = sysenv.run("add", "~/missing")
    assert p.returncode == 2 and "~/missing: no such file or directory" in p.stderr, out(p)
    assert tree(sysenv.work) == before


def test_add_needs_a_config(sysenv) -> None:
    put(sysenv.home / ".tmux.conf", "mine\n")
    p = sysenv.run("add", "~/.tmux.conf")
    assert p.returncode == 2, out(p)
    # the hint names --config: `sys add ~/.tmux.conf path/to/sys.lua` would add the config
    assert (
        "Error: no config file: pass one (sys add --config path/to/sys.lua PATH) "
        "or create ./sys.lua (or ./init.lua) or ~/.config/syslua/sys.lua "
        "(or init.lua; sys init writes a starter)"
    ) in p.stderr, out(p)
    assert tree(sysenv.work) == {} and not (sysenv.home / "dotfiles").exists()
    other = sysenv.work / "elsewhere"
    sysenv.write("elsewhere/sys.lua", HEADER)
    p = sysenv.run("add", "--config", str(other / "sys.lua"), "~/.tmux.conf")
    assert p.returncode == 0, out(p)
    assert (other / "dotfiles" / ".tmux.conf").read_text() == "mine\n"


def test_add_json(sysenv) -> None:
    put(sysenv.home / ".tmux.conf", "mine\n")
    sysenv.write("sys.lua", HEADER)
    p = sysenv.run("add", "--json", "~/.tmux.conf")
    assert p.returncode == 0, out(p)
    data = json.loads(p.stdout)
    [entry] = data["added"]
    assert entry["path"] == str(sysenv.home / ".tmux.conf") and entry["managed"] is False
    assert entry["declaration"] == 'file { path = "~/.tmux.conf", source = "dotfiles/.tmux.conf" }'
    assert data["snapshot"] is None


def test_an_edit_copied_into_the_source_by_hand_is_adopted(sysenv) -> None:
    """The edit is already in the source (copied by hand): `sys add` has
    nothing to copy, but records it as applied, so that the next change of the
    source is not refused as overwriting an edit."""
    source = put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC)
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    source.write_text("set nu\nset hls\n")
    assert plan_line(sysenv.run("plan", "-v"), "~/.vimrc").startswith("  = ")
    source.write_text("set nu\nset hls\nset ic\n")  # a later change, from the repository
    assert sysenv.run("apply").returncode == 2  # syslua never wrote `set hls`: an edit
    source.write_text("set nu\nset hls\n")
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 0 and "already the same as its source" in p.stdout, out(p)
    assert history(sysenv)[0]["kind"] == "add"
    source.write_text("set nu\nset hls\nset ic\n")
    assert sysenv.run("apply").returncode == 0
    assert (sysenv.home / ".vimrc").read_text() == "set nu\nset hls\nset ic\n"


def test_a_link_needs_nothing(sysenv) -> None:
    """The file type's answer for a path managed as a link (`ensure = "link"`,
    or `link = true` beside `source`): nothing to take back, not a refusal.
    Checked on the hook itself, as links are declared by another part of the
    file type."""
    from syslua.manifest.model import Item, freeze
    from syslua.resources.file import FileType

    os.symlink(sysenv.work / "dotfiles" / "vimrc", sysenv.home / ".vimrc")
    for props in (
        {"ensure": "link", "target": str(sysenv.work / "dotfiles" / "vimrc")},
        {"ensure": "present", "link": True, "source": str(sysenv.work / "dotfiles" / "vimrc")},
    ):
        item = Item("file", str(sysenv.home / ".vimrc"), freeze(props))
        step = FileType().take_back(item, item.key, "sys.lua:3", None, None)  # type: ignore[arg-type]
        assert not step.refused and step.act is None and not step.writes
        assert step.message.startswith("~/.vimrc is managed as a link to ")
        assert step.message.endswith("nothing to do")
