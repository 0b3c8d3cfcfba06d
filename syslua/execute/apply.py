"""Atomic apply: all of the manifest, or nothing (SPEC section 6).

`apply_manifest` is the steps of docs/atomic-apply.md ("What an apply does,
in order"), from the plan on: the caller has evaluated the config, holds
the state lock and has recovered any interrupted journal
(`execute.recovery`). Each step is a module of its own:

| step                                   | module             |
|----------------------------------------|--------------------|
| 3. plan; stop when refused, read-only or nothing to do | `execute/run.py` |
| 4. begin the journal, keep the originals | `execute/begin.py` |
| 5, 6. remove, run the DAG              | `execute/run.py`   |
| 7, 8. outputs, snapshot, commit        | `execute/record.py`|
| on failure: undo, self-heal            | `execute/rollback.py` |
"""

from __future__ import annotations

from syslua.execute.outcome import ApplyOptions, ApplyOutcome, Reporter
from syslua.execute.run import ApplyRun, Rollback
from syslua.manifest.model import Manifest
from syslua.paths import Paths
from syslua.state.snapshots import Snapshot

__all__ = ["ApplyOptions", "ApplyOutcome", "Reporter", "Rollback", "apply_manifest"]


def apply_manifest(
    manifest: Manifest,
    paths: Paths,
    options: ApplyOptions,
    reporter: Reporter,
    *,
    config: str | None = None,
    snapshot_manifest: Manifest | None = None,
    inputs: dict[str, str] | None = None,
    target: Rollback | None = None,
    current: Snapshot | None = None,
) -> ApplyOutcome:
    """Converge the machine to `manifest`. `snapshot_manifest` is what the snapshot
    records when it differs from what runs (a rollback runs store copies of
    sources); `inputs`, the config files it was made from, already stored;
    `target`, what else a rollback returns to (item states, paths to put back);
    `current`, the current snapshot when the caller read it already."""
    run = ApplyRun(
        manifest,
        paths,
        options,
        reporter,
        snapshot_manifest=snapshot_manifest or manifest,
        config=config,
        given_inputs=inputs,
        target=target,
        current=current,
    )
    plan = run.plan()  # 3. against the current snapshot and the live machine
    refused = run.refusal(plan)  # nothing declared; items marked !; edits it would overwrite
    if refused is not None:
        return refused
    reporter.planned(plan)
    if options.read_only:
        return run.dry_run(plan)
    unchanged = run.unchanged(plan)
    if unchanged is not None:
        from syslua.execute.proof import prove

        run.inputs.save_stat_index(unchanged.snapshot_id)  # what it hashed, for the next run
        prove(run, plan)  # the next run of this config may then skip planning
        return unchanged  # no new snapshot
    # Imported here: a run that changes nothing needs none of them.
    from syslua.execute.begin import begin
    from syslua.execute.record import record
    from syslua.execute.rollback import roll_back
    from syslua.fsutil import give_back_memory

    if options.phase is not None:
        options.phase("run")
    give_back_memory()  # what the evaluation and the plan freed: the apply's peak is ahead
    journal = begin(run, plan)  # 4. the previous state of all it touches, durable
    run.runner.tracker = journal  # each command recorded before it runs: recovery stops it
    try:
        outcome = run.execute(plan, journal)  # 5, 6. remove, then run the DAG
        try:
            if outcome.ok and options.phase is not None:
                options.phase("record")
            if outcome.ok and record(
                run, plan, journal, outcome
            ):  # 7, 8. outputs, snapshot, commit
                return outcome
        except Exception:
            if not journal.committed:  # a bug while recording: undo first, then report it
                roll_back(run, outcome, journal)
            raise
        roll_back(run, outcome, journal)  # the previous snapshot stays current
        return outcome
    finally:
        journal.close()
