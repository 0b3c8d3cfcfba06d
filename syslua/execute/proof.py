"""After an apply that changed nothing: the no-change proof (`state/proof.py`)
that lets the next `sys apply` or `sys plan` of the same config answer
from `lstat` alone (`syslua/quick.py`).

It is written only when everything the plan depended on is a path, or is
named by the proof itself:

- the manifest is a cached evaluation (`Manifest.evaluation`) with no
  placeholder to resolve, no warning, message or CCM resource left out;
- the plan read the real current snapshot (no stand-in, no warning);
- every item's status was unchanged and its kind says which paths prove it
  (`Proven`, gathered by the plan: `Plan.claims`);
- the snapshot index and the current snapshot's file, the record of
  originals (an apply reads it first), the files the env kind writes,
  `/etc/passwd`, `/etc/group` and `/etc/nsswitch.conf` (owners are named),
  each still absent where it was;
- the advice about the shell's rc file said nothing, and the files and
  variables it read are recorded.

Every path is looked at again now: it must be as the status saw it where the
status kept what it saw, and, for the paths compared by every field, older
than the run's start by the racy margin. Anything else writes no proof,
and leaves the one there: a run that changed nothing does not make it wrong
(while it holds, everything it names is as it was; a `--no-cache` apply,
say, only could not make a new one).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from syslua.resources.env_line import ADVICE_ENVIRON, advice_reads, needs_shell, rc_advice
from syslua.resources.kind import Claim
from syslua.state import proof
from syslua.state.originals import FILE as ORIGINALS
from syslua.state.proof import ABSENT, LSTAT, SHAPE, SHAPE_STAT, STAT, Proof

if TYPE_CHECKING:
    from syslua.execute.run import ApplyRun
    from syslua.plan.planner import Plan

# Owners and groups named in the config are resolved through these (and
# whatever nsswitch.conf names besides the files: see the proof's docs).
_ACCOUNTS = ("/etc/passwd", "/etc/group", "/etc/nsswitch.conf")
# Two claims on one path: the comparison that says both.
_STRICTER = {
    frozenset((LSTAT, SHAPE)): LSTAT,
    frozenset((STAT, SHAPE_STAT)): STAT,
}


def prove(run: ApplyRun, plan: Plan) -> None:
    """Write the proof for this unchanged run, when one can be made (see the
    module's docstring). A failure to write it only costs the next run its plan."""
    made = _proof(run, plan)
    if made is None:
        return
    try:
        made.save(run.paths.state)
    except OSError:
        pass


def _proof(run: ApplyRun, plan: Plan) -> Proof | None:
    manifest, inputs = run.manifest, run.inputs
    current = inputs.current
    if (
        plan.claims is None
        or manifest.evaluation is None
        or manifest.placeholders is not False
        or manifest.warnings
        or manifest.messages
        or manifest.skipped
        or current is None
        or inputs.warnings
        or inputs.damaged is not None
    ):
        return None
    snapshots = inputs.snapshots
    claims: list[Claim] = [
        *plan.claims,
        (str(snapshots.index_file), LSTAT, None),
        (str(snapshots.path(current.id)), LSTAT, None),
        *((str(f), SHAPE_STAT, None) for fs in run.generated.values() for f in fs),
        *(_as_it_is(p, STAT) for p in _ACCOUNTS),
        _as_it_is(str(run.paths.state / ORIGINALS)),  # an apply reads it before it plans
    ]
    environ: dict[str, str | None] = {}
    if needs_shell(manifest):
        # Looked at before the advice reads them: a change made meanwhile is
        # not as it was seen, and leaves no proof.
        reads = [
            _as_it_is(str(path), LSTAT if listing else STAT, seen=True)
            for path, listing in advice_reads(manifest)
        ]
        if rc_advice(run.paths, manifest, first=False) is not None:
            return None  # said again after every apply, until the line is added
        environ = {name: os.environ.get(name) for name in ADVICE_ENVIRON}
        claims += reads
    entries = _entries(claims, inputs.stat_index.started)
    if entries is None:
        return None
    return Proof(current.id, manifest.evaluation, plan.counts(), environ, entries)


def _as_it_is(path: str, how: int = LSTAT, *, seen: bool = False) -> Claim:
    """`path` compared `how` in full, or found absent, as it is now (`seen`:
    with what it is now, which it must still be when the proof is made)."""
    now = proof.look(path, how)
    if now is None:
        return (path, ABSENT, proof.NOTHING if seen else None)
    return (path, how, now if seen else None)


def _entries(claims: Iterable[Claim], since: int) -> dict[str, tuple[int, bytes]] | None:
    """The claims as the proof's entries, each path looked at now; None when
    one is not as its status saw it, is too recent to prove anything, or is
    claimed two ways that no one comparison says."""
    out: dict[str, tuple[int, bytes]] = {}
    for path, how, seen in claims:
        had = out.get(path)
        if had is not None and had[0] == how and seen is None:
            continue  # a parent directory of many items: looked at once
        now = _looked(path, how, since)
        if now is None:
            return None
        if seen is not None and proof.reshaped(seen, how) != now:
            return None  # changed since its status read it
        if had is not None and had[0] != how:
            merged = _merged(path, had[0], how)
            if merged is None:
                return None
            if merged == had[0]:
                continue  # what is there says it already
            how = merged
            now = _looked(path, how, since)
            if now is None:
                return None
        out[path] = (how, now)
    return out


def _looked(path: str, how: int, since: int) -> bytes | None:
    """`path` now, compared `how`; None when that proves nothing: not there
    (unless `ABSENT`), within the racy margin, or a parent that is no
    directory now (a fold made while this run planned)."""
    now = proof.look(path, how)
    if now is None or (how in (LSTAT, STAT) and proof.racy(now, since)):
        return None
    if how == SHAPE and not proof.is_dir(now):
        return None
    return now


def _merged(path: str, a: int, b: int) -> int | None:
    """The one comparison that says both `a` and `b` of `path` (a managed rc
    file the shell advice reads too; a link to a declared file), or None."""
    both = frozenset((a, b))
    if both in _STRICTER:
        return _STRICTER[both]
    if ABSENT in both or os.path.islink(path):
        return None  # through a link, `stat` and `lstat` are of two files
    plain = {STAT: LSTAT, SHAPE_STAT: SHAPE}  # not a link: the same file either way
    one = frozenset(plain.get(h, h) for h in both)
    return next(iter(one)) if len(one) == 1 else _STRICTER.get(one)
