"""`sys init`: a starter config that plans and applies as it is, type stubs
copied beside it and a .luarc.json that points there; `sys init --stubs`."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import out, tree

from syslua.manifest import stubs as stubgen


def shipped() -> dict[str, bytes]:
    """The stub files syslua ships (lua/types/*.lua), by name."""
    return {p.name: p.read_bytes() for p in sorted(stubgen.path().parent.glob("*.lua"))}


def copies(config_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((config_dir / ".syslua" / "types").glob("*"))}


def test_init_writes_a_starter_and_luarc_into_the_default_dir(sysenv):
    p = sysenv.run("init")
    assert p.returncode == 0, p.stderr
    config_dir = sysenv.home / ".config" / "syslua"
    assert (config_dir / "sys.lua").is_file()
    luarc = json.loads((config_dir / ".luarc.json").read_text())
    assert luarc["runtime.version"] == "LuaJIT"
    assert "sys" in luarc["diagnostics.globals"] and "file" in luarc["diagnostics.globals"]
    # the stubs are copied beside the config, and named relatively: never a
    # path into the installation (a virtualenv), which moves or goes away
    assert luarc["workspace.library"] == [".syslua/types"]
    assert copies(config_dir) == shipped()
    # CONFIG defaults to ~/.config/syslua/sys.lua when there is no ./sys.lua
    plan = sysenv.run("plan")
    assert plan.returncode == 0, plan.stderr
    assert "No changes. The machine matches the configuration." in plan.stdout, plan.stdout


def test_the_starter_changes_nothing_by_surprise(sysenv):
    """Issue 23, point 9: every declaration of the starter is a commented
    example, the env line too; applied as written, it sets nothing."""
    assert sysenv.run("init", str(sysenv.work)).returncode == 0
    text = (sysenv.work / "sys.lua").read_text()
    assert '-- env { EDITOR = "vi" }' in text.splitlines(), text
    code = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("--")]
    assert code == [], code
    home = tree(sysenv.home)
    first = sysenv.run("apply")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Apply complete" in first.stdout, first.stdout
    assert "EDITOR" not in (sysenv.root / "state" / "env.sh").read_text()
    assert tree(sysenv.home) == home


def test_the_starter_env_line_uncommented_applies_and_reapplies_cleanly(sysenv):
    assert sysenv.run("init", str(sysenv.work)).returncode == 0
    config = sysenv.work / "sys.lua"
    config.write_text(
        config.read_text().replace('-- env { EDITOR = "vi" }', 'env { EDITOR = "vi" }')
    )
    first = sysenv.run("apply")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Apply complete" in first.stdout
    assert (sysenv.root / "state" / "env.sh").read_text().count("EDITOR='vi'") == 1
    again = sysenv.run("apply")
    assert again.returncode == 0 and "No changes" in again.stdout


def test_the_starter_needs_no_defaults_line_for_its_files(sysenv):
    """Issue 21: owner, group and mode of files under the home need no
    `defaults {}`; the starter's file examples apply as they are, uncommented."""
    assert sysenv.run("init", str(sysenv.work)).returncode == 0
    config = sysenv.work / "sys.lua"
    text = config.read_text()
    assert "defaults" not in text
    files = [ln for ln in text.splitlines() if ln.startswith("-- file {")]
    assert len(files) == 3, files
    for line in files:
        text = text.replace(line, line[3:])
    config.write_text(text)
    init = sysenv.work / "nvim" / "init.lua"
    init.parent.mkdir()
    init.write_text("-- nvim\n")
    init.chmod(0o640)
    first = sysenv.run("apply")
    assert first.returncode == 0, first.stdout + first.stderr
    assert tree(sysenv.home / ".config") == {
        "nvim": ("dir", 0o755, None),
        "nvim/init.lua": ("file", 0o640, b"-- nvim\n"),
    }
    assert tree(sysenv.home)[".gitconfig"] == ("file", 0o644, b"[user]\n\tname = Your Name\n")
    again = sysenv.run("apply")
    assert again.returncode == 0 and "No changes" in again.stdout


def test_init_never_overwrites_an_existing_config(sysenv):
    """An existing sys.lua is left alone and said so; the missing .luarc.json is written."""
    target = sysenv.write("sys.lua", "-- mine\n")
    p = sysenv.run("init", str(sysenv.work))
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines() == [
        f"left alone because it exists: {target}",
        f"written: {sysenv.work / '.luarc.json'}",
        f"written: {sysenv.work / '.syslua' / 'types'}/ (type stubs)",
        f"Next: sys plan {target}",
    ]
    assert target.read_text() == "-- mine\n"
    assert json.loads((sysenv.work / ".luarc.json").read_text())["runtime.version"] == "LuaJIT"


def test_init_says_what_it_wrote_and_what_it_left_alone(sysenv):
    d = sysenv.work / "cfg"
    first = sysenv.run("init", str(d))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        f"written: {d / 'sys.lua'}",
        f"written: {d / '.luarc.json'}",
        f"written: {d / '.syslua' / 'types'}/ (type stubs)",
        f"Next: sys plan {d / 'sys.lua'}",
    ]
    before = tree(d)
    again = sysenv.run("init", str(d))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        f"left alone because it exists: {d / 'sys.lua'}",
        f"left alone because it exists: {d / '.luarc.json'}",
        f"written: {d / '.syslua' / 'types'}/ (type stubs)",
        f"Next: sys plan {d / 'sys.lua'}",
    ]
    assert tree(d) == before
    # a dangling link counts as existing: it is not followed, nor replaced
    (d / ".luarc.json").unlink()
    (d / ".luarc.json").symlink_to(d / "nowhere.json")
    third = sysenv.run("init", str(d))
    assert f"left alone because it exists: {d / '.luarc.json'}" in third.stdout
    assert not (d / "nowhere.json").exists()


def test_init_into_a_file_is_a_usage_error(sysenv):
    f = sysenv.write("notadir", "x\n")
    before = tree(sysenv.work)
    p = sysenv.run("init", str(f))
    assert p.returncode == 2 and f"Error: {f} is not a directory" in p.stderr, p.stderr
    assert tree(sysenv.work) == before


def test_the_stubs_are_the_shipped_ones_and_cover_the_starter(sysenv):
    p = sysenv.run("init", str(sysenv.work))
    assert p.returncode == 0, out(p)
    assert set(copies(sysenv.work)) == {"generated.lua", "syslua.lua"}
    assert copies(sysenv.work) == shipped()
    assert str(sysenv.work / ".syslua" / "types") in p.stdout
    luarc = (sysenv.work / ".luarc.json").read_text()
    assert ".venv" not in luarc and "site-packages" not in luarc and "/" + "lua/types" not in luarc


def test_init_stubs_refreshes_them_and_touches_nothing_else(sysenv):
    assert sysenv.run("init", str(sysenv.work)).returncode == 0
    (sysenv.work / "sys.lua").write_text("-- mine, edited\n")
    rc = sysenv.work / ".luarc.json"
    rc.write_text('{"workspace.library": [".syslua/types"], "mine": true}\n')
    # stubs left by an older version: one changed, one missing
    (sysenv.work / ".syslua" / "types" / "syslua.lua").write_text("---@meta\n-- old\n")
    (sysenv.work / ".syslua" / "types" / "generated.lua").unlink()
    before = {k: v for k, v in tree(sysenv.work).items() if not k.startswith(".syslua")}
    p = sysenv.run("init", "--stubs", str(sysenv.work))
    assert p.returncode == 0, out(p)
    assert f"refreshed: {sysenv.work / '.syslua' / 'types'}/ (type stubs)" in p.stdout
    assert copies(sysenv.work) == shipped()
    assert {k: v for k, v in tree(sysenv.work).items() if not k.startswith(".syslua")} == before
    assert (sysenv.work / "sys.lua").read_text() == "-- mine, edited\n"


def test_init_stubs_in_the_default_dir_and_a_missing_luarc(sysenv):
    assert sysenv.run("init").returncode == 0
    config_dir = sysenv.home / ".config" / "syslua"
    (config_dir / ".luarc.json").unlink()
    p = sysenv.run("init", "--stubs")
    assert p.returncode == 0, out(p)
    assert json.loads((config_dir / ".luarc.json").read_text())["workspace.library"] == [
        ".syslua/types"
    ]
    assert copies(config_dir) == shipped()


def test_a_luarc_of_ones_own_is_left_alone_and_named(sysenv):
    rc = sysenv.write(".luarc.json", '{"workspace.library": ["/opt/venv/lib/syslua/lua/types"]}\n')
    p = sysenv.run("init", str(sysenv.work))
    assert p.returncode == 0, out(p)
    assert rc.read_text() == '{"workspace.library": ["/opt/venv/lib/syslua/lua/types"]}\n'
    assert f"Left {rc} as it was; it does not list .syslua/types in workspace.library" in p.stdout
    assert copies(sysenv.work) == shipped()


def test_init_stubs_needs_an_existing_directory(sysenv):
    missing = sysenv.work / "nowhere"
    p = sysenv.run("init", "--stubs", str(missing))
    assert p.returncode == 2
    assert "is not a directory" in p.stderr and "Traceback" not in p.stderr
    assert not missing.exists()


def test_a_file_in_the_way_of_the_stubs_is_an_error_not_a_crash(sysenv):
    sysenv.write("sys.lua", "-- mine\n")
    (sysenv.work / ".syslua").write_text("not a directory\n")
    before = tree(sysenv.work)
    p = sysenv.run("init", "--stubs", str(sysenv.work))
    assert p.returncode == 2, out(p)
    assert "cannot write the editor support into" in p.stderr and "Not a directory" in p.stderr
    assert "Traceback" not in p.stderr
    assert tree(sysenv.work) == before
