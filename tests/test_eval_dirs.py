"""`sys.readDir` and `sys.glob`: reading directories while a config is evaluated.

Issue 10 ("Reading directories during evaluation"): sorted entries
`{ name, type }` and sorted matching paths, relative to `sys.dir`; pure
(nothing changes), and what they read is recorded as a config input, as
`sys.readFile` does.
"""

from __future__ import annotations

import os
from typing import Any

from conftest import HEADER, ok, out, put, tree

from syslua.manifest.model import Manifest
from syslua.manifest.resolve import resolve


def evaluate(sysenv: Any, text: str) -> Manifest:
    path = sysenv.write("sys.lua", text)
    return resolve(path)


def env_values(m: Manifest) -> dict[str, Any]:
    return {i.key: i.get("value") for i in m.of_type("env")}


def dotfiles(sysenv: Any) -> None:
    d = sysenv.work / "dotfiles"
    put(d / "zshrc", "zsh\n")
    put(d / ".hidden", "h\n")
    put(d / "bin" / "tool", "#!/bin/sh\n", 0o755)
    put(d / "bin" / "deep" / "x.sh", "x\n")
    os.symlink("zshrc", d / "bashrc")


def test_read_dir_lists_sorted_entries_with_their_type(sysenv):
    dotfiles(sysenv)
    path = sysenv.write(
        "sys.lua",
        "local parts = {}\n"
        'for _, e in ipairs(sys.readDir("dotfiles")) do parts[#parts + 1] = e.name .. ":" .. e.type end\n'
        'env { LIST = table.concat(parts, " ") }\n',
    )
    before = tree(sysenv.work), tree(sysenv.home)
    m = resolve(path)
    assert env_values(m)["LIST"] == (".hidden:file bashrc:link bin:directory zshrc:file")
    assert f"{sysenv.work}/dotfiles" in m.inputs
    assert (tree(sysenv.work), tree(sysenv.home)) == before  # pure: nothing changed


def test_read_dir_paths_home_absolute_and_empty(sysenv):
    put(sysenv.home / "h" / "a", "a\n")
    (sysenv.work / "empty").mkdir()
    m = evaluate(
        sysenv,
        'env { H = sys.readDir("~/h")[1].name, A = sys.readDir(sys.dir .. "/empty")[1] == nil }\n',
    )
    assert env_values(m) == {"H": "a", "A": "true"}
    assert [p for p in m.inputs if not p.endswith(".lua")] == [
        f"{sysenv.home}/h",
        f"{sysenv.work}/empty",
    ]


def test_glob_returns_sorted_matches_relative_to_the_config(sysenv):
    dotfiles(sysenv)
    m = evaluate(
        sysenv,
        'env { TOP = table.concat(sys.glob("dotfiles/*"), " "),\n'
        '      DEEP = table.concat(sys.glob("dotfiles/**/*.sh"), " "),\n'
        '      ABS = table.concat(sys.glob(sys.dir .. "/dotfiles/b*"), " "),\n'
        '      NONE = #sys.glob("nothing-*") }\n',
    )
    w = sysenv.work
    assert env_values(m) == {
        # like a shell: `*` does not match a leading dot
        "TOP": "dotfiles/bashrc dotfiles/bin dotfiles/zshrc",
        "DEEP": "dotfiles/bin/deep/x.sh",
        "ABS": f"{w}/dotfiles/bashrc {w}/dotfiles/bin",
        "NONE": "0",
    }
    # the directory each pattern lists from is recorded
    assert {f"{w}/dotfiles", str(w)} <= set(m.inputs)


def test_glob_with_home(sysenv):
    put(sysenv.home / ".config" / "a.conf", "a\n")
    m = evaluate(sysenv, 'env { G = sys.glob("~/.config/*.conf")[1] }\n')
    assert env_values(m) == {"G": f"{sysenv.home}/.config/a.conf"}
    assert f"{sysenv.home}/.config" in m.inputs


def test_errors_are_located_at_the_calling_line(sysenv):
    sysenv.write("sys.lua", 'local x = 1\nlocal e = sys.readDir("nope")\n')
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert "sys.lua:2: sys.readDir: cannot read nope: No such file or directory" in p.stderr
    sysenv.write("sys.lua", "local e = sys.glob(42)\n")
    p = sysenv.run("plan")
    assert p.returncode == 2 and "sys.lua:1: sys.glob expects a pattern string" in p.stderr
    sysenv.write("sys.lua", "local e = sys.readDir()\n")
    p = sysenv.run("plan")
    assert p.returncode == 2 and "sys.lua:1: sys.readDir expects a path string" in p.stderr


def test_declarations_built_from_a_folder(sysenv):
    dotfiles(sysenv)
    sysenv.write(
        "sys.lua",
        HEADER
        + 'for _, e in ipairs(sys.readDir("dotfiles")) do\n'
        + '  if e.type == "file" then\n'
        + '    file { path = "~/." .. e.name:gsub("^%.", ""), source = "dotfiles/" .. e.name }\n'
        + "  end\n"
        + "end\n"
        + 'for _, p in ipairs(sys.glob("dotfiles/bin/*")) do\n'
        + '  file { path = "~/bin/" .. p:match("[^/]+$"), source = p, link = true }\n'
        + "end\n",
    )
    ok(sysenv.run("apply"))
    home = tree(sysenv.home)
    assert home[".zshrc"] == ("file", 0o644, b"zsh\n")
    assert home[".hidden"] == ("file", 0o644, b"h\n")
    assert home["bin/tool"] == ("link", 0o777, str(sysenv.work / "dotfiles/bin/tool"))
    assert "No changes." in sysenv.run("plan").stdout
