"""The evaluation cache (issue 27, point 2): a plan from the cache always
equals a fresh evaluation, whatever input changed; what the cache cannot see
is never cached, and -v says why; a cached run does not load Lua."""

from __future__ import annotations

import getpass
import grp
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SysEnv, put
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CONFIG = """\
local m = require("mod")
local o = require("other")
local names = {}
for _, e in ipairs(sys.readDir("d")) do names[#names + 1] = e.name .. ":" .. e.type end
file { path = "~/out", content = table.concat({
  m.x, o.y, sys.readFile("data.txt"), sys.getenv("EC_FOO") or "-",
  tostring(sys.facts.color), table.concat(names, ","),
  table.concat(sys.glob("g/**/*.txt"), ","),
}, "\\n") }
file { path = "~/t", source = "src" }
"""
# Past the cache's "changed while evaluating" window (evalcache.SLACK_NS).
SETTLE = 0.06


@pytest.fixture
def monkeypatch_env() -> Iterator[None]:
    """The variables these tests set, put back after."""
    saved = {k: os.environ.get(k) for k in ("EC_FOO", "EC_SECRET")}
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _world(sysenv: SysEnv) -> Path:
    work = sysenv.work
    put(work / "sys.lua", CONFIG)
    put(work / "lua" / "mod.lua", 'return { x = "A" }\n')
    put(work / "other.lua", 'return { y = "manifest dir" }\n')
    put(work / "data.txt", "data-1\n")
    put(work / "d" / "one", "1")
    put(work / "g" / "a.txt", "a")
    put(work / "src" / "f1", "f1")
    put(work / "src" / "sub" / "f2", "f2")
    put(sysenv.home / ".config" / "syslua" / "facts.json", '{"color": "red"}')
    return work / "sys.lua"


def _same_stat_edit(path: Path, text: str) -> None:
    """Replace the content keeping size and mtime (the racily clean case)."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _mutate(sysenv: SysEnv, kind: str, n: int) -> None:
    work = sysenv.work
    letter = "ABCDEFGHIJ"[n % 10]
    if kind == "module":
        _same_stat_edit(work / "lua" / "mod.lua", f'return {{ x = "{letter}" }}\n')
    elif kind == "data":
        text = (work / "data.txt").read_text()
        first = letter if text[0] != letter else letter.lower()
        _same_stat_edit(work / "data.txt", first + text[1:])
    elif kind == "data-grow":
        (work / "data.txt").write_text("data" * (n % 4 + 1) + "\n")
    elif kind == "shadow":
        shadow = work / "lua" / "other.lua"
        if shadow.exists():
            shadow.unlink()
        else:
            put(shadow, 'return { y = "lua dir" }\n')
    elif kind == "tree-add":
        put(work / "src" / "sub" / f"new{n}", "x")
    elif kind == "tree-remove":
        files = sorted(p for p in (work / "src").rglob("*") if p.is_file())
        if len(files) > 1:
            files[n % len(files)].unlink()
    elif kind == "tree-mode":
        f1 = min(p for p in (work / "src").rglob("*") if p.is_file())
        f1.chmod(f1.stat().st_mode ^ 0o111)
    elif kind == "readdir":
        put(work / "d" / f"e{n}", "")
    elif kind == "glob":
        put(work / "g" / "deep" / f"m{n}.txt", "")
    elif kind == "env":
        if n % 3 == 0:
            os.environ.pop("EC_FOO", None)
        else:
            os.environ["EC_FOO"] = letter
    elif kind == "facts":
        facts = sysenv.home / ".config" / "syslua" / "facts.json"
        facts.write_text(json.dumps({"color": ["red", "blue", "green"][n % 3]}))


def _manifest(sysenv: SysEnv, *extra: str) -> tuple[dict[str, object], str]:
    res = sysenv.run("plan", "--json", "-v", *extra, "sys.lua")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["manifest"], res.stderr


KINDS = [
    "module",
    "data",
    "data-grow",
    "shadow",
    "tree-add",
    "tree-remove",
    "tree-mode",
    "readdir",
    "glob",
    "env",
    "facts",
]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 9)), max_size=6))
def test_cached_plan_always_equals_a_fresh_evaluation(
    sysenv: SysEnv, steps: list[tuple[str, int]], monkeypatch_env: None
) -> None:
    if not (sysenv.work / "sys.lua").exists():
        _world(sysenv)
        time.sleep(SETTLE)
        _manifest(sysenv)  # the cache now holds this evaluation
    for kind, n in steps:
        _mutate(sysenv, kind, n)
        time.sleep(SETTLE)
        cached, _ = _manifest(sysenv)
        fresh, said = _manifest(sysenv, "--no-cache")
        assert "evaluation not cached: --no-cache" in said
        assert cached == fresh, kind
        again, said = _manifest(sysenv)
        assert again == fresh
        assert "evaluation cached" in said, said


def test_every_kind_of_input_is_seen(sysenv: SysEnv, monkeypatch_env: None) -> None:
    """Each change in turn: the cached run sees it (evaluates again), and
    with nothing changed the next run is answered from the cache."""
    _world(sysenv)
    time.sleep(SETTLE)
    _manifest(sysenv)
    for n, kind in enumerate(KINDS, 1):
        before, said = _manifest(sysenv)
        assert "evaluation cached" in said, (kind, said)
        _mutate(sysenv, kind, n)
        time.sleep(SETTLE)
        after, said = _manifest(sysenv)
        assert "evaluation cache not used" in said, (kind, said)
        fresh, _ = _manifest(sysenv, "--no-cache")
        assert after == fresh, kind
        assert after["digest"] != before["digest"], kind


def test_same_size_same_mtime_edit_is_seen_by_its_hash(sysenv: SysEnv) -> None:
    _world(sysenv)
    time.sleep(SETTLE)
    first, _ = _manifest(sysenv)
    first_mtime = (sysenv.work / "data.txt").stat().st_mtime_ns
    _same_stat_edit(sysenv.work / "data.txt", "data-9\n")
    assert (sysenv.work / "data.txt").stat().st_mtime_ns == first_mtime
    second, said = _manifest(sysenv)
    assert "data.txt changed" in said
    assert second != first
    assert second == _manifest(sysenv, "--no-cache")[0]


def _not_cached(sysenv: SysEnv, body: str, *extra: str) -> str:
    sysenv.write("sys.lua", body)
    time.sleep(SETTLE)
    for _ in range(2):
        res = sysenv.run("plan", "-v", *extra, "sys.lua")
        assert res.returncode == 0, res.stderr
        assert "evaluation cached" not in res.stderr
    return res.stderr


def test_time_and_randomness_are_not_cached(sysenv: SysEnv) -> None:
    said = _not_cached(sysenv, 'file { path = "~/a", content = tostring(os.time()) }\n')
    assert "evaluation not cached: the config calls os.time()" in said
    said = _not_cached(sysenv, 'file { path = "~/a", content = os.date("%Y") }\n')
    assert "evaluation not cached: the config calls os.date()" in said
    said = _not_cached(sysenv, 'file { path = "~/a", content = tostring(os.clock()) }\n')
    assert "the config calls os.clock()" in said
    said = _not_cached(sysenv, 'file { path = "~/a", content = tostring(math.random()) }\n')
    assert "the config calls math.random()" in said
    said = _not_cached(sysenv, 'print("hello")\nfile { path = "~/a", content = "x" }\n')
    assert "the config calls print()" in said
    assert "hello" in said  # printed by every run


def test_impure_secret_and_ccm_are_not_cached(sysenv: SysEnv, monkeypatch_env: None) -> None:
    said = _not_cached(sysenv, 'file { path = "~/a", content = "x" }\n', "--impure")
    assert "evaluation not cached: --impure" in said
    os.environ["EC_SECRET"] = "hunter2"
    said = _not_cached(
        sysenv, 'file { path = "~/a", content = sys.secret { env = "EC_SECRET" } }\n'
    )
    assert "evaluation not cached: the config reads a secret (sys.secret)" in said
    for cache in (sysenv.root / "cache" / "eval").glob("*"):
        assert b"hunter2" not in cache.read_bytes()
    sysenv.write(
        "site.yaml",
        f"ccm:\n  resources:\n    - file:\n        name: {sysenv.home}/b\n        content: x\n"
        f"        owner: {getpass.getuser()}\n        group: {grp.getgrgid(os.getgid()).gr_name}\n"
        '        mode: "0644"\n',
    )
    time.sleep(SETTLE)
    res = sysenv.run("plan", "-v", "site.yaml")
    assert "evaluation not cached: site.yaml is a CCM manifest" in res.stderr, res.stderr


def test_a_damaged_or_foreign_cache_is_ignored(sysenv: SysEnv) -> None:
    _world(sysenv)
    time.sleep(SETTLE)
    good, _ = _manifest(sysenv)
    (cache,) = (sysenv.root / "cache" / "eval").glob("*.json")
    assert cache.stat().st_mode & 0o077 == 0
    for garbage in (b"{not json", b'{"format": 999}', cache.read_bytes()[:-40]):
        cache.write_bytes(garbage)
        again, said = _manifest(sysenv)
        assert again == good
        assert "evaluation cache not used" in said
    _edit_header(cache, lambda doc: doc.update(probes=[["file", 12]]))  # right version, wrong shape
    assert _manifest(sysenv)[0] == good


def test_no_cache_is_refused_by_a_command_that_does_not_evaluate(sysenv: SysEnv) -> None:
    res = sysenv.run("history", "--no-cache")
    assert res.returncode != 0
    assert "sys history has no --no-cache option: it does not evaluate a config" in res.stderr
    _world(sysenv)
    res = sysenv.run("--no-cache", "-v", "plan", "sys.lua")
    assert "evaluation not cached: --no-cache" in res.stderr


def test_a_cached_apply_does_not_load_lua(sysenv: SysEnv) -> None:
    """Point 5: with a valid cache, a no-change apply imports neither lupa
    nor the evaluator and the merge."""
    _world(sysenv)
    time.sleep(SETTLE)
    assert sysenv.spawn("apply", "sys.lua").returncode == 0
    assert sysenv.spawn("apply", "sys.lua").returncode == 0  # cached from here
    res, loaded = sysenv.modules_after("apply", "-v", "sys.lua")
    assert "evaluation cached" in res.stderr, res.stderr
    heavy = ("lupa", "syslua.eval.lua", "syslua.manifest.resolve", "syslua.manifest.merge")
    assert not [m for m in loaded if m.startswith((*heavy, "syslua.manifest.validate"))]


def test_a_file_changed_while_evaluating_leaves_the_evaluation_uncached(sysenv: SysEnv) -> None:
    """Files are hashed after the evaluation: one modified since it started
    (here: stamped in the future) may not be what was read."""
    _world(sysenv)
    time.sleep(SETTLE)
    later = time.time_ns() + 10_000_000_000
    os.utime(sysenv.work / "data.txt", ns=(later, later))
    for _ in range(2):
        _, said = _manifest(sysenv)
        assert "evaluation not cached: data.txt changed while the config was evaluated" in said


def test_a_glob_below_a_missing_directory(sysenv: SysEnv) -> None:
    sysenv.write(
        "sys.lua",
        'file { path = "~/a", content = table.concat(sys.glob("later/*.txt"), ",") .. "." }\n',
    )
    time.sleep(SETTLE)
    first, _ = _manifest(sysenv)
    assert "evaluation cached" in _manifest(sysenv)[1]
    put(sysenv.work / "later" / "x.txt", "")
    second, said = _manifest(sysenv)
    assert "evaluation cache not used" in said
    assert second != first
    assert second == _manifest(sysenv, "--no-cache")[0]


def test_a_pure_evaluation_is_not_used_by_an_impure_run(sysenv: SysEnv) -> None:
    sysenv.write(
        "sys.lua",
        'local v = "pure\\n"\n'
        'if io.popen then v = io.popen("echo impure"):read("*a") end\n'
        'file { path = "~/out.txt", content = v }\n',
    )
    time.sleep(SETTLE)
    assert sysenv.run("plan", "sys.lua").returncode == 0  # cached, pure
    res = sysenv.run("apply", "-v", "--impure", "sys.lua")
    assert res.returncode == 0, res.stderr
    assert "evaluation not cached: --impure" in res.stderr
    assert (sysenv.home / "out.txt").read_text() == "impure\n"


@pytest.mark.parametrize(
    "config,make",
    [
        (
            'local ok, extra = pcall(sys.readFile, "extra.txt")\n'
            'file { path = "~/out.txt", content = ok and extra or "none\\n" }\n',
            lambda work: put(work / "extra.txt", "hi\n"),
        ),
        (
            'local ok, found = pcall(sys.readDir, "extras")\n'
            'file { path = "~/out.txt", content = (ok and #found or 0) .. "\\n" }\n',
            lambda work: put(work / "extras" / "one", "1"),
        ),
    ],
    ids=["readFile", "readDir"],
)
def test_a_caught_failure_to_read_is_recorded(sysenv: SysEnv, config: str, make) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", config)
    time.sleep(SETTLE)
    before, _ = _manifest(sysenv)
    make(sysenv.work)  # what could not be read now can
    time.sleep(SETTLE)
    after, said = _manifest(sysenv)
    fresh, _ = _manifest(sysenv, "--no-cache")
    assert after == fresh != before, said


def _edit_header(cache: Path, edit: Callable[[dict[str, Any]], object]) -> None:
    """Change the header line of a cache file (its first line), keeping the manifest line."""
    head, _, body = cache.read_bytes().partition(b"\n")
    doc = json.loads(head)
    edit(doc)
    cache.write_bytes(json.dumps(doc).encode() + b"\n" + body)


def test_a_manifest_line_that_is_not_the_one_its_header_names_is_ignored(sysenv: SysEnv) -> None:
    _world(sysenv)
    time.sleep(SETTLE)
    good, _ = _manifest(sysenv)
    (cache,) = (sysenv.root / "cache" / "eval").glob("*.json")
    head, _, body = cache.read_bytes().partition(b"\n")
    cache.write_bytes(head + b"\n" + body.replace(b'"warnings":[]', b'"warnings":["x"]'))
    again, said = _manifest(sysenv)
    assert again == good and "the cached evaluation is damaged" in said, said


def test_a_cache_of_the_wrong_shape_is_ignored_not_a_crash(sysenv: SysEnv) -> None:
    _world(sysenv)
    time.sleep(SETTLE)
    good, _ = _manifest(sysenv)
    (cache,) = (sysenv.root / "cache" / "eval").glob("*.json")
    _edit_header(cache, lambda doc: doc.update(probes=[["stat"], *doc["probes"]]))  # too short
    again, said = _manifest(sysenv)
    assert again == good and "the cached evaluation is damaged" in said, said
