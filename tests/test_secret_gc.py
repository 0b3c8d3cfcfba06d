"""`sys gc` and the sealed copies of secret values (`state/secrets/`, issue 25):
each apply seals the values it used, so that `sys rollback` can write them
again; gc removes those no kept snapshot uses, and keeps the others."""

from __future__ import annotations

import json

from conftest import ok, out, put


def sealed(sysenv) -> set[str]:
    d = sysenv.root / "state" / "secrets"
    return {p.name for p in d.iterdir()} if d.is_dir() else set()


def apply_with(sysenv, monkeypatch, value: str) -> None:
    put(sysenv.work / "sys.lua", 'env { TOKEN = sys.secret{ env = "MY_TOKEN" } }\n')
    monkeypatch.setenv("MY_TOKEN", value)
    ok(sysenv.run("apply"))


def test_gc_removes_sealed_values_no_kept_snapshot_uses(sysenv, monkeypatch):
    apply_with(sysenv, monkeypatch, "first-token-value")
    first = sealed(sysenv)
    assert len(first) == 1
    apply_with(sysenv, monkeypatch, "second-token-value")
    apply_with(sysenv, monkeypatch, "third-token-value")
    every = sealed(sysenv)
    assert len(every) == 3 and first < every
    ok(sysenv.run("gc", "--keep", "1", "--dry-run"))
    assert sealed(sysenv) == every  # a dry run removes nothing
    p = sysenv.run("gc", "--keep", "1", "--json")
    ok(p)
    assert json.loads(p.stdout)["secrets_removed"] == 1, out(p)
    assert sealed(sysenv) == every - first
    # The kept snapshot's value is still there for a rollback, which needs
    # neither the config nor the variable it was read from.
    monkeypatch.delenv("MY_TOKEN")
    ok(sysenv.run("rollback"))
    private = (sysenv.root / "state" / "env.private.sh").read_text()
    assert "export TOKEN='second-token-value'" in private
