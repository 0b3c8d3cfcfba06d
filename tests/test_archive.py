"""`archive` end to end: CCM's archive resource through the real command line.

Archives are built with tarfile/zipfile (or taken from
tests/data/ccm/archives) and served by a real HTTP server on 127.0.0.1
(tests/httpserver.py), which also checks basic-auth credentials and records
request headers. Configs are Lua (`archive { ... }`) and the CCM YAML
manifests of tests/data/ccm/archive-*.yaml, whose `@@PORT@@` is the
server's port. Nothing but the loopback interface is contacted.
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
from httpserver import make_tar, make_zip, sha256

CORPUS = Path(__file__).parent / "data" / "ccm"
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


def corpus(sysenv, server, name: str) -> Path:  # type: ignore[no-untyped-def]
    """tests/data/ccm/<name>, with the server's port where `@@PORT@@` stands,
    written into the work dir. The manifests take everything else from facts
    (the temp home, the running user) and name the archives of
    tests/data/ccm/archives by their real checksums."""
    text = (CORPUS / name).read_text().replace("@@PORT@@", server.base.rsplit(":", 1)[1])
    assert "@@" not in text, text
    return sysenv.write(name, text, dedent=False)


def fixture(server, name: str, at: str) -> str:  # type: ignore[no-untyped-def]
    """Serve tests/data/ccm/archives/<name> at /<at>; returns its SHA-256."""
    return server.put(at, (CORPUS / "archives" / name).read_bytes())[1]


# -- the CCM corpus ------------------------------------------------------------


def test_corpus_has_its_headers() -> None:
    files = sorted(CORPUS.glob("archive-*.yaml"))
    assert 3 <= len(files) <= 5
    for f in files:
        head = f.read_text().splitlines()[0]
        assert head.startswith("# "), f"{f.name} opens with what it shows"
        assert "Expected:" in f.read_text(), f"{f.name} says its expected outcome"


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("archive-*.yaml")))
def test_corpus_plans_as_written_without_network(sysenv, name: str) -> None:
    """As written (no port filled in), each manifest plans: a plan reads no URL."""
    shutil.copy(CORPUS / name, sysenv.work / name)
    p = sysenv.run("plan", name)
    expected = 2 if "needs-creates" in name else 0
    assert p.returncode == expected, out_of(p)
    assert not (sysenv.home / "srv").exists()


def test_corpus_extract(sysenv, server) -> None:
    sha = fixture(server, "app-1.2.3.tar.gz", "releases/app-1.2.3.tar.gz")
    manifest = corpus(sysenv, server, "archive-extract.yaml")
    root = sysenv.home / "srv"

    plan = sysenv.run("plan", manifest.name)
    ok(plan)
    assert "will download and extract into" in plan.stdout, out_of(plan)
    assert "+ dir ~/srv/downloads (parent)" in plan.stdout
    assert "+ dir ~/srv/opt (parent)" in plan.stdout
    assert server.count() == 0, "a plan downloads nothing"

    noop = sysenv.run("apply", "--noop", manifest.name)
    ok(noop)
    assert "Would have downloaded. Would have extracted" in noop.stdout, out_of(noop)
    assert server.count() == 0 and not root.exists()

    ok(sysenv.run("apply", manifest.name))
    assert (root / "opt/app/bin/app").read_bytes() == APP["app/bin/app"]
    assert (root / "opt/app/README").read_bytes() == APP["app/README"]
    assert sha256((root / "downloads/app-1.2.3.tar.gz").read_bytes()) == sha
    assert os.stat(root / "opt/app/bin/app").st_mode & 0o777 == 0o755
    assert server.count() == 1

    again = sysenv.run("plan", manifest.name)
    ok(again)
    assert "No changes" in again.stdout, out_of(again)
    ok(sysenv.run("apply", manifest.name))
    assert server.count() == 1, "creates exists: nothing downloaded again"


def test_corpus_cleanup_zip(sysenv, server) -> None:
    files = {"bin/tool": b"#!/bin/sh\necho tool\n", "share/doc.txt": b"doc\n"}
    fixture(server, "tools.zip", "tools.zip")
    manifest = corpus(sysenv, server, "archive-cleanup-zip.yaml")
    root = sysenv.home / "srv"

    plan = sysenv.run("plan", manifest.name)
    ok(plan)
    assert "will download, extract into" in plan.stdout
    assert "and remove the archive file" in plan.stdout, out_of(plan)
    ok(sysenv.run("apply", manifest.name))
    assert (root / "tools/bin/tool").read_bytes() == files["bin/tool"]
    assert (root / "tools/share/doc.txt").read_bytes() == b"doc\n"
    assert not (root / "tools.zip").exists(), "cleanup removed the archive file"

    again = sysenv.run("apply", manifest.name)
    ok(again)
    assert server.count() == 1
    assert not (root / "tools.zip").exists()


def test_corpus_basic_auth_and_headers(sysenv, server) -> None:
    fixture(server, "app-1.2.3.tar.gz", "private/app.tar.gz")
    server.protect("private/app.tar.gz", "deploy", "s3cret")
    manifest = corpus(sysenv, server, "archive-auth-headers.yaml")
    root = sysenv.home / "srv"

    plan = sysenv.run("plan", manifest.name)
    ok(plan)
    assert "no checksum: the download is not verified" in plan.stdout, out_of(plan)
    ok(sysenv.run("apply", manifest.name))
    seen = server.headers("private/app.tar.gz")
    assert seen["Authorization"] == "Basic ZGVwbG95OnMzY3JldA=="  # deploy:s3cret
    assert seen["X-Release-Channel"] == "stable"
    assert (root / "private/app/bin/app").read_bytes() == APP["app/bin/app"]
    assert (root / "private.tar.gz").is_file()


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


def test_corpus_bad_checksum_extracts_nothing(sysenv, server) -> None:
    sha = fixture(server, "app-1.2.3.tar.gz", "releases/app-1.2.3.tar.gz")
    manifest = corpus(sysenv, server, "archive-bad-checksum.yaml")
    root = sysenv.home / "srv"
    before = tree(sysenv.home)

    p = sysenv.run("apply", manifest.name)
    assert p.returncode == 1, out_of(p)
    text = p.stdout + p.stderr
    assert "checksum mismatch" in text
    assert "expected sha256 " + "0" * 64 in text
    assert f"actual   sha256 {sha}" in text
    assert "Nothing was downloaded or extracted." in text
    assert FAILED in text
    assert not root.exists()
    assert tree(sysenv.home) == before


def test_corpus_cleanup_needs_creates(sysenv, server) -> None:
    fixture(server, "app-1.2.3.tar.gz", "releases/app-1.2.3.tar.gz")
    manifest = corpus(sysenv, server, "archive-cleanup-needs-creates.yaml")
    before = tree(sysenv.home)
    p = sysenv.run("plan", manifest.name)
    assert p.returncode == 2, out_of(p)
    assert "cleanup requires creates to be set" in p.stderr
    line = next(
        n for n, text in enumerate(manifest.read_text().splitlines(), 1) if "srv/app.tar.gz" in text
    )
    assert f"{manifest.name}:{line}" in p.stderr  # the line of the archive's name
    assert server.count() == 0
    assert tree(sysenv.home) == before


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
    ok(sysenv.run("destroy"))
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
