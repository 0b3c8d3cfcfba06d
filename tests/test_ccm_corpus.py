"""The CCM manifest corpus: every manifest in tests/data/ccm runs through the real CLI.

Each `*.yaml` / `*.yml` / `*.json` file directly in tests/data/ccm starts with
a comment block that says what it shows and what must happen. Everything after
`# expect:` up to the first line that is not a comment is YAML (each line
without its leading `# `):

    # A file is created from inline content.
    # expect:
    #   ccm: same               # same: behaves as CCM documents; or `differs: why`
    #   facts: {role: web}      # optional: passed as --fact role=web
    #   requires: [root, apt]   # optional: skip unless root / these programs exist
    #   setup:                  # optional: files made first, relative to HOME
    #     out/link: {link: /etc/hostname}
    #     out/old: "text\n"
    #   steps:                  # or the keys of one step directly under expect
    #     - command: plan       # `sys <command> <manifest>`; default plan
    #       exit: 0             # default 0
    #       lines: ["+ file ~/out/motd: will create"]   # whole lines of stdout
    #       output: ["substring"]                        # in stdout + stderr
    #       not_output: ["substring"]
    #       files: {out/motd: "hello\n"}                 # exact content, under HOME
    #       absent: [out/other]                          # must not exist, under HOME
    #       unchanged: true                              # HOME and the work dir are as before

A JSON manifest cannot hold comments: its block is in `NAME.json.expect`.
Paths are relative to the temporary HOME (which output shows as `~`). The
directory's subdirectories (`files/`, `children/`) hold what the manifests
read: sources, child manifests. They are copied beside the manifests.

The summary test prints how many manifests there are, how many ran as
expected, and how many of those behave as CCM documents (`ccm: same`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import tree

CORPUS = Path(__file__).parent / "data" / "ccm"
SUFFIXES = (".yaml", ".yml", ".json")
MANIFESTS = sorted(p.name for p in CORPUS.iterdir() if p.is_file() and p.suffix in SUFFIXES)
STEP_KEYS = {"command", "exit", "lines", "output", "not_output", "files", "absent", "unchanged"}
TOP_KEYS = {"ccm", "facts", "requires", "setup", "steps"}

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
    spec = yaml.safe_load("\n".join(block)) or {}
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


def _check_step(name: str, step: dict[str, Any], res: Any, home: Path, before: Any) -> list[str]:
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
    for rel in step.get("absent", []):
        if os.path.lexists(home / rel):
            problems.append(f"~/{rel} should not exist")
    if step.get("unchanged") and tree(home) != before:
        problems.append("HOME changed")
    if problems:
        problems.append(f"output of `sys {step.get('command', 'plan')} {name}`:\n{text}")
    return problems


def run_manifest(sysenv: Any, name: str, spec: dict[str, Any]) -> None:
    for sub in CORPUS.iterdir():
        if sub.is_dir():
            shutil.copytree(sub, sysenv.work / sub.name, dirs_exist_ok=True)
    shutil.copy(CORPUS / name, sysenv.work / name)
    _setup(sysenv.home, spec.get("setup") or {})
    facts = [f"--fact={k}={v}" for k, v in (spec.get("facts") or {}).items()]
    for step in spec["steps"]:
        before = tree(sysenv.home)
        args = str(step.get("command", "plan")).split()
        res = sysenv.run(*args, *facts, name)
        problems = _check_step(name, step, res, sysenv.home, before)
        assert not problems, f"{name}:\n" + "\n".join(problems)


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
