"""`package{}` end to end: real archives served by a real HTTP server on 127.0.0.1.

Every test builds its archives with tarfile/zipfile (the tool is a tiny shell
script), serves them from `tests/httpserver.LocalServer`, runs the real `sys`
command line, and runs the installed tool through the generated env script in
/bin/sh, bash, zsh and fish (when installed). Nothing but the loopback
interface is ever contacted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ok, tree
from conftest import out as out_of
from httpserver import file_url, make_tar, make_zip, sha256, tool


def pkg(
    name: str,
    url: str,
    sha: str,
    bins: list[str] | None = None,
    *,
    strip: int | None = None,
    version: str = "1.0",
    extra: str = "",
) -> str:
    parts = [
        f'name = "{name}"',
        f'version = "{version}"',
        f'source = lib.fetchUrl {{ url = "{url}", sha256 = "{sha}" }}',
    ]
    if bins is not None:
        parts.append("bin = { " + ", ".join(f'"{b}"' for b in bins) + " }")
    if strip is not None:
        parts.append(f"strip_components = {strip}")
    if extra:
        parts.append(extra)
    return "package { " + ", ".join(parts) + " }\n"


def store_trees(sysenv) -> list[str]:
    d = sysenv.root / "store" / "trees"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def profile_bin(sysenv) -> Path:
    return sysenv.root / "state" / "profile" / "bin"


def snapshot_ids(sysenv) -> list[str]:
    res = sysenv.run("history", "--json")
    ok(res)
    return [s["id"] for s in json.loads(res.stdout)]


SHELLS = {
    "sh": lambda env_sh, env_fish, cmd: ["/bin/sh", "-c", f". '{env_sh}' && {cmd}"],
    "bash": lambda env_sh, env_fish, cmd: [
        "bash",
        "--noprofile",
        "--norc",
        "-c",
        f". '{env_sh}' && {cmd}",
    ],
    "zsh": lambda env_sh, env_fish, cmd: ["zsh", "-f", "-c", f". '{env_sh}' && {cmd}"],
    "fish": lambda env_sh, env_fish, cmd: [
        "fish",
        "--no-config",
        "-c",
        f"source '{env_fish}'; and {cmd}",
    ],
}


def in_shell(sysenv, shell: str, cmd: str) -> subprocess.CompletedProcess[str]:
    argv = SHELLS[shell](sysenv.root / "state" / "env.sh", sysenv.root / "state" / "env.fish", cmd)
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{shell} is not installed")
    env = dict(sysenv.env, PATH="/usr/bin:/bin")
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=sysenv.work, timeout=30
    )


# -- formats -----------------------------------------------------------------

FILES = {"mytool-1.0/bin/mytool": tool("hello from mytool"), "mytool-1.0/README": b"readme\n"}


def archive(fmt: str) -> tuple[str, bytes]:
    if fmt == "binary":
        return "mytool", tool("hello from mytool")
    if fmt == "zip":
        return "mytool-1.0.zip", make_zip(FILES)
    comp = {"tar.gz": "gz", "tar.xz": "xz", "tar.bz2": "bz2"}[fmt]
    return f"mytool-1.0.{fmt}", make_tar(FILES, comp)


@pytest.mark.parametrize("fmt", ["tar.gz", "tar.xz", "tar.bz2", "zip", "binary"])
def test_install_each_format_and_run_through_env_sh(sysenv, server, fmt):
    name, data = archive(fmt)
    url, sha = server.put(name, data)
    if fmt == "binary":
        sysenv.write("sys.lua", pkg("mytool", url, sha))  # bin defaults to bin/<name>
    else:
        sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"], strip=1))
    res = sysenv.run("apply")
    ok(res)
    assert server.count(name) == 1

    link = profile_bin(sysenv) / "mytool"
    assert link.is_symlink()
    target = Path(os.path.realpath(link))
    assert str(target).startswith(str(sysenv.root / "store" / "trees") + "/")
    [tree_dir] = store_trees(sysenv)
    assert tree_dir.endswith("-mytool-1.0")
    assert (sysenv.root / "store" / "trees" / tree_dir / "bin" / "mytool").is_file()
    if fmt != "binary":  # strip_components removed the top directory
        assert (sysenv.root / "store" / "trees" / tree_dir / "README").is_file()
        assert not (sysenv.root / "store" / "trees" / tree_dir / "mytool-1.0").exists()
    assert os.access(target, os.X_OK)
    # the store tree is read-only once written
    assert not os.stat(target).st_mode & 0o222

    run = in_shell(sysenv, "sh", "mytool a b")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "hello from mytool a b"
    # no staging left behind
    tmp = sysenv.root / "store" / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])  # /bin/sh: every format test above
def test_tool_runs_in_each_shell(sysenv, server, shell):
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    url, sha = server.put("t.tar.gz", make_tar({"bin/mytool": tool("hi")}))
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"]))
    ok(sysenv.run("apply"))
    run = in_shell(sysenv, shell, "mytool x")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == "hi x"
    which = in_shell(sysenv, shell, "command -v mytool" if shell != "fish" else "command -s mytool")
    assert which.stdout.strip() == str(profile_bin(sysenv) / "mytool")


def test_bin_linked_by_base_name_and_strip_components(sysenv, server):
    data = make_tar(
        {
            "pkg-2/libexec/deep/tool-a": tool("A"),
            "pkg-2/other/tool-b": tool("B"),
            "pkg-2/share/man/man1/tool-a.1": b".TH TOOL-A 1\n",
        },
        "xz",
    )
    url, sha = server.put("pkg-2.tar.xz", data)
    sysenv.write(
        "sys.lua",
        pkg("multi", url, sha, ["libexec/deep/tool-a", "other/tool-b"], strip=1, version="2"),
    )
    ok(sysenv.run("apply"))
    names = sorted(p.name for p in profile_bin(sysenv).iterdir())
    assert names == ["tool-a", "tool-b"]
    assert in_shell(sysenv, "sh", "tool-a; tool-b").stdout.split() == ["A", "B"]
    man = sysenv.root / "state" / "profile" / "share" / "man" / "man1" / "tool-a.1"
    assert man.is_symlink() and man.read_bytes() == b".TH TOOL-A 1\n"


def test_declared_format_for_a_url_without_extension(sysenv, server):
    url, sha = server.put("download/latest", make_zip({"bin/dl": tool("dl")}))
    sysenv.write("sys.lua", pkg("dl", url, sha, ["bin/dl"], extra='format = "zip"'))
    ok(sysenv.run("apply"))
    assert in_shell(sysenv, "sh", "dl").stdout.strip() == "dl"


def test_failed_upgrade_keeps_the_old_version_linked(sysenv, server):
    v1_url, v1_sha = server.put("v1.tar.gz", make_tar({"bin/mytool": tool("v1")}))
    v2_url, v2_sha = server.put("v2.tar.gz", make_tar({"bin/mytool": tool("v2")}))
    sysenv.write("sys.lua", pkg("mytool", v1_url, v1_sha, ["bin/mytool"], version="1"))
    ok(sysenv.run("apply"))
    profile_before = os.readlink(sysenv.root / "state" / "profile")
    sysenv.write(
        "sys.lua",
        pkg("mytool", v2_url, v2_sha, ["bin/mytool"], version="2")
        + 'exec { name = "boom", command = "false", depends_on = { "package#mytool" } }\n',
    )
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)
    assert "System unchanged" in out_of(res)
    assert os.readlink(sysenv.root / "state" / "profile") == profile_before
    assert in_shell(sysenv, "sh", "mytool").stdout.strip() == "v1"
    assert (
        len(store_trees(sysenv)) == 2
    )  # the new tree stays in the store (objects remain), unlinked
    # the retry needs no new download
    sysenv.write("sys.lua", pkg("mytool", v2_url, v2_sha, ["bin/mytool"], version="2"))
    ok(sysenv.run("apply"))
    assert in_shell(sysenv, "sh", "mytool").stdout.strip() == "v2"
    assert server.count("v2.tar.gz") == 1


def test_strip_components_two(sysenv, server):
    url, sha = server.put("deep.zip", make_zip({"a/b/bin/deep": tool("deep")}))
    sysenv.write("sys.lua", pkg("deep", url, sha, ["bin/deep"], strip=2))
    ok(sysenv.run("apply"))
    assert in_shell(sysenv, "sh", "deep").stdout.strip() == "deep"


def test_reapply_does_not_download_and_is_a_noop(sysenv, server):
    url, sha = server.put("t.tar.gz", make_tar({"bin/mytool": tool("hi")}))
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"]))
    ok(sysenv.run("apply"))
    assert server.count() == 1
    before = tree(sysenv.root / "store")
    res = sysenv.run("apply")
    ok(res)
    assert "No changes" in res.stdout
    assert server.count() == 1
    assert tree(sysenv.root / "store") == before
    plan = sysenv.run("plan", "--exit-code")
    assert plan.returncode == 0, out_of(plan)


def test_deleted_profile_link_is_relinked_without_download(sysenv, server):
    url, sha = server.put("t.tar.gz", make_tar({"bin/mytool": tool("hi")}))
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"]))
    ok(sysenv.run("apply"))
    (profile_bin(sysenv) / "mytool").unlink()
    plan = sysenv.run("plan", "--json")
    [item] = json.loads(plan.stdout)["plan"]["items"]
    assert item["action"] == "update" and "not linked" in item["reason"]
    ok(sysenv.run("apply"))
    assert in_shell(sysenv, "sh", "mytool").stdout.strip() == "hi"
    assert server.count() == 1


def test_download_in_cache_is_never_fetched(sysenv, server):
    data = make_tar({"bin/mytool": tool("cached")})
    digest = sha256(data)
    cache = sysenv.root / "cache" / "downloads"
    cache.mkdir(parents=True)
    (cache / digest).write_bytes(data)
    # the URL would 404: the cached object must be used without asking
    sysenv.write("sys.lua", pkg("mytool", server.url("404/mytool.tar.gz"), digest, ["bin/mytool"]))
    ok(sysenv.run("apply"))
    assert server.count() == 0
    assert in_shell(sysenv, "sh", "mytool").stdout.strip() == "cached"


def test_tree_in_store_is_never_fetched_even_without_cache(sysenv, server):
    url, sha = server.put("t.tar.gz", make_tar({"bin/mytool": tool("hi")}))
    cfg = pkg("mytool", url, sha, ["bin/mytool"])
    sysenv.write("sys.lua", cfg)
    ok(sysenv.run("apply"))
    assert server.count() == 1
    # unlink the package, drop the download cache, then declare it again
    sysenv.write("sys.lua", "-- nothing\n")
    ok(sysenv.run("apply", "--allow-empty"))
    assert not (profile_bin(sysenv) / "mytool").exists()
    shutil.rmtree(sysenv.root / "cache")
    sysenv.write("sys.lua", cfg)
    ok(sysenv.run("apply"))
    assert server.count() == 1
    assert in_shell(sysenv, "sh", "mytool").stdout.strip() == "hi"


def test_removal_unlinks_keeps_tree_until_gc_and_rollback_relinks(sysenv, server):
    url, sha = server.put("t.tar.gz", make_tar({"bin/mytool": tool("hi")}))
    other_url, other_sha = server.put("o.tar.gz", make_tar({"bin/other": tool("other")}))
    cfg = pkg("mytool", url, sha, ["bin/mytool"]) + pkg(
        "other", other_url, other_sha, ["bin/other"]
    )
    sysenv.write("sys.lua", cfg)
    ok(sysenv.run("apply"))
    first = snapshot_ids(sysenv)[0]
    trees = store_trees(sysenv)
    assert len(trees) == 2

    sysenv.write("sys.lua", pkg("other", other_url, other_sha, ["bin/other"]))
    res = sysenv.run("apply")
    ok(res)
    assert not os.path.lexists(profile_bin(sysenv) / "mytool")
    assert (profile_bin(sysenv) / "other").is_symlink()
    assert store_trees(sysenv) == trees  # still in the store
    assert in_shell(sysenv, "sh", "command -v mytool").returncode != 0

    res = sysenv.run("rollback", first)
    ok(res)
    assert (profile_bin(sysenv) / "mytool").is_symlink()
    assert in_shell(sysenv, "sh", "mytool").stdout.strip() == "hi"
    assert server.count() == 2  # rollback did not download anything

    # remove again, then gc drops the tree nothing refers to
    ok(sysenv.run("apply"))
    assert not os.path.lexists(profile_bin(sysenv) / "mytool")
    ok(sysenv.run("gc", "--keep", "0"))
    remaining = store_trees(sysenv)
    assert len(remaining) == 1 and remaining[0].endswith("-other-1.0")
    assert (profile_bin(sysenv) / "other").is_symlink()


def test_a_new_profile_borrows_the_links_the_old_one_has(sysenv, server):
    """Adding a package builds a new profile; links already right are hard
    links to the old profile's (no new inode each), which outlive it."""
    url, sha = server.put("t.tar.gz", make_tar({"bin/mytool": tool("hi"), "share/t.txt": b"t\n"}))
    other_url, other_sha = server.put("o.tar.gz", make_tar({"bin/other": tool("other")}))
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"]))
    ok(sysenv.run("apply"))
    first = snapshot_ids(sysenv)[0]
    profile = sysenv.root / "state" / "profile"
    old = os.path.realpath(profile)
    inodes = {rel: os.lstat(profile / rel).st_ino for rel in ("bin/mytool", "share/t.txt")}
    sysenv.write(
        "sys.lua",
        pkg("mytool", url, sha, ["bin/mytool"]) + pkg("other", other_url, other_sha, ["bin/other"]),
    )
    ok(sysenv.run("apply"))
    assert os.path.realpath(profile) != old
    assert not os.path.exists(old)  # pruned after the commit; its links live on
    assert {rel: os.lstat(profile / rel).st_ino for rel in inodes} == inodes
    assert (profile / "share" / "t.txt").read_text() == "t\n"
    assert in_shell(sysenv, "sh", "mytool && other").stdout.split() == ["hi", "other"]
    ok(sysenv.run("rollback", first))
    assert in_shell(sysenv, "sh", "mytool").stdout.strip() == "hi"
    assert not os.path.lexists(profile_bin(sysenv) / "other")


def test_file_url_source(sysenv, tmp_path):
    path = tmp_path / "local.tar.bz2"
    data = make_tar({"bin/localtool": tool("local")}, "bz2")
    path.write_bytes(data)
    sysenv.write("sys.lua", pkg("localtool", file_url(path), sha256(data), ["bin/localtool"]))
    ok(sysenv.run("apply"))
    assert in_shell(sysenv, "sh", "localtool").stdout.strip() == "local"


# -- faults ------------------------------------------------------------------


class Watch:
    """What a failed apply must leave unchanged."""

    def __init__(self, sysenv) -> None:
        self.sysenv = sysenv
        self.home = tree(sysenv.home)
        self.trees = store_trees(sysenv)
        self.bins = self._bins()

    def _bins(self) -> list[str]:
        b = profile_bin(self.sysenv)
        return sorted(p.name for p in b.iterdir()) if b.is_dir() else []

    def failed(self, res, *needles: str, code: int = 1) -> str:
        text = out_of(res)
        assert res.returncode == code, text
        assert "Traceback" not in text
        for n in needles:
            assert n in text, f"{n!r} not in output:\n{text}"
        assert tree(self.sysenv.home) == self.home
        assert store_trees(self.sysenv) == self.trees
        assert self._bins() == self.bins
        tmp = self.sysenv.root / "store" / "tmp"
        assert not tmp.exists() or list(tmp.iterdir()) == [], list(tmp.iterdir())
        part = self.sysenv.root / "cache" / "downloads"
        if part.is_dir():
            # a partial download is a `.<sha256>.syslua-*` temp file until verified
            assert not [p for p in part.iterdir() if ".syslua-" in p.name]
        return text


def test_checksum_mismatch(sysenv, server):
    url, actual = server.put("t.tar.gz", make_tar({"bin/mytool": tool("hi")}))
    wrong = sha256(b"something else")
    sysenv.write("sys.lua", pkg("mytool", url, wrong, ["bin/mytool"]))
    w = Watch(sysenv)
    text = w.failed(sysenv.run("apply"), wrong, actual, "checksum mismatch", "Apply failed")
    assert "mytool" in text
    # nothing was cached under the wrong name
    assert not (sysenv.root / "cache" / "downloads" / wrong).exists()


def test_http_404(sysenv, server):
    sysenv.write(
        "sys.lua", pkg("mytool", server.url("404/mytool.tar.gz"), sha256(b"x"), ["bin/mytool"])
    )
    w = Watch(sysenv)
    w.failed(sysenv.run("apply"), "404", server.url("404/mytool.tar.gz"))
    assert server.count() >= 1


def test_connection_refused(sysenv, server):
    url = server.url("gone.tar.gz")
    server.close()
    sysenv.write("sys.lua", pkg("mytool", url, sha256(b"x"), ["bin/mytool"]))
    w = Watch(sysenv)
    text = w.failed(sysenv.run("apply"), "cannot reach 127.0.0.1:", ": connection refused", url)
    assert "Errno" not in text


def test_connection_closed_early(sysenv, server):
    sysenv.write(
        "sys.lua", pkg("mytool", server.url("short/mytool.tar.gz"), sha256(b"x"), ["bin/mytool"])
    )
    Watch(sysenv).failed(sysenv.run("apply"), "ended early", "10 of 100000")


def test_stalled_server_times_out(sysenv, server, monkeypatch):
    monkeypatch.setenv("SYSLUA_FETCH_TIMEOUT", "1")
    sysenv.write(
        "sys.lua", pkg("mytool", server.url("stall/mytool.tar.gz"), sha256(b"x"), ["bin/mytool"])
    )
    w = Watch(sysenv)
    # a real process: syslua.fetch reads SYSLUA_FETCH_TIMEOUT when it is imported
    text = w.failed(sysenv.spawn("apply", timeout=30), "timed out")
    assert "stall/mytool.tar.gz" in text


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_truncated_archive(sysenv, server, fmt):
    name, data = archive(fmt)
    if fmt != "zip":
        # a tool big enough that truncation cuts its content, not just the end-of-archive blocks
        data = make_tar(
            {"mytool-1.0/bin/mytool": tool("x" * 5000) + os.urandom(20000)},
            {"tar.gz": "gz", "tar.xz": "xz"}[fmt],
        )
    cut = data[: len(data) // 2]
    url, sha = server.put(name, cut)  # the sha256 of the truncated bytes: verification passes
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"], strip=1))
    w = Watch(sysenv)
    w.failed(sysenv.run("apply"), "truncated or corrupt")


@pytest.mark.parametrize(
    "members, needle",
    [
        (
            {"files": {"bin/mytool": tool("x"), "bin/../../evil": b"evil"}},
            "points outside the archive",
        ),
        (
            {"files": {"bin/mytool": tool("x"), "/tmp/syslua-test-evil-abs": b"evil"}},
            "absolute path",
        ),
        (
            {"files": {"bin/mytool": tool("x")}, "symlinks": {"bin/escape": "../../../etc/passwd"}},
            "links outside",
        ),
    ],
    ids=["dotdot", "absolute", "symlink-out"],  # every rule in detail: test_unpack.py
)
def test_unsafe_tar_members_are_rejected(sysenv, server, tmp_path, members, needle):
    data = make_tar(members["files"], "gz", symlinks=members.get("symlinks"))
    url, sha = server.put("evil.tar.gz", data)
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"]))
    w = Watch(sysenv)
    w.failed(sysenv.run("apply"), needle)
    assert not Path("/tmp/syslua-test-evil-abs").exists()
    assert not [p for p in tmp_path.rglob("*evil*") if "srv" not in p.parts]


def test_unsafe_zip_members_are_rejected(sysenv, server):
    data = make_zip({"bin/mytool": tool("x"), "../zip-evil": b"evil"})
    url, sha = server.put("evil.zip", data)
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"]))
    Watch(sysenv).failed(sysenv.run("apply"), "..")
    data = make_zip({"bin/mytool": tool("x")}, symlinks={"bin/out": "../../../../etc/shadow"})
    url, sha = server.put("evil2.zip", data)
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"]))
    Watch(sysenv).failed(sysenv.run("apply"), "links outside")


def test_unknown_archive_format(sysenv, server):
    url, sha = server.put("mytool-1.0.7z", b"7z\xbc\xaf\x27\x1c" + b"\0" * 100)
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"]))
    w = Watch(sysenv)
    text = w.failed(sysenv.run("apply"), "unknown archive format")
    assert "mytool-1.0.7z" in text


def test_bin_missing_from_archive(sysenv, server):
    url, sha = server.put("t.tar.gz", make_tar({"pkg/bin/mytool": tool("x")}))
    # forgot strip_components: bin/mytool is at pkg/bin/mytool
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"]))
    w = Watch(sysenv)
    text = w.failed(sysenv.run("apply"), "bin/mytool", "not in the archive")
    assert "pkg/bin/mytool" in text  # says what it has
    # the verified download stays cached: fixing the config needs no new download
    sysenv.write("sys.lua", pkg("mytool", url, sha, ["bin/mytool"], strip=1))
    ok(sysenv.run("apply"))
    assert server.count() == 1


def test_failed_package_rolls_back_the_other_one(sysenv, server):
    good_url, good_sha = server.put("good.tar.gz", make_tar({"bin/good": tool("good")}))
    sysenv.write(
        "sys.lua",
        pkg("good", good_url, good_sha, ["bin/good"])
        + pkg("bad", server.url("404/bad.tar.gz"), sha256(b"x"), ["bin/bad"]),
    )
    res = sysenv.run("apply")
    assert res.returncode == 1, out_of(res)
    assert "System unchanged" in out_of(res)
    assert not os.path.lexists(profile_bin(sysenv) / "good")
    assert not os.path.lexists(profile_bin(sysenv) / "bad")


def test_parallel_installs_that_fail_leave_the_previous_profile_as_it_was(sysenv, server):
    """Installs running in parallel grow one new profile in place; a failure
    rolls back to the previous apply's profile, untouched, whatever grew."""
    base_url, base_sha = server.put("base.tar.gz", make_tar({"bin/base": tool("base")}))
    first = pkg("base", base_url, base_sha, ["bin/base"])
    sysenv.write("sys.lua", first)
    ok(sysenv.run("apply"))
    profile = sysenv.root / "state" / "profile"
    before_target = os.readlink(profile)
    before = tree(Path(os.path.realpath(profile)))
    cfg = first
    for i in range(6):
        url, sha = server.put(
            f"t{i}.tar.gz", make_tar({f"bin/t{i}": tool(f"t{i}"), f"share/t{i}.txt": b"x"})
        )
        cfg += pkg(f"t{i}", url, sha, [f"bin/t{i}"])
    cfg += pkg("bad", server.url("404/bad.tar.gz"), sha256(b"x"), ["bin/bad"])
    sysenv.write("sys.lua", cfg)
    res = sysenv.run("apply", "--jobs", "4")
    assert res.returncode == 1, out_of(res)
    assert os.readlink(profile) == before_target
    assert tree(Path(os.path.realpath(profile))) == before
    assert sorted(os.listdir(profile_bin(sysenv))) == ["base"]
    # and the same packages, all good, end linked in one profile
    sysenv.write(
        "sys.lua",
        cfg.replace(pkg("bad", server.url("404/bad.tar.gz"), sha256(b"x"), ["bin/bad"]), ""),
    )
    ok(sysenv.run("apply", "--jobs", "4"))
    assert sorted(os.listdir(profile_bin(sysenv))) == ["base"] + [f"t{i}" for i in range(6)]
    assert sorted(os.listdir(profile.parent / "profiles")) == [
        os.path.basename(os.readlink(profile))
    ]
    assert (profile / "share" / "t5.txt").read_bytes() == b"x"


def test_two_packages_same_bin_is_a_config_error(sysenv, server):
    a_url, a_sha = server.put("a.tar.gz", make_tar({"bin/tool": tool("a")}))
    b_url, b_sha = server.put("b.tar.gz", make_tar({"x/tool": tool("b")}))
    sysenv.write(
        "sys.lua", pkg("alpha", a_url, a_sha, ["bin/tool"]) + pkg("beta", b_url, b_sha, ["x/tool"])
    )
    w = Watch(sysenv)
    text = w.failed(sysenv.run("apply"), "alpha", "beta", "tool", code=2)
    assert server.count() == 0  # caught before anything is fetched
    plan = sysenv.run("plan")
    assert plan.returncode == 2 and "alpha" in out_of(plan) and "beta" in out_of(plan)
    assert "sys.lua:" in text


def test_source_needs_sha256(sysenv, server):
    sysenv.write(
        "sys.lua",
        'package { name = "x", version = "1", source = lib.fetchUrl { url = "http://127.0.0.1:1/x" } }\n',
    )
    res = sysenv.run("plan")
    assert res.returncode == 2, out_of(res)
    assert "sha256" in out_of(res) and "Traceback" not in out_of(res)


# -- fetchGit ------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(repo.parent),
    )
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def git_repo(tmp_path: Path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "gitrepo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "bin").mkdir()
    script = repo / "bin" / "gittool"
    script.write_bytes(tool("version one"))
    script.chmod(0o755)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    script.write_bytes(tool("version two"))
    _git(repo, "commit", "-q", "-am", "two")
    second = _git(repo, "rev-parse", "HEAD")
    return repo, first, second


def test_fetch_git_checks_out_rev_exactly(sysenv, git_repo):
    repo, first, second = git_repo
    url = file_url(repo)
    sysenv.write(
        "sys.lua",
        f'''
        package {{ name = "gittool", version = "git", bin = {{ "bin/gittool" }},
                   source = lib.fetchGit {{ url = "{url}", rev = "{first}" }} }}
    ''',
    )
    ok(sysenv.run("apply"))
    assert in_shell(sysenv, "sh", "gittool").stdout.strip() == "version one"
    [t] = store_trees(sysenv)
    assert not (sysenv.root / "store" / "trees" / t / ".git").exists()
    # the other rev is another store tree
    sysenv.write(
        "sys.lua",
        f'''
        package {{ name = "gittool", version = "git", bin = {{ "bin/gittool" }},
                   source = lib.fetchGit {{ url = "{url}", rev = "{second[:12]}" }} }}
    ''',
    )
    ok(sysenv.run("apply"))
    assert in_shell(sysenv, "sh", "gittool").stdout.strip() == "version two"
    assert len(store_trees(sysenv)) == 2


def test_fetch_git_from_a_plain_path(sysenv, git_repo):
    repo, first, _second = git_repo
    sysenv.write(
        "sys.lua",
        f'''
        package {{ name = "gittool", version = "git", bin = {{ "bin/gittool" }},
                   source = lib.fetchGit {{ url = "{repo}", rev = "{first}" }} }}
    ''',
    )
    ok(sysenv.run("apply"))
    assert in_shell(sysenv, "sh", "gittool").stdout.strip() == "version one"


def test_fetch_git_unknown_rev(sysenv, git_repo):
    repo, _first, _second = git_repo
    sysenv.write(
        "sys.lua",
        f'''
        package {{ name = "gittool", version = "git", bin = {{ "bin/gittool" }},
                   source = lib.fetchGit {{ url = "{repo}", rev = "{"0" * 40}" }} }}
    ''',
    )
    w = Watch(sysenv)
    w.failed(sysenv.run("apply"), "git", str(repo))


def test_fetch_git_needs_rev(sysenv, git_repo):
    repo, _first, _second = git_repo
    sysenv.write(
        "sys.lua",
        f'package {{ name = "g", version = "1", source = lib.fetchGit {{ url = "{repo}" }} }}\n',
    )
    res = sysenv.run("plan")
    assert res.returncode == 2, out_of(res)
    assert "rev" in out_of(res)
