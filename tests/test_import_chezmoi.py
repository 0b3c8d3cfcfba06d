"""`sys import chezmoi` (issue 24): our own source directory in the shape of
popular chezmoi repositories (tests/data/import/chezmoi/), a home installed
from it by chezmoi's documented source-state rules (chezmoi itself is not
packaged here: `install` below follows its reference), then the import with
the real CLI and a walk: the first apply writes nothing (every path, mode,
content, link and mtime as chezmoi left them), an edit, rollback, destroy
back to chezmoi's home byte for byte."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from conftest import ROOT, out, put, tree

DATA = ROOT / "tests" / "data" / "import" / "chezmoi"
# chezmoi's prefixes, in the order its reference gives them per kind of entry.
DIR_ORDER = ["exact_", "private_", "readonly_", "dot_"]
FILE_ORDER = ["create_", "modify_", "symlink_", "private_", "readonly_", "empty_", "executable_"]
FILE_ORDER += ["dot_"]
# What `chezmoi apply` writes for the templates and the modify_ script (on Linux, data as in
# .chezmoidata.yaml, no lookPath fish): written out by hand from the templates' text.
GITCONFIG = """[user]
\tname = Ada Lovelace
\temail = ada@example.com
\tsigningkey = 3AA5C34371567BD2
[core]
\teditor = nvim
[credential]
\thelper = cache --timeout=3600
[include]
\tpath = ~/.gitconfig.local
# written for {user} on {host}
"""
STARSHIP = "add_newline = false\n\n[hostname]\nssh_only = true\n"
ALACRITTY = '[font]\nsize = 11\n[shell]\nprogram = "/bin/bash"\n'
MIMEAPPS = "x-scheme-handler/https=firefox.desktop\n"
IGNORED = {"README.md", "LICENSE", "dot_config/karabiner"}  # .chezmoiignore, on Linux


def _strip(name: str, order: list[str]) -> tuple[str, set[str]]:
    attrs = set()
    for prefix in order:
        if name.startswith(prefix):
            attrs.add(prefix)
            name = ("." if prefix == "dot_" else "") + name[len(prefix) :]
    return name, attrs


def install(src: Path, home: Path) -> None:
    """`chezmoi apply` from `src` into `home`, by chezmoi's documented rules."""
    rendered = {
        "dot_gitconfig.tmpl": GITCONFIG.format(
            user=os.environ.get("USER") or __import__("pwd").getpwuid(os.getuid()).pw_name,
            host=os.uname().nodename.split(".")[0],
        ),
        "dot_config/starship.toml.tmpl": STARSHIP,
        "dot_config/alacritty/alacritty.toml.tmpl": ALACRITTY,
        "symlink_dot_vimrc.tmpl": f"{home}/.config/nvim/init.lua",
    }
    scripts = []
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if any(p.startswith(".") for p in rel.parts) or any(
            str(rel) == i or str(rel).startswith(i + "/") for i in IGNORED
        ):
            continue
        if path.name.startswith("run_"):
            scripts.append(path)
            continue
        parts = [_strip(p, DIR_ORDER) for p in rel.parts[:-1]]
        name, attrs = _strip(path.name, DIR_ORDER if path.is_dir() else FILE_ORDER)
        dest = home.joinpath(*[p for p, _ in parts], name.removesuffix(".tmpl"))
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            os.chmod(dest, 0o700 if "private_" in attrs else 0o755)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = rendered.get(str(rel), path.read_text())
        if "symlink_" in attrs:
            os.symlink(text.strip(), dest)
            continue
        if "modify_" in attrs:
            text = MIMEAPPS
        if not text and "empty_" not in attrs:
            continue
        dest.write_text(text)
        mode = 0o755 if "executable_" in attrs else 0o644
        mode &= 0o700 if "private_" in attrs else 0o777
        os.chmod(dest, mode & ~0o222 if "readonly_" in attrs else mode)
    for script in scripts:  # run_once_before_ first, as its name sorts
        subprocess.run(
            ["sh", str(script)], cwd=home, check=True, env={**os.environ, "HOME": str(home)}
        )


def snapshot(home: Path) -> dict[str, tuple[object, ...]]:
    """tree() plus each entry's mtime: what "writes nothing" is checked against."""
    return {rel: (*entry, (home / rel).lstat().st_mtime_ns) for rel, entry in tree(home).items()}


def _source(sysenv, relative_link: bool) -> Path:  # type: ignore[no-untyped-def]
    """The fixture at chezmoi's default place; without its relative symlink_ unless asked."""
    src = sysenv.home / ".local" / "share" / "chezmoi"
    shutil.copytree(DATA, src)
    if not relative_link:
        (src / "dot_config" / "symlink_editor").unlink()
    return src


def test_import_chezmoi_relative_symlink_is_taken_over(sysenv) -> None:
    src = _source(sysenv, relative_link=True)
    install(src, sysenv.home)
    assert os.readlink(sysenv.home / ".config" / "editor") == "nvim"
    assert sysenv.run("import", "chezmoi", str(src)).returncode == 0
    before = snapshot(sysenv.home)
    p = sysenv.run("apply", cwd=src)
    assert p.returncode == 0, out(p)
    assert snapshot(sysenv.home) == before, out(p)


def test_import_chezmoi_takes_over_writes_nothing_and_destroys_back(sysenv) -> None:
    src = _source(sysenv, relative_link=False)
    install(src, sysenv.home)
    assert os.readlink(sysenv.home / ".vimrc") == f"{sysenv.home}/.config/nvim/init.lua"
    assert stat.S_IMODE((sysenv.home / ".ssh").stat().st_mode) == 0o700

    p = sysenv.run("import", "chezmoi", str(src))
    assert p.returncode == 0, out(p)
    lua = (src / "sys.lua").read_text()
    assert "Not translated (4;" in out(p)
    assert "alacritty.toml.tmpl:4: " in out(p) and "modify_mimeapps.list: modify_" in out(p)
    assert 'file { path = "~/.config/nvim", source = "./dot_config/nvim" }' in lua
    print(lua)
    installed = tree(sysenv.home)
    before = snapshot(sysenv.home)

    p = sysenv.run("apply", cwd=src)
    assert p.returncode == 0, out(p)
    assert snapshot(sysenv.home) == before, out(p)
    p = sysenv.run("apply", cwd=src)
    assert "No changes" in out(p), out(p)

    # An edit in the repository, applied; then rolled back.
    bashrc = src / "dot_bashrc"
    original = bashrc.read_text()
    bashrc.write_text(original + "alias ll='ls -l'\n")
    p = sysenv.run("apply", cwd=src)
    assert p.returncode == 0, out(p)
    assert (sysenv.home / ".bashrc").read_text().endswith("alias ll='ls -l'\n")
    p = sysenv.run("rollback", cwd=src)
    assert p.returncode == 0, out(p)
    assert (sysenv.home / ".bashrc").read_text() == original

    bashrc.write_text(original)
    p = sysenv.run("destroy", "--yes", cwd=src)
    assert p.returncode == 0, out(p)
    assert tree(sysenv.home) == installed


def test_import_chezmoi_refuses_a_file_and_writes_nothing(sysenv) -> None:
    put(sysenv.work / "dot_bashrc", "# a file, not a source directory\n")
    before = tree(sysenv.work)
    p = sysenv.run("import", "chezmoi", str(sysenv.work / "dot_bashrc"), "--to", str(sysenv.work))
    assert p.returncode == 2, out(p)
    assert "is not a directory: chezmoi's source directory is" in out(p)
    assert tree(sysenv.work) == before


def test_import_chezmoi_lists_what_a_template_cannot_say_with_its_line(sysenv) -> None:
    src = sysenv.work / "chezmoi"
    put(src / ".chezmoidata.toml", 'email = "a@b.c"\n')
    put(src / "dot_npmrc.tmpl", "email={{ .email }}\n{{ if .work }}\nx\n{{ end }}\n")
    put(
        src / "dot_tool.tmpl",
        '{{- if eq .chezmoi.os "linux" -}}\nlinux\n{{- else -}}\nother\n{{- end }}\n',
    )
    p = sysenv.run("import", "chezmoi", str(src))
    assert p.returncode == 0, out(p)
    assert "dot_npmrc.tmpl:2: `.work` is not in the data (.chezmoidata, [data]); left out" in out(p)
    lua = (src / "sys.lua").read_text()
    assert "~/.npmrc" not in lua.split("Not translated")[1].split("\n\n", 1)[1]
    assert sysenv.run("apply", cwd=src).returncode == 0
    assert (sysenv.home / ".tool").read_text() == "linux\n"
    assert not (sysenv.home / ".npmrc").exists()
