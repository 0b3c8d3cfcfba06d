"""Our compatibility fixtures: configs written to the original sys.lua's API.

The fixtures (tests/data/compat/, see its README) are written here, from the
original's documented interface, one per behaviour its users rely on.

`configs/` are entry-form configs (`return { inputs, setup }`). Each test
copies one to `init.lua` in a fresh directory beside an empty
`vendor/syslua/` (the `path:` input some of them declare), sets what it
reads (`COMPAT_OUT`, the directory a bind writes into; `COMPAT_RELEASE`,
`COMPAT_STAGE`), runs `sys <command> init.lua` and checks: success or
failure, the files a bind made or must not have made, what a build left in
the store, and which builds and binds the plan holds and the apply changed.

`modules/` exercise the `syslua.*` modules: self-checking scripts and usage
examples, each run as a config through a small adapter (LIB_ADAPTER).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ok, tree
from conftest import out as out_of

# Real accounts (useradd, the account files): the tests of this group take
# turns (conftest.machine_lock), whichever worker runs them.
pytestmark = pytest.mark.xdist_group("accounts")

COMPAT = Path(__file__).parent / "data" / "compat"


class Fixture:
    def __init__(self, sysenv, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sysenv = sysenv
        self.dir = sysenv.work
        shutil.copy(COMPAT / "configs" / name, self.dir / "init.lua")
        (self.dir / "vendor" / "syslua").mkdir(parents=True)
        self.output = self.dir / "output"
        self.output.mkdir()
        monkeypatch.setenv("COMPAT_OUT", str(self.output))
        self.config = "init.lua"

    def run(self, *args: str):  # type: ignore[no-untyped-def]
        return self.sysenv.run(*args, self.config)

    def plan_counts(self) -> dict[str, int]:
        res = self.run("plan", "--json")
        ok(res)
        doc = json.loads(res.stdout)
        counts = {"build": 0, "bind": 0}
        for item in doc["manifest"]["items"]:
            if item["type"] in counts:
                counts[item["type"]] += 1
        return counts

    def applied(self, *args: str) -> dict[str, list[str]]:
        """Apply with --json; the ids of the builds and binds that changed, by action."""
        res = self.sysenv.run("apply", "--json", *args, self.config)
        ok(res)
        return changed(res.stdout)


def changed(stdout: str) -> dict[str, list[str]]:
    """Builds and binds an `apply --json` changed, by type, in the order they ran."""
    out: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        event = json.loads(line)
        if event["event"] == "item" and event["type"] in ("build", "bind"):
            if event["status"] == "changed":
                out.setdefault(event["type"], []).append(event["id"].partition("#")[2])
    return out


def store_trees(sysenv, suffix: str) -> list[Path]:
    d = sysenv.root / "store" / "trees"
    return sorted(p for p in d.iterdir() if p.name.endswith(suffix)) if d.is_dir() else []


@pytest.fixture
def fx(sysenv, monkeypatch):  # type: ignore[no-untyped-def]
    return lambda name: Fixture(sysenv, name, monkeypatch)


# -- configs/: entry-form configs through the CLI ------------------------------------


def test_nothing_declared(fx):
    f = fx("nothing_declared.lua")
    assert f.plan_counts() == {"build": 0, "bind": 0}
    ok(f.run("apply", "--allow-empty"))


def test_build_tool(fx, sysenv):
    f = fx("build_tool.lua")
    assert f.plan_counts() == {"build": 1, "bind": 0}
    assert f.applied() == {"build": ["morning-2.3.1"]}
    [tree_dir] = store_trees(sysenv, "-morning-2.3.1")
    tool = tree_dir / "bin" / "morning"
    assert tool.read_text() == "#!/bin/sh\necho good morning\n"  # WORDS from the exec's env
    assert tool.stat().st_mode & 0o111
    assert f.applied() == {}  # built once: the second apply changes nothing


def test_build_single_file(fx, sysenv):
    f = fx("build_single_file.lua")
    assert f.applied() == {"build": ["release-notes-0.4"]}
    [tree_dir] = store_trees(sysenv, "-release-notes-0.4")
    assert (tree_dir / "NOTES.txt").read_text() == "first light\n"


def test_builds_chained(fx, sysenv):
    f = fx("builds_chained.lua")
    assert f.plan_counts() == {"build": 2, "bind": 0}
    built = f.applied()
    # in this order, which the dependency decides (the ids sort the other way)
    assert built == {"build": ["words-1.0", "reversed-1.0"]}
    [reversed_dir] = store_trees(sysenv, "-reversed-1.0")
    assert (reversed_dir / "reversed.txt").read_text() == "gamma\nbeta\nalpha\n"


def test_bind_lifecycle(fx):
    f = fx("bind_lifecycle.lua")
    mat = f.output / "doormat.txt"
    assert f.plan_counts() == {"build": 0, "bind": 1}
    assert f.applied() == {"bind": ["welcome-mat"]}
    assert mat.read_text() == "welcome\n"
    # destroy: a dry run leaves it, a real one removes it, a second one is fine
    res = f.sysenv.run("destroy", "--dry-run")
    ok(res)
    assert mat.exists()
    ok(f.sysenv.run("destroy", "--yes"))
    assert not mat.exists()
    ok(f.sysenv.run("destroy", "--yes"))
    assert not mat.exists()


def test_bind_upgrade(fx, monkeypatch):
    f = fx("bind_upgrade.lua")
    release = f.output / "release.txt"
    monkeypatch.setenv("COMPAT_RELEASE", "r1")
    f.applied("--impure")
    assert release.read_text() == "installed r1\n"
    monkeypatch.setenv("COMPAT_RELEASE", "r2")
    assert f.applied("--impure") == {"bind": ["release-marker"]}
    # update ran with the outputs the first apply recorded (r1) and the new input (r2)
    assert release.read_text() == "upgraded r1 -> r2\n"


def test_bind_drift(fx, sysenv):
    f = fx("bind_drift.lua")
    pulse = f.output / "pulse.txt"
    f.applied()
    assert pulse.exists()
    # no drift while the file is there
    res = f.run("plan", "--exit-code")
    assert res.returncode == 0, out_of(res)
    # the file deleted: drift is reported, naming the bind and the check's message
    pulse.unlink()
    res = sysenv.run("status", "-v")  # the config is found in the current directory
    assert "heartbeat" in res.stdout and "pulse.txt has gone missing" in res.stdout, out_of(res)
    # and the next apply repairs it
    assert f.applied() == {"bind": ["heartbeat"]}
    assert pulse.exists()


def test_bind_swap_fails_restores_the_removed_bind(fx, monkeypatch):
    f = fx("bind_swap_fails.lua")
    kept = f.output / "kept.txt"
    monkeypatch.setenv("COMPAT_STAGE", "before")
    f.applied("--impure")
    assert kept.exists()
    monkeypatch.setenv("COMPAT_STAGE", "after")
    res = f.sysenv.run("apply", "--impure", f.config)
    assert res.returncode == 1, out_of(res)
    assert "breaker" in out_of(res)
    assert kept.read_text() == "still here\n"  # destroyed, then restored


def test_build_failure_skips_dependent_bind(fx, sysenv):
    f = fx("build_fails_bind_skipped.lua")
    res = f.run("apply")
    assert res.returncode == 1, out_of(res)
    assert "doomed-build" in out_of(res)
    assert not (f.output / "ghost.txt").exists()
    assert store_trees(sysenv, "") == []  # a failed build leaves nothing in the store
    assert tree(f.output) == {}


@pytest.mark.parametrize(
    ("name", "build", "scripts"),
    [
        ("script_sh_output.lua", "shell-greeting", ["script_1.sh"]),
        ("script_bash_only.lua", "bash-arrays", ["script_1.sh"]),
        (
            "script_default_names.lua",
            "numbered-scripts",
            ["script_1.sh", "script_2.sh", "script_3.sh", "script_4.sh"],
        ),
        ("script_given_name.lua", "named-script", ["prepare-assets.sh"]),
    ],
)
def test_scripts(fx, sysenv, name, build, scripts):
    f = fx(name)
    assert f.applied() == {"build": [build]}
    [tree_dir] = store_trees(sysenv, "-" + build)
    assert sorted(p.name for p in (tree_dir / "tmp").iterdir()) == scripts


def test_script_results(fx, sysenv):
    f = fx("script_results.lua")
    built = f.applied()
    assert sorted(built["build"]) == [
        "scripts-bash",
        "scripts-named",
        "scripts-pair",
        "scripts-plain",
    ]
    [named] = store_trees(sysenv, "-scripts-named")
    assert (named / "tmp" / "collect-stats.sh").is_file()


def test_script_in_a_bind(fx):
    f = fx("script_in_bind.lua")
    flag = f.output / "flag.txt"
    assert f.applied() == {"bind": ["flag-via-script"]}
    assert flag.exists()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("script_unknown_format.lua", "format must be 'shell' or 'bash'"),
        # formats of Windows, which syslua does not run on: refused clearly
        ("script_windows_powershell.lua", "the powershell format runs only on Windows"),
        ("script_windows_cmd.lua", "the cmd format runs only on Windows"),
    ],
)
def test_script_formats_refused(fx, sysenv, name, message):
    f = fx(name)
    before = tree(sysenv.root)
    res = f.run("apply")
    assert res.returncode == 2, out_of(res)
    assert message in res.stderr
    assert "format must be" in res.stderr  # every refusal says which formats work
    assert "init.lua:" in res.stderr
    assert tree(sysenv.root) == before


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_input_pinned(fx, sysenv, monkeypatch, tmp_path):
    """Its input is https://github.com/syslua-tests/pocket-notes.git, branch
    trunk. Tests never reach the network: the fixture runs unchanged, and git's
    own `insteadOf` (in a git config of the test's) sends that URL to a local
    bare repository, as a user without network could do too."""
    mirror = tmp_path / "mirror"
    src = tmp_path / "src"
    src.mkdir()
    (src / "TODO.md").write_text("- water the plants\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "trunk"], cwd=src, check=True)
    subprocess.run([*git, "add", "-A"], cwd=src, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "notes"], cwd=src, check=True)
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=src, check=True, capture_output=True, text=True
    ).stdout.strip()
    bare = mirror / "syslua-tests" / "pocket-notes.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f'[url "file://{mirror}/"]\n\tinsteadOf = https://github.com/\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))

    f = fx("git_input_pinned.lua")
    assert f.plan_counts() == {"build": 1, "bind": 0}
    assert f.applied() == {"build": ["notes-copy"]}
    [copy] = store_trees(sysenv, "-notes-copy")
    assert (copy / "TODO.md").read_text() == "- water the plants\n"  # from the checkout
    doc = json.loads((f.dir / "syslua.lock").read_text())
    [node] = [n for k, n in doc["nodes"].items() if k != "root"]
    assert node["rev"] == rev and node["ref"] == "trunk" and node["type"] == "git"
    # locked: the repository may go away, the next run does not need it
    shutil.rmtree(bare)
    ok(f.run("apply"))


def test_package_consumer_plans(fx):
    """Planned only (applying would download ripgrep): the package from our
    catalogue, and a bind that runs after it and uses its command."""
    f = fx("package_consumer.lua")
    res = f.run("plan", "--json")
    ok(res)
    doc = json.loads(res.stdout)
    types = sorted(i["type"] for i in doc["manifest"]["items"])
    assert types == ["bind", "package"]
    bind = next(i for i in doc["manifest"]["items"] if i["type"] == "bind")
    assert bind["props"]["depends_on"] == ["package#ripgrep"]
    assert "/bin/rg" in json.dumps(bind["props"]["actions"])


# -- modules/: the syslua.* modules ---------------------------------------------------
# Each fixture is run as a config: a script that returns { success = true }
# (or an entry table, whose setup is called) must evaluate without error.

LIB_ADAPTER = """\
sys.getenv = sys.getenv or os.getenv
if os.getenv("NOT_ELEVATED") then sys.is_elevated = false end
local r = dofile(sys.dir .. "/FIXTURE")
if type(r) == "table" and r.setup then r.setup({}) end
if type(r) == "table" and r.success ~= nil then assert(r.success == true, "the fixture did not succeed") end
"""


def lib_fixture(sysenv, rel: str) -> Path:
    """Copy the fixture and the files beside it into the work dir, behind the adapter."""
    src = COMPAT / "modules" / rel
    for f in src.parent.iterdir():
        if f.is_file():
            shutil.copy(f, sysenv.work / f.name)
    (sysenv.work / "sys.lua").write_text(LIB_ADAPTER.replace("FIXTURE", src.name))
    return sysenv.work / src.name


def manifest_items(sysenv) -> list[dict]:
    res = sysenv.run("plan", "--json")
    ok(res)
    return json.loads(res.stdout)["manifest"]["items"]


@pytest.mark.parametrize(
    "rel", ["priority_checks.lua", "packages_checks.lua", "interpolation_cases.lua"]
)
def test_self_checking_scripts(sysenv, rel):
    lib_fixture(sysenv, rel)
    res = sysenv.run("plan")
    ok(res)
    if rel == "interpolation_cases.lua":
        assert "interpolation: 32 cases, 0 failed" in res.stderr
        assert "interpolation: every case gave the expected text" in res.stderr


@pytest.mark.parametrize("rel", ["groups/groups_toplevel.lua", "groups/groups_entry.lua"])
def test_groups(sysenv, monkeypatch, rel):
    accounts = sysenv.work / "accounts"
    (accounts / "etc").mkdir(parents=True)
    (accounts / "etc" / "group").write_text("root:x:0:\n")
    (accounts / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    monkeypatch.setenv("SYSLUA_ACCOUNTS_PREFIX", str(accounts))
    lib_fixture(sysenv, rel)
    binds = sorted(i["key"] for i in manifest_items(sysenv) if i["type"] == "bind")
    assert binds == ["__syslua_group_crew", "__syslua_group_daemons"]
    ok(sysenv.run("apply"))
    lines = (accounts / "etc" / "group").read_text().splitlines()
    assert "crew:x:2345:" in lines
    assert any(line.startswith("daemons:x:") for line in lines)
    # without root: a clear error, and nothing changes
    monkeypatch.setenv("NOT_ELEVATED", "1")
    before = tree(accounts)
    res = sysenv.run("apply")
    assert res.returncode == 2, out_of(res)
    assert "syslua.groups requires elevated privileges (root/Administrator)" in res.stderr
    assert tree(accounts) == before


def test_fetch_then_build_plans(sysenv):
    """The download is from example.net, which tests never reach: planned only."""
    lib_fixture(sysenv, "fetch_then_build.lua")
    builds = [i for i in manifest_items(sysenv) if i["type"] == "build"]
    assert len(builds) == 2
    assert sorted(b["key"] for b in builds)[1] == "unpack-widget"
    fetch = next(b for b in builds if b["key"] != "unpack-widget")
    assert fetch["props"]["actions"][0]["url"] == (
        "https://downloads.example.net/widget/widget-1.2.tar.xz"
    )


def test_file_module_plans(sysenv):
    """Its targets are under /opt and /var/opt: planned only. Immutable content
    is a managed file; mutable content too (syslua manages every file it
    declares); an immutable source is a link to that source."""
    lib_fixture(sysenv, "files/file_module.lua")
    files = {i["key"]: i["props"] for i in manifest_items(sysenv) if i["type"] == "file"}
    assert files["/opt/widget/etc/widget.conf"]["content"] == "threads=4\n"
    assert files["/var/opt/widget/state.txt"]["content"] == "counter=0\n"
    motd = files["/opt/widget/share/motd.txt"]
    assert motd["ensure"] == "link"
    assert motd["target"] == str(sysenv.work / "motd.txt")


def test_user_account(sysenv, monkeypatch):
    accounts = sysenv.work / "accounts"
    (accounts / "etc").mkdir(parents=True)
    (accounts / "etc" / "group").write_text("root:x:0:\nusers:x:100:\n")
    (accounts / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (accounts / "etc" / "shadow").write_text("root:*:19000:0:99999:7:::\n")
    (accounts / "etc" / "gshadow").write_text("root:*::\nusers:*::\n")
    monkeypatch.setenv("SYSLUA_ACCOUNTS_PREFIX", str(accounts))
    lib_fixture(sysenv, "accounts/user_account.lua")
    res = sysenv.run("apply")
    ok(res)
    assert "config ./user_env.lua is not applied by syslua" in res.stderr
    passwd = (accounts / "etc" / "passwd").read_text()
    assert any(
        line.startswith("quill:") and ":Quill Writer:/home/quill:" in line
        for line in passwd.splitlines()
    ), passwd


def test_user_env(sysenv):
    lib_fixture(sysenv, "accounts/user_env.lua")
    ok(sysenv.run("apply"))
    text = (sysenv.root / "state" / "env.sh").read_text()
    assert "export QUILL_INBOX='drafts waiting: 3'" in text
