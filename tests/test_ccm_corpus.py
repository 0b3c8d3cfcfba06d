"""The CCM manifest corpus: every manifest in tests/data/ccm runs through the real CLI.

Each `*.yaml` / `*.yml` / `*.json` file directly in tests/data/ccm starts with
a comment block that says what it shows and what must happen. Everything after
`# expect:` up to the first line that is not a comment is YAML (each line
without its leading `# `):

    # A file is created from inline content.
    # expect:
    #   ccm: same               # same: behaves as CCM documents; or `differs: why`
    #   facts: {role: web}      # optional: passed as --fact role=web
    #   requires: [root, apt-get]   # optional: skip unless root / these programs exist
    #   setup:                  # optional: files made first, relative to HOME
    #     out/link: {link: /etc/hostname}
    #     out/old: "text\n"
    #     srv: {dir: true}
    #   serve:                  # optional: URL path -> archive in archives/
    #     releases/app.tar.gz: app-1.2.3.tar.gz
    #     private/app.tar.gz: {file: app-1.2.3.tar.gz, user: deploy, password: s3cret}
    #   steps:                  # or the keys of one step directly under expect
    #     - command: plan       # `sys <command> <manifest>`; default plan
    #       as_written: false   # true: `sys <command>` alone (`snapshot show`)
    #       exit: 0             # default 0
    #       lines: ["+ file ~/out/motd: will create"]   # whole lines of stdout
    #       output: ["substring"]                        # in stdout + stderr
    #       not_output: ["substring"]
    #       files: {out/motd: "hello\n"}                 # exact content, under HOME
    #       exists: [out/any]                            # must exist, under HOME
    #       absent: [out/other]                          # must not exist, under HOME
    #       modes: {out/motd: "0644"}                    # permission bits
    #       sha256: {out/app.tar.gz: 77a4...}            # a binary file's checksum
    #       unchanged: true                              # HOME is exactly as before the step
    #       requests: {releases/app.tar.gz: 1}           # requests the server got so far
    #       request_headers:                             # headers of the last request
    #         private/app.tar.gz: {X-Channel: stable}

A JSON manifest cannot hold comments: its block is in `NAME.json.expect`.
Paths are relative to the temporary HOME (which output shows as `~`). The
directory's subdirectories (`files/`, `children/`) hold what the manifests
read: sources, child manifests; they are copied beside the manifest, and so
are the side files directly in tests/data/ccm that are not manifests
(`expr-readfile.txt`, a `.tmpl` source).

A manifest that names `@@PORT@@` (or lists `serve`) gets a real HTTP server
on 127.0.0.1 (tests/httpserver.py) for the whole manifest: its port is
written where `@@PORT@@` stands, `serve` says which archives of
tests/data/ccm/archives it serves where, and `requests: N` (all paths) or a
map counts what it was asked for. Nothing else is ever contacted.

The summary test prints how many manifests there are, how many ran as
expected, and how many of those behave as CCM documents (`ccm: same`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import tree
from httpserver import LocalServer

CORPUS = Path(__file__).parent / "data" / "ccm"
SUFFIXES = (".yaml", ".yml", ".json")
MANIFESTS = sorted(p.name for p in CORPUS.iterdir() if p.is_file() and p.suffix in SUFFIXES)
# files beside the manifests that they read (readFile(), a `source`)
SIDE_FILES = sorted(
    p.name
    for p in CORPUS.iterdir()
    if p.is_file() and p.suffix not in SUFFIXES and not p.name.endswith(".expect")
)
PORT = "@@PORT@@"
STEP_KEYS = {
    "command",
    "as_written",
    "exit",
    "lines",
    "output",
    "not_output",
    "files",
    "exists",
    "absent",
    "modes",
    "sha256",
    "unchanged",
    "requests",
    "request_headers",
}
TOP_KEYS = {"ccm", "facts", "requires", "setup", "serve", "steps"}

# manifest -> (ran as expected, behaves as CCM documents), filled as the tests run
RESULTS: dict[str, tuple[bool, bool]] = {}


def expectation(path: Path) -> dict[str, Any]:
    """The `# expect:` block of a manifest, as data (a JSON manifest, which
    cannot hold comments, has it in `NAME.expect` beside it)."""
    if path.suffix == ".json":
        path = path.with_name(path.name + ".expect")
    block: list[str] = []
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            if inside:
                break
            continue
        if line.rstrip() == "# expect:":
            inside = True
            continue
        if inside:
            block.append(line[2:] if line.startswith("# ") else line[1:])
    assert inside, f"{path.name}: no `# expect:` block in its header comment"
    spec = yaml.safe_load("".join(ln + "\n" for ln in block)) or {}
    assert isinstance(spec, dict), f"{path.name}: the expect block must be a map"
    if "steps" not in spec:
        spec["steps"] = [{k: spec.pop(k) for k in list(spec) if k in STEP_KEYS}]
    unknown = set(spec) - TOP_KEYS
    assert not unknown, f"{path.name}: unknown expect keys {sorted(unknown)}"
    for step in spec["steps"]:
        bad = set(step) - STEP_KEYS
        assert not bad, f"{path.name}: unknown step keys {sorted(bad)}"
    assert spec.get("ccm"), f"{path.name}: say `ccm: same` or `ccm: {{differs: why}}`"
    return spec


def _missing(requires: list[str]) -> str | None:
    for need in requires:
        if need == "root":
            if os.geteuid() != 0:
                return "needs root"
        elif shutil.which(need) is None:
            return f"needs {need}"
    return None


def _setup(home: Path, setup: dict[str, Any]) -> None:
    for rel, what in setup.items():
        target = home / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(what, dict) and "link" in what:
            target.symlink_to(what["link"])
        elif isinstance(what, dict) and what.get("dir"):
            target.mkdir(exist_ok=True)
        else:
            target.write_text(str(what))


def _check_server(step: dict[str, Any], server: LocalServer | None) -> list[str]:
    """`requests` and `request_headers`: what the test HTTP server was asked."""
    problems: list[str] = []
    if "requests" not in step and "request_headers" not in step:
        return problems
    assert server is not None, "`requests` / `request_headers` need a manifest naming @@PORT@@"
    wanted = step.get("requests")
    if isinstance(wanted, int) and server.count() != wanted:
        problems.append(f"the server got {server.count()} requests, expected {wanted}")
    for path, count in (wanted if isinstance(wanted, dict) else {}).items():
        if server.count(path) != count:
            problems.append(
                f"the server got {server.count(path)} requests for /{path}, not {count}"
            )
    for path, headers in (step.get("request_headers") or {}).items():
        seen = server.headers(path)
        for key, value in headers.items():
            if seen.get(key) != value:
                problems.append(f"/{path} was asked with {key}: {seen.get(key)!r}, not {value!r}")
    return problems


def _serve(sysenv: Any, serve: dict[str, Any]) -> LocalServer:
    """A loopback server for this manifest, serving archives/ files as `serve` says."""
    server = LocalServer(sysenv.work.parent / "served")
    for at, what in serve.items():
        what = what if isinstance(what, dict) else {"file": what}
        server.put(at, (CORPUS / "archives" / what["file"]).read_bytes())
        if "user" in what:
            server.protect(at, str(what["user"]), str(what["password"]))
    return server


def _check_step(
    name: str, step: dict[str, Any], res: Any, home: Path, before: Any, server: LocalServer | None
) -> list[str]:
    problems = []
    text = res.stdout + res.stderr
    want = step.get("exit", 0)
    if res.returncode != want:
        problems.append(f"exit {res.returncode}, expected {want}")
    stdout_lines = [ln.strip() for ln in res.stdout.splitlines()]
    for line in step.get("lines", []):
        if line.strip() not in stdout_lines:
            problems.append(f"no line {line!r}")
    for part in step.get("output", []):
        if part not in text:
            problems.append(f"no {part!r} in the output")
    for part in step.get("not_output", []):
        if part in text:
            problems.append(f"{part!r} should not be in the output")
    for rel, content in (step.get("files") or {}).items():
        path = home / rel
        if not path.is_file():
            problems.append(f"~/{rel} is missing")
        elif path.read_text() != content:
            problems.append(f"~/{rel} holds {path.read_text()!r}, expected {content!r}")
    for rel in step.get("exists", []):
        if not os.path.lexists(home / rel):
            problems.append(f"~/{rel} is missing")
    for rel in step.get("absent", []):
        if os.path.lexists(home / rel):
            problems.append(f"~/{rel} should not exist")
    for rel, mode in (step.get("modes") or {}).items():
        path = home / rel
        have = f"{path.lstat().st_mode & 0o7777:04o}" if os.path.lexists(path) else "missing"
        if have != str(mode):
            problems.append(f"~/{rel} has mode {have}, expected {mode}")
    for rel, digest in (step.get("sha256") or {}).items():
        path = home / rel
        have = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
        if have != digest:
            problems.append(f"~/{rel} has sha256 {have}, expected {digest}")
    if step.get("unchanged") and tree(home) != before:
        problems.append("HOME changed")
    problems += _check_server(step, server)
    if problems:
        problems.append(f"output of `sys {step.get('command', 'plan')} {name}`:\n{text}")
    return problems


def run_manifest(sysenv: Any, name: str, spec: dict[str, Any]) -> None:
    for sub in CORPUS.iterdir():
        if sub.is_dir():
            shutil.copytree(sub, sysenv.work / sub.name, dirs_exist_ok=True)
    for side in SIDE_FILES:
        shutil.copy(CORPUS / side, sysenv.work / side)
    text = (CORPUS / name).read_text(encoding="utf-8")
    server = None
    if PORT in text or spec.get("serve"):
        server = _serve(sysenv, spec.get("serve") or {})
        text = text.replace(PORT, str(server.httpd.server_address[1]))
    try:
        (sysenv.work / name).write_text(text, encoding="utf-8")
        _setup(sysenv.home, spec.get("setup") or {})
        facts = [f"--fact={k}={v}" for k, v in (spec.get("facts") or {}).items()]
        for step in spec["steps"]:
            before = tree(sysenv.home)
            args = str(step.get("command", "plan")).split()
            res = sysenv.run(*args) if step.get("as_written") else sysenv.run(*args, *facts, name)
            problems = _check_step(name, step, res, sysenv.home, before, server)
            assert not problems, f"{name}:\n" + "\n".join(problems)
    finally:
        if server is not None:
            server.close()


@pytest.mark.parametrize("name", MANIFESTS)
def test_manifest(sysenv: Any, name: str) -> None:
    spec = expectation(CORPUS / name)
    why = _missing(spec.get("requires", []))
    if why:
        pytest.skip(f"{name}: {why}")
    RESULTS[name] = (False, False)
    run_manifest(sysenv, name, spec)
    RESULTS[name] = (True, spec["ccm"] == "same")


def test_corpus_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """How many manifests the corpus holds and how many behave as CCM documents."""
    assert len(MANIFESTS) >= 40
    for name in MANIFESTS:
        expectation(CORPUS / name)  # every header is readable, even when run alone
    ran = {n: r for n, r in RESULTS.items() if n in MANIFESTS}
    passed = sum(1 for ok, _ in ran.values() if ok)
    same = sum(1 for ok, ccm in ran.values() if ok and ccm)
    declared_same = sum(1 for n in MANIFESTS if expectation(CORPUS / n)["ccm"] == "same")
    with capsys.disabled():
        print(
            f"\nCCM corpus: {len(MANIFESTS)} manifests, {passed} of {len(ran)} run here "
            f"as expected, {same} behave as CCM documents "
            f"({declared_same} declared so; the rest are syslua's documented differences)"
        )
    assert passed == len(ran)
