"""The library works without its command line: what the commands print is
computed below `syslua/cli`, and can be asked for directly.

Each test makes a state with `sys apply` and then calls the library alone:
plan inputs (`plan/inputs.py`), the rollback target (`Snapshots`), drift and
the store check (`execute/drift.py`), doctor's checks (`execute/doctor.py`),
finding the config (`execute/config.py`) and opening the state dir with
recovery (`execute/recovery.py`).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import HEADER, ok

from syslua.errors import UsageError
from syslua.execute.config import find_config
from syslua.execute.doctor import run_checks
from syslua.execute.drift import drift, store_check
from syslua.execute.recovery import StateAccess
from syslua.execute.stop import Stop
from syslua.manifest.resolve import Options, resolve
from syslua.paths import Paths
from syslua.plan.inputs import PlanInputs
from syslua.resources.process import Runner
from syslua.state.snapshots import Snapshots


def applied(sysenv, *contents: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Apply a config writing ~/a.txt once per content; the snapshot ids."""
    ids = []
    for text in contents:
        sysenv.write("sys.lua", HEADER + f'file {{ path = "~/a.txt", content = "{text}" }}\n')
        ok(sysenv.run("apply"))
        ident = Snapshots(Paths.from_env()).current_id()
        assert ident is not None
        ids.append(ident)
    return ids


def test_plan_inputs_read_the_current_snapshot_and_plan_against_it(sysenv) -> None:
    first, second = applied(sysenv, "one", "two")
    paths = Paths.from_env()
    manifest = resolve(sysenv.work / "sys.lua", Options(write_lock=False), paths)
    inputs = PlanInputs(paths, manifest)
    assert inputs.current is not None and inputs.current.id == second
    assert inputs.warnings == [] and inputs.baseline is None and inputs.known is None
    assert inputs.previous is not None and inputs.last_applied is not None
    plan = inputs.plan(inputs.context(Runner(), originals=inputs.known_originals()))
    assert not plan.has_changes

    (paths.snapshots / f"{second}.json").write_text("{not json")  # a stand-in is used
    inputs = PlanInputs(paths, manifest)
    assert inputs.current is not None and inputs.current.id == first
    assert len(inputs.warnings) == 1 and f"snapshot {second} is corrupt" in inputs.warnings[0]
    assert inputs.last_applied is None and inputs.order is None  # not from a stand-in


def test_rollback_target(sysenv) -> None:
    first, second = applied(sysenv, "one", "two")
    snapshots = Snapshots(Paths.from_env())
    assert snapshots.rollback_target() == first
    snapshots.tag(second, "good")
    assert snapshots.rollback_target("good") == second
    snapshots.set_current(first)
    with pytest.raises(UsageError, match="is the oldest one"):
        snapshots.rollback_target()


def test_drift_store_check_doctor_and_config(sysenv) -> None:
    (snap,) = applied(sysenv, "one")
    paths = Paths.from_env()
    assert drift(paths) == (snap, []) and store_check(paths) is None
    (sysenv.home / "a.txt").write_text("edited")
    _, found = drift(paths)
    assert [(d["kind"], d["label"]) for d in found] == [("edited", "~/a.txt")]
    checks = {c.name: c for c in run_checks(paths, quick=True)}
    assert list(checks) == [
        "lua",
        "permissions",
        "lock",
        "journals",
        "store",
        "env",
        "path",
        "config",
        "links",
        "snapshot",
    ]
    assert checks["lock"].ok and checks["config"].detail.endswith("evaluates (1 item)")
    assert find_config(None, paths) == sysenv.work / "sys.lua"


class Notes:
    """What a library call says: a reporter (recovery's) and `warn` both append here."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def warn(self, text: str) -> None:
        self.said.append(text)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return lambda *args, **kwargs: None  # the Reporter's other events


def test_opening_the_state_recovers_an_interrupted_apply(sysenv) -> None:
    applied(sysenv, "one")
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "two" }\n')
    killed = subprocess.run(
        [sys.executable, "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env=dict(sysenv.env, SYSLUA_CRASH_AT="before-commit"),
        capture_output=True,
    )
    assert killed.returncode == -9 and (sysenv.home / "a.txt").read_text() == "two"
    notes = Notes()
    access = StateAccess(Paths.from_env(), warn=notes.warn, stop=Stop, reporter=lambda: notes)
    with access.open(exclusive=False) as lock:
        assert lock is None  # reading: the lock was taken only to recover
    assert (sysenv.home / "a.txt").read_text() == "one"
    assert len(notes.said) == 1 and notes.said[0].startswith("rolled back an interrupted apply")
