"""Inputs of a config in the original's entry form: `git:` (local bare
repositories over file://, never the network), `github:`, `path:`, the
`syslua.lock` beside the config, `sys update`, `lua/` on the require path and
namespace clashes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import out, tree

from syslua.eval import inputs as inputlib

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="needs git")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


class Repo:
    """A work tree and the bare repository it pushes to (the input's URL)."""

    def __init__(self, base: Path, name: str) -> None:
        self.src = base / f"{name}-src"
        self.bare = base / f"{name}.git"
        self.src.mkdir(parents=True)
        git(self.src, "init", "-q", "-b", "main")
        git(base, "init", "-q", "--bare", "-b", "main", str(self.bare))

    @property
    def url(self) -> str:
        return f"file://{self.bare}"

    def commit(self, files: dict[str, str], tag: str | None = None) -> str:
        for rel, text in files.items():
            p = self.src / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        git(self.src, "add", "-A")
        git(self.src, "commit", "-q", "-m", "change")
        if tag:
            git(self.src, "tag", tag)
        git(self.src, "push", "-q", "--tags", str(self.bare), "main")
        return git(self.src, "rev-parse", "HEAD")


def entry(inputs: str, body: str) -> str:
    return (
        f"return {{\n  inputs = {{ {inputs} }},\n  setup = function(inputs)\n{body}\n  end,\n}}\n"
    )


def lock(sysenv) -> dict:  # type: ignore[no-untyped-def]
    return json.loads((sysenv.work / "syslua.lock").read_text())


def locked_rev(sysenv, name: str) -> str:  # type: ignore[no-untyped-def]
    doc = lock(sysenv)
    return doc["nodes"][doc["nodes"]["root"]["inputs"][name]]["rev"]


def env_values(sysenv) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Apply quietly and read the variables the config exported."""
    p = sysenv.run("apply", "-q", "init.lua")
    assert p.returncode == 0, out(p)
    values = {}
    for line in (sysenv.root / "state" / "env.sh").read_text().splitlines():
        if line.startswith("export ") and not line.startswith("export PATH="):
            name, _, value = line[7:].partition("=")
            values[name] = value.strip("'")
    return values


GREET = '    env { HI = require("greet").hi, DOT = sys.readFile(inputs.dots.path .. "/dotrc") }'


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repos", "dots")
    r.commit({"lua/greet/init.lua": 'return { hi = "v1" }\n', "dotrc": "dot v1"}, tag="v1")
    return r


def test_a_git_input_is_fetched_locked_and_reused_offline(sysenv, repo) -> None:
    first = git(repo.src, "rev-parse", "HEAD")
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    assert env_values(sysenv) == {"HI": "v1", "DOT": "dot v1"}
    doc = lock(sysenv)
    assert doc["version"] == 1 and doc["root"] == "root"
    node = doc["nodes"][doc["nodes"]["root"]["inputs"]["dots"]]
    assert node == {"type": "git", "url": f"git:{repo.url}", "rev": first, "inputs": {}}
    # The checkout is an exact tree in the cache, without .git.
    checkouts = list((sysenv.root / "cache" / "inputs" / "store").iterdir())
    assert len(checkouts) == 1 and not (checkouts[0] / ".git").exists()
    # A new commit upstream changes nothing: the lock pins the first one.
    repo.commit({"lua/greet/init.lua": 'return { hi = "v2" }\n'})
    assert env_values(sysenv) == {"HI": "v1", "DOT": "dot v1"}
    # And no network is needed: the repository can be gone.
    repo.bare.rename(repo.bare.with_suffix(".gone"))
    lock_before = (sysenv.work / "syslua.lock").read_bytes()
    p = sysenv.run("plan", "init.lua")
    assert p.returncode == 0, out(p)
    assert "0 to create, 0 to update, 0 to remove, 2 unchanged" in p.stdout, out(p)
    assert (sysenv.work / "syslua.lock").read_bytes() == lock_before


def test_sys_update_moves_the_lock_to_the_new_commit(sysenv, repo) -> None:
    sysenv.write(
        "init.lua",
        entry(f'dots = "git:{repo.url}", other = "git:{repo.url}#v1"', GREET),
    )
    assert env_values(sysenv)["HI"] == "v1"
    old = locked_rev(sysenv, "dots")
    new = repo.commit({"lua/greet/init.lua": 'return { hi = "v2" }\n'})
    # `other` pins the tag v1: it keeps its own copy of `greet` at v1, which
    # now differs from `dots` at v2.
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    p = sysenv.run("update", "dots", "-c", "init.lua")
    assert p.returncode == 0, out(p)
    assert f"~ Updated dots: {old[:8]} -> {new[:8]}" in p.stdout, out(p)
    assert "- Removed other" in p.stdout, out(p)
    assert f"Lock file updated: {sysenv.work / 'syslua.lock'}" in p.stdout, out(p)
    assert locked_rev(sysenv, "dots") == new
    assert env_values(sysenv)["HI"] == "v2"
    p = sysenv.run("update", "--json")
    assert p.returncode == 0, out(p)
    doc = json.loads(p.stdout)
    assert doc["format"] == 1 and doc["written"] is False
    assert doc["inputs"] == [{"name": "dots", "change": "unchanged", "old": new, "new": new}]
    p = sysenv.run("update")
    assert "= Unchanged: dots" in p.stdout and "All inputs are up to date." in p.stdout, out(p)


def test_sys_update_dry_run_writes_nothing(sysenv, repo) -> None:
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    env_values(sysenv)
    before = (sysenv.work / "syslua.lock").read_bytes()
    new = repo.commit({"dotrc": "dot v2"})
    p = sysenv.run("update", "--dry-run")
    assert p.returncode == 0, out(p)
    assert "~ Would update dots: " in p.stdout and new[:8] in p.stdout, out(p)
    assert "Dry run: the lock file was not written." in p.stdout
    assert (sysenv.work / "syslua.lock").read_bytes() == before


def test_sys_update_of_an_unknown_input_is_a_usage_error(sysenv, repo) -> None:
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    env_values(sysenv)
    before = tree(sysenv.work), tree(sysenv.root / "cache")
    repo.commit({"dotrc": "dot v2"})
    p = sysenv.run("update", "nope")
    assert p.returncode == 2, out(p)
    assert "Error: unknown input 'nope': the inputs of init.lua are dots" in p.stderr, out(p)
    assert (tree(sysenv.work), tree(sysenv.root / "cache")) == before
    sysenv.write("sys.lua", 'env { A = "1" }\n')
    p = sysenv.run("update", "dots", "-c", "sys.lua")
    assert p.returncode == 2, out(p)
    assert "Error: unknown input 'dots': sys.lua declares no inputs" in p.stderr, out(p)
    p = sysenv.run("update", "sys.lua")
    assert p.returncode == 0, out(p)
    assert "sys.lua declares no inputs; nothing to update." in p.stdout


def test_a_ref_pins_a_tag_or_a_branch(sysenv, tmp_path) -> None:
    # no lua/ here: three checkouts of one repository at different commits
    repo = Repo(tmp_path / "repos", "plain")
    v1 = repo.commit({"dotrc": "dot v1"}, tag="v1")
    repo.commit({"dotrc": "dot v2"})
    git(repo.src, "branch", "stable", v1)
    git(repo.src, "push", "-q", str(repo.bare), "stable")
    sysenv.write(
        "init.lua",
        entry(
            f'tagged = "git:{repo.url}#v1", branch = {{ git = "{repo.url}", ref = "stable" }}, '
            f'head = "git:{repo.url}"',
            '    env { T = sys.readFile(inputs.tagged.path .. "/dotrc"),\n'
            '          B = sys.readFile(inputs.branch.path .. "/dotrc"),\n'
            '          H = sys.readFile(inputs.head.path .. "/dotrc"),\n'
            "          REV = inputs.tagged.rev }",
        ),
    )
    got = env_values(sysenv)
    assert got == {"T": "dot v1", "B": "dot v1", "H": "dot v2", "REV": v1}
    assert lock(sysenv)["nodes"][lock(sysenv)["nodes"]["root"]["inputs"]["tagged"]]["ref"] == "v1"


def test_a_missing_repository_or_ref_is_an_error_that_changes_nothing(sysenv, repo) -> None:
    for url, message in (
        (f"git:file://{repo.bare}.missing", "git ls-remote failed: fatal: "),
        (f"git:{repo.url}#no-such-tag", f"{repo.url} has no branch or tag 'no-such-tag'"),
    ):
        sysenv.write("init.lua", entry(f'dots = "{url}"', "    env { A = '1' }"))
        before = tree(sysenv.work), tree(sysenv.home)
        p = sysenv.run("apply", "init.lua")
        assert p.returncode == 2, out(p)
        assert f"Error: init.lua:1: input dots: {message}" in p.stderr, out(p)
        assert (tree(sysenv.work), tree(sysenv.home)) == before
        assert not (sysenv.work / "syslua.lock").exists()
        assert not list((sysenv.root / "cache").rglob("dotrc"))


def test_a_lua_folder_in_an_input_joins_require_and_clashes_are_errors(sysenv, tmp_path) -> None:
    a = Repo(tmp_path / "repos", "a")
    a.commit({"lua/common/init.lua": "return 'a'\n", "lua/alib.lua": "return 'alib'\n"})
    sysenv.write("libs/b/lua/common/init.lua", "return 'b'\n")
    sysenv.write("libs/c/lua/clib/init.lua", "return 'c'\n")
    sysenv.write(
        "init.lua",
        entry(
            f'a = "git:{a.url}", c = "path:./libs/c"',
            '    env { X = require("alib") .. require("common") .. require("clib") }',
        ),
    )
    assert env_values(sysenv) == {"X": "alibac"}
    lock_before = (sysenv.work / "syslua.lock").read_bytes()
    sysenv.write(
        "init.lua",
        entry(f'a = "git:{a.url}", b = "path:./libs/b"', "    env { X = 'x' }"),
    )
    before = tree(sysenv.work), tree(sysenv.home)
    p = sysenv.run("plan", "init.lua")
    assert p.returncode == 2, out(p)
    assert "Error: init.lua:1: namespace conflict: 'common' is provided by two inputs:" in p.stderr
    assert f"  - input a (git:{a.url}@" in p.stderr, out(p)
    assert f"  - input b (path:{sysenv.work}/libs/b@local)" in p.stderr, out(p)
    assert (tree(sysenv.work), tree(sysenv.home)) == before
    assert (sysenv.work / "syslua.lock").read_bytes() == lock_before


def test_the_same_input_twice_is_no_clash(sysenv, repo) -> None:
    sysenv.write(
        "init.lua",
        entry(f'dots = "git:{repo.url}", again = "git:{repo.url}"', GREET),
    )
    assert env_values(sysenv)["HI"] == "v1"


def test_a_path_input_is_relative_to_the_config_dir(sysenv) -> None:
    sysenv.write("cfg/vendor/tools/lua/tools/init.lua", "return { name = 'tools' }\n")
    sysenv.write("cfg/vendor/tools/data.txt", "data")
    sysenv.write(
        "cfg/init.lua",
        entry(
            'tools = "path:./vendor/tools"',
            '    env { N = require("tools").name, P = inputs.tools.path, R = inputs.tools.rev,\n'
            '          D = sys.readFile(inputs.tools.path .. "/data.txt") }',
        ),
    )
    (sysenv.work / "elsewhere").mkdir()
    p = sysenv.run("apply", "-q", str(sysenv.work / "cfg"), cwd=sysenv.work / "elsewhere")
    assert p.returncode == 0, out(p)
    script = (sysenv.root / "state" / "env.sh").read_text()
    assert "export N='tools'" in script
    assert f"export P='{sysenv.work}/cfg/vendor/tools'" in script
    assert "export R='local'" in script and "export D='data'" in script
    node = json.loads((sysenv.work / "cfg" / "syslua.lock").read_text())["nodes"]
    assert {n["url"]: n["rev"] for k, n in node.items() if k != "root"} == {
        "path:./vendor/tools": "local"
    }


@pytest.mark.parametrize(
    "decl, message",
    [
        ('x = "http://example.invalid/x"', "input x: unknown input scheme 'http'"),
        ('x = "path:./nowhere"', "input x: path:./nowhere: {work}/nowhere is not a directory"),
        ('x = "git:"', "input x: missing URL after 'git:'"),
        ('x = "github:just-owner"', "input x: expected github:owner/repo[/ref]"),
        ("x = 42", "input x must be a URL string or a table, got a number"),
        ('x = { url = "path:.", colour = "red" }', "input x: unknown field 'colour'"),
    ],
)
def test_bad_input_declarations_are_located_and_change_nothing(sysenv, decl, message) -> None:
    sysenv.write("init.lua", entry(decl, "    env { A = '1' }"))
    before = tree(sysenv.work), tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("plan", "init.lua")
    assert p.returncode == 2, out(p)
    assert f"Error: init.lua:1: {message.format(work=sysenv.work)}" in p.stderr, out(p)
    assert (tree(sysenv.work), tree(sysenv.home), tree(sysenv.root)) == before


@pytest.mark.parametrize(
    "url, location, ref",
    [
        ("github:octo/demo", "https://github.com/octo/demo.git", None),
        ("github:octo/demo/v1.2.0", "https://github.com/octo/demo.git", "v1.2.0"),
        ("github:octo/demo.git#main", "https://github.com/octo/demo.git", "main"),
        ("git:git@host.example:org/repo.git#dev", "git@host.example:org/repo.git", "dev"),
        ("git:https://host.example/r.git", "https://host.example/r.git", None),
    ],
)
def test_input_urls_parse(url, location, ref) -> None:
    source = inputlib.parse("x", url)
    assert (source.kind, source.location, source.ref) == ("git", location, ref)


def test_a_locked_github_input_in_the_cache_needs_no_network(sysenv) -> None:
    """github:owner/repo maps to https://github.com/owner/repo.git; once locked
    and in the cache, nothing is fetched (there is no network here)."""
    rev = "0123456789abcdef0123456789abcdef01234567"
    location = "https://github.com/octo/demo.git"
    store = sysenv.root / "cache" / "inputs" / "store"
    checkout = store / f"demo-{inputlib._digest(location, rev)[:16]}"
    (checkout / "lua" / "demo").mkdir(parents=True)
    (checkout / "lua" / "demo" / "init.lua").write_text("return { v = 'cached' }\n")
    node = "demo-cafe0000"
    (sysenv.work / "syslua.lock").write_text(
        json.dumps(
            {
                "version": 1,
                "root": "root",
                "nodes": {
                    "root": {"inputs": {"demo": node}},
                    node: {"type": "git", "url": "github:octo/demo", "rev": rev, "inputs": {}},
                },
            }
        )
    )
    sysenv.write(
        "init.lua",
        entry(
            'demo = "github:octo/demo"', '    env { V = require("demo").v, R = inputs.demo.rev }'
        ),
    )
    assert env_values(sysenv) == {"V": "cached", "R": rev}


def test_inputs_of_inputs_are_resolved_and_set_up_first(sysenv) -> None:
    """As the original's transitive path-input tests: root -> lib_a -> lib_b,
    and lib_common shared by lib_a and lib_b (set up once). The setups share
    one Lua state: a global counter records their order."""
    setup = "return {{\n  inputs = {{ {} }},\n  setup = function(inputs)\n{}\n  end,\n}}\n"
    step = "    STEP = (STEP or 0) + 1\n"
    sysenv.write("libs/lib_common/init.lua", setup.format("", step + "    env { COMMON = STEP }"))
    sysenv.write(
        "libs/lib_b/init.lua",
        setup.format(
            'lib_common = "path:../lib_common"',
            step + "    env { B = STEP .. sys.path.basename(inputs.lib_common.path) }",
        ),
    )
    sysenv.write(
        "libs/lib_a/init.lua",
        setup.format(
            'lib_b = "path:../lib_b", lib_common = "path:../lib_common"',
            step + "    env { A = STEP }",
        ),
    )
    sysenv.write(
        "init.lua",
        entry(
            'lib_a = "path:./libs/lib_a"',
            step + "    env { ROOT = STEP .. inputs.lib_a.inputs.lib_b.rev }",
        ),
    )
    assert env_values(sysenv) == {"COMMON": "1", "B": "2lib_common", "A": "3", "ROOT": "4local"}
    doc = lock(sysenv)
    a = doc["nodes"][doc["nodes"]["root"]["inputs"]["lib_a"]]
    assert sorted(a["inputs"]) == ["lib_b", "lib_common"]
    p = sysenv.run("update")
    assert p.returncode == 0, out(p)
    assert "All inputs are up to date." in p.stdout, out(p)


def test_follows_makes_an_input_of_an_input_use_ours(sysenv) -> None:
    sysenv.write("v1/lua/utils/init.lua", "return 'v1'\n")
    sysenv.write("v2/lua/utils/init.lua", "return 'v2'\n")
    sysenv.write(
        "lib/init.lua",
        'return { inputs = { utils = "path:../v1" }, setup = function(inputs)\n'
        '  env { LIB_SAW = require("utils") .. ":" .. sys.path.basename(inputs.utils.path) }\n'
        "end }\n",
    )
    sysenv.write(
        "init.lua",
        entry(
            'utils = "path:./v2", mylib = { url = "path:./lib", '
            'inputs = { utils = { follows = "utils" } } }',
            "",
        ),
    )
    assert env_values(sysenv) == {"LIB_SAW": "v2:v2"}
    sysenv.write("init.lua", entry('mylib = "path:./lib", utils = "path:./v2"', ""))
    p = sysenv.run("plan", "init.lua")
    assert p.returncode == 2, out(p)
    assert "namespace conflict: 'utils' is provided by two inputs:" in p.stderr, out(p)


def test_an_input_beside_the_config_is_found_by_its_lua_folder_not_its_name(sysenv) -> None:
    """The shape of the original's fixtures: `syslua = 'path:./syslua'`, whose
    init.lua is an entry that requires the module of the same name from its
    lua/ folder. `require('mylib')` must load lua/mylib, not ./mylib/init.lua."""
    sysenv.write(
        "mylib/init.lua",
        "return { inputs = {}, setup = function() require('mylib').setup() end }\n",
    )
    sysenv.write(
        "mylib/lua/mylib/init.lua",
        "local M = {}\nfunction M.setup() CALLS = (CALLS or 0) + 1 end\nreturn M\n",
    )
    sysenv.write(
        "init.lua",
        entry('mylib = "path:./mylib"', "    require('mylib').setup()\n    env { CALLS = CALLS }"),
    )
    assert env_values(sysenv) == {"CALLS": "2"}


def test_doctor_reads_inputs_from_the_cache_and_writes_no_lock(sysenv, repo) -> None:
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    before = tree(sysenv.work), tree(sysenv.root)
    p = sysenv.run("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(p.stdout)["checks"]}
    assert not checks["config"]["ok"], out(p)
    assert (
        f"input dots: git:{repo.url} is not in the cache, and this command does not fetch"
        in (checks["config"]["detail"])
    )
    assert tree(sysenv.work) == before[0] and not (sysenv.root / "cache" / "inputs").exists()
    env_values(sysenv)  # fetches and locks
    p = sysenv.run("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(p.stdout)["checks"]}
    assert checks["config"]["ok"], out(p)


def test_a_broken_lock_file_is_an_error_that_keeps_it(sysenv, repo) -> None:
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    sysenv.write("syslua.lock", "{ not json")
    before = tree(sysenv.work), tree(sysenv.home)
    p = sysenv.run("apply", "init.lua")
    assert p.returncode == 2, out(p)
    assert f"Error: {sysenv.work}/syslua.lock is not a syslua lock file" in p.stderr, out(p)
    assert "delete it to resolve every input again" in p.stderr
    assert (tree(sysenv.work), tree(sysenv.home)) == before


def test_an_input_whose_url_changed_is_resolved_again(sysenv, repo, tmp_path) -> None:
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    assert env_values(sysenv)["HI"] == "v1"
    other = Repo(tmp_path / "repos", "other")
    rev = other.commit({"lua/greet/init.lua": 'return { hi = "other" }\n', "dotrc": "o"})
    sysenv.write("init.lua", entry(f'dots = "git:{other.url}"', GREET))
    assert env_values(sysenv) == {"HI": "other", "DOT": "o"}
    assert locked_rev(sysenv, "dots") == rev


def test_sys_update_takes_the_originals_spelling(sysenv, repo) -> None:
    """`sys update CONFIG -i NAME --dry-run`, as the original's CLI has it."""
    sysenv.write("cfg/init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    (sysenv.work / "elsewhere").mkdir()
    p = sysenv.run("update", str(sysenv.work / "cfg" / "init.lua"), cwd=sysenv.work / "elsewhere")
    assert p.returncode == 0, out(p)
    assert "+ Added dots (" in p.stdout, out(p)
    new = repo.commit({"dotrc": "dot v2"})
    p = sysenv.run("update", "cfg", "-i", "dots", "--dry-run")
    assert p.returncode == 0, out(p)
    assert f"-> {new[:8]}" in p.stdout and "Dry run" in p.stdout, out(p)
    p = sysenv.run("update", "cfg/init.lua", "-i", "nope")
    assert p.returncode == 2, out(p)
    assert "unknown input 'nope'" in p.stderr


def test_an_inputs_own_lock_pins_its_inputs(sysenv, tmp_path) -> None:
    utils = Repo(tmp_path / "repos", "utils")
    old = utils.commit({"lua/utils/init.lua": "return 'old'\n"})
    utils.commit({"lua/utils/init.lua": "return 'new'\n"})
    lib_lock = {
        "version": 1,
        "root": "root",
        "nodes": {
            "root": {"inputs": {"utils": "utils-1"}},
            "utils-1": {"type": "git", "url": f"git:{utils.url}", "rev": old, "inputs": {}},
        },
    }
    sysenv.write("lib/syslua.lock", json.dumps(lib_lock))
    sysenv.write(
        "lib/init.lua",
        f'return {{ inputs = {{ utils = "git:{utils.url}" }}, setup = function() end }}\n',
    )
    sysenv.write("init.lua", entry('lib = "path:./lib"', "    env { U = require('utils') }"))
    assert env_values(sysenv) == {"U": "old"}
    # The config's lock now pins it too, under the input's node.
    doc = lock(sysenv)
    lib_node = doc["nodes"][doc["nodes"]["root"]["inputs"]["lib"]]
    assert doc["nodes"][lib_node["inputs"]["utils"]]["rev"] == old


def test_inputs_that_follow_each_other_in_a_circle_are_an_error(sysenv) -> None:
    sysenv.write("a/init.lua", 'return { inputs = { x = "path:../b" }, setup = function() end }\n')
    sysenv.write("b/init.lua", 'return { inputs = { y = "path:../a" }, setup = function() end }\n')
    sysenv.write(
        "init.lua",
        entry(
            'a = { url = "path:./a", inputs = { x = { follows = "b" } } }, '
            'b = { url = "path:./b", inputs = { y = { follows = "a" } } }',
            "",
        ),
    )
    before = tree(sysenv.work)
    p = sysenv.run("plan", "init.lua")
    assert p.returncode == 2, out(p)
    assert "Error: init.lua:1: input a follows itself" in p.stderr, out(p)
    assert tree(sysenv.work) == before


def test_sys_update_commit_commits_the_lock_alone(sysenv, repo) -> None:
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    p = sysenv.run("update", "--commit")  # not a git repository: refused before anything
    assert p.returncode == 2, out(p)
    assert "--commit: git rev-parse failed in" in p.stderr, out(p)
    assert not (sysenv.work / "syslua.lock").exists()
    p = sysenv.run("update", "--commit", "--dry-run")
    assert p.returncode == 2 and "--commit and --dry-run do not go together" in p.stderr
    git(sysenv.work, "init", "-q", "-b", "main")
    git(sysenv.work, "config", "user.name", "t")  # who `sys` commits as
    git(sysenv.work, "config", "user.email", "t@example.com")
    git(sysenv.work, "add", "init.lua")
    git(sysenv.work, "commit", "-q", "-m", "config")
    sysenv.write("notes.txt", "not part of the commit")
    p = sysenv.run("update", "--commit")
    assert p.returncode == 0, out(p)
    rev = locked_rev(sysenv, "dots")
    assert f"Committed syslua.lock: sys update: dots {rev[:8]}" in p.stdout, out(p)
    assert git(sysenv.work, "log", "-1", "--format=%s") == f"sys update: dots {rev[:8]}"
    assert git(sysenv.work, "show", "--name-only", "--format=", "HEAD") == "syslua.lock"
    assert git(sysenv.work, "status", "--porcelain") == "?? notes.txt"
    p = sysenv.run("update", "--commit")
    assert "Nothing to commit: the lock file is as committed." in p.stdout, out(p)


def test_a_lock_in_the_originals_layout_is_kept_while_it_pins_the_same(sysenv, repo) -> None:
    """A lock written by the original (its `lastModified`, its own layout) is
    read as it is: `sys plan` and `sys update` leave it byte for byte until a
    pin changes, and then write ours."""
    sysenv.write("init.lua", entry(f'dots = "git:{repo.url}"', GREET))
    env_values(sysenv)
    doc = lock(sysenv)
    for node_id, node in doc["nodes"].items():
        if node_id != "root":
            node["lastModified"] = 1733667300
    theirs = json.dumps(doc, indent=4).encode()
    (sysenv.work / "syslua.lock").write_bytes(theirs)
    assert env_values(sysenv) == {"HI": "v1", "DOT": "dot v1"}
    p = sysenv.run("update")
    assert p.returncode == 0 and "All inputs are up to date." in p.stdout, out(p)
    assert (sysenv.work / "syslua.lock").read_bytes() == theirs
    new = repo.commit({"dotrc": "dot v2"})
    p = sysenv.run("update")
    assert p.returncode == 0 and "Lock file updated" in p.stdout, out(p)
    assert locked_rev(sysenv, "dots") == new


def test_sys_dir_in_an_inputs_init_lua_is_its_own_directory(sysenv) -> None:
    """sys.dir is the directory of the file being evaluated: an input's init.lua
    sees its own, in its main chunk and in its setup; the config sees its own."""
    sysenv.write(
        "libs/lib_a/init.lua",
        "local here = sys.dir\n"
        "return { setup = function()\n"
        "  env { A_MAIN = here, A_SETUP = sys.dir, A_RES = sys.path.resolve('x'), A_CALL = sys.path('y') }\n"
        "end }\n",
    )
    sysenv.write(
        "init.lua",
        entry(
            'lib_a = "path:./libs/lib_a"', "    env { ROOT = sys.dir, RES = sys.path.resolve('x') }"
        ),
    )
    lib = str(sysenv.work / "libs" / "lib_a")
    assert env_values(sysenv) == {
        "A_MAIN": lib,
        "A_SETUP": lib,
        "A_RES": f"{lib}/x",
        "A_CALL": f"{lib}/y",
        "ROOT": str(sysenv.work),
        "RES": f"{sysenv.work}/x",
    }
