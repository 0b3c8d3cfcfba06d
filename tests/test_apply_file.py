"""`sys apply` on file items: every row of the file decision table, for real.

Seed file-resource.md (ensure present / absent / directory against what is on
disk) plus the issue's rules: atomic writes (temp file + rename, no temp left
behind), a symlink at the destination is replaced and never written through,
`source` relative to the config's directory, directories create missing
parents, removing a non-empty directory needs `force = true`, a re-apply is a
no-op. Everything runs through the real `sys apply` in a temp HOME.

The big table runs once per module (a noop run, a real run, a re-apply) and
each row is then checked by its own test.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import HEADER, SysEnv, items, new_env, out, put, tree

IS_ROOT = os.geteuid() == 0


# -- helpers -----------------------------------------------------------------
def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*.syslua-*")]


# -- the decision table, applied once per module -----------------------------
# row -> (declaration, expected status after the real apply)
ROWS: dict[str, tuple[str, str]] = {
    # ensure = present
    "p_absent": ('file { path = "~/p_absent", content = "created\\n", mode = "640" }', "changed"),
    "p_same": ('file { path = "~/p_same", content = "same\\n" }', "unchanged"),
    "p_content": ('file { path = "~/p_content", content = "new\\n" }', "changed"),
    "p_mode": ('file { path = "~/p_mode", content = "keep\\n", mode = "0o644" }', "changed"),
    "p_link": ('file { path = "~/p_link", content = "replaced\\n", mode = "0O600" }', "changed"),
    "p_dangling": ('file { path = "~/p_dangling", content = "was dangling\\n" }', "changed"),
    "p_link_dir": ('file { path = "~/p_link_dir", content = "not a dir\\n" }', "changed"),
    "p_source": (
        'file { path = "~/p_source", source = "files/src.txt", mode = "0640" }',
        "changed",
    ),
    "p_attrs_only": (
        'file { path = "~/p_attrs_only", mode = "0600" }',
        "changed",
    ),  # content not managed
    "p_in_new_dir": (
        'file { path = "~/newdir/sub/f.txt", content = "deep\\n", depends_on = { "file#~/newdir/sub" } }',
        "changed",
    ),
    # ensure = directory
    "d_new": ('file { path = "~/d_new/a/b", ensure = "directory", mode = "0700" }', "changed"),
    "newdir": ('file { path = "~/newdir/sub", ensure = "directory", mode = "0755" }', "changed"),
    "d_same": ('file { path = "~/d_same", ensure = "directory", mode = "0755" }', "unchanged"),
    "d_mode": ('file { path = "~/d_mode", ensure = "directory", mode = "0700" }', "changed"),
    "d_link": ('file { path = "~/d_link", ensure = "directory", mode = "0750" }', "changed"),
    "d_file_force": (
        'file { path = "~/d_file_force", ensure = "directory", mode = "0755", force = true }',
        "changed",
    ),
    # ensure = absent
    "a_absent": ('file { path = "~/a_absent", ensure = "absent" }', "unchanged"),
    "a_file": ('file { path = "~/a_file", ensure = "absent" }', "changed"),
    "a_empty_dir": ('file { path = "~/a_empty_dir", ensure = "absent" }', "changed"),
    "a_link": ('file { path = "~/a_link", ensure = "absent" }', "changed"),
    "a_link_dir": (
        'file { path = "~/a_link_dir", ensure = "absent" }',
        "changed",
    ),  # no force needed
    "a_full_force": (
        'file { path = "~/a_full_force", ensure = "absent", force = true }',
        "changed",
    ),
}

ROW_PATHS = {
    "p_in_new_dir": "newdir/sub/f.txt",
    "d_new": "d_new/a/b",
    "newdir": "newdir/sub",
}


def row_id(env: SysEnv, row: str) -> str:
    return f"file#{env.home}/{ROW_PATHS.get(row, row)}"


def _machine(env: SysEnv) -> None:
    """Put the home (and a few link targets outside it) in each row's current state."""
    h, w = env.home, env.work
    put(w / "target.txt", "link target\n", 0o644)
    # Outside the config's directory: a link into it would be a fold (kept, unfolded).
    elsewhere = env.home.parent / "elsewhere"
    (elsewhere / "targetdir").mkdir(parents=True)
    put(elsewhere / "targetdir" / "inside.txt", "inside\n")
    os.chmod(elsewhere / "targetdir", 0o755)
    (w / "targetdir2").mkdir()
    os.chmod(w / "targetdir2", 0o755)
    put(w / "files" / "src.txt", "from source\n")
    put(w / "targetdir3" / "precious.txt", "precious\n")

    put(h / "p_same", "same\n", 0o644)
    put(h / "p_content", "old\n", 0o644)
    os.link(h / "p_content", w / "hardlink-to-p_content")  # an in-place write would show through it
    put(h / "p_mode", "keep\n", 0o600)
    put(h / "p_attrs_only", "written by hand\n", 0o644)
    os.symlink(w / "target.txt", h / "p_link")
    os.symlink(w / "no-such-target", h / "p_dangling")
    os.symlink(w / "targetdir2", h / "p_link_dir")

    (h / "d_same").mkdir()
    os.chmod(h / "d_same", 0o755)
    (h / "d_mode").mkdir()
    put(h / "d_mode" / "kept.txt", "kept\n")
    os.chmod(h / "d_mode", 0o755)
    os.symlink(elsewhere / "targetdir", h / "d_link")
    put(h / "d_file_force", "in the way\n")

    put(h / "a_file", "remove me\n")
    (h / "a_empty_dir").mkdir()
    os.symlink(w / "target.txt", h / "a_link")
    os.symlink(w / "targetdir3", h / "a_link_dir")
    put(h / "a_full_force" / "sub" / "deep.txt", "deep\n")


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    env = new_env(tmp_path_factory.mktemp("file-table"))
    _machine(env)
    env.write("sys.lua", HEADER + "\n".join(decl for decl, _ in ROWS.values()) + "\n")
    home_before = tree(env.home)
    work_before = tree(env.work)
    noop = env.run("apply", "--noop", "--json")
    home_after_noop = tree(env.home)
    real = env.run("apply", "--json")
    home_after = tree(env.home)
    again = env.run("apply")
    home_after_again = tree(env.home)
    return SimpleNamespace(
        env=env,
        noop=noop,
        real=real,
        again=again,
        home_before=home_before,
        work_before=work_before,
        home_after_noop=home_after_noop,
        home_after=home_after,
        home_after_again=home_after_again,
    )


def test_table_apply_succeeds(table):
    assert table.noop.returncode == 0, out(table.noop)
    assert table.real.returncode == 0, out(table.real)
    assert "Traceback" not in out(table.real)


@pytest.mark.parametrize("row", list(ROWS))
def test_table_row_status(table, row):
    got = items(table.real)[row_id(table.env, row)]
    assert got["status"] == ROWS[row][1], got


@pytest.mark.parametrize("row", [r for r, (_, s) in ROWS.items() if s == "changed"])
def test_noop_reports_the_change_and_changes_nothing(table, row):
    got = items(table.noop)[row_id(table.env, row)]
    assert got["status"] == "noop", got


@pytest.mark.parametrize(
    "row,message",
    [
        ("p_absent", "Would have created the file"),
        ("p_source", "Would have created the file"),
        ("d_new", "Would have created directory"),
        ("a_file", "Would have removed the file"),
        ("a_empty_dir", "Would have removed the file"),
        ("a_link", "Would have removed the file"),
    ],
)
def test_noop_messages_of_the_seed(table, row, message):
    got = items(table.noop)[row_id(table.env, row)]
    assert got["message"].startswith(message), got


def test_noop_run_leaves_home_untouched_and_records_nothing(table):
    assert table.home_after_noop == table.home_before
    hist = table.env.run("history", "--json")
    # one snapshot: the real apply; the noop run recorded none
    assert hist.returncode == 0, out(hist)
    assert len(json.loads(hist.stdout)) == 1


def test_present_absent_is_created_with_content_and_mode(table):
    p = table.env.home / "p_absent"
    assert p.read_text() == "created\n"
    assert stat.S_ISREG(os.lstat(p).st_mode)
    assert mode_of(p) == 0o640


def test_present_matching_is_left_alone(table):
    assert table.home_after["p_same"] == table.home_before["p_same"] == ("file", 0o644, b"same\n")


def test_present_wrong_content_is_rewritten_atomically(table):
    p = table.env.home / "p_content"
    assert p.read_text() == "new\n"
    assert mode_of(p) == 0o644
    # the old inode was replaced by a rename, not written in place: its other link keeps the old bytes
    assert (table.env.work / "hardlink-to-p_content").read_text() == "old\n"


def test_present_wrong_mode_is_fixed_content_kept(table):
    p = table.env.home / "p_mode"
    assert p.read_text() == "keep\n"
    assert mode_of(p) == 0o644
    assert "mode 0600 -> 0644" in items(table.real)[row_id(table.env, "p_mode")]["message"]


def test_attributes_only_file_keeps_its_content(table):
    p = table.env.home / "p_attrs_only"
    assert p.read_text() == "written by hand\n"
    assert mode_of(p) == 0o600


def test_symlink_at_destination_is_replaced_not_written_through(table):
    p = table.env.home / "p_link"
    assert not p.is_symlink()
    assert stat.S_ISREG(os.lstat(p).st_mode)
    assert p.read_text() == "replaced\n"
    assert mode_of(p) == 0o600
    # the link's target is untouched: content and mode
    assert table.env.work.joinpath("target.txt").read_text() == "link target\n"
    assert mode_of(table.env.work / "target.txt") == 0o644
    assert "replaces a symlink to" in items(table.real)[row_id(table.env, "p_link")]["message"]


def test_dangling_symlink_is_replaced_and_its_target_not_created(table):
    p = table.env.home / "p_dangling"
    assert not p.is_symlink() and p.read_text() == "was dangling\n"
    assert not (table.env.work / "no-such-target").exists()


def test_symlink_to_directory_is_replaced_by_a_file(table):
    p = table.env.home / "p_link_dir"
    assert not p.is_symlink() and p.read_text() == "not a dir\n"
    assert list((table.env.work / "targetdir2").iterdir()) == []


def test_source_is_copied_relative_to_the_config_dir(table):
    p = table.env.home / "p_source"
    assert p.read_text() == "from source\n"
    assert mode_of(p) == 0o640
    assert (table.env.work / "files" / "src.txt").read_text() == "from source\n"


def test_directory_is_created_with_missing_parents(table):
    h = table.env.home
    assert (h / "d_new").is_dir() and (h / "d_new" / "a").is_dir()
    assert (h / "d_new" / "a" / "b").is_dir()
    assert mode_of(h / "d_new" / "a" / "b") == 0o700


def test_file_in_a_declared_new_directory_is_created_after_it(table):
    h = table.env.home
    assert (h / "newdir" / "sub").is_dir()
    assert (h / "newdir" / "sub" / "f.txt").read_text() == "deep\n"


def test_directory_matching_is_left_alone(table):
    assert table.home_after["d_same"] == table.home_before["d_same"]


def test_directory_wrong_mode_is_fixed_and_contents_kept(table):
    d = table.env.home / "d_mode"
    assert d.is_dir() and mode_of(d) == 0o700
    assert (d / "kept.txt").read_text() == "kept\n"


def test_symlink_where_directory_wanted_becomes_a_real_directory(table):
    d = table.env.home / "d_link"
    assert not d.is_symlink() and d.is_dir()
    assert mode_of(d) == 0o750
    assert list(d.iterdir()) == []
    # the directory the link pointed to is untouched
    elsewhere = table.env.home.parent / "elsewhere"
    assert mode_of(elsewhere / "targetdir") == 0o755
    assert (elsewhere / "targetdir" / "inside.txt").read_text() == "inside\n"


def test_file_where_directory_wanted_is_replaced_with_force(table):
    d = table.env.home / "d_file_force"
    assert d.is_dir() and not d.is_symlink()


def test_absent_rows(table):
    h = table.env.home
    assert not os.path.lexists(h / "a_absent")
    assert not os.path.lexists(h / "a_file")
    assert not os.path.lexists(h / "a_empty_dir")
    assert not os.path.lexists(h / "a_link")
    assert not os.path.lexists(h / "a_full_force")
    assert not os.path.lexists(h / "a_link_dir")
    assert (table.env.work / "targetdir3" / "precious.txt").read_text() == "precious\n"
    # removing a symlink never removes what it points to
    assert (table.env.work / "target.txt").read_text() == "link target\n"


def test_no_temp_files_are_left_behind(table):
    assert temp_files(table.env.home) == []
    assert temp_files(table.env.work) == []


def test_reapply_is_a_no_op(table):
    assert table.again.returncode == 0, out(table.again)
    assert "No changes" in table.again.stdout
    assert table.home_after_again == table.home_after


# -- source relative to the config's directory, not the cwd ---------------------
def test_source_is_relative_to_the_config_dir_not_the_cwd(sysenv):
    put(sysenv.work / "conf" / "files" / "src.txt", "beside the config\n")
    put(sysenv.work / "files" / "src.txt", "beside the cwd\n")
    sysenv.write("conf/sys.lua", HEADER + 'file { path = "~/copied", source = "files/src.txt" }\n')
    p = sysenv.run("apply", "conf/sys.lua")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "copied").read_text() == "beside the config\n"


def test_binary_source_is_copied_byte_for_byte(sysenv):
    data = bytes(range(256)) * 64 + b"\0\xff"
    (sysenv.work / "blob.bin").write_bytes(data)
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/blob.bin", source = "blob.bin", mode = "0600" }\n'
    )
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "blob.bin").read_bytes() == data
    assert mode_of(sysenv.home / "blob.bin") == 0o600
    assert temp_files(sysenv.home) == []


def test_changed_source_is_picked_up_on_the_next_apply(sysenv):
    src = put(sysenv.work / "src.txt", "v1\n")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/out.txt", source = "src.txt" }\n')
    assert sysenv.run("apply").returncode == 0
    assert (sysenv.home / "out.txt").read_text() == "v1\n"
    src.write_text("v2\n")
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert "No changes" not in p.stdout
    assert (sysenv.home / "out.txt").read_text() == "v2\n"


# -- failures of the table --------------------------------------------------------
def test_non_empty_directory_removal_needs_force(sysenv):
    put(sysenv.home / "full" / "keep.txt", "precious\n")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/full", ensure = "absent" }\n')
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "file ~/full" in p.stdout
    assert "force" in p.stdout and "not empty" in p.stdout
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before


def test_empty_directory_removal_needs_no_force(sysenv):
    (sysenv.home / "empty").mkdir()
    sysenv.write("sys.lua", HEADER + 'file { path = "~/empty", ensure = "absent" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert not (sysenv.home / "empty").exists()


def test_file_where_directory_wanted_without_force_fails_naming_force(sysenv):
    put(sysenv.home / "cfg", "a file\n")
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/cfg", ensure = "directory", mode = "0755" }\n'
    )
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "file ~/cfg" in p.stdout
    assert "a file exists where a directory is wanted" in p.stdout and "force = true" in p.stdout
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before


# -- owner and group (changing owners needs root) ---------------------------------
@pytest.mark.skipif(not IS_ROOT, reason="changing a file's owner needs root")
def test_owner_and_group_rows_by_name_and_numeric_id(sysenv):
    h = sysenv.home
    put(h / "wrong_owner", "o\n")
    os.chown(h / "wrong_owner", 65534, 0)
    put(h / "wrong_group", "g\n")
    os.chown(h / "wrong_group", 0, 65534)
    (h / "dir_owner").mkdir()
    os.chown(h / "dir_owner", 65534, 65534)
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
file { path = "~/wrong_owner", content = "o\\n" }
file { path = "~/wrong_group", content = "g\\n" }
file { path = "~/dir_owner", ensure = "directory", mode = "0755" }
file { path = "~/by_name", content = "n\\n", owner = "nobody", group = "nogroup" }
file { path = "~/by_id", content = "i\\n", owner = 65534, group = "65534", mode = "0600" }
""",
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    got = items(p)
    for name in ("wrong_owner", "wrong_group", "dir_owner", "by_name", "by_id"):
        assert got[f"file#{h}/{name}"]["status"] == "changed", got
    assert "owner nobody -> root" in got[f"file#{h}/wrong_owner"]["message"]
    assert "group nogroup -> root" in got[f"file#{h}/wrong_group"]["message"]

    def ids(name: str) -> tuple[int, int]:
        st = os.lstat(h / name)
        return st.st_uid, st.st_gid

    assert ids("wrong_owner") == (0, 0) and (h / "wrong_owner").read_text() == "o\n"
    assert ids("wrong_group") == (0, 0)
    assert ids("dir_owner") == (0, 0)
    assert ids("by_name") == (65534, 65534)
    assert ids("by_id") == (65534, 65534) and mode_of(h / "by_id") == 0o600
    again = sysenv.run("apply")
    assert again.returncode == 0 and "No changes" in again.stdout, out(again)
