"""The library works without its command line: what the commands print is
computed below `syslua/cli`, and can be asked for directly.

Each test makes a state with `sys apply` and then calls the library alone:
plan inputs (`plan/inputs.py`), the rollback target (`Snapshots`), drift and
the store check (`execute/drift.py`), doctor's checks (`execute/doctor.py`),
finding the config (`execute/config.py`) and opening the state dir with
recovery (`execute/recovery.py`).
"""

from __future__ import annotations

import pytest
from conftest import HEADER, ok

from syslua.errors import UsageError
from syslua.execute.config import find_config
from syslua.execute.doctor import run_checks
from syslua.execute.drift import drift, store_check
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
    ]
    assert checks["lock"].ok and checks["config"].detail.endswith("evaluates (1 item)")
    assert find_config(None, paths) == sysenv.work / "sys.lua"
