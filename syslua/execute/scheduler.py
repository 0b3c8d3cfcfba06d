"""The ready-queue scheduler: the only code in syslua that knows about concurrency.

An item starts as soon as every item it depends on has finished and one of
the `jobs` workers is free (items are handed to a worker only then, so after
a failure nothing queued starts). When an item fails, its dependents are
skipped with the reason; with `stop_on_failure` (atomic apply) no new item
starts at all, items already running finish, and everything not started is
reported as not started, but for items declared with `fail_on_error =
false` (a CCM manifest's default), which still start: CCM runs the rest of a
manifest after a failure. An edge that only orders (`Dag.ordering`, a CCM
manifest's order) never skips the later item. Aggregating items (an `apply`, which only reports on
its children) still run when their own children failed, to report the count.
When `should_stop` says so (Ctrl-C), no new item starts either, as after a
failure. Resource code stays plain sequential code. Items of an `inline` type (a
file: a few system calls) run in the scheduler's own thread between
hand-offs: a worker would only add thread hand-offs and GIL contention.
"""

from __future__ import annotations

import os
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from functools import partial

from syslua.execute.item import FAILED, ItemResult, skipped
from syslua.manifest.model import Manifest
from syslua.plan.dag import Dag
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.kind import Scheduling

DEFAULT_JOBS = max(4, min(16, (os.cpu_count() or 1) * 4))
SIGNAL_POLL = 0.1  # seconds: how late a signal's handler may run while items run


def execute(
    dag: Dag,
    manifest: Manifest,
    run: Callable[[str], ItemResult],
    *,
    jobs: int | None = None,
    stop_on_failure: bool = True,
    on_start: Callable[[str], None] | None = None,
    on_finish: Callable[[ItemResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[ItemResult]:
    """Run every node of `dag`; returns results in completion order.

    Linear in items and edges: each node keeps a count of unfinished
    predecessors, a finished node decrements only its successors' counts, and
    a node whose count reaches zero joins the ready queue once. Nothing
    rescans the queue: a ready node waits in it only until a worker is free.
    """
    waiting = {node: len(dag.preds[node]) for node in dag.nodes}
    successors = dag.successors()
    # Ready items wait in one of two queues: those a worker runs, and those
    # the scheduler's own thread runs between hand-offs (`inline` types).
    pooled: deque[str] = deque()
    inline: deque[str] = deque()
    done: list[ItemResult] = []
    bad: dict[str, str] = {}  # item -> the failed item that stopped it
    stopped = False
    why_stopped = "another item failed"
    running: dict[Future[ItemResult], str] = {}

    def make_ready(idents: list[str]) -> None:
        for ident in sorted(idents):
            item = manifest.get(ident)
            assert item is not None
            (inline if _traits(item.type)[0] else pooled).append(ident)

    def finish(ident: str, result: ItemResult) -> None:
        done.append(result)
        if on_finish is not None:
            on_finish(result)
        unblocked = []
        for after in successors[ident]:
            waiting[after] -= 1
            if waiting[after] == 0:
                unblocked.append(after)
        make_ready(unblocked)

    def settle(ident: str) -> bool:
        """Settle an item that will not run (skipped, or not started after a
        stop) on the spot; False when it is to run."""
        nonlocal stopped, why_stopped
        if why_stopped != "interrupted" and should_stop is not None and should_stop():
            stopped, why_stopped = True, "interrupted"
        item = manifest.get(ident)
        assert item is not None
        soft = dag.ordering.get(ident, ())
        failed_deps = sorted(bad[p] for p in dag.preds[ident] if p in bad and p not in soft)
        aggregate = _traits(item.type)[1]
        own_children = aggregate and all(
            getattr(manifest.get(p), "parent", None) == ident for p in failed_deps
        )
        if failed_deps and not own_children:
            bad[ident] = failed_deps[0]
            finish(ident, skipped(item, f"skipped because {failed_deps[0]} failed"))
            return True
        if (
            stopped
            and not aggregate
            and not (item.get("fail_on_error") is False and why_stopped != "interrupted")
        ):
            bad[ident] = ident
            finish(ident, skipped(item, f"not started: {why_stopped}"))
            return True
        if on_start is not None:
            on_start(ident)
        return False

    def outcome(ident: str, result: Callable[[], ItemResult]) -> None:
        nonlocal stopped
        try:
            value = result()
        except Exception as e:  # a bug in resource code: report it as this item's failure
            item = manifest.get(ident)
            assert item is not None
            trace = "".join(traceback.format_exception(e)).rstrip()
            value = skipped(
                item,
                f"internal error: {type(e).__name__}: {e} "
                f"(a bug in syslua; please report it)\n{trace}",
            )
            value.status = FAILED
            value.mutated = True
        if value.status == FAILED:
            bad[ident] = ident
            if stop_on_failure:
                stopped = True
        finish(ident, value)

    def collect(futures: set[Future[ItemResult]] | list[Future[ItemResult]]) -> None:
        for future in futures:
            outcome(running.pop(future), future.result)

    make_ready([node for node, n in waiting.items() if n == 0])
    workers = jobs or DEFAULT_JOBS
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="syslua") as pool:
        while pooled or inline or running:
            # Workers first, so that slow items overlap the inline ones.
            while pooled and len(running) < workers:
                ident = pooled.popleft()
                if not settle(ident):
                    running[pool.submit(run, ident)] = ident
            if inline:
                ident = inline.popleft()
                if not settle(ident):
                    outcome(ident, partial(run, ident))
                if running:
                    collect([f for f in running if f.done()])
                continue
            if running:
                # Never an untimed wait: a signal (Ctrl-C) that the kernel hands
                # to another thread would not wake this one, and Python runs
                # signal handlers only in this thread, between bytecodes.
                finished, _ = wait(running, timeout=SIGNAL_POLL, return_when=FIRST_COMPLETED)
                collect(finished)
    return done


def _traits(kind_name: str) -> tuple[bool, bool]:
    """(inline, aggregates) of a kind: whether its items run in the
    scheduler's own thread, and whether they run after their own members failed."""
    scheduling = capability(get_type(kind_name), Scheduling)
    if scheduling is None:
        return False, False
    return scheduling.inline, scheduling.aggregates
