"""Links, templated sources and parent directories created on the way.

SPEC section 5 (Files, additions over the seed) and issue 10: `ensure =
"link"` with `target`, `link = true` beside `source` (a file, or every file
of a tree, links to its absolute source path; directories stay real), links
take no mode, `template = true` renders sources, and missing parents of any
managed path are created, shown, journaled and removed only when syslua
created them and they are empty. Through the real CLI on real files.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HEADER, history, ok, out, put, tree


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def apply(sysenv, body: str, *args: str):  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    # some tests remove every declaration on purpose
    p = sysenv.run("apply", *args, *(["--allow-empty"] if not body.strip() else []))
    ok(p)
    return p


def plan_text(sysenv, body: str) -> str:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("plan")
    ok(p)
    return p.stdout


def noop_text(sysenv) -> str:  # type: ignore[no-untyped-def]
    """What `sys apply --noop` says of the config plan_text wrote (the seeds' noop messages)."""
    p = sysenv.run("apply", "--noop")
    ok(p)
    return p.stdout


def rejected(sysenv, body: str, message: str) -> None:  # type: ignore[no-untyped-def]
    """A configuration error at the declaration: exit 2, the message, nothing changed."""
    before = tree(sysenv.home)
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert message in p.stderr, out(p)
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before


# -- links ------------------------------------------------------------------------
def test_link_true_makes_the_path_a_symlink_to_the_absolute_source(sysenv):
    put(sysenv.work / "dot" / "vimrc", "set number\n")
    text = plan_text(sysenv, 'file { path = "~/.vimrc", source = "dot/vimrc", link = true }\n')
    assert "  + file ~/.vimrc: will create\n" in text
    assert "~ file ~/.vimrc: Would have created the link (" in noop_text(sysenv)
    apply(sysenv, 'file { path = "~/.vimrc", source = "dot/vimrc", link = true }\n')
    vimrc = sysenv.home / ".vimrc"
    assert vimrc.is_symlink() and os.readlink(vimrc) == str(sysenv.work / "dot" / "vimrc")
    # an edit made in ~ lands in the repository, and the link stays as declared
    with open(vimrc, "a") as f:
        f.write("set ruler\n")
    assert (sysenv.work / "dot" / "vimrc").read_text() == "set number\nset ruler\n"
    assert "No changes." in sysenv.run("plan").stdout


def test_ensure_link_with_target_and_a_target_that_does_not_exist(sysenv):
    body = (
        'file { path = "~/.vimrc", ensure = "link", target = "~/dotfiles/vimrc" }\n'
        'file { path = "~/here", ensure = "link", target = "dot/here" }\n'
    )
    text = plan_text(sysenv, body)
    assert "  + file ~/.vimrc: will create (target does not exist)\n" in text
    noop = noop_text(sysenv)
    assert "~ file ~/.vimrc: Would have created the link (target does not exist)" in noop
    apply(sysenv, body)
    assert os.readlink(sysenv.home / ".vimrc") == str(sysenv.home / "dotfiles/vimrc")
    assert os.readlink(sysenv.home / "here") == str(sysenv.work / "dot/here")  # from the config dir
    put(sysenv.home / "dotfiles" / "vimrc", "now it exists\n")
    assert (sysenv.home / ".vimrc").read_text() == "now it exists\n"
    assert "No changes." in sysenv.run("plan").stdout


def test_a_link_changes_target_and_takes_over_a_file(sysenv):
    put(sysenv.home / ".vimrc", "hand-made\n", 0o600)
    os.symlink("/etc/hostname", sysenv.home / ".inputrc")
    before = tree(sysenv.home)
    apply(sysenv, "")  # a snapshot to roll back to
    body = (
        'file { path = "~/.vimrc", ensure = "link", target = "/etc/passwd" }\n'
        'file { path = "~/.inputrc", ensure = "link", target = "/etc/passwd" }\n'
    )
    text = plan_text(sysenv, body)
    assert (
        "~ file ~/.vimrc: will update (is a file, should be a symlink)"
        " - takes over an existing file; the original is kept"
    ) in text
    assert "~ file ~/.inputrc: will update (target /etc/hostname -> /etc/passwd)" in text
    noop = noop_text(sysenv)
    assert "~ file ~/.vimrc: Would have updated the link (is a file, should be a symlink)" in noop
    assert (
        "~ file ~/.inputrc: Would have updated the link (target /etc/hostname -> /etc/passwd)"
        in noop
    )
    apply(sysenv, body)
    assert os.readlink(sysenv.home / ".vimrc") == "/etc/passwd"
    assert os.readlink(sysenv.home / ".inputrc") == "/etc/passwd"
    # rollback: the file and the original link target come back
    ok(sysenv.run("rollback"))
    assert tree(sysenv.home) == before
    # and forward again, then removal: originals restored as well
    ids = [h["id"] for h in history(sysenv)]  # newest first: rollback, apply, empty
    ok(sysenv.run("rollback", ids[1]))
    assert os.readlink(sysenv.home / ".vimrc") == "/etc/passwd"
    apply(sysenv, "")
    assert tree(sysenv.home) == before


def test_rollback_removes_a_link_it_created(sysenv):
    apply(sysenv, 'file { path = "~/a", content = "a" }\n')
    apply(
        sysenv,
        'file { path = "~/a", content = "a" }\nfile { path = "~/l", ensure = "link", target = "/etc" }\n',
    )
    assert (sysenv.home / "l").is_symlink()
    ok(sysenv.run("rollback"))
    assert sorted(tree(sysenv.home)) == ["a"]


def test_a_failed_apply_puts_links_back(sysenv):
    os.symlink("/etc/hostname", sysenv.home / "l")
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER
        + 'local l = file { path = "~/l", ensure = "link", target = "/etc/passwd" }\n'
        + 'local m = file { path = "~/new/m", ensure = "link", target = "/etc/passwd" }\n'
        + 'exec { name = "boom", command = "false", depends_on = { l, m } }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 1 and "Apply failed. System unchanged." in p.stdout, out(p)
    assert tree(sysenv.home) == before


def test_a_link_tree_links_every_file_and_keeps_directories_real(sysenv):
    src = sysenv.work / "dot" / "nvim"
    put(src / "init.lua", "x\n")
    put(src / "lua" / "a.lua", "a\n", 0o755)
    body = 'file { path = "~/.config/nvim", source = "dot/nvim", link = true }\n'
    assert "+ file ~/.config/nvim/ (tree: 2 links, 1 directory)" in plan_text(sysenv, body)
    apply(sysenv, body)
    assert tree(sysenv.home / ".config") == {
        "nvim": ("dir", 0o755, None),
        "nvim/init.lua": ("link", 0o777, str(src / "init.lua")),
        "nvim/lua": ("dir", 0o755, None),
        "nvim/lua/a.lua": ("link", 0o777, str(src / "lua" / "a.lua")),
    }
    put(src / "lua" / "b.lua", "b\n")
    assert "~ file ~/.config/nvim/ (tree: 1 added)" in plan_text(sysenv, body)


def test_links_take_no_mode(sysenv):
    # a mode from defaults{} does not apply to a link (HEADER gives one)
    apply(sysenv, 'file { path = "~/l", ensure = "link", target = "/etc" }\n')
    assert "No changes." in sysenv.run("plan").stdout
    rejected(
        sysenv,
        'file { path = "~/m", ensure = "link", target = "/etc", mode = "0644" }\n',
        "sys.lua:3: file ~/m: a link takes no `mode` (the mode of what it points to applies)",
    )
    put(sysenv.work / "dot" / "x", "x\n")
    rejected(
        sysenv,
        'file { path = "~/t", source = "dot", link = true, mode = lib.mkDefault("0600") }\n',
        "a link takes no `mode` (the mode of what it points to applies); "
        "`dir_mode` sets the mode of a tree's directories",
    )


@pytest.mark.parametrize(
    "decl,message",
    [
        (
            'file { path = "~/x", source = "dot/x", link = true, template = true }',
            "file ~/x: `template` and `link` are mutually exclusive",
        ),
        (
            'file { path = "~/x", content = "x", link = true }',
            '`link = true` makes a symlink to `source`; for any other target use ensure = "link" with `target`',
        ),
        ('file { path = "~/x", ensure = "link" }', 'file ~/x: ensure = "link" needs a `target`'),
        (
            'file { path = "~/x", target = "/etc" }',
            'file ~/x: `target` only applies to ensure = "link"',
        ),
        (
            'file { path = "~/x", ensure = "link", target = "/etc", content = "x" }',
            '`content` only applies to ensure = "present" (this file has ensure = "link")',
        ),
        (
            'file { path = "~/x", content = "x", template = true }',
            "`template = true` renders `source`; inline `content` is always rendered",
        ),
        (
            'file { path = "~/x", content = "x", ignore = "*.swp" }',
            "`ignore` applies to a directory `source`",
        ),
        ('file { path = "~/x", link = "yes", source = "dot/x" }', "`link`: expected true or false"),
    ],
)
def test_link_and_template_rules_are_configuration_errors(sysenv, decl, message):
    put(sysenv.work / "dot" / "x", "x\n")
    rejected(sysenv, decl + "\n", message)


# -- templated sources ------------------------------------------------------------
def test_template_renders_a_source_file(sysenv):
    put(
        sysenv.work / "dot" / "gitconfig",
        "[user]\n\temail = {{ lookup('data.email', 'me@home') }}\n\thost = {{ lookup('facts.hostname') }}\n"
        "\tleft = {{ .Alone }} ${HOME}\n",
    )
    body = 'file { path = "~/.gitconfig", source = "dot/gitconfig", template = true }\n'
    apply(sysenv, body, "--fact", "hostname=laptop")
    assert (sysenv.home / ".gitconfig").read_text() == (
        "[user]\n\temail = me@home\n\thost = laptop\n\tleft = {{ .Alone }} ${HOME}\n"
    )
    sysenv.write("sys.lua", HEADER + body)
    p = sysenv.run("plan", "--fact", "hostname=desktop", "--diff")
    ok(p)
    assert "-\thost = laptop" in p.stdout and "+\thost = desktop" in p.stdout
    # the template source is a config input: the snapshot keeps it
    assert str(sysenv.work / "dot" / "gitconfig") in sysenv.run("snapshot", "show").stdout


def test_template_tree_renders_each_file_and_keeps_modes(sysenv):
    src = sysenv.work / "dot" / "conf"
    put(src / "a.conf", "host={{ lookup('facts.hostname') }}\n")
    put(src / "bin" / "run", "#!/bin/sh\necho {{ lookup('facts.hostname') }}\n", 0o755)
    put(src / "plain.txt", "no lookups ${X}\n")
    apply(
        sysenv,
        'file { path = "~/conf", source = "dot/conf", template = true }\n',
        "--fact",
        "hostname=box",
    )
    assert tree(sysenv.home / "conf") == {
        "a.conf": ("file", 0o644, b"host=box\n"),
        "bin": ("dir", 0o755, None),
        "bin/run": ("file", 0o755, b"#!/bin/sh\necho box\n"),
        "plain.txt": ("file", 0o644, b"no lookups ${X}\n"),
    }


def test_a_template_with_a_missing_key_is_an_error_at_the_declaration(sysenv):
    put(sysenv.work / "dot" / "t", "{{ lookup('data.nope') }}\n")
    rejected(
        sysenv,
        'file { path = "~/t", source = "dot/t", template = true }\n',
        f"sys.lua:3: file ~/t: {sysenv.work}/dot/t: lookup('data.nope'): no such key",
    )


# -- parents --------------------------------------------------------------------------
def test_missing_parents_are_created_shown_and_owned_like_the_declaration(sysenv):
    body = 'file { path = "~/.config/a/b/f", content = "f\\n" }\n'
    text = plan_text(sysenv, body)
    lines = [ln.strip() for ln in text.splitlines()]
    i = lines.index("+ dir ~/.config (parent)")
    assert lines[i : i + 4] == [
        "+ dir ~/.config (parent)",
        "+ dir ~/.config/a (parent)",
        "+ dir ~/.config/a/b (parent)",
        "+ file ~/.config/a/b/f: will create",
    ]
    # The parents are created by the item: not items, so not counted.
    assert "Plan: 1 to create" in text
    apply(sysenv, body)
    assert tree(sysenv.home) == {
        ".config": ("dir", 0o755, None),
        ".config/a": ("dir", 0o755, None),
        ".config/a/b": ("dir", 0o755, None),
        ".config/a/b/f": ("file", 0o644, b"f\n"),
    }
    st = os.stat(sysenv.home / ".config" / "a")
    assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())


def test_parents_shared_by_items_are_listed_once(sysenv):
    text = plan_text(
        sysenv,
        'file { path = "~/x/a", content = "a" }\nfile { path = "~/x/b", content = "b" }\n',
    )
    assert text.count("+ dir ~/x (parent)") == 1


def test_parents_go_with_the_declaration_only_when_created_by_syslua_and_empty(sysenv):
    put(sysenv.home / "existing" / "other", "mine\n")
    body = (
        'file { path = "~/new/deep/f", content = "f" }\n'
        'file { path = "~/existing/sub/g", content = "g" }\n'
        'file { path = "~/shared/a", content = "a" }\n'
        'file { path = "~/shared/b", content = "b" }\n'
    )
    before = tree(sysenv.home)
    apply(sysenv, body)
    put(sysenv.home / "new" / "hand-made", "keep me\n")
    apply(sysenv, 'file { path = "~/shared/a", content = "a" }\n')
    assert (sysenv.home / "new" / "hand-made").read_text() == "keep me\n"
    assert not (sysenv.home / "new" / "deep").exists()  # created by syslua, empty: gone
    assert not (sysenv.home / "existing" / "sub").exists()
    assert (sysenv.home / "existing" / "other").exists()  # was there before: stays
    assert (sysenv.home / "shared" / "a").exists()
    apply(sysenv, "")
    (sysenv.home / "new" / "hand-made").unlink()
    assert tree(sysenv.home) == {**before, "new": ("dir", 0o755, None)}


def test_a_failed_apply_removes_the_parents_it_created(sysenv):
    put(sysenv.home / "keep", "keep\n")
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER
        + "".join(f'file {{ path = "~/p/q/f{n}", content = "x" }}\n' for n in range(8))
        + 'exec { name = "boom", command = "false", depends_on = { "file#~/p/q/f7" } }\n',
    )
    p = sysenv.run("apply", "--jobs", "8")
    assert p.returncode == 1 and "Apply failed. System unchanged." in p.stdout, out(p)
    assert tree(sysenv.home) == before


def test_a_crash_leaves_nothing_of_a_tree_once_recovered(sysenv):
    src = sysenv.work / "dot"
    for n in range(6):
        put(src / f"d{n % 2}" / f"f{n}", f"{n}\n")
    put(sysenv.home / "keep", "keep\n")
    apply(sysenv, 'file { path = "~/keep", content = "keep\\n" }\n')
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        HEADER
        + 'file { path = "~/keep", content = "keep\\n" }\n'
        + 'file { path = "~/.config/t", source = "dot" }\n',
    )
    p = subprocess.run(
        [sys.executable, "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env=dict(sysenv.env, SYSLUA_CRASH_AT="before-commit"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == -signal.SIGKILL, out(p)
    assert (sysenv.home / ".config" / "t" / "d0" / "f0").exists()
    ok(sysenv.run("history"))  # the next command recovers first
    assert tree(sysenv.home) == before


def test_a_yaml_manifest_has_trees_and_templated_sources_too(sysenv):
    put(sysenv.work / "dot" / "conf" / "a.conf", "host={{ lookup('facts.hostname') }}\n")
    put(sysenv.work / "dot" / "conf" / "sub" / "b.txt", "b\n")
    sysenv.write(
        "site.yaml",
        """\
        ccm:
          resources:
            - file:
                - defaults:
                    owner: "{{ lookup('facts.user.name') }}"
                    group: "{{ lookup('facts.user.group') }}"
                    mode: "0644"
                - "{{ lookup('env.HOME') }}/conf":
                    source: dot/conf
                    template: true
        """,
    )
    ok(sysenv.run("apply", "site.yaml", "--fact", "hostname=yamlbox"))
    assert tree(sysenv.home) == {
        "conf": ("dir", 0o755, None),
        "conf/a.conf": ("file", 0o644, b"host=yamlbox\n"),
        "conf/sub": ("dir", 0o755, None),
        "conf/sub/b.txt": ("file", 0o644, b"b\n"),
    }
