"""`sys add` never loses the repository's side (issue 21, point 2).

When the source file changed since the last apply (an edit, a pull,
uncommitted work) and the home copy changed too, `sys add` refuses (exit
1, nothing changed) with both diffs and how to resolve it. With `--force`
the source's current bytes are kept first, in the `add` snapshot, and
`sys rollback` of the add puts the source back as it was while the home
file keeps what was added (marked as an edit again). A mode-only edit that
the declaration sets otherwise is refused (exit 1) naming the line that
sets the mode.
"""

from __future__ import annotations

import json
import os

from conftest import HEADER, history, out, plan_line, put, store_read, tree

VIMRC = 'file { path = "~/.vimrc", source = "dotfiles/vimrc" }\n'
EDITED = "edited since the last apply"


def apply_ok(sysenv, body: str, *args: str):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply", *args)
    assert p.returncode == 0, out(p)
    return p


def both_changed(sysenv):  # type: ignore[no-untyped-def]
    """~/.vimrc applied from dotfiles/vimrc, then changed on both sides."""
    source = put(sysenv.work / "dotfiles" / "vimrc", "set nu\n", 0o640)
    apply_ok(sysenv, VIMRC)
    source.write_text('set nu\n" pulled from the repository\n')
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    return source


def test_source_and_home_both_changed_is_refused_with_both_diffs(sysenv) -> None:
    both_changed(sysenv)
    work, home, snaps = tree(sysenv.work), tree(sysenv.home), history(sysenv)
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 1, out(p)
    assert (
        "Error: ~/.vimrc and its source dotfiles/vimrc (declared at sys.lua:3) both changed "
        "since the last apply: copying it over the source would lose the source's change"
    ) in p.stderr, out(p)
    lines = p.stdout.splitlines()
    source_diff = lines.index("--- dotfiles/vimrc (last applied)")
    assert lines[source_diff : source_diff + 5] == [
        "--- dotfiles/vimrc (last applied)",
        "+++ dotfiles/vimrc (now)",
        "@@ -1 +1,2 @@",
        " set nu",
        '+" pulled from the repository',
    ], p.stdout
    home_diff = lines.index("--- ~/.vimrc (last applied)")
    assert lines[home_diff : home_diff + 5] == [
        "--- ~/.vimrc (last applied)",
        "+++ ~/.vimrc (now)",
        "@@ -1 +1,2 @@",
        " set nu",
        "+set hls",
    ], p.stdout
    assert (
        "Merge them into ~/.vimrc and run `sys add --force ~/.vimrc` (the source's content is "
        "kept first: `sys rollback` brings it back), or merge them into dotfiles/vimrc and run "
        "`sys apply --overwrite ~/.vimrc`."
    ) in p.stdout, p.stdout
    assert lines[-1] == "Nothing was changed."
    assert "Traceback" not in out(p)
    assert tree(sysenv.work) == work and tree(sysenv.home) == home
    assert history(sysenv) == snaps


def test_a_directory_with_one_file_changed_on_both_sides_changes_nothing(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "nvim" / "init.lua", "-- init\n")
    put(sysenv.work / "dotfiles" / "nvim" / "opts.lua", "-- opts\n")
    apply_ok(sysenv, 'file { path = "~/.config/nvim", source = "dotfiles/nvim" }\n')
    (sysenv.work / "dotfiles" / "nvim" / "opts.lua").write_text("-- opts, pulled\n")
    (sysenv.home / ".config" / "nvim" / "opts.lua").write_text("-- opts, mine\n")
    (sysenv.home / ".config" / "nvim" / "init.lua").write_text("-- init, mine\n")
    work, home = tree(sysenv.work), tree(sysenv.home)
    p = sysenv.run("add", "~/.config/nvim")
    assert p.returncode == 1, out(p)
    assert "~/.config/nvim/opts.lua and its source dotfiles/nvim/opts.lua" in p.stderr, out(p)
    assert "init.lua" not in p.stderr
    assert tree(sysenv.work) == work and tree(sysenv.home) == home


def test_force_keeps_the_source_and_rollback_puts_it_back(sysenv) -> None:
    source = both_changed(sysenv)
    before = source.read_bytes()
    p = sysenv.run("add", "--force", "~/.vimrc")
    assert p.returncode == 0, out(p)
    assert "~/.vimrc: copied over its source dotfiles/vimrc (declared at sys.lua:3)" in p.stdout
    assert source.read_text() == "set nu\nset hls\n"
    assert source.stat().st_mode & 0o777 == 0o640
    # the source's bytes were kept in the store, by the add snapshot
    h = history(sysenv)
    assert h[0]["kind"] == "add" and h[0]["current"]
    show = json.loads(sysenv.run("snapshot", "show", "--json").stdout)
    [record] = show["pre"]["records"]
    assert record["path"] == str(source)
    assert store_read(sysenv.root, record["prev"]["blob"]) == before
    # the rollback of the add puts the source back, byte for byte; the home keeps the add
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert "Put back" in r.stdout and "which `sys add` overwrote" in r.stdout, out(r)
    assert source.read_bytes() == before
    assert source.stat().st_mode & 0o777 == 0o640
    assert (sysenv.home / ".vimrc").read_text() == "set nu\nset hls\n"
    assert not [f for f in os.listdir(source.parent) if f != "vimrc"]  # no temp file left
    # the home's content is a hand edit again: marked, and refused as before the add
    assert plan_line(sysenv.run("plan"), "~/.vimrc").startswith(f"  ! file ~/.vimrc: {EDITED}")
    assert sysenv.run("apply").returncode == 2
    assert sysenv.run("add", "~/.vimrc").returncode == 1
    assert source.read_bytes() == before


def test_rollback_of_an_add_puts_the_source_back(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC)
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    assert sysenv.run("add", "~/.vimrc").returncode == 0
    assert source.read_text() == "set nu\nset hls\n"
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert source.read_text() == "set nu\n"  # the one write of a rollback into the repository
    assert (sysenv.home / ".vimrc").read_text() == "set nu\nset hls\n"
    assert (
        "~/.vimrc holds an edit made by hand again: the next sys apply refuses to overwrite it"
    ) in r.stdout, out(r)
    assert history(sysenv)[0]["kind"] == "rollback"
    # added again: the source had not changed since the last apply
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 0, out(p)
    assert source.read_text() == "set nu\nset hls\n"
    assert plan_line(sysenv.run("plan", "-v"), "~/.vimrc").startswith("  = ")


def test_rolling_back_the_rollback_of_an_add_redoes_it(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC)
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    assert sysenv.run("add", "~/.vimrc").returncode == 0
    added = tree(sysenv.work), tree(sysenv.home)
    assert sysenv.run("rollback").returncode == 0
    assert source.read_text() == "set nu\n"
    r = sysenv.run("rollback")  # to the add snapshot: its write into the source again
    assert r.returncode == 0, out(r)
    assert (tree(sysenv.work), tree(sysenv.home)) == added
    assert plan_line(sysenv.run("plan", "-v"), "~/.vimrc").startswith("  = ")
    assert [s["kind"] for s in history(sysenv)][:3] == ["rollback", "rollback", "add"]


def test_rollback_leaves_a_source_changed_since_the_add(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC)
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    assert sysenv.run("add", "~/.vimrc").returncode == 0
    source.write_text("set nu\nset hls\nset ic\n")  # committed on top of the add
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert "changed since `sys add` wrote it: left as it is" in r.stderr, out(r)
    assert source.read_text() == "set nu\nset hls\nset ic\n"


def test_only_the_source_changed_is_nothing_to_take_back(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC)
    source.write_text("set nu\nset ai\n")
    work, snaps = tree(sysenv.work), history(sysenv)
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 0, out(p)
    assert (
        "~/.vimrc: nothing to take back, it is as the last apply left it; its source "
        "dotfiles/vimrc changed since (the next sys apply copies that change)"
    ) in p.stdout, out(p)
    assert tree(sysenv.work) == work and history(sysenv) == snaps


def test_a_file_never_applied_that_differs_is_refused(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    put(sysenv.home / ".vimrc", "mine\n")
    sysenv.write("sys.lua", HEADER + VIMRC)
    work, home = tree(sysenv.work), tree(sysenv.home)
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 1, out(p)
    assert "~/.vimrc was never applied, and its content differs from its source" in p.stderr
    assert "+++ ~/.vimrc (live)" in p.stdout, out(p)
    assert tree(sysenv.work) == work and tree(sysenv.home) == home


# -- a mode-only edit ----------------------------------------------------------------
def test_a_mode_only_edit_names_the_line_that_sets_the_mode(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC)  # the mode comes from the defaults {} on line 2
    os.chmod(sysenv.home / ".vimrc", 0o600)
    work, home, snaps = tree(sysenv.work), tree(sysenv.home), history(sysenv)
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 1, out(p)
    assert (
        "Error: ~/.vimrc: only its mode changed (0644 to 0600), and `sys add` does not take a "
        "mode back: the config declares its mode, 0644, at sys.lua:2. Change that line to keep 0600, or put 0644 "
        "back with `sys apply --overwrite ~/.vimrc`"
    ) in p.stderr, out(p)
    assert "taken back" not in p.stdout
    assert tree(sysenv.work) == work and tree(sysenv.home) == home
    assert history(sysenv) == snaps
    # as it says: --overwrite puts the declared mode back
    p = sysenv.run("apply", "--overwrite", "~/.vimrc")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / ".vimrc").stat().st_mode & 0o777 == 0o644


def test_the_mode_line_of_the_declaration_itself(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    put(sysenv.work / "dotfiles" / "inputrc", "set bell-style none\n")
    apply_ok(
        sysenv,
        'file { path = "~/.vimrc", source = "dotfiles/vimrc", mode = "0640" }\n'
        "file {\n"
        '  path = "~/.inputrc",\n'
        '  source = "dotfiles/inputrc",\n'
        '  mode = "0600", -- private\n'
        "}\n",
    )
    os.chmod(sysenv.home / ".vimrc", 0o644)
    os.chmod(sysenv.home / ".inputrc", 0o644)
    p = sysenv.run("add", "~/.vimrc", "~/.inputrc")
    assert p.returncode == 1, out(p)
    assert "the config declares its mode, 0640, at sys.lua:3" in p.stderr, out(p)
    assert "the config declares its mode, 0600, at sys.lua:7" in p.stderr, out(p)


def test_a_content_and_mode_edit_takes_the_content_back(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, VIMRC)
    (sysenv.home / ".vimrc").write_text("set nu\nset hls\n")
    os.chmod(sysenv.home / ".vimrc", 0o600)
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 0, out(p)
    assert (
        "~/.vimrc: copied over its source dotfiles/vimrc (declared at sys.lua:3); its mode 0600 "
        "is not taken back: the config declares its mode, 0644, at sys.lua:2 (change that line to "
        "keep 0600)"
    ) in p.stdout, out(p)
    assert source.read_text() == "set nu\nset hls\n"
    line = plan_line(sysenv.run("plan"), "~/.vimrc")
    assert line.startswith("  ! ") and "mode changed from 0644 to 0600" in line


def test_a_file_that_replaced_a_link_is_refused_when_the_source_changed_after_it(sysenv) -> None:
    """An editor saved ~/.zshrc by renaming a new file over the managed link;
    then a pull changed the source. Copying the file back would lose the pull."""
    source = put(sysenv.work / "dotfiles" / "zshrc", "setopt a\n")
    apply_ok(sysenv, 'file { path = "~/.zshrc", source = "dotfiles/zshrc", link = true }\n')
    saved = sysenv.home / ".zshrc.new"
    saved.write_text("setopt a\nalias k=kubectl\n")
    os.utime(saved, ns=(1_000_000_000, 1_000_000_000))  # saved long before the pull
    os.replace(saved, sysenv.home / ".zshrc")
    source.write_text("setopt a\nsetopt correct\n")
    work, home = tree(sysenv.work), tree(sysenv.home)
    p = sysenv.run("add", "~/.zshrc")
    assert p.returncode == 1, out(p)
    assert "changed after that: copying the file over it would lose that change" in out(p)
    assert "+alias k=kubectl" in p.stdout and "-setopt correct" in p.stdout
    assert "sys add --force ~/.zshrc" in out(p)
    assert tree(sysenv.work) == work and tree(sysenv.home) == home
    f = sysenv.run("add", "--force", "~/.zshrc")
    assert f.returncode == 0, out(f)
    assert source.read_text() == "setopt a\nalias k=kubectl\n"
    assert os.readlink(sysenv.home / ".zshrc") == str(source)
    r = sysenv.run("rollback")  # the add kept the pulled source first
    assert r.returncode == 0, out(r)
    assert source.read_text() == "setopt a\nsetopt correct\n"


def test_a_file_that_replaced_a_link_after_the_last_source_change_is_taken_back(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "zshrc", "setopt a\n")
    os.utime(source, ns=(1_000_000_000, 1_000_000_000))
    apply_ok(sysenv, 'file { path = "~/.zshrc", source = "dotfiles/zshrc", link = true }\n')
    saved = sysenv.home / ".zshrc.new"
    saved.write_text("setopt a\nalias k=kubectl\n")
    os.replace(saved, sysenv.home / ".zshrc")
    p = sysenv.run("add", "~/.zshrc")
    assert p.returncode == 0, out(p)
    assert source.read_text() == "setopt a\nalias k=kubectl\n"
    assert os.readlink(sysenv.home / ".zshrc") == str(source)


# -- two paths of one add that would write the same source -------------------------
def test_two_paths_with_one_source_and_different_edits_are_refused(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "bashrc", "alias a=1\n")
    apply_ok(
        sysenv,
        'file { path = "~/.bashrc", source = "dotfiles/bashrc" }\n'
        'file { path = "~/.bashrc2", source = "./dotfiles/../dotfiles/bashrc" }\n',
    )
    (sysenv.home / ".bashrc").write_text("alias a=1\n# edit1\n")
    (sysenv.home / ".bashrc2").write_text("alias a=1\n# edit2\n")
    work, home, snaps = tree(sysenv.work), tree(sysenv.home), history(sysenv)
    p = sysenv.run("add", "~/.bashrc", "~/.bashrc2")
    assert p.returncode == 1, out(p)
    assert (
        "~/.bashrc and ~/.bashrc2 would both be copied over dotfiles/bashrc, and their "
        "contents differ"
    ) in p.stderr, out(p)
    assert p.stdout.splitlines()[-1] == "Nothing was changed."
    assert tree(sysenv.work) == work and tree(sysenv.home) == home
    assert history(sysenv) == snaps
    assert source.read_text() == "alias a=1\n"
    # one at a time, as the message says, the second is then refused as both changed
    assert sysenv.run("add", "~/.bashrc").returncode == 0
    assert source.read_text() == "alias a=1\n# edit1\n"


def test_two_paths_with_one_source_and_the_same_edit_are_taken_back(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "bashrc", "alias a=1\n")
    apply_ok(
        sysenv,
        'file { path = "~/.bashrc", source = "dotfiles/bashrc" }\n'
        'file { path = "~/.bashrc2", source = "dotfiles/bashrc" }\n',
    )
    for name in (".bashrc", ".bashrc2"):
        (sysenv.home / name).write_text("alias a=1\n# edit\n")
    p = sysenv.run("add", "~/.bashrc", "~/.bashrc2")
    assert p.returncode == 0, out(p)
    assert source.read_text() == "alias a=1\n# edit\n"
    assert plan_line(sysenv.run("plan", "-v"), "~/.bashrc").startswith("  = ")
    assert plan_line(sysenv.run("plan", "-v"), "~/.bashrc2").startswith("  = ")


def test_rollback_of_a_forced_add_over_a_link_keeps_the_added_file_in_the_home(sysenv) -> None:
    """A file replaced the managed link, a pull changed the source, `sys add
    --force` copied the file there and made the link again; the rollback puts
    the pulled source back, and the home keeps the added content, as a file
    (an edit again), not a link showing the pulled source."""
    source = put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    apply_ok(sysenv, 'file { path = "~/.vimrc", source = "dotfiles/vimrc", link = true }\n')
    vimrc = sysenv.home / ".vimrc"
    saved = sysenv.home / ".vimrc.new"
    saved.write_text("set nu\nset home\n")
    os.utime(saved, ns=(1_000_000_000, 1_000_000_000))  # saved before the pull
    os.replace(saved, vimrc)
    source.write_text("set nu\nset pulled\n")
    assert sysenv.run("add", "~/.vimrc").returncode == 1
    f = sysenv.run("add", "--force", "~/.vimrc")
    assert f.returncode == 0, out(f)
    assert os.readlink(vimrc) == str(source)
    assert source.read_text() == "set nu\nset home\n"
    r = sysenv.run("rollback")
    assert r.returncode == 0, out(r)
    assert source.read_text() == "set nu\nset pulled\n"
    assert not vimrc.is_symlink() and vimrc.read_text() == "set nu\nset home\n", out(r)
    assert "~/.vimrc holds an edit made by hand again" in r.stdout, out(r)
    line = plan_line(sysenv.run("plan"), "~/.vimrc")
    assert line.startswith("  ! file ~/.vimrc: edited since the last apply"), line
    home = tree(sysenv.home)
    assert sysenv.run("apply").returncode == 2
    assert tree(sysenv.home) == home
    # rolled back again, the add is redone: the added content in the source, the link made again
    r2 = sysenv.run("rollback")
    assert r2.returncode == 0, out(r2)
    assert source.read_text() == "set nu\nset home\n"
    assert os.readlink(vimrc) == str(source)
    assert plan_line(sysenv.run("plan", "-v"), "~/.vimrc").startswith("  = ")


# -- a file never applied, with no snapshot to keep the source in ----------------------
def git_repo(work) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(work), *args], check=True, capture_output=True)

    git("init", "-q", ".")
    git("-c", "user.email=a@b", "-c", "user.name=a", "add", "-A")
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init")


def test_force_with_no_snapshot_refuses_a_source_not_committed(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "vimrc", "repo version\n")
    put(sysenv.home / ".vimrc", "home version\n")
    sysenv.write("sys.lua", HEADER + VIMRC)
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 1, out(p)
    # what the hints say works: --force keeps nothing here, so it says to commit first
    assert "kept first" not in p.stdout, p.stdout
    assert (
        "Commit dotfiles/vimrc, merge them into ~/.vimrc and run `sys add --force ~/.vimrc` "
        "(there is no snapshot yet to keep the source's content in: git brings it back), "
        "or merge them into dotfiles/vimrc and run `sys apply` (it keeps ~/.vimrc as the "
        "original it takes over)."
    ) in p.stdout, p.stdout
    work, home = tree(sysenv.work), tree(sysenv.home)
    f = sysenv.run("add", "--force", "~/.vimrc")
    assert f.returncode == 1, out(f)
    assert (
        "Error: dotfiles/vimrc: there is no snapshot yet to keep its content in, and it is not "
        "committed: commit it first (git then brings it back)"
    ) in f.stderr, out(f)
    assert tree(sysenv.work) == work and tree(sysenv.home) == home
    assert source.read_text() == "repo version\n"


def test_force_with_no_snapshot_copies_over_a_committed_source(sysenv) -> None:
    source = put(sysenv.work / "dotfiles" / "vimrc", "repo version\n")
    put(sysenv.home / ".vimrc", "home version\n")
    sysenv.write("sys.lua", HEADER + VIMRC)
    git_repo(sysenv.work)
    f = sysenv.run("add", "--force", "~/.vimrc")
    assert f.returncode == 0, out(f)
    assert source.read_text() == "home version\n"


def test_the_apply_hint_for_a_file_never_applied_works(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "x", "x\n")
    apply_ok(sysenv, 'file { path = "~/.x", source = "dotfiles/x" }\n')
    source = put(sysenv.work / "dotfiles" / "vimrc", "repo version\n")
    put(sysenv.home / ".vimrc", "home version\n")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/.x", source = "dotfiles/x" }\n' + VIMRC)
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 1, out(p)
    assert (
        "Merge them into ~/.vimrc and run `sys add --force ~/.vimrc` (the source's content is "
        "kept first: `sys rollback` brings it back), or merge them into dotfiles/vimrc and run "
        "`sys apply` (it keeps ~/.vimrc as the original it takes over)."
    ) in p.stdout, p.stdout
    a = sysenv.run("apply")
    assert a.returncode == 0, out(a)
    assert (sysenv.home / ".vimrc").read_text() == "repo version\n"
    # and the other hint: --force, then rollback puts the source back
    (sysenv.home / ".vimrc").write_text("home again\n")
    source.write_text("repo again\n")
    assert sysenv.run("add", "--force", "~/.vimrc").returncode == 0
    assert source.read_text() == "home again\n"
    assert sysenv.run("rollback").returncode == 0
    assert source.read_text() == "repo again\n"


def test_a_link_retargeted_by_hand_is_refused_saying_what_works(sysenv) -> None:
    put(sysenv.work / "dotfiles" / "vimrc", "set nu\n")
    other = put(sysenv.home / "other", "other\n")
    apply_ok(sysenv, 'file { path = "~/.vimrc", source = "dotfiles/vimrc", link = true }\n')
    os.unlink(sysenv.home / ".vimrc")
    os.symlink(other, sysenv.home / ".vimrc")
    work, home, snaps = tree(sysenv.work), tree(sysenv.home), history(sysenv)
    p = sysenv.run("add", "~/.vimrc")
    assert p.returncode == 1, out(p)
    assert (
        f"Error: ~/.vimrc: the link was pointed to {other} by hand, and `sys add` does not take "
        "a link's target back: change its declaration (sys.lua:3) to keep it, or point it back "
        "with `sys apply --overwrite ~/.vimrc`"
    ) in p.stderr, out(p)
    assert tree(sysenv.work) == work and tree(sysenv.home) == home
    assert history(sysenv) == snaps
    a = sysenv.run("apply", "--overwrite", "~/.vimrc")
    assert a.returncode == 0, out(a)
    assert os.readlink(sysenv.home / ".vimrc") == str(sysenv.work / "dotfiles" / "vimrc")
