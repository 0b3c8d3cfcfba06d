"""`archive` end to end: CCM's archive resource through the real command line.

Archives are built with tarfile/zipfile and served by a real HTTP server on
127.0.0.1 (tests/httpserver.py), which also checks basic-auth credentials and
records request headers. Configs are Lua (`archive { ... }`); the CCM YAML
manifests of tests/data/ccm/archive-*.yaml are run, with the same server,
by tests/test_ccm_corpus.py. Nothing but the loopback interface is contacted.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ok, tree
from conftest import out as out_of
from httpserver import make_tar, make_zip

FAILED = "Apply failed. System unchanged."
APP = {"app/bin/app": b"#!/bin/sh\necho app 1.2.3\n", "app/README": b"the app\n"}


def me() -> tuple[str, str]:
    return pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name


def lua_archive(target: Path, url: str, **props: object) -> str:
    """An `archive { ... }` declaration owned by the running user."""
    owner, group = me()
    fields = {"name": str(target), "url": url, "owner": owner, "group": group, **props}
    parts = []
    for key, value in fields.items():
        if isinstance(value, bool):
            parts.append(f"{key} = {'true' if value else 'false'}")
        elif isinstance(value, dict):
            inner = ", ".join(f'["{k}"] = "{v}"' for k, v in value.items())
            parts.append(f"{key} = {{ {inner} }}")
        else:
            parts.append(f'{key} = "{value}"')
    return "archive { " + ", ".join(parts) + " }\n"


def test_wrong_credentials_are_refused_and_nothing_changes(sysenv, server) -> None:
    url, _ = server.put("private/app.tar.gz", make_tar(APP))
    server.protect("private/app.tar.gz", "deploy", "s3cret")
    dest = sysenv.home / "out"
    sysenv.write(
        "sys.lua",
        lua_archive(
            dest / "app.tar.gz", url, username="deploy", password="wrong", extract_parent=str(dest)
        ),
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out_of(p)
    assert "HTTP 401" in p.stdout + p.stderr
    assert FAILED in p.stdout + p.stderr
    assert not dest.exists()


def test_credentials_in_the_url_are_basic_auth_and_never_shown(sysenv, server) -> None:
    url, _ = server.put("private/app.tar.gz", make_tar(APP))
    server.protect("private/app.tar.gz", "deploy", "s3cret")
    dest = sysenv.home / "out"
    good = url.replace("http://", "http://deploy:s3cret@")
    sysenv.write("sys.lua", lua_archive(dest / "app.tar.gz", good, extract_parent=str(dest)))
    ok(sysenv.run("apply"))
    assert (dest / "app/bin/app").is_file()

    bad = url.replace("http://", "http://deploy:hunter2@")
    sysenv.write("sys.lua", lua_archive(dest / "new.tar.gz", bad, extract_parent=str(dest)))
    p = sysenv.run("apply")
    assert p.returncode == 1
    assert "HTTP 401" in p.stdout + p.stderr
    assert "hunter2" not in p.stdout + p.stderr


# -- safety: verified, no escapes, no bombs ----------------------------------


@pytest.mark.parametrize(
    ("archive", "message"),
    [
        (make_tar({"../evil": b"x"}), "points outside the archive"),
        (make_tar({"ok": b"x"}, symlinks={"link": "/etc/passwd"}), "links outside the archive"),
        (make_tar({"zeros": b"\0" * (8 << 20)}), "refused as a decompression bomb"),
    ],
    ids=["dotdot", "link-out", "bomb"],
)
def test_dangerous_archives_are_refused(sysenv, server, archive: bytes, message: str) -> None:
    url, sha = server.put("bad.tar.gz", archive)
    dest = sysenv.home / "out"
    dest.mkdir()
    (dest / "mine.txt").write_text("mine\n")
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua", lua_archive(dest / "dl/bad.tar.gz", url, checksum=sha, extract_parent=str(dest))
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out_of(p)
    assert message in p.stdout + p.stderr
    assert "nothing was extracted" in p.stdout + p.stderr
    assert tree(sysenv.home) == before, "the archive file is rolled back too"
    assert not (sysenv.home / "evil").exists()


def test_tar_and_tgz_names(sysenv, server) -> None:
    url, sha = server.put("plain.tar", make_tar(APP, ""))
    url2, sha2 = server.put("other.tgz", make_tar({"x/y": b"y\n"}))
    dest = sysenv.home / "out"
    sysenv.write(
        "sys.lua",
        lua_archive(dest / "plain.tar", url, checksum=sha, extract_parent=str(dest))
        + lua_archive(dest / "other.tgz", url2, checksum=sha2, extract_parent=str(dest)),
    )
    p = sysenv.run("plan")
    ok(p)
    # Two archives extracting into one directory run one after the other.
    assert f"[Wave 1] {dest}/other.tgz" in p.stdout, out_of(p)
    assert f"[Wave 2] {dest}/plain.tar" in p.stdout, out_of(p)
    ok(sysenv.run("apply"))
    assert (dest / "app/README").read_bytes() == b"the app\n"
    assert (dest / "x/y").read_bytes() == b"y\n"


def test_name_and_url_kinds_must_match(sysenv, server) -> None:
    url, sha = server.put("app.zip", make_zip({"a": b"a"}))
    sysenv.write("sys.lua", lua_archive(sysenv.home / "app.tar.gz", url))
    before = tree(sysenv.home)
    p = sysenv.run("plan")
    assert p.returncode == 2
    assert "url and name must be the same kind of archive: url is zip, name is tar.gz" in p.stderr
    assert "sys.lua:1" in p.stderr
    assert tree(sysenv.home) == before


def test_owner_and_group_are_required_when_present(sysenv, server) -> None:
    sysenv.write(
        "sys.lua",
        'archive { name = "/tmp/x.tar.gz", url = "http://127.0.0.1:1/x.tar.gz" }\n',
    )
    p = sysenv.run("plan")
    assert p.returncode == 2
    assert "missing required property `owner`" in p.stderr


# -- behaviour -----------------------------------------------------------------


def test_lua_creates_idempotence_and_checksum_reuse(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    archive = sysenv.home / "dl/app.tar.gz"
    sysenv.write(
        "sys.lua",
        lua_archive(
            archive,
            url,
            checksum=sha,
            extract_parent=str(dest),
            creates=str(dest / "app/bin/app"),
        ),
    )
    ok(sysenv.run("apply"))
    assert (dest / "app/bin/app").is_file()
    # `creates` exists: even without the archive file, nothing is done.
    archive.unlink()
    p = sysenv.run("plan")
    ok(p)
    assert "No changes" in p.stdout, out_of(p)
    # Without `creates`' path, the file is extracted again from the archive,
    # which is downloaded again only because it is gone.
    shutil.rmtree(dest / "app")
    p = sysenv.run("plan")
    assert "will download and extract into" in p.stdout, out_of(p)
    ok(sysenv.run("apply"))
    assert (dest / "app/bin/app").is_file()
    assert server.count() == 1, "the verified download came from the cache"


def test_without_checksum_or_creates_the_file_itself_is_the_state(sysenv, server) -> None:
    url, _ = server.put("app.tar.gz", make_tar(APP))
    target = sysenv.home / "app.tar.gz"
    sysenv.write("sys.lua", lua_archive(target, url))
    ok(sysenv.run("apply"))
    assert target.is_file()
    assert not (sysenv.home / "app").exists(), "no extract_parent: nothing extracted"
    p = sysenv.run("plan")
    assert "No changes" in p.stdout, out_of(p)


def test_ensure_absent_removes_the_file_and_removal_returns_it(sysenv, server) -> None:
    url, _ = server.put("app.tar.gz", make_tar(APP))
    target = sysenv.home / "app.tar.gz"
    target.write_bytes(b"an old download")
    sysenv.write("sys.lua", lua_archive(target, url, ensure="absent"))
    p = sysenv.run("plan")
    assert "will remove (the archive file exists)" in p.stdout, out_of(p)
    ok(sysenv.run("apply"))
    assert not target.exists()
    assert server.count() == 0
    p = sysenv.run("plan")
    assert "No changes" in p.stdout
    # The file was taken over: dropping the declaration gives it back.
    sysenv.write("sys.lua", "-- nothing declared\n")
    ok(sysenv.run("apply", "--allow-empty"))
    assert target.read_bytes() == b"an old download"


def test_failed_later_item_rolls_the_extraction_back(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    (dest / "app").mkdir(parents=True)
    (dest / "app/README").write_text("my own notes\n")
    os.chmod(dest / "app/README", 0o600)
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        "local a = "
        + lua_archive(sysenv.home / "dl/app.tar.gz", url, checksum=sha, extract_parent=str(dest))
        + 'exec { name = "/bin/false", depends_on = { a } }\n',
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out_of(p)
    assert FAILED in p.stdout + p.stderr
    assert tree(sysenv.home) == before
    assert (dest / "app/README").read_text() == "my own notes\n"
    assert not (dest / "app/bin").exists()
    assert not (sysenv.home / "dl").exists()


def test_removing_the_declaration_restores_what_was_there(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    (dest / "app").mkdir(parents=True)
    (dest / "app/README").write_text("my own notes\n")
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        lua_archive(sysenv.home / "dl/app.tar.gz", url, checksum=sha, extract_parent=str(dest)),
    )
    ok(sysenv.run("apply"))
    assert (dest / "app/README").read_bytes() == b"the app\n"
    sysenv.write("sys.lua", "-- nothing declared\n")
    p = sysenv.run("apply", "--allow-empty")
    ok(p)
    assert "restored 1 that were there before" in p.stdout, out_of(p)
    assert tree(sysenv.home) == before
    assert (dest / "app/README").read_text() == "my own notes\n"


def test_what_was_replaced_outlives_gc(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    (dest / "app").mkdir(parents=True)
    (dest / "app/README").write_text("my own notes\n")
    decl = lua_archive(sysenv.home / "app.tar.gz", url, checksum=sha, extract_parent=str(dest))
    sysenv.write("sys.lua", decl)
    ok(sysenv.run("apply"))
    # A second snapshot that does not touch the archive, then only it is kept.
    sysenv.write("sys.lua", decl + 'exec { name = "/bin/true" }\n')
    ok(sysenv.run("apply"))
    ok(sysenv.run("gc", "--keep", "0"))
    sysenv.write("sys.lua", "-- nothing declared\n")
    ok(sysenv.run("apply", "--allow-empty"))
    assert (dest / "app/README").read_text() == "my own notes\n"
    assert not (dest / "app/bin").exists()


def test_a_file_edited_after_extraction_is_left_on_removal(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    sysenv.write(
        "sys.lua",
        lua_archive(sysenv.home / "app.tar.gz", url, checksum=sha, extract_parent=str(dest)),
    )
    ok(sysenv.run("apply"))
    (dest / "app/README").write_text("edited by hand\n")
    sysenv.write("sys.lua", "-- nothing declared\n")
    p = sysenv.run("apply", "--allow-empty")
    ok(p)
    assert "changed since it was extracted; left in place" in p.stdout
    assert (dest / "app/README").read_text() == "edited by hand\n"
    assert not (dest / "app/bin/app").exists()
    assert not (sysenv.home / "app.tar.gz").exists()


def test_extraction_never_writes_through_a_symlinked_directory(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    elsewhere = sysenv.home / "elsewhere"
    elsewhere.mkdir()
    dest.mkdir()
    (dest / "app").symlink_to(elsewhere)
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        lua_archive(sysenv.home / "app.tar.gz", url, checksum=sha, extract_parent=str(dest)),
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out_of(p)
    assert "is a symlink where the archive has a directory" in p.stdout + p.stderr
    assert tree(sysenv.home) == before
    assert list(elsewhere.iterdir()) == []


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root and the nobody user")
def test_extraction_never_follows_a_link_another_user_made(sysenv, server) -> None:
    """Root extracting into `~/shared/opt`, where `~/shared` belongs to
    another user who made `opt` a link out of the home: every write reaches
    its directory without following a link that user could have put there
    (issue 22, point 1), so nothing is written through it."""
    url, sha = server.put("app.tar.gz", make_tar(APP))
    nobody = pwd.getpwnam("nobody")
    shared = sysenv.home / "shared"
    shared.mkdir()
    outside = sysenv.work / "outside"
    outside.mkdir()
    os.symlink(outside, shared / "opt")
    os.chown(shared / "opt", nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)
    os.chown(shared, nobody.pw_uid, nobody.pw_gid)
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        lua_archive(
            sysenv.home / "app.tar.gz", url, checksum=sha, extract_parent=str(shared / "opt")
        ),
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out_of(p)
    assert "is a symlink another user could have made" in p.stdout + p.stderr, out_of(p)
    assert FAILED in p.stdout + p.stderr
    assert tree(sysenv.home) == before
    assert list(outside.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")
def test_owner_and_group_as_root(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    nobody = pwd.getpwnam("nobody")
    group = grp.getgrgid(nobody.pw_gid).gr_name
    dest = sysenv.home / "opt"
    archive = sysenv.home / "app.tar.gz"
    sysenv.write(
        "sys.lua",
        lua_archive(archive, url, checksum=sha, extract_parent=str(dest)).replace(
            f'owner = "{me()[0]}", group = "{me()[1]}"', f'owner = "nobody", group = "{group}"'
        ),
    )
    ok(sysenv.run("apply"))
    for path in (archive, dest, dest / "app", dest / "app/bin/app"):
        st = os.stat(path)
        assert (st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid), path
    # The owner changed by hand: the plan says so, and an apply sets it back
    # without downloading again (the checksum still matches); without
    # `creates`, CCM extracts again whenever the archive was not as declared.
    os.chown(archive, 0, 0)
    p = sysenv.run("plan")
    assert "will set the owner of the archive file and extract into" in p.stdout, out_of(p)
    assert "(owner is root, not nobody)" in p.stdout
    ok(sysenv.run("apply"))
    assert os.stat(archive).st_uid == nobody.pw_uid
    assert server.count() == 1


def test_a_declared_directory_is_made_first(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    owner, group = me()
    sysenv.write(
        "sys.lua",
        lua_archive(dest / "dl/app.tar.gz", url, checksum=sha, extract_parent=str(dest / "x"))
        + f'file {{ path = "{dest}", ensure = "directory", mode = "0750", '
        f'owner = "{owner}", group = "{group}" }}\n',
    )
    p = sysenv.run("plan")
    ok(p)
    waves = p.stdout[p.stdout.index("Execution order") :]
    assert waves.index(str(dest)) < waves.index("app.tar.gz"), out_of(p)
    ok(sysenv.run("apply"))
    assert os.stat(dest).st_mode & 0o777 == 0o750
    assert (dest / "x/app/bin/app").is_file()


def test_destroy_restores_and_rollback_extracts_again(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    (dest / "app").mkdir(parents=True)
    (dest / "app/README").write_text("my own notes\n")
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        lua_archive(sysenv.home / "dl/app.tar.gz", url, checksum=sha, extract_parent=str(dest)),
    )
    ok(sysenv.run("apply"))
    applied = tree(sysenv.home)
    ok(sysenv.run("destroy", "--yes"))
    assert tree(sysenv.home) == before
    ok(sysenv.run("rollback"))
    assert tree(sysenv.home) == applied
    assert server.count() == 1, "the verified archive came from the cache"


def test_killed_before_commit_the_next_command_undoes_the_extraction(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    (dest / "app").mkdir(parents=True)
    (dest / "app/README").write_text("my own notes\n")
    before = tree(sysenv.home)
    sysenv.write(
        "sys.lua",
        lua_archive(sysenv.home / "dl/app.tar.gz", url, checksum=sha, extract_parent=str(dest)),
    )
    # A real process, killed with SIGKILL once everything is written and
    # before the commit record.
    killed = subprocess.run(
        [sys.executable, "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env={**sysenv.env, "SYSLUA_CRASH_AT": "before-commit"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert (dest / "app/README").read_bytes() == b"the app\n"
    p = sysenv.run("status")
    assert "rolled back an interrupted apply" in p.stdout + p.stderr, out_of(p)
    assert tree(sysenv.home) == before


def test_extracting_again_over_a_hand_edit_needs_force(sysenv, server) -> None:
    url, sha = server.put("app.tar.gz", make_tar(APP))
    dest = sysenv.home / "opt"
    sysenv.write(
        "sys.lua",
        lua_archive(
            sysenv.home / "app.tar.gz",
            url,
            checksum=sha,
            extract_parent=str(dest),
            creates=str(dest / "app/bin/app"),
        ),
    )
    ok(sysenv.run("apply"))
    (dest / "app/README").write_text("edited by hand\n")
    (dest / "app/bin/app").unlink()  # `creates` gone: the archive is extracted again
    p = sysenv.run("plan")
    assert "edited since the last apply (extracted file changed: ~/opt/app/README)" in p.stdout
    before = tree(sysenv.home)
    p = sysenv.run("apply")
    assert p.returncode == 2, out_of(p)
    assert "Refusing to overwrite" in p.stdout + p.stderr
    assert tree(sysenv.home) == before
    ok(sysenv.run("apply", "--force"))
    assert (dest / "app/README").read_bytes() == b"the app\n"
    assert (dest / "app/bin/app").is_file()
