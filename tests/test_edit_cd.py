"""`sys edit PATH [--apply]` and `sys cd [--print]` (issue 23, point 5), with a
fake editor and a fake shell: scripts that write down how they were run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import HEADER, history, out, put, tree

CONFIG = """
file { path = "~/.vimrc", source = "dot/vimrc" }
file { path = "~/.config/nvim", source = "dot/nvim" }
file { path = "~/.bashrc",
       content = "export PS1='$ '\\n" }
"""


@pytest.fixture
def world(sysenv, monkeypatch):  # type: ignore[no-untyped-def]
    """A config with a source file, a tree and inline content, applied; no
    editor or shell of the person running the tests."""
    for name in ("VISUAL", "EDITOR", "SHELL"):
        monkeypatch.delenv(name, raising=False)
    put(sysenv.work / "dot" / "vimrc", "set nu\n")
    put(sysenv.work / "dot" / "nvim" / "init.lua", "-- nvim\n")
    sysenv.write("sys.lua", HEADER + CONFIG)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    return sysenv


def fake(tmp_path: Path, name: str, body: str = "") -> tuple[Path, Path]:
    """A script `name` that writes its cwd and arguments (JSON) to a log, then runs `body`."""
    log = tmp_path / f"{name}.log"
    script = tmp_path / "bin" / name
    script.parent.mkdir(exist_ok=True)
    script.write_text(
        "#!/bin/sh\n"
        f"python3 -c 'import json, os, sys; print(json.dumps([os.getcwd(), sys.argv[1:]]))' \"$@\" "
        f">> {log}\n{body}\n"
    )
    script.chmod(0o755)
    return script, log


def runs(log: Path) -> list[list]:
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


def test_edit_opens_the_source_of_a_managed_file(world, tmp_path, monkeypatch) -> None:
    editor, log = fake(tmp_path, "myeditor")
    monkeypatch.setenv("VISUAL", str(editor))
    home, snaps = tree(world.home), history(world)
    p = world.run("edit", "~/.vimrc")
    assert p.returncode == 0, out(p)
    # a tree's file opens its own source file
    p = world.run("edit", str(world.home / ".config" / "nvim" / "init.lua"))
    assert p.returncode == 0, out(p)
    assert [args for _, args in runs(log)] == [
        [str(world.work / "dot" / "vimrc")],
        [str(world.work / "dot" / "nvim" / "init.lua")],
    ]
    assert tree(world.home) == home and history(world) == snaps


def test_inline_content_opens_its_declaration_at_its_line(world, tmp_path, monkeypatch) -> None:
    editor, log = fake(tmp_path, "vim")  # a vi-like editor: `+LINE FILE`
    monkeypatch.setenv("VISUAL", f"{editor} -p")  # arguments in $VISUAL are kept
    p = world.run("edit", "~/.bashrc")
    assert p.returncode == 0, out(p)
    line = 1 + (HEADER + CONFIG).splitlines().index('file { path = "~/.bashrc",')
    assert runs(log) == [[str(world.work), ["-p", f"+{line}", str(world.work / "sys.lua")]]]
    other, other_log = fake(tmp_path, "code-like")  # another editor: the file alone
    monkeypatch.setenv("VISUAL", str(other))
    assert world.run("edit", "~/.bashrc").returncode == 0
    assert [args for _, args in runs(other_log)] == [[str(world.work / "sys.lua")]]


def test_visual_then_editor_then_vi(world, tmp_path, monkeypatch) -> None:
    visual, visual_log = fake(tmp_path, "visual-editor")
    editor, editor_log = fake(tmp_path, "plain-editor")
    vi, vi_log = fake(tmp_path, "vi")
    monkeypatch.setenv("PATH", f"{vi.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("VISUAL", str(visual))
    monkeypatch.setenv("EDITOR", str(editor))
    assert world.run("edit", "~/.vimrc").returncode == 0
    monkeypatch.delenv("VISUAL")
    assert world.run("edit", "~/.vimrc").returncode == 0
    monkeypatch.delenv("EDITOR")
    assert world.run("edit", "~/.bashrc").returncode == 0
    assert len(runs(visual_log)) == len(runs(editor_log)) == len(runs(vi_log)) == 1
    assert runs(vi_log)[0][1][0].startswith("+")  # vi gets the line


def test_edit_apply_applies_after_the_editor(world, tmp_path, monkeypatch) -> None:
    editor, _ = fake(tmp_path, "appender", 'echo "set hls" >> "$1"')
    monkeypatch.setenv("EDITOR", str(editor))
    p = world.run("edit", "--apply", "~/.vimrc")
    assert p.returncode == 0, out(p)
    assert "Apply complete" in p.stdout, out(p)
    assert (world.home / ".vimrc").read_text() == "set nu\nset hls\n"
    assert len(history(world)) == 2


def test_edit_apply_with_a_failing_editor_applies_nothing(world, tmp_path, monkeypatch) -> None:
    editor, log = fake(tmp_path, "quitter", 'echo "half" >> "$1"; exit 3')
    monkeypatch.setenv("EDITOR", str(editor))
    home, snaps = tree(world.home), history(world)
    p = world.run("edit", "--apply", "~/.vimrc")
    assert p.returncode == 1, out(p)
    assert "the editor exited with 3: nothing was applied (run `sys apply` when ready)" in p.stderr
    assert len(runs(log)) == 1
    assert tree(world.home) == home and history(world) == snaps


def test_edit_of_a_path_the_config_does_not_manage(world, tmp_path, monkeypatch) -> None:
    editor, log = fake(tmp_path, "myeditor")
    monkeypatch.setenv("VISUAL", str(editor))
    put(world.home / ".profile", "mine\n")
    home = tree(world.home)
    p = world.run("edit", "~/.profile")
    assert p.returncode == 2, out(p)
    assert "~/.profile is not managed by the config: `sys add ~/.profile` takes it in" in p.stderr
    assert runs(log) == [] and tree(world.home) == home
    monkeypatch.setenv("VISUAL", str(tmp_path / "no-such-editor"))
    p = world.run("edit", "~/.vimrc")
    assert p.returncode == 2 and "set VISUAL or EDITOR" in p.stderr, out(p)


def test_cd_starts_a_shell_in_the_config_directory(world, tmp_path, monkeypatch) -> None:
    shell, log = fake(tmp_path, "fakeshell", "exit 5")
    monkeypatch.setenv("SHELL", str(shell))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    conf = world.home / ".config" / "syslua"
    put(conf / "sys.lua", HEADER)
    p = world.run("cd", cwd=elsewhere)
    assert p.returncode == 5, out(p)  # the shell's exit code
    assert runs(log) == [[str(conf), []]]
    p = world.run("cd", "--print", cwd=elsewhere)
    assert p.returncode == 0 and p.stdout == f"{conf}\n", out(p)
    p = world.run("cd", "--print")  # here: ./sys.lua
    assert p.stdout == f"{world.work}\n", out(p)
