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
from functools import partial
from typing import TYPE_CHECKING

from syslua.execute.item import FAILED, ItemResult, skipped
from syslua.manifest.model import Item, Manifest
from syslua.plan.dag import Dag
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources.kind import Scheduling

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

# The pool of workers is made (and `concurrent.futures` imported) for the first
# item a worker runs: a run of inline items alone (files) needs neither.

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
    queue = _Queue(dag, manifest, run, stop_on_failure, on_start, on_finish, should_stop)
    return queue.run(jobs or DEFAULT_JOBS)


class _Queue:
    """One run of the scheduler: the ready queues, what finished, what stops the rest."""

    def __init__(
        self,
        dag: Dag,
        manifest: Manifest,
        run: Callable[[str], ItemResult],
        stop_on_failure: bool,
        on_start: Callable[[str], None] | None,
        on_finish: Callable[[ItemResult], None] | None,
        should_stop: Callable[[], bool] | None,
    ) -> None:
        self.dag, self.manifest, self.item_run = dag, manifest, run
        self.stop_on_failure = stop_on_failure
        self.on_start, self.on_finish, self.should_stop = on_start, on_finish, should_stop
        self.waiting = {node: len(dag.preds[node]) for node in dag.nodes}
        self.successors = dag.successors()
        # Ready items wait in one of two queues: those a worker runs, and those
        # the scheduler's own thread runs between hand-offs (`inline` kinds).
        self.pooled: deque[str] = deque()
        self.inline: deque[str] = deque()
        self.done: list[ItemResult] = []
        self.bad: dict[str, str] = {}  # item -> the failed item that stopped it
        self.stopped = False
        self.why_stopped = "another item failed"
        self.running: dict[Future[ItemResult], str] = {}

    def run(self, workers: int) -> list[ItemResult]:
        self.make_ready([node for node, n in self.waiting.items() if n == 0])
        pool: ThreadPoolExecutor | None = None
        try:
            while self.pooled or self.inline or self.running:
                # Workers first, so that slow items overlap the inline ones.
                while self.pooled and len(self.running) < workers:
                    ident = self.pooled.popleft()
                    if not self.settle(ident):
                        pool = pool or _pool(workers)
                        self.running[pool.submit(self.item_run, ident)] = ident
                if self.inline:
                    ident = self.inline.popleft()
                    if not self.settle(ident):
                        self.outcome(ident, partial(self.item_run, ident))
                    if self.running:
                        self.collect([f for f in self.running if f.done()])
                    continue
                if self.running:
                    from concurrent.futures import FIRST_COMPLETED, wait

                    # Never an untimed wait: a signal (Ctrl-C) that the kernel hands
                    # to another thread would not wake this one, and Python runs
                    # signal handlers only in this thread, between bytecodes.
                    finished, _ = wait(
                        self.running, timeout=SIGNAL_POLL, return_when=FIRST_COMPLETED
                    )
                    self.collect(finished)
        finally:
            if pool is not None:
                pool.shutdown(wait=True)  # what leaving its `with` block did
        return self.done

    def item(self, ident: str) -> Item:
        item = self.manifest.get(ident)
        assert item is not None
        return item

    def make_ready(self, idents: list[str]) -> None:
        for ident in sorted(idents):
            (self.inline if _traits(self.item(ident).type)[0] else self.pooled).append(ident)

    def finish(self, ident: str, result: ItemResult) -> None:
        self.done.append(result)
        if self.on_finish is not None:
            self.on_finish(result)
        unblocked = []
        for after in self.successors[ident]:
            self.waiting[after] -= 1
            if self.waiting[after] == 0:
                unblocked.append(after)
        self.make_ready(unblocked)

    def settle(self, ident: str) -> bool:
        """Settle an item that will not run (skipped, or not started after a
        stop) on the spot; False when it is to run."""
        if self.why_stopped != "interrupted" and self.should_stop is not None:
            if self.should_stop():
                self.stopped, self.why_stopped = True, "interrupted"
        item = self.item(ident)
        soft = self.dag.ordering.get(ident, ())
        failed_deps = sorted(
            self.bad[p] for p in self.dag.preds[ident] if p in self.bad and p not in soft
        )
        aggregate = _traits(item.type)[1]
        own_members = aggregate and all(
            getattr(self.manifest.get(p), "parent", None) == ident for p in failed_deps
        )
        if failed_deps and not own_members:
            self.bad[ident] = failed_deps[0]
            self.finish(ident, skipped(item, f"skipped because {failed_deps[0]} failed"))
            return True
        if (
            self.stopped
            and not aggregate
            and not (item.get("fail_on_error") is False and self.why_stopped != "interrupted")
        ):
            self.bad[ident] = ident
            self.finish(ident, skipped(item, f"not started: {self.why_stopped}"))
            return True
        if self.on_start is not None:
            self.on_start(ident)
        return False

    def outcome(self, ident: str, result: Callable[[], ItemResult]) -> None:
        try:
            value = result()
        except Exception as e:  # a bug in a kind's code: report it as this item's failure
            trace = "".join(traceback.format_exception(e)).rstrip()
            value = skipped(
                self.item(ident),
                f"internal error: {type(e).__name__}: {e} "
                f"(a bug in syslua; please report it)\n{trace}",
            )
            value.status = FAILED
            value.mutated = True
        if value.status == FAILED:
            self.bad[ident] = ident
            if self.stop_on_failure:
                self.stopped = True
        self.finish(ident, value)

    def collect(self, futures: set[Future[ItemResult]] | list[Future[ItemResult]]) -> None:
        for future in futures:
            self.outcome(self.running.pop(future), future.result)


def _pool(workers: int) -> ThreadPoolExecutor:
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="syslua")


def _traits(kind_name: str) -> tuple[bool, bool]:
    """(inline, aggregates) of a kind: whether its items run in the
    scheduler's own thread, and whether they run after their own members failed."""
    scheduling = capability(get_type(kind_name), Scheduling)
    if scheduling is None:
        return False, False
    return scheduling.inline, scheduling.aggregates
