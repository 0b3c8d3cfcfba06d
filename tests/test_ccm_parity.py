"""CCM parity for the rest of a real manifest (issue 26, point 3).

- A template that calls `file()` / `readFile()` is rendered when its
  resource runs, after the earlier resources have written what it reads;
  the plan says `(rendered when it runs)`.
- `.env` beside the manifest feeds `Environ` (`--no-read-env` turns it off).
- `--facts FILE` (YAML or JSON) and `--hiera FILE` as CCM's flags.
- `sys facts` prints the facts a manifest sees (`--json`).

Everything runs through the real CLI, on real files.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from conftest import out, tree

DEFERRED = """
ccm:
  resources:
    - file:
        - defaults:
            owner: "{{ lookup('facts.user.name') }}"
            group: "{{ lookup('facts.user.group') }}"
            mode: "0644"
        - "{{ Environ.HOME }}/out/x.txt":
            ensure: present
            content: "VALUE\\n"
        - "{{ Environ.HOME }}/out/y.txt":
            ensure: present
            content: "read: {{ trim(file(Environ.HOME + '/out/x.txt')) }} on {{ Facts.os }}\\n"
"""


def write(sysenv: Any, name: str, text: str):  # type: ignore[no-untyped-def]
    return sysenv.write(name, textwrap.dedent(text).lstrip("\n"), dedent=False)


def line_of(p: Any, label: str) -> str:
    for ln in p.stdout.splitlines():
        if label in ln:
            return ln
    raise AssertionError(f"no line with {label}:\n{out(p)}")


# ---------------------------------------------------------------------------
# deferred templates
# ---------------------------------------------------------------------------


def test_a_file_template_is_rendered_when_its_resource_runs(sysenv):
    write(sysenv, "m.yaml", DEFERRED)
    p = sysenv.run("plan", "m.yaml")
    assert p.returncode == 0, out(p)
    assert "+ file ~/out/x.txt: will create" in p.stdout
    assert "file ~/out/y.txt: will update (rendered when it runs)" in line_of(p, "~/out/y.txt")
    assert not (sysenv.home / "out").exists()

    p = sysenv.run("apply", "m.yaml")
    assert p.returncode == 0, out(p)
    import os

    assert (
        sysenv.home / "out/y.txt"
    ).read_text() == f"read: VALUE on {os.uname().sysname.lower()}\n"

    p = sysenv.run("plan", "m.yaml")
    assert p.returncode == 0, out(p)
    assert "No changes" in p.stdout, out(p)
    p = sysenv.run("apply", "m.yaml")
    assert p.returncode == 0, out(p)
    assert "No changes" in p.stdout, out(p)


def test_a_deferred_template_waits_for_a_change_to_what_it_reads(sysenv):
    write(sysenv, "m.yaml", DEFERRED)
    assert sysenv.run("apply", "m.yaml").returncode == 0
    write(sysenv, "m.yaml", DEFERRED.replace("VALUE", "OTHER"))
    p = sysenv.run("plan", "m.yaml")
    assert "(rendered when it runs)" in line_of(p, "~/out/y.txt"), out(p)
    p = sysenv.run("apply", "m.yaml")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "out/y.txt").read_text().startswith("read: OTHER on ")


def test_a_deferred_template_that_cannot_be_read_fails_its_resource(sysenv):
    write(sysenv, "m.yaml", DEFERRED.replace("/out/x.txt')", "/out/nothing.txt')"))
    before = tree(sysenv.home)
    p = sysenv.run("apply", "m.yaml")
    assert p.returncode == 1, out(p)
    assert "file(): file not found:" in out(p)
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before  # rolled back: x.txt is gone again


def test_a_syntax_error_in_a_deferred_template_is_found_at_evaluation(sysenv):
    write(sysenv, "m.yaml", DEFERRED.replace("trim(file(", "trim(file((("))
    before = tree(sysenv.home)
    p = sysenv.run("plan", "m.yaml")
    assert p.returncode == 2, out(p)
    assert "m.yaml:" in out(p) and "syntax error" in out(p)
    assert tree(sysenv.home) == before


# ---------------------------------------------------------------------------
# .env
# ---------------------------------------------------------------------------

ENV_MANIFEST = """
ccm:
  resources:
    - file:
        - "{{ Environ.HOME }}/out/env.txt":
            ensure: present
            owner: "{{ lookup('facts.user.name') }}"
            group: "{{ lookup('facts.user.group') }}"
            mode: "0644"
            content: "{{ Environ.GREETING }} {{ lookup('environ.TARGET', 'none') }} {{ Environ.PLAIN }}\\n"
"""


def test_dot_env_beside_the_manifest_is_read_into_environ(sysenv, monkeypatch):
    write(sysenv, "site/m.yaml", ENV_MANIFEST)
    write(
        sysenv,
        "site/.env",
        '# a comment\n\nGREETING="hello there"\nexport TARGET=world\nPLAIN=a=b\n',
    )
    monkeypatch.setenv("GREETING", "from the process")
    monkeypatch.setenv("PLAIN", "process")
    p = sysenv.run("apply", "site/m.yaml")
    assert p.returncode == 0, out(p)
    # .env wins over the process environment, as in CCM
    assert (sysenv.home / "out/env.txt").read_text() == "hello there world a=b\n"


def test_no_read_env_leaves_dot_env_alone(sysenv, monkeypatch):
    write(sysenv, "m.yaml", ENV_MANIFEST)
    write(sysenv, ".env", "GREETING=dotenv\nPLAIN=x\n")
    monkeypatch.setenv("GREETING", "process")
    monkeypatch.setenv("PLAIN", "p")
    p = sysenv.run("apply", "--no-read-env", "m.yaml")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "out/env.txt").read_text() == "process none p\n"


def test_a_bad_dot_env_line_is_an_error_naming_it(sysenv):
    write(sysenv, "m.yaml", ENV_MANIFEST)
    write(sysenv, ".env", "GREETING=hi\nthis is not a variable\n")
    before = tree(sysenv.home)
    p = sysenv.run("apply", "m.yaml")
    assert p.returncode == 2, out(p)
    assert ".env:2" in out(p) and "KEY=value" in out(p)
    assert tree(sysenv.home) == before


# ---------------------------------------------------------------------------
# --facts FILE, --hiera FILE
# ---------------------------------------------------------------------------

FACTS_MANIFEST = """
ccm:
  resources:
    - file:
        - "{{ Environ.HOME }}/out/facts.txt":
            ensure: present
            owner: "{{ lookup('facts.user.name') }}"
            group: "{{ lookup('facts.user.group') }}"
            mode: "0644"
            content: "{{ Facts.role }} {{ Facts.site.dc }} {{ Facts.site.rack }} {{ Facts.os }}\\n"
"""


def test_facts_file_yaml_merges_into_the_facts_and_fact_wins(sysenv):
    write(sysenv, "m.yaml", FACTS_MANIFEST)
    write(sysenv, "facts.yaml", "role: web\nsite:\n  dc: ams\n  rack: 4\n")
    p = sysenv.run("apply", "--facts", "facts.yaml", "--fact", "site.rack=9", "m.yaml")
    assert p.returncode == 0, out(p)
    import os

    system = os.uname().sysname.lower()
    assert (sysenv.home / "out/facts.txt").read_text() == f"web ams 9 {system}\n"


def test_facts_file_json(sysenv):
    write(sysenv, "m.yaml", FACTS_MANIFEST)
    write(sysenv, "facts.json", json.dumps({"role": "db", "site": {"dc": "fra", "rack": 1}}))
    p = sysenv.run("plan", "--facts", "facts.json", "--diff", "m.yaml")
    assert p.returncode == 0, out(p)
    assert "+db fra 1 " in p.stdout, out(p)


def test_a_missing_facts_file_changes_nothing(sysenv):
    write(sysenv, "m.yaml", FACTS_MANIFEST)
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--facts", "nope.yaml", "m.yaml")
    assert p.returncode == 2, out(p)
    assert "--facts: cannot read" in out(p) and "nope.yaml" in out(p)
    assert "Traceback" not in out(p)
    assert tree(sysenv.home) == before


def test_a_facts_file_with_bad_yaml_changes_nothing(sysenv):
    write(sysenv, "m.yaml", FACTS_MANIFEST)
    write(sysenv, "facts.yaml", "role: [web\n")
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--facts", "facts.yaml", "m.yaml")
    assert p.returncode == 2, out(p)
    assert "facts.yaml" in out(p) and "invalid YAML" in out(p)
    assert tree(sysenv.home) == before


def test_a_facts_file_that_is_not_a_map_is_refused(sysenv):
    write(sysenv, "m.yaml", FACTS_MANIFEST)
    write(sysenv, "facts.yaml", "- a\n- b\n")
    p = sysenv.run("plan", "--facts", "facts.yaml", "m.yaml")
    assert p.returncode == 2, out(p)
    assert "must be a map" in out(p)


HIERA_MANIFEST = """
data:
  greeting: hello
  name: manifest
  keep: kept
ccm:
  resources:
    - file:
        - "{{ Environ.HOME }}/out/data.txt":
            ensure: present
            owner: "{{ lookup('facts.user.name') }}"
            group: "{{ lookup('facts.user.group') }}"
            mode: "0644"
            content: "{{ Data.greeting }} {{ Data.name }} {{ Data.keep }}\\n"
"""

HIERA_FILE = """
data:
  name: hiera
hierarchy:
  order:
    - role:{{ lookup('facts.role') }}
overrides:
  role:web:
    greeting: hi
"""


def test_hiera_file_data_overrides_the_manifest_data(sysenv):
    write(sysenv, "m.yaml", HIERA_MANIFEST)
    write(sysenv, "site.yaml", HIERA_FILE)
    p = sysenv.run("apply", "--hiera", "site.yaml", "--fact", "role=web", "m.yaml")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "out/data.txt").read_text() == "hi hiera kept\n"


def test_a_missing_hiera_file_changes_nothing(sysenv):
    write(sysenv, "m.yaml", HIERA_MANIFEST)
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--hiera", "gone.yaml", "m.yaml")
    assert p.returncode == 2, out(p)
    assert "--hiera: cannot read" in out(p) and "gone.yaml" in out(p)
    assert tree(sysenv.home) == before


def test_a_hiera_file_with_bad_yaml_changes_nothing(sysenv):
    write(sysenv, "m.yaml", HIERA_MANIFEST)
    write(sysenv, "site.yaml", "data: {name: [x\n")
    before = tree(sysenv.home)
    p = sysenv.run("apply", "--hiera", "site.yaml", "m.yaml")
    assert p.returncode == 2, out(p)
    assert "site.yaml" in out(p) and "invalid YAML" in out(p)
    assert tree(sysenv.home) == before


# ---------------------------------------------------------------------------
# sys facts
# ---------------------------------------------------------------------------


def test_sys_facts_json_is_format_and_facts(sysenv):
    write(sysenv, "facts.yaml", "role: web\n")
    p = sysenv.run("facts", "--json", "--facts", "facts.yaml", "--fact", "site.dc=ams")
    assert p.returncode == 0, out(p)
    doc = json.loads(p.stdout)
    assert set(doc) == {"format", "facts"}
    assert doc["format"] == 1
    facts = doc["facts"]
    assert facts["role"] == "web" and facts["site"] == {"dc": "ams"}
    assert facts["host"]["info"]["hostname"] and facts["user"]["home"] == str(sysenv.home)


def test_sys_facts_reads_the_user_facts_file(sysenv):
    cfg = sysenv.home / ".config/syslua"
    cfg.mkdir(parents=True)
    (cfg / "facts.yaml").write_text("role: laptop\n")
    p = sysenv.run("facts", "--json")
    assert json.loads(p.stdout)["facts"]["role"] == "laptop"


def test_sys_facts_human_output(sysenv):
    p = sysenv.run("facts", "--fact", "site.dc=ams")
    assert p.returncode == 0, out(p)
    lines = p.stdout.splitlines()
    assert "site.dc = ams" in lines
    assert any(ln.startswith("host.info.hostname = ") for ln in lines)
    assert "Traceback" not in out(p)


def test_sys_facts_with_a_missing_facts_file(sysenv):
    p = sysenv.run("facts", "--facts", "missing.json")
    assert p.returncode == 2, out(p)
    assert "--facts: cannot read" in out(p)
