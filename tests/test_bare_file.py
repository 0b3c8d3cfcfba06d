"""A bare `file {}` (issue 21, points 5 and 6; SPEC section 5).

Under the home a Lua config may leave out owner, group and mode: owner and
group are the running user's, a copy keeps its source's mode (with `x`
wherever the mode has `r` when the source has an execute bit, as tree
members do), inline content is 0644 and a directory 0755 (plus the declared
bits), the real directories of a link tree too. Whatever is declared wins;
outside the home owner, group and mode stay required. Everything runs
through the real `sys` command line on real files in a temp HOME, with no
`defaults {}` line unless a test says so.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import stat
from pathlib import Path

from conftest import HEADER, ok, out, put, tree

ME = pwd.getpwuid(os.getuid()).pw_name
GRP = grp.getgrgid(os.getgid()).gr_name
HINT = (
    "Files need owner, group and mode. Set them on the file, or once for the rest of the file with\n"
    '  defaults { file = { owner = sys.user.name, group = sys.user.group, mode = "0644" } }'
)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def manifest_props(sysenv) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    """The merged properties of every declared item (`sys plan --json`), by key."""
    p = sysenv.run("plan", "--json")
    ok(p)
    return {i["key"]: i["props"] for i in json.loads(p.stdout)["manifest"]["items"]}


def apply_twice(sysenv, text: str) -> None:  # type: ignore[no-untyped-def]
    """Apply `text`, then check that a second apply changes nothing."""
    sysenv.write("sys.lua", text)
    first = sysenv.run("apply")
    ok(first)
    again = sysenv.run("apply")
    ok(again)
    assert "No changes" in again.stdout, out(again)


# -- copies, inline content, directories -------------------------------------
def test_a_bare_file_plans_and_applies_with_no_defaults_line(sysenv):
    put(sysenv.work / "x", "hello\n", 0o640)
    sysenv.write("sys.lua", 'file { path = "~/.x", source = "x" }\n')
    p = sysenv.run("plan")
    ok(p)
    assert "+ file ~/.x" in p.stdout
    props = manifest_props(sysenv)[str(sysenv.home / ".x")]
    assert {k: props.get(k) for k in ("owner", "group", "mode")} == {
        "owner": ME,
        "group": GRP,
        "mode": "0640",
    }
    apply_twice(sysenv, 'file { path = "~/.x", source = "x" }\n')
    st = os.lstat(sysenv.home / ".x")
    assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
    assert tree(sysenv.home) == {".x": ("file", 0o640, b"hello\n")}
    # the plan and the snapshot hold the resolved values: nothing to do
    p = sysenv.run("plan")
    ok(p)
    assert "No changes" in p.stdout


def test_a_copy_keeps_its_source_mode_and_execute_bits(sysenv):
    put(sysenv.work / "plain", "p\n", 0o600)
    put(sysenv.work / "script", "#!/bin/sh\n", 0o755)
    put(sysenv.work / "mine", "#!/bin/sh\n", 0o744)  # x for the owner: x wherever r
    put(sysenv.work / "private", "#!/bin/sh\n", 0o700)
    text = "".join(
        f'file {{ path = "~/{n}", source = "{n}" }}\n'
        for n in ("plain", "script", "mine", "private")
    )
    apply_twice(sysenv, text)
    assert {n: mode_of(sysenv.home / n) for n in ("plain", "script", "mine", "private")} == {
        "plain": 0o600,
        "script": 0o755,
        "mine": 0o755,
        "private": 0o700,
    }


def test_a_declared_mode_gets_x_wherever_it_has_r_for_an_executable_source(sysenv):
    """Point 5: a single-file source with an execute bit keeps `x`, as tree members do."""
    put(sysenv.work / "script", "#!/bin/sh\n", 0o755)
    put(sysenv.work / "notes", "n\n", 0o644)
    outside = sysenv.work / "opt" / "tool"
    text = (
        HEADER  # mode = "0644" from defaults{}
        + 'file { path = "~/bin/a", source = "script" }\n'
        + 'file { path = "~/bin/b", source = "script", mode = "0640" }\n'
        + 'file { path = "~/bin/c", source = "script", mode = "0600" }\n'
        + 'file { path = "~/bin/t", source = "script", template = true }\n'
        + 'file { path = "~/notes", source = "notes", mode = "0640" }\n'
        + f'file {{ path = "{outside}", source = "script", mode = "0604" }}\n'
    )
    apply_twice(sysenv, text)
    bin_ = sysenv.home / "bin"
    assert {n: mode_of(bin_ / n) for n in ("a", "b", "c", "t")} == {
        "a": 0o755,
        "b": 0o750,
        "c": 0o700,
        "t": 0o755,
    }
    assert mode_of(sysenv.home / "notes") == 0o640  # no execute bit: the mode as declared
    assert mode_of(outside) == 0o705


def test_a_changed_execute_bit_of_the_source_is_planned(sysenv):
    src = put(sysenv.work / "script", "#!/bin/sh\n", 0o644)
    apply_twice(sysenv, HEADER + 'file { path = "~/s", source = "script" }\n')
    assert mode_of(sysenv.home / "s") == 0o644
    os.chmod(src, 0o755)
    p = sysenv.run("plan")
    ok(p)
    assert "~ file ~/s: will update (mode 0644 -> 0755)" in p.stdout
    ok(sysenv.run("apply"))
    assert mode_of(sysenv.home / "s") == 0o755


def test_inline_content_is_0644_and_directories_0755(sysenv):
    text = (
        'file { path = "~/.x", content = "x\\n" }\n'
        'file { path = "~/.attrs", ensure = "present" }\n'
        'file { path = "~/d", ensure = "directory" }\n'
        'file { path = "~/d/deeper", ensure = "directory", mode = "0700" }\n'
        'file { path = "~/shared", ensure = "directory", mode = "0640" }\n'  # plus x where r
    )
    apply_twice(sysenv, text)
    assert tree(sysenv.home) == {
        ".attrs": ("file", 0o644, b""),
        ".x": ("file", 0o644, b"x\n"),
        "d": ("dir", 0o755, None),
        "d/deeper": ("dir", 0o700, None),
        "shared": ("dir", 0o750, None),
    }


def test_a_copied_tree_keeps_each_source_mode_and_makes_directories_0755(sysenv):
    src = sysenv.work / "dot"
    put(src / "rc", "rc\n", 0o640)
    put(src / "bin" / "run", "#!/bin/sh\n", 0o744)
    os.chmod(src / "bin", 0o700)  # a source directory's own mode is not copied
    apply_twice(sysenv, 'file { path = "~/dot", source = "dot" }\n')
    assert tree(sysenv.home) == {
        "dot": ("dir", 0o755, None),
        "dot/bin": ("dir", 0o755, None),
        "dot/bin/run": ("file", 0o755, b"#!/bin/sh\n"),
        "dot/rc": ("file", 0o640, b"rc\n"),
    }


# -- links -------------------------------------------------------------------
def test_links_need_no_owner_group_or_mode(sysenv):
    put(sysenv.work / "vimrc", "set nu\n")
    put(sysenv.work / "nvim" / "init.lua", "-- init\n")
    put(sysenv.work / "nvim" / "lua" / "opts.lua", "-- opts\n")
    text = (
        'file { path = "~/.vimrc", source = "vimrc", link = true }\n'
        'file { path = "~/.config/nvim", source = "nvim", link = true }\n'
        f'file {{ path = "~/.gvimrc", ensure = "link", target = "{sysenv.work / "vimrc"}" }}\n'
    )
    sysenv.write("sys.lua", text)
    p = sysenv.run("plan")
    ok(p)  # no longer `a link tree needs dir_mode`
    apply_twice(sysenv, text)
    assert tree(sysenv.home) == {
        ".config": ("dir", 0o755, None),
        ".config/nvim": ("dir", 0o755, None),
        ".config/nvim/init.lua": ("link", 0o777, str(sysenv.work / "nvim" / "init.lua")),
        ".config/nvim/lua": ("dir", 0o755, None),
        ".config/nvim/lua/opts.lua": (
            "link",
            0o777,
            str(sysenv.work / "nvim" / "lua" / "opts.lua"),
        ),
        ".gvimrc": ("link", 0o777, str(sysenv.work / "vimrc")),
        ".vimrc": ("link", 0o777, str(sysenv.work / "vimrc")),
    }


# -- what is declared wins ---------------------------------------------------
def test_declared_owner_group_and_mode_win(sysenv):
    put(sysenv.work / "x", "x\n", 0o644)
    put(sysenv.work / "tree" / "f", "f\n", 0o644)
    sysenv.write(
        "sys.lua",
        'defaults { file = { group = "0", mode = "0600" } }\n'
        'file { path = "~/a", source = "x" }\n'
        'file { path = "~/b", source = "x", owner = "0", mode = "0640" }\n'
        'file { path = "~/c", content = "c" }\n'
        'file { path = "~/t", source = "tree", link = true, dir_mode = "0700" }\n',
    )
    props = manifest_props(sysenv)
    home = str(sysenv.home)
    got = {
        k[len(home) + 1 :]: {p: v.get(p) for p in ("owner", "group", "mode", "dir_mode")}
        for k, v in props.items()
    }
    assert got == {
        "a": {"owner": ME, "group": "0", "mode": "0600", "dir_mode": None},
        "b": {"owner": "0", "group": "0", "mode": "0640", "dir_mode": None},
        "c": {"owner": ME, "group": "0", "mode": "0600", "dir_mode": None},
        # a link takes no mode: defaults{}' does not apply to it
        "t": {"owner": ME, "group": "0", "mode": "0700", "dir_mode": "0700"},
        "t/f": {"owner": ME, "group": "0", "mode": None, "dir_mode": None},
    }
    ok(sysenv.run("apply"))
    assert mode_of(sysenv.home / "t") == 0o700


# -- outside the home, owner, group and mode stay required -------------------
def test_outside_the_home_owner_group_and_mode_stay_required(sysenv):
    put(sysenv.work / "x", "x\n")
    outside = sysenv.work / "etc" / "x"
    for decl, missing in (
        (f'file {{ path = "{outside}", source = "x" }}', "owner"),
        (f'file {{ path = "{outside}", content = "x", owner = "0", group = "0" }}', "mode"),
        ('file { path = "/etc/syslua-bare-file", content = "x" }', "owner"),
        ('file { path = "/etc/syslua-bare-dir", ensure = "directory" }', "owner"),
    ):
        sysenv.write("sys.lua", f'file {{ path = "~/.ok", content = "ok" }}\n{decl}\n')
        before = tree(sysenv.work), tree(sysenv.home), tree(sysenv.root)
        for command in ("plan", "apply"):
            p = sysenv.run(command)
            assert p.returncode == 2, out(p)
            label = decl.split('"')[1]
            assert (
                f"Error: sys.lua:2: file {label}: missing required property `{missing}`\n"
                f"  2 | {decl}\n\n{HINT}\n"
            ) in p.stderr, p.stderr
            assert (tree(sysenv.work), tree(sysenv.home), tree(sysenv.root)) == before
    assert not os.path.lexists("/etc/syslua-bare-file")
    assert not os.path.lexists("/etc/syslua-bare-dir")


def test_a_link_tree_outside_the_home_still_needs_dir_mode(sysenv):
    put(sysenv.work / "tree" / "f", "f\n")
    outside = sysenv.work / "opt" / "t"
    sysenv.write(
        "sys.lua",
        f'file {{ path = "{outside}", source = "tree", link = true, owner = "0", group = "0" }}\n',
    )
    before = tree(sysenv.work)
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert "a link tree needs `dir_mode` for its directories" in p.stderr
    assert tree(sysenv.work) == before


# -- a missing source is a clean failure --------------------------------------
def test_a_missing_source_with_no_mode_fails_cleanly(sysenv):
    sysenv.write(
        "sys.lua",
        'file { path = "~/.x", source = "gone" }\nfile { path = "~/.y", content = "y" }\n',
    )
    p = sysenv.run("plan")
    assert p.returncode == 1, out(p)  # the plan says what cannot be applied, and exits 1
    assert f"! file ~/.x: source file not found: {sysenv.work / 'gone'}" in p.stdout, out(p)
    p = sysenv.run("apply")
    assert p.returncode != 0 and "Traceback" not in out(p), out(p)
    assert "source file not found" in out(p)
    assert not (sysenv.home / ".x").exists()


# -- CCM manifests keep their own rules ----------------------------------------
def test_a_ccm_manifest_keeps_its_rules_under_the_home(sysenv):
    """Owner, group and mode stay required in a YAML manifest, and a declared
    mode is the mode, as the seed says (no `x` added for an executable source)."""
    put(sysenv.work / "script", "#!/bin/sh\n", 0o755)
    sysenv.write(
        "m.yaml",
        """\
        ccm:
          resources:
            - file:
                name: "{{ Environ.HOME }}/s"
                source: script
                owner: "{{ lookup('facts.user.name') }}"
                group: "{{ lookup('facts.user.group') }}"
                mode: "0644"
        """,
    )
    ok(sysenv.run("apply", "m.yaml"))
    assert mode_of(sysenv.home / "s") == 0o644
    sysenv.write(
        "bare.yaml",
        'ccm:\n  resources:\n    - file:\n        name: "{{ Environ.HOME }}/b"\n        content: x\n',
    )
    before = tree(sysenv.home)
    p = sysenv.run("plan", "bare.yaml")
    assert p.returncode == 2, out(p)
    assert "file ~/b: missing required property `owner`" in p.stderr, p.stderr
    assert tree(sysenv.home) == before
